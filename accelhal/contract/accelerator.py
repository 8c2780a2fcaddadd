"""Declare the contract every backend implements: the abstract base class :class:`Accelerator`.

Fork safety: constructing an accelerator and calling its identity members (``name``,
``device_name(i)``, ``communication_backend_name()``, ``visible_devices_envs()``) never
initialises the device runtime; members that touch devices may, as the ``torch.<device>`` call does.
"""

from __future__ import annotations

import abc
import contextlib
import math
import operator
import types
from collections.abc import Callable, MutableMapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

import torch

from accelhal.contract import constant_members
from accelhal.contract.arguments import check_device_index, check_tensor
from accelhal.contract.constant_members import tensor_factory_property
from accelhal.contract.spec import CONTRACT_VERSION, BackendSpec, Capability
from accelhal.text import quote

if TYPE_CHECKING:
    from accelhal.contract.compile_backend import CompileChoice
    from accelhal.report import AcceleratorInfo

    _T = TypeVar("_T")  # a type variable of annotations only: creating it costs the first call

TensorFactory = Callable[..., torch.Tensor]
"""What the ``*Tensor`` properties return: ``factory(data) -> tensor`` on the accelerator."""


class _AcceleratorMeta(abc.ABCMeta):
    """Keep baked members (:mod:`accelhal.contract.constant_members`) in step with the attributes they answer."""

    def __setattr__(cls, name: str, value: Any) -> None:
        super().__setattr__(name, value)
        if name in constant_members.BAKED_ATTRIBUTES:
            constant_members.rebake_tree(cls, Accelerator)

    def __delattr__(cls, name: str) -> None:
        super().__delattr__(name)
        if name in constant_members.BAKED_ATTRIBUTES:
            constant_members.rebake_tree(cls, Accelerator)


