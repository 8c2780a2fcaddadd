"""Train a small model with Ray Train's ``TorchTrainer`` on a running cluster; print every rank's record as JSON.

    python tests/compat/ray_train.py --address HOST:PORT --out DIR \\
        --run ray-cpu:ray:CPU:2 --run accelhal-cpu:accelhal:CPU:2 --run testdev:accelhal:testdev:2

A run is ``NAME:PATH:RESOURCE:WORKERS``. ``PATH`` ``ray`` is Ray's own code path: Ray's
``TorchConfig``, ``prepare_model(model)`` and ``prepare_data_loader(loader)`` place the model
and batches on ``ray.train.torch.get_device()``. ``accelhal`` is accelhal's:
:func:`accelhal.compat.ray.torch_config`, ``prepare_model(model, move_to_device=device())``,
``prepare_data_loader(loader, move_to_device=False)`` and each batch moved to
:func:`accelhal.compat.ray.device`. ``RESOURCE`` is what each worker asks of the cluster:
``CPU``, ``GPU`` (``use_gpu=True``) or any other resource name (``resources_per_worker``).
Every run starts from the same seed and data; each rank writes its record (losses, devices,
process-group backend, node, assigned resources; on accelhal's path also the backend, its
visible-devices variables, the accelerator ids Ray assigned and what Ray's own
``get_device()`` says there) to ``DIR``. The runs start together under Ray Train v2, one
after another under v1. The driver itself holds no device; it also records what ``device()``
says outside a worker and what ``torch_config()`` says of an option it does not take.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

FEATURES, HIDDEN, SAMPLES, BATCH, EPOCHS = 8, 16, 64, 8, 4


def train_loop(config: dict[str, Any]) -> None:
    """One worker: the same model, data and steps on either code path; writes ``<run>-<rank>.json``."""
    import ray
    import ray.train
    import ray.train.torch
    import torch

    use_accelhal = config["path"] == "accelhal"
    if use_accelhal:
        import accelhal
        from accelhal.compat import ray as accelhal_ray

        device = accelhal_ray.device()
    else:
        device = ray.train.torch.get_device()
    torch.manual_seed(0)
    model: Any = torch.nn.Sequential(torch.nn.Linear(FEATURES, HIDDEN), torch.nn.Tanh(), torch.nn.Linear(HIDDEN, 1))
    gen = torch.Generator().manual_seed(1234)
    x = torch.randn(SAMPLES, FEATURES, generator=gen)
    y = torch.tanh(x @ torch.randn(FEATURES, 1, generator=gen)) + 0.1 * torch.randn(SAMPLES, 1, generator=gen)
    loader: Any = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=BATCH)
    if use_accelhal:
        model = ray.train.torch.prepare_model(model, move_to_device=device)
        loader = ray.train.torch.prepare_data_loader(loader, move_to_device=False)
    else:
        model = ray.train.torch.prepare_model(model)
        loader = ray.train.torch.prepare_data_loader(loader)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    losses, batch_device = [], ""
    for _ in range(EPOCHS):
        for inputs, targets in loader:
            if use_accelhal:
                inputs, targets = inputs.to(device), targets.to(device)
            loss = torch.nn.functional.mse_loss(model(inputs), targets)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
            batch_device = str(inputs.device)
    context = ray.train.get_context()
    record = {
        "run": config["name"],
        "path": config["path"],
        "rank": context.get_world_rank(),
        "local_rank": context.get_local_rank(),
        "world_size": context.get_world_size(),
        "losses": losses,
        "device": str(device),
        "batch_device": batch_device,
        "param_device": str(next(model.parameters()).device),
        "process_group_backend": torch.distributed.get_backend(),
        "node": ray.get_runtime_context().get_node_id(),
        "assigned": ray.get_runtime_context().get_assigned_resources(),
    }
    if use_accelhal:
        acc = accelhal.get_accelerator()
        record.update(
            backend=acc.name,
            current_device=acc.current_device_name(),
            visible={name: os.environ.get(name) for name in acc.visible_devices_envs()},
            ids={name: ids for name, ids in ray.get_runtime_context().get_accelerator_ids().items() if ids},
            rays_device=str(ray.train.torch.get_device()),  # what Ray's own device logic says in this worker
        )
    out = Path(config["out"]) / f"{config['name']}-{record['rank']}.json"
    out.write_text(json.dumps(record))


def scaling_config(resource: str, workers: int) -> Any:
    """``ScalingConfig`` asking ``resource`` for each of ``workers`` (Ray takes ``GPU`` through ``use_gpu``).

    Ray Train v1 gives each fit's trainer a CPU of its own by default; here it takes none, as v2's
    controller does, so that the runs need the same CPUs under both (v2 refuses ``trainer_resources``).
    """
    from ray.train import ScalingConfig

    from accelhal.compat.ray._releases import active_train

    options: dict[str, Any] = {"num_workers": workers}
    if active_train() == "v1":
        options["trainer_resources"] = {"CPU": 0}
    if resource == "GPU":
        options["use_gpu"] = True
    elif resource != "CPU":
        options["resources_per_worker"] = {resource: 1}
    return ScalingConfig(**options)


def fit(name: str, path: str, resource: str, workers: int, out: Path) -> None:
    """One ``TorchTrainer.fit()``: Ray's own ``TorchConfig`` or accelhal's."""
    from ray.train import RunConfig
    from ray.train.torch import TorchConfig, TorchTrainer

    from accelhal.compat import ray as accelhal_ray

    trainer = TorchTrainer(
        train_loop,
        train_loop_config={"name": name, "path": path, "out": str(out)},
        torch_config=accelhal_ray.torch_config() if path == "accelhal" else TorchConfig(),
        scaling_config=scaling_config(resource, workers),
        run_config=RunConfig(name=name, storage_path=str(out / "storage")),
    )
    trainer.fit()


def driver_errors() -> dict[str, str]:
    """What the driver's misuses raise: ``device()`` outside a worker, ``torch_config()`` with an unknown option."""
    from accelhal.compat import ray as accelhal_ray

    errors = {}
    for name, call in {
        "device": accelhal_ray.device,
        "torch_config": lambda: accelhal_ray.torch_config(gpus=1),
    }.items():
        try:
            call()
        except Exception as exc:
            errors[name] = f"{type(exc).__name__}: {exc}"
    return errors


