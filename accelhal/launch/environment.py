"""Read where this process stands in a launched job: its launcher, rank, world and rendezvous.

:func:`read_launch_env` returns a frozen :class:`LaunchEnv`; :func:`local_rank` and
:func:`local_size` give a backend its placement on the node. The launchers' variables, in
the order they are tried, are tabled in ``docs/distributed.md``. Imports no torch.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Generic, TypeVar, cast

from accelhal.errors import ConfigurationError, DistributedSetupError
from accelhal.launch.known_launchers import (
    LAUNCHERS,
    LOCAL_RANK_VARIABLES,
    LOCAL_SIZE_VARIABLES,
    SLURM_NODELISTS,
    SLURM_TASK_COUNTS,
    Launcher,
)
from accelhal.plain_record import record
from accelhal.text import MAX_DIGITS, quote

_A = TypeVar("_A")


_SLURM_COUNT = rf"^(\d{{1,{MAX_DIGITS}}})(?:\(x(\d{{1,{MAX_DIGITS}}})\))?$"
"""One item of Slurm's task counts (``4(x2)``); compiled by :mod:`re` on first use, under Slurm only."""


@record(frozen=True)
class LaunchEnv:
    """Where this process stands in a launched job, read from one launcher's variables.

    ``variables`` maps each field that came from the environment to the variable it was
    read from (``{"rank": "OMPI_COMM_WORLD_RANK", ...}``), so messages can name it.
    """

    source: str
    """``"torchrun"``, ``"openmpi"``, ``"pmi"``, ``"slurm"``, or ``"none"`` (not launched)."""
    rank: int
    world_size: int
    local_rank: int
    local_world_size: int | None
    """Processes on this node; ``None`` where the launcher does not say."""
    master_addr: str | None
    master_port: int | None
    variables: tuple[tuple[str, str], ...] = ()

    def variable(self, field: str) -> str:
        """Return the variable ``field`` was read from, or torch's name for it when it was not read.

        >>> read_launch_env({"PMI_RANK": "0", "PMI_SIZE": "1"}).variable("rank")
        'PMI_RANK'
        """
        return dict(self.variables).get(field, TORCH_VARIABLES[field])

    @property
    def launched(self) -> bool:
        """True when a launcher set this process's rank (``source != "none"``)."""
        return self.source != "none"


TORCH_VARIABLES = {
    "rank": "RANK",
    "world_size": "WORLD_SIZE",
    "local_rank": "LOCAL_RANK",
    "local_world_size": "LOCAL_WORLD_SIZE",
    "master_addr": "MASTER_ADDR",
    "master_port": "MASTER_PORT",
}
"""torch's variable for each :class:`LaunchEnv` field (what torchrun sets)."""


def read_launch_env(environ: Mapping[str, str] | None = None) -> LaunchEnv:
    """Read and validate the launcher's variables from ``environ`` (``os.environ`` when ``None``).

    The first launcher whose rank or size variable is set is the one read: torchrun (and every
    launcher that sets torch's variables), Open MPI, PMI, then Slurm. Without any, the process
    is alone (``source="none"``, rank 0 of 1). Where ``MASTER_ADDR``/``MASTER_PORT`` are unset,
    an MPI or Slurm launch gets :func:`~accelhal.launch.environment.default_master_addr` and
    :func:`~accelhal.launch.environment.default_master_port`.

    Raises :class:`~accelhal.errors.DistributedSetupError` for a malformed or inconsistent
    set-up (not an integer, a rank not below its size, a local world larger than the world, a
    rank without its size), naming the variable and what would be right.

    >>> env = read_launch_env({"RANK": "3", "WORLD_SIZE": "4", "LOCAL_RANK": "1", "LOCAL_WORLD_SIZE": "2",
    ...                        "MASTER_ADDR": "node0", "MASTER_PORT": "29500"})
    >>> env.source, env.rank, env.world_size, env.local_rank, env.local_world_size
    ('torchrun', 3, 4, 1, 2)
    >>> read_launch_env({}).source
    'none'
    >>> read_launch_env({"SLURM_PROCID": "5", "SLURM_NTASKS": "8", "SLURM_LOCALID": "1",
    ...                  "SLURM_NTASKS_PER_NODE": "4(x2)"}).local_world_size
    4
    """
    env = os.environ if environ is None else environ
    master_addr = _get(env, "MASTER_ADDR")
    master_port = _parse_port(env)
    launcher = _launching(env)
    if launcher is not None:
        return _read(env, launcher, master_addr, master_port)
    stray = _first(env, ("LOCAL_RANK", "LOCAL_WORLD_SIZE"))
    if stray:
        raise DistributedSetupError(
            f"{stray} is set but RANK and WORLD_SIZE are not: a launcher sets all of them. "
            f"Launch with torchrun (python -m torch.distributed.run) or set RANK and WORLD_SIZE too",
            variable=stray,
            value=env[stray],
        )
    return LaunchEnv("none", 0, 1, 0, 1, master_addr, master_port)


