"""read_launch_env: each launcher's variables, and each bad set-up's message (environment dicts)."""

from __future__ import annotations

import os
import sys

import pytest

from accelhal.errors import ConfigurationError, DistributedSetupError
from accelhal.launch.environment import local_rank, local_size, read_launch_env
from accelhal.launch.known_launchers import LAUNCHERS
from tests.cluster_launch import srun_variables

TORCHRUN = {"RANK": "3", "WORLD_SIZE": "4", "LOCAL_RANK": "1", "LOCAL_WORLD_SIZE": "2"}


@pytest.mark.parametrize("launcher", LAUNCHERS, ids=lambda launcher: launcher.source)
def test_each_launcher_is_read_from_its_own_variables(launcher) -> None:
    env = {
        launcher.rank[0]: "5",
        launcher.world_size[0]: "8",
        launcher.local_rank[0]: "1",
        launcher.local_world_size[0]: "4",
        "MASTER_ADDR": " node0 ",
        "MASTER_PORT": "29511",
    }
    launch = read_launch_env(env)
    assert (launch.source, launch.rank, launch.world_size, launch.local_rank, launch.local_world_size) == (
        launcher.source,
        5,
        8,
        1,
        4,
    )
    assert (launch.master_addr, launch.master_port) == ("node0", 29511)
    assert launch.variable("rank") == launcher.rank[0]
    assert launch.variable("local_rank") == launcher.local_rank[0]
    assert launch.launched


def test_no_launcher_is_a_single_process() -> None:
    launch = read_launch_env({"PATH": "/bin"})
    assert (launch.source, launch.rank, launch.world_size, launch.local_rank) == ("none", 0, 1, 0)
    assert not launch.launched
    assert launch.variable("rank") == "RANK"


def test_torchrun_wins_over_slurm_outside_it() -> None:
    env = {
        **TORCHRUN,
        "SLURM_PROCID": "0",
        "SLURM_NTASKS": "1",
        "OMPI_COMM_WORLD_RANK": "0",
        "OMPI_COMM_WORLD_SIZE": "1",
    }
    assert read_launch_env(env).source == "torchrun"


def test_slurm_heterogeneous_tasks_per_node_is_read_for_this_node() -> None:
    env = {
        "SLURM_PROCID": "4",
        "SLURM_NTASKS": "5",
        "SLURM_LOCALID": "0",
        "SLURM_NTASKS_PER_NODE": "2(x2),1",
        "SLURM_NODEID": "2",
    }
    assert read_launch_env(env).local_world_size == 1
    env["SLURM_NODEID"] = "0"
    assert read_launch_env(env).local_world_size == 2


def test_pmi_under_srun_takes_slurms_local_id() -> None:
    env = {"PMI_RANK": "3", "PMI_SIZE": "4", "SLURM_PROCID": "3", "SLURM_NTASKS": "4", "SLURM_LOCALID": "1"}
    launch = read_launch_env(env)
    assert (launch.source, launch.local_rank, launch.variable("local_rank")) == ("pmi", 1, "SLURM_LOCALID")


def test_frozen() -> None:
    launch = read_launch_env(TORCHRUN)
    with pytest.raises(AttributeError):
        launch.rank = 0  # type: ignore[misc]


def test_parser_does_not_import_torch() -> None:
    import subprocess

    code = "import sys, accelhal.distributed as d; d.read_launch_env({}); print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def _error(env: dict[str, str]) -> DistributedSetupError:
    with pytest.raises(DistributedSetupError) as info:
        read_launch_env(env)
    assert isinstance(info.value, ConfigurationError)
    return info.value


