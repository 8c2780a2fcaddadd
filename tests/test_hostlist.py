"""Slurm's compressed host lists, against what ``scontrol show hostnames`` prints for them.

The expected names are Slurm's (its documentation's examples and the rules of its parser,
``src/common/hostlist.c``: the width of a range is its lower bound's, several brackets nest
with the first outermost, commas and blanks separate entries and runs of them count as one,
nothing may follow an entry's last bracket).
"""

from __future__ import annotations

import pytest

from accelhal.errors import ConfigurationError
from accelhal.launch.hostlist import expand_hostlist, first_host


@pytest.mark.parametrize(
    ("hostlist", "hostnames"),
    [
        ("node[03-05,07]", "node03 node04 node05 node07"),
        ("lx[15,18,32-33]", "lx15 lx18 lx32 lx33"),  # sbatch(1), --nodelist
        ("tux[1-3]", "tux1 tux2 tux3"),
        ("linux[00-07]", "linux00 linux01 linux02 linux03 linux04 linux05 linux06 linux07"),
        ("n[8-11]", "n8 n9 n10 n11"),  # no zero in the lower bound: no padding
        ("n[008-011]", "n008 n009 n010 n011"),
        ("n[09-100]", "n09 " + " ".join(f"n{i}" for i in range(10, 101))),
        ("gpu01,gpu02", "gpu01 gpu02"),
        ("login,node[1-2],gpu[7]", "login node1 node2 gpu7"),
        ("node[1-2],node[5-6]", "node1 node2 node5 node6"),
        ("rack[1-2]-gpu[01-02]", "rack1-gpu01 rack1-gpu02 rack2-gpu01 rack2-gpu02"),  # first bracket outermost
        ("a[1-2]b[3,5]c[0-1]", "a1b3c0 a1b3c1 a1b5c0 a1b5c1 a2b3c0 a2b3c1 a2b5c0 a2b5c1"),
        ("node[2,1,2]", "node2 node1 node2"),  # as written: order and repeats kept
        ("a,,b  c\td", "a b c d"),  # runs of separators count as one
        ("host-1.example.com", "host-1.example.com"),
        ("[1-2]", "1 2"),
    ],
)
def test_expansion_is_scontrols(hostlist: str, hostnames: str) -> None:
    assert expand_hostlist(hostlist) == hostnames.split()
    assert first_host(hostlist) == hostnames.split()[0]


def test_the_first_host_of_a_huge_list_is_found_without_expanding_it() -> None:
    assert first_host("node[000000001-999999999],x") == "node000000001"


@pytest.mark.parametrize(
    ("hostlist", "words"),
    [
        ("", "names no host"),
        (" , ", "names no host"),
        ("ok1,node[1-", "leaves a bracket open"),
        ("ok1,node]1", "closes a bracket it did not open"),
        ("ok1,node[1-[2]]", "bracket inside a bracket"),
        ("ok1,node[3-1]", "the range '3-1', which counts down"),
        ("ok1,node[a-b]", "'a-b' is not a number or a range N-M"),
        ("ok1,node[]", "'' is not a number or a range N-M"),
        ("ok1,node[1-2].ib", "with '.ib' after its last bracket"),
        ("ok1,node[1--2]", "'1--2' is not a number"),
    ],
)
def test_a_list_slurm_would_not_write_is_refused_whole(hostlist: str, words: str) -> None:
    """The whole list is checked before the first name is given (``ok1`` is never returned)."""
    with pytest.raises(ConfigurationError, match="Slurm writes host lists such as 'node") as info:
        first_host(hostlist)
    assert words in str(info.value) and info.value.value == hostlist