def _launching(env: Mapping[str, str]) -> Launcher | None:
    """Return the first launcher whose rank or size variable is set, or ``None``."""
    return next((la for la in LAUNCHERS if _first(env, la.rank) or _first(env, la.world_size)), None)


def _read(env: Mapping[str, str], launcher: Launcher, addr: str | None, port: int | None) -> LaunchEnv:
    rank_var = _required(env, launcher, launcher.rank, launcher.world_size)
    size_var = _required(env, launcher, launcher.world_size, launcher.rank)
    rank = _parse_int(env, rank_var, minimum=0)
    world_size = _parse_int(env, size_var, minimum=1)
    _check_below(rank_var, rank, size_var, world_size)
    used = [("rank", rank_var), ("world_size", size_var)]

    local_size_var = _first(env, launcher.local_world_size)
    local_world_size = None
    if local_size_var:
        local_world_size = _parse_local_size(env, launcher, local_size_var)
        used.append(("local_world_size", local_size_var))
        if local_world_size > world_size:
            raise DistributedSetupError(
                f"{local_size_var}={local_world_size} is larger than {size_var}={world_size}: a node cannot run "
                f"more processes than the whole job; launch with at most {world_size} processes per node",
                variable=local_size_var,
                value=env[local_size_var],
            )

    local_rank_var = _first(env, launcher.local_rank)
    if local_rank_var:
        local_rank = _parse_int(env, local_rank_var, minimum=0)
        used.append(("local_rank", local_rank_var))
        if local_size_var and local_world_size is not None:
            _check_below(local_rank_var, local_rank, local_size_var, local_world_size)
    elif world_size == 1:
        local_rank = 0
    else:
        wanted = " or ".join(launcher.local_rank)
        raise DistributedSetupError(
            f"{rank_var} and {size_var} are set ({launcher.source} launch of {world_size} processes) but {wanted} "
            f"is not, so this process cannot tell which local device is its own; set {wanted} to the "
            f"process's index on its node",
            variable=launcher.local_rank[0],
        )
    if addr is None and (address := default_master_addr(env, launcher.source, world_size, local_world_size)):
        addr, origin = address
        used += [("master_addr", origin)] if origin else []
    if port is None and (default_port := default_master_port(env, launcher.source)):
        port, origin = default_port
        used += [("master_port", origin)] if origin else []
    return LaunchEnv(launcher.source, rank, world_size, local_rank, local_world_size, addr, port, tuple(used))


MPI_MASTER_PORT = 29500
"""``MASTER_PORT`` of an MPI launch that does not set it: torchrun's default port."""


def default_master_addr(
    env: Mapping[str, str], source: str, world_size: int, local_world_size: int | None
) -> tuple[str, str | None] | None:
    """Return ``MASTER_ADDR`` for a launch that left it unset, and the variable it came from; ``None`` if none.

    * Slurm (``srun``, and PMI under ``srun``): the first host of ``SLURM_STEP_NODELIST`` (else
      ``SLURM_JOB_NODELIST``, ``SLURM_NODELIST``), where rank 0 of a block-distributed step runs.
    * Open MPI or MPICH (PMI) with every rank on this node (local size = world size):
      ``127.0.0.1``. Across nodes MPI says nowhere which host runs rank 0: no default.
    * torchrun sets it itself: no default.

    >>> default_master_addr({"SLURM_PROCID": "0", "SLURM_JOB_NODELIST": "node[03-05,07]"}, "slurm", 8, 2)
    ('node03', 'SLURM_JOB_NODELIST')
    """
    if _under_srun(env, source):
        nodelist = _first(env, SLURM_NODELISTS)
        return None if nodelist is None else (_first_host(env, nodelist), nodelist)
    if source in ("openmpi", "pmi") and local_world_size == world_size:
        return "127.0.0.1", None
    return None


def default_master_port(env: Mapping[str, str], source: str) -> tuple[int, str | None] | None:
    """Return ``MASTER_PORT`` for a launch that left it unset, and the variable it came from; ``None`` if none.

    Slurm: ``15000 +`` the last four digits of ``SLURM_JOB_ID`` (Lightning's rule, so that both
    agree); Open MPI and MPICH: :data:`MPI_MASTER_PORT`; torchrun sets it itself.

    >>> default_master_port({"SLURM_PROCID": "0", "SLURM_JOB_ID": "4321987"}, "slurm")
    (16987, 'SLURM_JOB_ID')
    """
    if _under_srun(env, source):
        job = _first(env, ("SLURM_JOB_ID", "SLURM_JOBID"))
        return None if job is None else (15000 + _parse_int(env, job, minimum=0) % 10000, job)
    if source in ("openmpi", "pmi"):
        return MPI_MASTER_PORT, None
    return None


