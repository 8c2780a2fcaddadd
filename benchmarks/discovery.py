"""Plugin discovery as the environment grows: selection after ``import torch`` with 1,000 extra distributions.

The extra distributions are real ``*.dist-info`` directories (``METADATA``, and for a
third of them an ``entry_points.txt`` with other groups: console scripts, pytest
plugins) in a temporary directory put on ``sys.path`` ahead of site-packages, as
``PYTHONPATH`` would. The last row gives every process an empty entry-point cache
(:mod:`accelhal.discovery.entry_points`): the first process after an installation. Each figure
is measured inside a fresh process: the milliseconds of CPU time (wall time beside it)
from after ``import torch`` to the return of the first ``get_accelerator()``.

One row is not accelhal's: ``torch.cuda.device_count()`` alone, timed the same way. It is
the query the cuda probe makes (on a machine with an NVIDIA driver, an NVML
initialisation that takes 10-17 ms on the H100 host), a cost any program that asks torch
whether it has a GPU pays. The target is what the first ``get_accelerator()`` costs beyond
it (limit 10 ms), measured inside each process: the child asks ``torch.cuda.device_count()``
itself before the clock starts, then selects. Whatever a second query costs (torch does not
cache the count before CUDA is initialised) stays in the figure, so it is an upper bound of
accelhal's own cost; the whole call and the paired difference of the two separate rows are
in the target's note.
"""

from __future__ import annotations

import json
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from benchmarks.method import Method, compare_processes, python
from benchmarks.results import SuiteResult, Target, clock_rows, fmt

EXTRA_DISTRIBUTIONS = 1000

CHILD = """
import os, sys, time
{prelude}
import torch
{before}
started, started_cpu = time.perf_counter(), time.process_time()
{measured}
print((time.process_time() - started_cpu) * 1e3, (time.perf_counter() - started) * 1e3)
"""
SELECT = "import accelhal; accelhal.get_accelerator()"
DEVICE_QUERY = "torch.cuda.device_count()"
GROWN = f"+{EXTRA_DISTRIBUTIONS:,} distributions"
FORCED = f"+{EXTRA_DISTRIBUTIONS:,} distributions, ACCELHAL_ACCELERATOR=cpu"
QUERY = f"+{EXTRA_DISTRIBUTIONS:,} distributions, torch.cuda.device_count() alone (torch, not accelhal)"
BEYOND = f"+{EXTRA_DISTRIBUTIONS:,} distributions, after the process asked torch.cuda.device_count()"
SCAN = f"+{EXTRA_DISTRIBUTIONS:,} distributions, importlib.metadata.entry_points(group='accelhal') alone (stdlib)"
SCAN_CODE = "import importlib.metadata; importlib.metadata.entry_points(group='accelhal')"
LIMIT_MS = 10.0
"""The first ``get_accelerator()`` beyond torch's own device query, on every host."""
FILES_LIMIT = 12
"""Core files (``accelhal/``) the first ``get_accelerator()`` runs code in, package ``__init__`` files included."""
CROSSING_LIMIT = 250
"""Calls from one project file into another during the first ``get_accelerator()``."""
FOOTPRINT = """
import importlib.util, json, os, sys
import accelhal
core = os.path.dirname(os.path.abspath(accelhal.__file__))
project = os.path.dirname(core)
backends = importlib.util.find_spec("accelhal_backends").submodule_search_locations[0]  # not imported yet
packages = (core + os.sep, os.path.abspath(backends) + os.sep)
files, crossing = set(), [0]
def ours(path):  # accelhal's two packages, not what else lies under the project (a venv, installed wheels)
    return path.startswith(packages)
def profile(frame, event, arg):
    path = frame.f_code.co_filename
    if event != "call" or not ours(path):
        return
    if path.startswith(core + os.sep):
        files.add(os.path.relpath(path, project))
    caller = frame.f_back
    while caller is not None and not ours(caller.f_code.co_filename):
        caller = caller.f_back
    crossing[0] += caller is not None and caller.f_code.co_filename != path
sys.setprofile(profile)
accelhal.get_accelerator()
sys.setprofile(None)
print(json.dumps({"files": sorted(files), "crossing": crossing[0]}))
"""
"""Counts, with ``sys.setprofile`` in a fresh process, the core files the first call runs code in and its calls
between project files (a call into a module's body on import counts as one)."""
PLUGINS = 10
"""Third-party plugins in the rows that show what the plugin index saves, each costing :data:`PLUGIN_IMPORT_MS`."""
PLUGIN_IMPORT_MS = 3.0
"""CPU milliseconds each of those plugins spends on its import (a vendor's runtime is often far more)."""
PLUGIN_MODULE = """
import time
_end = time.process_time() + {seconds}
while time.process_time() < _end:
    pass
from accelhal import BackendSpec, Verdict, hookimpl

@hookimpl
def accelhal_register_backends(register):
    register(BackendSpec(name="{name}", device_type="{name}", priority=10, probe=lambda: Verdict.no_device("none"),
                         accelerator="{module}:Missing"))
"""
INDEXED = f"+1,000 distributions, {PLUGINS} plugins, ACCELHAL_ACCELERATOR=cpu (their registrations indexed)"
UNINDEXED = f"+1,000 distributions, {PLUGINS} plugins, ACCELHAL_ACCELERATOR=cpu (plugin index removed)"
SCAN_RATIO_LIMIT = 0.08
"""The first ``get_accelerator()``'s CPU time over one stdlib scan of the entry-point group (what pluggy and vLLM
pay on every start), both with the extra distributions installed."""


