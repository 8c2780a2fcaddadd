"""``python -m accelhal.compat.accelerate SCRIPT [ARGS]``: a script run with the adapter installed.

For a script that does not call :func:`~accelhal.compat.accelerate.install` itself, in every
process a launcher starts (``-m MODULE`` too). The script runs as ``__main__`` with ``sys.argv``
and ``sys.path[0]`` as ``python SCRIPT`` gives them. A refusal of :func:`install` is one line on
stderr and exit status 2. See ``docs/accelerate.md``, "The two lines".
"""

from __future__ import annotations

import runpy
import sys
from pathlib import Path

REFUSED = 2
"""Exit status of a refusal: the user's set-up to change, as every command of accelhal's refuses one."""

USAGE = "usage: python -m accelhal.compat.accelerate SCRIPT [ARGS] | -m MODULE [ARGS]"


def main(argv: list[str] | None = None) -> int:
    """Install the adapter, then run the script or module named in ``argv``; the exit status of a refusal."""
    from accelhal.compat.accelerate import install
    from accelhal.errors import AccelhalError

    args = sys.argv[1:] if argv is None else argv
    module = bool(args) and args[0] == "-m"
    target = args[1:] if module else args
    if not target or target[0] in ("-h", "--help"):
        print(USAGE, file=sys.stderr if not target else sys.stdout)
        return 2 if not target else 0
    try:
        install()
    except (AccelhalError, ImportError) as exc:
        print(f"accelhal.compat.accelerate: {type(exc).__name__}: {exc}", file=sys.stderr)
        return REFUSED
    sys.argv = list(target)
    if module:
        runpy.run_module(target[0], run_name="__main__", alter_sys=True)
    else:
        sys.path[0] = str(Path(target[0]).resolve().parent)
        runpy.run_path(target[0], run_name="__main__")
    return 0


if __name__ == "__main__":
    sys.exit(main())
