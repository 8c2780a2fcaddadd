"""pluggy's plugin manager for the ``accelhal`` hooks, built only when a hook goes through pluggy.

Discovery calls the registration hook of a built-in plugin module directly (found by
:func:`accelhal.hookspecs.module_hooks`), so the first ``get_accelerator()`` of a process
with only the built-in backends never imports pluggy. The manager is built, and every
plugin loaded so far registered with it, when something needs pluggy: a third-party
plugin (registered at once, so that pluggy's validation of its hooks is reported during
discovery), an op-builder lookup, a test registering a plugin by hand.
"""

from __future__ import annotations

import types
from typing import Any

import pluggy

from accelhal import hookspecs


class Manager(pluggy.PluginManager):
    """pluggy's manager, with a cheaper search of a module plugin for hook implementations.

    pluggy looks at every name of a plugin through ``inspect.getattr_static``, about
    10 µs a name: 2 ms for the built-in plugins alone. In a module only a plain function
    can carry pluggy's marker unless it is a ``classmethod``/``staticmethod``/bound method,
    so every other value of a module's namespace is skipped without pluggy's search
    (:func:`accelhal.hookspecs.module_hook_options`); those few and every non-module plugin
    go to pluggy's own, but a :class:`~accelhal.hookspecs.BackendsPlugin`, whose one hook is
    known (eleven of them are built in).
    """

    def parse_hookimpl_opts(self, plugin: Any, name: str) -> Any:
        """pluggy's options for ``plugin.<name>``, or ``None`` when it is no hook implementation."""
        if isinstance(plugin, types.ModuleType):
            options = hookspecs.module_hook_options(plugin, name)
            if options is not hookspecs.NEEDS_PLUGGY:
                return options
        elif type(plugin) is hookspecs.BackendsPlugin:  # exactly: a subclass may implement more hooks
            return super().parse_hookimpl_opts(plugin, name) if name == "accelhal_register_backends" else None
        return super().parse_hookimpl_opts(plugin, name)


def new_manager() -> Manager:
    """A manager that knows the ``accelhal`` hook specifications and has no plugin yet."""
    manager = Manager(hookspecs.PROJECT_NAME)
    manager.add_hookspecs(hookspecs)
    return manager
