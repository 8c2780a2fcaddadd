"""The process accelhal runs in: its variables, torch's import, vendor output, steps, helper processes, cache files."""
