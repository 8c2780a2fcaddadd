"""What the active backend's runtime answers when it is described, checked: one verdict for every command.

:func:`runtime_faults` asks each member ``info`` describes, ``doctor``'s ``runtime-answers``
check and the conformance suite ask, once, as one bounded call, and returns the faults: a member
that raises or answers with the wrong type or an impossible value. A memory figure that raises
:class:`NotImplementedError` (no such figure on this backend) is no fault. See
``docs/reference/cli.md``, "A runtime's wrong answer gets one verdict".
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from accelhal.contract.accelerator import Accelerator  # imports torch: a broken torch is the command's to report
from accelhal.text import quote


@dataclass(frozen=True)
class Fault:
    """A member of the runtime that raised or answered wrongly: ``call`` and what it ``said``."""

    call: str
    said: str

    def __str__(self) -> str:
        return f"{self.call} {self.said}"


@dataclass
class Answers:
    """What :func:`runtime_faults` found: the faults, and the members that cannot answer (with why)."""

    faults: list[Fault] = field(default_factory=list)
    unanswered: dict[str, str] = field(default_factory=dict)


def _type_name(expected: type | tuple[type, ...]) -> str:
    names = [t.__name__ for t in (expected if isinstance(expected, tuple) else (expected,))]
    return " or ".join(
        "None" if name == "NoneType" else f"a{'n' if name[0] in 'aeiou' else ''} {name}" for name in names
    )


def runtime_faults(acc: Accelerator) -> Answers:
    """Ask ``acc`` what a description asks (availability, count, each device's name, memory, capability)."""
    from accelhal.cli.supervision.faults import bounded, describe
    from accelhal.contract.spec import DEVICES_ASKED, MAX_DEVICES

    found = Answers()

    def ask(
        call: str,
        function: Callable[[], Any],
        expected: type | tuple[type, ...],
        at_least: int | None = None,
        figure: bool = False,
        at_most: int | None = None,
    ) -> Any:
        try:
            with bounded(acc.name, call):
                value = function()
        except NotImplementedError as exc:
            if not figure:  # only a memory figure may be missing
                found.faults.append(Fault(call, f"raised {type(exc).__name__}: {exc}"))
            else:
                found.unanswered[call] = str(exc)
            return None
        except Exception as exc:
            below = exc.__traceback__  # where the member raised, below this module's own frames
            while below is not None and below.tb_frame.f_code.co_filename == __file__:
                below = below.tb_next
            found.faults.append(Fault(call, f"raised {describe(exc.with_traceback(below))}"))
            return None
        wrong_bool = isinstance(value, bool) and bool not in (expected if isinstance(expected, tuple) else (expected,))
        if wrong_bool or not isinstance(value, expected):
            said = f"answered {quote(value)} ({_type_name(type(value))}), where {_type_name(expected)} is expected"
            found.faults.append(Fault(call, said))
            return None
        if at_least is not None and isinstance(value, int) and value < at_least:
            found.faults.append(Fault(call, f"answered {quote(value)}, where a number >= {at_least} is expected"))
            return None
        if at_most is not None and isinstance(value, int) and value > at_most:
            found.faults.append(Fault(call, f"answered {quote(value)}, where a number <= {at_most} is expected"))
            return None
        return value

    available = ask("is_available()", acc.is_available, bool)
    count = ask("device_count()", acc.device_count, int, at_least=0, at_most=MAX_DEVICES) if available else 0
    for index in range(min(count or 0, DEVICES_ASKED)):
        ask(f"device_name({index})", functools.partial(acc.device_name, index), str)
        ask(f"device_description({index})", functools.partial(acc.device_description, index), str)
        ask(f"total_memory({index})", functools.partial(acc.total_memory, index), int, 0, figure=True)
        ask(f"available_memory({index})", functools.partial(acc.available_memory, index), int, 0, figure=True)
        ask(f"device_capability({index})", functools.partial(acc.device_capability, index), (str, type(None)))
    return found


def cannot_describe(backend: str, faults: list[Fault]) -> str:
    """``the active backend 'acme' cannot be described: device_count() answered 'eight' (a str), ...``."""
    return f"the active backend {backend!r} cannot be described: {'; '.join(str(fault) for fault in faults)}"


ANSWERS_PREFIX = "accelhal-doctor-answers "
"""Marks the line on which :func:`main` prints what it found (a vendor may print too)."""
ASKING = "accelhal-doctor-asking"
"""The line :func:`main` prints once it has selected, as it starts asking the device."""
START_LIMIT = 300.0
"""Seconds the child may take to start and select (a fresh interpreter, ``import torch``, discovery)."""


def main(argv: list[str]) -> int:
    """In a child process of ``accelhal doctor``: select, ask the active backend, print the faults as JSON.

    ``argv[0]``, where given, is the JSON list of hangs the command knows
    (:func:`accelhal.cli.supervision.deadline.known_hangs`): a call that hung is refused at once.
    """
    import json

    from accelhal.cli.supervision import deadline
    from accelhal.selection import get_accelerator

    deadline.refuse_known_hangs(json.loads(argv[0]) if argv else ())
    acc = get_accelerator()
    print(ASKING, flush=True)
    found = runtime_faults(acc)
    print(ANSWERS_PREFIX + json.dumps([[fault.call, fault.said] for fault in found.faults]), flush=True)
    return 0


def faults_in_a_child(environ: dict[str, str], timeout: float, plugin: str, backend: str) -> list[Fault] | str:
    """:func:`runtime_faults` of the active backend, asked in a fresh child process; else why it gave no answer.

    The reason is a predicate of "a process that asked it": ``"ended without an answer (exit status 7)"``,
    ``"gave no answer within 60 s (ACCELHAL_DOCTOR_TIMEOUT)"``.

    The device is asked there, not here: describing a device initialises its runtime (a CUDA
    context, on cuda), and ``accelhal doctor`` creates none in its own process. The child may
    take :data:`START_LIMIT` to start and select, then ``timeout`` seconds to answer; a device
    that does not answer in time is declared hung to the command
    (``accelhal.cli.supervision.deadline.declare_hung``), so that no later step waits on it again.
    """
    import json
    import subprocess
    import sys
    import time

    from accelhal.cli.supervision import deadline
    from accelhal.process import child_processes

    command = [sys.executable, "-m", "accelhal.cli.diagnosis.answers", json.dumps(deadline.known_hangs())]
    process = subprocess.Popen(
        command,
        env=environ,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        **child_processes.popen_options(),
    )
    assert process.stdout is not None
    pending, asking_since, limit = b"", None, [time.monotonic() + START_LIMIT]  # moved once it is asking
    try:
        for _, data in child_processes.output_until_exit(process, [process.stdout.fileno()], lambda: limit[0]):
            *lines, pending = (pending + data).split(b"\n")
            for line in (raw.decode(errors="replace") for raw in lines):
                if line.startswith(ASKING) and asking_since is None:
                    asking_since = time.monotonic()
                    limit[0] = asking_since + timeout
                elif line.startswith(ANSWERS_PREFIX):
                    return [Fault(call, said) for call, said in json.loads(line[len(ANSWERS_PREFIX) :])]
        status = process.poll()
        return (
            "closed its output without an answer"
            if status is None
            else f"ended without an answer (exit status {status})"
        )
    except TimeoutError:
        if asking_since is None:
            return f"did not get to asking within {START_LIMIT:g} s of its start"
        deadline.declare_hung("call", plugin, backend, time.monotonic() - asking_since, "ACCELHAL_DOCTOR_TIMEOUT")
        return f"gave no answer within {timeout:g} s (ACCELHAL_DOCTOR_TIMEOUT)"
    finally:
        child_processes.kill_tree(process.pid)
        process.wait()
        process.stdout.close()


if __name__ == "__main__":
    import os
    import sys

    status = main(sys.argv[1:])
    sys.stdout.flush()
    os._exit(status)  # no interpreter shutdown: it would wait for what a plugin started (a multiprocessing helper)
