"""Join this process to its job's process group on the active accelerator.

:func:`init_process_group` has torch's name and arguments, and adds the launcher's variables,
the accelerator's communication backend, the local device and this rank's heartbeat
(:mod:`~accelhal.distributed.liveness`); :func:`destroy_process_group` tears the group down.
"""

from __future__ import annotations

import logging
import os
import threading
from dataclasses import dataclass
from datetime import timedelta
from typing import Any
from urllib.parse import urlsplit

import torch
import torch.distributed as dist

from accelhal.contract.accelerator import Accelerator
from accelhal.distributed import host_staging, liveness
from accelhal.errors import DistributedSetupError
from accelhal.launch.environment import TORCH_VARIABLES, LaunchEnv, read_launch_env
from accelhal.process.settings import dist_timeout
from accelhal.text import quote

logger = logging.getLogger("accelhal.distributed")

HOST_BACKENDS = frozenset({"gloo", "mpi", host_staging.NAME})
"""Backends that are not given ``device_id`` (they do not connect eagerly to a device)."""


@dataclass(frozen=True)
class ProcessGroupSetup:
    """What :func:`init_process_group` set up (or found set up)."""

    backend: str
    """The ``torch.distributed`` backend of the default group (``"nccl"``, ``"gloo"``, ``"hostgloo"`` on mps ...)."""
    rank: int
    world_size: int
    local_rank: int
    device: torch.device
    """This process's device (``accelerator.device(local_rank)``); put tensors and models here."""
    accelerator: str
    """The name of the accelhal backend that was active (``"cuda"``, ``"cpu"``, ...)."""
    launch: LaunchEnv
    """The launcher's variables as read."""


_lock = threading.Lock()
_setup: ProcessGroupSetup | None = None


def init_process_group(
    backend: str | None = None,
    *,
    init_method: str | None = None,
    timeout: timedelta | None = None,
    world_size: int | None = None,
    rank: int | None = None,
    device_id: Any = ...,
    **kwargs: Any,
) -> ProcessGroupSetup:
    """Join this process to the default process group on the active accelerator.

    Before anything is set up, it reads the launcher's variables
    (:func:`~accelhal.distributed.read_launch_env`; ``MASTER_ADDR``/``MASTER_PORT`` defaults
    for MPI and Slurm) and checks ``world_size``/``rank`` against them, checks that this torch
    has the backend, that the rendezvous variables are set (``env://``) and that the local rank
    has a visible device. It then binds the process to its local device
    (``set_device(local_rank)``) and, in a group of two or more ranks with a TCP store, starts
    this rank's heartbeat so that the ranks left when one is lost can name it.

    Args:
        backend: the ``torch.distributed`` backend; ``None`` takes the active accelerator's
            ``communication_backend_name()``. ``gloo`` on a device gloo cannot carry (mps) sets up
            ``hostgloo`` (:mod:`~accelhal.distributed.host_staging`); ``"cpu:gloo"`` keeps plain gloo.
        init_method: as in torch; ``None`` means ``env://`` (``MASTER_ADDR``/``MASTER_PORT``).
        timeout: as in torch; ``None`` takes ``ACCELHAL_DIST_TIMEOUT`` (600 seconds when unset), which
            bounds the rendezvous and every collective of the group.
        world_size: must equal the launcher's world size when one was launched;
            ``None`` (or torch's ``-1``) takes it from the launcher.
        rank: likewise for the rank.
        device_id: ``...`` (default) passes ``accelerator.device(local_rank)`` where the backend
            connects eagerly; ``None`` passes nothing; anything else is passed as given.
        **kwargs: passed to :func:`torch.distributed.init_process_group` (``store``, ``pg_options``, ...).

    Returns:
        The :class:`ProcessGroupSetup`; a repeated call with the same settings returns it again.

    Raises:
        DistributedSetupError: the environment or the arguments do not add up (nothing was set
            up), or a group is already set up with other settings; it names the variable or
            argument at fault and what would be right.

    Example (under ``torchrun --nproc_per_node=2 train.py``)::

        import accelhal.distributed as ahd

        setup = ahd.init_process_group()        # nccl on cuda, gloo on cpu, hccl on npu ...
        model = torch.nn.parallel.DistributedDataParallel(model.to(setup.device))
        ...
        ahd.destroy_process_group()
    """
    global _setup
    from accelhal.selection import get_accelerator

    if not dist.is_available():
        raise DistributedSetupError(
            f"this torch {torch.__version__} was built without torch.distributed; install a build with it "
            f"(the official wheels have it)"
        )
    _check_argument_types(backend, init_method, timeout, world_size, rank)
    accelerator = get_accelerator()
    launch = read_launch_env()
    world, own_rank = _reconcile(launch, world_size, rank)
    if timeout is None:
        timeout = timedelta(seconds=dist_timeout())
    asked = (backend or accelerator.communication_backend_name()).strip().lower()
    name = host_staging.backend_for(asked, accelerator.device_type)
    with _lock:
        if dist.is_initialized():
            return _existing(accelerator, launch, name, world, own_rank)
        if "store" not in kwargs:
            _check_rendezvous(launch, init_method)
        _check_backend(asked, accelerator, requested=backend is not None)
        _check_local_device(launch, accelerator)  # before anything is written: a refusal changes nothing
        _export_torch_variables(launch)
        if host_staging.NAME in _backend_names(name):  # set up for gloo, or asked for by its name
            host_staging.register(accelerator.device_type)
        accelerator.set_device(launch.local_rank)
        device = accelerator.device(launch.local_rank)
        if device_id is ...:
            device_id = device if _connects_eagerly(name, device) else None
        if device_id is not None:
            kwargs["device_id"] = device_id
        dist.init_process_group(
            backend=name, init_method=init_method, timeout=timeout, world_size=world, rank=own_rank, **kwargs
        )
        _warn_of_a_shared_store_across_restarts()
        store = None if "store" in kwargs else _store_address(launch, init_method)
        if world > 1 and store is not None:
            liveness.start(store, own_rank, world)
        _setup = ProcessGroupSetup(name, own_rank, world, launch.local_rank, device, accelerator.name, launch)
        return _setup


