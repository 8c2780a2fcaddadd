"""The contract declares every DeepSpeed 0.19.8 member with DeepSpeed's argument names and defaults."""

from __future__ import annotations

import functools
import inspect
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from accelhal.contract.accelerator import Accelerator
from accelhal.contract.class_checks import _parameter_names, contract_problems
from accelhal.contract.spec import CONTRACT_VERSION

REFERENCE = Path(__file__).parent / "data" / "deepspeed-0.19.8-contract.md"
ROW = re.compile(r"^\| `(?P<name>\w+)` \| (?P<kind>\w+) \| (?P<abstract>yes|no) \| `(?P<signature>.*)` \|$")

# Deliberate, documented differences: DeepSpeed's ABC gives these no default, but every
# DeepSpeed backend defaults them to None and callers rely on ``device_name()``.
ADDED_DEFAULTS = {("device_name", "device_index"), ("device", "device_index")}


def reference_members() -> list[dict[str, str]]:
    rows = [m.groupdict() for line in REFERENCE.read_text().splitlines() if (m := ROW.match(line))]
    assert len(rows) == 85, "the reference table has 85 rows"
    return rows


def parse_parameters(signature: str) -> list[tuple[str, str | None, str]]:
    """``(self, a, b=None, *size, dtype)`` -> [(name, default, kind)]."""
    inner = signature.strip()[1:].split(")")[0]
    params = []
    for part in filter(None, (p.strip() for p in inner.split(","))):
        name, _, default = part.partition("=")
        kind = "var" if name.startswith("*") else "plain"
        params.append((name.lstrip("*"), default or None, kind))
    return params


@pytest.mark.parametrize("member", reference_members(), ids=lambda m: m["name"])
def test_member_matches_deepspeed(member: dict[str, str]) -> None:
    name, kind = member["name"], member["kind"]
    assert hasattr(Accelerator, name), f"Accelerator lacks DeepSpeed's member {name}"
    static = inspect.getattr_static(Accelerator, name)
    if kind == "property":
        assert isinstance(static, property), f"{name} must be a property"
        return
    if kind == "attribute":
        assert getattr(Accelerator, name) == eval(member["signature"])
        return
    if kind == "staticmethod":
        assert isinstance(static, staticmethod), f"{name} must be a staticmethod"
    expected = parse_parameters(member["signature"])
    actual = inspect.signature(getattr(Accelerator, name))
    params = list(actual.parameters.values())
    if kind != "staticmethod":
        assert params[0].name == "self"
    assert [p.name for p in params] == [p[0] for p in expected], f"{name}{actual} vs DeepSpeed {member['signature']}"
    for param, (pname, default, pkind) in zip(params, expected, strict=True):
        if pkind == "var":
            assert param.kind is inspect.Parameter.VAR_POSITIONAL
            continue
        if default is None:
            if (name, pname) in ADDED_DEFAULTS:
                assert param.default is None
            else:
                assert param.default is inspect.Parameter.empty, f"{name}({pname}) must have no default"
        else:
            assert param.default == eval(default), f"{name}({pname}={default})"


def test_abstract_members_are_only_what_each_backend_must_answer() -> None:
    abstract = set(Accelerator.__abstractmethods__)
    must_answer = {
        "set_device", "current_device", "device_count", "synchronize", "is_available",
        "set_rng_state", "get_rng_state", "manual_seed", "manual_seed_all", "initial_seed", "default_generator",
        "memory_allocated", "max_memory_allocated", "memory_stats", "reset_peak_memory_stats",
        "memory_reserved", "max_memory_reserved", "total_memory", "available_memory",
        "is_bf16_supported", "is_fp16_supported",
    }  # fmt: skip
    assert abstract == must_answer


def test_every_public_member_has_a_docstring() -> None:
    for name, value in vars(Accelerator).items():
        if name.startswith("_") or not callable(getattr(value, "fget", value)):
            continue
        doc = getattr(value, "__doc__", None) or getattr(getattr(value, "fget", None), "__doc__", None)
        assert doc and doc.strip(), f"Accelerator.{name} has no docstring"


def test_contract_problems_name_what_is_wrong() -> None:
    class Bad(Accelerator):
        _name = "bad"
        contract_version = CONTRACT_VERSION + 1

        def synchronize(self, index=None):  # type: ignore[no-untyped-def,override]
            return None

    problems = " ".join(contract_problems(Bad))
    assert "missing abstract members" in problems and "current_device" in problems
    assert "device_type must be a non-empty string" in problems
    assert f"contract version {CONTRACT_VERSION + 1}" in problems
    assert "synchronize" in problems and "device_index" in problems
    assert contract_problems(int) == [f"{int!r} is not a subclass of accelhal.Accelerator"]


def _plain(a, /, b, *args, c, d=1, **kwargs):  # type: ignore[no-untyped-def]
    return a


def _keyword_only(self, *, device_index=None):  # type: ignore[no-untyped-def]
    return self


@pytest.mark.parametrize(
    "func",
    [
        _plain,
        _keyword_only,
        lambda *a, **k: None,
        functools.wraps(_plain)(lambda *a, **k: None),
        functools.partial(_plain, 1),
    ]
    + [value for value in vars(Accelerator).values() if inspect.isfunction(value)],
)
def test_parameter_names_agree_with_inspect(func: Callable[..., object]) -> None:
    """The fast reading from ``__code__`` lists what ``inspect.signature`` lists (wrapped functions included)."""
    assert _parameter_names(func) == tuple(inspect.signature(func).parameters)


def test_a_wrapped_override_is_judged_by_its_visible_signature() -> None:
    from accelhal_backends.cpu.accelerator import CpuAccelerator

    def renamed(self, idx=None):  # type: ignore[no-untyped-def]
        return None

    @functools.wraps(renamed)
    def wrapper(*args, **kwargs):  # type: ignore[no-untyped-def]
        return renamed(*args, **kwargs)

    subclass = type("Sub", (CpuAccelerator,), {"synchronize": wrapper})
    assert any("synchronize" in p and "idx" in p for p in contract_problems(subclass))
    assert contract_problems(CpuAccelerator) == []
