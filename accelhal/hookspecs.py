"""The pluggy hook specifications: what a plugin may implement.

A plugin is any module (or object) listed under the ``accelhal`` entry-point group of
its distribution's metadata::

    [project.entry-points.accelhal]
    mydev = "my_pkg.accelhal_plugin"

and implements one or more of the hooks below, marked with :data:`hookimpl`. The
built-in backends are registered exactly this way, by accelhal's own ``pyproject.toml``.

Hooks hand the plugin a ``register`` callback to fill (the pattern of tox and llm)
rather than asking for return values, so one plugin can register several things and
accelhal keeps the order and priority rules in its own registry, not in pluggy's call
order.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pluggy

if TYPE_CHECKING:
    from accelhal.spec import BackendSpec

PROJECT_NAME = "accelhal"
"""The pluggy project name and the entry-point group."""

hookspec = pluggy.HookspecMarker(PROJECT_NAME)
hookimpl = pluggy.HookimplMarker(PROJECT_NAME)
"""Decorator marking a plugin's hook implementations: ``@accelhal.hookimpl``."""


@hookspec
def accelhal_register_backends(register: Callable[[BackendSpec], None]) -> None:
    """Register the backends this plugin provides.

    Call ``register(spec)`` once per :class:`~accelhal.BackendSpec`. Keep this cheap:
    it runs during discovery in every process, before any backend is chosen; import
    neither torch nor a vendor runtime here (name the accelerator class lazily as
    ``"module:Class"`` and do the checking in the spec's probe).

    A spec whose name is already registered is a conflict unless it sets
    ``replaces=<that name>``; a conflict is reported and the first registration kept.

    Example::

        @hookimpl
        def accelhal_register_backends(register):
            register(BackendSpec(name="mydev", device_type="mydev", priority=250,
                                 accelerator="my_pkg.accel:MyAccelerator", probe=probe))
    """


@hookspec
def accelhal_register_op_builders(register: Callable[[str, type[Any]], None]) -> None:
    """Contribute op builders: ``register(backend_name, builder_class)``.

    ``builder_class`` is a subclass of :class:`accelhal.ops.OpBuilder`; it is found by
    ``get_accelerator().get_op_builder(builder_class.__name__)`` when ``backend_name`` is
    the active backend. Called lazily, the first time an op builder is looked up.
    """


def backends_hook(*specs: BackendSpec) -> Callable[[Callable[[BackendSpec], None]], None]:
    """A ready hook implementation that registers ``specs``, for plugins with nothing else to do.

    In the plugin module::

        accelhal_register_backends = backends_hook(SPEC)
    """

    @hookimpl
    def accelhal_register_backends(register: Callable[[BackendSpec], None]) -> None:
        for spec in specs:
            register(spec)

    return accelhal_register_backends
