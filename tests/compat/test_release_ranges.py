"""Each adapter's declared range agrees with the extras in pyproject.toml, the pins of nox's adapter sessions and
the releases installed here (one of the two ends, or a release nox's ``adapter_release`` pins); every row of an
adapter's release tables between the ends has a nox session."""

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


def nox_pins(table: str = "ADAPTER_ENDS") -> dict[str, dict[str, str]]:
    """A table of pins in noxfile.py (read, not run: nox need not be installed): key -> distribution -> release."""
    tree = ast.parse((REPO / "noxfile.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.AnnAssign) and getattr(node.target, "id", None) == table:
            ends = ast.literal_eval(node.value)  # type: ignore[arg-type]
            return {
                end: {REQUIREMENT.match(pin).group(1).lower(): pin.split("==")[1] for pin in pins}  # type: ignore[union-attr]
                for end, pins in ends.items()
            }
    raise AssertionError(f"noxfile.py declares no {table}")


SHAPE_TABLES = {
    "deepspeed": ("accelhal.compat.deepspeed._releases", ("SHAPES", "DEFECTS")),
    "lightning": ("accelhal.compat.lightning._releases", ("SHAPES",)),
    "accelerate": ("accelhal.compat.accelerate._releases", ("SHAPES",)),
    "transformers": ("accelhal.compat.accelerate._releases", ("TRANSFORMERS_SHAPES",)),
    "ray": ("accelhal.compat.ray._releases", ("SHAPES",)),
}
"""Each adapter's release tables: a row's first release is where the adapter's behaviour changes."""


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


@pytest.mark.parametrize("distribution", sorted(SHAPE_TABLES))
def test_every_rows_first_release_between_the_ends_has_a_nox_session(distribution: str) -> None:
    supported, (module, names) = declared(distribution), SHAPE_TABLES[distribution]
    firsts = {
        first
        for name in names
        for first, _ in getattr(importlib.import_module(module), name).rows
        if first not in (supported.floor, supported.newest)
    }
    sessions = [pins for pins in nox_pins("BETWEEN_ENDS").values() if distribution in pins]
    between = {pins[distribution] for pins in sessions}
    assert firsts <= between, f"add to BETWEEN_ENDS in noxfile.py: {sorted(firsts - between)}"
    assert all(supported.admits(release) for release in between)
    if distribution == "lightning":  # both packages at one release
        assert all(pins["pytorch_lightning"] == pins["lightning"] for pins in sessions)


@pytest.mark.parametrize("distribution", sorted(RANGES))
def test_the_installed_release_is_one_nox_pins(distribution: str) -> None:
    supported = declared(distribution)
    installed = metadata.version(distribution)
    assert supported.check(installed) == installed
    pinned = {supported.floor, supported.newest} | {
        pins[distribution] for pins in nox_pins("BETWEEN_ENDS").values() if distribution in pins
    }
    assert installed.split("+")[0] in pinned, f"{distribution} {installed}"
