"""Jobs beyond one torchrun: two torchrun agents standing in for two nodes, an elastic restart, a lost rank.

Real processes throughout (gloo on cpu): two ``python -m torch.distributed.run --nnodes=2`` agents
with a c10d rendezvous on this host, 2 workers each, set up by ``accelhal.distributed``; and
plain processes launched the way MPI or Slurm would, one of which is killed or frozen.
"""

from __future__ import annotations

import json
import time
from functools import reduce
from pathlib import Path

import pytest
import torch

from tests.cluster_launch import PYTHON, WORKER, clean_env, free_port, records, running, start, tail, wait
from tests.distributed_cluster_worker import fold
from tests.torch_features import needs_gloo_teardown_after_restart

pytestmark = pytest.mark.slow  # processes of their own for seconds each

NODES, PER_NODE, STEPS, KILL_AT = 2, 2, 8, 3
WORLD = NODES * PER_NODE


def torchrun_agents(
    out: Path, *worker_args: str, max_restarts: int = 0, per_node: int = PER_NODE, node_variables: tuple = ({}, {})
) -> tuple[list[int | None], str]:
    """Run two torchrun agents (``--nnodes=2``, c10d rendezvous on a free port) to their end; exit codes, logs."""
    port = free_port()
    logs = [out / f"agent{node}.log" for node in range(NODES)]
    with running(out) as processes:
        for node, log in enumerate(logs):
            # torch 2.13's torchrun keeps the store it shares with the workers across restarts, and the
            # restarted workers then read the first group's gloo addresses ("Connection refused"):
            # this variable gives each group a store of its own (accelhal warns of the shared one).
            env = clean_env(TORCH_DISABLE_SHARE_RDZV_TCP_STORE="1", **node_variables[node])
            command = [PYTHON, "-m", "torch.distributed.run", f"--nnodes={NODES}", f"--node-rank={node}"]
            command += [f"--nproc-per-node={per_node}", "--rdzv-backend=c10d", f"--rdzv-endpoint=127.0.0.1:{port}"]
            command += [f"--rdzv-id=job-{port}", "--local-addr=127.0.0.1", f"--max-restarts={max_restarts}"]
            command += ["--monitor-interval=0.2", WORKER, *worker_args]
            processes.append(start(command, env, log))
        codes = wait(processes, timeout=300)
    return codes, tail(*logs)


@needs_gloo_teardown_after_restart
def test_two_torchrun_agents_form_one_group_which_restarts_and_resumes(tmp_path: Path) -> None:
    """One two-node job (run once, asserting all): the last rank kills itself at step KILL_AT; torchrun restarts."""
    started = time.monotonic()
    codes, logs = torchrun_agents(tmp_path, "elastic", str(tmp_path), str(STEPS), str(KILL_AT), max_restarts=1)
    seconds = time.monotonic() - started
    assert codes == [0, 0], logs
    reports = records(tmp_path, "report-*.json")
    first = [r for r in reports if r["resumed"]["next_step"] == 0]
    second = [r for r in reports if r["resumed"]["next_step"] != 0]
    for group in (first, second):
        check_two_node_group(group)
    check_restart(first, second, records(tmp_path, "elastic-rank*.json"))
    print(f"elastic two-node job: {seconds:.1f} s, restarted at step {KILL_AT}")


