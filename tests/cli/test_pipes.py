"""A closed pipe is not an error: ``accelhal list | head -1`` exits with the command's own status, quietly.

When the reader of stdout goes away (``head -1`` has its line), the command writes nothing more, goes
on, and exits with the status it would have had; nothing is said about the pipe on stderr (no
``Exception ignored ... BrokenPipeError`` at the interpreter's exit).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from tests.cli.conftest import Result, clean_env, run_accelhal

QUIET = ("Traceback", "Exception ignored", "BrokenPipeError", "accelhal: error")


def assert_quiet(result: Result) -> None:
    assert not [word for word in QUIET if word in result.stderr], result.stderr


def test_accelhal_list_piped_into_head() -> None:
    """The shell's own pipeline, as a user types it; pipefail makes the status accelhal's where it is not 0."""
    pipeline = 'set -o pipefail; "$@" | head -1'
    proc = subprocess.run(
        ["bash", "-c", pipeline, "bash", sys.executable, "-m", "accelhal", "list"],
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    result = Result(proc.returncode, proc.stdout, proc.stderr)
    assert result.returncode == 0, result.output
    assert result.stdout == "Backends\n"
    assert_quiet(result)


CLOSED = """
import os, runpy
fd = os.open(os.environ.pop("CLOSED_PIPE"), os.O_WRONLY)
os.dup2(fd, 1)
os.close(fd)
runpy.run_module("accelhal", run_name="__main__", alter_sys=True)
"""
"""``python -m accelhal ARGS`` with stdout on the write end of a pipe whose reader has gone."""


@contextmanager
def pipe_head_left() -> Iterator[str]:
    """A path to the write end of a pipe whose reader, a real ``head -1``, has read its line and exited."""
    read, write = os.pipe()
    try:
        os.write(write, b"first line\n")
        head = subprocess.run(["head", "-1"], stdin=read, capture_output=True, timeout=60, check=True)
        assert head.stdout == b"first line\n"
        os.close(read)
        read = -1
        yield f"/proc/{os.getpid()}/fd/{write}"  # opened by the child: the same pipe, with no reader left
    finally:
        for fd in (read, write):
            if fd >= 0:
                os.close(fd)


@pytest.mark.parametrize(
    "args",
    [
        ["info"],
        ["info", "--json"],
        ["list"],
        ["list", "--json"],
        ["explain", "cpu"],
        ["explain", "--json"],
        ["doctor"],
        ["schema"],
        ["ray-resources"],
        ["check", "cpu", "--", "-k", "device_count"],
    ],
    ids=" ".join,
)
def test_every_command_exits_with_its_own_status_when_its_reader_has_gone(args: list[str]) -> None:
    """Each exits as it does with its output read: 0 here (test_commands.py, test_check.py, test_exit_codes.py),
    but ``ray-resources`` 2 where Ray is not installed (the core suite)."""
    read = run_accelhal(*args) if args == ["ray-resources"] else None
    with pipe_head_left() as path:
        result = run_accelhal(*args, code=CLOSED, code_after_torch=True, env={"CLOSED_PIPE": path})
    assert result.returncode == (0 if read is None else read.returncode), result.output
    if result.returncode == 0:
        assert result.stdout == ""
        assert_quiet(result)
