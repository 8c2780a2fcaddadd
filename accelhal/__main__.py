"""``python -m accelhal``: the same as the ``accelhal`` command."""

from accelhal.cli import console_main

console_main()