@pytest.mark.parametrize(
    ("env", "variable", "words"),
    [
        ({"RANK": "0"}, "WORLD_SIZE", ["RANK is set but WORLD_SIZE is not", "set WORLD_SIZE"]),
        ({"WORLD_SIZE": "2"}, "RANK", ["WORLD_SIZE is set but RANK is not"]),
        ({"OMPI_COMM_WORLD_RANK": "1"}, "OMPI_COMM_WORLD_SIZE", ["openmpi launch sets both"]),
        ({"LOCAL_RANK": "0"}, "LOCAL_RANK", ["RANK and WORLD_SIZE are not", "torchrun"]),
        ({"RANK": "1", "WORLD_SIZE": "2"}, "LOCAL_RANK", ["LOCAL_RANK is not", "index on its node"]),
        ({"PMI_RANK": "1", "PMI_SIZE": "2"}, "MPI_LOCALRANKID", ["MPI_LOCALRANKID or PMI_LOCAL_RANK or SLURM_LOCALID"]),
        ({**TORCHRUN, "RANK": "4"}, "RANK", ["RANK=4 is not below WORLD_SIZE=4", "0 to 3"]),
        ({**TORCHRUN, "LOCAL_RANK": "2"}, "LOCAL_RANK", ["LOCAL_RANK=2 is not below LOCAL_WORLD_SIZE=2"]),
        ({**TORCHRUN, "LOCAL_WORLD_SIZE": "8"}, "LOCAL_WORLD_SIZE", ["LOCAL_WORLD_SIZE=8 is larger than WORLD_SIZE=4"]),
        (
            {"SLURM_PROCID": "0", "SLURM_NTASKS": "2", "SLURM_LOCALID": "0", "SLURM_NTASKS_PER_NODE": "4"},
            "SLURM_NTASKS_PER_NODE",
            ["SLURM_NTASKS_PER_NODE=4 is larger than SLURM_NTASKS=2"],
        ),
        ({**TORCHRUN, "WORLD_SIZE": "0"}, "WORLD_SIZE", ["WORLD_SIZE must be an integer >= 1", "'0'"]),
        ({**TORCHRUN, "RANK": "-1"}, "RANK", ["RANK must be a non-negative integer", "'-1'"]),
        ({**TORCHRUN, "MASTER_PORT": "70000"}, "MASTER_PORT", ["between 1 and 65535", "'70000'"]),
        ({**TORCHRUN, "LOCAL_RANK": "²"}, "LOCAL_RANK", ["LOCAL_RANK must be a non-negative integer", "'²'"]),
        ({**TORCHRUN, "WORLD_SIZE": "٤"}, "WORLD_SIZE", ["WORLD_SIZE must be an integer >= 1", "'٤'"]),
        ({**TORCHRUN, "MASTER_PORT": "²"}, "MASTER_PORT", ["between 1 and 65535", "'²'"]),
        (
            {"SLURM_PROCID": "0", "SLURM_NTASKS": "8", "SLURM_LOCALID": "0", "SLURM_NTASKS_PER_NODE": "٤"},
            "SLURM_NTASKS_PER_NODE",
            ["such as '4' or '4(x2),2'"],
        ),
        (
            {"SLURM_PROCID": "0", "SLURM_NTASKS": "3", "SLURM_LOCALID": "0", "SLURM_NTASKS_PER_NODE": "2,x"},
            "SLURM_NTASKS_PER_NODE",
            ["such as '4' or '4(x2),2'"],
        ),
        (
            {"SLURM_PROCID": "0", "SLURM_NTASKS": "3", "SLURM_LOCALID": "0", "SLURM_NTASKS_PER_NODE": "2,1"},
            "SLURM_NODEID",
            ["differs between nodes", "srun"],
        ),
    ],
)
def test_bad_launch_environment_names_the_variable(env: dict[str, str], variable: str, words: list[str]) -> None:
    err = _error(env)
    assert err.variable == variable
    for word in words:
        assert word in str(err)