def _under_srun(env: Mapping[str, str], source: str) -> bool:
    """Return whether this is a Slurm launch, or a PMI one by ``srun --mpi=pmi2`` (which sets Slurm's rank too)."""
    return source == "slurm" or (source == "pmi" and _first(env, ("SLURM_PROCID",)) is not None)


def _first_host(env: Mapping[str, str], name: str) -> str:
    from accelhal.launch.hostlist import first_host  # only an MPI or Slurm launch without MASTER_ADDR needs it

    try:
        return first_host(env[name])
    except ConfigurationError as err:
        raise DistributedSetupError(
            f"MASTER_ADDR is not set and {name} cannot give it (its first host runs rank 0): {err}. Set MASTER_ADDR "
            f"to the host of rank 0",
            variable=name,
            value=env[name],
        ) from err


def _get(env: Mapping[str, str], name: str) -> str | None:
    value = env.get(name)
    return value.strip() if value is not None and value.strip() else None


def _first(env: Mapping[str, str], names: Sequence[str]) -> str | None:
    """Return the first of ``names`` that is set to a non-blank value."""
    return next((name for name in names if _get(env, name) is not None), None)


def _required(env: Mapping[str, str], launcher: Launcher, names: tuple[str, ...], partner: tuple[str, ...]) -> str:
    found = _first(env, names)
    if found:
        return found
    present = _first(env, partner)
    raise DistributedSetupError(
        f"{present} is set but {' or '.join(names)} is not: a {launcher.source} launch sets both; "
        f"set {names[0]} as well (or unset {present} if this process was not launched as part of a job)",
        variable=names[0],
    )


def _parse_int(env: Mapping[str, str], name: str, *, minimum: int) -> int:
    raw = env[name].strip()
    if not _is_number(raw) or int(raw) < minimum:
        kind = "a non-negative integer" if minimum == 0 else f"an integer >= {minimum}"
        raise DistributedSetupError(
            f"{name} must be {kind} as set by a launcher (at most {MAX_DIGITS} digits), got {quote(raw)}",
            variable=name,
            value=raw,
        )
    return int(raw)


def _is_number(raw: str) -> bool:
    """Return whether ``raw`` is 1 to :data:`MAX_DIGITS` ASCII digits (``str.isdigit`` also accepts ``"²"``)."""
    return raw.isascii() and raw.isdigit() and len(raw) <= MAX_DIGITS


def _parse_port(env: Mapping[str, str]) -> int | None:
    raw = _get(env, "MASTER_PORT")
    if raw is None:
        return None
    if not _is_number(raw) or not 0 < int(raw) < 65536:
        raise DistributedSetupError(
            f"MASTER_PORT must be a TCP port number between 1 and 65535, got {quote(raw)}",
            variable="MASTER_PORT",
            value=raw,
        )
    return int(raw)


def _parse_local_size(env: Mapping[str, str], launcher: Launcher, name: str) -> int:
    """Parse a local world size; Slurm's form (``"4(x2)"``, ``"2(x3),1"``) is read per node, never expanded."""
    if launcher.source != "slurm":
        return _parse_int(env, name, minimum=1)
    runs: list[tuple[int, int]] = []  # (tasks, nodes) as written: "4(x2)" is four tasks on each of two nodes
    for part in env[name].strip().split(","):
        match = re.match(_SLURM_COUNT, part.strip(), re.ASCII)
        if not match or int(match[1]) < 1 or int(match[2] or 1) < 1:
            raise DistributedSetupError(
                f"{name} must be Slurm's task count per node such as '4' or '4(x2),2' (numbers of at most"
                f" {MAX_DIGITS} digits), got {quote(env[name])}",
                variable=name,
                value=env[name],
            )
        runs.append((int(match[1]), int(match[2] or 1)))
    if len({tasks for tasks, _ in runs}) == 1:
        return runs[0][0]
    nodes = sum(count for _, count in runs)
    node = _first(env, ("SLURM_NODEID",))
    index = _parse_int(env, node, minimum=0) if node else nodes
    for tasks, count in runs:
        if index < count:
            return tasks
        index -= count
    raise DistributedSetupError(
        f"{name}={quote(env[name])} differs between nodes and SLURM_NODEID does not pick one of its "
        f"{nodes} nodes; run the job through srun, which sets both",
        variable="SLURM_NODEID",
        value=env.get("SLURM_NODEID"),
    )


def _check_below(name: str, value: int, limit_name: str, limit: int) -> None:
    if value >= limit:
        raise DistributedSetupError(
            f"{name}={value} is not below {limit_name}={limit}: ranks count from 0 to {limit - 1}; "
            f"check the launcher's arguments (or raise {limit_name})",
            variable=name,
            value=value,
        )


