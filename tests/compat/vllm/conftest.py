"""The vLLM bridge's tests run where vLLM is installed (``nox -s vllm``); elsewhere they are skipped."""

from __future__ import annotations

from importlib import util

collect_ignore_glob = [] if util.find_spec("vllm") else ["test_*.py"]
