"""A backend's identity is declared in its spec: a class that declares it as class attributes is told, once."""

from __future__ import annotations

import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from accelhal import BackendSpec, Verdict
from accelhal_backends.cpu.accelerator import CpuAccelerator
from tests.conftest import InstallDistribution
from tests.torch_features import needs_generic_backend

SPEC = BackendSpec(
    name="loop",
    device_type="cpu",
    priority=90,
    accelerator=f"{__name__}:NamedBySpec",
    probe=lambda: Verdict.available("the host"),
    visible_devices_envs=("LOOP_VISIBLE_DEVICES",),
)


class NamedBySpec(CpuAccelerator):
    spec = SPEC


def test_a_class_that_declares_its_identity_is_told_how_to_move_it() -> None:
    with pytest.warns(DeprecationWarning) as caught:

        class Loop(CpuAccelerator):  # the statement the warning points at
            _name = "loop"
            _visible_devices_envs = ("LOOP_VISIBLE_DEVICES",)

        line = sys._getframe().f_lineno - 4

    assert len(caught) == 1, [str(w.message) for w in caught]
    told = caught[0]
    message = str(told.message)
    assert "Loop declares its backend's identity as class attributes (_name, _visible_devices_envs)" in message
    assert "name=, visible_devices_envs=" in message and "spec = <that BackendSpec>" in message
    assert "contract version 2 will refuse" in message
    assert (Path(told.filename).resolve(), told.lineno) == (Path(__file__).resolve(), line)
    assert Loop().name == "loop"  # until then it works as before


def test_a_class_that_names_its_spec_is_not_told_and_answers_from_it() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")

        class Again(CpuAccelerator):
            spec = SPEC

    acc = Again()
    assert (acc.name, acc._name, acc.device_type, acc.visible_devices_envs()) == (
        "loop",
        "loop",
        "cpu",
        ["LOOP_VISIBLE_DEVICES"],
    )


PLUGIN = """
from accelhal import BackendSpec, Verdict, hookimpl
from accelhal_backends.cpu.accelerator import CpuAccelerator

SPEC = BackendSpec(name="loop", device_type="cpu", priority=950, accelerator=__name__ + ":LoopAccelerator",
                   probe=lambda: Verdict.available("the host"))


class LoopAccelerator(CpuAccelerator):
    {body}


@hookimpl
def accelhal_register_backends(register):
    register(SPEC)
"""
OLD_STYLE, MOVED = '_name = "loop"', "spec = SPEC"
"""The class body before and after the move the warning asks for."""

SELECT_TWICE = """
import accelhal
print(accelhal.get_accelerator().name)
accelhal.reset_accelerator()
print(accelhal.get_accelerator().name)
"""


BODIES = pytest.mark.parametrize(("body", "told"), [(OLD_STYLE, True), (MOVED, False)])
"""The plugin's class before the move (told) and after it (not told)."""


def _run_beside_plugin(
    install_distribution: InstallDistribution, body: str, *arguments: str
) -> tuple[subprocess.CompletedProcess[str], Path]:
    """``python *arguments`` in a fresh process with the loop plugin (its class body ``body``) installed."""
    dist_info = install_distribution("loop-accel", {"loop_plugin": PLUGIN.format(body=body)}, {"loop": "loop_plugin"})
    result = subprocess.run(
        [sys.executable, *arguments],
        env={**_environ(), "PYTHONPATH": str(dist_info.parent)},
        capture_output=True,
        text=True,
        timeout=180,
    )
    return result, dist_info.parent / "loop_plugin.py"


@BODIES
def test_an_installed_plugin_is_told_once_per_process(
    install_distribution: InstallDistribution, body: str, told: bool
) -> None:
    """In a fresh process that shows deprecations, a plugin declaring ``_name`` is told once; selection works."""
    result, _ = _run_beside_plugin(install_distribution, body, "-W", "default::DeprecationWarning", "-c", SELECT_TWICE)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["loop", "loop"]
    assert result.stderr.count("IdentityDeclarationWarning") == told, result.stderr
    if told:
        assert "loop_plugin.py:9: IdentityDeclarationWarning: LoopAccelerator declares" in result.stderr


@BODIES
def test_accelhal_check_tells_the_plugins_author(
    install_distribution: InstallDistribution, body: str, told: bool
) -> None:
    """``accelhal check`` shows the warning Python hides outside ``__main__``, as a note on stderr, not in its JSON."""
    command = ("-m", "accelhal", "check", "loop", "--json", "--", "-k", "test_name")
    result, plugin = _run_beside_plugin(install_distribution, body, *command)
    assert result.returncode == 0, result.stderr
    assert '"backend": "loop"' in result.stdout and "declares" not in result.stdout
    note = f"accelhal: note: {plugin}:9: LoopAccelerator declares its backend's identity"
    assert (note in result.stderr) is told, result.stderr
    assert result.stderr.count("declares its backend's identity") == told, result.stderr


def test_accelhal_check_tells_it_where_the_class_is_refused(install_distribution: InstallDistribution) -> None:
    """A class whose ``_name`` disagrees with its spec cannot be checked; the note says where it declares it."""
    result, plugin = _run_beside_plugin(install_distribution, '_name = "other"', "-m", "accelhal", "check", "loop")
    assert result.returncode != 0
    note = f"accelhal: note: {plugin}:9: LoopAccelerator declares its backend's identity as class attributes (_name)"
    assert note in result.stderr, result.stderr
    assert "spec name is 'loop' but LoopAccelerator._name is 'other'" in result.stderr


def test_no_class_accelhal_ships_or_documents_is_told() -> None:
    """Every built-in backend's class and the example plugin's, under -W error."""
    example = Path(__file__).resolve().parent.parent / "docs" / "examples" / "accelhal-example-plugin"
    code = """
import torch
from accelhal import BackendSpec
from accelhal_backends import catalog
import accelhal_loopback.accelerator
for spec in vars(catalog).values():
    if isinstance(spec, BackendSpec):
        spec.load_class()  # the classes of vendor stacks too: their modules import no vendor package at the top
print("none told")
"""
    _assert_told_nothing(code, example)


@needs_generic_backend
def test_the_generic_backends_classes_are_not_told() -> None:
    code = "from accelhal_backends.generic.accelerator import classes\nclasses.cpu\nprint('none told')"
    _assert_told_nothing(code)


def _assert_told_nothing(code: str, *path: Path) -> None:
    """``code`` runs under ``-W error::DeprecationWarning`` with ``path`` importable, and prints ``none told``."""
    result = subprocess.run(
        [sys.executable, "-W", "error::DeprecationWarning", "-c", code],
        env={**_environ(), "PYTHONPATH": os.pathsep.join(map(str, path))},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.stdout.strip() == "none told", result.stderr


def _environ() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith(("ACCELHAL_", "PYTHONWARNINGS"))}


@pytest.mark.parametrize("module", [42, None, "accelhal_vendor_lookalike"])
def test_a_class_that_says_anything_as_its_module_is_still_defined_and_told(module: object) -> None:
    with pytest.warns(DeprecationWarning, match="Odd declares its backend's identity"):
        odd = type("Odd", (CpuAccelerator,), {"_name": "odd", "__module__": module})
    assert odd().name == "odd"
