"""Every environment variable accelhal reads, listed in one table; accelhal's own parsed and validated here.

:data:`VARIABLES` is the single table of variables (the documentation's variable page is generated from it),
but each backend's visible-devices variables, from its spec (``BackendSpec.visible_devices_envs``).
:meth:`Settings.from_environ` parses accelhal's own and raises :class:`~accelhal.ConfigurationError` naming
the variable, the value and what would be accepted. This module imports neither torch nor pydantic. See
``docs/reference/environment.md``.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, Literal

from accelhal.contract.spec import is_backend_name
from accelhal.plain_record import record
from accelhal.text import MAX_DIGITS, quote, shorten

if TYPE_CHECKING:
    from accelhal.errors import ConfigurationError


@record(frozen=True)
class Variable:
    """One environment variable: its name, the kind of value, its default and its meaning."""

    name: str
    kind: str
    default: str
    help: str


SECONDS_DEFAULTS: dict[str, float] = {
    "ACCELHAL_TIMEOUT": 60.0,
    "ACCELHAL_DOCTOR_TIMEOUT": 60.0,
    "ACCELHAL_SLOW_PLUGIN_SECONDS": 2.0,
    "ACCELHAL_HANG_WARNING_SECONDS": 30.0,
    "ACCELHAL_OPS_LOCK_TIMEOUT": 1800.0,
    "ACCELHAL_OPS_LOCK_STALE": 120.0,
    "ACCELHAL_DIST_TIMEOUT": 600.0,
}
"""The default of every variable that takes a number of seconds; no other place writes these numbers."""

SECONDS_LEAST: dict[str, float] = {
    # a first call into a runtime (a driver starting) takes a good part of a second: below it, a sound one is "hung"
    "ACCELHAL_TIMEOUT": 1.0,
    "ACCELHAL_DOCTOR_TIMEOUT": 1.0,
    # a tenth of a second is quick for an import or a probe by any measure: below it, healthy plugins are "slow"
    "ACCELHAL_SLOW_PLUGIN_SECONDS": 0.1,
    # a log line only (the call goes on); the watchdog's thread wakes once per this, at most twice a second
    "ACCELHAL_HANG_WARNING_SECONDS": 0.5,
    # ten polls of the lock (one every 0.1 s)
    "ACCELHAL_OPS_LOCK_TIMEOUT": 1.0,
    # the owner's heartbeat comes every quarter of it (at most 10 s); a shorter bound would be within the file
    # system's timestamp granularity, attribute caching and the clock difference of the hosts sharing the cache, and
    # break a live build's lock: two processes would build into one directory
    "ACCELHAL_OPS_LOCK_STALE": 30.0,
    # torch counts whole milliseconds (0.0001 s is 0 ms); the rendezvous waits for every rank to start
    "ACCELHAL_DIST_TIMEOUT": 1.0,
}
"""The least value of every variable of :data:`SECONDS_DEFAULTS`: below it, the variable cannot mean what it says.

