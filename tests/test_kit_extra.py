"""The ``kit`` extra is all a plugin author needs for the conformance kit: ``accelhal check`` in a venv with it alone.

The venv holds accelhal's wheel of this checkout and, beside it, exactly the distributions
that the wheel's own requirements and its ``kit`` extra's need (their whole closure), taken
from this interpreter's installation: each one's files are linked into one directory that
the venv reads through a ``.pth`` file, so torch is neither downloaded nor copied. ``pip
check`` proves the closure complete; nothing else the test environment has (hypothesis,
numpy, pytest-xdist, the frameworks) is importable there.
"""

from __future__ import annotations

import importlib.metadata
import os
import re
import sys
import zipfile
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.venvs import pip_install, run

pytestmark = pytest.mark.slow

EXTRA = "kit"
ABSENT = ("hypothesis", "numpy", "xdist", "deepspeed", "lightning", "ray", "transformers", "sphinx")
"""Modules of the test environment that the kit must not need (the ``test`` extra has them)."""


def wheel_requirements(wheel: Path, extra: str) -> list[Requirement]:
    """The ``Requires-Dist`` of ``wheel`` that apply with ``extra`` (the base requirements and the extra's)."""
    with zipfile.ZipFile(wheel) as archive:
        (metadata,) = (name for name in archive.namelist() if name.endswith(".dist-info/METADATA"))
        text = archive.read(metadata).decode()
    found = [
        Requirement(line.split(":", 1)[1].strip()) for line in text.splitlines() if line.startswith("Requires-Dist:")
    ]
    return [r for r in found if r.marker is None or r.marker.evaluate({"extra": extra})]


def closure(requirements: list[Requirement], extra: str) -> dict[str, importlib.metadata.Distribution]:
    """The installed distributions that ``requirements`` (of a distribution installed with ``extra``) need.

    Directly or through their own requirements; keyed by normalised name.
    """
    found: dict[str, importlib.metadata.Distribution] = {}
    pending = [(r, extra) for r in requirements]
    while pending:
        requirement, extra = pending.pop()
        if requirement.marker is not None and not requirement.marker.evaluate({"extra": extra}):
            continue
        name = canonicalize_name(requirement.name)
        extras = sorted(requirement.extras)
        if name in found and not extras:
            continue
        dist = found[name] = importlib.metadata.distribution(name)
        assert dist.version in requirement.specifier, f"{name} {dist.version} does not satisfy {requirement}"
        for line in dist.requires or []:
            pending += [(Requirement(line), wanted) for wanted in ("", *extras)]
    return found


def link_distributions(dists: dict[str, importlib.metadata.Distribution], site: Path) -> None:
    """Link each distribution's top-level files and directories (packages, modules, ``.dist-info``) into ``site``."""
    site.mkdir()
    for dist in dists.values():
        tops = {Path(str(f)).parts[0] for f in dist.files or [] if not str(f).startswith("..")}
        for top in tops - {"__pycache__"}:
            source = Path(str(dist.locate_file(top)))
            if source.exists() and not (site / top).exists():
                (site / top).symlink_to(source)


@pytest.fixture(scope="module")
def kit_python(tmp_path_factory: pytest.TempPathFactory, accelhal_wheel: Path) -> Path:
    root = tmp_path_factory.mktemp("kit")
    requirements = [r for r in wheel_requirements(accelhal_wheel, EXTRA) if canonicalize_name(r.name) != "accelhal"]
    dists = closure(requirements, EXTRA)
    link_distributions(dists, root / "site")
    run([sys.executable, "-m", "venv", "--without-pip", str(root / "venv")])
    python = root / "venv" / "bin" / "python"
    purelib = run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).stdout.strip()
    Path(purelib, "_kit_site.pth").write_text(f"{root / 'site'}\n")  # the closure only
    pip_install(python, accelhal_wheel)
    return python


def environment() -> dict[str, str]:
    """This environment without accelhal's variables, ``PYTHONPATH`` (the checkout) or colour."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("ACCELHAL_", "DS_ACC", "PYTHONPATH"))}
    return {**clean, "NO_COLOR": "1"}


def test_kit_extra_is_pytest_alone(accelhal_wheel: Path) -> None:
    extra = [r for r in wheel_requirements(accelhal_wheel, EXTRA) if r.marker is not None]
    assert [r.name for r in extra] == ["pytest"]


def test_the_venv_has_the_closure_and_nothing_else(kit_python: Path) -> None:
    checked = run([sys.executable, "-m", "pip", "--python", str(kit_python), "check"], env=environment())
    assert "No broken requirements found" in checked.stdout
    probe = f"import importlib.util as u; print([m for m in {ABSENT!r} if u.find_spec(m)])"
    assert run([str(kit_python), "-c", probe], env=environment()).stdout.strip() == "[]"


def test_accelhal_check_runs_the_kit(kit_python: Path) -> None:
    command = [str(kit_python.parent / "accelhal"), "check", "cpu"]
    result = run(command, env=environment(), cwd=kit_python.parent)
    row = re.search(r"^ cpu +\| (\d+) +\| (\d+) +\| (\d+) +\| (\d+) +\| 0$", result.stdout, re.M)
    assert row is not None, result.stdout
    passed, failed, _, errors = map(int, row.groups())
    assert passed > 100 and failed == 0 and errors == 0, result.stdout