@pytest.mark.parametrize("value", ["x", "²", "٣"])
@pytest.mark.parametrize("variable", ["LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID"])
def test_a_local_rank_that_is_not_ascii_digits_names_the_variable(variable: str, value: str) -> None:
    """``str.isdigit`` takes ``"²"`` and ``int`` refuses it: both read the same as ``"x"``."""
    with pytest.raises(DistributedSetupError, match=f"{variable} must be a non-negative integer") as info:
        local_rank({variable: value})
    assert info.value.variable == variable
    with pytest.raises(DistributedSetupError, match="LOCAL_SIZE must be an integer >= 1"):
        local_size({"LOCAL_SIZE": value})


def _run_on_cpu(code: str, **variables: str) -> str:
    """``code`` in a fresh interpreter on the cpu backend, with no launcher variable but ``variables``."""
    import subprocess

    from accelhal.launch.known_launchers import LAUNCHER_VARIABLES

    dropped = ("ACCELHAL_", "DS_ACC", *LAUNCHER_VARIABLES)
    env = {k: v for k, v in os.environ.items() if not k.startswith(dropped)}
    env.update(ACCELHAL_ACCELERATOR="cpu", **variables)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_the_cpu_backends_current_device_names_a_non_ascii_local_rank() -> None:
    code = (
        "import accelhal\n"
        "from accelhal.errors import DistributedSetupError\n"
        "try:\n"
        "    accelhal.get_accelerator().current_device()\n"
        "except DistributedSetupError as exc:\n"
        "    print(exc.variable, '|', exc)\n"
    )
    out = _run_on_cpu(code, LOCAL_RANK="²")
    assert out.startswith("LOCAL_RANK | LOCAL_RANK must be a non-negative integer"), out


CHANGES = """
import os, accelhal
from accelhal.errors import ConfigurationError
acc = accelhal.get_accelerator()
def show():
    try:
        print(acc.current_device())
    except ConfigurationError as exc:
        print(exc.variable, exc.value)
show()
os.environ["OMPI_COMM_WORLD_LOCAL_RANK"] = "1"; show()
del os.environ["OMPI_COMM_WORLD_LOCAL_RANK"]; os.environ["SLURM_LOCALID"] = "3"; show()
os.environ["SLURM_LOCALID"] = "9"; show()
os.environ["SLURM_LOCALID"] = " "; show()
"""


def test_the_cpu_backend_follows_each_change_of_a_launchers_local_rank() -> None:
    """Changes that keep the number of variables (a value, one variable for another) are seen too."""
    out = _run_on_cpu(CHANGES, LOCAL_WORLD_SIZE="4", OMPI_COMM_WORLD_LOCAL_RANK="0")
    assert out.split("\n") == ["0", "1", "3", "SLURM_LOCALID 9", "0", ""]


AGREEMENT = """
import accelhal
from accelhal.launch.environment import local_rank, read_launch_env
print(accelhal.get_accelerator().current_device(), local_rank(), read_launch_env().local_rank)
"""


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        (
            {"LOCAL_RANK": "0", "OMPI_COMM_WORLD_RANK": "1", "OMPI_COMM_WORLD_SIZE": "2"},
            {"OMPI_COMM_WORLD_LOCAL_RANK": "1"},
        ),
        ({"MPI_LOCALRANKID": "0", "SLURM_PROCID": "1", "SLURM_NTASKS": "2"}, {"SLURM_LOCALID": "1"}),
        ({"OMPI_COMM_WORLD_LOCAL_RANK": "0", "PMI_RANK": "1", "PMI_SIZE": "2"}, {"SLURM_LOCALID": "1"}),
    ],
    ids=["openmpi-not-LOCAL_RANK", "slurm-not-MPI_LOCALRANKID", "pmi-not-OMPI_COMM_WORLD_LOCAL_RANK"],
)
def test_local_rank_is_the_launching_launchers_as_read_launch_env_reads_it(
    env: dict[str, str], expected: dict[str, str]
) -> None:
    """Another launcher's local-rank variable does not override the one of the launcher that set the rank."""
    both = {**env, **expected}
    [(variable, value)] = expected.items()
    assert local_rank(both) == (int(value), variable)
    assert read_launch_env(both).local_rank == int(value)
    assert read_launch_env(both).variable("local_rank") == variable
    out = _run_on_cpu(AGREEMENT, LOCAL_WORLD_SIZE="2", **both)
    assert out.split() == [value, f"({value},", f"'{variable}')", value]