def make_distributions(site: Path, count: int = EXTRA_DISTRIBUTIONS) -> Path:
    """Lay out ``count`` installed-looking distributions under ``site``."""
    site.mkdir(parents=True, exist_ok=True)
    for i in range(count):
        name = f"bench-dist-{i:04d}"
        info = site / f"bench_dist_{i:04d}-1.{i % 7}.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.{i % 7}\nSummary: filler\n")
        (info / "RECORD").write_text("")
        if i % 3 == 0:
            (info / "entry_points.txt").write_text(
                f"[console_scripts]\nbench-{i} = bench_dist_{i:04d}.cli:main\n\n"
                f"[pytest11]\nbench_{i} = bench_dist_{i:04d}.plugin\n"
            )
    return site


def make_plugins(site: Path, count: int = PLUGINS) -> Path:
    """Lay out ``count`` third-party accelhal plugins under ``site``, each spending :data:`PLUGIN_IMPORT_MS`."""
    site.mkdir(parents=True, exist_ok=True)
    for i in range(count):
        module = f"bench_plugin_{i:02d}"
        (site / f"{module}.py").write_text(
            PLUGIN_MODULE.format(seconds=PLUGIN_IMPORT_MS / 1e3, name=f"benchdev{i:02d}", module=module)
        )
        info = site / f"{module}-1.0.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {module}\nVersion: 1.0\n")
        (info / "RECORD").write_text("")
        (info / "entry_points.txt").write_text(f"[accelhal]\nbenchdev{i:02d} = {module}\n")
    return site


def first_call_footprint() -> dict[str, Any]:
    """What :data:`FOOTPRINT` prints: the core files the first call runs code in, and its crossing calls."""
    out = subprocess.run(python(FOOTPRINT), check=True, capture_output=True, text=True).stdout
    return dict(json.loads(out.splitlines()[-1]))


