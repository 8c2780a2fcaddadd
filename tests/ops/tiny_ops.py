"""Small op builders for the tests, and a command line to drive them from other processes.

``python tiny_ops.py load`` loads :class:`TinyAnswerBuilder` and prints ``{"answer": 42, ...}``;
``python tiny_ops.py hold`` takes its build lock (and torch's baton, as a build killed
inside torch would leave it), prints ``held`` and sleeps until killed.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import ClassVar

from accelhal.ops import BuildLock, OpBuilder, cache

HERE = Path(__file__).resolve().parent


class TinyAnswerBuilder(OpBuilder):
    """A plain CPython extension whose ``answer()`` returns 42; compiles in about a second."""

    NAME: ClassVar[str] = "accelhal_test_tiny"
    BACKEND: ClassVar[str] = "cpu"

    def sources(self) -> list[str]:
        return ["csrc/tiny.cpp"]


class BrokenBuilder(OpBuilder):
    """A source with a syntax error."""

    NAME: ClassVar[str] = "accelhal_test_broken"
    BACKEND: ClassVar[str] = "cpu"

    def sources(self) -> list[str]:
        return ["csrc/broken.cpp"]


def _wait_for(path: Path) -> None:
    while not path.exists():
        time.sleep(0.01)


def main(argv: list[str]) -> None:
    command = argv[0]
    builder = TinyAnswerBuilder()
    if command == "load":
        if len(argv) > 1:  # a start line: say we are ready, then wait for the go file
            Path(argv[1] + f".ready.{argv[2]}").touch()
            _wait_for(Path(argv[1]))
        module = builder.load(verbose=True)  # says 'building op' on stderr when it compiles
        print(json.dumps({"answer": module.answer(), "file": module.__file__}))
    elif command == "hold":
        directory = builder.build_directory()
        directory.mkdir(parents=True, exist_ok=True)
        lock = BuildLock(str(directory / cache.LOCK))
        lock.acquire()
        (directory / cache.TORCH_BATON).touch()
        print("held", flush=True)
        time.sleep(3600)


if __name__ == "__main__":
    main(sys.argv[1:])