def main(argv: list[str] | None = None) -> int:
    """Run every ``--run`` on the cluster at ``--address`` and print ``{"runs": {name: [ranks]}, ...}``."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--address", required=True)
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--run", action="append", required=True, help="NAME:PATH:RESOURCE:WORKERS")
    parser.add_argument("--nodes", type=int, default=1, help="wait until this many nodes are alive")
    args = parser.parse_args(argv)
    import ray

    ray.init(address=args.address, _node_ip_address="127.0.0.1", log_to_driver=False, configure_logging=False)
    deadline = time.monotonic() + 60  # a joining raylet registers shortly after its `ray start` returns
    while sum(node["Alive"] for node in ray.nodes()) < args.nodes and time.monotonic() < deadline:
        time.sleep(0.5)
    runs = [run.split(":") for run in args.run]
    from accelhal.compat.ray._releases import active_train

    # Ray Train v1 runs each fit through Ray Tune, whose trainable registry is not safe across the
    # driver's threads ("dictionary changed size during iteration"): there the fits take turns.
    with ThreadPoolExecutor(len(runs) if active_train() == "v2" else 1) as pool:
        futures = [
            pool.submit(fit, name, path, resource, int(workers), args.out) for name, path, resource, workers in runs
        ]
        for future in futures:
            future.result()
    ranks: dict[str, list[dict[str, Any]]] = {name: [] for name, *_ in runs}
    for path in sorted(args.out.glob("*.json")):
        record = json.loads(path.read_text())
        ranks[record["run"]].append(record)
    for records in ranks.values():
        records.sort(key=lambda r: r["rank"])
    result = {
        "runs": ranks,
        "driver_errors": driver_errors(),
        "cluster_resources": ray.cluster_resources(),
        "nodes": {node["NodeID"]: node["Resources"] for node in ray.nodes() if node["Alive"]},
    }
    ray.shutdown()
    sys.stdout.write("RESULT " + json.dumps(result) + "\n")
    sys.stdout.flush()
    os._exit(0)  # Ray's atexit handlers can outlive a test's patience


if __name__ == "__main__":
    sys.exit(main())
