"""The launchers accelhal knows, and the variables each sets for the processes it starts.

The table is its own module so that :mod:`accelhal.process.settings` can list these variables without
importing :mod:`accelhal.launch.environment`, which reads them (the first ``get_accelerator()`` of a GPU
process needs neither). This module imports nothing of accelhal but its record classes.
"""

from __future__ import annotations

from accelhal.plain_record import record


@record(frozen=True)
class Launcher:
    """Which variables one kind of launcher sets (the first present name of each tuple is read)."""

    source: str
    rank: tuple[str, ...]
    world_size: tuple[str, ...]
    local_rank: tuple[str, ...]
    local_world_size: tuple[str, ...]


LAUNCHERS: tuple[Launcher, ...] = (
    Launcher("torchrun", ("RANK",), ("WORLD_SIZE",), ("LOCAL_RANK",), ("LOCAL_WORLD_SIZE",)),
    Launcher(
        "openmpi",
        ("OMPI_COMM_WORLD_RANK",),
        ("OMPI_COMM_WORLD_SIZE",),
        ("OMPI_COMM_WORLD_LOCAL_RANK",),
        ("OMPI_COMM_WORLD_LOCAL_SIZE",),
    ),
    # srun --mpi=pmi2 sets PMI_RANK/PMI_SIZE without MPI's local variables: Slurm's local id is right then.
    Launcher(
        "pmi",
        ("PMI_RANK",),
        ("PMI_SIZE",),
        ("MPI_LOCALRANKID", "PMI_LOCAL_RANK", "SLURM_LOCALID"),
        ("MPI_LOCALNRANKS", "PMI_LOCAL_SIZE"),
    ),
    # srun sets SLURM_STEP_TASKS_PER_NODE and SLURM_TASKS_PER_NODE; SLURM_NTASKS_PER_NODE only with --ntasks-per-node.
    Launcher(
        "slurm",
        ("SLURM_PROCID",),
        ("SLURM_NTASKS",),
        ("SLURM_LOCALID",),
        ("SLURM_STEP_TASKS_PER_NODE", "SLURM_TASKS_PER_NODE", "SLURM_NTASKS_PER_NODE"),
    ),
)
"""The launchers :func:`accelhal.launch.environment.read_launch_env` knows, in the order it tries them."""

SLURM_NODELISTS: tuple[str, ...] = ("SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST", "SLURM_NODELIST")
"""Slurm's compressed node lists, the step's first; the first host of the first one set runs rank 0."""

LOCAL_RANK_VARIABLES: tuple[str, ...] = tuple(dict.fromkeys(v for launcher in LAUNCHERS for v in launcher.local_rank))
"""Every variable a launcher sets to the process's index on its node, in the order they are read."""

SLURM_TASK_COUNTS: tuple[str, ...] = ("SLURM_STEP_TASKS_PER_NODE", "SLURM_TASKS_PER_NODE")
"""Slurm's tasks per node of the step and of the job, read for an ``srun`` launch only (an ``salloc``
shell, which launched nothing, has them too)."""

LOCAL_SIZE_VARIABLES: tuple[str, ...] = (
    "LOCAL_SIZE",  # DeepSpeed's CPU launcher
    *dict.fromkeys(v for la in LAUNCHERS for v in la.local_world_size if v not in SLURM_TASK_COUNTS),
)
"""Every variable a launcher sets to the number of processes on the node, in the order they are read
without a launcher (under one, its own are read: :data:`SLURM_TASK_COUNTS` too under ``srun``)."""

LAUNCHER_VARIABLES: tuple[str, ...] = tuple(
    dict.fromkeys(
        [
            *(v for launcher in LAUNCHERS for v in (*launcher.rank, *launcher.world_size)),
            *LOCAL_RANK_VARIABLES,
            *LOCAL_SIZE_VARIABLES,
            *SLURM_TASK_COUNTS,
            "SLURM_NODEID",
            "MASTER_ADDR",
            "MASTER_PORT",
            *SLURM_NODELISTS,
            "SLURM_JOB_ID",
            "SLURM_JOBID",
        ]
    )
)
"""Every launcher variable :mod:`accelhal.launch.environment` reads."""
