"""Add accelhal's option, fixture and markers to pytest (the ``pytest11`` entry point ``accelhal``).

``--accelhal-backend=NAME``, the ``accelerator`` fixture, and the markers
``@pytest.mark.accelerator("cuda", ...)`` and ``@pytest.mark.capability("graphs", ...)``, which
skip with the reason (``docs/plugins.md``). Imports neither torch nor the selection: only a test
that asks for the accelerator resolves it. PYTEST_DONT_REWRITE: no assertions here, so
``-p accelhal.testing.plugin`` finds it imported without a warning.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from accelhal.contract.accelerator import Accelerator
    from accelhal.contract.spec import Capability

OPTION = "--accelhal-backend"
_CACHE = pytest.StashKey[dict[object, "Accelerator"]]()


def pytest_addoption(parser: pytest.Parser) -> None:
    """Add ``--accelhal-backend``."""
    group = parser.getgroup("accelhal", "accelhal accelerators")
    group.addoption(
        OPTION,
        dest="accelhal_backend",
        default=None,
        metavar="NAME",
        help="run accelerator tests and the conformance suite on backend NAME (default: the selected one)",
    )


def pytest_configure(config: pytest.Config) -> None:
    """Register the markers (so that ``--strict-markers`` accepts them)."""
    config.addinivalue_line(
        "markers", "accelerator(*names): skip unless the test's accelerator is one of the named backends"
    )
    config.addinivalue_line(
        "markers", "capability(*names): skip unless the test's accelerator declares every named accelhal.Capability"
    )
    config.stash[_CACHE] = {}


def requested_backend(item: pytest.Item | pytest.FixtureRequest, config: pytest.Config) -> str | None:
    """Return the backend a test asks for: its class's ``backend`` attribute, else ``--accelhal-backend``, else None."""
    cls = getattr(item, "cls", None)
    pinned = getattr(cls, "backend", None) if cls is not None else None
    if isinstance(pinned, str) and pinned:
        return pinned
    option = config.getoption("accelhal_backend")
    return option if isinstance(option, str) and option else None


def resolve(config: pytest.Config, name: str | None) -> Accelerator:
    """Return the accelerator of backend ``name`` (``None``: the selected one), built once per session.

    Resolving leaves the process's active accelerator as it was.
    """
    cache = config.stash.setdefault(_CACHE, {})
    if name not in cache:
        if name is None:
            from accelhal import selection

            saved = selection.snapshot()
            try:
                cache[name] = selection.get_accelerator()
            finally:
                selection.restore(saved)
        else:
            from accelhal.testing.switching import use_accelerator

            with use_accelerator(name) as accelerator:
                cache[name] = accelerator
    return cache[name]


def _capability(value: object) -> Capability:
    from accelhal.contract.spec import Capability

    try:
        return Capability(value)
    except ValueError:
        known = ", ".join(repr(c.value) for c in Capability)
        raise pytest.UsageError(f"@pytest.mark.capability({value!r}): unknown capability; known: {known}") from None


def missing_capabilities(accelerator: Accelerator, wanted: tuple[object, ...]) -> list[Capability]:
    """Return the capabilities of ``wanted`` that ``accelerator`` does not declare."""
    declared = frozenset(getattr(accelerator, "capabilities", frozenset()))
    return [c for c in map(_capability, wanted) if c not in declared]


def capability_skip_reason(accelerator: Accelerator, missing: list[Capability]) -> str:
    """Return the skip reason for capabilities a backend declares absent."""
    names = ", ".join(repr(c.value) for c in missing)
    return (
        f"the {accelerator.name!r} backend does not declare capability {names} "
        f"(not in {type(accelerator).__qualname__}.capabilities)"
    )


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """Skip tests whose ``accelerator``/``capability`` markers the test's accelerator does not meet."""
    backends = [str(name) for mark in item.iter_markers("accelerator") for name in mark.args]
    wanted = tuple(value for mark in item.iter_markers("capability") for value in mark.args)
    if not backends and not wanted:
        return
    accelerator = resolve(item.config, requested_backend(item, item.config))
    if backends and accelerator.name not in backends:
        pytest.skip(f"needs backend {' or '.join(backends)}; this run uses {accelerator.name!r}")
    missing = missing_capabilities(accelerator, wanted)
    if missing:
        pytest.skip(capability_skip_reason(accelerator, missing))


@pytest.fixture
def accelerator(request: pytest.FixtureRequest) -> Iterator[Accelerator]:
    """Yield the accelerator under test, made the process's active one for the test and restored after it.

    Its backend is ``--accelhal-backend``'s, else the one a plain ``accelhal.get_accelerator()``
    picks; a test class may pin its own with a ``backend = "name"`` class attribute::

        @pytest.mark.capability("event-timing")
        def test_timing(accelerator):
            start = accelerator.Event(enable_timing=True)
    """
    from accelhal.testing.switching import use_accelerator

    target = resolve(request.config, requested_backend(request, request.config))
    with use_accelerator(target) as active:
        yield active
