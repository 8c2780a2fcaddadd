"""accelhal's benchmark suite: ``python -m benchmarks`` (or ``nox -s bench``).

Suites: ``hot_path`` (cached ``get_accelerator()``), ``members`` (the 20 most-used
contract members against direct torch), ``startup`` (fresh-process import and first
selection), ``discovery`` (selection with 1,000 extra installed distributions) and, with
``--gpu``, ``gpu`` (members on cuda, a training loop, graph capture and replay). The
method is pinned in :mod:`benchmarks.method`; ``RESULTS.md`` is regenerated from a CPU run.
"""
