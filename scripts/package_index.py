"""The package index through pip, for the scripts that record a framework's releases.

from package_index import pip, releases_in_range

releases_in_range(SUPPORTED)     # every release from the floor to the newest, oldest first
"""

from __future__ import annotations

import re
import subprocess
import sys

from accelhal.compat._releases import ReleaseRange, release_key


def pip(*args: str) -> str:
    """Run ``python -m pip ARGS``; its standard output (exits naming the command when pip fails)."""
    done = subprocess.run([sys.executable, "-m", "pip", *args], capture_output=True, text=True, check=False)
    if done.returncode:
        raise SystemExit(f"pip {' '.join(args)} failed:\n{done.stderr}")
    return done.stdout


def releases_in_range(supported: ReleaseRange) -> list[str]:
    """The releases of ``supported.distribution`` from its floor to its newest, oldest first; yanked ones too.

    ``pip index versions`` leaves yanked releases out (transformers 4.46.0, a floor, which ``==`` still
    installs); pip lists every release where it finds none matching a requirement. Pre-releases are left out.
    """
    asked = f"{supported.distribution}==0a0"
    done = subprocess.run(
        [sys.executable, "-m", "pip", "download", "--no-deps", asked, "-d", "."],
        capture_output=True,
        text=True,
        check=False,
    )
    match = re.search(r"\(from versions: ([^)]*)\)", done.stderr)
    if match is None:
        raise SystemExit(f"pip download {asked} listed no versions:\n{done.stderr}")
    low, high = release_key(supported.floor), release_key(supported.newest)
    found = {v.strip() for v in match.group(1).split(",")}
    wanted = (v for v in found if low <= release_key(v) <= high and release_key(v)[1])
    return sorted(wanted, key=lambda v: (release_key(v), v))
