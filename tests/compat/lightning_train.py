"""Train a small model with Lightning's Trainer and print each run's losses as JSON (run as a script).

    python tests/compat/lightning_train.py --run accelhal:32-true --run cpu:32-true
    python tests/compat/lightning_train.py --run accelhal:32-true --devices 2 --strategy accelhal-ddp

A run is ``[PACKAGE/]ACCELERATOR:PRECISION`` (``pytorch_lightning/accelhal:32-true``):
``accelhal`` is ``Trainer(accelerator="accelhal")`` after
:func:`accelhal.compat.lightning.register`, ``accelhal-instance`` passes an
``AccelhalAccelerator()`` instance, any other name is Lightning's own accelerator. Runs go
one after the other in this process, each from ``seed_everything(0)``. ``--strategy
accelhal-ddp`` passes :func:`accelhal.compat.lightning.ddp_strategy`; ``ddp`` lets
Lightning build its own. Under DDP Lightning starts the other ranks by running this script
again, so give a single run. ``--shapes`` adds a record of the installed packages' shapes
(``tests/compat/lightning_shapes.py``). Every rank prints ``RESULT <json>`` lines: the run, its rank,
the losses of its steps, the device the model trained on, the autocast device type, Lightning's
log and the warnings of the fit; a run that accelhal refuses prints its error instead.
"""

from __future__ import annotations

import argparse
import importlib
import json
import logging
import warnings
from typing import Any

import torch

from accelhal.errors import AccelhalError

FEATURES, HIDDEN, SAMPLES, BATCH = 8, 16, 64, 8


def _data() -> torch.utils.data.TensorDataset:
    gen = torch.Generator().manual_seed(1234)
    x = torch.randn(SAMPLES, FEATURES, generator=gen)
    w = torch.randn(FEATURES, 1, generator=gen)
    return torch.utils.data.TensorDataset(x, torch.tanh(x @ w) + 0.1 * torch.randn(SAMPLES, 1, generator=gen))


def _module_class(pl: Any) -> type[Any]:
    class Regression(pl.LightningModule):
        def __init__(self) -> None:
            super().__init__()
            self.net = torch.nn.Sequential(
                torch.nn.Linear(FEATURES, HIDDEN), torch.nn.Tanh(), torch.nn.Linear(HIDDEN, 1)
            )
            self.losses: list[float] = []
            self.seen: dict[str, str] = {}

        def training_step(self, batch: list[torch.Tensor], batch_idx: int) -> torch.Tensor:
            x, y = batch
            loss = torch.nn.functional.mse_loss(self.net(x).float(), y)
            self.losses.append(loss.detach().float().item())
            autocast = [kind for kind in ("cpu", self.device.type) if torch.is_autocast_enabled(kind)]
            self.seen = {
                "device": str(x.device),
                "param_device": str(self.net[0].weight.device),
                "autocast": ",".join(sorted(set(autocast))),
            }
            return loss

        def configure_optimizers(self) -> torch.optim.Optimizer:
            return torch.optim.SGD(self.parameters(), lr=0.1)

        def train_dataloader(self) -> torch.utils.data.DataLoader[Any]:
            return torch.utils.data.DataLoader(_data(), batch_size=BATCH, shuffle=True)

    return Regression


def train(
    package: str, accelerator: str, precision: str, *, devices: Any = 1, strategy: str = "auto", steps: int = 16
) -> dict[str, Any]:
    """One run; returns its record (losses, rank, devices, process-group backend)."""
    pl = importlib.import_module(package)
    from accelhal.compat import lightning as accelhal_lightning

    pl.seed_everything(0, workers=True, verbose=False)
    model = _module_class(pl)()
    chosen: Any = accelerator
    if accelerator == "accelhal":
        accelhal_lightning.register(package)
    elif accelerator == "accelhal-instance":
        chosen = accelhal_lightning.accelerator_class(package)()
    strategy_arg: Any = accelhal_lightning.ddp_strategy(package) if strategy == "accelhal-ddp" else strategy
    lines = _LoggedLines()
    logging.getLogger(package).addHandler(lines)  # Lightning's own log (its loggers do not propagate)
    try:
        with warnings.catch_warnings(record=True) as warned:
            warnings.simplefilter("always")
            trainer = pl.Trainer(
                accelerator=chosen,
                devices=devices,
                strategy=strategy_arg,
                precision=precision,
                max_steps=steps,
                logger=False,
                enable_checkpointing=False,
                enable_progress_bar=False,
                enable_model_summary=False,
                deterministic=True,
                num_sanity_val_steps=0,
            )
            trainer.fit(model)
    finally:
        logging.getLogger(package).removeHandler(lines)
    return {
        "package": package,
        "accelerator": accelerator,
        "accelerator_class": type(trainer.accelerator).__name__,
        "precision": precision,
        "strategy": type(trainer.strategy).__name__,
        "rank": trainer.global_rank,
        "world_size": trainer.world_size,
        "root_device": str(trainer.strategy.root_device),
        "process_group_backend": getattr(trainer.strategy, "process_group_backend", None),
        "losses": model.losses,
        "log": lines.messages,
        "warnings": [str(warning.message) for warning in warned],
        **model.seen,
    }


class _LoggedLines(logging.Handler):
    """Keeps the messages of Lightning's log during one run."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def read_results(output: str) -> list[dict[str, Any]]:
    """Every ``RESULT`` record in ``output``, by rank (DDP ranks share stdout, so lines may interleave)."""
    decoder = json.JSONDecoder()
    records = [decoder.raw_decode(chunk)[0] for chunk in output.split("RESULT ")[1:]]
    return sorted(records, key=lambda record: int(record.get("rank", 0)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", action="append", required=True, help="[PACKAGE/]ACCELERATOR:PRECISION (repeatable)")
    parser.add_argument("--devices", default="1")
    parser.add_argument("--strategy", default="auto")
    parser.add_argument("--steps", type=int, default=16)
    parser.add_argument("--shapes", action="store_true", help="also print the installed packages' shapes")
    args = parser.parse_args()
    devices = int(args.devices) if args.devices.lstrip("-").isdecimal() else args.devices
    for run in args.run:
        package, _, rest = run.rpartition("/")
        accelerator, _, precision = rest.partition(":")
        try:
            record = train(
                package or "lightning.pytorch",
                accelerator,
                precision or "32-true",
                devices=devices,
                strategy=args.strategy,
                steps=args.steps,
            )
        except AccelhalError as exc:
            record = {
                "package": package or "lightning.pytorch",
                "accelerator": accelerator,
                "precision": precision,
                "error": f"{type(exc).__name__}: {exc}",
            }
        print("RESULT " + json.dumps(record), flush=True)
    if args.shapes:  # what tests/compat/lightning_shapes.py reads from the imported packages
        from tests.compat.lightning_shapes import from_installed

        shapes = {package: from_installed(package) for package in ("lightning.pytorch", "pytorch_lightning")}
        print("RESULT " + json.dumps({"shapes": shapes}), flush=True)


if __name__ == "__main__":
    main()
