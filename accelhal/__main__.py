"""``python -m accelhal``: the same as the ``accelhal`` command."""

from accelhal.cli import main

raise SystemExit(main())
