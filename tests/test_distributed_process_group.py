"""init_process_group in this process (real gloo, world size 1) and its refusals, with a patched environment."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from datetime import timedelta

import pytest
import torch
import torch.distributed as dist

import accelhal
import accelhal.distributed as ahd
from accelhal.distributed import process_group
from accelhal_backends.cpu.accelerator import CpuAccelerator
from tests.sharing import free_port


class _VendorLikeCpu(CpuAccelerator):
    """The cpu accelerator declaring another comm backend and visible-devices variable (as a vendor would)."""

    _communication_backend_name = "hccl"
    _visible_devices_envs = ("DEMO_VISIBLE_DEVICES",)
    _export_envs = ("DEMO_", "GLOO_")


@pytest.fixture
def environ(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, str]]:
    """An isolated os.environ without launcher variables, on the cpu accelerator."""
    launcher = {
        n
        for launcher in ahd.LAUNCHERS
        for f in ("rank", "world_size", "local_rank", "local_world_size")
        for n in getattr(launcher, f)
    }
    env = {k: v for k, v in os.environ.items() if k not in launcher and not k.startswith(("MASTER_", "LOCAL_SIZE"))}
    env["ACCELHAL_ACCELERATOR"] = "cpu"
    monkeypatch.setattr(os, "environ", env)
    accelhal.reset_accelerator()
    yield env
    ahd.destroy_process_group()
    accelhal.reset_accelerator()


def _single(env: dict[str, str], **extra: str) -> None:
    env.update(RANK="0", WORLD_SIZE="1", LOCAL_RANK="0", LOCAL_WORLD_SIZE="1", MASTER_ADDR="127.0.0.1")
    env["MASTER_PORT"] = str(free_port())
    env.update(extra)


def _refusal(**kwargs: object) -> accelhal.DistributedSetupError:
    with pytest.raises(accelhal.DistributedSetupError) as info:
        ahd.init_process_group(**kwargs)  # type: ignore[arg-type]
    assert not dist.is_initialized(), "a refused set-up must leave nothing behind"
    return info.value


def test_single_process_gloo_group_is_idempotent_and_conflicts_raise(environ: dict[str, str]) -> None:
    _single(environ)
    setup = ahd.init_process_group()
    assert (setup.backend, setup.rank, setup.world_size, setup.local_rank) == ("gloo", 0, 1, 0)
    assert setup.device == torch.device("cpu") and setup.accelerator == "cpu" and setup.launch.source == "torchrun"
    assert dist.is_initialized() and dist.get_backend() == "gloo"
    assert ahd.init_process_group() is setup
    assert ahd.init_process_group("gloo", world_size=1, rank=0) is setup
    assert ahd.init_process_group("cpu:gloo") is setup
    with pytest.raises(accelhal.DistributedSetupError, match=r"backend='nccl' \(it has 'gloo'\)") as info:
        ahd.init_process_group("nccl")
    assert info.value.variable == "backend"
    tensor = torch.tensor([2.0])
    dist.all_reduce(tensor)
    assert tensor.item() == 2.0
    assert all(result.passed for result in ahd.selfcheck(setup.device, sizes=(3,)))
    ahd.destroy_process_group()
    assert not dist.is_initialized()
    ahd.destroy_process_group()  # a second teardown is a no-op


def test_group_set_up_by_torch_directly_is_accepted_or_refused(environ: dict[str, str]) -> None:
    _single(environ)
    dist.init_process_group("gloo", rank=0, world_size=1)
    setup = ahd.init_process_group()
    assert (setup.backend, setup.world_size) == ("gloo", 1)
    with pytest.raises(accelhal.DistributedSetupError, match="already initialised"):
        ahd.init_process_group("mpi")


def test_mpi_launch_exports_torch_variables(environ: dict[str, str]) -> None:
    environ.update(OMPI_COMM_WORLD_RANK="0", OMPI_COMM_WORLD_SIZE="1", OMPI_COMM_WORLD_LOCAL_RANK="0")
    environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port()))
    setup = ahd.init_process_group()
    assert setup.launch.source == "openmpi"
    assert (environ["RANK"], environ["WORLD_SIZE"], environ["LOCAL_RANK"]) == ("0", "1", "0")
    assert "LOCAL_WORLD_SIZE" not in environ  # Open MPI did not say, so neither do we


@pytest.mark.parametrize("restarts", ["1", "0"])
def test_torchruns_shared_store_with_restarts_is_warned_of(
    environ: dict[str, str], caplog: pytest.LogCaptureFixture, restarts: str
) -> None:
    """torchrun hosts the store (here a real TCPStore playing its agent) and may restart the job: warned."""
    agent = {"TORCHELASTIC_USE_AGENT_STORE": "True", "TORCHELASTIC_RESTART_COUNT": "0"}  # torchrun sets both
    _single(environ, **agent, TORCHELASTIC_MAX_RESTARTS=restarts)
    agent_store = dist.TCPStore("127.0.0.1", int(environ["MASTER_PORT"]), is_master=True, wait_for_workers=False)
    with caplog.at_level("WARNING", logger="accelhal.distributed"):
        ahd.init_process_group()
    warned = [r.getMessage() for r in caplog.records if "TORCH_DISABLE_SHARE_RDZV_TCP_STORE=1" in r.getMessage()]
    assert len(warned) == (restarts != "0")
    if warned:
        assert "--max-restarts=1" in warned[0] and "read the previous group's addresses" in warned[0]
    del agent_store


def test_missing_master_addr_is_refused(environ: dict[str, str]) -> None:
    _single(environ)
    del environ["MASTER_ADDR"]
    err = _refusal()
    assert err.variable == "MASTER_ADDR"
    assert "MASTER_ADDR is not set but the rendezvous is env://" in str(err)
    assert "init_method='tcp://HOST:PORT'" in str(err)


def test_mpi_across_nodes_without_master_addr_says_how_to_forward_it(environ: dict[str, str]) -> None:
    environ.update(OMPI_COMM_WORLD_RANK="0", OMPI_COMM_WORLD_SIZE="4", OMPI_COMM_WORLD_LOCAL_RANK="0")
    environ.update(OMPI_COMM_WORLD_LOCAL_SIZE="1")
    err = _refusal()
    assert err.variable == "MASTER_ADDR" and "MASTER_PORT" not in str(err).split(" but ")[0]
    assert "mpirun -x MASTER_ADDR=<host of rank 0> -x MASTER_PORT=29500" in str(err)
    assert "RANK" not in environ  # refused before anything was exported


def test_missing_both_rendezvous_variables_with_explicit_env_method(environ: dict[str, str]) -> None:
    _single(environ)
    del environ["MASTER_ADDR"], environ["MASTER_PORT"]
    assert "MASTER_ADDR and MASTER_PORT are not set" in str(_refusal(init_method="env://"))


def test_tcp_init_method_needs_no_master_variables(environ: dict[str, str]) -> None:
    _single(environ)
    port = environ.pop("MASTER_PORT")
    del environ["MASTER_ADDR"]
    setup = ahd.init_process_group(init_method=f"tcp://127.0.0.1:{port}")
    assert setup.world_size == 1


@pytest.mark.parametrize("value", ["0", "-5", "soon", "inf", "1e300", "0.0001", "0.5"])
def test_bad_timeout_setting_is_refused_before_anything_is_set_up(environ: dict[str, str], value: str) -> None:
    _single(environ, ACCELHAL_DIST_TIMEOUT=value)
    refused = "ACCELHAL_DIST_TIMEOUT=.* is not a number of seconds from 1 to 1000000"
    with pytest.raises(accelhal.ConfigurationError, match=refused) as info:
        ahd.init_process_group()
    assert info.value.variable == "ACCELHAL_DIST_TIMEOUT" and not dist.is_initialized()


def test_local_rank_beyond_visible_devices_is_refused(environ: dict[str, str]) -> None:
    _single(environ, RANK="63", WORLD_SIZE="64", LOCAL_RANK="63")
    del environ["LOCAL_WORLD_SIZE"]
    count = accelhal.get_accelerator().device_count()
    assert count <= 63
    err = _refusal()
    assert err.variable == "LOCAL_RANK"
    assert f"LOCAL_RANK=63 but this process sees only {count} cpu device(s)" in str(err)
    assert f"--nproc_per_node={count}" in str(err)


def test_refused_mpi_launch_writes_no_torch_variables(environ: dict[str, str]) -> None:
    """An Open MPI launch whose local rank has no device is refused before RANK etc. are exported."""
    environ.update(OMPI_COMM_WORLD_RANK="63", OMPI_COMM_WORLD_SIZE="64", OMPI_COMM_WORLD_LOCAL_RANK="63")
    environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port()))
    before = dict(environ)
    err = _refusal()
    assert "OMPI_COMM_WORLD_LOCAL_RANK=63" in str(err)
    assert environ == before


def test_local_rank_message_shows_the_visible_devices_variable(environ: dict[str, str]) -> None:
    _single(environ, RANK="7", WORLD_SIZE="8", LOCAL_RANK="7", DEMO_VISIBLE_DEVICES="0,1")
    del environ["LOCAL_WORLD_SIZE"]
    accelhal.set_accelerator(_VendorLikeCpu())
    err = _refusal(backend="gloo")
    assert "(DEMO_VISIBLE_DEVICES='0,1')" in str(err)


def test_comm_backend_torch_lacks_is_refused(environ: dict[str, str]) -> None:
    _single(environ)
    lacking = next(name for name in ("nccl", "mpi", "ucc") if not dist.is_backend_available(name))  # CPU or CUDA build
    err = _refusal(backend=lacking)
    assert err.variable == "backend" and err.value == lacking
    assert f"communication backend {lacking!r} (from the backend argument) is not available" in str(err)
    assert "Available here: gloo" in str(err)
    composite = f"cpu:gloo,cuda:{lacking}"  # each name is checked (torch 2.4 calls "cpu:gloo" itself unavailable)
    assert f"backend {lacking!r} (in {composite!r}) (from the backend argument)" in str(_refusal(backend=composite))


def test_accelerators_own_comm_backend_is_checked(environ: dict[str, str]) -> None:
    _single(environ)
    accelhal.set_accelerator(_VendorLikeCpu())
    err = _refusal()
    assert "'hccl' (from the 'cpu' accelerator's communication_backend_name())" in str(err)


@pytest.mark.parametrize(
    ("env", "kwargs", "variable", "message"),
    [
        (
            {"WORLD_SIZE": "1"},
            {"world_size": 2},
            "WORLD_SIZE",
            "world_size=2 was passed but the torchrun launcher set WORLD_SIZE=1",
        ),
        ({}, {"rank": 1}, "RANK", "rank=1 was passed but the torchrun launcher set RANK=0"),
        (None, {"world_size": 2}, "world_size", "no launcher set this process's rank"),
        (None, {"rank": 1}, "rank", "rank=1 is not within world_size=1"),
    ],
)
def test_world_size_or_rank_that_does_not_match_is_refused(
    environ: dict[str, str], env: dict[str, str] | None, kwargs: dict[str, int], variable: str, message: str
) -> None:
    if env is not None:
        _single(environ, **env)
    err = _refusal(**kwargs)
    assert err.variable == variable
    assert message in str(err)


def test_openmpi_world_size_mismatch_names_openmpi_variable(environ: dict[str, str]) -> None:
    environ.update(OMPI_COMM_WORLD_RANK="0", OMPI_COMM_WORLD_SIZE="1", MASTER_ADDR="127.0.0.1", MASTER_PORT="1234")
    assert _refusal(world_size=4).variable == "OMPI_COMM_WORLD_SIZE"


def test_device_id_is_passed_only_to_device_backends() -> None:
    cuda = torch.device("cuda", 1)
    assert process_group._connects_eagerly("nccl", cuda)
    assert process_group._connects_eagerly("cpu:gloo,cuda:nccl", cuda)
    assert not process_group._connects_eagerly("gloo", cuda)
    assert not process_group._connects_eagerly("gloo", torch.device("cpu"))
    assert not process_group._connects_eagerly("nccl", torch.device("cpu"))


def test_child_environment_helpers_delegate_to_the_accelerator(environ: dict[str, str]) -> None:
    child: dict[str, str] = {}
    ahd.set_visible_devices_envs(child, [0, 1])
    assert child == {}  # the cpu backend has no visible-devices variable
    accelhal.set_accelerator(_VendorLikeCpu())
    ahd.set_visible_devices_envs(child, [2, "3"])
    assert child == {"DEMO_VISIBLE_DEVICES": "2,3"}
    assert ahd.export_envs() == ["DEMO_", "GLOO_"]


def test_selfcheck_reports_a_wrong_result() -> None:
    from accelhal.distributed import checks

    result = checks._compare("x", torch.tensor([1.0, 2.0]), torch.tensor([1.0, 3.0]))
    assert not result.passed and "1 of 2 elements differ" in result.detail


@pytest.mark.parametrize(
    ("arguments", "words"),
    [
        ({"backend": 5}, "backend=5 cannot be right: give a torch.distributed backend name"),
        ({"init_method": 5}, "init_method=5 cannot be right: give a URL"),
        ({"world_size": "1"}, "world_size='1' cannot be right: give an int from 1"),
        ({"rank": True}, "rank=True cannot be right: give an int from 0"),
        ({"timeout": timedelta(seconds=-5)}, "cannot be right: give a positive timedelta"),
    ],
    ids=["backend", "init_method", "world_size", "rank", "timeout"],
)
def test_an_argument_of_the_wrong_type_is_named_before_anything_is_set_up(
    environ: dict[str, str], arguments: dict[str, object], words: str
) -> None:
    """Before, ``backend=5`` raised a bare AttributeError and ``world_size="1"`` a message contradicting itself."""
    environ.update(RANK="0", WORLD_SIZE="1", LOCAL_RANK="0", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port()))
    with pytest.raises(accelhal.DistributedSetupError, match=re.escape(words)) as info:
        ahd.init_process_group(**arguments)  # type: ignore[arg-type]
    assert info.value.variable == next(iter(arguments))
    assert not dist.is_initialized()
