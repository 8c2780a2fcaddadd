"""``python -m benchmarks``: see :mod:`benchmarks.cli`."""

from benchmarks.cli import main

raise SystemExit(main())
