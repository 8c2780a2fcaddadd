"""Every call DeepSpeed makes into its accelerator works through the adapter as through DeepSpeed's own.

The installed DeepSpeed is re-scanned (``deepspeed_call_sites.scan``): each call site's
arguments are rebuilt from their audited kinds (``"0"`` for a ``LOCAL_RANK`` read from the
environment, the device's ``torch.device`` for ``tensor.device``, literals as written) and
passed to the adapter and to DeepSpeed's own accelerator for the device. Where DeepSpeed's
accelerator accepts the call, the adapter must too, and its answer must serve each use
DeepSpeed makes of it (``with``, ``.synchronize()``, ``torch.device(...)``, arithmetic,
comparison with a tuple, ...) wherever DeepSpeed's own answer does.
"""

from __future__ import annotations

import ast
import json
import operator
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from accelhal.compat.deepspeed import as_deepspeed_accelerator
from tests.compat import REPO, requires_deepspeed
from tests.compat import deepspeed_call_sites as audit

pytestmark = requires_deepspeed


@pytest.fixture(scope="module")
def sites(ds: Any) -> list[audit.CallSite]:
    return audit.scan()


def test_the_audit_is_the_installed_deepspeeds(ds: Any, sites: list[audit.CallSite]) -> None:
    """The data file is the scan of the DeepSpeed it was written for (regenerate it with ``--write``)."""
    recorded = json.loads(audit.DATA.read_text(encoding="utf-8"))
    if recorded["deepspeed"] != ds.__version__:
        pytest.skip(f"the audit is of DeepSpeed {recorded['deepspeed']}, {ds.__version__} is installed")
    scanned = [site.as_json() for site in sites]
    new = [s for s in scanned if s not in recorded["call_sites"]]
    gone = [s for s in recorded["call_sites"] if s not in scanned]
    assert (new, gone) == ([], []), "run: python -m tests.compat.deepspeed_call_sites --write"
    assert recorded["summary"] == audit.summary(sites)


def test_the_migration_guide_shows_the_audit() -> None:
    recorded = json.loads(audit.DATA.read_text(encoding="utf-8"))
    guide = (REPO / "docs" / "migrating-from-deepspeed.md").read_text(encoding="utf-8")
    assert audit.markdown(recorded["summary"]) in guide, "paste: python -m tests.compat.deepspeed_call_sites --markdown"
    info = recorded["summary"]
    assert f"{info['call_sites']} uses in {info['files']} files, of {info['members']} members" in guide


def test_every_argument_deepspeed_passes_is_audited(sites: list[audit.CallSite]) -> None:
    unresolved = [
        f"{s.file}:{s.line} {s.member}({a.param}={a.expr})" for s in sites for a in s.args if a.kind == "unresolved"
    ]
    assert unresolved == [], "classify these in tests/compat/deepspeed_call_sites.py (AUDITED or PARAM_KINDS)"
    assert len(sites) > 500  # 515 in DeepSpeed 0.15.0, 1,000-odd in 0.19.8
    kinds = {a.kind for s in sites for a in s.args}
    assert {"int", audit.ENV, "torch.device", "None"} - kinds == {"None"}  # no call site passes None explicitly


# ------------------------------------------------------------------ rebuilding the arguments
def _sample(acc: Any, member: str, arg: audit.Argument) -> Any:
    """A value of the argument's kind, from ``acc`` where it must be the accelerator's own (streams, graphs)."""
    import torch

    try:
        return ast.literal_eval(arg.expr)
    except (ValueError, SyntaxError):
        pass
    device = acc.current_device_name()
    samples: dict[str, Callable[[], Any]] = {
        "int": lambda: 0,
        audit.ENV: lambda: "0",
        "str": lambda: {"class_name": "CPUAdamBuilder"}.get(arg.param, "DeepSpeed"),
        "torch.device": lambda: torch.device(device),
        "tensor": lambda: (
            acc.get_rng_state()
            if member == "set_rng_state"
            else torch.ones(4, device=device if member == "on_accelerator" else "cpu")
        ),
        "stream or None": acc.current_stream,
        "graph": acc.create_graph,
        "graph pool": lambda: None,
        "callable": lambda: lambda: None,
        "mapping": dict,
        "list": lambda: [0.0] if arg.param == "#0" else [0, 1],
        "dtype": lambda: torch.float32,
        "bool": lambda: True,
    }
    return samples[arg.kind]()


def _call(acc: Any, site: audit.CallSite) -> Any:
    target = getattr(acc, site.member)
    if site.access != "call":
        return target
    args, kwargs = [], {}
    for arg in site.args:
        value = _sample(acc, site.member, arg)
        if arg.param.startswith("#") or arg.param in ("*", "size"):  # size: pin_empty(*size, ...)
            args.append(value)
        else:
            kwargs[arg.param] = value
    return target(*args, **kwargs)