class Accelerator(metaclass=_AcceleratorMeta):
    """The contract every accelhal backend implements (DeepSpeed's vocabulary, one type per member).

    Every member of DeepSpeed 0.19.8's ``DeepSpeedAccelerator`` is here with the same name,
    argument names and defaults, so code written against ``deepspeed.accelerator.get_accelerator()``
    runs unchanged; unlike DeepSpeed, each member has one return type on every backend
    (``current_device()`` an ``int``, ``device()`` a ``torch.device``, ``stream()`` a context manager).

    Abstract are only the members each backend must answer for itself (device counting and
    selection, synchronisation, RNG, memory figures, dtype support); every other member has a
    default, so a member added in a later :data:`~accelhal.CONTRACT_VERSION` never breaks an
    existing plugin. Unsupported features follow DeepSpeed's conventions where DeepSpeed's own
    code relies on them (``create_graph()`` returns ``None``, ``capture_to_graph()`` is a no-op
    context, ``Stream``/``Event`` are ``None``) and raise :class:`~accelhal.UnsupportedFeatureError`
    elsewhere.

    A backend's identity (name, device type, communication backend, visible-devices variables,
    launcher exports) is declared once, in its :class:`~accelhal.BackendSpec`, which the class
    names::

        class MyAccelerator(Accelerator):
            spec = SPEC                     # BackendSpec(name="mydev", device_type="mydev", ...)
            capabilities = frozenset({Capability.EVENTS})
            ...

    A class without ``spec`` declares them as class attributes (``_name``, ``device_type``,
    ``_communication_backend_name``, ``_visible_devices_envs``); selection checks that they
    agree with the spec that registered it.

    Obtain the active one with :func:`accelhal.get_accelerator`::

        >>> import accelhal
        >>> acc = accelhal.get_accelerator()
        >>> x = torch.ones(4, device=acc.current_device_name())
        >>> acc.on_accelerator(x)
        True
    """

    # ------------------------------------------------------------------ identity
    spec: ClassVar[BackendSpec | None] = None
    """The spec this class was written for; its identity attributes are read from it."""
    _name: ClassVar[str] = ""
    """The backend's name, as DeepSpeed code reads it (``acc._name``)."""
    device_type: ClassVar[str] = ""
    """The ``torch.device`` type of this backend's tensors."""
    contract_version: ClassVar[int] = CONTRACT_VERSION
    """The contract version the class was written for."""
    capabilities: frozenset[Capability] = frozenset()
    """The optional features this backend really has (see :class:`~accelhal.Capability`)."""
    supports_nvtx_domain: ClassVar[bool] = False
    """Whether ``range_push``/``range_pop`` honour ``domain`` (DeepSpeed reads it with ``getattr``)."""

    _communication_backend_name: ClassVar[str] = "gloo"
    _visible_devices_envs: ClassVar[tuple[str, ...]] = ()
    _export_envs: ClassVar[tuple[str, ...]] = ()
    _default_compile_backend: ClassVar[str] = ""
    """The vendor's ``torch.compile`` backend, for a class without a ``spec`` (the spec's ``compile_backend`` wins)."""
    _compile_backend: str | None = None
    """The backend :meth:`set_compile_backend` chose for this instance; ``None`` until then."""

    _is_synchronized_device: ClassVar[bool] = False
    _uses_host_timers: ClassVar[bool] = False
    _resolves_data_dependency: ClassVar[bool] = False
    _handles_memory_backpressure: ClassVar[bool] = False

    _torch_pins_host_memory: ClassVar[bool] = True
    """Whether ``_torch_pin_memory`` really page-locks (False on cpu, where it is a no-op)."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """Read the subclass's identity from its ``spec``, then bake its constant members.

        Each flag member a subclass does not override becomes a method returning its constant
        (:mod:`accelhal.contract.constant_members`); assigning the attribute later, on the class or
        on an instance, re-bakes it. A subclass that defines the method keeps it. Raises
        ``TypeError`` where the class declares an identity attribute otherwise than its spec, and
        warns (``DeprecationWarning``, once, at the class statement) where it declares one at all.
        """
        super().__init_subclass__(**kwargs)
        _tell_of_class_identity(cls)
        spec = cls.__dict__.get("spec")
        if isinstance(spec, BackendSpec):
            for attribute, value in _identity(spec).items():
                _refuse_second_declaration(cls, spec, attribute, value)
                type.__setattr__(cls, attribute, value)
        elif "spec" not in cls.__dict__ and _disagrees(cls, cls.spec):
            type.__setattr__(cls, "spec", None)  # the base's spec describes another backend: not this class's
        constant_members.bake(cls, Accelerator)

    def __setattr__(self, name: str, value: Any) -> None:
        """Set an attribute; one that answers a baked member re-bakes that member on this instance."""
        object.__setattr__(self, name, value)
        if name in constant_members.BAKED_ATTRIBUTES:
            constant_members.bake_instance(self, name, Accelerator)
            if name == "device_type":
                self._follow_device_type()

    def __delattr__(self, name: str) -> None:
        """Delete an attribute; the members it answered on this instance answer from the class again."""
        object.__delattr__(self, name)
        if name in constant_members.BAKED_ATTRIBUTES:
            constant_members.unbake_instance(self, name)
            if name == "device_type":
                self._follow_device_type()

    def __getstate__(self) -> dict[str, Any]:
        """Return the instance's attributes without its baked members (pickling re-bakes them)."""
        return constant_members.unbaked_state(self.__dict__)

    def __setstate__(self, state: dict[str, Any]) -> None:
        """Restore pickled attributes and re-bake the members that instance attributes answer."""
        self.__dict__.update(state)
        for name in constant_members.BAKED_ATTRIBUTES & state.keys():
            constant_members.bake_instance(self, name, Accelerator)

    def _follow_device_type(self) -> None:
        """Rebuild what derives from ``device_type`` after it is assigned or deleted on the instance."""

    def __init__(self) -> None:
        """Create the accelerator. Must not initialise the device runtime."""
        self._compile_backend = None

    @property
    def name(self) -> str:
        """The backend's name (``"cuda"``, ``"cpu"``, ...); the same as ``_name``."""
        return self._name

    def __repr__(self) -> str:
        return f"<{type(self).__name__} name={self._name!r} device_type={self.device_type!r}>"

    def info(self) -> AcceleratorInfo:
        """Return a JSON-serialisable description: devices, memory, dtypes, capabilities, versions.

        May initialise the device runtime (it asks each device for its properties).
        """
        from accelhal.report import describe_accelerator

        return describe_accelerator(self)

    def vendor_versions(self) -> dict[str, str]:
        """Return the versions of the vendor runtime and libraries behind this backend (for reports)."""
        return {}

    def device_description(self, device_index: int) -> str:
        """Return a human-readable name of device ``device_index`` (e.g. ``"NVIDIA H100 80GB HBM3"``)."""
        return self.device_name(device_index)

    def device_capability(self, device_index: int) -> str | None:
        """Return the device's compute capability or architecture string, where the runtime has one."""
        return None

    # ------------------------------------------------------------------ execution model
    def is_synchronized_device(self) -> bool:
        """Return True when the device runs synchronously with the host (DeepSpeed then skips side streams)."""
        return self._is_synchronized_device

    def use_host_timers(self) -> bool:
        """Return True when timing should use host clocks instead of device events."""
        return self._uses_host_timers

    def resolves_data_dependency(self) -> bool:
        """Return True when the device orders work across streams by itself."""
        return self._resolves_data_dependency

    def handles_memory_backpressure(self) -> bool:
        """Return True when the device blocks enqueueing while memory is full."""
        return self._handles_memory_backpressure

    # ------------------------------------------------------------------ devices
    def device_name(self, device_index: int | None = None) -> str:
        """Return the device string: ``"cuda"`` for ``None``, ``"cuda:1"`` for ``1``.

        >>> acc.device_name(), acc.device_name(0)  # on a cuda machine
        ('cuda', 'cuda:0')
        """
        if device_index is None:
            return self.device_type
        return self._indexed_device_name(device_index)

    def _indexed_device_name(self, device_index: int) -> str:
        """Return ``"<device_type>:<index>"`` for :meth:`device_name` (validates the index)."""
        return f"{self.device_type}:{check_device_index(device_index)}"

    def device(self, device_index: int | None = None) -> torch.device:
        """Return the ``torch.device`` of ``device_index`` (the current device when ``None``).

        Always a ``torch.device``, never a vendor context-manager class.
        """
        index = self.current_device() if device_index is None else check_device_index(device_index)
        return torch.device(self.device_type, index)

    @abc.abstractmethod
    def set_device(self, device_index: int) -> None:
        """Make ``device_index`` the current device of this process."""

    @abc.abstractmethod
    def current_device(self) -> int:
        """Return the index of the current device, always an ``int``."""

    def current_device_name(self) -> str:
        """Return ``"<device_type>:<current index>"``, the form to pass as ``device=``."""
        return f"{self.device_type}:{self.current_device()}"

    @abc.abstractmethod
    def device_count(self) -> int:
        """Return the number of devices this process can see (at most ``accelhal.contract.spec.MAX_DEVICES``)."""

    @abc.abstractmethod
    def synchronize(self, device_index: int | None = None) -> None:
        """Wait until all work queued on the device has finished."""

    @abc.abstractmethod
    def is_available(self) -> bool:
        """Return True when the runtime is present and at least one device is usable."""

    # ------------------------------------------------------------------ RNG
    def random(self) -> types.ModuleType:
        """Return the module exposing the RNG API (``torch.random``)."""
        return torch.random

    @abc.abstractmethod
    def set_rng_state(self, new_state: torch.Tensor, device_index: int | None = None) -> None:
        """Restore the generator state of ``device_index`` (current device when ``None``)."""

    @abc.abstractmethod
    def get_rng_state(self, device_index: int | None = None) -> torch.Tensor:
        """Return the generator state of ``device_index`` as a ``torch.uint8`` tensor."""

    @abc.abstractmethod
    def manual_seed(self, seed: int) -> None:
        """Seed the generator of the current device."""

    @abc.abstractmethod
    def manual_seed_all(self, seed: int) -> None:
        """Seed the generators of every device."""

    @abc.abstractmethod
    def initial_seed(self) -> int:
        """Return the initial seed of the current device's generator."""

    @abc.abstractmethod
    def default_generator(self, device_index: int) -> torch.Generator:
        """Return the default ``torch.Generator`` of ``device_index``."""

    # ------------------------------------------------------------------ streams and events
    _stream_class: ClassVar[type[Any] | None] = None
    _event_class: ClassVar[type[Any] | None] = None

    if TYPE_CHECKING:  # the types; at run time the C-getter properties below

        @property
        def Stream(self) -> type[Any] | None: ...  # noqa: N802 - DeepSpeed's name
        @property
        def Event(self) -> type[Any] | None: ...  # noqa: N802 - DeepSpeed's name

    else:
        Stream = property(
            operator.attrgetter("_stream_class"),  # C getter: as cheap to read as ``torch.cpu.Stream``
            doc="The stream class, or ``None`` when the runtime has no user streams (``_stream_class``).",
        )
        Event = property(
            operator.attrgetter("_event_class"),
            doc="The event class (accepting ``enable_timing=True``), or ``None`` without events (``_event_class``).",
        )

    def stream(self, stream: Any) -> contextlib.AbstractContextManager[Any]:
        """Return a context manager that makes ``stream`` current; a no-op context without streams."""
        return contextlib.nullcontext(stream)

    def current_stream(self, device_index: int | None = None) -> Any:
        """Return the current stream of ``device_index``, or ``None`` without streams."""
        return None

    def default_stream(self, device_index: int | None = None) -> Any:
        """Return the default stream of ``device_index``, or ``None`` without streams."""
        return None

    # ------------------------------------------------------------------ memory
    def empty_cache(self) -> None:
        """Release cached allocator blocks back to the device (no-op without a cache)."""
        return None

    @abc.abstractmethod
    def memory_allocated(self, device_index: int | None = None) -> int:
        """Return the bytes currently held by tensors."""

    @abc.abstractmethod
    def max_memory_allocated(self, device_index: int | None = None) -> int:
        """Return the peak of :meth:`memory_allocated` since the last reset."""

    def reset_max_memory_allocated(self, device_index: int | None = None) -> None:
        """Reset the peak of :meth:`memory_allocated` (and every other peak, as torch does)."""
        self.reset_peak_memory_stats(device_index)

    def memory_cached(self, device_index: int | None = None) -> int:
        """Return :meth:`memory_reserved` (a legacy name)."""
        return self.memory_reserved(device_index)

    def max_memory_cached(self, device_index: int | None = None) -> int:
        """Return :meth:`max_memory_reserved` (a legacy name)."""
        return self.max_memory_reserved(device_index)

    def reset_max_memory_cached(self, device_index: int | None = None) -> None:
        """Reset the reserved-memory peak (a legacy name)."""
        self.reset_peak_memory_stats(device_index)

    @abc.abstractmethod
    def memory_stats(self, device_index: int | None = None) -> dict[str, Any]:
        """Return the allocator statistics, keyed in torch.cuda's style (``"allocated_bytes.all.current"``, ...)."""

    @abc.abstractmethod
    def reset_peak_memory_stats(self, device_index: int | None = None) -> None:
        """Reset every peak figure."""

    @abc.abstractmethod
    def memory_reserved(self, device_index: int | None = None) -> int:
        """Return the bytes reserved by the allocator."""

    @abc.abstractmethod
    def max_memory_reserved(self, device_index: int | None = None) -> int:
        """Return the peak of :meth:`memory_reserved` since the last reset."""

    @abc.abstractmethod
    def total_memory(self, device_index: int | None = None) -> int:
        """Return the device's capacity in bytes."""

    @abc.abstractmethod
    def available_memory(self, device_index: int | None = None) -> int:
        """Return the free bytes on the device, from the driver where it can say."""

    # ------------------------------------------------------------------ dtypes
    @abc.abstractmethod
    def is_bf16_supported(self) -> bool:
        """Return True when bfloat16 tensors are usable for training on this device."""

    @abc.abstractmethod
    def is_fp16_supported(self) -> bool:
        """Return True when float16 tensors are usable for training on this device."""

    def is_fp64_supported(self) -> bool:
        """Return True when float64 tensors are usable on this device."""
        return True

    def supported_dtypes(self) -> list[torch.dtype]:
        """Return the floating dtypes usable for training, ``torch.float32`` first."""
        dtypes = [torch.float32]
        if self.is_fp16_supported():
            dtypes.append(torch.float16)
        if self.is_bf16_supported():
            dtypes.append(torch.bfloat16)
        return dtypes

    # ------------------------------------------------------------------ misc
    def range_push(self, msg: str, domain: str | None = None, category: str | None = None) -> None:
        """Open a profiler range named ``msg`` (no-op where the backend has no profiler ranges)."""
        return None

    def range_pop(self, domain: str | None = None) -> None:
        """Close the innermost profiler range."""
        return None

    def lazy_call(self, callback: Callable[[], _T]) -> _T | None:
        """Run ``callback`` once the device runtime is initialised.

        Here: immediately, returning its result. Backends with lazy initialisation queue it
        instead (and return ``None``); a callback is never dropped.
        """
        return callback()

    def communication_backend_name(self) -> str:
        """Return the ``torch.distributed`` backend for this device (``"nccl"``, ``"hccl"``, ``"gloo"``).

        ``""`` where the device has none (the generic backend of a device type that
        ``torch.distributed`` registers no backend for).
        """
        return self._communication_backend_name

    def is_triton_supported(self) -> bool:
        """Return True when Triton kernels can run on the current device."""
        return False

    def prefer_triton_grouped_mm(self) -> bool:
        """Return True when a Triton grouped GEMM beats ``torch._grouped_mm`` here (MoE)."""
        return False

    # ------------------------------------------------------------------ graphs
    def is_current_stream_capturing(self) -> bool:
        """Return True while a graph capture is in progress on the current stream."""
        return False

    def create_graph(self) -> Any:
        """Return a new, empty graph object, or ``None`` where graphs are unsupported."""
        return None

    def capture_to_graph(
        self, graph: Any, pool: Any = None, stream: Any = None
    ) -> contextlib.AbstractContextManager[Any]:
        """Return a context manager that records the work in its body into ``graph``.

        A no-op context where graphs are unsupported (the body then runs eagerly).
        """
        return contextlib.nullcontext()

    def replay_graph(self, graph: Any) -> None:
        """Replay a captured graph (no-op where graphs are unsupported)."""
        return None

    # ------------------------------------------------------------------ tensor factories
    # Each ``*Tensor`` property reads a factory built once per backend class (see
    # ``_tensor_factory_property``): DeepSpeed reads them on hot paths.
    if TYPE_CHECKING:  # the types; at run time the C-getter properties below

        @property
        def BFloat16Tensor(self) -> TensorFactory: ...  # noqa: N802 - DeepSpeed's name
        @property
        def ByteTensor(self) -> TensorFactory: ...  # noqa: N802
        @property
        def DoubleTensor(self) -> TensorFactory: ...  # noqa: N802
        @property
        def FloatTensor(self) -> TensorFactory: ...  # noqa: N802
        @property
        def HalfTensor(self) -> TensorFactory: ...  # noqa: N802
        @property
        def IntTensor(self) -> TensorFactory: ...  # noqa: N802
        @property
        def LongTensor(self) -> TensorFactory: ...  # noqa: N802

    else:
        BFloat16Tensor = tensor_factory_property("bfloat16", "``factory(data)`` -> a bfloat16 tensor on this device.")
        ByteTensor = tensor_factory_property("uint8", "``factory(data)`` -> a uint8 tensor on this device.")
        DoubleTensor = tensor_factory_property("float64", "``factory(data)`` -> a float64 tensor on this device.")
        FloatTensor = tensor_factory_property(
            "float32",
            """``factory(data)`` -> a float32 tensor on this device.

            >>> acc.FloatTensor([1, 2]).dtype
            torch.float32
            """,
        )
        HalfTensor = tensor_factory_property("float16", "``factory(data)`` -> a float16 tensor on this device.")
        IntTensor = tensor_factory_property("int32", "``factory(data)`` -> an int32 tensor on this device.")
        LongTensor = tensor_factory_property("int64", "``factory(data)`` -> an int64 tensor on this device.")

    # ------------------------------------------------------------------ host memory pinning
    def _torch_pin_memory(self, tensor: torch.Tensor) -> torch.Tensor:
        """Page-lock ``tensor`` for this device (backends override the torch call)."""
        return tensor.pin_memory()

    def _torch_empty_pinned(self, tensor: torch.Tensor, shape: Sequence[int]) -> torch.Tensor:
        """Return a fresh page-locked buffer of ``shape`` with ``tensor``'s dtype."""
        return tensor.new_empty(tuple(shape), pin_memory=True)

    def _torch_is_pinned(self, tensor: torch.Tensor) -> bool:
        """Return whether ``tensor`` lives in page-locked host memory."""
        return bool(tensor.is_pinned())

    def register_host_memory(self, address: int, num_bytes: int) -> bool:
        """Register already page-locked host memory with the runtime; False when unsupported."""
        return False

    def unregister_host_memory(self, address: int) -> None:
        """Undo :meth:`register_host_memory`."""
        return None

    def pin_memory_alignment(self) -> int:
        """Return the byte alignment required for :meth:`register_host_memory`; 1 means none."""
        return 1

    @staticmethod
    def _shape_numel(shape: Sequence[int]) -> int:
        """Return the number of elements of ``shape`` (DeepSpeed's helper of the same name, for code that calls it)."""
        return math.prod(int(dim) for dim in shape)

    @staticmethod
    def _require_host_device(device: str | torch.device) -> None:
        try:
            dev = torch.device(device)
        except RuntimeError as err:
            raise ValueError(f"pin_empty allocates host memory; device must be 'cpu', got {device!r}") from err
        if dev.type != "cpu":
            raise ValueError(f"pin_empty allocates host memory; device must be 'cpu', got {device!r}")

    def _pin_fresh(self, template: torch.Tensor, shape: Sequence[int]) -> torch.Tensor:
        return self._torch_empty_pinned(template, shape)

    def pin_memory(self, tensor: torch.Tensor, make_copy: bool = True, match_shape: bool = True) -> torch.Tensor:
        """Return a page-locked copy of host ``tensor``.

        With ``make_copy=False`` the tensor is only a shape/dtype template and a fresh,
        uninitialised pinned buffer is returned; ``match_shape=False`` makes it flat.
        Where the backend cannot page-lock, ``make_copy=True`` returns ``tensor`` itself (cpu returns it for
        ``make_copy=False`` too, as DeepSpeed's ``CPU_Accelerator`` does).
        """
        if not isinstance(tensor, torch.Tensor):  # inline: the call costs only on the error path
            check_tensor(tensor, "pin_memory")
        if make_copy:
            return self._torch_pin_memory(tensor)
        shape = tuple(tensor.shape) if match_shape else (tensor.numel(),)
        return self._pin_fresh(tensor, shape)

    def pin_empty(
        self, *size: int | Sequence[int], dtype: torch.dtype, device: str | torch.device = "cpu"
    ) -> torch.Tensor:
        """Return an uninitialised pinned host buffer: ``pin_empty(2, 3, dtype=torch.float32)``."""
        self._require_host_device(device)
        first = size[0] if len(size) == 1 else None
        shape = tuple(first) if isinstance(first, (tuple, list, torch.Size)) else tuple(size)
        template = torch.empty(0, dtype=dtype, device=device)
        return self._pin_fresh(template, shape)  # type: ignore[arg-type]

    def pin_empty_like(
        self, tensor: torch.Tensor, device: str | torch.device = "cpu", dtype: torch.dtype | None = None
    ) -> torch.Tensor:
        """Return an uninitialised pinned host buffer shaped like ``tensor``."""
        self._require_host_device(device)
        template = tensor.new_empty((0,), dtype=tensor.dtype if dtype is None else dtype, device=device)
        return self._pin_fresh(template, tuple(tensor.shape))

    def is_pinned(self, tensor: torch.Tensor) -> bool:
        """Return whether ``tensor`` is page-locked; False for storage-less (meta, fake) tensors.

        Raises:
            TypeError: ``tensor`` is not a ``torch.Tensor``.
        """
        check_tensor(tensor, "is_pinned")
        if tensor.device.type == "meta":
            return False
        try:
            return self._torch_is_pinned(tensor)
        except (RuntimeError, NotImplementedError):
            return False

    def unpin_memory(self, tensor: torch.Tensor) -> None:
        """Release pinning; with torch's pinning this returns ``None`` (memory is freed with the tensor)."""
        return None

    def on_accelerator(self, tensor: torch.Tensor) -> bool:
        """Return True when ``tensor`` lives on this backend's device type."""
        return tensor.device.type == self.device_type

    # ------------------------------------------------------------------ op builders
    def op_builder_dir(self) -> str:
        """Return the dotted package that holds this backend's op builders."""
        from accelhal.ops import op_builder_dir

        return op_builder_dir(self._name)

    def create_op_builder(self, class_name: str) -> Any:
        """Return an instance of the op builder ``class_name`` for this backend.

        An unknown name gives an instance of :class:`accelhal.ops.NotImplementedBuilder`
        whose use raises an error naming the op and the backend.
        """
        return self.get_op_builder(class_name)()

    def get_op_builder(self, class_name: str) -> type[Any]:
        """Return the op builder class ``class_name`` for this backend (``NotImplementedBuilder`` when unknown)."""
        from accelhal.ops import get_op_builder

        if not isinstance(class_name, str):
            raise TypeError(f"get_op_builder takes an op builder's class name (a str), got {quote(class_name)}")
        return get_op_builder(self._name, class_name)

    def build_extension(self) -> type[Any]:
        """Return the setuptools ``build_ext`` class for ahead-of-time builds."""
        from torch.utils.cpp_extension import BuildExtension

        return BuildExtension

    # ------------------------------------------------------------------ launcher environment
    def export_envs(self) -> list[str]:
        """Return the prefixes of the variables a multi-node launcher forwards to remote ranks."""
        return list(self._export_envs)

    def visible_devices_envs(self) -> list[str]:
        """Return the names of the variables that restrict which devices a process sees (may be empty)."""
        return list(self._visible_devices_envs)

    def set_visible_devices_envs(
        self, current_env: MutableMapping[str, str], local_accelerator_ids: Sequence[int | str]
    ) -> None:
        """Write ``local_accelerator_ids`` comma-joined into each visible-devices variable of ``current_env``.

        >>> env = {}; acc.set_visible_devices_envs(env, [0, 1]); env   # on cuda
        {'CUDA_VISIBLE_DEVICES': '0,1'}
        """
        ids = [str(i).strip() for i in local_accelerator_ids]
        bad = [i for i in ids if not i or "," in i]
        if isinstance(local_accelerator_ids, (str, bytes)) or bad:
            raise ValueError(
                f"local_accelerator_ids must be a sequence of device ids (ints, or strings such as UUIDs "
                f"without commas), got {local_accelerator_ids!r}"
            )
        value = ",".join(ids)
        for var in self._visible_devices_envs:
            current_env[var] = value

    # ------------------------------------------------------------------ torch.compile
    def get_compile_backend(self) -> str:
        """Return the ``torch.compile`` backend that works on this device: ``compile_backend_choice().backend``.

        The one :meth:`set_compile_backend` chose, else the vendor's (the spec's
        ``compile_backend``; hpu: ``"hpu_backend"``), else ``"inductor"`` where Inductor generates
        code for the device type, else ``"aot_eager"``. Imports neither ``torch._dynamo`` nor
        Inductor and uses no device (:mod:`accelhal.contract.compile_backend`)::

            model = torch.compile(model, backend=acc.get_compile_backend())
        """
        return self.compile_backend_choice().backend

    def compile_backend_choice(self) -> CompileChoice:
        """Return what :meth:`get_compile_backend` answers, and why (``accelhal info`` shows it)."""
        from accelhal.contract import compile_backend

        if self._compile_backend:
            return compile_backend.CompileChoice(self._compile_backend, "chosen with set_compile_backend()", "set")
        return compile_backend.choose(self.device_type, self._vendor_compile_backend())

    def set_compile_backend(self, backend: str) -> None:
        """Choose the ``torch.compile`` backend that :meth:`get_compile_backend` answers from now on.

        Raises :class:`~accelhal.CompileBackendError` (a ``ValueError``, as in DeepSpeed) for a name
        ``torch._dynamo.list_backends(exclude_tags=())`` does not list, and for ``"inductor"`` on a
        device Inductor generates no code for; the message names the backend that works there.
        Imports ``torch._dynamo`` (seconds, once per process).
        """
        from accelhal.contract import compile_backend

        compile_backend.check(backend, self.device_type, self._vendor_compile_backend())
        self._compile_backend = backend

    def _vendor_compile_backend(self) -> str:
        """Return the vendor's ``torch.compile`` backend: the spec's, else ``_default_compile_backend``."""
        spec = type(self).spec
        return (spec.compile_backend if spec is not None else "") or self._default_compile_backend


