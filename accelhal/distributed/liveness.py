"""Tell which ranks of the default group are gone, from one heartbeat per rank in the rendezvous store.

:func:`~accelhal.distributed.init_process_group` starts this rank's heartbeat, a daemon thread,
in a group of two or more ranks with a TCP store; :func:`check_lost_ranks` names the ranks
whose heartbeat stopped (``docs/clusters.md``, "A lost rank").
"""

from __future__ import annotations

import contextlib
import logging
import socket
import threading
import time
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING

from accelhal.errors import RankLostError

if TYPE_CHECKING:
    from torch._C._distributed_c10d import TCPStore

logger = logging.getLogger("accelhal.distributed")

HEARTBEAT_SECONDS = 1.0
"""How often each rank's heartbeat adds to its count."""

LOST_AFTER_SECONDS = 3.0
"""A rank whose count has not moved for this long is lost; also the timeout of the heartbeat's store calls."""


PREFIX = "accelhal"
"""The first part of the heartbeat's keys in the store (``accelhal/beat/<rank>``, ``accelhal/lost`` ...)."""

_STOPPED = f"its heartbeat in the rendezvous store stopped (no beat for {LOST_AFTER_SECONDS:g} s)"


@dataclass(frozen=True)
class StoreAddress:
    """Where the job's rendezvous store listens, and who hosts it."""

    host: str
    port: int
    hosted_by_rank0: bool
    """True when rank 0's process hosts it (``env://``/``tcp://`` without torchrun's agent store)."""

    def __str__(self) -> str:
        return f"{self.host}:{self.port}"


class Heartbeat:
    """This rank's heartbeat thread, and the check of the other ranks' heartbeats."""

    def __init__(self, address: StoreAddress, rank: int, world_size: int) -> None:
        self.address, self.rank, self.world_size = address, rank, world_size
        self._stop = threading.Event()
        self._leaving = False
        self._thread = threading.Thread(target=self._run, name=f"accelhal-heartbeat-{rank}", daemon=True)

    def start(self) -> None:
        """Start beating: once (so the count exists before the caller goes on), then every :data:`HEARTBEAT_SECONDS`."""
        self._store = self._connect()
        # A store that outlives a group (torchrun's agent store, across restarts) keeps the last
        # group's marks: this rank is back, and an old verdict is no news (it only saved time).
        self._store.delete_key(self._key("left", self.rank))
        self._store.delete_key(self._key("lost"))
        self._store.delete_key(self._key("acknowledged"))
        self._store.add(self._key("beat", self.rank), 1)
        self._thread.start()

    def stop(self, *, left: bool) -> None:
        """Stop beating; ``left`` records that this rank left on purpose (it is not lost)."""
        self._leaving = left
        self._stop.set()
        self._thread.join(timeout=LOST_AFTER_SECONDS + HEARTBEAT_SECONDS)

    def _connect(self) -> TCPStore:
        """Return a new client connection to the store (each thread needs its own)."""
        from torch._C._distributed_c10d import TCPStore  # torch.distributed.TCPStore, where mypy sees it

        # TCPStore retries a refused connection until its timeout (and longer): a store that is
        # gone is told at once by one plain connection, refused.
        with socket.create_connection((self.address.host, self.address.port), timeout=LOST_AFTER_SECONDS):
            pass
        timeout = timedelta(seconds=LOST_AFTER_SECONDS)
        return TCPStore(self.address.host, self.address.port, is_master=False, timeout=timeout)

    def check(self) -> None:
        """Raise :class:`~accelhal.errors.RankLostError` if another rank has stopped; return once all are seen."""
        try:
            self._check(self._connect())
        except RankLostError:
            raise
        except (RuntimeError, OSError) as err:  # the store stopped answering (torch's DistError is a RuntimeError)
            raise self._store_lost(err) from err

    def _check(self, store: TCPStore) -> None:
        others = [r for r in range(self.world_size) if r != self.rank]
        start = time.monotonic()
        first = {r: store.add(self._key("beat", r), 0) for r in others}
        pending = {r for r in others if not self._has_left(store, r)}
        verdict = self._key("lost")
        while pending:
            if store.check([verdict]):
                lost = tuple(int(r) for r in store.get(verdict).decode().split(","))
                raise self._settled(store, lost, f"{_STOPPED}, as another rank saw first")
            if time.monotonic() - start >= LOST_AFTER_SECONDS:
                lost = tuple(sorted(pending))
                store.set(verdict, ",".join(map(str, lost)))
                raise self._settled(store, lost, _STOPPED)
            time.sleep(HEARTBEAT_SECONDS / 4)
            pending = {
                r for r in pending if store.add(self._key("beat", r), 0) == first[r] and not self._has_left(store, r)
            }

    def _has_left(self, store: TCPStore, rank: int) -> bool:
        """Return whether ``rank`` left the group on purpose (its heartbeat stopped because it was told to)."""
        return bool(store.check([self._key("left", rank)]))

    def _settled(self, store: TCPStore, lost: tuple[int, ...], reason: str) -> RankLostError:
        """Return the error to raise, once the store's host (if this rank) has seen every survivor read the verdict.

        Rank 0, when it hosts the store, waits for the survivors' acknowledgements at most
        :data:`LOST_AFTER_SECONDS`.
        """
        acknowledged = self._key("acknowledged")
        if not (self.address.hosted_by_rank0 and self.rank == 0):
            store.add(acknowledged, 1)
            return self._lost(lost, reason)
        survivors = self.world_size - 1 - len(set(lost) - {self.rank})
        deadline = time.monotonic() + LOST_AFTER_SECONDS
        while store.add(acknowledged, 0) < survivors and time.monotonic() < deadline:
            time.sleep(HEARTBEAT_SECONDS / 10)
        return self._lost(lost, reason)

    def _run(self) -> None:
        store = self._store
        while not self._stop.wait(HEARTBEAT_SECONDS):
            try:
                store.add(self._key("beat", self.rank), 1)
            except (RuntimeError, OSError):
                return  # the store is gone; a check names its host
        if self._leaving:
            with contextlib.suppress(RuntimeError, OSError):
                store.set(self._key("left", self.rank), "1")

    def _key(self, *parts: object) -> str:
        return "/".join((PREFIX, *map(str, parts)))

    def _lost(self, ranks: tuple[int, ...], reason: str) -> RankLostError:
        return RankLostError(ranks, rank=self.rank, world_size=self.world_size, reason=reason)

    def _store_lost(self, err: BaseException) -> RankLostError:
        detail = str(err).splitlines()[0] if str(err) else type(err).__name__
        if self.address.hosted_by_rank0:
            return self._lost((0,), f"the rendezvous store it hosted at {self.address} no longer answers ({detail})")
        return self._lost(
            (),
            f"the rendezvous store at {self.address}, hosted by torchrun's agent on the first node, no longer "
            f"answers ({detail}): that node is lost",
        )


