"""Every DeepSpeed release of the range: the shape table against each release's source; the refusals outside it.

``tests/data/deepspeed-shapes.json`` holds ``DeepSpeedAccelerator`` as every release from the
floor to the newest declares it (``scripts/record_deepspeed_shapes.py`` reads their sdists).
The adapter's ``SHAPES`` must state, for each recorded release, every member that is not the
same in all of them; the installed DeepSpeed must be its recorded row; and in every release
each member the adapter delegates must take DeepSpeed's arguments on accelhal's accelerator.
"""

from __future__ import annotations

import inspect
import json
import re
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest

from accelhal.compat._releases import ReleaseRange, release_key
from accelhal.compat.deepspeed._releases import (
    DEFECTS,
    GLOO_ZERO3_GATHER,
    GLOO_ZERO12_FLAT_GRAD,
    SHAPES,
    SUPPORTED,
    DeepSpeedShape,
    installed_defects,
)
from accelhal.contract.accelerator import Accelerator
from accelhal.errors import UnsupportedReleaseError
from tests import warm
from tests.compat import child_environment, requires_deepspeed
from tests.compat.deepspeed_shapes import Record, argument_problems, cpu_from_source, from_class, recorded, recorded_cpu
from tests.distributions import lay_out

RELEASES = recorded()
CPU = recorded_cpu()


def _varying(releases: Mapping[str, Mapping[str, Record]]) -> set[str]:
    """The members whose record is not the same in every release (absent counts as a record)."""
    names = {name for members in releases.values() for name in members}
    return {name for name in names if len({json.dumps(m.get(name), sort_keys=True) for m in releases.values()}) > 1}


def _table_problems(
    releases: Mapping[str, Mapping[str, Record]], shape_for: Callable[[str], DeepSpeedShape]
) -> list[str]:
    """Where the shape table does not state what a recorded release declares."""
    varying = _varying(releases)
    problems = []
    for release, members in releases.items():
        shape = shape_for(release)
        found = {n: members[n] for n in varying if n in members}
        abstract = {n: r["signature"] for n, r in found.items() if r["abstract"]}
        concrete = {n: r["signature"] for n, r in found.items() if not r["abstract"]}
        for label, declared, actual in (("abstract", shape.abstract, abstract), ("concrete", shape.concrete, concrete)):
            for name in sorted(set(declared) | set(actual)):
                if declared.get(name) != actual.get(name):
                    problems.append(f"{release} {label} {name}: table {declared.get(name)}, release {actual.get(name)}")
    return problems


def test_the_recording_is_the_whole_range() -> None:
    keys = [release_key(r) for r in RELEASES]
    assert keys == sorted(keys)
    assert (min(RELEASES, key=release_key), max(RELEASES, key=release_key)) == (SUPPORTED.floor, SUPPORTED.newest)
    assert all(SUPPORTED.admits(r) for r in RELEASES)
    assert len(RELEASES) >= 41  # 0.15.0-0.15.4, 0.16.0-0.16.9, 0.17.0-0.17.6, 0.18.0-0.18.9, 0.19.0-0.19.8


def test_the_shape_table_states_what_every_recorded_release_declares() -> None:
    assert _table_problems(RELEASES, SHAPES.shape_for) == []
    assert {r[0] for r in SHAPES.rows} <= set(RELEASES), "a row starts at a release that is not recorded"


def test_a_release_that_changes_a_member_the_table_does_not_know_fails() -> None:
    newest = RELEASES[SUPPORTED.newest]
    changed = {**newest, "range_push": {**newest["range_push"], "signature": "(self, msg, domain=None)"}}
    added = {**newest, "new_abstract": {"kind": "method", "abstract": True, "signature": "(self)"}}
    for next_release in (changed, added):
        problems = _table_problems({**RELEASES, "0.19.9": next_release}, SHAPES.shape_for)
        assert problems and all("0.19.9" in p or "new_abstract" in p for p in problems), problems


CPU_OWN_WHERE: dict[str, Callable[[Mapping[str, Record]], bool]] = {
    "device": lambda cpu: cpu["device"].get("returns") == "None",
    "manual_seed": lambda cpu: cpu["manual_seed"].get("returns") == "torch.manual_seed(seed)",
    "manual_seed_all": lambda cpu: cpu["manual_seed_all"].get("returns") == "torch.manual_seed(seed)",
    "is_fp16_supported": lambda cpu: cpu["is_fp16_supported"].get("returns") == "False",
    "supported_dtypes": lambda cpu: cpu["is_fp16_supported"].get("returns") == "False",
    "pin_memory": lambda cpu: (
        cpu["pin_memory"].get("returns") == "tensor" or "make_copy" in cpu["pin_memory"]["signature"]
    ),
}
"""Where the adapter on the host keeps ``CPU_Accelerator``'s member: where that answers otherwise than accelhal's
cpu or the abstract class (``device()`` None, the seeding functions torch's generator, no float16 to 0.16.7,
``pin_memory`` the tensor itself: from 0.19.6 with ``make_copy=False`` too, and counting no bytes in 0.19.5)."""


