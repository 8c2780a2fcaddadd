"""Import torch once per process, and keep a failed import as one recorded fact.

:func:`attempt` imports torch, or returns what the first attempt found; :func:`diagnose` turns
that into the verdict reason and the fixes every backend requiring torch gets.
"""

from __future__ import annotations

import importlib.metadata as metadata
import os
import re
import sys
import threading
from collections.abc import Mapping
from types import TracebackType
from typing import Any

from accelhal.plain_record import field, record
from accelhal.process import watchdog
from accelhal.process.vendor_output import stdout_to_stderr
from accelhal.text import sentence

IMPORT_SECONDS = 60.0
"""The least time the ``accelhal`` command allows ``import torch`` whatever its ``--timeout`` (a slow disk)."""
AUTOLOAD_VARIABLE = "TORCH_DEVICE_BACKEND_AUTOLOAD"
"""torch's switch for loading the ``torch.backends`` entry points during ``import torch``."""


def autoload_on(environ: Mapping[str, str]) -> bool:
    """Whether ``import torch`` loads the ``torch.backends`` entry points under ``environ`` (torch's rule: "1")."""
    return environ.get(AUTOLOAD_VARIABLE, "1") == "1"


_AUTOLOAD_FUNCTION = "_import_device_backends"
"""The function of ``torch/__init__.py`` that loads the entry points (its frame names the culprit)."""
_AUTOLOAD_MESSAGE = r"Failed to load the backend extension: (?P<name>.+?)\. "
"""torch's message naming the failed entry point (compiled by :mod:`re` on first use: only a failure needs it)."""


def first_line(exc: BaseException) -> str:
    """Return ``"Type: first line of the message"`` (just ``"Type"`` for an empty message)."""
    lines = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {lines[0]}" if lines else type(exc).__name__


@record(frozen=True)
class AutoloadFailure:
    """The ``torch.backends`` entry point whose loading made ``import torch`` fail."""

    entry_point: str
    """Its name (``"torch_npu"``)."""
    value: str
    """What it points at (``"torch_npu:_autoload"``)."""
    distribution: str
    """The distribution that declares it (``"torch_npu"``), ``"?"`` when unknown."""
    version: str
    error: str
    """Its own error, first line (``"ImportError: libhccl.so: cannot open shared object file: ..."``)."""

    @property
    def module(self) -> str:
        """The top-level module the entry point imports (``"torch_npu"``)."""
        return self.value.partition(":")[0].partition(".")[0].strip()


@record(frozen=True)
class TorchImport:
    """How ``import torch`` went in this process."""

    error: str | None = None
    """``None`` when torch loaded; else the exception's first line."""
    cause: str | None = None
    """The first line of the exception's cause, when it has one."""
    autoload: AutoloadFailure | None = None
    """The entry point that failed, when torch's backend autoload was the culprit."""
    output: str = ""
    """What the import wrote to standard output (sent to standard error instead)."""
    earlier: bool = False
    """True when the failed import happened before accelhal tried (it was not repeated)."""
    warning: str | None = None
    """The warning category raised as an error (``"UserWarning"``) when the process turns warnings into errors."""
    undecodable: str | None = None
    """The path of the distribution file that is not UTF-8 when reading it failed torch's backend autoload (``"?"``
    where the file was not found)."""

    @property
    def loaded(self) -> bool:
        """True when torch is importable in this process."""
        return self.error is None


@record(frozen=True)
class TorchDiagnosis:
    """:class:`TorchImport` with what it means for the backends: a reason and the fixes, in order."""

    loaded: bool
    error: str | None
    cause: str | None
    autoload: AutoloadFailure | None
    output: str
    reason: str | None
    """The verdict reason every backend requiring torch gets; ``None`` when torch loaded."""
    fixes: list[str] = field(default_factory=list)
    """What to do, best first, each a sentence; empty when torch loaded."""

    @property
    def hint(self) -> str | None:
        """The fixes as one hint."""
        return " ".join(self.fixes) or None


_lock = threading.Lock()
_result: list[TorchImport] = []


class _RefuseTorch:
    """A ``sys.meta_path`` finder that answers every later ``import torch`` with the recorded error."""

    def __init__(self, message: str) -> None:
        self.message = message

    def find_spec(self, name: str, path: object = None, target: object = None) -> None:
        """Raise :class:`ImportError` for torch and its submodules; leave every other import alone."""
        if name == "torch" or name.startswith("torch."):
            raise ImportError(self.message, name=name)


