"""pluggy's plugin manager for the ``accelhal`` hooks, built only when a hook goes through pluggy.

Discovery calls the registration hook of a built-in plugin directly (found by
:func:`accelhal.discovery.hooks.plugin_hooks`), so the first ``get_accelerator()`` of a process
with only the built-in backends never imports pluggy. The manager is built, and every
plugin loaded so far registered with it, when something needs pluggy: a third-party
plugin (registered at once, so that pluggy's validation of its hooks is reported during
discovery), an op-builder lookup, a test registering a plugin by hand.
"""

from __future__ import annotations

from typing import Any

import pluggy

from accelhal.discovery import hooks


class Manager(pluggy.PluginManager):
    """pluggy's manager, with a cheaper search of a plugin for hook implementations.

    pluggy looks at every name of a plugin through ``inspect.getattr_static``, about
    10 µs a name: 2 ms for the built-in plugins alone. A module's namespace and a
    :class:`~accelhal.discovery.hooks.BackendsPlugin` are judged without it
    (:func:`accelhal.discovery.hooks.hook_options`); what that cannot judge goes to pluggy's own search.
    """

    def parse_hookimpl_opts(self, plugin: Any, name: str) -> Any:
        """pluggy's options for ``plugin.<name>``, or ``None`` when it is no hook implementation."""
        options = hooks.hook_options(plugin, name)
        if options is not hooks.NEEDS_PLUGGY:
            return options
        return super().parse_hookimpl_opts(plugin, name)


def new_manager() -> Manager:
    """A manager that knows the ``accelhal`` hook specifications and has no plugin yet."""
    manager = Manager(hooks.PROJECT_NAME)
    manager.add_hookspecs(hooks)
    return manager
