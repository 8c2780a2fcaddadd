"""Fresh virtual environments for end-to-end tests: real ``pip install`` of real wheels.

A fresh venv reuses the current interpreter's installed packages (torch, pydantic, ...)
through a ``.pth`` file, so no multi-GB download happens; accelhal and the plugin under
test are installed into it from wheels built here, exactly as a user's ``pip`` would.
"""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def run(cmd: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
    """Run ``cmd``; on failure raise with its output in the message."""
    env = kwargs.pop("env", None) or {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    result = subprocess.run(cmd, capture_output=True, text=True, env=env, **kwargs)  # type: ignore[call-overload]
    if result.returncode != 0:
        raise AssertionError(
            f"{' '.join(map(str, cmd))} failed ({result.returncode}):\n{result.stdout}\n{result.stderr}"
        )
    return result  # type: ignore[no-any-return]


def build_wheel(source: Path, out: Path) -> Path:
    """Build ``source`` into a wheel in ``out`` without network or build isolation."""
    before = set(out.glob("*.whl"))
    run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(out), str(source)])
    (wheel,) = set(out.glob("*.whl")) - before
    return wheel


def fresh_venv(path: Path) -> Path:
    """Create a venv at ``path`` that sees this interpreter's site-packages; returns its python."""
    run([sys.executable, "-m", "venv", "--without-pip", str(path)])
    python = path / "bin" / "python"
    purelib = run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).stdout.strip()
    # this interpreter's site-packages, and those it reaches through .pth files (a venv layered on another)
    bases = [sysconfig.get_paths()["purelib"], *(p for p in sys.path if p.endswith("site-packages"))]
    Path(purelib, "_base_site.pth").write_text("".join(f"{p}\n" for p in dict.fromkeys(bases)))
    return python


def pip_install(python: Path, *wheels: Path) -> None:
    """Install wheels into the venv of ``python`` (using this interpreter's pip, targeted at it)."""
    run([sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps", *map(str, wheels)])