def attempt() -> TorchImport:
    """Import torch unless that was already tried in this process, and return what happened.

    After a failure, any later ``import torch`` in the process (accelhal's, a plugin's, the
    program's) raises :class:`ImportError` at once with the recorded error. A failure from
    before accelhal tried (the program caught it) is recognised and not retried either.

    >>> attempt().loaded      # where torch works
    True
    """
    if _result:
        return _result[0]
    with _lock:
        if not _result:
            _result.append(_import())
        return _result[0]


def attempted() -> bool:
    """Return True once :func:`attempt` has run (it is never repeated)."""
    return bool(_result)


def _import() -> TorchImport:
    if "torch" in sys.modules:
        return TorchImport()
    if "torch._C" in sys.modules:  # an earlier import failed half-way; a retry would re-run it
        found = TorchImport(
            error="ImportError: 'import torch' failed earlier in this process, before accelhal imported it",
            earlier=True,
        )
        _refuse_later_imports(found)
        return found
    autoload_before = os.environ.get(AUTOLOAD_VARIABLE)
    with stdout_to_stderr() as captured:
        try:
            with watchdog.step("import", "", call="import torch", floor=IMPORT_SECONDS):  # autoload runs vendor code
                import torch  # noqa: F401
        except (Exception, SystemExit) as exc:
            failure: BaseException | None = exc
        else:
            failure = None
    if failure is None:
        return TorchImport(output=captured.text)
    _restore(AUTOLOAD_VARIABLE, autoload_before)  # a vendor package may have changed it and failed before undoing it
    cause = failure.__cause__ or failure.__context__
    found = TorchImport(
        error=first_line(failure),
        cause=first_line(cause) if cause is not None else None,
        autoload=_autoload_culprit(failure),
        output=captured.text,
        warning=type(failure).__name__ if isinstance(failure, Warning) else None,
        undecodable=_undecodable_file(failure),
    )
    _refuse_later_imports(found)
    return found


def _restore(variable: str, value: str | None) -> None:
    if os.environ.get(variable) == value:
        return
    if value is None:
        os.environ.pop(variable, None)
    else:
        os.environ[variable] = value


def _refuse_later_imports(found: TorchImport) -> None:
    detail = f"{found.error}" + (f", caused by {found.cause}" if found.cause else "")
    message = (
        f"torch cannot be imported in this process: 'import torch' failed ({detail}); importing it again would "
        "re-run torch's initialisation, which crashes the interpreter. 'accelhal doctor' says how to fix it"
    )
    sys.meta_path.insert(0, _RefuseTorch(message))


def _autoload_culprit(failure: BaseException) -> AutoloadFailure | None:
    """Return the ``torch.backends`` entry point that was loading when ``failure`` was raised, if any."""
    entry_point = _entry_point_in_frames(failure.__traceback__)
    if entry_point is None:
        match = re.search(_AUTOLOAD_MESSAGE, str(failure))
        if match is None:
            return None
        named = [ep for ep in metadata.entry_points(group="torch.backends") if ep.name == match["name"]]
        if not named:
            return None
        entry_point = named[0]
    cause = failure.__cause__ or failure.__context__
    dist = getattr(entry_point, "dist", None)
    return AutoloadFailure(
        entry_point=str(entry_point.name),
        value=str(entry_point.value),
        distribution=str(dist.metadata["Name"]) if dist is not None else "?",
        version=str(dist.version) if dist is not None else "?",
        error=first_line(cause) if cause is not None else first_line(failure),
    )


def _entry_point_in_frames(tb: TracebackType | None) -> Any:
    """Return the ``backend_extension`` local of torch's autoload loop, found in the traceback."""
    while tb is not None:
        frame = tb.tb_frame
        if frame.f_code.co_name == _AUTOLOAD_FUNCTION:
            candidate = frame.f_locals.get("backend_extension")
            if isinstance(candidate, metadata.EntryPoint):
                return candidate
        tb = tb.tb_next
    return None


def _undecodable_file(failure: BaseException) -> str | None:
    """Return the file that is not UTF-8 when ``failure`` is torch's autoload failing to read the entry points.

    torch lists the ``torch.backends`` entry points, reading every distribution's ``entry_points.txt``,
    outside its ``try`` around each one: ``importlib.metadata``'s error comes unwrapped. ``"?"`` where
    the traceback does not say which file.
    """
    if not isinstance(failure, UnicodeDecodeError):
        return None
    from accelhal.process.undecodable_metadata import undecodable_file

    found = undecodable_file(failure, below=_AUTOLOAD_FUNCTION)
    return None if found is None else found.path or "?"


