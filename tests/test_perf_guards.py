"""Structural guards for what must never regress silently (timing lives in benchmarks/, not here).

* ``import accelhal`` loads none of the heavy modules, and the first ``get_accelerator()``
  loads neither pydantic, rich, psutil nor pluggy (checked in fresh interpreters);
* a cached ``get_accelerator()`` makes no call at all, Python or C: it is one global
  read (checked by counting profiler events, not by timing).
"""

from __future__ import annotations

import dis
import inspect
import json
import os
import subprocess
import sys
from collections.abc import Callable
from types import FrameType
from typing import Any

import pytest

import accelhal
from accelhal import selection

HEAVY = ("torch", "pydantic", "rich", "pluggy", "psutil", "numpy")

PROBE = """
import json, sys
import accelhal
after_import = sorted({{m.split('.')[0] for m in sys.modules}} & set({heavy!r}))
accelhal.get_accelerator()
after_selection = sorted({{m.split('.')[0] for m in sys.modules}} & set({heavy!r}))
print(json.dumps([after_import, after_selection]))
"""


def loaded_modules() -> tuple[list[str], list[str]]:
    code = PROBE.format(heavy=HEAVY)
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    after_import, after_selection = json.loads(out.stdout)
    return after_import, after_selection


def test_import_and_selection_stay_off_heavy_modules() -> None:
    after_import, after_selection = loaded_modules()
    assert after_import == []
    assert "torch" in after_selection  # discovery and the cpu backend ran
    assert not {"pydantic", "rich", "psutil", "pluggy"} & set(after_selection)  # built-ins need no pluggy


COLD = (
    "accelhal.errors",
    "accelhal.launch.known_launchers",
    "accelhal.launch.environment",
    "accelhal.report",
    "accelhal.discovery.plugin_index",
)
"""accelhal's modules that only a failure, a report or a launcher needs: never on the first call's path."""

COLD_PROBE = """
import json, sys, torch
import accelhal, accelhal.process.settings
accelhal.get_accelerator()
print(json.dumps([sorted(set({cold!r}) & set(sys.modules)), "VARIABLES" in vars(accelhal.process.settings)]))
"""


@pytest.mark.parametrize("forced", ["", "cpu"])
def test_the_first_call_leaves_errors_reports_and_tables_unloaded(forced: str) -> None:
    """In a fresh process, on the cascade and with a forced backend: no error class, report or variable table."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ACCELHAL_", "DS_ACC"))}
    env["ACCELHAL_ACCELERATOR"] = forced
    code = COLD_PROBE.format(cold=COLD)
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True, env=env)
    loaded, table_built = json.loads(out.stdout)
    assert loaded == [] and table_built is False, out.stdout


def count_events(func: Callable[[], Any]) -> list[tuple[str, str]]:
    """Every profiler event raised while ``func()`` runs, except ``func``'s own call and return."""
    events: list[tuple[str, str]] = []

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        name = getattr(arg, "__qualname__", None) if event.startswith("c_") else frame.f_code.co_qualname
        events.append((event, str(name)))

    sys.setprofile(profile)
    try:
        func()
    finally:
        sys.setprofile(None)
    own = func.__qualname__
    return [e for e in events if e[1] not in (own, "setprofile")]


def test_cached_get_accelerator_makes_no_call() -> None:
    first = accelhal.get_accelerator()
    assert count_events(selection.get_accelerator) == []
    assert selection.get_accelerator() is first


def test_first_get_accelerator_does_call_so_the_counter_can_see_calls() -> None:
    accelhal.reset_accelerator()
    events = count_events(selection.get_accelerator)
    assert ("call", "_select") in events


def test_accelerator_given_to_set_accelerator_is_served_without_a_call() -> None:
    from accelhal_backends.cpu.accelerator import CpuAccelerator

    chosen = accelhal.set_accelerator(CpuAccelerator())
    assert count_events(selection.get_accelerator) == []
    assert selection.get_accelerator() is chosen


def _opcodes(func: Callable[..., Any]) -> list[tuple[str, object]]:
    return [(i.opname, i.argval) for i in dis.get_instructions(func) if i.opname not in ("RESUME", "CACHE")]


_module_global: object = None


def _global_read() -> object:
    return _module_global


