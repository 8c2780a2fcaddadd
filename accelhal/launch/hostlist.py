"""Slurm's compressed host lists, expanded as ``scontrol show hostnames`` expands them.

:func:`expand_hostlist` gives every name, :func:`iter_hostlist` yields them lazily, :func:`first_host` gives the
first: ``expand_hostlist("node[03-05,07]")`` is ``['node03', 'node04', 'node05', 'node07']``. The whole list is
parsed, and a malformed one refused, before anything is expanded. This module imports nothing outside the
standard library but accelhal's errors and message text. The rules, as in Slurm's own parser:
``docs/clusters.md``, "srun".
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from accelhal.errors import ConfigurationError
from accelhal.text import MAX_DIGITS, quote, shorten

_ENTRY = re.compile(r"([^\[\],]*)(?:\[([^\[\]]*)\])?")
MAX_BRACKETS = 16
"""The most bracketed ranges in one entry; each is a loop of the expansion, and Slurm's grids have up to 5."""
_RANGE = re.compile(rf"(\d{{1,{MAX_DIGITS}}})(?:-(\d{{1,{MAX_DIGITS}}}))?", re.ASCII)
_EXAMPLE = "such as 'node[03-05,07]' or 'gpu01,gpu02'"


def expand_hostlist(hostlist: str) -> list[str]:
    """Every host name of ``hostlist``, in order.

    Raises :class:`~accelhal.errors.ConfigurationError` for a list Slurm would not write
    (no host at all, an unclosed or nested bracket, an empty range, a range that counts down,
    text after the last bracket).
    """
    return list(iter_hostlist(hostlist))


def first_host(hostlist: str) -> str:
    """The first host name of ``hostlist`` (the node of rank 0 in a block-distributed Slurm step)."""
    return next(iter_hostlist(hostlist))


def iter_hostlist(hostlist: str) -> Iterator[str]:
    """The host names of ``hostlist``, one at a time; the list is checked whole before the first."""
    entries = [_parse_entry(hostlist, entry) for entry in _split_entries(hostlist)]
    for pieces in entries:
        yield from _expand(pieces, "")


_Span = tuple[int, int, int]
"""A bracketed range: its lower and upper bound and the width to pad its numbers to."""


def _expand(pieces: list[str | list[_Span]], prefix: str) -> Iterator[str]:
    """Every name ``prefix`` followed by one choice from each of ``pieces``, the first piece outermost."""
    if not pieces:
        yield prefix
        return
    head, rest = pieces[0], pieces[1:]
    if isinstance(head, str):
        yield from _expand(rest, prefix + head)
        return
    for low, high, width in head:
        for number in range(low, high + 1):
            yield from _expand(rest, prefix + str(number).zfill(width))


def _split_entries(hostlist: str) -> list[str]:
    """``hostlist`` cut at the commas outside brackets."""
    entries, depth, start = [], 0, 0
    for index, char in enumerate(hostlist):
        if char == "[":
            depth += 1
            if depth > 1:
                raise _malformed(hostlist, "has a bracket inside a bracket")
        elif char == "]":
            depth -= 1
            if depth < 0:
                raise _malformed(hostlist, "closes a bracket it did not open")
        elif (char == "," or char.isspace()) and depth == 0:
            entries.append(hostlist[start:index])
            start = index + 1
    if depth:
        raise _malformed(hostlist, "leaves a bracket open")
    entries.append(hostlist[start:])
    entries = [entry for entry in entries if entry]  # Slurm skips runs of separators
    if not entries:
        raise _malformed(hostlist, "names no host")
    return entries


def _parse_entry(hostlist: str, entry: str) -> list[str | list[_Span]]:
    """One entry as its pieces: ``"a[1-2,05]b"`` -> ``["a", [(1, 2, 0), (5, 5, 2)], "b"]``."""
    pieces: list[str | list[_Span]] = []
    position = 0
    while position < len(entry):
        match = _ENTRY.match(entry, position)
        if match is None or match.end() == position:
            raise _malformed(hostlist, f"has {quote(entry)}, which is not a name with bracketed ranges")
        literal, ranges = match.groups()
        if literal and pieces and ranges is None:
            raise _malformed(hostlist, f"has {quote(entry)}, with {quote(literal)} after its last bracket")
        if literal:
            pieces.append(literal)
        if ranges is not None:
            pieces.append(_parse_ranges(hostlist, ranges))
            if len(pieces) > 2 * MAX_BRACKETS:
                raise _malformed(hostlist, f"has an entry with more than {MAX_BRACKETS} bracketed ranges")
        position = match.end()
    return pieces


def _parse_ranges(hostlist: str, ranges: str) -> list[_Span]:
    """``"03-05,7"`` -> ``[(3, 5, 2), (7, 7, 1)]``: each lower bound's digits set the width."""
    spans: list[_Span] = []
    for part in ranges.split(","):
        match = _RANGE.fullmatch(part.strip())
        if match is None:
            raise _malformed(
                hostlist,
                f"has [{shorten(ranges)}], whose {quote(part.strip())} is not a number or a range N-M"
                f" (numbers of at most {MAX_DIGITS} digits)",
            )
        low, high = match[1], match[2] or match[1]
        if int(high) < int(low):
            raise _malformed(hostlist, f"has the range {part.strip()!r}, which counts down")
        spans.append((int(low), int(high), len(low)))
    return spans


def _malformed(hostlist: str, problem: str) -> ConfigurationError:
    return ConfigurationError(
        f"the host list {quote(hostlist)} {problem}; Slurm writes host lists {_EXAMPLE}", value=hostlist
    )
