"""A runtime's wrong answer gets the same verdict from ``info``, ``doctor`` and ``check``: a problem named, status 1.

The active backend is a real plugin whose runtime answers ``device_count()`` with ``"eight"``,
or whose ``total_memory()`` raises. Each command names the call and what was wrong with its
answer, and exits non-zero. The reverse: a runtime that cannot answer its memory figures (the
member raises :class:`~accelhal.UnsupportedFeatureError`, the contract's "this backend has no
such feature") is no fault anywhere: ``info`` shows the memory as unknown, ``doctor`` finds
nothing, ``check`` skips the figures, and all exit 0.
"""

from __future__ import annotations

import pytest

from tests.cli.conftest import run_accelhal
from tests.conftest import InstallDistribution
from tests.plugin_sources import backend_plugin

FAULTS = {
    "wrong-type": (
        "def device_count(self):\n        return 'eight'",
        "device_count() answered 'eight' (a str), where an int is expected",
    ),
    "impossible-count": (  # a C count of -1 read as unsigned: describing each device would take hours
        "def device_count(self):\n        return 2**32 - 1",
        "device_count() answered 4294967295, where a number <= 65536 is expected",
    ),
    "raises": (
        "def total_memory(self, device_index=None):\n        raise RuntimeError('acme driver: memory query failed')",
        "total_memory(0) raised RuntimeError: acme driver: memory query failed",
    ),
}

NO_MEMORY = """def total_memory(self, device_index=None):
        from accelhal import UnsupportedFeatureError
        raise UnsupportedFeatureError("acmefault", "memory figures", "its allocator keeps none")

    def available_memory(self, device_index=None):
        return self.total_memory(device_index)"""


def install(install_distribution: InstallDistribution, class_body: str) -> dict[str, str]:
    """The plugin ``acmefault`` (priority 950, so the active backend) with ``class_body``; the command's env."""
    source = backend_plugin("acmefault", priority=950, class_body=class_body)
    site = install_distribution("acme-fault", {"acme_fault": source}, {"acmefault": "acme_fault"}).parent
    return {"PYTHONPATH": str(site)}


def flat(text: str) -> str:
    return " ".join(text.replace("|", " ").split())


@pytest.mark.parametrize("fault", FAULTS)
@pytest.mark.parametrize("command", [("info",), ("doctor",), ("check", "acmefault")], ids=" ".join)
def test_every_command_names_the_wrong_answer_and_fails(
    install_distribution: InstallDistribution, fault: str, command: tuple[str, ...]
) -> None:
    body, said = FAULTS[fault]
    result = run_accelhal(*command, env=install(install_distribution, body))
    assert result.returncode == 1, result.output
    assert "Traceback" not in result.output, result.output
    if command[0] == "check":  # the conformance test that asks the member fails
        assert "Failures" in result.stdout, result.output
    else:
        assert said in flat(result.output), result.output


@pytest.mark.parametrize("command", [("info",), ("doctor",), ("check", "acmefault")], ids=" ".join)
def test_memory_the_runtime_cannot_give_is_no_fault(
    install_distribution: InstallDistribution, command: tuple[str, ...]
) -> None:
    result = run_accelhal(*command, env=install(install_distribution, NO_MEMORY))
    assert result.returncode == 0, result.output
    if command[0] == "info":
        row = next(line for line in result.stdout.splitlines() if line.startswith(" cpu "))
        assert [cell.strip() for cell in row.split("|")][2:4] == ["unknown", "unknown"], result.stdout
        assert (
            run_accelhal("info", "--json", env=install(install_distribution, NO_MEMORY)).json()["accelerator"][
                "devices"
            ][0]["total_memory"]
            is None
        )