IDENTITY_REFUSED_FROM = CONTRACT_VERSION + 1
"""The contract version from which a class that declares an identity attribute is refused (it warns until then)."""


def _tell_of_class_identity(cls: type) -> None:
    """Warn, once for ``cls``, where its own body declares identity attributes: they belong in its spec.

    accelhal's own generated classes (the DeepSpeed-backed ones) are built from the same arguments
    as their spec and are not told.
    """
    declared = [attribute for attribute in IDENTITY_ATTRIBUTES.values() if attribute in cls.__dict__]
    module = cls.__dict__.get("__module__")
    module = module if isinstance(module, str) else ""  # a class may say anything there
    if not declared or module.partition(".")[0] in ("accelhal", "accelhal_backends"):
        return
    import sys
    import warnings

    from accelhal.errors import IdentityDeclarationWarning

    frame = sys._getframe(1)  # the class statement: the first frame of the class's module (a metaclass may be between)
    while frame.f_back is not None and frame.f_globals.get("__name__") != module:
        frame = frame.f_back
    fields = ", ".join(f"{field}=" for field, attribute in IDENTITY_ATTRIBUTES.items() if attribute in declared)
    warnings.warn_explicit(
        f"{cls.__qualname__} declares its backend's identity as class attributes ({', '.join(declared)}); "
        f"a backend's identity belongs in its BackendSpec only, and contract version {IDENTITY_REFUSED_FROM} "
        f"will refuse such a class. Move them: give the BackendSpec {fields}, remove the attributes and write "
        "`spec = <that BackendSpec>` in the class body (docs/plugins.md, 'Identity')",
        IdentityDeclarationWarning,
        frame.f_code.co_filename,
        frame.f_lineno,
        module=module or "<unknown>",
        registry=frame.f_globals.setdefault("__warningregistry__", {}),
    )


