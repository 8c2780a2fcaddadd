"""The adapter on accelhal's cpu against DeepSpeed's own ``CPU_Accelerator``, member by member.

One process (``deepspeed_members.py``) asks both, at the installed release, every member with the
same arguments; each
answer is described as a value (a tensor: which input it is, its shape and dtype). They must be
the same, but for what is listed here with its reason. The README's suite runs it at the newest
release, ``nox -s "adapters(end='floor')"`` at the floor.
"""

from __future__ import annotations

import json
import re
import sys
from typing import Any

import pytest

from tests import warm
from tests.compat import REPO, child_environment, requires_deepspeed

pytestmark = requires_deepspeed

SCRIPT = REPO / "tests" / "compat" / "deepspeed_members.py"

NOT_ASKED = {
    "_pin_fresh": "DeepSpeed's own helper of pin_empty and pin_memory, which call it on both sides",
    "_require_host_device": "DeepSpeed's own static helper of pin_empty",
    "_shape_numel": "DeepSpeed's own static helper of pin_empty",
    "_pin_memory": "0.19.5's device hook, asked through pin_memory",
}
"""Members of ``CPU_Accelerator`` not asked directly, and why."""

FLAGS = {"is_fp16_supported"}
"""Flags DeepSpeed's cpu answers ``None`` for "no" (0.16.8 on, where oneDNN has no float16): ``False`` is the same."""

MEMORY = {
    *("memory_allocated", "max_memory_allocated", "memory_cached", "max_memory_cached", "memory_reserved"),
    *("max_memory_reserved", "memory_stats", "total_memory", "available_memory", "get_rss", "reset_rss"),
}
"""The process's resident set or the host's memory, sampled a moment apart: the same within 2%, and DeepSpeed's
``memory_stats`` keys among accelhal's (which adds the ``reserved_bytes`` pair)."""


def _differs_on_purpose(label: str, ours: Any, theirs: Any) -> str | None:
    """Why ``ours`` may differ from DeepSpeed's ``theirs`` for ``label``; None where it must not."""
    if label.endswith("('NoSuchBuilder')") and ours == {**theirs, "dict": {**theirs["dict"], "is_compatible": False}}:
        return (
            "an op nobody builds: the adapter's UnavailableBuilder says it cannot be built, DeepSpeed's cpu says it can"
        )
    if label == "device_count" and theirs == {"raises": "FileNotFoundError"}:
        return "DeepSpeed's own fails without numactl (before 0.16.0, which counts one node then): no answer to follow"
    if label.startswith("_torch_empty_pinned") and theirs == {"raises": "RuntimeError"}:
        return "0.19.6's cpu inherits torch's pinned allocator, which fails without a device: no answer to follow"
    return None


def _close(ours: Any, theirs: Any) -> bool:
    if isinstance(theirs, dict) and "dict" in theirs:
        mine = ours.get("dict", {}) if isinstance(ours, dict) else {}
        return all(key in mine and _close(mine[key], value) for key, value in theirs["dict"].items())
    if isinstance(theirs, dict) and "number" in theirs and isinstance(ours, dict) and "number" in ours:
        return bool(
            ours["number"] == theirs["number"] and abs(ours["value"] - theirs["value"]) <= 0.02 * theirs["value"]
        )
    return bool(ours == theirs)


def _same(label: str, ours: Any, theirs: Any) -> bool:
    name = label.partition("(")[0].partition(":")[0]
    if name in FLAGS and theirs in (None, False, True):
        return ours is bool(theirs)
    if name in MEMORY:
        return _close(ours, theirs)
    return bool(ours == theirs)


@pytest.fixture(scope="module")
def answers() -> dict[str, Any]:
    done = warm.run_script(SCRIPT, [], child_environment(ACCELHAL_ACCELERATOR="cpu"), sys.executable, timeout=300)
    assert done.returncode == 0, done.stderr[-5000:]
    found: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return found


def test_every_member_answers_as_deepspeeds_own_cpu_accelerator(answers: dict[str, Any]) -> None:
    differences = {}
    for label, (ours, theirs) in answers["answers"].items():
        if theirs == {"raises": "AttributeError"} and ours != theirs:
            continue  # not in this release's CPU_Accelerator: the adapter's extra (accelhal's member)
        if not _same(label, ours, theirs) and _differs_on_purpose(label, ours, theirs) is None:
            differences[label] = {"adapter": ours, "DeepSpeed's cpu": theirs}
    assert differences == {}, f"deepspeed {answers['deepspeed']}: {json.dumps(differences, indent=1)}"


def test_every_member_of_deepspeeds_cpu_accelerator_is_asked(answers: dict[str, Any]) -> None:
    asked = {name for label in answers["answers"] for name in re.findall(r"\w+", label)}
    assert sorted(set(answers["members"]) - asked - set(NOT_ASKED)) == []


def test_the_four_answers_of_the_first_report(answers: dict[str, Any]) -> None:
    """``pin_memory(t, make_copy=False)``, ``device()``, ``get_rss()`` and ``create_op_builder``'s parameter."""
    found = answers["answers"]
    ours, theirs = found["pin_memory(t, make_copy=False)"]
    if "make_copy" not in str(found["pin_memory: parameters"][1]):
        assert theirs == {"raises": "TypeError"}  # (tensor, align_bytes=1) before 0.19.6
    else:
        assert ours["is_input"] == theirs["is_input"] == [0]  # the tensor itself, as DeepSpeed's cpu answers
    assert found["device(None)"] == found["device(0)"] == [None, None]
    assert found["get_rss"][0]["number"] == "int" and _close(*found["get_rss"])
    assert found["create_op_builder: parameters"][0] == found["create_op_builder: parameters"][1]
    assert found["create_op_builder: parameters"][0] == {"list": [{"tuple": ["op_name", None]}]}


def test_the_deepspeed_backed_backend_pins_as_deepspeeds_cpu_where_it_can_be_asked() -> None:
    """The other direction: DeepSpeed's CPU_Accelerator as an accelhal backend answers ``pin_memory`` as it does.

    From 0.19.6 DeepSpeed's ``pin_memory`` takes ``make_copy`` (the tensor itself on cpu); before, it
    takes ``align_bytes`` only, and ``make_copy=False`` is accelhal's contract: a fresh buffer.
    """
    import torch
    from deepspeed.accelerator.cpu_accelerator import CPU_Accelerator

    from accelhal import Verdict
    from accelhal.compat.deepspeed import backend_from_deepspeed
    from accelhal.compat.deepspeed._releases import installed_shape

    spec = backend_from_deepspeed(
        CPU_Accelerator, name="dscpu", device_type="cpu", priority=50, probe=lambda: Verdict.available("cpu")
    )
    acc = spec.load_class()()
    theirs = CPU_Accelerator()
    for make_copy, match_shape in ((True, True), (False, True), (False, False)):
        tensor = torch.ones(2, 3)
        made = acc.pin_memory(tensor, make_copy=make_copy, match_shape=match_shape)
        if installed_shape().pins_with_align_bytes:
            expected_shape = (2, 3) if match_shape else (6,)
            assert (made is tensor, made.shape) == (make_copy, expected_shape)
        else:
            expected = theirs.pin_memory(tensor, make_copy=make_copy, match_shape=match_shape)
            assert (made is tensor, made.shape) == (expected is tensor, expected.shape)
