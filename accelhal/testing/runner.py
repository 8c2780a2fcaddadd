"""``run_suite``: run the conformance suite on a backend through ``pytest.main``."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

SUITE_FILE = Path(__file__).with_name("conformance") / "run_all.py"
"""The module holding the concrete test class that :func:`run_suite` collects."""


def run_suite(backend: str | None = None, extra_args: Sequence[str] = ()) -> int:
    """Run the whole conformance suite on ``backend`` (``None``: the selected one); pytest's exit code.

    ``extra_args`` go to pytest as they are (``["-x", "-q"]``, ``["-k", "rng"]``).

    >>> run_suite("cpu", ["-q"])  # doctest: +SKIP
    0

    Raises:
        ModuleNotFoundError: pytest is not installed (the ``kit`` extra has it).
    """
    try:
        import pytest
    except ModuleNotFoundError as exc:
        from accelhal.extras import install_advice

        raise ModuleNotFoundError(
            "accelhal.testing.run_suite runs the conformance suite with pytest, which is not installed here; "
            f"install it with: {install_advice('kit')}",
            name="pytest",
        ) from exc

    args = ["-p", "no:cacheprovider", "--rootdir", str(SUITE_FILE.parent), str(SUITE_FILE)]
    if os.environ.get("PYTEST_DISABLE_PLUGIN_AUTOLOAD"):
        args[:0] = ["-p", "accelhal.testing.plugin"]
    if backend is not None:
        args.append(f"--accelhal-backend={backend}")
    return int(pytest.main([*args, *extra_args]))