def _refuse_second_declaration(cls: type, spec: BackendSpec, attribute: str, value: object) -> None:
    """Raise ``TypeError`` where ``cls`` or a base without a spec declares ``attribute`` otherwise than ``spec``."""
    owner = next(klass for klass in cls.__mro__ if attribute in klass.__dict__)
    if owner is Accelerator or (isinstance(owner.__dict__.get("spec"), BackendSpec) and owner is not cls):
        return
    declared = owner.__dict__[attribute]
    if isinstance(value, tuple) and isinstance(declared, list):
        declared = tuple(declared)
    if declared != value:
        raise TypeError(
            f"{owner.__qualname__}.{attribute} is {declared!r} but the spec {spec.name!r} of {cls.__qualname__} "
            f"says {value!r}; declare a backend's identity once, in its spec"
        )


def _disagrees(cls: type, spec: BackendSpec | None) -> bool:
    """Return whether ``cls`` answers one of ``spec``'s identity facts otherwise (``_name = "acme"`` under cpu's)."""
    if spec is None:
        return False
    for attribute, value in _identity(spec).items():
        declared = getattr(cls, attribute, None)
        if isinstance(value, tuple) and isinstance(declared, list):
            declared = tuple(declared)
        if declared != value:
            return True
    return False


IDENTITY_ATTRIBUTES: dict[str, str] = {
    "name": "_name",
    "device_type": "device_type",
    "comm_backend": "_communication_backend_name",
    "visible_devices_envs": "_visible_devices_envs",
    "export_envs": "_export_envs",
}
"""Each identity field of :class:`~accelhal.BackendSpec` and the class attribute that answers it."""


def _identity(spec: BackendSpec) -> dict[str, object]:
    """Return the class attributes a spec answers for its accelerator class."""
    return {attribute: getattr(spec, field) for field, attribute in IDENTITY_ATTRIBUTES.items()}
