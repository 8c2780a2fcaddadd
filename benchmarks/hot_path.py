"""The hot path: a cached ``get_accelerator()`` against the cheapest possible call.

Compared, interleaved in one process (ns per call):

* ``accelhal.get_accelerator()`` once the accelerator is chosen;
* ``read_global()``, a plain function that returns a module global: the floor for
  "a function that hands back a cached object";
* DeepSpeed 0.19.8's ``get_accelerator()`` once cached, when deepspeed is installed
  (importing it costs ~0.5 s on top of torch, and it is imported into this process).
"""

from __future__ import annotations

import importlib.util
from typing import Any

from benchmarks.method import Method, compare_statements
from benchmarks.results import SuiteResult, Target, fmt

_CACHED: Any = None


def read_global() -> Any:
    """Return a module global: what a cached lookup cannot beat."""
    return _CACHED


def run(method: Method) -> SuiteResult:
    """Time the three lookups and derive the two hot-path targets."""
    global _CACHED
    import accelhal

    _CACHED = accelhal.get_accelerator()
    ns: dict[str, Any] = {"get_accelerator": accelhal.get_accelerator, "read_global": read_global}
    statements = {"accelhal get_accelerator()": "get_accelerator()", "read_global()": "read_global()"}
    if importlib.util.find_spec("deepspeed") is not None:
        import logging

        from deepspeed.accelerator import get_accelerator as ds_get_accelerator

        logging.getLogger("DeepSpeed").setLevel(logging.ERROR)
        ds_get_accelerator()
        ns["ds_get_accelerator"] = ds_get_accelerator
        statements["DeepSpeed get_accelerator()"] = "ds_get_accelerator()"
    comparison = compare_statements(statements, ns, method)
    ours = "accelhal get_accelerator()"
    rows = [
        [name, fmt(s.median, "ns"), fmt(s.iqr, "ns"), fmt(comparison.ratio(ours, name).median, "x")]
        for name, s in comparison.samples.items()
    ]
    vs_global = comparison.ratio(ours, "read_global()")
    targets = [Target("cached get_accelerator() / module-global read", vs_global.median, 1.2, "x", vs_global.iqr)]
    if "DeepSpeed get_accelerator()" in statements:
        vs_ds = comparison.ratio(ours, "DeepSpeed get_accelerator()")
        targets.append(Target("cached get_accelerator() / DeepSpeed's", vs_ds.median, 1.0, "x", vs_ds.iqr))
    return SuiteResult(
        suite="hot_path",
        title="Hot path: cached get_accelerator() (ns per call)",
        headers=["call", "median", "IQR", "accelhal / this"],
        rows=rows,
        targets=targets,
        raw={name: s.summary() for name, s in comparison.samples.items()},
    )
