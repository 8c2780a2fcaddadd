"""Each adapter's declared range agrees with the extras in pyproject.toml, the pins of nox's adapter sessions and
the releases installed here (one of the two ends)."""

from __future__ import annotations

import ast
import importlib
import re
from importlib import metadata
from pathlib import Path

import pytest
import tomllib

from accelhal.compat._releases import ReleaseRange

REPO = Path(__file__).resolve().parents[2]

RANGES = {
    "deepspeed": ("accelhal.compat.deepspeed._releases", "SUPPORTED"),
    "lightning": ("accelhal.compat.lightning._releases", "SUPPORTED"),
    "pytorch_lightning": ("accelhal.compat.lightning._releases", "SUPPORTED_PL"),
    "accelerate": ("accelhal.compat.accelerate._releases", "SUPPORTED"),
    "transformers": ("accelhal.compat.accelerate._releases", "SUPPORTED_TRANSFORMERS"),
    "ray": ("accelhal.compat.ray._releases", "SUPPORTED"),
}
"""Every framework distribution an adapter supports, and where its range is declared."""

REQUIREMENT = re.compile(r"^([A-Za-z0-9_.\-]+)(\[[^\]]*\])?(.*)$")


def declared(distribution: str) -> ReleaseRange:
    module, name = RANGES[distribution]
    found: ReleaseRange = getattr(importlib.import_module(module), name)
    assert found.distribution == distribution
    return found


def requirements(extra: str) -> dict[str, str]:
    """The extra's requirements in pyproject.toml: distribution -> specifier."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    found = {}
    for requirement in project["optional-dependencies"][extra]:
        match = REQUIREMENT.match(requirement.replace(" ", ""))
        assert match is not None, requirement
        found[match.group(1).replace("-", "_").lower()] = match.group(3)
    return found


def nox_pins() -> dict[str, dict[str, str]]:
    """``ADAPTER_ENDS`` of noxfile.py (read, not run: nox need not be installed): end -> distribution -> release."""
    tree = ast.parse((REPO / "noxfile.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.AnnAssign) and getattr(node.target, "id", None) == "ADAPTER_ENDS":
            ends = ast.literal_eval(node.value)  # type: ignore[arg-type]
            return {
                end: {REQUIREMENT.match(pin).group(1).lower(): pin.split("==")[1] for pin in pins}  # type: ignore[union-attr]
                for end, pins in ends.items()
            }
    raise AssertionError("noxfile.py declares no ADAPTER_ENDS")


EXTRAS = {
    "deepspeed": "deepspeed",
    "lightning": "lightning",
    "ray": "ray",
    "accelerate": "accelerate",
    "transformers": "transformers",
}
"""The extra that admits each distribution's range."""


@pytest.mark.parametrize("distribution", sorted(EXTRAS))
def test_the_extra_admits_exactly_the_declared_range(distribution: str) -> None:
    assert requirements(EXTRAS[distribution])[distribution] == declared(distribution).specifier


@pytest.mark.parametrize("distribution", sorted(RANGES))
def test_the_nox_ends_pin_the_floor_and_the_newest(distribution: str) -> None:
    pins, expected = nox_pins(), declared(distribution)
    assert (pins["floor"][distribution], pins["newest"][distribution]) == (expected.floor, expected.newest)


@pytest.mark.parametrize("distribution", sorted(set(RANGES) - {"pytorch_lightning"}))  # it comes with lightning
def test_the_test_extra_pins_the_newest(distribution: str) -> None:
    assert requirements("test").get(distribution) == f"=={declared(distribution).newest}"


@pytest.mark.parametrize("distribution", sorted(RANGES))
def test_the_installed_release_is_an_end_of_the_range(distribution: str) -> None:
    supported = declared(distribution)
    installed = metadata.version(distribution)
    assert supported.check(installed) == installed
    assert installed.split("+")[0] in (supported.floor, supported.newest), f"{distribution} {installed}"
