"""A forced backend does not import plugins that cannot concern it (once accelhal has seen what they register).

Each run is a fresh process with its own cache directory; a plugin counts its imports in
a marker file, so the tests assert which processes imported it, never how long they took.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.cli.conftest import run_accelhal
from tests.conftest import InstallDistribution
from tests.plugin_sources import backend_plugin

COUNTING = """
import os, time
with open(os.environ["ACME_MARKER"], "a") as marker:
    marker.write("imported\\n")
time.sleep(0.2)  # a slow plugin, in miniature
"""

OP_BUILDERS = """
@hookimpl
def accelhal_register_op_builders(register):
    pass
"""

REPORT = """
import json, sys, accelhal
if len(sys.argv) > 1:
    accelhal.get_accelerator()
    accelhal.set_accelerator(sys.argv[1])
report = accelhal.detect()
print(json.dumps({"chosen": report.chosen, "error": report.error,
                  "plugins": {p.name: [p.state, p.detail] for p in report.plugins}}))
"""


@pytest.fixture
def env(install_distribution: InstallDistribution, tmp_path: Path) -> dict[str, str]:
    source = backend_plugin("acmeslow", priority=50, module_prelude=COUNTING)
    install_distribution("acme-slow", {"acme_slow": source}, {"acmeslow": "acme_slow"})
    site = install_distribution(
        "acme-ops",
        {"acme_ops": COUNTING.replace("imported", "ops") + "from accelhal import hookimpl\n" + OP_BUILDERS},
        {"acmeops": "acme_ops"},
    )
    return {
        "PYTHONPATH": str(site.parent),
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
        "ACME_MARKER": str(tmp_path / "marker"),
    }


def imports(env: dict[str, str]) -> tuple[int, int]:
    """How many processes imported (acme_slow, acme_ops) so far."""
    path = Path(env["ACME_MARKER"])
    lines = path.read_text().splitlines() if path.exists() else []
    return lines.count("imported"), lines.count("ops")


def report(env: dict[str, str], *args: str, **extra: str) -> dict[str, Any]:
    result = run_accelhal(*args, code=REPORT, env={**env, **extra}, code_after_torch=True)
    assert result.returncode == 0, result.output
    data: dict[str, Any] = json.loads(result.stdout)
    return data


def test_a_plugin_that_registered_another_name_is_not_imported_when_a_backend_is_forced(env: dict[str, str]) -> None:
    first = report(env, ACCELHAL_ACCELERATOR="cpu")
    assert first["chosen"] == "cpu" and first["plugins"]["acmeslow"][0] == "loaded"  # not known yet
    assert imports(env) == (1, 1)
    second = report(env, ACCELHAL_ACCELERATOR="cpu")
    assert second["chosen"] == "cpu"
    state, detail = second["plugins"]["acmeslow"]
    assert state == "deferred"
    assert "ACCELHAL_ACCELERATOR forces 'cpu'" in detail and "'acmeslow'" in detail
    assert second["plugins"]["acmeops"][0] == "loaded"  # it contributes op builders: always imported
    assert imports(env) == (1, 2)
    assert report(env, DS_ACCELERATOR="cpu")["plugins"]["acmeslow"][0] == "deferred"
    assert imports(env) == (1, 3)
    unforced = report(env)
    assert unforced["chosen"] == "cpu" and unforced["plugins"]["acmeslow"][0] == "loaded"
    assert imports(env) == (2, 4)


def test_forcing_the_plugins_own_backend_imports_it(env: dict[str, str]) -> None:
    report(env)
    assert report(env, ACCELHAL_ACCELERATOR="acmeslow")["chosen"] == "acmeslow"
    assert imports(env)[0] == 2


def test_set_accelerator_of_a_deferred_plugins_backend_imports_it(env: dict[str, str]) -> None:
    report(env)
    data = report(env, "acmeslow", ACCELHAL_ACCELERATOR="cpu")
    assert data["chosen"] == "acmeslow"
    assert imports(env)[0] == 2


def test_editing_the_plugin_makes_its_entry_stale(env: dict[str, str]) -> None:
    report(env)
    module = Path(env["PYTHONPATH"], "acme_slow.py")
    module.write_text(module.read_text() + "# edited\n")
    assert report(env, ACCELHAL_ACCELERATOR="cpu")["plugins"]["acmeslow"][0] == "loaded"
    assert imports(env)[0] == 2


def test_strict_mode_imports_every_plugin(env: dict[str, str]) -> None:
    report(env)
    assert report(env, ACCELHAL_ACCELERATOR="cpu", ACCELHAL_STRICT="1")["plugins"]["acmeslow"][0] == "loaded"
    assert imports(env)[0] == 2


def index_file(env: dict[str, str]) -> Path:
    return Path(env["XDG_CACHE_HOME"], "accelhal", "plugin-registrations.json")


def test_an_index_that_lies_about_a_plugin_cannot_hide_its_backend(env: dict[str, str]) -> None:
    """The entry says acme_slow registers nothing; forcing its backend still finds it."""
    report(env)
    path = index_file(env)
    data = json.loads(path.read_text())
    (key,) = [k for k in data["entries"] if "acmeslow" in k]
    data["entries"][key]["backends"] = []
    path.write_text(json.dumps(data))
    forced = report(env, ACCELHAL_ACCELERATOR="acmeslow")
    assert forced["chosen"] == "acmeslow" and forced["error"] is None
    assert json.loads(path.read_text())["entries"][key]["backends"] == ["acmeslow"]  # and the entry is healed


@pytest.mark.parametrize("damage", ["{not json", '{"format": 1, "entries": {"x": 1}}', '{"format": 1, "entries": []}'])
def test_a_damaged_index_is_ignored_and_rewritten(env: dict[str, str], damage: str) -> None:
    path = index_file(env)
    path.parent.mkdir(parents=True)
    path.write_text(damage)
    assert report(env, ACCELHAL_ACCELERATOR="cpu")["chosen"] == "cpu"
    assert "acmeslow" in path.read_text()
    assert report(env, ACCELHAL_ACCELERATOR="cpu")["plugins"]["acmeslow"][0] == "deferred"


def test_explain_names_a_deferred_plugins_backend(env: dict[str, str]) -> None:
    report(env)
    result = run_accelhal("explain", "acmeslow", "--json", env={**env, "ACCELHAL_ACCELERATOR": "cpu"})
    assert result.returncode == 0, result.output
    assert result.json()["outcome"] == "not-probed"
