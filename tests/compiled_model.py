"""A small model run eagerly and under ``torch.compile(model, backend=acc.get_compile_backend())``.

:func:`compare` is what the compile tests run, in a fresh interpreter, on the active
accelerator (cpu, the PrivateUse1 test device, cuda): two calls of the compiled model on
new inputs of the same shape, each against the eager model, and the graphs Dynamo compiled.
A second call that compiles again is a recompilation (a guard failed).
"""

from __future__ import annotations

import json
import time
from typing import Any

import torch

import accelhal

TOLERANCE = {"rtol": 1.3e-6, "atol": 1e-5}
"""``torch.testing.assert_close``'s own tolerance for float32."""


def tiny_model(device: str) -> torch.nn.Module:
    """Linear, GELU, Linear, LayerNorm: a matmul, pointwise work and a reduction, seeded on the host."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.GELU(), torch.nn.Linear(16, 4), torch.nn.LayerNorm(4))
    return model.to(device)


def compare(backend: str | None = None, *, new_shape: bool = False) -> dict[str, Any]:
    """Compile the tiny model on the active accelerator with ``backend`` (default: ``get_compile_backend()``).

    With ``new_shape``, a third call takes a batch of another size, which must compile again:
    ``recompiles_on_new_shape`` shows that the count sees a recompilation.
    """
    import torch._dynamo
    from torch._dynamo.utils import counters

    acc = accelhal.get_accelerator()
    choice = acc.compile_backend_choice()
    backend = backend or acc.get_compile_backend()
    device = acc.current_device_name()
    model = tiny_model(device)
    inputs = [torch.randn(5, 8).to(device) for _ in range(2)]
    with torch.no_grad():
        eager = [model(x) for x in inputs]
        torch._dynamo.reset()
        counters.clear()
        compiled = torch.compile(model, backend=backend)
        started = time.perf_counter()
        first = compiled(inputs[0])
        compile_seconds = time.perf_counter() - started
        graphs_first = counters["stats"]["unique_graphs"]
        second = compiled(inputs[1])
        graphs_second = counters["stats"]["unique_graphs"]
        if new_shape:
            compiled(torch.randn(7, 8).to(device))
    new_shape_graphs = counters["stats"]["unique_graphs"] - graphs_second
    differences = [float((out - ref).abs().max().cpu()) for out, ref in zip((first, second), eager, strict=True)]
    for out, ref in zip((first, second), eager, strict=True):
        torch.testing.assert_close(out.cpu(), ref.cpu(), **TOLERANCE)
    return {
        "accelerator": acc.name,
        "device": device,
        "backend": backend,
        "choice": {"backend": choice.backend, "reason": choice.reason, "source": choice.source},
        "output_device": str(first.device),
        "max_abs_difference": max(differences),
        "graphs_after_first_call": graphs_first,
        "recompiles": graphs_second - graphs_first,
        "first_call_seconds": round(compile_seconds, 2),
    } | ({"recompiles_on_new_shape": new_shape_graphs} if new_shape else {})


def main() -> None:
    """Print :func:`compare`'s result as one JSON line."""
    print(json.dumps(compare()))


if __name__ == "__main__":
    main()
