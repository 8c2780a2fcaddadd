"""Declare the hooks a plugin may implement, and the markers :data:`hookimpl` and :data:`hookspec`.

A plugin is a module or object named in the ``accelhal`` entry-point group, its hooks marked
with :data:`hookimpl` (``docs/plugins.md``). This module does not import pluggy; its markers
set the same options as ``pluggy.HookimplMarker("accelhal")`` and ``pluggy.HookspecMarker("accelhal")``.
"""

from __future__ import annotations

import types
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar, overload

if TYPE_CHECKING:  # type variables of annotations only: creating them costs the first call
    from accelhal.compat.sglang.kit import SglangKit
    from accelhal.compat.vllm.kit import VllmKit
    from accelhal.contract.spec import BackendSpec

    _F = TypeVar("_F", bound=Callable[..., Any])

PROJECT_NAME = "accelhal"
"""The pluggy project name and the entry-point group."""

IMPL_ATTRIBUTE = PROJECT_NAME + "_impl"
"""The attribute :data:`hookimpl` sets on a function: pluggy's hook-implementation options."""
SPEC_ATTRIBUTE = PROJECT_NAME + "_spec"
"""The attribute :data:`hookspec` sets on a function: pluggy's hook-specification options."""


class _Marker:
    """What both markers share: the project name, and setting the options attribute."""

    __slots__ = ("project_name",)
    kind = ""

    def __init__(self, project_name: str) -> None:
        self.project_name = project_name

    def _mark(self, function: _F | None, options: dict[str, Any], check: Callable[[], None]) -> Any:
        def mark(func: _F) -> _F:
            check()
            setattr(func, f"{self.project_name}_{self.kind}", dict(options))
            return func

        return mark if function is None else mark(function)


def _nothing_to_check() -> None:
    return None


class HookimplMarker(_Marker):
    """``pluggy.HookimplMarker(project_name)``, without importing pluggy: the same arguments, the same mark."""

    __slots__ = ()
    kind = "impl"

    @overload
    def __call__(
        self,
        function: _F,
        hookwrapper: bool = ...,
        optionalhook: bool = ...,
        tryfirst: bool = ...,
        trylast: bool = ...,
        specname: str | None = ...,
        wrapper: bool = ...,
    ) -> _F: ...

    @overload
    def __call__(
        self,
        function: None = ...,
        hookwrapper: bool = ...,
        optionalhook: bool = ...,
        tryfirst: bool = ...,
        trylast: bool = ...,
        specname: str | None = ...,
        wrapper: bool = ...,
    ) -> Callable[[_F], _F]: ...

    def __call__(
        self,
        function: _F | None = None,
        hookwrapper: bool = False,
        optionalhook: bool = False,
        tryfirst: bool = False,
        trylast: bool = False,
        specname: str | None = None,
        wrapper: bool = False,
    ) -> _F | Callable[[_F], _F]:
        """Mark ``function`` as a hook implementation (or return a decorator that does); see pluggy's."""
        options = {
            "wrapper": wrapper,
            "hookwrapper": hookwrapper,
            "optionalhook": optionalhook,
            "tryfirst": tryfirst,
            "trylast": trylast,
            "specname": specname,
        }
        return self._mark(function, options, _nothing_to_check)  # type: ignore[no-any-return]


class HookspecMarker(_Marker):
    """``pluggy.HookspecMarker(project_name)``, without importing pluggy: the same arguments, the same mark."""

    __slots__ = ()
    kind = "spec"

    @overload
    def __call__(
        self,
        function: _F,
        firstresult: bool = ...,
        historic: bool = ...,
        warn_on_impl: Warning | None = ...,
        warn_on_impl_args: dict[str, Warning] | None = ...,
    ) -> _F: ...

    @overload
    def __call__(
        self,
        function: None = ...,
        firstresult: bool = ...,
        historic: bool = ...,
        warn_on_impl: Warning | None = ...,
        warn_on_impl_args: dict[str, Warning] | None = ...,
    ) -> Callable[[_F], _F]: ...

    def __call__(
        self,
        function: _F | None = None,
        firstresult: bool = False,
        historic: bool = False,
        warn_on_impl: Warning | None = None,
        warn_on_impl_args: dict[str, Warning] | None = None,
    ) -> _F | Callable[[_F], _F]:
        """Mark ``function`` as a hook specification (or return a decorator that does); see pluggy's."""

        def check() -> None:
            if historic and firstresult:
                raise ValueError("cannot have a historic firstresult hook")

        options = {
            "firstresult": firstresult,
            "historic": historic,
            "warn_on_impl": warn_on_impl,
            "warn_on_impl_args": warn_on_impl_args,
        }
        return self._mark(function, options, check)  # type: ignore[no-any-return]


hookspec = HookspecMarker(PROJECT_NAME)
"""Decorator marking the hook specifications below."""
hookimpl = HookimplMarker(PROJECT_NAME)
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


