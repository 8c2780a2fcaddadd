"""What accelhal's inference-engine bridges share: when a bridge is the engine's platform, and what it says.

An :class:`Engine` holds what differs between the engines (:mod:`accelhal.compat.vllm`,
:mod:`accelhal.compat.sglang`); :func:`decide` and :func:`plugin_answer` apply the rules, in the
order ``docs/contributing.md`` gives ("The engine bridges"). The probe creates no device context:
accelhal's probes never do, and the accelerator is only constructed.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, fields
from typing import Literal, TypeVar

MODES = ("auto", "on", "off")

Rule = Literal[
    "disabled", "vendor-plugin", "served-by-vllm", "served-by-sglang", "host", "selection-failed", "forced", "device"
]


@dataclass(frozen=True)
class PlatformDecision:
    """What a bridge's probe decided, and why."""

    active: bool
    """Whether the bridge answers (the engine then runs on the bridge's platform)."""
    rule: Rule
    reason: str
    backend: str | None = None
    """accelhal's active backend, where selection succeeded."""
    device_type: str | None = None


@dataclass(frozen=True)
class Engine:
    """What one engine's bridge needs to decide: its names, the devices the engine serves itself, its plugins."""

    name: str
    """The engine's name in messages (``"vLLM"``)."""
    variable: str
    """The bridge's variable (``"ACCELHAL_VLLM_PLATFORM"``)."""
    qualname: str
    """What the bridge's probe answers: its platform class's qualified name."""
    served: Mapping[str, str]
    """Device types the engine's own platforms serve (the bridge never takes them over), and which platform."""
    served_rule: Rule
    host_platform: str
    """The engine's platform for the host (``"vLLM's CpuPlatform"``)."""
    plugins_variable: str
    """The engine's variable that leaves platform plugins out (``"VLLM_PLUGINS"``)."""
    other_plugins: Callable[[], Mapping[str, Callable[[], object]]]
    """The engine's loaded platform plugins, by name, as the engine itself loads them."""
    host_served: Callable[[Mapping[str, str]], bool] = lambda environ: True
    """Whether the engine's own host platform serves cpu in a process of this environment."""
    entry_point: str = "accelhal"
    """The bridge's name in the engine's entry-point group."""

    @property
    def logger(self) -> logging.Logger:
        """The bridge's logger (``accelhal.compat.vllm``)."""
        return logging.getLogger(f"accelhal.compat.{self.name.lower()}")


def mode(engine: Engine, environ: Mapping[str, str] | None = None) -> str:
    """``engine``'s variable: ``auto`` when unset, blank or ``auto``; else ``on`` or ``off``.

    ``on`` and ``off`` take accelhal's boolean spellings too (``1``/``0``, ``true``/``false``, ...:
    :func:`accelhal.process.settings.parse_bool`). Raises :class:`~accelhal.ConfigurationError` for anything else.
    """
    from accelhal.errors import ConfigurationError
    from accelhal.process.settings import BOOLEAN_SPELLINGS, parse_bool
    from accelhal.text import quote

    given = (os.environ if environ is None else environ).get(engine.variable, "")
    raw = given.strip().lower()
    if raw in ("", "auto"):
        return "auto"
    try:
        return "on" if parse_bool(engine.variable, raw) else "off"
    except ConfigurationError:
        message = f"{engine.variable}={quote(given)} is not one of {', '.join(MODES)} (on and off: {BOOLEAN_SPELLINGS})"
        raise ConfigurationError(message, variable=engine.variable, value=given) from None


