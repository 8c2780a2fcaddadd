"""The accelhal pytest plugin: entry point, option, fixture, markers, use_accelerator, and its import cost."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from importlib import metadata
from pathlib import Path

import pytest

import accelhal
from accelhal import selection
from accelhal.testing import use_accelerator
from accelhal_backends.cpu.accelerator import CpuAccelerator
from tests.conformance_runs import run_pytest
from tests.venvs import fresh_venv, pip_install

MARKED = """
import pytest
import accelhal

@pytest.mark.accelerator("cuda")
def test_needs_cuda():
    pass

@pytest.mark.capability("graphs")
def test_needs_graphs(accelerator):
    pass

@pytest.mark.accelerator("cpu", "cuda")
@pytest.mark.capability()
def test_on_cpu(accelerator):
    assert accelerator.name == "cpu"
    assert accelhal.get_accelerator() is accelerator

def test_fixture_restores_nothing_selected():
    from accelhal import selection
    assert selection.snapshot().accelerator is None

class TestPinned:
    backend = "cpu"

    def test_class_backend(self, accelerator):
        assert accelerator.name == "cpu"
"""


def test_registered_as_a_pytest_plugin() -> None:
    (entry,) = [ep for ep in metadata.entry_points(group="pytest11") if ep.name == "accelhal"]
    assert entry.value == "accelhal.testing.plugin"


def test_markers_skip_with_the_reason(tmp_path: Path) -> None:
    (tmp_path / "test_marked.py").write_text(MARKED)
    run = run_pytest(tmp_path, "--strict-markers", "--accelhal-backend=cpu")
    assert run.returncode == 0, run.output
    skipped, passed = run.of("skipped"), run.of("passed")
    assert "needs backend cuda; this run uses 'cpu'" in skipped["test_needs_cuda"]
    assert "does not declare capability 'graphs'" in skipped["test_needs_graphs"]
    assert set(passed) == {"test_on_cpu", "test_fixture_restores_nothing_selected", "test_class_backend"}


def test_unknown_capability_is_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "test_typo.py").write_text("import pytest\n@pytest.mark.capability('grpahs')\ndef test_x(): pass\n")
    run = run_pytest(tmp_path)
    assert run.returncode != 0
    assert "unknown capability" in run.output and "'graphs'" in run.output


def test_unknown_backend_option_names_the_backend(tmp_path: Path) -> None:
    (tmp_path / "test_fixture.py").write_text("def test_x(accelerator): pass\n")
    run = run_pytest(tmp_path, "--accelhal-backend=nosuchdev")
    assert run.of("error"), run.output
    assert "nosuchdev" in run.of("error")["test_x"]


def test_use_accelerator_restores_nothing_selected() -> None:
    assert selection.snapshot() == selection.ActiveSelection(None, None)
    with use_accelerator("cpu") as acc:
        assert accelhal.get_accelerator() is acc
        assert accelhal.detect().rule == "set_accelerator"
    assert selection.snapshot() == selection.ActiveSelection(None, None)


def test_use_accelerator_restores_the_previous_accelerator_and_decision() -> None:
    previous = accelhal.get_accelerator()
    decision = selection.snapshot().decision
    other = CpuAccelerator()
    with pytest.raises(RuntimeError), use_accelerator(other) as acc:
        assert acc is other and accelhal.get_accelerator() is other
        raise RuntimeError("the block failed")
    state = selection.snapshot()
    assert state.accelerator is previous and state.decision is decision


def test_importing_the_plugin_is_cheap() -> None:
    code = textwrap.dedent(
        """
        import json, sys
        import accelhal.testing.plugin
        print(json.dumps(sorted(m for m in ("torch", "accelhal.selection", "pydantic") if m in sys.modules)))
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == []


def test_run_suite_without_pytest_names_the_kit_extra() -> None:
    code = "import sys; sys.modules['pytest'] = None\nfrom accelhal.testing import run_suite\nrun_suite('cpu')"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert out.returncode == 1
    assert out.stderr.splitlines()[-1] == (
        "ModuleNotFoundError: accelhal.testing.run_suite runs the conformance suite with pytest, which is not "
        "installed here; install it with: pip install 'pytest>=8' (accelhal's kit extra; from a clone: "
        "pip install './accelhal[kit]')"
    )


def test_run_suite_without_plugin_autoload_after_importing_the_plugin_warns_nothing(tmp_path: Path) -> None:
    code = (
        "import accelhal.testing.plugin\nfrom accelhal.testing import run_suite\n"
        "raise SystemExit(run_suite('cpu', ['-q', '--collect-only', '-W', 'error', '-k', 'boolean_query']))"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ACCELHAL_", "DS_ACCELERATOR"))}
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    out = subprocess.run([sys.executable, "-c", code], env=env, cwd=tmp_path, capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "Warning" not in out.stdout + out.stderr


RUN_SUITE_AFTER_IMPORT = """
import sys, accelhal
accelhal.get_accelerator()  # imports accelhal_backends too: both are marked for rewriting
from accelhal.testing import run_suite
code = run_suite("cpu", ["-q", "-p", "no:randomly", "-p", "no:cacheprovider", "-W", "error", "-k", "boolean_query"])
kit = sys.modules["accelhal.testing.conformance.base"]
print(accelhal.__file__, type(kit.__loader__).__name__)
sys.exit(code)
"""


@pytest.mark.slow
def test_run_suite_from_a_program_that_imported_accelhal_warns_nothing(tmp_path: Path, accelhal_wheel: Path) -> None:
    # installed from a wheel, as users have it: pytest then marks accelhal's top-level packages for rewriting
    python = fresh_venv(tmp_path / "venv")
    pip_install(python, accelhal_wheel)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    command = [str(python), "-W", "error", "-c", RUN_SUITE_AFTER_IMPORT]
    result = subprocess.run(command, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Warning" not in result.stdout + result.stderr
    accelhal_file, loader = result.stdout.splitlines()[-1].split()
    assert accelhal_file.startswith(str(tmp_path / "venv"))
    assert loader == "AssertionRewritingHook"  # the kit's modules are still rewritten
