"""Bridges between accelhal and other frameworks' accelerator interfaces.

Each bridge is an optional extra and imports its framework only when used:
:mod:`accelhal.compat.deepspeed` (accelhal's ``deepspeed`` extra),
:mod:`accelhal.compat.lightning` (accelhal's ``lightning`` extra),
:mod:`accelhal.compat.ray` (accelhal's ``ray`` extra) and
:mod:`accelhal.compat.accelerate` (accelhal's ``accelerate`` extra).
"""
