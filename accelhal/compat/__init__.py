"""Bridges between accelhal and other frameworks' accelerator interfaces.

Each bridge is an optional extra and imports its framework only when used:
:mod:`accelhal.compat.deepspeed` (``pip install 'accelhal[deepspeed]'``),
:mod:`accelhal.compat.lightning` (``pip install 'accelhal[lightning]'``),
:mod:`accelhal.compat.ray` (``pip install 'accelhal[ray]'``) and
:mod:`accelhal.compat.accelerate` (``pip install 'accelhal[accelerate]'``).
"""
