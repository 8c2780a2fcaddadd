"""Device and plugin calls the command bounds in time and contains: deadlines, faults, the suite's progress."""