:func:`parse_seconds` refuses a smaller value, and :data:`VARIABLES` shows it (``seconds, at least 1``).
"""


def _seconds_text(variable: str) -> str:
    """The default of a seconds variable as :data:`VARIABLES` shows it (``"60"``)."""
    return f"{SECONDS_DEFAULTS[variable]:g}"


def _seconds_kind(variable: str) -> str:
    """The kind of a seconds variable as :data:`VARIABLES` shows it, with its least value: ``"seconds, at least 1"``."""
    return f"seconds, at least {SECONDS_LEAST[variable]:g}"


def read_seconds(variable: str, environ: Mapping[str, str] | None = None) -> float:
    """The seconds ``variable`` (a key of :data:`SECONDS_DEFAULTS`) is set to in ``environ``, else its default.

    Raises:
        ConfigurationError: naming the variable, where its value is not :func:`seconds_range`.

    >>> read_seconds("ACCELHAL_TIMEOUT", {}), read_seconds("ACCELHAL_TIMEOUT", {"ACCELHAL_TIMEOUT": "5"})
    (60.0, 5.0)
    """
    env = os.environ if environ is None else environ
    return parse_seconds(variable, env.get(variable), SECONDS_DEFAULTS[variable])


def _table() -> tuple[Variable, ...]:
    """:data:`VARIABLES`, built when first read: the first ``get_accelerator()`` does not need it."""
    from accelhal.launch.known_launchers import LAUNCHER_VARIABLES

    return (
        Variable(
            "ACCELHAL_ACCELERATOR",
            "backend name",
            "unset",
            "Force a backend by name (trimmed, case-insensitive; empty or blank means unset). An unknown "
            "name is an error listing the known names; a known but unavailable one is an error with the "
            "probe's reason. A forced backend never falls back to another. 'generic' means the device "
            "torch.accelerator reports, under the backend the generic plugin registered for it (unless a "
            "backend is registered under that very name); where there is none, an error that says why.",
        ),
        Variable(
            "DS_ACCELERATOR",
            "backend name",
            "unset",
            "DeepSpeed's override, honoured when ACCELHAL_ACCELERATOR is unset or blank; 'xpu.external' "
            "means 'xpu'. Parsed like ACCELHAL_ACCELERATOR, 'generic' included.",
        ),
        Variable(
            "ACCELHAL_DISABLE_PLUGIN_AUTOLOAD",
            "boolean",
            "0",
            "1 loads only the backends built into accelhal; third-party plugins are not loaded.",
        ),
        Variable(
            "ACCELHAL_PLUGINS",
            "comma-separated names",
            "unset (all)",
            "Allow-list of third-party plugins, by entry-point or distribution name; built-ins always load.",
        ),
        Variable(
            "ACCELHAL_BLOCK_PLUGINS",
            "comma-separated names",
            "unset (none)",
            "Deny-list of plugins, by entry-point or distribution name; built-ins other than cpu may be "
            "blocked too. cpu is the fallback and cannot be: naming it is an error, and the distribution name "
            "'accelhal' blocks the other built-ins only.",
        ),
        Variable(
            "ACCELHAL_STRICT",
            "boolean",
            "0",
            "1 turns any plugin failure or name conflict into a PluginError instead of a reported skip.",
        ),
        Variable(
            "ACCELHAL_DOCTOR_TIMEOUT",
            _seconds_kind("ACCELHAL_DOCTOR_TIMEOUT"),
            _seconds_text("ACCELHAL_DOCTOR_TIMEOUT"),
            "accelhal doctor runs discovery in a child process first; a plugin step there (import, probe, "
            "construction) that takes longer than this is called hung, and doctor names the plugin to block.",
        ),
        Variable(
            "ACCELHAL_SLOW_PLUGIN_SECONDS",
            _seconds_kind("ACCELHAL_SLOW_PLUGIN_SECONDS"),
            _seconds_text("ACCELHAL_SLOW_PLUGIN_SECONDS"),
            "accelhal doctor warns about a plugin whose import (with its registration hook) or a backend whose "
            "probe takes longer than this (measured in doctor's child process, after import torch).",
        ),
        Variable(
            "ACCELHAL_TIMEOUT",
            _seconds_kind("ACCELHAL_TIMEOUT"),
            _seconds_text("ACCELHAL_TIMEOUT"),
            "The default of every accelhal command's timeout option: the longest a call into a device's runtime (a "
            "plugin's import, a probe, a construction, a device query) may take before the command calls it hung, "
            "prints where it is stuck and goes on without it. accelhal doctor's discovery child uses it too, unless "
            "ACCELHAL_DOCTOR_TIMEOUT is set.",
        ),
        Variable(
            "ACCELHAL_HANG_WARNING_SECONDS",
            _seconds_kind("ACCELHAL_HANG_WARNING_SECONDS"),
            _seconds_text("ACCELHAL_HANG_WARNING_SECONDS"),
            "In a program, a plugin's import, a probe or a construction that has run this long during selection is "
            "logged once (a warning on the 'accelhal' logger naming the backend, the call and the variable that skips "
            "it); the call goes on. A bad value is refused by the first get_accelerator(), as any variable's is.",
        ),
        Variable(
            "ACCELHAL_DEEPSPEED",
            "boolean",
            "0",
            "1 makes every Python process of an environment where the DeepSpeed start-up hook is installed "
            "(python -m accelhal.compat.deepspeed hook install) give DeepSpeed accelhal's accelerator when it imports "
            "DeepSpeed: launcher ranks, torchrun workers, spawned children. Read by the hook's .pth file at start-up; "
            "a malformed value is raised when DeepSpeed is imported.",
        ),
        Variable(
            "ACCELHAL_DEEPSPEED_DISABLE_OPS",
            "comma-separated names",
            "unset (none)",
            "With ACCELHAL_DEEPSPEED: DeepSpeed op-builder class names (case-sensitive) the adapter reports as not "
            "buildable, as the disable_ops argument of install() does; for example ShareMemCommBuilder.",
        ),
        Variable(
            "ACCELHAL_OPS_CACHE",
            "directory",
            "$XDG_CACHE_HOME/accelhal/ops, else ~/.cache/accelhal/ops",
            "Where op builders keep their JIT-built extensions, one directory per hash of the build inputs.",
        ),
        Variable(
            "ACCELHAL_OPS_LOCK_TIMEOUT",
            _seconds_kind("ACCELHAL_OPS_LOCK_TIMEOUT"),
            _seconds_text("ACCELHAL_OPS_LOCK_TIMEOUT"),
            "The longest a process waits for another process's build of the same op before raising "
            "BuildLockTimeoutError; a dead builder's lock is broken at once, whatever this says.",
        ),
        Variable(
            "ACCELHAL_OPS_LOCK_STALE",
            _seconds_kind("ACCELHAL_OPS_LOCK_STALE"),
            _seconds_text("ACCELHAL_OPS_LOCK_STALE"),
            "A build lock whose heartbeat (its file's mtime, refreshed by the builder) is older than this is "
            "stale and broken: this is how a build killed on another host sharing the cache is detected.",
        ),
        Variable(
            "ACCELHAL_DIST_TIMEOUT",
            _seconds_kind("ACCELHAL_DIST_TIMEOUT"),
            _seconds_text("ACCELHAL_DIST_TIMEOUT"),
            "The timeout accelhal.distributed.init_process_group gives torch.distributed when the caller passes none: "
            "the longest the rendezvous and any one collective wait for another rank (torch's own default is 30 "
            "minutes on gloo). A rank that dies makes the others fail within it.",
        ),
        Variable(
            "XDG_CACHE_HOME",
            "directory",
            "~/.cache",
            "The base of accelhal's caches (the entry-point cache, and the op cache when ACCELHAL_OPS_CACHE is unset); "
            "a relative value is ignored, as the XDG Base Directory specification says.",
        ),
        Variable(
            "HOME",
            "directory",
            "the user's",
            "Where ~ points: the caches' base (~/.cache) when XDG_CACHE_HOME is not set.",
        ),
        Variable("CXX", "command", "c++", "The C++ compiler of the op builders; part of each build's cache key."),
        Variable("CC", "command", "unset", "The C compiler an op build may use; part of each build's cache key."),
        *(
            Variable(
                name, "flags", "unset", f"{meaning}; part of the cache key of DeepSpeed's op builds (the adapter)."
            )
            for name, meaning in (
                ("CFLAGS", "Flags of C compilations"),
                ("CXXFLAGS", "Flags of C++ compilations"),
                ("LDFLAGS", "Flags of the link"),
            )
        ),
        Variable(
            "CUDA_HOME",
            "directory",
            "torch's search",
            "torch's own: the CUDA toolkit op builds compile with; part of the cache key of cuda and DeepSpeed op "
            "builds.",
        ),
        Variable(
            "ROCM_HOME",
            "directory",
            "torch's search",
            "torch's own: the ROCm toolkit op builds compile with; part of the cache key of DeepSpeed's op builds.",
        ),
        Variable(
            "NVCC_APPEND_FLAGS",
            "flags",
            "unset",
            "nvcc's own: flags added to every nvcc call; part of the cache key of the cuda backend's op builds.",
        ),
        Variable(
            "DS_BUILD_OPS",
            "boolean",
            "unset",
            "DeepSpeed's: which ops its installation pre-built; part of the cache key of DeepSpeed's op builds.",
        ),
        Variable(
            "TMPDIR", "directory", "/tmp", "Where the capture of vendor output (stdout sent to stderr) keeps its file."
        ),
        Variable(
            "COLUMNS",
            "number",
            "the terminal's width",
            "The terminal's own: the width of the accelhal command's text output on a terminal, kept within 40 to "
            "80 columns; piped output is 80 columns whatever it says.",
        ),
        Variable(
            "TORCH_EXTENSIONS_DIR",
            "directory",
            "torch's default",
            "torch's own; set by the DeepSpeed adapter around DeepSpeed's op builds, then restored.",
        ),
        Variable(
            "TORCH_CUDA_ARCH_LIST", "architectures", "unset", "torch's own: the CUDA architectures op builds target."
        ),
        Variable(
            "DS_ALLOW_DEPRECATED_FP16",
            "boolean",
            "unset",
            "DeepSpeed's: 1 lets the cuda backend report float16 on compute capability 6.x.",
        ),
        Variable(
            "TORCH_DEVICE_BACKEND_AUTOLOAD",
            "boolean",
            "1",
            "torch's own: 0 stops import torch from loading vendor extensions; accelhal reports it and suggests it.",
        ),
        Variable("PYTORCH_NVML_BASED_CUDA_CHECK", "boolean", "unset", "torch's own; copied into detection reports."),
        Variable(
            "PJRT_DEVICE",
            "PJRT client",
            "unset",
            "torch_xla's own: the XLA device of the process (CPU, TPU, a plugin's name); the xla backend's probe "
            "reads it and, unset, takes a device only where a TPU is attached (docs/backends.md).",
        ),
        Variable(
            "CPU_NUM_DEVICES",
            "integer",
            "1",
            "torch_xla's own: how many devices XLA's CPU client shows; the xla backend counts them from it.",
        ),
        Variable(
            "TPU_LIBRARY_PATH",
            "path",
            "unset",
            "torch_xla's own: where libtpu is; the xla backend's probe reads it to tell whether a TPU can be used.",
        ),
        Variable(
            "TORCHELASTIC_USE_AGENT_STORE",
            "boolean",
            "set by torchrun",
            "torch's own, set by torchrun for its workers: True when its agent, not rank 0, hosts the rendezvous store "
            "(accelhal.distributed then names no rank when that store is lost).",
        ),
        Variable(
            "TORCHELASTIC_MAX_RESTARTS",
            "integer",
            "set by torchrun",
            "torch's own, how often torchrun may restart the job: above 0 with the agent's store shared, "
            "init_process_group warns that restarted groups can read stale addresses (set "
            "TORCH_DISABLE_SHARE_RDZV_TCP_STORE=1 for torchrun).",
        ),
        Variable(
            "PYTEST_DISABLE_PLUGIN_AUTOLOAD",
            "boolean",
            "unset",
            "pytest's own: with it set, accelhal check loads the accelhal pytest plugin explicitly.",
        ),
        Variable(
            "ACCELHAL_VLLM_PLATFORM",
            "auto, on or off",
            "auto",
            "accelhal.compat.vllm, vLLM's platform plugin: auto (the bridge answers where accelhal's active backend "
            "is a device vLLM has no platform for and no vendor's vLLM plugin answers), on (also on cpu; never on "
            "cuda, xpu or xla, which vLLM's own platforms serve), off. Read in each vLLM process (docs/vllm.md).",
        ),
        Variable(
            "ACCELHAL_SGLANG_PLATFORM",
            "auto, on or off",
            "auto",
            "accelhal.compat.sglang, SGLang's platform plugin: auto (the bridge answers where accelhal's active "
            "backend is a device SGLang has no platform for and no vendor's SGLang plugin answers; on cpu unless "
            "SGLANG_USE_CPU_ENGINE=1), on (also beside SGLang's CPU engine; never on cuda, xpu, npu, musa or mps, "
            "which SGLang's own platforms serve), off. Read in each SGLang process (docs/sglang.md).",
        ),
        Variable(
            "SGLANG_PLATFORM",
            "platform plugin name",
            "unset",
            "SGLang's own: the name of the one out-of-tree platform plugin SGLang loads; set, SGLang asks no other "
            "plugin, so accelhal's SGLang bridge finds no vendor's plugin to leave the device to.",
        ),
        Variable(
            "SGLANG_USE_CPU_ENGINE",
            "boolean",
            "unset",
            "SGLang's own: 1 asks for SGLang's CPU engine; on cpu, accelhal's SGLang bridge then stays out unless "
            "ACCELHAL_SGLANG_PLATFORM=on.",
        ),
        Variable(
            "ACCELHAL_SIMULATED_DEVICES",
            "integer",
            "2",
            "accelhal.testing.simulated only: how many devices a simulated vendor runtime shows (0: none).",
        ),
        *(
            Variable(
                name,
                "launcher",
                "unset",
                "Set by a launcher; read by accelhal.launch.environment (see its documentation).",
            )
            for name in LAUNCHER_VARIABLES
        ),
    )


VARIABLES: tuple[Variable, ...]
"""Every variable accelhal reads, but each backend's visible-devices variables (from its spec), in one table.