SIZES = """
import accelhal
from accelhal.launch.environment import read_launch_env
print(accelhal.get_accelerator().device_count(), read_launch_env().local_world_size)
"""


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        (
            {"OMPI_COMM_WORLD_RANK": "1", "OMPI_COMM_WORLD_SIZE": "4", "OMPI_COMM_WORLD_LOCAL_RANK": "1"},
            {"OMPI_COMM_WORLD_LOCAL_SIZE": "2"},
        ),
        ({"SLURM_PROCID": "1", "SLURM_NTASKS": "8", "SLURM_LOCALID": "1"}, {"SLURM_NTASKS_PER_NODE": "4(x2)"}),
    ],
    ids=["openmpi-not-LOCAL_SIZE", "slurm-not-LOCAL_SIZE"],
)
def test_local_size_is_the_launching_launchers_as_read_launch_env_reads_it(
    env: dict[str, str], expected: dict[str, str]
) -> None:
    """DeepSpeed's ``LOCAL_SIZE`` left over from elsewhere does not override the launching launcher's count."""
    both = {**env, **expected, "LOCAL_SIZE": "1"}
    [(variable, _)] = expected.items()
    size = read_launch_env(both).local_world_size
    assert local_size(both) == (size, variable)
    assert _run_on_cpu(SIZES, **both).split() == [str(size), str(size)]


def test_local_size_and_local_world_size_that_disagree_name_both() -> None:
    with pytest.raises(DistributedSetupError, match=r"LOCAL_SIZE=1 and LOCAL_WORLD_SIZE=4 disagree"):
        local_size({"LOCAL_SIZE": "1", "LOCAL_WORLD_SIZE": "4", "RANK": "0", "WORLD_SIZE": "4", "LOCAL_RANK": "0"})
    assert local_size({"LOCAL_SIZE": "4", "LOCAL_WORLD_SIZE": "4"}) == (4, "LOCAL_SIZE")


FOLLOWS_SIZE = """
import os
import accelhal
acc = accelhal.get_accelerator()
seen = [acc.device_count()]
os.environ["LOCAL_WORLD_SIZE"] = "3"          # same size of environment, new value
seen.append(acc.device_count())
os.environ["SLURM_NTASKS_PER_NODE"] = "4(x2),2"
os.environ["SLURM_PROCID"], os.environ["SLURM_NTASKS"], os.environ["SLURM_LOCALID"] = "0", "10", "0"
del os.environ["LOCAL_WORLD_SIZE"], os.environ["RANK"], os.environ["WORLD_SIZE"], os.environ["LOCAL_RANK"]
os.environ["SLURM_NODEID"] = "2"
seen.append(acc.device_count())
os.environ["SLURM_NODEID"] = "0"               # only the node changes
seen.append(acc.device_count())
print(*seen)
"""


def test_the_cpu_backend_follows_each_change_of_the_local_world_size() -> None:
    out = _run_on_cpu(FOLLOWS_SIZE, RANK="0", WORLD_SIZE="4", LOCAL_RANK="0", LOCAL_WORLD_SIZE="4")
    assert out.split() == ["4", "3", "2", "4"]


def srun_task(procid: int, **overrides: str) -> dict[str, str]:
    """What ``srun -N2 --ntasks-per-node=2`` sets for task ``procid``, in a step on two of the job's four nodes."""
    env = srun_variables(procid, nodes=2, tasks_per_node=2, nodelist="node[03-05,07]", job_id="4321987")
    return {**env, "SLURM_STEP_NODELIST": "node[03,05]", **overrides}


