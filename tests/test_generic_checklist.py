"""The checklist for device makers in docs/backends.md is what the generic backend calls; ``generic`` as a name."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest

import accelhal
from accelhal.cli import main
from accelhal.testing.isolated import CONTEXT_QUERY
from accelhal_backends import generic
from tests.conftest import InstallDistribution
from tests.plugin_sources import backend_plugin
from tests.torch_features import VERSION, lacks_torch_accelerator, reports_no_accelerator

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "backends.md"
ACCELERATOR = Path(generic.__file__).with_name("accelerator.py")


def _table(title: str) -> list[list[str]]:
    """The cells of the table that follows the paragraph starting with ``title`` (header and rule left out)."""
    lines = PAGE.read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(title))
    first = next(i for i in range(start, len(lines)) if lines[i].startswith("|"))
    end = next((i for i in range(first, len(lines)) if not lines[i].startswith("|")), len(lines))
    return [[cell.strip() for cell in line.strip("|").split(" | ")] for line in lines[first + 2 : end]]


def _names(cell: str) -> list[str]:
    """The identifiers a cell puts in backticks (``"`get_rng_state(device=None)`"`` -> ``["get_rng_state"]``)."""
    return re.findall(r"`([A-Za-z_]\w*)", cell)


def _calls() -> dict[str, set[str]]:
    """What ``accelerator.py`` reads of the device module (``self._m``) and of ``torch.accelerator``.

    ``"module"``: ``self._m.<name>`` and ``getattr(self._m, "<name>", ...)``; ``"raising"``: the
    names passed to ``self._from_module`` (those whose absence raises); ``"torch"``:
    ``torch.accelerator.<name>`` and the names given to ``_memory_figure`` (which reads them there).
    """
    found: dict[str, set[str]] = {"module": set(), "raising": set(), "torch": set()}

    def is_module(node: ast.expr) -> bool:
        return isinstance(node, ast.Attribute) and node.attr == "_m"

    tree = ast.parse(ACCELERATOR.read_text())
    torch_accelerator = {"torch.accelerator"} | {  # and the local names bound to it
        target.id
        for node in ast.walk(tree)
        if isinstance(node, ast.Assign) and ast.unparse(node.value) == "torch.accelerator"
        for target in node.targets
        if isinstance(target, ast.Name)
    }
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and is_module(node.value):
            found["module"].add(node.attr)
        elif isinstance(node, ast.Attribute) and ast.unparse(node.value) in torch_accelerator:
            found["torch"].add(node.attr)
        elif isinstance(node, ast.Call) and node.args:
            called = ast.unparse(node.func)
            constant = next(
                (a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)), None
            )
            if constant is None:
                continue
            if called == "getattr" and is_module(node.args[0]):
                found["module"].add(constant)
            elif called == "self._from_module":
                found["raising"].add(constant)
            elif called == "_memory_figure":
                found["torch"].add(constant)
    found["module"] = {name for name in found["module"] | found["raising"] if not name.startswith("__")}
    return found


def test_the_device_module_table_is_what_the_code_reads_in_the_declared_order() -> None:
    calls = _calls()
    declared = (*generic.DEVICE_MODULE_RNG, *generic.DEVICE_MODULE_OPTIONAL)
    assert calls["module"] == set(declared)
    assert calls["raising"] == set(generic.DEVICE_MODULE_RNG)
    rows = _table("**The device module**")
    assert [_names(row[0])[0] for row in rows] == [*declared, CONTEXT_QUERY]
    for row in rows:
        raises = "`UnsupportedFeatureError` naming it" in row[2]
        assert raises == (_names(row[0])[0] in generic.DEVICE_MODULE_RNG), row


def test_the_torch_accelerator_table_is_what_the_code_calls() -> None:
    calls = _calls()
    assert calls["torch"] - {"Graph"} == set(generic.TORCH_ACCELERATOR_CALLS)  # Graph: the graphs trial
    rows = _table("**`torch.accelerator`**")
    listed = [name for row in rows for name in _names(row[0])]
    assert sorted(listed) == sorted(generic.TORCH_ACCELERATOR_CALLS)


NO_DEVICE = (
    "no device torch.accelerator reports is left to the generic backend: torch reports no accelerator "
    "(torch.accelerator.current_accelerator() is None). Hint: Install the device's torch package (torch's device "
    "autoload imports it) or import it before selecting."
)
TOO_OLD = (
    f"the generic backend needs torch 2.10 or later, and this torch {VERSION} is too old: it has no "
    "torch.accelerator. Hint: Upgrade torch to 2.10 or later, or force the device's named backend ('accelhal list' "
    "lists them)."
)


@pytest.mark.parametrize(
    "reason",
    [
        pytest.param(NO_DEVICE, marks=reports_no_accelerator, id="no-device"),
        pytest.param(TOO_OLD, marks=lacks_torch_accelerator, id="torch-too-old"),  # torch 2.4.1 (the core suite's)
    ],
)
def test_generic_without_a_device_torch_reports_says_why(monkeypatch: pytest.MonkeyPatch, reason: str) -> None:
    monkeypatch.setenv("ACCELHAL_ACCELERATOR", "generic")
    with pytest.raises(accelhal.BackendUnavailableError) as raised:
        accelhal.get_accelerator()
    assert str(raised.value) == f"accelerator 'generic' (requested by ACCELHAL_ACCELERATOR) is not available: {reason}"
    report = accelhal.detect()
    assert (report.chosen, report.rule) == (None, "error")


def test_ds_accelerator_takes_generic_as_accelhal_accelerator_does_and_both_descriptions_say_so(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("DS_ACCELERATOR", " Generic ")
    with pytest.raises(accelhal.BackendUnavailableError, match=r"^accelerator 'generic' \(requested by DS_ACC"):
        accelhal.get_accelerator()
    from accelhal.process.settings import VARIABLES

    described = {v.name: " ".join(v.help.split()) for v in VARIABLES}
    assert "'generic' means the device torch.accelerator reports" in described["ACCELHAL_ACCELERATOR"]
    assert "Parsed like ACCELHAL_ACCELERATOR, 'generic' included." in described["DS_ACCELERATOR"]


def test_generic_with_its_plugin_blocked_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ACCELHAL_BLOCK_PLUGINS", "generic")
    with pytest.raises(accelhal.BackendUnavailableError, match=r"\(requested by set_accelerator\)") as raised:
        accelhal.set_accelerator("generic")
    assert str(raised.value).endswith(
        "left to the generic backend: the generic plugin is not loaded (blocked: listed in ACCELHAL_BLOCK_PLUGINS)."
    )


TWO_GENERIC = """
from accelhal import BackendSpec, Verdict, hookimpl

