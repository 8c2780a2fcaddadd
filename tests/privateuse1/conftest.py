"""The test device is built once per session, in a child (loading it would make it this process's accelerator)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.privateuse1 import device
from tests.privateuse1.child import build_in_child


@pytest.fixture(scope="session", autouse=True)
def testdev_build() -> dict[str, Any]:
    """The cached (or freshly built) library: ``{"path", "built", "seconds"}``; a skip on a torch too old for it."""
    reason = device.unsupported()
    if reason is not None:
        pytest.skip(reason)
    return build_in_child()