def check_two_node_group(group: list[dict]) -> None:
    """Every rank of one group: ranks, local ranks, nodes, devices, rendezvous and collectives agree."""
    assert sorted(r["rank"] for r in group) == list(range(WORLD))
    expected_pairs = sorted([r["rank"], r["node"]] for r in group)
    for record in group:
        assert (record["source"], record["world_size"], record["local_world_size"]) == ("torchrun", WORLD, PER_NODE)
        assert record["rank"] == record["node"] * PER_NODE + record["local_rank"]  # torchrun's numbering
        assert record["device"] == record["expected_device"] == "cpu"
        assert record["all_reduce"] == [WORLD * (WORLD + 1) // 2] * 2
        assert record["all_gather"] == expected_pairs  # every rank's (rank, node), in rank order
        assert record["master"][0] == "127.0.0.1" and record["master_from"] == ["MASTER_ADDR", "MASTER_PORT"]
        kind, message, seconds = record["guarded"]  # all alive: the guard let the error through unchanged
        assert (kind, message) == ("RuntimeError", "a failure no lost rank explains") and seconds < 3
    nodes = {r["node"] for r in group}
    assert nodes == set(range(NODES))
    assert all(sorted(r["local_rank"] for r in group if r["node"] == n) == [0, 1] for n in nodes)


def check_restart(first: list[dict], second: list[dict], final: list[dict]) -> None:
    """The proof of the restart, and that the restarted group resumed where the first left off."""
    # a second group of new processes; on the node whose worker died, restart count 1
    assert len(first) == len(second) == WORLD
    assert not {r["pid"] for r in first} & {r["pid"] for r in second}
    assert sorted(r["restart_count"] for r in second)[-PER_NODE:] == [1] * PER_NODE
    # it resumed from the checkpoint of the last step the first group finished, and repeated none
    assert all(r["resumed"]["next_step"] == KILL_AT for r in second)
    assert sorted(r["rank"] for r in final) == list(range(WORLD))
    assert {r["pid"] for r in final} == {r["pid"] for r in second}
    assert all(r["ran"] == list(range(KILL_AT, STEPS)) for r in final)
    # and ended where a run without the failure ends
    contributions = (sum(rank * number + 1 for rank in range(WORLD)) for number in range(STEPS))
    assert {r["state"] for r in final} == {reduce(fold, contributions, 0)}


@pytest.mark.multigpu
@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs two CUDA GPUs")
def test_two_torchrun_agents_on_two_gpus_form_an_nccl_group(tmp_path: Path) -> None:
    """Each agent, a stand-in for a node, sees one GPU (CUDA_VISIBLE_DEVICES): NCCL between the two."""
    nodes = tuple({"ACCELHAL_ACCELERATOR": "", "CUDA_VISIBLE_DEVICES": str(n)} for n in range(NODES))
    codes, logs = torchrun_agents(tmp_path, "report", str(tmp_path), per_node=1, node_variables=nodes)
    assert codes == [0, 0], logs
    group = records(tmp_path, "report-rank*.json")
    assert sorted(r["rank"] for r in group) == list(range(NODES))
    for record in group:
        assert (record["backend"], record["device"], record["expected_device"]) == ("nccl", "cuda:0", "cuda:0")
        assert record["local_rank"] == 0 and record["node"] == record["rank"]
        assert record["all_reduce"] == [3, 3]
        assert record["all_gather"] == [[0, 0], [1, 1]]
        assert record["guarded"][:2] == ["RuntimeError", "a failure no lost rank explains"]


def lost_rank_job(out: Path, world: int, victim: int, signal_name: str) -> list:
    """Start ``world`` plain processes (each given its rank, as MPI or srun would); rank ``victim`` is lost."""
    port = str(free_port())
    out.mkdir()
    with running(out) as processes:
        for rank in range(world):
            variables = {"RANK": str(rank), "WORLD_SIZE": str(world), "LOCAL_RANK": str(rank)}
            variables |= {"LOCAL_WORLD_SIZE": str(world), "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": port}
            env = clean_env(ACCELHAL_DIST_TIMEOUT="4", **variables)
            command = [PYTHON, WORKER, "lost", str(out), str(victim), signal_name]
            processes.append(start(command, env, out / f"rank{rank}.log"))
        survivors = [p for rank, p in enumerate(processes) if rank != victim]
        codes = wait(survivors, timeout=120)
        assert codes == [0] * len(survivors), tail(*out.glob("rank*.log"))
    return codes


@pytest.mark.parametrize(
    ("world", "victim", "signal_name", "bound"),
    [
        (3, 1, "KILL", 3.0 + 4.0),  # dies: gloo sees the closed connections, the heartbeat names it
        (2, 1, "STOP", 4.0 + 3.0 + 4.0),  # freezes, as a node that vanished: gloo's timeout (4 s) first
        (2, 0, "KILL", 3.0 + 4.0),  # rank 0 hosted the store: it no longer answers
    ],
    ids=["killed", "frozen", "store-host-killed"],
)
def test_the_ranks_left_name_the_lost_rank_within_a_bound(
    tmp_path: Path, world: int, victim: int, signal_name: str, bound: float
) -> None:
    """Without a launcher that tears the job down, survivors fail within ACCELHAL_DIST_TIMEOUT + 3 s, naming it."""
    lost_rank_job(tmp_path / "job", world, victim, signal_name)
    death = json.loads((tmp_path / "job" / "death.json").read_text())["time"]
    survivors = records(tmp_path / "job", "lost-rank*.json")
    assert sorted(r["rank"] for r in survivors) == [r for r in range(world) if r != victim]
    for record in survivors:
        assert record["error"] == "RankLostError", record
        assert record["ranks"] == [victim]
        assert record["message"].startswith(f"rank {victim} of {world} is lost: ")
        assert f"rank {record['rank']} cannot go on with the job" in record["message"]
        assert record["group_destroyed"]
        assert record["cause"]  # torch's own error is chained
        seconds = record["time"] - death
        print(f"{signal_name} rank {victim} of {world}: rank {record['rank']} raised after {seconds:.2f} s")
        assert 0 < seconds < bound, record
