"""Build pluggy's plugin manager for the ``accelhal`` hooks, when a hook goes through pluggy.

Discovery calls a built-in plugin's registration hook directly; :func:`new_manager` is called
(and pluggy imported) for a third-party plugin, an op-builder lookup or a test's plugin.
"""

from __future__ import annotations

from typing import Any

import pluggy

from accelhal.discovery import hooks


class Manager(pluggy.PluginManager):
    """pluggy's manager, with a cheaper search of a plugin for hook implementations.

    A module's namespace and a :class:`~accelhal.discovery.hooks.BackendsPlugin` are searched
    by :func:`accelhal.discovery.hooks.hook_options`; any other plugin by pluggy's own search.
    """

    def parse_hookimpl_opts(self, plugin: Any, name: str) -> Any:
        """Return pluggy's options for ``plugin.<name>``, or ``None`` when it is no hook implementation."""
        options = hooks.hook_options(plugin, name)
        if options is not hooks.NEEDS_PLUGGY:
            return options
        return super().parse_hookimpl_opts(plugin, name)


def new_manager() -> Manager:
    """Return a manager that knows the ``accelhal`` hook specifications and has no plugin yet."""
    manager = Manager(hooks.PROJECT_NAME)
    manager.add_hookspecs(hooks)
    return manager
