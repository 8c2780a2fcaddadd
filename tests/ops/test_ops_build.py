"""Building ops for real: the fused AdamW against torch's AdamW, and the cache under concurrency and failure.

Every distinct build compiles once per session (the cache is shared); the lock and
concurrency tests use a tiny CPython-only source that compiles in about a second.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from ops_helpers import HERE, ninja_compiles, run_python
from tiny_ops import BrokenBuilder, TinyAnswerBuilder

import accelhal
from accelhal.errors import OpBuildError
from accelhal.ops import cache

pytestmark = pytest.mark.slow


def test_fused_adamw_on_cpu_matches_torch_adamw() -> None:
    import torch

    adamw = accelhal.get_accelerator().create_op_builder("FusedAdamWBuilder").load(verbose=False)
    generator = torch.Generator().manual_seed(0)
    start = torch.randn(10_001, generator=generator)
    grads = [torch.randn(10_001, generator=generator) for _ in range(5)]
    hyper = {"lr": 1e-2, "betas": (0.9, 0.99), "eps": 1e-8, "weight_decay": 0.1}

    reference = torch.nn.Parameter(start.clone())
    optimizer = torch.optim.AdamW([reference], foreach=False, fused=False, **hyper)  # type: ignore[arg-type]
    param, exp_avg, exp_avg_sq = start.clone(), torch.zeros_like(start), torch.zeros_like(start)
    for step, grad in enumerate(grads, start=1):
        reference.grad = grad.clone()
        optimizer.step()
        adamw.adamw_step(param, grad, exp_avg, exp_avg_sq, 1e-2, 0.9, 0.99, 1e-8, 0.1, step)
    state = optimizer.state[reference]
    torch.testing.assert_close(exp_avg, state["exp_avg"])
    torch.testing.assert_close(exp_avg_sq, state["exp_avg_sq"])
    torch.testing.assert_close(param, reference.detach(), rtol=1e-5, atol=1e-6)
    assert not torch.equal(param, start)

    with pytest.raises(RuntimeError, match="float32"):
        adamw.adamw_step(param.double(), grad, exp_avg, exp_avg_sq, 1e-2, 0.9, 0.99, 1e-8, 0.1, 1)


def test_a_finished_build_is_loaded_by_another_process_without_compiling() -> None:
    first = json.loads(_load_tiny().stdout)
    directory = Path(first["file"]).parent
    compiles = ninja_compiles(directory)
    assert compiles == 1
    second = json.loads(_load_tiny().stdout)
    assert second == first
    assert ninja_compiles(directory) == compiles


def _load_tiny(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    result = run_python(str(HERE / "tiny_ops.py"), "load", *args, env=env)
    assert result.returncode == 0, result.stderr
    return result


def test_two_processes_building_at_once_both_succeed_and_compile_once(tmp_path: Path) -> None:
    env = {"ACCELHAL_OPS_CACHE": str(tmp_path / "cache"), "ACCELHAL_OPS_LOCK_TIMEOUT": "240"}
    go = tmp_path / "go"
    processes = [
        subprocess.Popen(
            [sys.executable, str(HERE / "tiny_ops.py"), "load", str(go), str(i)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**_environ_with_helpers(), **env},
        )
        for i in range(2)
    ]
    while not all((tmp_path / f"go.ready.{i}").exists() for i in range(2)):
        assert all(p.poll() is None for p in processes), [p.communicate() for p in processes]
        time.sleep(0.02)
    go.touch()  # both are in the same place; let them race for the build
    outputs = [p.communicate(timeout=300) for p in processes]
    assert [p.returncode for p in processes] == [0, 0], outputs
    results = [json.loads(out) for out, _ in outputs]
    assert [r["answer"] for r in results] == [42, 42]
    assert results[0]["file"] == results[1]["file"]
    assert ninja_compiles(Path(results[0]["file"]).parent) == 1
    builders = [err for _, err in outputs if "building op 'accelhal_test_tiny'" in err]
    assert len(builders) == 1, outputs  # the other one waited on our lock, then imported the result


def _environ_with_helpers() -> dict[str, str]:
    import os

    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")])}


def test_a_lock_left_by_a_killed_build_is_recovered(tmp_path: Path) -> None:
    env = {
        "ACCELHAL_OPS_CACHE": str(tmp_path / "cache"),
        "ACCELHAL_OPS_LOCK_TIMEOUT": "120",
        "ACCELHAL_OPS_LOCK_STALE": "3600",  # only the dead-owner check can recover it in time
    }
    holder = subprocess.Popen(
        [sys.executable, str(HERE / "tiny_ops.py"), "hold"],
        stdout=subprocess.PIPE,
        text=True,
        env={**_environ_with_helpers(), **env},
    )
    assert holder.stdout is not None
    assert holder.stdout.readline().strip() == "held"
    holder.send_signal(signal.SIGKILL)
    holder.wait()
    directory = Path(env["ACCELHAL_OPS_CACHE"]).glob(f"{TinyAnswerBuilder.NAME}-*")
    (leftover,) = list(directory)
    assert (leftover / cache.LOCK).exists() and (leftover / cache.TORCH_BATON).exists()
    # with no recovery this would wait for ACCELHAL_OPS_LOCK_TIMEOUT and fail, or hang in torch's baton
    result = _load_tiny(env=env)
    assert json.loads(result.stdout)["answer"] == 42
    assert "broke the stale build lock" in result.stderr
    assert not (leftover / cache.LOCK).exists()


def test_a_syntax_error_reports_the_compiler_message() -> None:
    builder = BrokenBuilder()
    with pytest.raises(OpBuildError) as info:
        builder.load(verbose=False)
    message = str(info.value)
    assert "accelhal_test_broken" in message and "'cpu'" in message
    assert "broken.cpp" in message and "error:" in message  # the compiler's own words
    assert "accelhal_broken_function" in message or "expected" in message
    log = builder.build_directory() / cache.BUILD_LOG
    assert "error:" in log.read_text()
    with pytest.raises(OpBuildError):  # a second attempt fails the same way, it does not hang or lie
        builder.load(verbose=False)


def test_a_plugin_builder_loads_through_the_accelerator() -> None:
    import importlib

    from accelhal.selection import registry

    manager = registry().manager
    assert manager is not None
    manager.register(importlib.import_module("sample_op_plugin"), name="sample-op-plugin")
    module = accelhal.get_accelerator().create_op_builder("TinyAnswerBuilder").load(verbose=False)
    assert module.answer() == 42


def test_an_ahead_of_time_build_is_preferred_by_load(tmp_path: Path) -> None:
    lib, temp = str(tmp_path / "lib"), str(tmp_path / "tmp")
    setup = (
        "import accelhal, setuptools; from tiny_ops import TinyAnswerBuilder; "
        "setuptools.setup(name='tiny-aot', ext_modules=[TinyAnswerBuilder().builder()], "
        "cmdclass={'build_ext': accelhal.get_accelerator().build_extension()}, "
        f"script_args=['-q', 'build_ext', '--build-lib', {lib!r}, '--build-temp', {temp!r}])"
    )
    built = run_python("-c", setup, env={"PYTHONPATH": str(HERE)})
    assert built.returncode == 0, built.stderr[-3000:]
    check = "from tiny_ops import TinyAnswerBuilder; m = TinyAnswerBuilder().load(); print(m.__name__, m.answer())"
    cache_dir = tmp_path / "empty-cache"
    loaded = run_python("-c", check, env={"PYTHONPATH": f"{tmp_path / 'lib'}", "ACCELHAL_OPS_CACHE": str(cache_dir)})
    assert loaded.returncode == 0, loaded.stderr
    assert loaded.stdout.split() == ["accelhal_op_accelhal_test_tiny", "42"]
    assert not cache_dir.exists()  # nothing was compiled just in time