_lock = threading.Lock()
_heartbeat: Heartbeat | None = None


def start(address: StoreAddress, rank: int, world_size: int) -> None:
    """Start this rank's heartbeat (stopping an earlier one); called by ``init_process_group``.

    A store the heartbeat cannot reach (the group itself was set up through it, so hardly ever)
    is logged: the group works, only a lost rank will not be named.
    """
    global _heartbeat
    heartbeat = Heartbeat(address, rank, world_size)
    try:
        heartbeat.start()
    except (RuntimeError, OSError) as err:
        logger.warning("accelhal: no heartbeat for rank %d: the store at %s: %s", rank, address, err)
        return
    with _lock:
        previous, _heartbeat = _heartbeat, heartbeat
    if previous is not None:
        previous.stop(left=False)


def stop(*, left: bool = True) -> None:
    """Stop this rank's heartbeat, if any; called by ``destroy_process_group``."""
    global _heartbeat
    with _lock:
        heartbeat, _heartbeat = _heartbeat, None
    if heartbeat is not None:
        heartbeat.stop(left=left)


def check_lost_ranks() -> None:
    """Raise :class:`~accelhal.errors.RankLostError` naming the ranks of the default group that are gone.

    Returns as soon as every other rank's heartbeat is seen to move (within about
    :data:`~accelhal.distributed.liveness.HEARTBEAT_SECONDS`), or at once when there is no
    heartbeat to read: a group of one, a rendezvous through ``store=`` or ``file://``, or a group
    set up without accelhal. A rank that does not beat for
    :data:`~accelhal.distributed.liveness.LOST_AFTER_SECONDS` is lost. Call it where a collective
    failed; :func:`~accelhal.distributed.lost_rank_guard` does so for a block of code::

        try:
            dist.all_reduce(tensor)
        except RuntimeError:
            check_lost_ranks()      # raises RankLostError naming the lost ranks, if any
            raise
    """
    with _lock:
        heartbeat = _heartbeat
    if heartbeat is not None:
        heartbeat.check()