def diagnose(runtime_hints: Mapping[str, str] | None = None) -> TorchDiagnosis:
    """Return what :func:`attempt` found, with the verdict reason and the fixes.

    ``runtime_hints`` maps a vendor package's top-level module to its backend's hint on
    making the runtime loadable (:attr:`accelhal.BackendSpec.hint`). The fixes come in order:
    make the vendor runtime loadable (that hint, for a failing autoload entry point), or turn
    torch's autoload off, or uninstall the vendor package.
    """
    found = attempt()
    if found.loaded:
        return TorchDiagnosis(True, None, None, None, found.output, None)
    if found.undecodable is not None:
        reason, fixes = _undecodable(found.undecodable, found.error)
    else:
        reason, fixes = _reason(found), _fixes(found, runtime_hints or {})
    return TorchDiagnosis(
        loaded=False,
        error=found.error,
        cause=found.cause,
        autoload=found.autoload,
        output=found.output,
        reason=reason,
        fixes=fixes,
    )


def _undecodable(file: str, error: str | None) -> tuple[str, list[str]]:
    """The reason and the fixes when torch's autoload could not read ``file``, which is not UTF-8 (``"?"``: unknown)."""
    from accelhal.process.undecodable_metadata import UndecodableFile

    found = UndecodableFile.at(None if file == "?" else file)
    commands = found.pip_commands
    install, uninstall = (f" ({commands[0]})", f" ({commands[1]})") if commands else ("", "")
    where, subject = found.where, found.subject if found.name else "the distribution"
    reason = (
        "torch itself cannot load: 'import torch' runs torch's backend autoload, which reads the entry points of "
        f"every installed distribution, and {where} is not UTF-8 ({error})"
    )
    return sentence(reason), [
        sentence(
            f"Repair or remove {subject}, whose file is not UTF-8: reinstall it{install}, or save that file as UTF-8, "
            f"or uninstall it{uninstall}; torch itself needs no repair"
        ),
        sentence(
            f"Or set {AUTOLOAD_VARIABLE}=0 so that 'import torch' skips its backend autoload, which reads that file; "
            "accelhal then probes the vendor backends itself"
        ),
    ]


def _reason(found: TorchImport) -> str:
    culprit = found.autoload
    if culprit is not None:
        return sentence(
            f"torch itself cannot load: 'import torch' runs torch's backend autoload, and the torch.backends "
            f"entry point {culprit.entry_point!r} ({culprit.value}) of {culprit.distribution} {culprit.version} "
            f"fails: {culprit.error}"
        )
    if found.earlier:
        return sentence(f"torch itself cannot load: {found.error}")
    caused = f", caused by {found.cause}" if found.cause else ""
    return sentence(f"torch itself cannot load: 'import torch' fails with {found.error}{caused}")


def _fixes(found: TorchImport, runtime_hints: Mapping[str, str]) -> list[str]:
    culprit = found.autoload
    if culprit is None:
        if found.earlier:
            return ["Run 'accelhal doctor' in a fresh process: it says why 'import torch' fails and how to fix it."]
        if found.warning:
            return [
                f"'import torch' warned, and this process turns warnings into errors (python -W error or "
                f"PYTHONWARNINGS): let that {found.warning} through (add -W 'default::{found.warning}' after "
                "-W error) or remove what it warns of."
            ]
        return [
            "Repair torch in this environment (pip install --force-reinstall torch): accelhal and every backend "
            "need a torch that imports."
        ]
    package = culprit.distribution if culprit.distribution != "?" else culprit.module
    runtime = runtime_hints.get(culprit.module)
    make_loadable = (
        f"Make {package} loadable: {runtime}"
        if runtime
        else f"Make {package} loadable: repair its installation so that 'import {culprit.module}' works"
    )
    return [
        sentence(make_loadable),
        sentence(
            f"Or set {AUTOLOAD_VARIABLE}=0 so that 'import torch' skips {package}'s entry point; accelhal then "
            f"probes {package} itself and uses another backend while it cannot load"
        ),
        sentence(f"Or uninstall it: pip uninstall {package}"),
    ]
