"""Turn the failure a lost rank causes in the ranks left into an error that names it.

When a rank dies, torch.distributed fails in the others with the transport's words (gloo:
``Connection closed by peer [10.1.2.3]:45678``, or a timeout after ``ACCELHAL_DIST_TIMEOUT``
when its node vanished). :func:`lost_rank_guard` catches that failure, asks the heartbeats which
rank is gone (:func:`~accelhal.distributed.check_lost_ranks`) and raises
:class:`~accelhal.errors.RankLostError` naming it, chained to torch's error. A failure that no
lost rank explains propagates unchanged.

>>> setup = init_process_group()
>>> with lost_rank_guard():                  # or @lost_rank_guard() on the training function
...     train(setup)
"""

from __future__ import annotations

import contextlib
from types import TracebackType
from typing import Literal

from accelhal.distributed import liveness
from accelhal.distributed.process_group import destroy_process_group
from accelhal.errors import AccelhalError, RankLostError


class lost_rank_guard(contextlib.ContextDecorator):  # noqa: N801 - used like a function, as contextlib's are
    """Raise :class:`~accelhal.errors.RankLostError` for a ``RuntimeError`` that a lost rank caused.

    On a ``RuntimeError`` (what torch.distributed raises) leaving the block, it checks the other
    ranks' heartbeats (up to ``LOST_AFTER_SECONDS``, 3 s; about one second when all are alive).
    If a rank is lost, it destroys the default process group, which cannot be used again and
    whose connections, once closed, release at once the ranks still waiting on this one, and
    raises :class:`~accelhal.errors.RankLostError` from the original error. Otherwise the
    original error propagates. Usable as a context manager or a decorator.
    """

    def __enter__(self) -> lost_rank_guard:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> Literal[False]:
        if not isinstance(error, RuntimeError) or isinstance(error, AccelhalError):
            return False
        try:
            liveness.check_lost_ranks()
        except RankLostError as lost:
            destroy_process_group()
            raise lost from error
        return False
