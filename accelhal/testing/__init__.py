"""Test helpers for accelhal and for backend authors: simulated vendor runtimes and recorded surfaces."""
