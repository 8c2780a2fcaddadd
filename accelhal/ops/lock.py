"""Serialise the builds of one op across processes with a lock a killed builder cannot leave behind.

:class:`BuildLock` is a lock file that a waiter breaks when its owner is gone (on this machine)
or its heartbeat is stale (anywhere); the wait is bounded by ``timeout``. Works across hosts
sharing the cache directory, NFS included.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import secrets
import socket
import threading
import time
from dataclasses import asdict, dataclass
from types import TracebackType

from accelhal.errors import BuildLockTimeoutError
from accelhal.process.settings import SECONDS_DEFAULTS

logger = logging.getLogger("accelhal.ops")

BREAKER_STALE_SECONDS = 30.0
"""A ``.break`` file is held for milliseconds; one older than this was left by a killed waiter."""


def _pid_namespace() -> str:
    try:
        return os.readlink("/proc/self/ns/pid")
    except OSError:
        return ""


def _process_start(pid: int) -> float | None:
    """Return when process ``pid`` started (psutil's create time), or ``None`` if unknown."""
    try:
        import psutil

        return float(psutil.Process(pid).create_time())
    except Exception:  # no such process, no permission, or no psutil: not known
        return None


@dataclass(frozen=True)
class LockOwner:
    """Who holds a build lock, as written in the lock file."""

    pid: int
    host: str
    pid_namespace: str
    process_start: float | None
    acquired: float
    token: str

    @classmethod
    def current(cls) -> LockOwner:
        """Return an owner record for this process, with a fresh token."""
        pid = os.getpid()
        return cls(
            pid=pid,
            host=socket.gethostname(),
            pid_namespace=_pid_namespace(),
            process_start=_process_start(pid),
            acquired=time.time(),
            token=secrets.token_hex(8),
        )

    def describe(self) -> str:
        """Return ``"pid 123 on host h since 2026-01-01 12:00:00 UTC"``."""
        since = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(self.acquired))
        return f"pid {self.pid} on host {self.host!r} since {since}"

    def is_local(self) -> bool:
        """Return whether the owner's pid is meaningful here (same host and pid namespace)."""
        return self.host == socket.gethostname() and self.pid_namespace == _pid_namespace()

    def is_dead(self) -> bool:
        """Return whether a local owner's process is gone, a zombie, or its pid reused; False if not local."""
        if not self.is_local():
            return False
        try:
            import psutil
        except ImportError:  # psutil is a dependency; without it, only "gone" can be told
            try:
                os.kill(self.pid, 0)
            except ProcessLookupError:
                return True
            except PermissionError:
                return False
            return False
        try:
            process = psutil.Process(self.pid)
            if process.status() == psutil.STATUS_ZOMBIE:
                return True
            started = process.create_time()
        except psutil.NoSuchProcess:  # includes ZombieProcess
            return True
        except psutil.Error:  # access denied: the process exists
            return False
        return self.process_start is not None and abs(started - self.process_start) > 1.0


def read_owner(path: str) -> LockOwner | None:
    """Return the owner recorded in lock file ``path``, or ``None`` if there is none or it is unreadable."""
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
        return LockOwner(**data)
    except (OSError, ValueError, TypeError):
        return None


