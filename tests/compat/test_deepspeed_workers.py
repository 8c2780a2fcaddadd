"""Worker processes get the adapter with no code in them: the opt-in start-up hook, in a real environment.

A fresh virtual environment (its site-packages extended with this one's, so accelhal and
DeepSpeed are importable) gets the hook through the documented command
``python -m accelhal.compat.deepspeed hook install``. Processes started from it with
``ACCELHAL_DEEPSPEED=1`` give DeepSpeed accelhal's accelerator: torchrun's ranks,
DeepSpeed's launcher's ranks, and multiprocessing spawn and forkserver children; without the
variable nothing of accelhal is imported at start-up.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import sysconfig
from contextlib import suppress
from pathlib import Path

import psutil
import pytest

from tests.bounded import run_bounded
from tests.compat import REPO, child_environment, requires_deepspeed, uses_cpu_adam
from tests.sharing import free_port

pytestmark = [requires_deepspeed, uses_cpu_adam]

SCRIPT = Path(__file__).with_name("deepspeed_train.py")
ADAPTER = "AccelhalDeepSpeedAccelerator"


@pytest.fixture(scope="module")
def hooked_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The interpreter of a new virtual environment with the hook installed by its command."""
    venv = tmp_path_factory.mktemp("hooked") / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    site = Path(run(python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])").stdout.strip())
    ours = sysconfig.get_paths()["purelib"]
    (site / "_accelhal_tests.pth").write_text(f"import site; site.addsitedir({ours!r})\n")
    installed = run(python, "-m", "accelhal.compat.deepspeed", "hook", "install")
    assert "zz-accelhal-deepspeed.pth" in installed.stdout
    return python


def run(
    python: Path, *args: str, check: bool = True, timeout: float = 120, **env: str
) -> subprocess.CompletedProcess[str]:
    """Run ``python`` (no ``PYTHONPATH``: what it imports comes from its site-packages).

    Past ``timeout`` seconds the test fails with the output of every process it started (a
    launcher's ranks write to its pipes), each Python process's stacks at the end: they run
    with faulthandler, and get SIGABRT before SIGKILL.
    """
    out = run_bounded(
        [str(python), *args],
        env=child_environment(PYTHONPATH="", PYTHONFAULTHANDLER="1", **env),
        cwd=REPO,
        timeout=timeout,
        stop=_end_with_stacks,
        describe=lambda stdout, stderr: (
            f"{args} still ran after {timeout:.0f} s; its processes' output:\n{stdout[-3000:]}\n{stderr[-12000:]}"
        ),
    )
    if check:
        assert out.returncode == 0, f"{args} failed:\n{out.stdout[-3000:]}\n{out.stderr[-5000:]}"
    return out


def _end_with_stacks(process: subprocess.Popen[str]) -> tuple[str, str]:
    """SIGABRT to ``process`` and all its descendants (faulthandler prints their stacks), then SIGKILL; its output."""
    tree = [psutil.Process(process.pid)]
    with suppress(psutil.Error):
        tree += tree[0].children(recursive=True)  # torchrun's workers are in sessions of their own
    for signal_number in (signal.SIGABRT, signal.SIGKILL):
        for member in tree:
            with suppress(psutil.Error):
                member.send_signal(signal_number)
        psutil.wait_procs(tree, timeout=10)
    return process.communicate()


def report(out: subprocess.CompletedProcess[str]) -> dict[str, object]:
    line = next(line for line in out.stdout.splitlines() if line.startswith("RESULT "))
    result: dict[str, object] = json.loads(line.removeprefix("RESULT "))
    return result


LOADED_AT_START = (
    "import sys; print(sorted({m.split('.')[0] for m in sys.modules} & {'accelhal', 'torch', 'deepspeed'}))"
)


@pytest.mark.parametrize(("value", "loaded"), [(None, "[]"), ("0", "[]"), ("off", "[]"), ("1", "['accelhal']")])
def test_start_up_imports_nothing_unless_asked(hooked_python: Path, value: str | None, loaded: str) -> None:
    code = ("-c", LOADED_AT_START)
    out = run(hooked_python, *code) if value is None else run(hooked_python, *code, ACCELHAL_DEEPSPEED=value)
    assert out.stdout.strip() == loaded  # never torch or DeepSpeed


def test_the_hook_command_reports_and_removes(hooked_python: Path, tmp_path: Path) -> None:
    status = run(hooked_python, "-m", "accelhal.compat.deepspeed", "hook", "status")
    assert ": installed" in status.stdout
    run(hooked_python, "-m", "accelhal.compat.deepspeed", "hook", "install", "--dir", str(tmp_path))
    assert (tmp_path / "zz-accelhal-deepspeed.pth").is_file()
    run(hooked_python, "-m", "accelhal.compat.deepspeed", "hook", "remove", "--dir", str(tmp_path))
    missing = run(
        hooked_python, "-m", "accelhal.compat.deepspeed", "hook", "status", "--dir", str(tmp_path), check=False
    )
    assert missing.returncode == 1 and ": not installed" in missing.stdout


def test_a_malformed_variable_stops_deepspeed_not_python(hooked_python: Path) -> None:
    assert run(hooked_python, "-c", "print('up')", ACCELHAL_DEEPSPEED="perhaps").stdout.strip() == "up"
    failed = run(hooked_python, "-c", "import deepspeed", check=False, ACCELHAL_DEEPSPEED="perhaps")
    assert failed.returncode != 0
    assert "ConfigurationError: ACCELHAL_DEEPSPEED='perhaps' is not a boolean" in failed.stderr


@pytest.mark.slow
@pytest.mark.integration
def test_torchrun_ranks_and_their_spawned_children_get_the_adapter(
    hooked_python: Path, deepspeed_ops_cache: Path
) -> None:
    out = run(
        hooked_python,
        *("-m", "torch.distributed.run", "--standalone", "--nproc-per-node=2", str(SCRIPT)),
        *("--accelerator", "hook", "--runs", "3+offload", "--children"),
        ACCELHAL_DEEPSPEED="1",
        ACCELHAL_DEEPSPEED_DISABLE_OPS="ShareMemCommBuilder",
        ACCELHAL_ACCELERATOR="cpu",
        ACCELHAL_OPS_CACHE=str(deepspeed_ops_cache),
        timeout=600,  # a first run compiles DeepSpeed's cpu_adam (minutes on two busy cores)
    )
    result = report(out)
    assert result["rank_accelerator_classes"] == [ADAPTER, ADAPTER]
    assert result["children"] == {"spawn": ADAPTER, "forkserver": ADAPTER}
    assert result["shm_op_built"] is False  # ACCELHAL_DEEPSPEED_DISABLE_OPS reached the workers
    for rank in result["runs"]["3+offload"]:  # type: ignore[index]
        assert Path(rank["cpu_adam"]["op_file"]).is_relative_to(deepspeed_ops_cache)


@pytest.mark.slow
@pytest.mark.integration
def test_deepspeeds_own_launcher_ranks_get_the_adapter(hooked_python: Path) -> None:
    out = run(
        hooked_python,
        *("-m", "deepspeed.launcher.runner", "--num_gpus=2", f"--master_port={free_port()}", str(SCRIPT)),
        *("--accelerator", "hook", "--runs", "0"),
        ACCELHAL_DEEPSPEED="1",
        ACCELHAL_DEEPSPEED_DISABLE_OPS="ShareMemCommBuilder",
        ACCELHAL_ACCELERATOR="cpu",
    )
    result = report(out)
    assert result["rank_accelerator_classes"] == [ADAPTER, ADAPTER]
    assert result["world_size"] == 2
