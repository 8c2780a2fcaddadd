"""DeepSpeed's own import, told apart from accelhal's: :func:`deepspeed_own_import` and :class:`DeepSpeedImportError`.

A leaf of the adapter (it imports no other module of it), so that each module importing DeepSpeed can use it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from accelhal.errors import AccelhalError


class DeepSpeedImportError(ImportError):
    """DeepSpeed's own import failed (in DeepSpeed or a library it imports), not accelhal's adapter.

    Raised from the original exception (its ``__cause__``), by every entry point of the adapter
    that imports DeepSpeed; ``import deepspeed`` fails the same way without accelhal.
    """

    __module__ = "accelhal.compat.deepspeed"  # where users import it from, and how a traceback names it


@contextlib.contextmanager
def deepspeed_own_import() -> Iterator[None]:
    """A block that imports DeepSpeed: what DeepSpeed's own import raises becomes :class:`DeepSpeedImportError`.

    accelhal's own errors (the start-up hook's, which DeepSpeed's import runs) and a DeepSpeed that is
    not installed at all pass as they are.
    """
    try:
        yield
    except (AccelhalError, KeyboardInterrupt):
        raise
    except ModuleNotFoundError as exc:
        if exc.name == "deepspeed":
            raise
        raise DeepSpeedImportError(_own_import_failed(exc)) from exc
    except Exception as exc:
        raise DeepSpeedImportError(_own_import_failed(exc)) from exc


def _own_import_failed(exc: BaseException) -> str:
    """``deepspeed 0.15.4 fails in its own import: RuntimeError: ... (raised in FILE:LINE); ...``."""
    import importlib.metadata as metadata
    import traceback

    from accelhal.text import shorten

    try:
        release = f"deepspeed {metadata.version('deepspeed')}"
    except metadata.PackageNotFoundError:
        release = "deepspeed"
    frames = traceback.extract_tb(exc.__traceback__)
    where = f" (raised in {frames[-1].filename}:{frames[-1].lineno})" if frames else ""
    message = shorten(str(exc).strip(), 300)
    return (
        f"{release} fails in its own import: {type(exc).__name__}{': ' + message if message else ''}{where}; "
        "'python -c \"import deepspeed\"' fails the same way without accelhal: repair the DeepSpeed installation "
        "or the library named there, or install a DeepSpeed release that imports here"
    )