class BuildLock:
    """An inter-process lock on ``path`` with dead-owner detection and a bounded wait.

    A waiter breaks the lock when its owner is on this machine (same host and pid namespace)
    and its process is gone, a zombie or a different process under the same pid, or when the
    owner's heartbeat (the file's mtime, refreshed by a daemon thread while the lock is held)
    is older than ``stale_after``. Past ``timeout``, :meth:`acquire` raises
    :class:`~accelhal.errors.BuildLockTimeoutError` naming the owner.

    Example::

        with BuildLock("/cache/op-1234/accelhal.lock", timeout=600):
            ...  # build; no other process holding this lock path runs this at the same time

    Args:
        path: the lock file (its directory must exist).
        timeout: the longest :meth:`acquire` waits, in seconds.
        stale_after: a lock whose heartbeat is older than this is broken, in seconds.
        poll: seconds between attempts while waiting.
    """

    def __init__(
        self,
        path: str,
        *,
        timeout: float = SECONDS_DEFAULTS["ACCELHAL_OPS_LOCK_TIMEOUT"],
        stale_after: float = SECONDS_DEFAULTS["ACCELHAL_OPS_LOCK_STALE"],
        poll: float = 0.1,
    ) -> None:
        self.path = path
        self.timeout = timeout
        self.stale_after = stale_after
        self.poll = poll
        self.owner: LockOwner | None = None
        self.broken: list[LockOwner] = []
        """The stale owners this lock broke while acquiring (for logs and tests)."""
        self._stop = threading.Event()
        self._heartbeat: threading.Thread | None = None

    # ------------------------------------------------------------------ acquiring
    def acquire(self) -> None:
        """Take the lock, breaking a stale one; raise ``BuildLockTimeoutError`` past ``timeout``."""
        me = LockOwner.current()
        started = time.monotonic()
        while True:
            if self._try_create(me):
                self.owner = me
                self._start_heartbeat()
                return
            holder = read_owner(self.path)
            stale = self._is_stale(holder)
            if stale:
                self._break(holder)
            waited = time.monotonic() - started
            if waited >= self.timeout:
                who = holder.describe() if holder else "an unknown owner"
                raise BuildLockTimeoutError(self.path, who, waited)
            if not stale:
                time.sleep(self.poll)

    def _try_create(self, me: LockOwner) -> bool:
        private = f"{self.path}.{me.token}.tmp"  # a random token: a name no one plants a link at; created new
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
        with os.fdopen(os.open(private, flags, 0o666), "w", encoding="utf-8") as handle:
            json.dump(asdict(me), handle)
        try:
            os.link(private, self.path)
            return True
        except FileExistsError:
            return False
        finally:
            with contextlib.suppress(OSError):
                os.unlink(private)

    def _heartbeat_age(self) -> float | None:
        try:
            return time.time() - os.stat(self.path).st_mtime
        except OSError:
            return None

    def _is_stale(self, holder: LockOwner | None) -> bool:
        age = self._heartbeat_age()
        if age is None:  # released between our attempt and now: just retry
            return False
        if holder is not None and holder.is_dead():
            return True
        # an unreadable lock file cannot come from _try_create (it links a complete file); treat like any other
        return age > self.stale_after

    def _break(self, seen: LockOwner | None) -> None:
        """Remove the lock if it is still the stale one we saw, under the breaker lock."""
        breaker = f"{self.path}.break"
        try:
            fd = os.open(breaker, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            with contextlib.suppress(OSError):
                if time.time() - os.stat(breaker).st_mtime > BREAKER_STALE_SECONDS:
                    os.unlink(breaker)
            time.sleep(self.poll)
            return
        try:
            current = read_owner(self.path)
            same = (current is None and seen is None) or (
                current is not None and seen is not None and current.token == seen.token
            )
            if same and self._is_stale(current):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(self.path)
                if seen is not None:
                    self.broken.append(seen)
                logger.warning(
                    "accelhal: broke the stale build lock %s held by %s",
                    self.path,
                    seen.describe() if seen else "an unknown owner",
                )
        finally:
            os.close(fd)
            with contextlib.suppress(OSError):
                os.unlink(breaker)

    # ------------------------------------------------------------------ holding
    def _start_heartbeat(self) -> None:
        self._stop.clear()
        interval = max(min(self.stale_after / 4.0, 10.0), 0.05)
        self._heartbeat = threading.Thread(target=self._beat, args=(interval,), daemon=True, name="accelhal-lock")
        self._heartbeat.start()

    def _beat(self, interval: float) -> None:
        while not self._stop.wait(interval):
            if not self._still_mine():
                logger.warning("accelhal: the build lock %s was broken by another process", self.path)
                return
            with contextlib.suppress(OSError):
                os.utime(self.path)

    def _still_mine(self) -> bool:
        current = read_owner(self.path)
        return current is not None and self.owner is not None and current.token == self.owner.token

    def release(self) -> None:
        """Give the lock up (removing the file only if it is still ours)."""
        self._stop.set()
        if self._heartbeat is not None:
            self._heartbeat.join()
            self._heartbeat = None
        if self._still_mine():
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.path)
        self.owner = None

    def __enter__(self) -> BuildLock:
        self.acquire()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.release()
