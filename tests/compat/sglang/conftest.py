"""The SGLang bridge's tests run where SGLang is installed (``nox -s sglang``); elsewhere they are skipped."""

from __future__ import annotations

from importlib import util

collect_ignore_glob = [] if util.find_spec("sglang") else ["test_*.py"]
