"""accelhal's hook markers mark functions exactly as pluggy's own markers do (checked against pluggy)."""

from __future__ import annotations

import itertools
from typing import Any

import pluggy
import pytest

from accelhal.discovery import hooks

IMPL_OPTIONS: list[dict[str, Any]] = [
    {},
    *({name: True} for name in ("hookwrapper", "optionalhook", "tryfirst", "trylast", "wrapper")),
    {"specname": "accelhal_register_backends", "tryfirst": True},
]
SPEC_OPTIONS: list[dict[str, Any]] = [
    {},
    {"firstresult": True},
    {"historic": True},
    {"warn_on_impl": DeprecationWarning("old")},
]


def _marked(marker: Any, options: dict[str, Any], attribute: str, called: bool) -> Any:
    def function(register: Any) -> None:
        """A hook."""

    marked = marker(**options)(function) if called or options else marker(function)
    assert marked is function
    return getattr(function, attribute)


@pytest.mark.parametrize(("options", "called"), list(itertools.product(IMPL_OPTIONS, (False, True))))
def test_hookimpl_marks_as_pluggy_does(options: dict[str, Any], called: bool) -> None:
    ours = _marked(hooks.hookimpl, options, "accelhal_impl", called)
    theirs = _marked(pluggy.HookimplMarker("accelhal"), options, "accelhal_impl", called)
    assert ours == theirs


@pytest.mark.parametrize(("options", "called"), list(itertools.product(SPEC_OPTIONS, (False, True))))
def test_hookspec_marks_as_pluggy_does(options: dict[str, Any], called: bool) -> None:
    ours = _marked(hooks.hookspec, options, "accelhal_spec", called)
    theirs = _marked(pluggy.HookspecMarker("accelhal"), options, "accelhal_spec", called)
    assert ours == theirs


def test_historic_firstresult_is_refused_as_pluggy_refuses_it() -> None:
    def spec() -> None:
        """A hook."""

    with pytest.raises(ValueError, match="historic firstresult") as ours:
        hooks.hookspec(historic=True, firstresult=True)(spec)
    with pytest.raises(ValueError) as theirs:
        pluggy.HookspecMarker("accelhal")(historic=True, firstresult=True)(spec)
    assert str(ours.value) == str(theirs.value)


def test_pluggy_reads_the_specifications_and_implementations() -> None:
    manager = pluggy.PluginManager(hooks.PROJECT_NAME)
    manager.add_hookspecs(hooks)

    class Plugin:
        @hooks.hookimpl
        def accelhal_register_backends(self, register: Any) -> None:
            register("seen")

    manager.register(Plugin())
    seen: list[str] = []
    manager.hook.accelhal_register_backends(register=seen.append)
    assert seen == ["seen"]
    assert manager.hook.accelhal_register_op_builders.spec is not None
