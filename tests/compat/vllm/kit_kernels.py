"""Stands for a vendor's kernel module: importing it is what registers kernels (here: it says it was imported)."""

import os

os.environ["ACCELHAL_TEST_KIT_KERNELS_IMPORTED"] = "1"