def destroy_process_group() -> None:
    """Tear down the default process group; a no-op when there is none.

    After it, :func:`init_process_group` may be called again (with other settings).
    """
    global _setup
    with _lock:
        _setup = None
        liveness.stop(left=True)
        if dist.is_available() and dist.is_initialized():
            backends = _backends_of_every_group()
            dist.destroy_process_group()
            backends.clear()  # the backends' destructors run here, without the GIL (see _backends_of_every_group)


def _backends_of_every_group() -> list[object]:
    """Return a reference to every backend of every process group, to be dropped once the groups are destroyed.

    The backends' bindings release the GIL before their destructors run, so dropping the list frees
    them without it; torch releases no GIL when a ``ProcessGroup`` takes its backends down with it,
    which can deadlock with a gloo worker thread (``docs/distributed.md``, "Tearing down").
    Best effort: a torch without these private members gets an empty list.
    """
    from torch.distributed import distributed_c10d

    backends: list[object] = []
    try:
        for group in list(distributed_c10d._world.pg_map):
            backends += [group._get_backend(device) for device in group._device_types]
    except (AttributeError, RuntimeError, TypeError, ValueError) as err:
        logger.debug("accelhal: cannot hold the process groups' backends across their teardown: %s", err)
    return backends


def _check_argument_types(
    backend: object, init_method: object, timeout: object, world_size: object, rank: object
) -> None:
    """Raise :class:`DistributedSetupError` naming the first argument whose type or sign cannot be right."""
    wanted = {
        "backend": (backend, isinstance(backend, str), "a torch.distributed backend name such as 'gloo'"),
        "init_method": (init_method, isinstance(init_method, str), "a URL such as 'env://'"),
        "timeout": (timeout, isinstance(timeout, timedelta) and timeout > timedelta(0), "a positive timedelta"),
        "world_size": (world_size, _is_count(world_size, -1), "an int from 1 (-1 takes the launcher's)"),
        "rank": (rank, _is_count(rank, -1), "an int from 0 (-1 takes the launcher's)"),
    }
    for argument, (given, right, what) in wanted.items():
        if given is not None and not right:
            raise DistributedSetupError(
                f"{argument}={quote(given)} cannot be right: give {what}, or leave it out",
                variable=argument,
                value=given,
            )


