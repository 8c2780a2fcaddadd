"""DeepSpeed's own accelerator test, written afresh for accelhal's backends, plus the signature check it lacks.

DeepSpeed's ``test_abstract_methods_defined`` imports every backend module, stubs the
constructor and instantiates the class, which fails if an abstract member is missing.
Here every built-in accelhal backend found in the plugin registry is instantiated the
same way (constructor bypassed: the vendor runtime is not installed here) and wrapped in
the DeepSpeed adapter; then every member DeepSpeed's ``DeepSpeedAccelerator`` declares
must exist on the backend with the right kind and accept DeepSpeed's arguments, and every
adapter member must carry DeepSpeed's signature.
"""

from __future__ import annotations

import inspect
import re
from typing import Any

import pytest

from accelhal.selection import registry
from tests.compat import REPO, requires_deepspeed
from tests.compat.deepspeed_shapes import argument_problems

GUIDE = REPO / "docs" / "migrating-from-deepspeed.md"

pytestmark = requires_deepspeed

BUILTIN_BACKENDS = sorted(r.spec.name for r in registry().backends.values() if r.plugin.builtin)

WIDENED = {"device_name": "device_index", "device": "device_index"}
"""Parameters DeepSpeed's abstract class leaves without a default and every DeepSpeed backend defaults to None."""


def _deepspeed_members(ds: Any) -> dict[str, Any]:
    from deepspeed.accelerator.abstract_accelerator import DeepSpeedAccelerator

    return {n: v for n, v in vars(DeepSpeedAccelerator).items() if not n.startswith("__") and n != "_abc_impl"}


def _params(func: Any) -> list[tuple[str, Any, Any]]:
    return [(p.name, p.kind, p.default) for p in inspect.signature(func).parameters.values()]


def test_the_builtin_backends_are_found() -> None:
    assert "cpu" in BUILTIN_BACKENDS


def test_every_adapter_member_has_deepspeeds_signature(ds: Any) -> None:
    from deepspeed.accelerator.cuda_accelerator import CUDA_Accelerator

    from accelhal.compat.deepspeed._adapter import adapter_class

    adapter = adapter_class()
    checked = 0
    for name, member in _deepspeed_members(ds).items():
        ours = inspect.getattr_static(adapter, name)
        if isinstance(member, property):
            assert isinstance(ours, property), name
            continue
        if not inspect.isfunction(member):  # class attributes and DeepSpeed's static helpers
            continue
        expected = _params(member)
        if name in WIDENED:  # the default DeepSpeed's own backends (here cuda) give it
            assert expected != _params(getattr(CUDA_Accelerator, name))
            expected = _params(getattr(CUDA_Accelerator, name))
        assert _params(ours) == expected, f"{name}{inspect.signature(ours)} vs DeepSpeed's {inspect.signature(member)}"
        checked += 1
    assert checked >= 55  # 59 in 0.15.0, 71 in 0.19.8


@pytest.mark.parametrize("backend", BUILTIN_BACKENDS)
def test_backend_through_the_adapter_has_every_deepspeed_member(ds: Any, backend: str) -> None:
    from accelhal.compat.deepspeed import as_deepspeed_accelerator
    from accelhal.compat.deepspeed._releases import installed_shape

    cls = registry().backends[backend].spec.load_class()
    instance = object.__new__(cls)  # as DeepSpeed's test does: raises TypeError if a member is abstract
    adapter = as_deepspeed_accelerator(instance)
    assert not type(adapter).__abstractmethods__
    problems = []
    shape = installed_shape()
    for name, member in _deepspeed_members(ds).items():
        if name in shape.own | shape.written or isinstance(member, staticmethod):
            continue  # DeepSpeed's own implementation is kept, or the adapter's own answers
        if not hasattr(cls, name):
            problems.append(f"{name}: missing")
        elif isinstance(member, property):
            ours = inspect.getattr_static(cls, name)
            # a constant may be a plain class attribute: reading it on an instance is the same
            if not isinstance(ours, property) and not (ours is None or isinstance(ours, type)):
                problems.append(f"{name}: neither a property nor a constant class attribute")
        elif inspect.isfunction(member):
            problems.extend(argument_problems(name, inspect.signature(member), inspect.signature(getattr(cls, name))))
    assert problems == [], f"{cls.__qualname__}: {problems}"
    # the members the adapter answers itself, from DeepSpeed's files for the device
    assert adapter.op_builder_dir().startswith(
        ("deepspeed.ops.op_builder", "accelhal.ops", "accelhal.compat.deepspeed")
    )
    assert adapter.create_op_builder("NoSuchBuilder").is_compatible() is False
    assert adapter.get_op_builder("FusedAdamBuilder") is not None
    assert adapter.visible_devices_envs()[0]


def test_the_migration_guide_covers_every_deepspeed_member(ds: Any) -> None:
    guide = GUIDE.read_text()
    start = guide.index(". Every member\n")
    table = guide[start : guide.index("\n## ", start)]
    mentioned = set(re.findall(r"`(\w+)", table))
    missing = sorted(set(_deepspeed_members(ds)) - mentioned)
    assert missing == []


def test_the_migration_guide_names_only_commands_that_exist(capsys: pytest.CaptureFixture[str]) -> None:
    from accelhal.cli import main

    named = sorted(set(re.findall(r"`accelhal (\w+)", GUIDE.read_text())))
    assert named
    for command in named:
        with pytest.raises(SystemExit) as exit_:
            main([command, "--help"])
        assert exit_.value.code == 0, f"the guide names `accelhal {command}`: {capsys.readouterr().err}"
