"""What docs/plugins.md promises a plugin author, checked with a real plugin distribution in fresh processes.

The plugin is ``acme``, written as the guide writes one: a ``CpuAccelerator`` subclass that says
``_name = "acme"``, registered with a spec that declares a ``hint``, a ``device_check_command``
and a ``description``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.cli.conftest import Result, run_accelhal
from tests.conftest import InstallDistribution
from tests.plugin_sources import backend_plugin

HINT = "install the acme toolkit and source /opt/acme/env.sh"
SPEC = f", hint={HINT!r}, device_check_command='acme-smi', description='Acme AI accelerator'"
PROBES = {
    "available": "return Verdict.available('acme device present')",
    "no-device": "return Verdict.no_device('the acme runtime sees no device')",
    "probe-error": "raise RuntimeError('acme driver exploded')",
}
INCOMPLETE_CLASS = """
from accelhal import Accelerator, BackendSpec, Verdict, hookimpl

class AcmeAccelerator(Accelerator):  # no member of the contract implemented
    _name = "acme"
    device_type = "cpu"

@hookimpl
def accelhal_register_backends(register):
    register(BackendSpec(name="acme", device_type="cpu", priority=950, accelerator=AcmeAccelerator,
                         probe=lambda: Verdict.available("acme device present")))