def _cpu_table_problems(
    cpu_records: Mapping[str, Mapping[str, Record]], shape_for: Callable[[str], DeepSpeedShape]
) -> list[str]:
    """Where the table's ``cpu`` does not state what a recorded release's ``CPU_Accelerator`` declares."""
    problems = []
    for release, cpu in cpu_records.items():
        abstract, shape = RELEASES[release], shape_for(release).cpu
        names = {
            n: list(_signature(r["signature"]).parameters) for n, r in abstract.items() if r["kind"] != "attribute"
        }
        written = {
            name: record["signature"]
            for name, record in cpu.items()
            if record["kind"] == "method"
            and name != "__init__"
            and (name not in abstract or list(_signature(record["signature"]).parameters) != names.get(name))
        }
        if written != dict(shape.written):
            problems.append(f"{release} cpu written: table {dict(shape.written)}, release {written}")
        own = {name for name, where in CPU_OWN_WHERE.items() if name in cpu and where(cpu)}
        if own != shape.own:
            problems.append(f"{release} cpu own: table {sorted(shape.own)}, release {sorted(own)}")
    return problems


def test_the_shape_table_states_what_every_recorded_cpu_accelerator_answers_otherwise() -> None:
    assert list(CPU) == list(RELEASES)
    assert _cpu_table_problems(CPU, SHAPES.shape_for) == []


def test_a_cpu_accelerator_that_changes_an_answer_the_table_does_not_know_fails() -> None:
    newest = CPU[SUPPORTED.newest]
    changed = {**newest, "device": {**newest["device"], "returns": "torch.device('cpu')"}}
    renamed = {**newest, "create_op_builder": {**newest["create_op_builder"], "signature": "(self, class_name)"}}
    for cpu in (changed, renamed):
        problems = _cpu_table_problems({SUPPORTED.newest: cpu}, SHAPES.shape_for)
        assert len(problems) == 1 and problems[0].startswith(SUPPORTED.newest), problems


def _signature(text: str) -> inspect.Signature:
    namespace: dict[str, Any] = {}
    exec(f"def member{text}: pass", namespace)  # a recorded signature: names and literal defaults
    return inspect.signature(namespace["member"])


@pytest.mark.parametrize("release", list(RELEASES))
def test_every_member_the_adapter_delegates_takes_deepspeeds_arguments(release: str) -> None:
    from accelhal.compat.deepspeed._adapter import WRITTEN, _AdapterMembers

    shape = SHAPES.shape_for(release)
    problems = []
    for name, record in RELEASES[release].items():
        theirs = _signature(record["signature"]) if record["kind"] != "attribute" else None
        if name in shape.written:
            mine = inspect.signature(WRITTEN[name])
            if theirs is None or [(p.name, p.default) for p in mine.parameters.values()] != [
                (p.name, p.default) for p in theirs.parameters.values()
            ]:
                problems.append(f"{name}: the adapter writes {mine}, DeepSpeed declares {record['signature']}")
        elif name in shape.own or name in vars(_AdapterMembers) or record["kind"] in ("static", "attribute"):
            continue
        elif not hasattr(Accelerator, name):
            problems.append(f"{name}: accelhal's accelerator has no such member")
        elif record["kind"] == "method" and theirs is not None:
            problems.extend(argument_problems(name, theirs, inspect.signature(getattr(Accelerator, name))))
    assert shape.written <= set(RELEASES[release]) and shape.own <= set(RELEASES[release])
    assert problems == []


@requires_deepspeed
def test_the_installed_release_is_its_recorded_row(ds: Any) -> None:
    from deepspeed.accelerator.abstract_accelerator import DeepSpeedAccelerator

    installed = SUPPORTED.check()
    assert installed in RELEASES, f"deepspeed {installed} is not recorded: run scripts/record_deepspeed_shapes.py"
    assert from_class(DeepSpeedAccelerator) == RELEASES[installed]


@requires_deepspeed
def test_the_installed_cpu_accelerator_is_its_recorded_row(ds: Any) -> None:
    from deepspeed.accelerator import cpu_accelerator

    assert cpu_from_source(inspect.getsource(cpu_accelerator)) == CPU[SUPPORTED.check()]


@requires_deepspeed
def test_the_installed_release_has_the_defects_its_row_declares(ds: Any) -> None:
    """The gloo ZeRO-3 gather defect: the installed DeepSpeed waits for the last all-gather handle only, or for all."""
    from deepspeed.runtime.zero.partition_parameters import Init

    source = inspect.getsource(Init._allgather_params_coalesced)
    waits_for_the_last_only = "launch_handles[-1].wait()" in source
    assert waits_for_the_last_only != ("for handle in launch_handles" in source), "neither: read DeepSpeed's source"
    assert (GLOO_ZERO3_GATHER in installed_defects()) == waits_for_the_last_only
    assert DEFECTS.shape_for("0.19.7") == {GLOO_ZERO3_GATHER} and DEFECTS.shape_for("0.19.8") == frozenset()


