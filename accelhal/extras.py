"""How a message tells the user to install one of accelhal's extras.

accelhal is not on the package index: ``pip install 'accelhal[ray]'`` finds nothing. A message
that names an extra gives the command that works wherever accelhal is installed, the extra's own
requirements as accelhal's installed metadata declares them (``pyproject.toml`` owns them), and
the clone's form for installing the extra itself (``docs/quickstart.md``).

Example::

    >>> install_advice("ray")  # doctest: +SKIP
    "pip install 'ray[train]<3,>=2.40.0' (accelhal's ray extra; from a clone: pip install './accelhal[ray]')"
"""

from __future__ import annotations

import re
from importlib import metadata

DISTRIBUTION = "accelhal"
"""The distribution whose metadata declares the extras."""

_EXTRA_MARKER = re.compile(r"""extra\s*==\s*["']([^"']+)["']""")


def requirements(extra: str) -> tuple[str, ...]:
    """The requirements ``extra`` adds, from accelhal's installed metadata; ``()`` where it declares none.

    Other extras an extra names (``accelhal[test-core]``) are left out: they name accelhal again.
    """
    try:
        declared = metadata.requires(DISTRIBUTION) or []
    except metadata.PackageNotFoundError:
        return ()
    found = []
    for line in declared:
        requirement, _, marker = line.partition(";")
        match = _EXTRA_MARKER.search(marker)
        if match and match.group(1) == extra and not requirement.strip().startswith(DISTRIBUTION):
            found.append(requirement.strip().replace(" ", ""))
    return tuple(found)


def install_advice(extra: str) -> str:
    """One phrase that installs ``extra``: its requirements with pip, and the extra itself from a clone."""
    clone = f"from a clone: pip install './accelhal[{extra}]'"
    needed = requirements(extra)
    if not needed:
        return f"accelhal's {extra} extra ({clone})"
    command = " ".join(f"'{requirement}'" for requirement in needed)
    return f"pip install {command} (accelhal's {extra} extra; {clone})"
