"""The built-in named backends: each one's :class:`~accelhal.BackendSpec` and the plugin its entry point names.

One module holds every declaration, so discovery imports one module for the eleven
entry points (``cuda = "accelhal_backends.catalog:cuda"``) instead of one package each:
each import costs a first ``get_accelerator()`` about 0.1 ms. A backend's package,
``accelhal_backends/<name>/``, holds what runs only once it matters: a probe that needs
more than a device count (cuda, xla), imported when the probe runs, and its accelerator
class, imported when the backend is chosen. Importing this module imports neither torch
nor a vendor runtime.

The generic backend (a registration that asks torch) and the built-in op builders stay
plugin modules of their own: :mod:`accelhal_backends.generic`, :mod:`accelhal_backends.builtin_ops`.
"""

from __future__ import annotations

from accelhal.contract.spec import BackendSpec, Verdict
from accelhal.discovery.hooks import BackendsPlugin


def _cpu_probe() -> Verdict:
    """The host CPU is always usable once torch is installed (``requires`` checks that)."""
    return Verdict.available("the host CPU is always available")


def _cuda_probe() -> Verdict:
    """:func:`accelhal_backends.cuda.probe`: who answers ``torch.cuda``, then its device count."""
    from accelhal_backends.cuda import probe

    return probe()


def _xla_probe() -> Verdict:
    """:func:`accelhal_backends.xla.detection.probe`, imported once torch_xla is found installed (``requires``)."""
    from accelhal_backends.xla.detection import probe

    return probe()


XLA_INSTALL_HINT = "install torch_xla built for this torch (pip install 'torch_xla==<torch version>')"
"""What to do where torch_xla is missing or cannot load."""

CPU = BackendSpec(
    name="cpu",
    device_type="cpu",
    priority=100,
    accelerator="accelhal_backends.cpu.accelerator:CpuAccelerator",
    probe=_cpu_probe,
    requires=("torch",),
    comm_backend="gloo",
    description="the host CPU (torch's CPU tensors, gloo collectives)",
)

CUDA = BackendSpec.for_device_module(
    "cuda",
    priority=300,
    accelerator="accelhal_backends.cuda.accelerator:CudaAccelerator",
    probe=_cuda_probe,
    comm_backend="nccl",
    visible_devices_envs=("CUDA_VISIBLE_DEVICES",),
    export_envs=("NCCL",),
    hint="install a CUDA (or ROCm) build of torch and the NVIDIA (or AMD) driver",
    device_check_command="nvidia-smi",
    description="NVIDIA GPUs (CUDA) and AMD GPUs (ROCm/HIP) through torch.cuda; NCCL/RCCL collectives",
)

XPU = BackendSpec.for_device_module(
    "xpu",
    priority=900,
    accelerator="accelhal_backends.xpu.accelerator:XpuAccelerator",
    comm_backend="xccl",
    visible_devices_envs=("ZE_AFFINITY_MASK",),
    hint="install an XPU build of torch and Intel's GPU driver",
    device_check_command="xpu-smi discovery",
    description="Intel GPUs through torch.xpu; XCCL collectives",
)

NPU = BackendSpec.for_device_module(
    "npu",
    priority=800,
    package="torch_npu",
    accelerator="accelhal_backends.npu.accelerator:NpuAccelerator",
    comm_backend="hccl",
    visible_devices_envs=("ASCEND_RT_VISIBLE_DEVICES",),
    export_envs=("ASCEND", "HCCL", "LD_LIBRARY", "PATH"),
    hint="install the CANN toolkit and source its set_env.sh (e.g. source /usr/local/Ascend/ascend-toolkit/"
    "set_env.sh) so that torch_npu finds libhccl.so and the other Ascend libraries",
    device_check_command="npu-smi info",
    description="Huawei Ascend NPUs through torch_npu; HCCL collectives",
)

# Tecorigin SDAA accelerators; torch_sdaa registers ``torch.sdaa``. No accelerator class of its own.
SDAA = BackendSpec.for_device_module(
    "sdaa",
    priority=700,
    package="torch_sdaa",
    comm_backend="tccl",
    visible_devices_envs=("SDAA_VISIBLE_DEVICES",),
    export_envs=("NCCL", "LD_LIBRARY", "PATH"),
    hint="install torch_sdaa with the Tecorigin driver and runtime (TecoToolkit) and source its setvars.sh",
    device_check_command="teco-smi",
    description="Tecorigin SDAA accelerators through torch_sdaa; TCCL collectives",
)

MPS = BackendSpec.for_device_module(
    "mps",
    priority=600,
    accelerator="accelhal_backends.mps.accelerator:MpsAccelerator",
    hint="MPS needs macOS 12.3+ on Apple silicon (or an AMD GPU) and a macOS build of torch",
    device_check_command="system_profiler SPDisplaysDataType",
    description="Apple-silicon GPUs through torch.mps; gloo collectives on host copies (hostgloo)",
)