@requires_deepspeed
def test_the_installed_release_flattens_as_its_row_declares(ds: Any) -> None:
    """The ZeRO-1/2 flat buffer defect: flattened on the device (0.18.7 on) and not detached (before 0.19.0)."""
    from deepspeed.runtime.zero.stage_1_and_2 import DeepSpeedZeroOptimizer

    source = inspect.getsource(DeepSpeedZeroOptimizer.__init__)
    on_the_device = re.search(r"use_cpu_data=False(?:,\s*param_padding=param_padding)?\)(\.detach\(\))?", source)
    undetached = on_the_device is not None and on_the_device.group(1) is None
    assert (GLOO_ZERO12_FLAT_GRAD in installed_defects()) == undetached


# ---------------------------------------------------------------- outside the range
OUTSIDE = ["0.14.5", "0.20.0"]
"""A release below the floor and the next major release."""


@pytest.mark.parametrize("version", ["0.14.5", "0.14.99", "0.20", "0.20.1", "1.0.0"])
def test_releases_outside_the_range_are_refused_by_name(version: str) -> None:
    with pytest.raises(UnsupportedReleaseError) as refused:
        SUPPORTED.check(version)
    assert (refused.value.framework, refused.value.installed, refused.value.supported) == (
        "deepspeed",
        version,
        ">=0.15.0,<0.20",
    )
    assert "tested from 0.15.0 to 0.19.8" in str(refused.value)


@pytest.mark.parametrize("version", ["0.15.0", "0.17.6", "0.19.8", "0.19.99"])
def test_releases_in_the_range_are_admitted(version: str) -> None:
    assert SUPPORTED.check(version) == version


def _seen_as(version: str, site: Path) -> dict[str, str]:
    """A child environment in which the installed deepspeed reads as ``version`` (a dist-info first on the path)."""
    lay_out(site, "deepspeed", version)
    env = child_environment()
    env["PYTHONPATH"] = f"{site}:{env['PYTHONPATH']}"
    return env


INSTALL = """
import json, sys
import accelhal
from accelhal.compat.deepspeed import install
from accelhal.errors import UnsupportedReleaseError
try:
    install("cpu")
except UnsupportedReleaseError as exc:
    print(json.dumps({
        "error": str(exc),
        "installed": exc.installed,
        "deepspeed_imported": sorted(m for m in sys.modules if m.split(".")[0] == "deepspeed"),
        "hooks": [type(f).__module__ for f in sys.meta_path if "accelhal" in type(f).__module__],
        "rule": accelhal.detect().rule,
    }))
"""


@pytest.mark.parametrize("version", OUTSIDE)
def test_install_refuses_a_release_outside_the_range_before_anything_is_patched(version: str, tmp_path: Path) -> None:
    done = warm.run_code(INSTALL, [], _seen_as(version, tmp_path), sys.executable, 120)
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert found["installed"] == version
    assert f"deepspeed {version} is outside" in found["error"] and "deepspeed>=0.15.0,<0.20" in found["error"]
    assert found["deepspeed_imported"] == [] and found["hooks"] == []
    assert found["rule"] != "set_accelerator"  # install("cpu") did not get as far as choosing accelhal's backend


@pytest.mark.parametrize("version", OUTSIDE)
def test_the_hook_command_refuses_a_release_outside_the_range(version: str, tmp_path: Path) -> None:
    site = tmp_path / "target"
    site.mkdir()
    args = ["hook", "install", "--dir", str(site)]
    done = warm.run_module("accelhal.compat.deepspeed", args, _seen_as(version, tmp_path / "seen"), sys.executable, 60)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (
        f"error: deepspeed {version} is outside the releases accelhal supports (deepspeed>=0.15.0,<0.20): "
        "tested from 0.15.0 to 0.19.8; install a release in that range\n"
    )
    assert list(site.iterdir()) == []


HOOKED_IMPORT = """
import json, sys
from accelhal.compat.deepspeed import _hook
from accelhal.errors import UnsupportedReleaseError
_hook.arm()
try:
    import deepspeed
except UnsupportedReleaseError as exc:
    real = sys.modules.get("deepspeed.accelerator.real_accelerator")
    print(json.dumps({"installed": exc.installed, "accelerator": repr(getattr(real, "ds_accelerator", None))}))
"""


@requires_deepspeed
def test_the_start_up_hook_refuses_a_release_outside_the_range_before_setting_deepspeeds_accelerator(
    tmp_path: Path,
) -> None:
    done = warm.run_code(HOOKED_IMPORT, [], _seen_as("0.20.0", tmp_path), sys.executable, 120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.strip().splitlines()[-1]) == {"installed": "0.20.0", "accelerator": "None"}


@requires_deepspeed
def test_a_deepspeed_class_as_a_backend_is_refused_outside_the_range(ds: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from deepspeed.accelerator.cpu_accelerator import CPU_Accelerator

    from accelhal import Verdict
    from accelhal.compat.deepspeed import backend_from_deepspeed

    monkeypatch.setattr(ReleaseRange, "installed", lambda self: "0.20.0")
    with pytest.raises(UnsupportedReleaseError, match=r"deepspeed 0\.20\.0 is outside"):
        backend_from_deepspeed(CPU_Accelerator, name="refused", priority=50, probe=lambda: Verdict.available("cpu"))