@hookspec(firstresult=True)
def accelhal_vllm_kit(backend: str) -> VllmKit | None:
    """Return what backend ``backend`` adds for vLLM beyond the contract, or ``None`` (the first answer wins).

    Return an :class:`accelhal.compat.vllm.VllmKit`: the device's attention backend, the
    modules that register its kernels, its worker and communicator, as qualified names that
    vLLM imports in its own processes. Called by the vLLM bridge (:mod:`accelhal.compat.vllm`)
    when it builds the platform of the active backend, never during discovery. A backend for
    which no plugin answers runs vLLM's portable path: vLLM's host kernels, attention and
    worker, on the device through its CPU fallback (``docs/vllm.md``).

    Example::

        @hookimpl
        def accelhal_vllm_kit(backend):
            if backend == "mydev":
                return VllmKit(attention_backend="my_pkg.vllm.attention.MyAttentionBackend",
                               kernels=("my_pkg.vllm.ops",))
            return None
    """


@hookspec(firstresult=True)
def accelhal_sglang_kit(backend: str) -> SglangKit | None:
    """What backend ``backend`` adds for SGLang beyond the contract, or ``None`` (the first answer wins).

    Return an :class:`accelhal.compat.sglang.SglangKit`: the device's attention backend, the
    modules that register its kernels, its graph runner and communicator, as names SGLang
    imports in its own processes. Called by the SGLang bridge (:mod:`accelhal.compat.sglang`)
    when it builds the platform of the active backend, never during discovery; without an
    answer SGLang runs its portable path (``docs/sglang.md``). The twin of :func:`accelhal_vllm_kit`.
    """


def backends_hook(*specs: BackendSpec) -> Callable[[Callable[[BackendSpec], None]], None]:
    """Return a hook implementation that registers ``specs``, for plugins with nothing else to do.

    In the plugin module::

        accelhal_register_backends = backends_hook(SPEC)
    """

    @hookimpl
    def accelhal_register_backends(register: Callable[[BackendSpec], None]) -> None:
        for spec in specs:
            register(spec)

    return accelhal_register_backends


class BackendsPlugin:
    """A plugin object whose ``accelhal_register_backends`` registers ``specs``: :func:`backends_hook` as an object.

    Lets one module hold several plugins, one per entry point (accelhal's built-in backends
    are declared this way in ``accelhal_backends.catalog``)::

        [project.entry-points.accelhal]
        mydev = "my_pkg.plugins:mydev"      # mydev = BackendsPlugin(SPEC) in my_pkg/plugins.py
    """

    def __init__(self, *specs: BackendSpec) -> None:
        self.specs = specs
        """The specs the hook registers, in order."""

    @hookimpl
    def accelhal_register_backends(self, register: Callable[[BackendSpec], None]) -> None:
        """Register :attr:`BackendsPlugin.specs`, in order."""
        for spec in self.specs:
            register(spec)

    def __repr__(self) -> str:
        return f"BackendsPlugin({', '.join(str(getattr(spec, 'name', None) or repr(spec)) for spec in self.specs)})"


_PLUGGY_UNWRAPS = (classmethod, staticmethod, types.MethodType)
NEEDS_PLUGGY = object()
"""What :func:`hook_options` answers for a value only pluggy's own search can judge."""
_BACKENDS_HOOK = "accelhal_register_backends"


def hook_options(plugin: object, name: str) -> dict[str, Any] | object | None:
    """Return the :data:`hookimpl` options of ``plugin.<name>``, found without pluggy's search; ``None`` for no hook.

    A module's are read from its namespace: only a plain function, a ``classmethod``, a
    ``staticmethod`` or a bound method can carry pluggy's mark there; a plain function's
    options are returned, any other value is no hook, and the other three are
    :data:`NEEDS_PLUGGY` (pluggy unwraps them its own way). Nothing is evaluated: no module
    ``__getattr__``, no property. A :class:`BackendsPlugin` (exactly that class: a subclass may
    implement more) has its one hook. Any other plugin is :data:`NEEDS_PLUGGY`.
    """
    if type(plugin) is BackendsPlugin:
        return BackendsPlugin.accelhal_register_backends.__dict__[IMPL_ATTRIBUTE] if name == _BACKENDS_HOOK else None
    if not isinstance(plugin, types.ModuleType):
        return NEEDS_PLUGGY
    value = plugin.__dict__.get(name)
    if isinstance(value, types.FunctionType):
        options = value.__dict__.get(IMPL_ATTRIBUTE)
        return options if isinstance(options, dict) else None
    if isinstance(value, _PLUGGY_UNWRAPS):
        return NEEDS_PLUGGY
    return None


def plugin_hooks(plugin: object, hook: str) -> list[Callable[..., Any]] | None:
    """Return the callables of ``plugin`` implementing ``hook``, found by :func:`hook_options`, in namespace order.

    ``None`` when a name of the plugin needs pluggy's own search: the plugin must then be
    registered with pluggy to be searched.
    """
    names = (_BACKENDS_HOOK,) if type(plugin) is BackendsPlugin else getattr(plugin, "__dict__", None)
    if names is None or not isinstance(plugin, (types.ModuleType, BackendsPlugin)):
        return None
    found: list[Callable[..., Any]] = []
    for name in list(names):
        options = hook_options(plugin, name)
        if options is NEEDS_PLUGGY:
            return None
        if isinstance(options, dict) and (options.get("specname") or name) == hook:
            found.append(getattr(plugin, name))
    return found
