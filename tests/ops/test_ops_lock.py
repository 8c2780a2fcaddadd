"""The build lock: a dead owner's lock is broken at once, a live one is waited for with a bound."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from accelhal.errors import BuildLockTimeoutError
from accelhal.ops import BuildLock
from accelhal.ops.lock import read_owner

HOLD = """
import sys, time
from accelhal.ops import BuildLock
BuildLock(sys.argv[1]).acquire()
print("held", flush=True)
time.sleep(3600)
"""


def _holder(path: Path) -> subprocess.Popen[str]:
    process = subprocess.Popen([sys.executable, "-c", HOLD, str(path)], stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None
    assert process.stdout.readline().strip() == "held"
    return process


def test_a_lock_of_a_killed_process_is_broken_at_once(tmp_path: Path) -> None:
    path = tmp_path / "accelhal.lock"
    holder = _holder(path)
    owner = read_owner(str(path))
    assert owner is not None and owner.pid == holder.pid
    holder.send_signal(signal.SIGKILL)  # not reaped yet: the owner is a zombie, which counts as dead
    lock = BuildLock(str(path), timeout=60, stale_after=3600)
    with lock:
        assert [o.pid for o in lock.broken] == [holder.pid]
        mine = read_owner(str(path))
        assert mine is not None and mine.pid == os.getpid()
    holder.wait()
    assert not path.exists()  # released


def test_a_live_owner_is_waited_for_within_the_bound_and_named(tmp_path: Path) -> None:
    path = tmp_path / "accelhal.lock"
    holder = _holder(path)
    try:
        with pytest.raises(BuildLockTimeoutError) as info:
            BuildLock(str(path), timeout=0.5, stale_after=3600).acquire()
        assert f"pid {holder.pid}" in str(info.value)
        assert "ACCELHAL_OPS_LOCK_TIMEOUT" in str(info.value)
    finally:
        holder.kill()
        holder.wait()


def _foreign_lock(path: Path, heartbeat_age: float) -> None:
    owner = {
        "pid": 1,
        "host": "some-other-host",
        "pid_namespace": "pid:[1]",
        "process_start": 0.0,
        "acquired": time.time() - heartbeat_age,
        "token": "feedface",
    }
    path.write_text(json.dumps(owner))
    past = time.time() - heartbeat_age
    os.utime(path, (past, past))


def test_a_lock_from_another_host_is_broken_once_its_heartbeat_is_older_than_the_bound(tmp_path: Path) -> None:
    path = tmp_path / "accelhal.lock"
    _foreign_lock(path, heartbeat_age=600)
    lock = BuildLock(str(path), timeout=60, stale_after=120)
    with lock:
        assert [o.host for o in lock.broken] == ["some-other-host"]


def test_a_lock_from_another_host_with_a_fresh_heartbeat_is_respected(tmp_path: Path) -> None:
    path = tmp_path / "accelhal.lock"
    _foreign_lock(path, heartbeat_age=1)
    with pytest.raises(BuildLockTimeoutError, match="some-other-host"):
        BuildLock(str(path), timeout=0.5, stale_after=120).acquire()


def test_the_holder_refreshes_its_heartbeat(tmp_path: Path) -> None:
    path = tmp_path / "accelhal.lock"
    with BuildLock(str(path), stale_after=0.2):
        past = time.time() - 100
        os.utime(path, (past, past))
        deadline = time.monotonic() + 30
        while os.stat(path).st_mtime == past and time.monotonic() < deadline:
            time.sleep(0.02)
        assert os.stat(path).st_mtime > past
