"""The exit statuses every ``accelhal`` command shares (``docs/reference/cli.md`` has the whole table)."""

USAGE_ERROR = 2
"""Exit status of a user mistake (as argparse uses for a bad command line)."""

FAILED = 1
"""Exit status when vendor or torch code raised where the command could not go on."""
