"""Structural guards for what must never regress silently (timing lives in benchmarks/, not here).

* ``import accelhal`` loads none of the heavy modules, and the first ``get_accelerator()``
  loads neither pydantic, rich nor psutil (checked in fresh interpreters);
* a cached ``get_accelerator()`` makes no call at all, Python or C: it is one global
  read (checked by counting profiler events, not by timing).
"""

from __future__ import annotations

import json
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
    assert "pluggy" in after_selection and "torch" in after_selection  # discovery and the cpu backend ran
    assert not {"pydantic", "rich", "psutil"} & set(after_selection)


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


@pytest.mark.parametrize("member", ["__bool__", "__len__"])
def test_the_contract_defines_no_truth_hook(member: str) -> None:
    """get_accelerator() tests the cached object's truth; a Python-level hook would be a call on every use."""
    assert not hasattr(accelhal.Accelerator, member)


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
    import dis

    from accelhal_backends.cpu.accelerator import CpuAccelerator

    opnames = {i.opname for i in dis.get_instructions(CpuAccelerator.resolves_data_dependency)}
    assert opnames <= {"RESUME", "LOAD_CONST", "RETURN_VALUE", "RETURN_CONST"}