@hookimpl
def accelhal_register_backends(register):
    for name in ("acmea", "acmeb"):
        register(BackendSpec(name=name, device_type=name, priority=150, probe=lambda: Verdict.available("here"),
                             accelerator="acme_never_imported:Accelerator", comm_backend="gloo", generic=True))
"""


def test_generic_is_ambiguous_where_two_generic_backends_are_registered(
    install_distribution: InstallDistribution, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    install_distribution("acme-generic", {"acme_generic": TWO_GENERIC}, {"acmegeneric": "acme_generic"})
    monkeypatch.setenv("ACCELHAL_ACCELERATOR", "Generic")
    with pytest.raises(accelhal.ConfigurationError) as raised:
        accelhal.get_accelerator()
    assert str(raised.value) == (
        "ACCELHAL_ACCELERATOR=generic is ambiguous: generic backends are registered for 'acmea' and 'acmeb'; "
        "force one by its name (ACCELHAL_ACCELERATOR=acmea)"
    )
    monkeypatch.delenv("ACCELHAL_ACCELERATOR")
    accelhal.reset_accelerator()
    assert main(["explain", "generic", "--json"]) == 2  # a name that stands for no one backend: a user mistake
    explained = json.loads(capsys.readouterr().out)
    assert (explained["outcome"], explained["alias"]) == ("ambiguous", "generic")
    assert explained["summary"] == "'generic' is ambiguous: generic backends are registered for 'acmea' and 'acmeb'."
    assert explained["hint"] == "ask for one by its name (accelhal explain acmea)"


def test_a_backend_named_generic_is_forced_as_any_other(install_distribution: InstallDistribution) -> None:
    install_distribution("acme-named", {"acme_named": backend_plugin("generic")}, {"generic_named": "acme_named"})
    assert accelhal.set_accelerator("generic").name == "generic"
    assert accelhal.detect().explanation.startswith("'generic' was requested by set_accelerator;")