HPU = BackendSpec.for_device_module(
    "hpu",
    priority=500,
    package="habana_frameworks.torch.hpu",
    accelerator="accelhal_backends.hpu.accelerator:HpuAccelerator",
    comm_backend="hccl",
    visible_devices_envs=("HABANA_VISIBLE_MODULES",),
    hint="install the Intel Gaudi software stack (habana-torch-plugin) that matches this torch",
    device_check_command="hl-smi",
    description="Intel Gaudi through habana_frameworks.torch.hpu; HCCL collectives",
    compile_backend="hpu_backend",
)

MLU = BackendSpec.for_device_module(
    "mlu",
    priority=400,
    package="torch_mlu",
    accelerator="accelhal_backends.mlu.accelerator:MluAccelerator",
    comm_backend="cncl",
    visible_devices_envs=("MLU_VISIBLE_DEVICES",),
    export_envs=("NEUWARE_HOME", "CNCL", "LD_LIBRARY", "PATH"),
    hint="install torch_mlu and set NEUWARE_HOME and LD_LIBRARY_PATH to the Cambricon Neuware SDK",
    device_check_command="cnmon",
    description="Cambricon MLUs through torch_mlu; CNCL collectives",
)

# Priority 350, above cuda: torch_supa also makes ``torch.cuda`` answer for its devices (its
# ``transfer_to_supa`` runs from torch's device-backend autoload), so a Biren machine looks like a
# CUDA one to anything that asks ``torch.cuda`` first; the cuda probe reports that case as
# ``replaced`` and names this backend. It needs no accelerator class of its own.
SUPA = BackendSpec.for_device_module(
    "supa",
    priority=350,
    package="torch_supa",
    comm_backend="bccl",
    visible_devices_envs=("SUPA_VISIBLE_DEVICES",),
    export_envs=("BCCL", "BIREN", "SUPA", "LD_LIBRARY", "PATH"),
    hint="install torch_supa from Biren's birensupa-sdk and source its brsw_set_env.sh "
    "(/usr/local/birensupa/sdk/latest/scripts/brsw_set_env.sh) so that libsupa.so and libtorch_supa.so are "
    "found",
    device_check_command="brsmi",
    description="Biren GPUs (SUPA) through torch_supa; BCCL collectives",
)

# Priority 340, above cuda: Moore Threads' torchada makes ``torch.cuda`` answer for MUSA devices,
# so on a MUSA machine ``torch.cuda`` may look populated; the cuda probe reports that case as
# ``replaced`` and names this backend. torch_musa sets ``torch.musa`` to itself without registering
# a ``torch.musa`` module, so the package is imported as the device module.
MUSA_PACKAGE = "torch_musa"
"""The vendor package, which is also the device module (``torch.musa`` is the package itself)."""

MUSA = BackendSpec.for_device_module(
    "musa",
    priority=340,
    package=MUSA_PACKAGE,
    module=MUSA_PACKAGE,
    comm_backend="mccl",
    visible_devices_envs=("MUSA_VISIBLE_DEVICES",),
    export_envs=("MUSA", "MCCL", "LD_LIBRARY", "PATH"),
    hint="install torch_musa matching this torch and the MUSA toolkit (MUSA_HOME, LD_LIBRARY_PATH)",
    device_check_command="mthreads-gmi",
    description="Moore Threads GPUs (MUSA) through torch_musa; MCCL collectives",
)

XLA = BackendSpec(
    name="xla",
    device_type="xla",
    priority=200,
    accelerator="accelhal_backends.xla.accelerator:XlaAccelerator",
    probe=_xla_probe,
    requires=("torch", "torch_xla"),
    comm_backend="xla",
    compile_backend="openxla",
    visible_devices_envs=("TPU_VISIBLE_CHIPS",),
    export_envs=("PJRT", "XLA", "TPU", "LIBTPU", "CPU_NUM_DEVICES"),
    hint=XLA_INSTALL_HINT,
    device_check_command="tpu-info",
    description="XLA devices through torch_xla's PJRT runtime (TPUs, XLA's CPU client); xla collectives",
)

# The plugins the entry points name, one per backend (``accelhal list`` shows each, and each can be
# held back by name). Lower-case: each is named after its entry point.
cpu = BackendsPlugin(CPU)
cuda = BackendsPlugin(CUDA)
xpu = BackendsPlugin(XPU)
npu = BackendsPlugin(NPU)
sdaa = BackendsPlugin(SDAA)
mps = BackendsPlugin(MPS)
hpu = BackendsPlugin(HPU)
mlu = BackendsPlugin(MLU)
supa = BackendsPlugin(SUPA)
musa = BackendsPlugin(MUSA)
xla = BackendsPlugin(XLA)