Built on first access (like :data:`ALL_VARIABLES` and :data:`RELEVANT_VARIABLES`, derived from it).
"""

ALL_VARIABLES: tuple[str, ...]
"""The name of every variable accelhal reads, but each backend's visible-devices variables, from its spec."""

_TRUE_SPELLINGS = ("1", "true", "yes", "on")
_FALSE_SPELLINGS = ("0", "false", "no", "off")
_TRUE = frozenset(_TRUE_SPELLINGS)
_FALSE = frozenset({"", *_FALSE_SPELLINGS})
BOOLEAN_SPELLINGS = f"{'/'.join(_TRUE_SPELLINGS)} or {'/'.join(_FALSE_SPELLINGS)}"
"""The spellings a boolean variable takes (any case), in words (``1/true/yes/on or 0/false/no/off``)."""


def _bad_value(message: str, *, variable: str, value: str) -> ConfigurationError:
    """The :class:`~accelhal.ConfigurationError` to raise for ``variable``'s ``value``.

    :mod:`accelhal.errors` is imported here, when a value is wrong: defining its classes would
    cost every first ``get_accelerator()``.
    """
    from accelhal.errors import ConfigurationError

    return ConfigurationError(message, variable=variable, value=value)


def parse_bool(variable: str, raw: str | None) -> bool:
    """Parse a boolean variable: 1/true/yes/on or 0/false/no/off (any case); unset is False."""
    if raw is None:
        return False
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise _bad_value(
        f"{variable}={quote(raw)} is not a boolean; use {BOOLEAN_SPELLINGS}",
        variable=variable,
        value=raw,
    )


