"""Where the first ``get_accelerator()`` after ``import torch`` spends its time, on this host.

Runs fresh interpreters with 1,000 extra distributions on ``sys.path`` (as ``benchmarks``
does) and prints: torch's own ``torch.cuda.device_count()``, twice in one process; the
accelhal modules the call imports, by their own import time (``-X importtime``); and a
profile of the call by own time. A diagnosis aid; the figures that count are
``python -m benchmarks``'s.

    python scripts/profile-first-call.py
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.discovery import make_distributions

QUERY_TWICE = """
import time, torch
for attempt in ("first", "second", "third"):
    t = time.perf_counter(); n = torch.cuda.device_count()
    print(f"torch.cuda.device_count() {attempt}: {(time.perf_counter() - t) * 1e3:.2f} ms ({n} devices)")
"""
PROFILED = """
import time, torch
torch.cuda.device_count()
wall, process, thread = time.perf_counter(), time.process_time(), time.thread_time()
T = [wall]
import accelhal.selection
T.append(time.perf_counter())
from accelhal.discovery import plugins
from accelhal.process import settings
plugins.registry(settings.Settings.from_environ())
T.append(time.perf_counter())
import accelhal.contract.class_checks
T.append(time.perf_counter())
accelhal.get_accelerator()
T.append(time.perf_counter())
phases = " + ".join("%.2f" % ((b - a) * 1e3) for a, b in zip(T, T[1:]))
print("first call: wall %.2f ms (%s: import selection + registry + import validation + the rest), "
      "process CPU %.2f ms, this thread's CPU %.2f ms" % ((T[-1] - wall) * 1e3, phases,
      (time.process_time() - process) * 1e3, (time.thread_time() - thread) * 1e3))
"""
CPROFILE = """
import sys, time, cProfile, pstats, torch
torch.cuda.device_count()
profile = cProfile.Profile(); profile.enable()
import accelhal; accelhal.get_accelerator()
profile.disable()
pstats.Stats(profile, stream=sys.stdout).sort_stats("tottime").print_stats(25)
pstats.Stats(profile, stream=sys.stdout).sort_stats("cumtime").print_stats(30)
"""
IMPORTS = "import torch; torch.cuda.device_count(); import accelhal; accelhal.get_accelerator()"


def child(site: Path, code: str, *flags: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")])))
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return subprocess.run([sys.executable, *flags, "-c", code], env=env, capture_output=True, text=True, timeout=300)


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="accelhal-profile-") as tmp:
        site = make_distributions(Path(tmp) / "site-packages")
        print(child(site, QUERY_TWICE).stdout)
        for _ in range(8):
            print(child(site, PROFILED).stdout.strip())
        lines = child(site, IMPORTS, "-X", "importtime").stderr.splitlines()
        after = lines[next(i for i, line in enumerate(lines) if line.rstrip().endswith("| torch")) + 1 :]
        own = sorted(
            ((int(line.split("|")[0].split(":")[1]), line.split("|")[2].strip()) for line in after if "|" in line),
            reverse=True,
        )
        print(f"modules imported by the call: {len(own)}, own import time {sum(us for us, _ in own) / 1e3:.2f} ms")
        for microseconds, name in own[:25]:
            print(f"  {microseconds:6d} us  {name}")
        print(child(site, CPROFILE).stdout)


if __name__ == "__main__":
    main()