def decide_for(
    engine: Engine,
    device_type: str | None,
    backend: str | None,
    forced: bool,
    vendor_plugins: list[str],
    selection_error: str | None = None,
    host_served: bool = True,
) -> PlatformDecision:
    """The decision for accelhal's active backend ``backend`` of ``device_type``, given the other answering plugins.

    Pure: the rules in order, from the facts :func:`decide` gathers. ``vendor_plugins`` are the
    engine's other out-of-tree platform plugins that answer here; ``host_served``, whether the
    engine's own host platform serves cpu here.
    """
    if device_type is None:
        reason = f"accelhal selected no backend: {selection_error}"
        suffix = f"; forced, so {engine.name} reports it" if forced else ""
        return PlatformDecision(forced, "selection-failed", reason + suffix)
    facts = {"backend": backend, "device_type": device_type}
    if device_type in engine.served:
        reason = f"{device_type!r} devices are served by {engine.served[device_type]}"
        return PlatformDecision(False, engine.served_rule, reason, **facts)
    if vendor_plugins and not forced:
        names = ", ".join(vendor_plugins)
        reason = f"another {engine.name} platform plugin answers here ({names})"
        return PlatformDecision(False, "vendor-plugin", reason, **facts)
    if device_type == "cpu" and host_served and not forced:
        reason = f"{engine.host_platform} serves cpu (set {engine.variable}=on to use the bridge)"
        return PlatformDecision(False, "host", reason, **facts)
    if forced:
        reason = f"{engine.variable}=on: the bridge serves {backend!r}"
        if vendor_plugins:
            reason += (
                f", though {', '.join(vendor_plugins)} answer(s) too: {engine.name} refuses two platform plugins; "
                f"leave them out with {engine.plugins_variable} or unset {engine.variable}"
            )
        return PlatformDecision(True, "forced", reason, **facts)
    reason = f"{engine.name} has no platform of its own for {device_type!r} devices"
    if device_type == "cpu":
        reason += f" in this process ({engine.host_platform} is not asked for)"
    return PlatformDecision(True, "device", reason, **facts)


def answering_plugins(engine: Engine, plugins: Mapping[str, Callable[[], object]]) -> list[str]:
    """The names of the plugins among ``plugins`` (the engine's loaded platform plugins) but the bridge that answer."""
    answering = []
    for name, probe in plugins.items():
        if name == engine.entry_point:
            continue
        try:
            if probe() is not None:
                answering.append(name)
        except Exception:  # the engines skip a plugin that raises: so does the bridge
            engine.logger.debug("%s platform plugin %s raised while probed", engine.name, name, exc_info=True)
    return answering


def decide(engine: Engine, environ: Mapping[str, str] | None = None) -> PlatformDecision:
    """Decide for this process: the variable, accelhal's selection, and the engine's other platform plugins."""
    environ = os.environ if environ is None else environ
    current = mode(engine, environ)
    if current == "off":
        return PlatformDecision(False, "disabled", f"{engine.variable}=off")
    import accelhal

    try:
        with _fallback_unsaid():
            accelerator = accelhal.get_accelerator()
    except Exception as exc:  # an AccelhalError, or a plugin's fault: reported, not raised into the engine's loop
        return decide_for(engine, None, None, current == "on", [], f"{type(exc).__name__}: {exc}")
    vendors: list[str] = []
    if accelerator.device_type not in engine.served:
        vendors = answering_plugins(engine, engine.other_plugins())
    host = accelerator.device_type == "cpu" and engine.host_served(environ)
    return decide_for(engine, accelerator.device_type, accelerator.name, current == "on", vendors, host_served=host)


@contextlib.contextmanager
def _fallback_unsaid() -> Iterator[None]:
    """Hold back the cpu fallback's warning while the bridge selects.

    Every process of an engine (its API server, engine core, workers) asks the bridge; the
    fallback is no news there: the engine runs on its own platform, or the bridge says where it
    serves. A program that selects later gets the cached accelerator, as it would anyway.
    """
    from accelhal.selection.cascade import FALLBACK_RECORD

    def keep(record: logging.LogRecord) -> bool:
        return not getattr(record, FALLBACK_RECORD, False)

    selection_logger = logging.getLogger("accelhal")
    selection_logger.addFilter(keep)
    try:
        yield
    finally:
        selection_logger.removeFilter(keep)