def _is_count(value: object, lowest: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= lowest


def _reconcile(launch: LaunchEnv, world_size: int | None, rank: int | None) -> tuple[int, int]:
    """Return the world size and rank to use: the launcher's, which explicit arguments must match."""
    world_size = None if world_size == -1 else world_size
    rank = None if rank == -1 else rank
    if not launch.launched and world_size not in (None, 1):
        raise DistributedSetupError(
            f"world_size={world_size} was passed but no launcher set this process's rank (none of RANK, "
            f"OMPI_COMM_WORLD_RANK, PMI_RANK, SLURM_PROCID is set); start the processes with torchrun, mpirun "
            f"or srun, or set RANK, WORLD_SIZE and LOCAL_RANK for each",
            variable="world_size",
            value=world_size,
        )
    for argument, given, found in (("world_size", world_size, launch.world_size), ("rank", rank, launch.rank)):
        if given is not None and given != found and launch.launched:
            variable = launch.variable(argument)
            raise DistributedSetupError(
                f"{argument}={given} was passed but the {launch.source} launcher set {variable}={found}; "
                f"pass {argument}={found} or leave it out",
                variable=variable,
                value=given,
            )
    own_rank = launch.rank if rank is None else rank
    if own_rank >= launch.world_size or own_rank < 0:
        raise DistributedSetupError(
            f"rank={own_rank} is not within world_size={launch.world_size}: ranks count from 0 to "
            f"{launch.world_size - 1}",
            variable="rank",
            value=own_rank,
        )
    return launch.world_size, own_rank


def _check_rendezvous(launch: LaunchEnv, init_method: str | None) -> None:
    if init_method is not None and not init_method.startswith("env://"):
        return
    missing = [
        name
        for name, value in (("MASTER_ADDR", launch.master_addr), ("MASTER_PORT", launch.master_port))
        if value is None
    ]
    if missing:
        forward = _FORWARD.get(launch.source, "")
        raise DistributedSetupError(
            f"{' and '.join(missing)} {'is' if len(missing) == 1 else 'are'} not set but the rendezvous is env:// "
            f"(init_method={init_method!r}): set MASTER_ADDR to the host of rank 0 (127.0.0.1 on one node) and "
            f"MASTER_PORT to a free TCP port{forward}, launch with torchrun (which sets both), or pass "
            f"init_method='tcp://HOST:PORT'",
            variable=missing[0],
        )


_FORWARD = {
    "openmpi": " for every rank (mpirun -x MASTER_ADDR=<host of rank 0> -x MASTER_PORT=29500)",
    "pmi": " for every rank (mpiexec -genv MASTER_ADDR <host of rank 0> -genv MASTER_PORT 29500)",
}
"""How an MPI launcher passes a variable to every rank, for the message about a missing rendezvous."""


def _warn_of_a_shared_store_across_restarts() -> None:
    """Warn of torch's stale keys under a torchrun that may restart its workers and shares its store with them."""
    if os.environ.get("TORCHELASTIC_USE_AGENT_STORE") != "True":
        return
    restarts = os.environ.get("TORCHELASTIC_MAX_RESTARTS", "0").strip()
    if restarts.isdecimal() and restarts.strip("0"):  # any count above 0, however many digits
        logger.warning(
            "accelhal: torchrun may restart this job (--max-restarts=%s) and shares its rendezvous store with the "
            "workers; torch keeps that store for every restart, so a restarted group can read the previous "
            "group's addresses and fail to connect (gloo: 'Connection refused'; pytorch issue 135712). Start "
            "torchrun with TORCH_DISABLE_SHARE_RDZV_TCP_STORE=1 in its environment",
            restarts,
        )


def _store_address(launch: LaunchEnv, init_method: str | None) -> liveness.StoreAddress | None:
    """Return where the rendezvous store of ``env://`` or ``tcp://HOST:PORT`` listens; ``None`` for other methods."""
    agent = os.environ.get("TORCHELASTIC_USE_AGENT_STORE") == "True"  # torchrun's agent hosts it, not rank 0
    if init_method is None or init_method.startswith("env://"):
        if launch.master_addr is None or launch.master_port is None:
            return None
        return liveness.StoreAddress(launch.master_addr, launch.master_port, hosted_by_rank0=not agent)
    url = urlsplit(init_method)
    if url.scheme != "tcp" or url.hostname is None or url.port is None:
        return None
    return liveness.StoreAddress(url.hostname, url.port, hosted_by_rank0=True)


def _check_backend(name: str, accelerator: Accelerator, *, requested: bool) -> None:
    """Check that each backend ``name`` names is in this torch, and that one carries the device's or cpu tensors.

    (torch 2.4 answers False for ``"cpu:gloo"`` itself; :data:`host_staging.NAME` is there wherever gloo is.)
    """
    _check_device_types(name, accelerator)
    lacking = next((b for b in sorted(_backend_names(name)) if not _backend_available(b)), None)
    if lacking is None:
        return
    available = [
        b for b in dist.Backend.backend_list if b not in ("undefined", "fake") and dist.is_backend_available(b)
    ]
    origin = (
        "the backend argument" if requested else f"the {accelerator.name!r} accelerator's communication_backend_name()"
    )
    what = repr(lacking) if lacking == name else f"{lacking!r} (in {name!r})"
    raise DistributedSetupError(
        f"communication backend {what} (from {origin}) is not available in this torch {torch.__version__}: "
        f"torch.distributed.is_backend_available({lacking!r}) is False. Available here: "
        f"{', '.join(available) or 'none'}. Pass backend= one of those, or install the torch build or vendor "
        f"package that provides {lacking!r}",
        variable="backend",
        value=name,
    )


def _backend_available(backend: str) -> bool:
    """Return ``torch.distributed.is_backend_available``; accelhal's :data:`host_staging.NAME` wherever gloo is."""
    return dist.is_backend_available("gloo" if backend == host_staging.NAME else backend)


def _check_device_types(name: str, accelerator: Accelerator) -> None:
    """Check that a ``"type:backend,..."`` string gives the accelerator's device type or cpu a backend.

    Otherwise every collective of the group fails (torch: "No backend type associated with device type").
    """
    if ":" not in name:
        return
    types = {part.split(":", 1)[0].strip() for part in name.split(",") if ":" in part}
    device_type = accelerator.device_type
    if device_type in types or "cpu" in types:
        return
    default = accelerator.communication_backend_name() or "gloo"
    types_named = device_type if device_type == "cpu" else f"{device_type} tensors nor to cpu"
    raise DistributedSetupError(
        f"backend={name!r} gives no backend to {types_named} tensors, so every collective would fail: "
        f"name one for {device_type} ('{device_type}:{host_staging.backend_for(default, device_type)}') "
        f"or pass a plain backend name ({default!r})",
        variable="backend",
        value=name,
    )


def _export_torch_variables(launch: LaunchEnv) -> None:
    """Give code that reads torch's variables (``LOCAL_RANK``, ``MASTER_ADDR`` ...) an MPI/Slurm launch's values."""
    if launch.source in ("none", "torchrun"):
        return
    for field in ("rank", "world_size", "local_rank", "local_world_size", "master_addr", "master_port"):
        value = getattr(launch, field)
        if value is not None:
            os.environ.setdefault(TORCH_VARIABLES[field], str(value))


def _check_local_device(launch: LaunchEnv, accelerator: Accelerator) -> None:
    count = accelerator.device_count()
    if launch.local_rank < count:
        return
    shown = ", ".join(f"{v}={os.environ[v]!r}" for v in accelerator.visible_devices_envs() if v in os.environ)
    variable = launch.variable("local_rank")
    raise DistributedSetupError(
        f"{variable}={launch.local_rank} but this process sees only {count} {accelerator.name} device(s)"
        f"{f' ({shown})' if shown else ''}: local ranks must be below {count}; start at most {count} "
        f"processes per node (torchrun --nproc_per_node={count}) or make more devices visible",
        variable=variable,
        value=launch.local_rank,
    )


def _backend_names(backend: str) -> set[str]:
    """Return the plain backend names in ``backend`` (``"cpu:gloo,cuda:nccl"`` -> ``{"gloo", "nccl"}``)."""
    return {part.split(":")[-1].strip() for part in backend.split(",")}


def _connects_eagerly(backend: str, device: torch.device) -> bool:
    """Return whether to pass ``device_id``: a device backend on a non-cpu device."""
    return device.type != "cpu" and not _backend_names(backend) <= HOST_BACKENDS


def _existing(accelerator: Accelerator, launch: LaunchEnv, name: str, world: int, own_rank: int) -> ProcessGroupSetup:
    """Return the set-up already in place, if it agrees with what was asked for; else raise."""
    current = str(dist.get_backend())
    wanted = {"backend": name, "world_size": world, "rank": own_rank}
    found = {"backend": current, "world_size": dist.get_world_size(), "rank": dist.get_rank()}
    same_backend = _backend_names(name) <= _backend_names(current)
    conflicts = [] if same_backend else ["backend"]
    conflicts += [key for key in ("world_size", "rank") if wanted[key] != found[key]]
    if conflicts:
        described = ", ".join(f"{key}={wanted[key]!r} (it has {found[key]!r})" for key in conflicts)
        raise DistributedSetupError(
            f"the default process group is already initialised with other settings: asked for {described}; "
            f"call accelhal.distributed.destroy_process_group() first to start over",
            variable=conflicts[0],
            value=wanted[conflicts[0]],
        )
    if _setup is not None:
        return _setup
    device = accelerator.device(launch.local_rank)
    return ProcessGroupSetup(current, own_rank, world, launch.local_rank, device, accelerator.name, launch)
