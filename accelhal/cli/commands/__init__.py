"""One module per ``accelhal`` subcommand."""
