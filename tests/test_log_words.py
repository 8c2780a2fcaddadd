"""accelhal's log lines in a program show a plugin's words as text: control characters made visible.

A program that configures logging (``logging.basicConfig``) prints accelhal's warnings with the
program's own handler. An op builder's reason comes from plugin code; logged as it was given, its
escape codes reach the terminal and its newline forges a line. The ``accelhal`` loggers write
each control character of a message as its escape (:func:`accelhal.text.visible`).
"""

from __future__ import annotations

import re
import subprocess
import sys

from tests.cli.conftest import clean_env

PROGRAM = r"""
import logging
from accelhal.ops import Compatibility, OpBuilder

logging.basicConfig(format="%(levelname)s %(message)s")


class ForgingBuilder(OpBuilder):
    NAME = "forging"

    def compatibility(self):
        return Compatibility(False, "no compiler\x1b]0;pwned\x07\r\nINFO everything is fine")


print(ForgingBuilder().is_compatible(verbose=True))
"""


def test_an_op_builders_reason_is_logged_as_text() -> None:
    done = subprocess.run(
        [sys.executable, "-c", PROGRAM], env=clean_env(), capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "False\n"
    assert not re.search(r"[\x00-\x09\x0b-\x1f\x7f]", done.stderr), repr(done.stderr)
    (line,) = done.stderr.splitlines()
    assert line == (
        r"WARNING accelhal: op 'forging' is not compatible: no compiler\x1b]0;pwned\x07\r\nINFO everything is fine"
    )