def plugin_answer(engine: Engine) -> str | None:
    """The engine's platform-plugin function: ``engine.qualname`` when the bridge serves this process, else ``None``.

    Cheap and free of device contexts (see :func:`decide`). A decision that is not the default one
    is logged, at INFO when the bridge answers and at WARNING when it was forced and still stays
    out. A wrong variable is not swallowed by the engine's loop: the plugin answers, and building
    the platform raises the :class:`~accelhal.ConfigurationError`.
    """
    from accelhal.errors import ConfigurationError

    logger = engine.logger
    try:
        decision = decide(engine)
    except ConfigurationError as exc:  # the engine would swallow it: answer, so that building the platform raises it
        logger.error("accelhal's %s platform: %s", engine.name, exc)
        return engine.qualname
    if decision.active:
        logger.info("accelhal's %s platform serves %r: %s", engine.name, decision.backend, decision.reason)
        return engine.qualname
    if decision.rule == "selection-failed":  # a forced backend that cannot be used: the engine runs elsewhere
        logger.warning("accelhal's %s platform stays out: %s", engine.name, decision.reason)
    elif decision.rule == engine.served_rule and mode(engine) == "on":
        logger.warning(
            "accelhal's %s platform stays out although %s=on: %s", engine.name, engine.variable, decision.reason
        )
    else:
        logger.debug("accelhal's %s platform stays out: %s", engine.name, decision.reason)
    return None


@dataclass(frozen=True)
class PlatformChoice:
    """An engine's choice of platform in this environment, and the bridge's reason to answer or stay out."""

    platform: str
    """The qualified name the engine's own resolution gives, or why it failed."""
    bridge: str
    """The bridge's decision, one sentence."""


def platform_choice(engine: Engine, resolve: Callable[[], str]) -> PlatformChoice:
    """What ``engine`` would run on here (``resolve``: its own resolution, a qualified name), and the bridge's word."""
    try:
        platform = resolve()
    except Exception as exc:  # the engine refuses (two plugins answer) or fails to import: say so
        platform = f"none: {engine.name} fails to choose ({type(exc).__name__}: {exc})"
    try:
        decision = decide(engine)
        bridge = ("answers: " if decision.active else "stays out: ") + decision.reason
    except Exception as exc:  # a wrong variable
        bridge = f"{type(exc).__name__}: {exc}"
    return PlatformChoice(platform, bridge)


Kit = TypeVar("Kit")


def check_kit(kit: object, modules: str = "kernels") -> None:
    """Check a kit dataclass's fields: each a qualified name (``str``), ``modules`` a tuple of module names.

    A kit is written by hand, and the engine would fail far from the mistake. Raises :class:`TypeError`
    naming the field; turns a list given for ``modules`` into a tuple.
    """
    kind = type(kit).__name__
    for name in (field.name for field in fields(kit)):  # type: ignore[arg-type]
        value = getattr(kit, name)
        if name == modules:
            if isinstance(value, str) or not all(isinstance(m, str) and m for m in value):
                raise TypeError(f"{kind}.{name} must be a tuple of module names, got {value!r}")
            object.__setattr__(kit, name, tuple(value))
        elif not isinstance(value, str):
            raise TypeError(f"{kind}.{name} must be a qualified name (str), got {value!r}")


def kit_for(hook: str, backend: str, kind: type[Kit], portable: Kit) -> Kit:
    """The kit a plugin's ``hook`` returns for ``backend``; ``portable`` if none does."""
    from accelhal.selection import registry

    loaded = registry()
    loaded.load_deferred()
    found = getattr(loaded.manager.hook, hook)(backend=backend)
    if found is None:
        return portable
    if not isinstance(found, kind):
        raise TypeError(f"{hook}({backend!r}) returned {found!r}; expected a {kind.__name__} or None")
    return found
