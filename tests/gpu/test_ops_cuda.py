"""The built-in FusedAdamWBuilder for cuda, built with nvcc and checked against torch.optim.AdamW on a GPU.

Run on the GPU machine: ``python -m pytest -m cuda tests/gpu/test_ops_cuda.py -v``
(the first run compiles the op with nvcc, about a minute).
"""

from __future__ import annotations

from pathlib import Path

import pytest

import accelhal
from accelhal.ops import get_op_builder

torch = pytest.importorskip("torch")

pytestmark = [
    pytest.mark.cuda,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU"),
]


@pytest.fixture(scope="module")
def adamw(tmp_path_factory: pytest.TempPathFactory) -> object:
    """The cuda FusedAdamW module, built once into a fresh cache for this module's tests."""
    cache = tmp_path_factory.mktemp("ops-cache")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("ACCELHAL_OPS_CACHE", str(cache))
        accelhal.reset_accelerator()
        builder = get_op_builder("cuda", "FusedAdamWBuilder")()
        verdict = builder.compatibility()
        assert verdict, verdict.reason
        print(f"FusedAdamWBuilder (cuda) is compatible: {verdict.reason}")
        module = builder.load(verbose=True)
        print(f"built {module.__name__} at {module.__file__}")
        assert Path(module.__file__).is_relative_to(cache)
        return module


def test_the_active_cuda_accelerator_resolves_the_cuda_builder() -> None:
    accelhal.reset_accelerator()
    accelerator = accelhal.get_accelerator()
    if accelerator.name != "cuda":
        pytest.skip(f"the active backend is {accelerator.name!r}; the cuda backend is not installed yet")
    builder = accelerator.create_op_builder("FusedAdamWBuilder")
    assert type(builder).__module__ == "accelhal_backends.builtin_ops.cuda"


@pytest.mark.parametrize("numel", [1, 1000, 65535 * 256 + 4097])  # the last one exercises the grid-stride loop
def test_fused_adamw_on_cuda_matches_torch_adamw(adamw: object, numel: int) -> None:
    generator = torch.Generator(device="cuda").manual_seed(numel)
    start = torch.randn(numel, device="cuda", generator=generator)
    grads = [torch.randn(numel, device="cuda", generator=generator) for _ in range(5)]
    reference = torch.nn.Parameter(start.clone())
    optimizer = torch.optim.AdamW(
        [reference], lr=1e-2, betas=(0.9, 0.99), eps=1e-8, weight_decay=0.1, foreach=False, fused=False
    )
    param, exp_avg, exp_avg_sq = start.clone(), torch.zeros_like(start), torch.zeros_like(start)
    for step, grad in enumerate(grads, start=1):
        reference.grad = grad.clone()
        optimizer.step()
        adamw.adamw_step(param, grad, exp_avg, exp_avg_sq, 1e-2, 0.9, 0.99, 1e-8, 0.1, step)  # type: ignore[attr-defined]
    torch.cuda.synchronize()
    state = optimizer.state[reference]
    torch.testing.assert_close(exp_avg, state["exp_avg"])
    torch.testing.assert_close(exp_avg_sq, state["exp_avg_sq"])
    torch.testing.assert_close(param, reference.detach(), rtol=1e-5, atol=1e-6)
    assert not torch.equal(param, start)
    print(f"numel={numel}: max |fused - torch.optim.AdamW| = {(param - reference.detach()).abs().max().item():.3e}")


def test_fused_adamw_on_cuda_rejects_cpu_tensors(adamw: object) -> None:
    param = torch.zeros(4, device="cuda")
    with pytest.raises(RuntimeError, match="must be a CUDA tensor"):
        adamw.adamw_step(param, torch.zeros(4), param.clone(), param.clone(), 1e-3, 0.9, 0.999, 1e-8, 0.0, 1)  # type: ignore[attr-defined]