def parse_backend_name(variable: str, raw: str | None) -> str | None:
    """Parse a backend name: trimmed, lower-cased; empty or blank is ``None``.

    A value with stray characters (``"cuda;"``, ``"cu da"``, ``"cuda,cpu"``) raises,
    naming the offending characters.
    """
    if raw is None:
        return None
    value = raw.strip().lower()
    if not value:
        return None
    if variable == "DS_ACCELERATOR" and value == "xpu.external":
        value = "xpu"
    if not is_backend_name(value):
        stray = sorted({c for c in value if not (c.isascii() and (c.isalnum() or c == "_"))})
        detail = f"contains {shorten(', '.join(repr(c) for c in stray))}" if stray else "is not a valid name"
        if not stray and len(value) > 32:
            detail = f"is {len(value)} characters long (a name has at most 32)"
        raise _bad_value(
            f"{variable}={quote(raw)} {detail}; a backend name is one word of lowercase letters, digits "
            "and '_' (for example 'cuda' or 'cpu'); only one backend can be forced",
            variable=variable,
            value=raw,
        )
    return value


def parse_count(variable: str, raw: str | None, default: int) -> int:
    """Parse a count, a whole number from 0 (at most :data:`~accelhal.text.MAX_DIGITS` digits); blank is ``default``.

    Raises:
        ConfigurationError: naming ``variable``, where ``raw`` is anything else (``"two"``, ``"-1"``, ``"1.5"``).
    """
    if raw is None or not raw.strip():
        return default
    value = raw.strip()
    if not (value.isascii() and value.isdigit() and len(value) <= MAX_DIGITS):
        raise _bad_value(
            f"{variable}={quote(raw)} is not a count; give a whole number from 0 (for example 2)",
            variable=variable,
            value=raw,
        )
    return int(value)


