"""``python -m accelhal.compat.deepspeed hook install|remove|status``: DeepSpeed on accelhal in every process.

``hook install`` writes ``zz-accelhal-deepspeed.pth`` into the interpreter's site-packages (or
``--dir``). From then on, every Python process started from that environment with
``ACCELHAL_DEEPSPEED=1`` gives DeepSpeed accelhal's accelerator from DeepSpeed's first
line: the processes of DeepSpeed's launcher, torchrun and multiprocessing spawn/forkserver
included, with no code in them. Without the variable the file does nothing. A DeepSpeed outside the
supported releases is refused (exit status 2) before the file is written.
``hook remove`` deletes the file (``pip uninstall accelhal`` does not).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from accelhal.compat.deepspeed import _hook


def _refusal() -> str | None:
    """Why the hook must not be installed: the installed DeepSpeed is outside the supported releases."""
    from importlib.metadata import PackageNotFoundError

    from accelhal.compat.deepspeed._releases import SUPPORTED
    from accelhal.errors import UnsupportedReleaseError

    try:
        SUPPORTED.check()
    except PackageNotFoundError:  # DeepSpeed comes later: each process checks when it imports DeepSpeed
        return None
    except UnsupportedReleaseError as exc:
        return str(exc)
    return None


def main(argv: list[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    parser = argparse.ArgumentParser(prog="python -m accelhal.compat.deepspeed", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    hook = commands.add_parser("hook", help="the start-up hook that gives DeepSpeed accelhal's accelerator")
    hook.add_argument("action", choices=["install", "remove", "status"])
    hook.add_argument("--dir", type=Path, help=f"the site-packages directory (default: {_hook.site_packages()})")
    args = parser.parse_args(argv)
    directory = _hook.site_packages() if args.dir is None else args.dir
    target = directory / _hook.PTH_NAME
    if args.action == "install":
        refusal = _refusal()
        if refusal:
            print(f"error: {refusal}", file=sys.stderr)
            return 2
        written = _hook.write_pth(directory)
        print(f"wrote {written}")
        print(f"processes started with {_hook.ENABLE}=1 now give DeepSpeed accelhal's accelerator")
    elif args.action == "remove":
        removed = _hook.remove_pth(directory)
        print(f"removed {removed}" if removed else f"{target} was not there")
    else:
        current = target.read_text(encoding="utf-8") if target.is_file() else None
        state = "not installed" if current is None else "installed" if current == _hook.PTH_LINE else "outdated"
        print(f"{target}: {state}")
        print(f"{_hook.ENABLE}={os.environ.get(_hook.ENABLE, '')!r}")
        return 0 if state == "installed" else 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
