"""The checks behind ``accelhal doctor``, and discovery in a child process that survives what they find."""
