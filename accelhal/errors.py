"""The exception hierarchy.

Every error accelhal raises on purpose derives from :class:`AccelhalError` and from the built-in exception a
caller would naturally catch (``ValueError`` for bad configuration, ``NotImplementedError`` for a missing
feature, ``RuntimeError`` for an unavailable device), so code written against DeepSpeed's exceptions keeps
working. Each class's bases, and how to catch them: ``docs/reference/api.md``, "Catching errors". One warning
category too, :class:`IdentityDeclarationWarning`. Imports no torch.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from accelhal.discovery.records import FailureStage

from accelhal.text import hint_sentence, quote, sentence

PLUGIN_STAGES: dict[str, str] = {
    "import": "cannot be imported",
    "register": "failed in its registration hook",
    "validate": "registered a backend that accelhal rejects",
    "conflict": "registers a backend name that is already taken",
    "probe": "failed while probing",
    "instantiate": "failed to construct its accelerator",
    "op-builders": "failed to register its op builders",
}
"""Each stage at which a plugin can fail, as a predicate of ``plugin 'NAME'``."""


def plugin_failure(plugin: str, stage: str) -> str:
    """What happened, in words: ``plugin 'acme' cannot be imported``."""
    return f"plugin {plugin!r} {PLUGIN_STAGES.get(stage, f'failed at stage {stage!r}')}"


def _requested_by(who: str) -> str:
    """How an error names who asked for a backend: ``requested by ACCELHAL_ACCELERATOR`` (one wording for all)."""
    return f"requested by {who}"


class AccelhalError(Exception):
    """Base class of every error raised by accelhal on purpose."""


class ConfigurationError(AccelhalError, ValueError):
    """An ``ACCELHAL_*`` (or ``DS_ACCELERATOR``/launcher) setting has an invalid value.

    ``variable`` names the setting, ``value`` is what was found, and the message says
    what would be accepted instead.
    """

    def __init__(self, message: str, *, variable: str | None = None, value: object = None) -> None:
        super().__init__(message)
        self.variable = variable
        self.value = value


class UnknownBackendError(ConfigurationError):
    """A backend name that no installed plugin registers.

    ``known`` lists the names that would work, in the order given (selection gives the
    registered names in priority order, then ``generic``), so the message can say what would work.
    """

    def __init__(self, name: str, known: Sequence[str], *, variable: str | None = None, hint: str = "") -> None:
        known_list = ", ".join(known) or "(none)"
        message = f"unknown accelerator {name!r}"
        if variable:
            message += f" ({_requested_by(variable)})"
        message += f"; known accelerators: {known_list}"
        if hint:
            message += f". {sentence(hint, capital=True)}"
        super().__init__(message, variable=variable, value=name)
        self.name = name
        self.known = tuple(known)


class BackendUnavailableError(AccelhalError, RuntimeError):
    """A backend that was asked for by name is registered but cannot be used here.

    The message carries the probe's reason and hint; selection never falls back to
    another backend when this is raised.
    """

    def __init__(self, name: str, reason: str, *, hint: str | None = None, requested_by: str = "") -> None:
        message = f"accelerator {name!r}"
        if requested_by:
            message += f" ({_requested_by(requested_by)})"
        message += f" is not available: {sentence(reason)}"
        if hint:
            message += f" {hint_sentence(hint)}"
        super().__init__(message)
        self.name = name
        self.reason = reason
        self.hint = hint


class PluginError(AccelhalError):
    """A plugin failed to load, register or validate while ``ACCELHAL_STRICT`` is on.

    Outside strict mode the same failures are recorded in the detection report and the
    plugin is skipped.
    """

    def __init__(self, plugin: str, stage: FailureStage, detail: str, *, hint: str | None = None) -> None:
        super().__init__(f"{plugin_failure(plugin, stage)}: {detail}" + (f". {hint_sentence(hint)}" if hint else ""))
        self.plugin = plugin
        self.stage = stage
        self.detail = detail
        self.hint = hint


class MetadataError(AccelhalError, RuntimeError):
    """An installed distribution's metadata file is not UTF-8, and a library that reads every one (pydantic) raised.

    ``file`` is that file's path, ``None`` where the error did not say; the message names its
    distribution and what to do.
    """

    def __init__(self, message: str, *, file: str | None = None) -> None:
        super().__init__(message)
        self.file = file


class ContractError(AccelhalError, TypeError):
    """An object or class does not honour the :class:`accelhal.Accelerator` contract."""


class UnsupportedReleaseError(AccelhalError, RuntimeError):
    """An installed framework release outside the range an adapter supports.

    Raised by an adapter's ``install()``/``register()`` before anything is patched.
    ``framework``, ``installed`` and ``supported`` (``">=0.15.0,<0.20"``) name what was found
    and what would be right.
    """

    def __init__(self, framework: str, installed: str, supported: str, *, detail: str = "") -> None:
        message = f"{framework} {installed} is outside the releases accelhal supports ({framework}{supported})"
        if detail:
            message += f": {detail}"
        super().__init__(message)
        self.framework = framework
        self.installed = installed
        self.supported = supported


class UnsupportedFeatureError(AccelhalError, NotImplementedError):
    """The active backend has no such feature (for example user streams on MPS).

    ``backend`` and ``feature`` name what was asked for.
    """

    def __init__(self, backend: str, feature: str, detail: str = "") -> None:
        message = f"the {backend!r} accelerator does not support {feature}"
        if detail:
            message += f": {detail}"
        super().__init__(message)
        self.backend = backend
        self.feature = feature


class DistributedSetupError(ConfigurationError):
    """The launcher's environment or the arguments for a process group do not add up.

    Raised by :mod:`accelhal.distributed` before anything is set up: a rendezvous
    variable missing, a rank beyond the world, a local rank beyond the visible devices,
    a communication backend torch was not built with. ``variable`` names the variable or
    argument at fault; the message says what would be right.
    """


class RankLostError(AccelhalError, RuntimeError):
    """A rank of the job's process group is gone (killed, crashed, its node down): the job cannot go on.

    ``ranks`` are the lost ranks (empty when all that is known is that the node hosting the
    rendezvous store is gone); ``rank`` and ``world_size`` are this process's; ``reason`` says how
    the loss was seen. Raised by :func:`accelhal.distributed.check_lost_ranks` and
    :func:`accelhal.distributed.lost_rank_guard`.
    """

    def __init__(self, ranks: Sequence[int], *, rank: int, world_size: int, reason: str) -> None:
        self.ranks = tuple(ranks)
        self.rank = rank
        self.world_size = world_size
        self.reason = reason
        if self.ranks:
            plural = len(self.ranks) > 1
            who = f"rank{'s' if plural else ''} {', '.join(map(str, self.ranks))} of {world_size}"
            lost = f"{who} {'are' if plural else 'is'} lost: {reason}"
        else:
            lost = f"a node of the job is lost: {reason}"
        super().__init__(
            f"{lost}; rank {rank} cannot go on with the job. See the lost rank's own output (killed? out of "
            f"memory? its node down?) and restart the job (torchrun --max-restarts=N restarts it by itself)"
        )


class OpBuildError(AccelhalError, RuntimeError):
    """Building or loading an op builder's extension failed.

    ``op`` and ``backend`` name the builder; ``log`` is the compiler's output (also kept
    in ``build.log`` of the build directory), so the message shows the compiler's own words.
    """

    def __init__(self, op: str, backend: str, message: str, *, log: str = "", build_directory: str = "") -> None:
        text = f"building op {op!r} for the {backend!r} accelerator failed: {message}"
        if build_directory:
            text += f" (build directory: {build_directory})"
        if log:
            text += f"\n--- compiler output ---\n{log.rstrip()}"
        super().__init__(text)
        self.op = op
        self.backend = backend
        self.log = log
        self.build_directory = build_directory


class BuildLockTimeoutError(AccelhalError, TimeoutError):
    """Waiting for another process's build of the same op took longer than the bound.

    The message names the lock file and its owner (pid, host, start time) and how to
    raise the bound (``ACCELHAL_OPS_LOCK_TIMEOUT``) or remove the lock.
    """

    def __init__(self, path: str, owner: str, waited: float) -> None:
        super().__init__(
            f"gave up after {waited:.0f} s waiting for the build lock {path}, held by {owner}; the owner is "
            "alive and its heartbeat is fresh, so it is still building. Raise ACCELHAL_OPS_LOCK_TIMEOUT to wait "
            "longer, or, if you know that build is gone, delete the lock file"
        )
        self.path = path
        self.owner = owner
        self.waited = waited


class CompileBackendError(AccelhalError, ValueError):
    """A ``torch.compile`` backend that cannot be used on the accelerator's device.

    Raised by :meth:`accelhal.Accelerator.set_compile_backend` for a name
    ``torch._dynamo.list_backends(exclude_tags=())`` does not list, and for ``"inductor"`` on a
    device Inductor generates no code for. A ``ValueError``, as DeepSpeed raises there.
    ``backend`` is the name given, ``device`` the device, ``reason`` why it was refused,
    ``registered`` the names torch knows and ``working`` the backend that works on the device.
    """

    def __init__(self, backend: object, device: str, reason: str, *, registered: Sequence[str], working: str) -> None:
        message = f"torch.compile backend {quote(backend)} cannot be used on {device!r}: {reason}"
        message += f". {working!r} works there (accelhal's own choice for the device)"
        if registered:
            message += f"; registered backends: {', '.join(registered)}"
        super().__init__(message)
        self.backend = backend
        self.device = device
        self.reason = reason
        self.registered = tuple(registered)
        self.working = working


class IdentityDeclarationWarning(DeprecationWarning):
    """Warned, once, at the class statement of an accelerator class whose body declares its backend's identity.

    ``accelhal check`` shows it; elsewhere it is a ``DeprecationWarning`` like any other (``docs/plugins.md``,
    "Identity").
    """