def test_srun_task_reads_its_place_and_rank_zeros_host_from_the_step_nodelist() -> None:
    launches = [read_launch_env(srun_task(procid)) for procid in range(4)]
    assert [(la.rank, la.local_rank, la.local_world_size, la.world_size) for la in launches] == [
        (0, 0, 2, 4),
        (1, 1, 2, 4),
        (2, 0, 2, 4),
        (3, 1, 2, 4),
    ]
    for launch in launches:
        assert (launch.source, launch.master_addr, launch.master_port) == ("slurm", "node03", 15000 + 1987)
        assert launch.variable("local_world_size") == "SLURM_STEP_TASKS_PER_NODE"
        assert launch.variable("master_addr") == "SLURM_STEP_NODELIST"
        assert launch.variable("master_port") == "SLURM_JOB_ID"


def test_slurm_rendezvous_falls_back_to_the_job_nodelist_and_yields_to_master_variables() -> None:
    env = srun_task(1)
    del env["SLURM_STEP_NODELIST"]
    assert read_launch_env(env).master_addr == "node03"
    env["SLURM_JOB_NODELIST"] = "gpu[7-8],login"
    assert read_launch_env(env).master_addr == "gpu7"
    launch = read_launch_env({**env, "MASTER_ADDR": "head", "MASTER_PORT": "29400"})
    assert (launch.master_addr, launch.master_port) == ("head", 29400)
    assert launch.variable("master_addr") == "MASTER_ADDR"


def test_pmi_under_srun_takes_slurms_rendezvous() -> None:
    env = {"PMI_RANK": "3", "PMI_SIZE": "4", **srun_task(3)}
    launch = read_launch_env(env)
    assert (launch.source, launch.master_addr, launch.master_port) == ("pmi", "node03", 16987)


def test_a_malformed_nodelist_is_named_only_when_it_is_needed() -> None:
    env = srun_task(0, SLURM_STEP_NODELIST="node[03-")
    err = _error(env)
    assert err.variable == "SLURM_STEP_NODELIST"
    assert "MASTER_ADDR is not set and SLURM_STEP_NODELIST cannot give it" in str(err)
    assert "leaves a bracket open" in str(err) and "Set MASTER_ADDR to the host of rank 0" in str(err)
    assert read_launch_env({**env, "MASTER_ADDR": "node03"}).master_addr == "node03"


@pytest.mark.parametrize(
    "variables",
    [
        ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE"),
        ("PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS"),
    ],
    ids=["openmpi", "mpich"],
)
def test_mpi_on_one_node_defaults_to_loopback_and_torchruns_port(variables: tuple[str, str, str, str]) -> None:
    def launch(rank: int, world: int, local_rank: int, local_size: int | None) -> tuple[str | None, int | None]:
        values = [rank, world, local_rank, local_size]
        found = read_launch_env({name: str(v) for name, v in zip(variables, values, strict=True) if v is not None})
        return found.master_addr, found.master_port

    assert launch(1, 2, 1, 2) == ("127.0.0.1", 29500)
    assert launch(3, 4, 1, 2) == (None, 29500)  # across nodes: which host runs rank 0 is not said
    assert launch(1, 2, 1, None) == (None, 29500)  # no local size: nor here


def test_torchrun_gets_no_rendezvous_default() -> None:
    launch = read_launch_env(TORCHRUN)
    assert (launch.master_addr, launch.master_port) == (None, None)


def test_an_salloc_shell_is_not_a_launch_and_its_task_counts_are_not_read() -> None:
    """``salloc -n 5 -N 2`` sets the allocation's uneven ``SLURM_TASKS_PER_NODE`` but runs no task."""
    shell = {"SLURM_JOB_ID": "7", "SLURM_TASKS_PER_NODE": "3,2", "SLURM_JOB_NODELIST": "node[1-2]"}
    assert read_launch_env(shell).source == "none"
    assert local_size(shell) is None
