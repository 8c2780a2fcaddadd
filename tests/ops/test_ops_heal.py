"""A cached op build whose module is not the file that was built is built again, never loaded.

Before, a half-truncated module crashed the loading process with SIGBUS, a zero-patched one
with SIGSEGV, and a 0-byte one failed "does not import" on every later run. The build is
real (the tiny op of tiny_ops.py, about a second to compile); every load is a fresh process.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from ops_helpers import HERE, ninja_compiles, run_python

from accelhal.ops import cache

pytestmark = pytest.mark.slow


def truncate_half(module: Path, manifest: Path) -> None:
    module.write_bytes(module.read_bytes()[: module.stat().st_size // 2])


def zero_patch(module: Path, manifest: Path) -> None:
    data = bytearray(module.read_bytes())
    middle = len(data) // 2
    data[middle : middle + 4096] = bytes(min(4096, len(data) - middle))
    module.write_bytes(bytes(data))


def empty(module: Path, manifest: Path) -> None:
    module.write_bytes(b"")


def manifest_without_checksum(module: Path, manifest: Path) -> None:
    data = json.loads(manifest.read_text())
    del data["module_sha256"], data["module_size"]
    manifest.write_text(json.dumps(data))


DAMAGE: dict[str, Callable[[Path, Path], None]] = {
    "half-truncated": truncate_half,
    "zero-patched": zero_patch,
    "empty": empty,
    "older-manifest": manifest_without_checksum,
}


def load(env: dict[str, str]) -> tuple[int, dict[str, object], str]:
    result = run_python(str(HERE / "tiny_ops.py"), "load", env=env)
    answer = json.loads(result.stdout) if result.returncode == 0 else {}
    return result.returncode, answer, result.stderr


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    env = {"ACCELHAL_OPS_CACHE": str(tmp_path_factory.mktemp("heal-cache"))}
    status, answer, stderr = load(env)
    assert status == 0 and answer["answer"] == 42, stderr
    return env


@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_a_damaged_module_is_built_again_before_it_is_loaded(built: dict[str, str], damage: str) -> None:
    status, answer, stderr = load(built)  # healthy (the previous case healed it)
    assert status == 0, stderr
    module = Path(str(answer["file"]))
    directory = module.parent
    DAMAGE[damage](module, directory / cache.MANIFEST)

    status, answer, stderr = load(built)
    assert status == 0, stderr  # no SIGBUS (-7), no SIGSEGV (-11), no "does not import"
    assert answer["answer"] == 42
    assert f"the cached build of op 'accelhal_test_tiny' in {directory}" in stderr
    assert "building it again" in stderr
    assert ninja_compiles(directory) == 1  # compiled afresh, in a cleared directory
    manifest = json.loads((directory / cache.MANIFEST).read_text())
    assert manifest["module_sha256"] == cache.file_digest(module)
    status, _, stderr = load(built)
    assert status == 0 and "building it again" not in stderr  # healed for good


def test_a_module_that_matches_its_checksum_but_does_not_import_names_the_directory(
    built: dict[str, str],
) -> None:
    status, answer, stderr = load(built)
    assert status == 0, stderr
    module = Path(str(answer["file"]))
    manifest_path = module.parent / cache.MANIFEST
    module.write_bytes(b"not an ELF file")
    manifest = json.loads(manifest_path.read_text())
    manifest.update(module_size=module.stat().st_size, module_sha256=cache.file_digest(module))
    manifest_path.write_text(json.dumps(manifest))
    status, _, stderr = load(built)
    assert status != 0
    assert "does not import" in stderr and "delete the build directory" in stderr and str(module.parent) in stderr
    manifest_path.unlink()  # leave a cache the other cases can heal
