"""``import accelhal`` has no side effects: no torch, no heavy imports, no environment writes."""

from __future__ import annotations

import json
import os
import subprocess
import sys

PROBE = """
import json, os, sys
HEAVY = {'torch', 'pydantic', 'rich', 'pluggy', 'numpy', 'ray'}
before = dict(os.environ)
import accelhal
after = dict(os.environ)
print(json.dumps({
    "modules": sorted(m for m in sys.modules if m.split('.')[0] in HEAVY),
    "env_changed": sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k)),
    "version": accelhal.__version__,
}))
"""


def run_probe() -> dict[str, object]:
    out = subprocess.run([sys.executable, "-c", PROBE], check=True, capture_output=True, text=True, env=os.environ)
    result: dict[str, object] = json.loads(out.stdout)
    return result


def test_import_loads_no_torch_pydantic_rich_or_pluggy() -> None:
    result = run_probe()
    assert result["modules"] == []
    assert result["env_changed"] == []


def test_importtime_shows_no_torch() -> None:
    out = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", "import accelhal"], check=True, capture_output=True, text=True
    )
    imported = [line.rsplit("|", 1)[-1].strip() for line in out.stderr.splitlines() if "|" in line]
    assert "accelhal" in imported
    assert not [m for m in imported if m.split(".")[0] == "torch"]


def test_public_names_resolve_lazily() -> None:
    import accelhal

    for name in accelhal.__all__:
        assert getattr(accelhal, name) is not None, name