def parse_name_list(variable: str, raw: str | None) -> tuple[str, ...] | None:
    """Parse a comma-separated list of plugin names; unset or blank is ``None``."""
    if raw is None or not raw.strip():
        return None
    names = [part.strip().lower() for part in raw.split(",")]
    if any(not name for name in names):
        raise _bad_value(
            f"{variable}={quote(raw)} has an empty entry; give plugin names separated by single commas",
            variable=variable,
            value=raw,
        )
    return tuple(names)


def block_plugins_with(raw: str | None, names: Iterable[str]) -> str:
    """``ACCELHAL_BLOCK_PLUGINS``'s value ``raw`` with ``names`` added, each once: a value to set or to suggest.

    Unlike :func:`parse_name_list` this never raises: the user's entries are kept as written,
    blank ones dropped, and a wrong one is left for the process that reads the value to refuse.

    >>> block_plugins_with(" acme,,", ["zeta", "acme"])
    'acme,zeta'
    """
    listed = [name.strip() for name in (raw or "").split(",") if name.strip()]
    return ",".join([*listed, *(name for name in dict.fromkeys(names) if name not in listed)])


@record(frozen=True)
class Settings:
    """The parsed values of :data:`VARIABLES`."""

    accelerator: str | None = None
    """The forced backend name, or ``None``."""
    accelerator_variable: Literal["ACCELHAL_ACCELERATOR", "DS_ACCELERATOR"] | None = None
    """Which variable forced it (``ACCELHAL_ACCELERATOR`` or ``DS_ACCELERATOR``)."""
    disable_plugin_autoload: bool = False
    plugins: tuple[str, ...] | None = None
    block_plugins: tuple[str, ...] = ()
    strict: bool = False
    hang_warning_seconds: float = SECONDS_DEFAULTS["ACCELHAL_HANG_WARNING_SECONDS"]
    """``ACCELHAL_HANG_WARNING_SECONDS``: read here so that the first ``get_accelerator()`` refuses a bad value on
    the caller's thread; the watchdog's thread reads it again (:mod:`accelhal.process.watchdog`)."""

    @classmethod
    def from_environ(cls, environ: Mapping[str, str] | None = None) -> Settings:
        """Read and validate every variable from ``environ`` (``os.environ`` by default)."""
        env = os.environ if environ is None else environ
        accelerator = parse_backend_name("ACCELHAL_ACCELERATOR", env.get("ACCELHAL_ACCELERATOR"))
        variable: Literal["ACCELHAL_ACCELERATOR", "DS_ACCELERATOR"] = "ACCELHAL_ACCELERATOR"
        if accelerator is None:
            accelerator = parse_backend_name("DS_ACCELERATOR", env.get("DS_ACCELERATOR"))
            variable = "DS_ACCELERATOR"
        return cls(
            accelerator=accelerator,
            accelerator_variable=variable if accelerator else None,
            disable_plugin_autoload=parse_bool(
                "ACCELHAL_DISABLE_PLUGIN_AUTOLOAD", env.get("ACCELHAL_DISABLE_PLUGIN_AUTOLOAD")
            ),
            plugins=parse_name_list("ACCELHAL_PLUGINS", env.get("ACCELHAL_PLUGINS")),
            block_plugins=parse_name_list("ACCELHAL_BLOCK_PLUGINS", env.get("ACCELHAL_BLOCK_PLUGINS")) or (),
            strict=parse_bool("ACCELHAL_STRICT", env.get("ACCELHAL_STRICT")),
            hang_warning_seconds=read_seconds("ACCELHAL_HANG_WARNING_SECONDS", env),
        )


