"""One owner per fact and per piece of state: identity from specs, agreement checked, selection's state restored."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

import accelhal
from accelhal.discovery import plugins
from accelhal.errors import PluginError
from accelhal.process.settings import Settings
from tests.conftest import InstallDistribution

MISMATCH_PLUGIN = """
    from accelhal import BackendSpec, Verdict, hookimpl
    from accelhal_backends.cpu.accelerator import CpuAccelerator

    class OtherAccelerator(CpuAccelerator):
        _name = "otherdev"

    class GlooAccelerator(CpuAccelerator):
        _name = "commdev"

    @hookimpl
    def accelhal_register_backends(register):
        register(BackendSpec(name="fakedev", device_type="cpu", priority=990, accelerator=OtherAccelerator,
                             probe=lambda: Verdict.available("always")))
        register(BackendSpec(name="commdev", device_type="cpu", priority=980, accelerator=GlooAccelerator,
                             probe=lambda: Verdict.available("always"), comm_backend="hccl"))
"""


def run(code: str, env: dict[str, str] | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    import os

    full_env = {k: v for k, v in os.environ.items() if not k.startswith(("ACCELHAL_", "DS_"))}
    full_env.update(env or {})
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, env=full_env, cwd=cwd
    )


def test_use_accelerator_leaves_get_accelerator_working_in_a_fresh_process() -> None:
    result = run(
        """
        import accelhal
        from accelhal.testing import use_accelerator
        with use_accelerator("cpu") as acc:
            assert accelhal.get_accelerator() is acc
        after = accelhal.get_accelerator()
        print(type(after).__name__, after.name)
        """
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["CpuAccelerator", "cpu"]


def test_accelerator_fixture_leaves_get_accelerator_working(tmp_path: Path) -> None:
    """The public fixture in a fresh pytest run with no reset of any kind between the tests."""
    (tmp_path / "test_fixture_then_plain.py").write_text(
        textwrap.dedent(
            """
            import accelhal

            def test_a_uses_the_fixture(accelerator):
                assert accelhal.get_accelerator() is accelerator

            def test_b_plain_code_afterwards():
                acc = accelhal.get_accelerator()
                assert acc is not None and acc.name == "cpu"
            """
        )
    )
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "2 passed" in result.stdout


def test_spec_and_class_that_disagree_are_invalid_with_both_values(
    install_distribution: Callable[..., Path],
) -> None:
    install_distribution("mismatch-accel", {"mismatch_accel": MISMATCH_PLUGIN}, {"mismatch": "mismatch_accel"})
    report = accelhal.detect()
    by_name = {c.name: c for c in report.candidates}
    assert report.chosen == "cpu"
    assert by_name["fakedev"].status.value == "invalid"
    assert "spec name is 'fakedev' but OtherAccelerator._name is 'otherdev'" in by_name["fakedev"].reason
    assert by_name["commdev"].status.value == "invalid"
    assert "spec comm_backend is 'hccl' but GlooAccelerator._communication_backend_name is 'gloo'" in (
        by_name["commdev"].reason
    )
    assert by_name["cpu"].status.value == "available"  # nothing else lost
    failures = {f.backend: f.detail for f in report.failures}
    assert "otherdev" in failures["fakedev"]


def test_spec_and_class_that_disagree_are_an_error_in_strict_mode(
    install_distribution: Callable[..., Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    install_distribution("mismatch-accel", {"mismatch_accel": MISMATCH_PLUGIN}, {"mismatch": "mismatch_accel"})
    monkeypatch.setenv("ACCELHAL_STRICT", "1")
    with pytest.raises(PluginError, match="spec name is 'fakedev' but OtherAccelerator._name is 'otherdev'"):
        accelhal.get_accelerator()


def test_conformance_kit_names_both_values(install_distribution: Callable[..., Path], tmp_path: Path) -> None:
    site = install_distribution("mismatch-accel", {"mismatch_accel": MISMATCH_PLUGIN}, {"mismatch": "mismatch_accel"})
    project = tmp_path / "project"
    project.mkdir()
    (project / "conftest.py").write_text(
        textwrap.dedent(
            """
            import pytest
            from mismatch_accel import OtherAccelerator

            @pytest.fixture
            def accelerator():
                return OtherAccelerator()
            """
        )
    )
    (project / "test_kit.py").write_text(
        "from accelhal.testing.conformance import ConformanceSuite\n\nclass TestKit(ConformanceSuite):\n    pass\n"
    )
    import os

    env = dict(os.environ, PYTHONPATH=str(site.parent))
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-k", "agrees_with_its_spec", str(project)],
        capture_output=True,
        text=True,
        cwd=project,
        env=env,
    )
    assert result.returncode == 1, result.stdout + result.stderr
    assert "spec name is 'fakedev' but OtherAccelerator._name is 'otherdev'" in result.stdout


def _device_module_specs() -> list[object]:
    registry = plugins.discover(Settings(disable_plugin_autoload=True))
    return [r.spec for r in registry.ordered() if r.spec.module]


@pytest.mark.parametrize("spec", _device_module_specs(), ids=lambda s: s.name)  # type: ignore[attr-defined]
def test_each_identity_fact_is_written_once_in_the_catalog(spec: object) -> None:
    """A built-in backend's identity facts are written once in the catalog (outside the other backends' entries).

    Its own package (``accelhal_backends/<name>/``, the accelerator class and probe) reads them from the spec.
    """
    import accelhal_backends.catalog as catalog
    from accelhal.contract.spec import BackendSpec

    assert isinstance(spec, BackendSpec)
    assert getattr(catalog, spec.name.upper()) is spec
    source = Path(catalog.__file__).read_text()
    own = source
    for name, other in vars(catalog).items():
        if isinstance(other, BackendSpec) and other is not spec:
            start = source.index(f"\n{name} = ")
            own = own.replace(source[start : source.index("\n)\n", start)], "")  # the declaration, to its ")"
    package = Path(catalog.__file__).parent / spec.name
    package_source = "".join(path.read_text() for path in package.glob("*.py"))
    # defaults are not written at all; a module that is its package is written once, as the package
    expected = {
        spec.comm_backend: int(spec.comm_backend != "gloo"),
        spec.module: int(spec.module != f"torch.{spec.name}"),
    }
    expected.update(dict.fromkeys(spec.visible_devices_envs, 1))
    for fact, times in expected.items():
        written = own.count(f'"{fact}"')
        assert written == times, f"{fact!r} is written {written} times for {spec.name} in the catalog, expected {times}"
        assert f'"{fact}"' not in package_source, f"{fact!r} is written again in {package}"


def test_report_environment_and_settings_list_every_variable_read() -> None:
    """Every variable accelhal/ or the built-in backends read is listed in accelhal.process.settings.

    A read is ``environ.get("X")``, ``environ["X"]``, ``.setdefault("X"``, ``.pop("X"``,
    ``"X" in environ``, ``getenv("X")``; a name an op builder's ``key_environment`` or a
    ``KEY_ENVIRONMENT`` tuple lists (its value enters the cache key); ``HOME`` where ``~`` is
    expanded. Each backend's visible-devices variables come from its spec, not from the list.
    """
    import ast
    import re

    import accelhal_backends
    from accelhal.process.settings import ALL_VARIABLES, RELEVANT_VARIABLES

    name = r"""["']([A-Z][A-Z0-9_]+)["']"""
    call = rf"""env(?:iron)?(?:\.get\(|\.setdefault\(|\.pop\(|\[)\s*{name}|getenv\(\s*{name}"""
    pattern = re.compile(rf"""{call}|{name}\s+(?:not\s+)?in\s+[\w.]*env(?:iron)?\b""")
    roots = [Path(accelhal.__file__).parent, Path(accelhal_backends.__file__).parent]
    read: set[str] = set()
    for path in (path for root in roots for path in root.rglob("*.py")):
        source = path.read_text()
        read.update(next(filter(None, groups)) for groups in pattern.findall(source))
        for node in ast.walk(ast.parse(source)):
            keys = isinstance(node, ast.FunctionDef) and node.name == "key_environment"
            if keys or (isinstance(node, ast.Assign) and "ENVIRON" in ast.unparse(node.targets[0])):
                strings = (c.value for c in ast.walk(node) if isinstance(c, ast.Constant) and isinstance(c.value, str))
                read.update(v for v in strings if re.fullmatch(r"[A-Z][A-Z0-9_]+", v))
        if re.search(r"expanduser\(|Path\.home\(", source):
            read.add("HOME")
    assert {"TMPDIR", "DS_ALLOW_DEPRECATED_FP16", "DS_BUILD_OPS", "NVCC_APPEND_FLAGS", "HOME"} <= read, "a read unseen"
    assert sorted(read - set(ALL_VARIABLES)) == []
    assert set(ALL_VARIABLES) - set(RELEVANT_VARIABLES) == {"HOME"}  # reports get pasted into issues
    assert json.dumps(list(ALL_VARIABLES))  # a plain list of names


REPORTED_ENVIRONMENT = """
import json, os
import accelhal
accelhal.get_accelerator()
os.environ["ACCELHAL_STRICT"] = "1"  # after the selection: the report shows the value it was made under
os.environ["CUDA_VISIBLE_DEVICES"] = "5"
print(json.dumps(accelhal.detect().model_dump(mode="json")["environment"]))
"""


def test_the_report_shows_the_variables_read_as_they_were_at_the_selection(tmp_path: Path) -> None:
    """In a fresh process: the variables accelhal reads and each backend's visible-devices variable; not HOME."""
    env = {"PATH": os.environ.get("PATH", ""), "HOME": "/home/someone", "UNRELATED_SECRET": "x"}
    cache = str(tmp_path / "cache")  # the entry-point cache is written there, not into a directory others share
    env |= {"ACCELHAL_STRICT": "0", "CUDA_VISIBLE_DEVICES": "0", "ZE_AFFINITY_MASK": "1", "XDG_CACHE_HOME": cache}
    done = subprocess.run([sys.executable, "-c", REPORTED_ENVIRONMENT], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {
        "ACCELHAL_STRICT": "0",
        "CUDA_VISIBLE_DEVICES": "0",
        "XDG_CACHE_HOME": cache,
        "ZE_AFFINITY_MASK": "1",
    }


SECRET_SPEC = """
from accelhal import BackendSpec, Verdict, hookimpl
from accelhal_backends.cpu.accelerator import CpuAccelerator

class Leaky(CpuAccelerator):
    _name = "leaky"

@hookimpl
def accelhal_register_backends(register):
    register(BackendSpec(name="leaky", device_type="cpu", priority=1, accelerator=Leaky,
                         probe=lambda: Verdict.no_device("none"),
                         visible_devices_envs=("API_TOKEN", "HOME", "LEAKY_VISIBLE_DEVICES")))
"""


def test_a_report_shows_a_specs_visible_devices_variable_only_where_it_holds_a_device_list(
    install_distribution: InstallDistribution,
) -> None:
    """A spec may name any variable (a token's, ``HOME``): the report shows a device list's value, no other."""
    site = install_distribution("acme-leaky", {"acme_leaky": SECRET_SPEC}, {"leaky": "acme_leaky"}).parent
    env = {"PATH": os.environ.get("PATH", ""), "PYTHONPATH": str(site), "HOME": "/home/someone"}
    env |= {"API_TOKEN": "ghp_secret123", "LEAKY_VISIBLE_DEVICES": "0,1"}
    code = "import json, accelhal; print(json.dumps(accelhal.detect().model_dump(mode='json')['environment']))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    shown = json.loads(done.stdout)
    assert shown["LEAKY_VISIBLE_DEVICES"] == "0,1"
    assert "ghp_secret123" not in done.stdout and "/home/someone" not in done.stdout
    assert shown["API_TOKEN"] == shown["HOME"] == "(set, but not a device list: not shown)"