def test_cached_get_accelerator_is_exactly_a_global_read_and_its_source_says_so() -> None:
    """Once cached, get_accelerator runs the instructions of a function returning a module global."""
    accelhal.reset_accelerator()
    assert "return _select()" in inspect.getsource(selection.get_accelerator)  # the selecting body
    accelhal.get_accelerator()
    assert [op for op, _ in _opcodes(selection.get_accelerator)] == [op for op, _ in _opcodes(_global_read)]
    source = inspect.getsource(selection.get_accelerator)
    assert "def get_accelerator()" in source and "return _last_installed" in source and "_select" not in source
    assert selection.get_accelerator.__name__ == "get_accelerator"


def test_after_reset_and_restore_get_accelerator_selects_again() -> None:
    first = accelhal.get_accelerator()
    accelhal.reset_accelerator()
    again = selection.get_accelerator()
    assert again is not None and again is not first
    empty = selection.ActiveSelection(None, None)
    selection.restore(empty)
    assert selection.get_accelerator() is not again  # restored "nothing selected": it selects once more


def test_device_name_is_a_literal_per_class_and_validates_indices() -> None:
    from accelhal_backends.cuda.accelerator import CudaAccelerator

    class Renamed(CudaAccelerator):
        device_type = "renamed"

    cuda = CudaAccelerator()  # constructing touches no device
    assert cuda.device_name() == "cuda" and cuda.device_name(1) == "cuda:1"
    assert Renamed().device_name() == "renamed" and Renamed().device_name(2) == "renamed:2"
    with pytest.raises((ValueError, TypeError), match="device_index|index"):
        cuda.device_name(-1)
    ops = _opcodes(CudaAccelerator.device_name)
    # device_name() returns a constant (LOAD_CONST, or RETURN_CONST from Python 3.12): no attribute read before it
    literal = next(i for i, (op, arg) in enumerate(ops) if op in ("LOAD_CONST", "RETURN_CONST") and arg == "cuda")
    assert not [op for op, _ in ops[:literal] if op.startswith(("LOAD_ATTR", "LOAD_METHOD", "LOAD_GLOBAL"))]


def test_flag_members_answer_each_subclass_own_attribute() -> None:
    from accelhal_backends.cpu.accelerator import CpuAccelerator

    class Asynchronous(CpuAccelerator):
        _is_synchronized_device = False
        _communication_backend_name = "mpi"

    class Explicit(Asynchronous):
        def is_synchronized_device(self) -> bool:
            return True

    class Inherits(Asynchronous):
        pass

    assert CpuAccelerator().is_synchronized_device() is True
    assert Asynchronous().is_synchronized_device() is False
    assert Asynchronous().communication_backend_name() == "mpi"
    assert Inherits().is_synchronized_device() is False and Inherits().communication_backend_name() == "mpi"
    assert Explicit().is_synchronized_device() is True
    assert Asynchronous.is_synchronized_device.__doc__ == accelhal.Accelerator.is_synchronized_device.__doc__


def test_flag_members_read_no_attribute_at_call_time() -> None:
    """The answer is a literal in the method's code: no attribute lookup, no call inside."""

    from accelhal_backends.cpu.accelerator import CpuAccelerator

    opnames = {i.opname for i in dis.get_instructions(CpuAccelerator.resolves_data_dependency)}
    assert opnames <= {"RESUME", "LOAD_CONST", "RETURN_VALUE", "RETURN_CONST"}


def test_flag_answers_follow_assignments_on_the_instance_and_on_the_class() -> None:
    from accelhal_backends.cpu.accelerator import CpuAccelerator

    class Launched(CpuAccelerator):
        def __init__(self) -> None:
            super().__init__()
            self._communication_backend_name = "mpi"

    acc = Launched()
    assert acc.communication_backend_name() == "mpi" and CpuAccelerator().communication_backend_name() == "gloo"

    class Tunable(CpuAccelerator):
        pass

    class Child(Tunable):
        pass

    Tunable._is_synchronized_device = False
    assert Tunable().is_synchronized_device() is False and Child().is_synchronized_device() is False
    assert CpuAccelerator().is_synchronized_device() is True
    Tunable.device_type = "meta"
    import torch

    assert Tunable().on_accelerator(torch.empty(0, device="meta")) and Tunable().FloatTensor([1.0]).is_meta
