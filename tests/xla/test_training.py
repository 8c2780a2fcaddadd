"""Training on the xla backend gives the losses of torch on the CPU, step by step; devices follow torch_xla's.

The model, data and optimiser are the same on both sides (built on the host from one seed); the
xla run drives the device only through the accelerator (``device()``, ``synchronize()``). XLA's
CPU client runs the same float32 arithmetic as eager CPU code, up to the order of
floating-point operations, so the losses agree to :data:`RTOL` (observed: within 2 units in the
last place, ~1.2e-7 relative).
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch
from torch import nn

import accelhal
from accelhal.errors import UnsupportedFeatureError
from tests.xla import require_torch_xla

require_torch_xla(cpu_client=True)

STEPS = 30
RTOL = 1e-5
"""Relative tolerance between the xla and cpu loss of each step (about 100 times the difference seen)."""


def train(device: torch.device, synchronize: Callable[[], None]) -> list[float]:
    """AdamW on a two-layer classifier for :data:`STEPS` full-batch steps; the loss of each step."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 64), nn.Tanh(), nn.Linear(64, 4))
    data = torch.Generator().manual_seed(1)
    inputs, labels = torch.randn(128, 16, generator=data), torch.randint(0, 4, (128,), generator=data)
    model.to(device)
    inputs, labels = inputs.to(device), labels.to(device)
    optimiser = torch.optim.AdamW(model.parameters(), lr=1e-2)
    losses = []
    for _ in range(STEPS):
        optimiser.zero_grad()
        loss = nn.functional.cross_entropy(model(inputs), labels)
        loss.backward()
        optimiser.step()
        synchronize()
        losses.append(loss.item())
    return losses


def test_losses_match_cpu() -> None:
    acc = accelhal.get_accelerator()
    assert acc.name == "xla"
    # torch 2.9's autograd sizes its device queues at the process's first backward pass: XLA's runtime
    # must have started by then, or every later backward on xla fails (an internal assert).
    acc.device_count()
    on_xla = train(acc.device(), acc.synchronize)
    on_cpu = train(torch.device("cpu"), lambda: None)
    print(f"\n{'step':>4} {'cpu':>12} {'xla':>12} {'relative difference':>20}")
    for step, (cpu, xla) in enumerate(zip(on_cpu, on_xla, strict=True)):
        print(f"{step:>4} {cpu:>12.8f} {xla:>12.8f} {abs(xla - cpu) / abs(cpu):>20.3e}")
    worst = max(abs(x - c) / abs(c) for c, x in zip(on_cpu, on_xla, strict=True))
    print(f"largest relative difference {worst:.3e} (tolerance {RTOL:.0e})")
    assert on_xla == pytest.approx(on_cpu, rel=RTOL, abs=0)
    assert on_cpu[-1] < 0.6 * on_cpu[0]  # it trains


def test_devices_follow_torch_xlas_default_device() -> None:
    import torch_xla

    acc = accelhal.get_accelerator()
    if acc.device_count() < 2:
        pytest.skip("needs two devices of XLA's CPU client (CPU_NUM_DEVICES=2)")
    acc.set_device(1)
    try:
        assert acc.current_device() == 1 and torch_xla.device() == torch.device("xla", 1)
        made = acc.FloatTensor([1.0, 2.0])
        assert made.device == torch.device("xla", 1) and acc.on_accelerator(made)
        pending = torch.ones(3, device=acc.device(0)) * 7
        acc.synchronize(0)  # runs xla:0's pending graph; xla:1 stays the current device
        assert acc.current_device() == 1 and pending.cpu().tolist() == [7.0, 7.0, 7.0]
        assert acc.device_description(1) == "CPU:1 (cpu)"
        with pytest.raises(ValueError, match="device index 2 is out of range: device_count\\(\\) is 2"):
            acc.set_device(2)
    finally:
        acc.set_device(0)


def test_what_xla_lacks_is_said_by_the_contracts_conventions() -> None:
    acc = accelhal.get_accelerator()
    assert acc.Stream is None and acc.Event is None and acc.create_graph() is None
    assert acc.use_host_timers() and not acc.is_synchronized_device()
    with pytest.raises(UnsupportedFeatureError, match="default_generator.*64-bit seed"):
        acc.default_generator(0)
    host = torch.ones(4)
    assert acc.pin_memory(host) is host and acc.is_pinned(host) is False
    with pytest.raises(ValueError, match="8 torch.uint8 bytes"):
        acc.set_rng_state(torch.zeros(16, dtype=torch.uint8))
    assert acc.get_compile_backend() == "openxla"
    acc.set_compile_backend("openxla")  # torch_xla registers it with torch.compile
    assert acc.vendor_versions()["pjrt"] == "CPU"
