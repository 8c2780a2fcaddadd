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
    """The releases of ``supported.distribution`` on the index from its floor to its newest, oldest first."""
    listed = pip("index", "versions", supported.distribution)
    found = re.search(r"Available versions: (.*)", listed)
    if found is None:
        raise SystemExit(f"pip index versions printed no versions:\n{listed}")
    low, high = release_key(supported.floor), release_key(supported.newest)
    releases = {v.strip() for v in found.group(1).split(",")}
    return sorted((v for v in releases if low <= release_key(v) <= high), key=lambda v: (release_key(v), v))