def local_rank(environ: Mapping[str, str] | None = None) -> tuple[int, str] | None:
    """Return the process's index on its node and the variable it came from; ``None`` when no launcher set one.

    The variable is the launching launcher's (the one :func:`read_launch_env` reads; a stray
    ``LOCAL_RANK`` beside Open MPI's ranks is not), else the first of
    :data:`~accelhal.launch.known_launchers.LOCAL_RANK_VARIABLES` that is set, so a local rank
    without a world (DeepSpeed's CPU convention) is read too. For ``os.environ`` the answer is
    cached until one of the variables it depends on changes value.

    >>> local_rank({"OMPI_COMM_WORLD_LOCAL_RANK": "2"})
    (2, 'OMPI_COMM_WORLD_LOCAL_RANK')
    >>> local_rank({"LOCAL_RANK": "0", "OMPI_COMM_WORLD_RANK": "1", "OMPI_COMM_WORLD_SIZE": "2",
    ...             "OMPI_COMM_WORLD_LOCAL_RANK": "1"})
    (1, 'OMPI_COMM_WORLD_LOCAL_RANK')
    """
    return _read_local_rank(environ) if environ is not None else _local_rank_of_environ.read()


def _read_local_rank(env: Mapping[str, str]) -> tuple[int, str] | None:
    launcher = _launching(env)
    name = _first(env, LOCAL_RANK_VARIABLES if launcher is None else launcher.local_rank)
    return None if name is None else (_parse_int(env, name, minimum=0), name)


_ENVIRON = os.environ
_ENVIRON_GET = cast("Callable[[object], object]", getattr(os.environ, "_data", os.environ).get)
"""``os.environ``'s own dict's ``get``: a C call (``os.environ.get`` runs Python code)."""
_ENVIRON_KEY = getattr(os.environ, "encodekey", str) if hasattr(os.environ, "_data") else str
_LAUNCHING_VARIABLES = [v for launcher in LAUNCHERS for v in (*launcher.rank, *launcher.world_size)]


class _EnvironMemo(Generic[_A]):
    """Cache an answer read from ``os.environ`` until one of the variables it depends on changes value."""

    def __init__(self, variables: Sequence[str], reader: Callable[[Mapping[str, str]], _A]) -> None:
        self._keys = tuple(map(_ENVIRON_KEY, dict.fromkeys(variables)))
        self._reader = reader
        self._last: tuple[tuple[object, ...], _A] | None = None

    def read(self) -> _A:
        """Return the answer for ``os.environ`` as it is now."""
        key = tuple(map(_ENVIRON_GET, self._keys))
        last = self._last
        if last is None or key != last[0]:
            last = self._last = (key, self._reader(_ENVIRON))
        return last[1]


_local_rank_of_environ = _EnvironMemo([*_LAUNCHING_VARIABLES, *LOCAL_RANK_VARIABLES], _read_local_rank)


def local_size(environ: Mapping[str, str] | None = None) -> tuple[int, str] | None:
    """Return the number of processes on the node and the variable it came from; ``None`` when no launcher set one.

    The launching launcher's variable first, as :func:`read_launch_env` reads it (for a
    torchrun-style launch, DeepSpeed's ``LOCAL_SIZE``, then ``LOCAL_WORLD_SIZE``, which must
    agree when both are set); else the first of
    :data:`~accelhal.launch.known_launchers.LOCAL_SIZE_VARIABLES` that is set.

    >>> local_size({"LOCAL_WORLD_SIZE": "4"})
    (4, 'LOCAL_WORLD_SIZE')
    """
    return _read_local_size(environ) if environ is not None else _local_size_of_environ.read()


def _read_local_size(env: Mapping[str, str]) -> tuple[int, str] | None:
    launcher = _launching(env)
    names = () if launcher is None else launcher.local_world_size
    if launcher is LAUNCHERS[0]:
        names = ("LOCAL_SIZE", *names)
    name = _first(env, names) or _first(env, LOCAL_SIZE_VARIABLES)
    if name is None:
        return None
    owner = next((la for la in LAUNCHERS if name in la.local_world_size), LAUNCHERS[0])
    size = _parse_local_size(env, owner, name)
    other = _first(env, ("LOCAL_WORLD_SIZE",)) if name == "LOCAL_SIZE" else None
    if other is not None and _parse_int(env, other, minimum=1) != size:
        raise DistributedSetupError(
            f"LOCAL_SIZE={size} and {other}={env[other]} disagree about how many processes run on this node; "
            f"unset one, or set both to the same number",
            variable=name,
            value=env[name],
        )
    return size, name


_local_size_of_environ = _EnvironMemo(
    [*_LAUNCHING_VARIABLES, *LOCAL_SIZE_VARIABLES, *SLURM_TASK_COUNTS, "SLURM_NODEID"], _read_local_size
)