# ------------------------------------------------------------------ what DeepSpeed does with the answer
def _serves(use: str, value: Any) -> bool:
    """Whether ``value`` can be used as DeepSpeed uses it at the call site (``use`` from the scan)."""
    import torch

    checks: dict[str, Callable[[], object]] = {
        "with": lambda: hasattr(type(value), "__enter__") and hasattr(type(value), "__exit__"),
        "called": lambda: callable(value),
        "subscript": lambda: hasattr(value, "__getitem__"),
        "iterated": lambda: iter(value),
        "arithmetic": lambda: operator.add(value, 0),
        "truth value": lambda: bool(value) in (True, False),
        "membership container": lambda: torch.float32 in value or True,
        "compared with str": lambda: isinstance(value, str),
        "compared with tuple": lambda: isinstance(value, tuple),
        "compared with int": lambda: isinstance(value, int),
        "argument of torch.device()": lambda: torch.device(value),
        "argument of int()": lambda: int(value),
        "argument of .to()": lambda: torch.zeros(1).to(value),
        "argument device_type= of torch.autocast()": lambda: isinstance(value, str),
        "argument map_location= of torch.load()": lambda: isinstance(value, (str, torch.device)),
        "argument backend= of torch.compile()": lambda: isinstance(value, str) or callable(value),
        "formatted": lambda: format(value),
    }
    if use.startswith("."):
        return hasattr(value, use[1:])
    if use.startswith("argument device= of torch."):
        use = "argument of .to()"
    check = checks.get(use)
    if check is None:
        return True  # assigned, returned, discarded, passed to DeepSpeed's own functions: nothing to check here
    try:
        return check() is not False
    except Exception:
        return False


def _distinct(sites: list[audit.CallSite]) -> Iterator[audit.CallSite]:
    seen: set[tuple[object, ...]] = set()
    for site in sites:
        key = (site.member, site.access, tuple((a.param, a.kind, a.expr) for a in site.args), site.use)
        if site.access not in ("hasattr", "write") and key not in seen:
            seen.add(key)
            yield site


@pytest.fixture(scope="module")
def cpu_pair(ds: Any) -> tuple[Any, Any]:
    from deepspeed.accelerator.cpu_accelerator import CPU_Accelerator

    from accelhal_backends.cpu.accelerator import CpuAccelerator

    return CPU_Accelerator(), as_deepspeed_accelerator(CpuAccelerator())


def _check_every_site(sites: list[audit.CallSite], theirs: Any, ours: Any, skip: frozenset[str] = frozenset()) -> int:
    failures, checked = [], 0
    for site in _distinct(sites):
        if site.member in skip:
            continue
        where = f"{site.file}:{site.line} {site.member}({', '.join(a.expr for a in site.args)}) [{site.use}]"
        try:
            expected = _call(theirs, site)
        except Exception:
            continue  # DeepSpeed's own accelerator does not support this call on this device either
        checked += 1
        try:
            answer = _call(ours, site)
        except Exception as exc:
            failures.append(f"{where}: DeepSpeed's answers {expected!r}, the adapter raises {exc!r}")
            continue
        if _serves(site.use, expected) and not _serves(site.use, answer):
            failures.append(f"{where}: the adapter's {answer!r} does not serve; DeepSpeed's {expected!r} does")
    assert failures == []
    return checked


def test_every_call_site_works_on_cpu_as_with_deepspeeds_cpu_accelerator(
    sites: list[audit.CallSite], cpu_pair: tuple[Any, Any]
) -> None:
    theirs, ours = cpu_pair
    assert _check_every_site(sites, theirs, ours) > 150


def test_what_deepspeed_assigns_to_its_accelerator_sticks(sites: list[audit.CallSite], ds: Any) -> None:
    """ZeRO's offload worker replaces members on the accelerator object (``accelerator.is_available = ...``)."""
    adapter = as_deepspeed_accelerator()
    writes = [s for s in sites if s.access == "write"]
    if json.loads(audit.DATA.read_text(encoding="utf-8"))["deepspeed"] == ds.__version__:  # older ones write none
        assert {s.member for s in writes} >= {"is_available", "device_count", "current_device"}
    for site in writes:
        value = (lambda: -1) if site.use == "set to callable" else True
        setattr(adapter, site.member, value)
        assert getattr(adapter, site.member) is value


@pytest.mark.cuda
def test_every_call_site_works_on_cuda_as_with_deepspeeds_cuda_accelerator(
    sites: list[audit.CallSite], ds: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import torch

    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    from deepspeed.accelerator.cuda_accelerator import CUDA_Accelerator

    import accelhal

    monkeypatch.setenv("ACCELHAL_ACCELERATOR", "cuda")
    accelhal.reset_accelerator()
    # Raw host addresses are left out: a made-up one fails on both, and leaves a CUDA error behind
    # that the next kernel launch of this process would report.
    skip = frozenset({"register_host_memory", "unregister_host_memory"})
    assert _check_every_site(sites, CUDA_Accelerator(), as_deepspeed_accelerator(), skip) > 150


@pytest.mark.parametrize("member", ["device_name", "device", "set_device", "current_stream", "synchronize"])
def test_device_indices_as_deepspeed_passes_them(ds: Any, member: str) -> None:
    """``LOCAL_RANK`` unconverted, an indexed ``torch.device`` and the cpu's unindexed one, as ``zero.Init`` passes."""
    import torch

    adapter = as_deepspeed_accelerator()
    for index in (0, "0", torch.device("cpu"), torch.device("cpu", 0)):
        getattr(adapter, member)(index)
        getattr(adapter, member)(device_index=index)
    assert adapter.current_device() == 0


@pytest.mark.parametrize("member", ["device_name", "device", "set_device"])
def test_a_device_of_another_type_is_refused_by_name(ds: Any, member: str) -> None:
    import torch

    with pytest.raises(TypeError, match=r"device_index must be .*got device\(type='meta'\)"):
        getattr(as_deepspeed_accelerator(), member)(torch.device("meta"))