RELEVANT_VARIABLES: tuple[str, ...]
"""Variables copied into every detection report (plus each backend's visible-devices variables).

Not ``HOME``: it decides nothing a report explains, and names the user in reports pasted into issues.
"""


def __getattr__(name: str) -> tuple[Any, ...]:
    """:data:`VARIABLES`, :data:`ALL_VARIABLES` and :data:`RELEVANT_VARIABLES`, built on first access."""
    if name not in ("VARIABLES", "ALL_VARIABLES", "RELEVANT_VARIABLES"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    table = _table()
    every = tuple(v.name for v in table)
    globals().update(VARIABLES=table, ALL_VARIABLES=every, RELEVANT_VARIABLES=tuple(n for n in every if n != "HOME"))
    value: tuple[Any, ...] = globals()[name]
    return value


MAX_SECONDS = 1_000_000.0
"""The longest wait accelhal takes, in seconds, about 11.6 days.

A longer one would overflow the clocks, ``timedelta`` and C ints beneath the calls that wait, an ``OverflowError``
from a thread, a timer or torch."""


def seconds(raw: str, variable: str) -> float | None:
    """``raw`` as a number of seconds that ``variable`` takes (:func:`seconds_range`); None where it is not one.

    >>> [seconds(raw, "ACCELHAL_TIMEOUT") for raw in ("2.5", "0.5", "1e300", "nan")]
    [2.5, None, None, None]
    """
    try:
        value = float(raw)
    except ValueError:
        return None
    return value if SECONDS_LEAST[variable] <= value <= MAX_SECONDS else None


def seconds_range(variable: str) -> str:
    """What ``variable`` (a key of :data:`SECONDS_DEFAULTS`) must be, in words: from its least value to the most.

    >>> seconds_range("ACCELHAL_DIST_TIMEOUT")
    'a number of seconds from 1 to 1000000'
    """
    return f"a number of seconds from {SECONDS_LEAST[variable]:g} to {MAX_SECONDS:.0f}"


def parse_seconds(variable: str, raw: str | None, default: float) -> float:
    """Parse ``variable``'s value ``raw`` as :func:`seconds` does; unset or blank is ``default``.

    Raises:
        ConfigurationError: naming ``variable``, where ``raw`` is not :func:`seconds_range`.
    """
    if raw is None or not raw.strip():
        return default
    value = seconds(raw, variable)
    if value is None:
        raise _bad_value(
            f"{variable}={quote(raw)} is not {seconds_range(variable)} (for example {SECONDS_DEFAULTS[variable]:g})",
            variable=variable,
            value=raw,
        )
    return value


def dist_timeout(environ: Mapping[str, str] | None = None) -> float:
    """``ACCELHAL_DIST_TIMEOUT`` in seconds: the default timeout of ``accelhal.distributed.init_process_group``.

    >>> dist_timeout({}), dist_timeout({"ACCELHAL_DIST_TIMEOUT": "30"})
    (600.0, 30.0)
    """
    return read_seconds("ACCELHAL_DIST_TIMEOUT", environ)


def cache_home(environ: Mapping[str, str] | None = None) -> str:
    """The base of accelhal's caches: ``XDG_CACHE_HOME``, else ``~/.cache``.

    A relative or blank ``XDG_CACHE_HOME`` is ignored, as the XDG Base Directory
    specification says. The answer is relative only when the home directory is unknown.

    >>> cache_home({"XDG_CACHE_HOME": "/var/cache/me"}), cache_home({"XDG_CACHE_HOME": "rel"}) == cache_home({})
    ('/var/cache/me', True)
    """
    env = os.environ if environ is None else environ
    raw = (env.get("XDG_CACHE_HOME") or "").strip()
    return raw if os.path.isabs(raw) else os.path.join(os.path.expanduser("~"), ".cache")


@record(frozen=True)
class OpsSettings:
    """The op builders' variables (``ACCELHAL_OPS_*``), read when an op is built, not at selection."""

    cache: str
    """The root directory of the JIT build cache."""
    lock_timeout: float = SECONDS_DEFAULTS["ACCELHAL_OPS_LOCK_TIMEOUT"]
    lock_stale: float = SECONDS_DEFAULTS["ACCELHAL_OPS_LOCK_STALE"]

    @classmethod
    def from_environ(cls, environ: Mapping[str, str] | None = None) -> OpsSettings:
        """Read and validate the ``ACCELHAL_OPS_*`` variables from ``environ`` (``os.environ`` by default).

        >>> OpsSettings.from_environ({"ACCELHAL_OPS_CACHE": "/tmp/ops"}).cache
        '/tmp/ops'
        """
        env = os.environ if environ is None else environ
        cache = (env.get("ACCELHAL_OPS_CACHE") or "").strip()
        if not cache:
            cache = os.path.join(cache_home(env), "accelhal", "ops")
        return cls(
            cache=os.path.abspath(os.path.expanduser(cache)),
            lock_timeout=read_seconds("ACCELHAL_OPS_LOCK_TIMEOUT", env),
            lock_stale=read_seconds("ACCELHAL_OPS_LOCK_STALE", env),
        )
