"""``accelhal.distributed``: torch.distributed set up on whatever accelerator is active.

>>> import accelhal.distributed as ahd
>>> setup = ahd.init_process_group()     # under torchrun / mpirun / srun
>>> setup.backend, setup.device          # ('nccl', device(type='cuda', index=1)) on rank 1 of a GPU node
>>> ahd.destroy_process_group()

Names are loaded on first access: importing this package imports neither torch nor the
accelerator; :func:`read_launch_env` works without torch.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from accelhal.distributed.checks import CheckResult, selfcheck
    from accelhal.distributed.child_env import export_envs, set_visible_devices_envs
    from accelhal.distributed.guard import lost_rank_guard
    from accelhal.distributed.liveness import check_lost_ranks
    from accelhal.distributed.process_group import ProcessGroupSetup, destroy_process_group, init_process_group
    from accelhal.launch.environment import LaunchEnv, read_launch_env
    from accelhal.launch.known_launchers import LAUNCHERS, Launcher

_EXPORTS: dict[str, str] = {
    "init_process_group": "accelhal.distributed.process_group",
    "destroy_process_group": "accelhal.distributed.process_group",
    "ProcessGroupSetup": "accelhal.distributed.process_group",
    "read_launch_env": "accelhal.launch.environment",
    "LaunchEnv": "accelhal.launch.environment",
    "Launcher": "accelhal.launch.known_launchers",
    "LAUNCHERS": "accelhal.launch.known_launchers",
    "set_visible_devices_envs": "accelhal.distributed.child_env",
    "export_envs": "accelhal.distributed.child_env",
    "selfcheck": "accelhal.distributed.checks",
    "CheckResult": "accelhal.distributed.checks",
    "check_lost_ranks": "accelhal.distributed.liveness",
    "lost_rank_guard": "accelhal.distributed.guard",
}

__all__ = [
    "init_process_group",
    "destroy_process_group",
    "ProcessGroupSetup",
    "read_launch_env",
    "LaunchEnv",
    "Launcher",
    "LAUNCHERS",
    "set_visible_devices_envs",
    "export_envs",
    "selfcheck",
    "CheckResult",
    "check_lost_ranks",
    "lost_rank_guard",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'accelhal.distributed' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