def run(method: Method) -> SuiteResult:
    """Selection after ``import torch``: plain environment, +1,000 distributions, and with an override."""
    with tempfile.TemporaryDirectory(prefix="accelhal-bench-") as tmp:
        site = make_distributions(Path(tmp) / "site-packages")
        grown = f"sys.path.insert(1, {str(site)!r})"
        forced = grown + "\nos.environ['ACCELHAL_ACCELERATOR'] = 'cpu'"
        cold = grown + "\nimport tempfile\nos.environ['XDG_CACHE_HOME'] = tempfile.mkdtemp()"
        plugins = make_plugins(Path(tmp) / "plugins")
        cache = Path(tmp) / "plugin-cache"
        index = cache / "accelhal" / "plugin-registrations.json"
        with_plugins = (
            f"{grown}\nsys.path.insert(1, {str(plugins)!r})\nos.environ['XDG_CACHE_HOME'] = {str(cache)!r}"
            "\nos.environ['ACCELHAL_ACCELERATOR'] = 'cpu'"
        )
        unindexed = (
            with_plugins
            + f"\nimport contextlib\nwith contextlib.suppress(FileNotFoundError): os.remove({str(index)!r})"
        )
        commands = {
            "installed environment": python(CHILD.format(prelude="", before="", measured=SELECT)),
            GROWN: python(CHILD.format(prelude=grown, before="", measured=SELECT)),
            BEYOND: python(CHILD.format(prelude=grown, before=DEVICE_QUERY, measured=SELECT)),
            FORCED: python(CHILD.format(prelude=forced, before="", measured=SELECT)),
            f"+{EXTRA_DISTRIBUTIONS:,} distributions, empty entry-point cache": python(
                CHILD.format(prelude=cold, before="", measured=SELECT)
            ),
            QUERY: python(CHILD.format(prelude=grown, before="", measured=DEVICE_QUERY)),
            SCAN: python(CHILD.format(prelude=grown, before="", measured=SCAN_CODE)),
            INDEXED: python(CHILD.format(prelude=with_plugins, before="", measured=SELECT)),
            UNINDEXED: python(CHILD.format(prelude=unindexed, before="", measured=SELECT)),
        }
        clocks = compare_processes(commands, method, reported=True)
    comparison = clocks["cpu"]
    base = comparison.samples["installed environment"].median
    rows = [
        [*row[:3], "n/a (not accelhal's)" if row[0] in (QUERY, SCAN) else row[3], *row[4:]]
        for row in clock_rows(clocks, lambda ms: fmt(ms - base, "ms"))
    ]
    grown_sample, forced_sample = comparison.samples[GROWN], comparison.samples[FORCED]
    beyond_sample, query_sample = comparison.samples[BEYOND], comparison.samples[QUERY]
    paired = comparison.difference(GROWN, QUERY)
    scan_sample = comparison.samples[SCAN]
    footprint = first_call_footprint()
    return SuiteResult(
        suite="discovery",
        title="Plugin discovery: first get_accelerator() after import torch (measured in fresh processes)",
        headers=["environment", "CPU median", "IQR", "vs installed", "wall median", "IQR"],
        rows=rows,
        targets=[
            Target(
                f"first get_accelerator() beyond torch's own device query, +{EXTRA_DISTRIBUTIONS:,} distributions",
                beyond_sample.median,
                LIMIT_MS,
                "ms",
                beyond_sample.iqr,
                note=(
                    f"in each process, after torch.cuda.device_count(); the whole call: {grown_sample.median:.1f} ms, "
                    f"torch.cuda.device_count() alone: {query_sample.median:.1f} ms, the whole call less it, paired: "
                    f"{paired.median:.1f} ms"
                ),
            ),
            Target(
                f"same, ACCELHAL_ACCELERATOR=cpu (no device query), +{EXTRA_DISTRIBUTIONS:,} distributions",
                forced_sample.median,
                LIMIT_MS,
                "ms",
                forced_sample.iqr,
            ),
            Target(
                f"first get_accelerator() over one stdlib entry-point scan, +{EXTRA_DISTRIBUTIONS:,} distributions",
                grown_sample.median / scan_sample.median,
                SCAN_RATIO_LIMIT,
                "x",
                note=f"first get_accelerator(): {grown_sample.median:.2f} ms; the scan: {scan_sample.median:.2f} ms",
            ),
            Target(
                "core files the first get_accelerator() runs code in (sys.setprofile)",
                len(footprint["files"]),
                FILES_LIMIT,
                "files",
                note=", ".join(path.removeprefix("accelhal/") for path in footprint["files"]),
            ),
            Target(
                "calls between project files during the first get_accelerator() (sys.setprofile)",
                footprint["crossing"],
                CROSSING_LIMIT,
                "calls",
            ),
        ],
        raw={clock: {name: s.summary() for name, s in c.samples.items()} for clock, c in clocks.items()},
    )