"""

Acme = Callable[..., Result]


@pytest.fixture
def acme(install_distribution: InstallDistribution, tmp_path: Path) -> Callable[[str], Acme]:
    """``acme(verdict)`` installs acme whose probe gives that verdict; it returns a runner of ``accelhal``.

    The runs share a cache of their own: what one records of acme (its deferral) no test beside it overwrites.
    """
    cache = tmp_path / "cache"

    def install(verdict: str) -> Acme:
        extra = SPEC + (", requires=('acme_runtime',)" if verdict == "not-installed" else "")
        source = backend_plugin(
            "acme", priority=950, probe_body=PROBES.get(verdict, PROBES["available"]), spec_extra=extra
        )
        if verdict == "incomplete":
            source = INCOMPLETE_CLASS
        site = install_distribution("acme-accel", {"acme_plugin": source}, {"acme": "acme_plugin"}, version="0.1")

        def run(*args: str, code: str | None = None, **env: str) -> Result:
            paths = {"PYTHONPATH": str(site.parent), "XDG_CACHE_HOME": str(cache)}
            return run_accelhal(*args, code=code, code_after_torch=True, env={**paths, **env})

        return run

    return install


CLASS_SPEC = """
import json, accelhal
from acme_plugin import AcmeAccelerator
before = AcmeAccelerator.spec
acc = accelhal.get_accelerator()
spec = type(acc).spec
print(json.dumps([before, acc.name, spec.name, spec.priority, spec.description, spec.hint]))
"""


def test_the_class_reports_the_spec_it_was_registered_with(acme: Callable[[str], Acme]) -> None:
    result = acme("available")(code=CLASS_SPEC)
    assert result.returncode == 0, result.output
    before, active, *spec = json.loads(result.stdout)
    assert before is None  # cpu's spec, inherited from CpuAccelerator, no longer describes it
    assert active == "acme" and spec == ["acme", 950, "Acme AI accelerator", HINT]


def test_a_class_that_names_a_spec_and_says_otherwise_fails_to_be_defined() -> None:
    from accelhal import BackendSpec, Verdict
    from accelhal_backends.cpu.accelerator import CpuAccelerator

    spec = BackendSpec(name="acme", device_type="cpu", priority=950, accelerator="m:C", probe=Verdict.available)
    with pytest.raises(TypeError, match="AcmeAccelerator._name is 'other' but the spec 'acme'"):
        type("AcmeAccelerator", (CpuAccelerator,), {"spec": spec, "_name": "other"})


@pytest.mark.parametrize("verdict", ["not-installed", "no-device", "probe-error"])
def test_the_spec_hint_is_shown_wherever_a_hint_is(acme: Callable[[str], Acme], verdict: str) -> None:
    run = acme(verdict)
    hint = "check which devices the driver sees: acme-smi" if verdict == "no-device" else HINT
    data = run("explain", "acme", "--json").json()
    assert (data["outcome"], data["hint"]) == (verdict, hint)
    assert f"hint: {hint[0].upper()}{hint[1:]}." in " ".join(run("explain", "acme").stdout.split())
    listed = run("list").stdout.splitlines()
    assert listed[listed.index("hints:") + 1 :][:1] == [f"  - acme: {hint[0].upper()}{hint[1:]}."]
    forced = run("info", ACCELHAL_ACCELERATOR="acme")
    assert forced.returncode == 2
    assert forced.stderr.endswith(f"Hint: {hint[0].upper()}{hint[1:]}.\n"), forced.stderr
    assert forced.stderr.startswith("accelhal: error: accelerator 'acme' (requested by ACCELHAL_ACCELERATOR)")


def test_a_probe_that_raises_is_a_plugin_problem_everywhere(acme: Callable[[str], Acme]) -> None:
    run = acme("probe-error")
    info = " ".join(run("info").stdout.split())
    assert "plugin problems: 1 ('accelhal doctor' says how to fix each)" in info
    assert "plugin 'acme' failed while probing (acme-accel 0.1): acme: the probe raised RuntimeError" in info
    problems = run("info", "--json").json()["plugin_problems"]
    assert [(p["plugin"], p["stage"], p["backend"], p["hint"]) for p in problems] == [("acme", "probe", "acme", HINT)]
    warned = run(code="import accelhal; accelhal.get_accelerator()")
    assert warned.stderr.splitlines() == [
        "accelhal: no accelerator qualified, so cpu is used ('accelhal explain' says why; 1 plugin problem: "
        "'accelhal doctor')"
    ]
    doctor = run("doctor", "--json")
    assert doctor.returncode == 1
    assert [p["code"] for p in doctor.json()["problems"]] == ["backend-broken"]


def test_list_shows_each_description(acme: Callable[[str], Acme]) -> None:
    run = acme("available")
    rows = run("list").stdout.splitlines()
    first = next(i for i, line in enumerate(rows) if line.startswith(" acme *"))
    assert rows[first].split("|")[-1].strip() == "Acme AI accelerator"
    assert rows[first + 1].split("|")[-1].strip() == "acme device present"
    entries = {e["name"]: e["description"] for e in run("list", "--json").json()["backends"]}
    assert entries["acme"] == "Acme AI accelerator" and all(entries.values())


def test_a_class_missing_members_is_told_to_implement_them(acme: Callable[[str], Acme]) -> None:
    run = acme("incomplete")
    doctor = run("doctor", "--json").json()
    failed = next(p for p in doctor["problems"] if p["code"] == "plugin-failed")
    assert "missing abstract members: available_memory, " in failed["detail"]
    assert "its authors must implement the missing members of accelhal's contract (version 1" in failed["fix"]
    assert "upgrade or reinstall" not in failed["fix"] and "ACCELHAL_BLOCK_PLUGINS=acme" in failed["fix"]
    explained = run("explain", "acme")
    assert explained.stdout.count("available_memory") == 1, explained.stdout  # the missing names, once
    assert "must implement the missing members" in " ".join(explained.stdout.split())


def test_the_known_names_are_one_list_in_priority_order_with_generic(acme: Callable[[str], Acme]) -> None:
    run = acme("available")
    known = [entry["name"] for entry in run("list", "--json").json()["backends"]] + ["generic"]
    expected = f"known accelerators: {', '.join(known)}"
    forced = run("info", ACCELHAL_ACCELERATOR="bogus")
    assert forced.stderr == (
        f"accelhal: error: unknown accelerator 'bogus' (requested by ACCELHAL_ACCELERATOR); {expected}\n"
    )  # one line, piped, however long
    explained = run("explain", "bogus")
    assert explained.returncode == 2
    assert explained.stderr == f"accelhal: error: unknown accelerator 'bogus'; {expected}\n"
    assert run("explain", "bogus", "--json").json()["known"] == known
    doctor = run("doctor", "--json", ACCELHAL_ACCELERATOR="bogus").json()
    assert next(p for p in doctor["problems"] if p["code"] == "forced-unavailable")["fix"].endswith(
        f"set it to one of: {', '.join(known)}."
    )


def test_a_forced_backend_counts_the_backends_it_did_not_probe(acme: Callable[[str], Acme]) -> None:
    run = acme("available")
    others = len(run("list", "--json").json()["backends"]) - 2  # neither cpu nor acme, whose plugin is deferred:
    why = " ".join(run("info", ACCELHAL_ACCELERATOR="cpu").stdout.split())  # it did not register 'cpu' last time
    assert f"The other {others} registered backends were not probed, and 1 plugin was not imported" in why


def test_usage_lines_and_schema_follow_the_exit_code_table() -> None:
    usage = run_accelhal("check", "--help").stdout
    assert "usage: accelhal check [-h] [--json] [-v] [--timeout SECONDS] [NAME]" in usage
    unknown = run_accelhal("schema", "nosuch")
    assert unknown.returncode == 2 and unknown.stdout == ""
    assert unknown.stderr.startswith("accelhal: error: no schema for 'nosuch'; the schemas: check, doctor, error")
    as_json = run_accelhal("schema", "nosuch", "--json")
    assert as_json.returncode == 2 and as_json.json()["command"] == "schema"


SILENCED = {
    "default": ("", {}),
    "forced cpu": ("", {"ACCELHAL_ACCELERATOR": "cpu"}),
    "logger level": ("import logging; logging.getLogger('accelhal').setLevel(logging.ERROR); ", {}),
}


@pytest.mark.parametrize("way", SILENCED)
def test_the_fallback_warning_is_silenced_as_the_quick_start_says(way: str) -> None:
    prelude, env = SILENCED[way]
    env = {"ACCELHAL_BLOCK_PLUGINS": "accelhal", **env}  # every built-in but cpu held back: a fallback anywhere
    code = prelude + "import accelhal; print(accelhal.get_accelerator().name)"
    result = run_accelhal(code=code, code_after_torch=True, env=env)
    assert result.stdout == "cpu\n"
    warning = "accelhal: no accelerator qualified, so cpu is used ('accelhal explain' says why)\n"
    assert result.stderr == (warning if way == "default" else "")
