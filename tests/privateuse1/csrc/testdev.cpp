// A small out-of-tree PrivateUse1 device whose memory is host memory.
//
// It registers what torch needs to treat PrivateUse1 as the process's accelerator:
// a device guard (devices, streams, events), a device allocator that keeps memory
// figures, the PrivateUse1 hooks (availability, device count, current device,
// default generators, pinned host memory), the minimal ATen kernels (empty,
// empty_strided, as_strided, view, resize_, copies to, from and within the device)
// and a boxed CPU fallback for every other operator. Execution is synchronous: work
// on any stream is complete when the call returns.
//
// Configuration, read once when the library is loaded:
//   ACCELHAL_TESTDEV_DEVICES  number of devices (default 2; 0 means "no device")
//   ACCELHAL_TESTDEV_MEMORY   bytes of memory per device (default 8 GiB)
//   ACCELHAL_TESTDEV_FLOAT64  0: no float64 tensors, as on devices without it (default 1)
//
// A device's context is created by its first real use (set_device, an allocation, a
// stream, an event, synchronize, lazy_init) and never by counting or querying; a
// process forked after a context was created cannot use the device (as with CUDA).
//
// It builds against torch 2.9 and later (c10::DeviceAllocator arrived in 2.9); the memory
// information and device capability hooks, which torch 2.10 added, are left out before it.

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/EmptyTensor.h>
#include <ATen/detail/PrivateUse1HooksInterface.h>
#include <ATen/native/CPUFallback.h>
#include <ATen/ops/_local_scalar_dense_native.h>
#include <ATen/ops/_reshape_alias_native.h>
#include <ATen/ops/as_strided_native.h>
#include <ATen/ops/copy_native.h>
#include <ATen/ops/from_blob.h>
#include <ATen/ops/resize_native.h>
#include <ATen/ops/set_native.h>
#include <ATen/ops/view_native.h>
#include <c10/core/CachingDeviceAllocator.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <torch/library.h>
#include <torch/version.h>

#define ACCELHAL_TORCH_AT_LEAST(major, minor) \
  (TORCH_VERSION_MAJOR > (major) || (TORCH_VERSION_MAJOR == (major) && TORCH_VERSION_MINOR >= (minor)))

#if !ACCELHAL_TORCH_AT_LEAST(2, 9)
#error "the test device needs torch >= 2.9 (c10::DeviceAllocator)"
#endif

#include <pthread.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace accelhal_testdev {
namespace {

using c10::DeviceIndex;
constexpr c10::DeviceType kType = c10::DeviceType::PrivateUse1;
constexpr DeviceIndex kMaxDevices = 16;
constexpr size_t kAlignment = 64;

// ------------------------------------------------------------------ devices and contexts
int64_t read_env(const char* name, int64_t fallback, int64_t low, int64_t high) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') {
    return fallback;
  }
  char* end = nullptr;
  const long long value = std::strtoll(text, &end, 10);
  if (end == text || *end != '\0' || value < low || value > high) {
    return fallback;
  }
  return value;
}

DeviceIndex device_count() noexcept {
  static const auto count = static_cast<DeviceIndex>(read_env("ACCELHAL_TESTDEV_DEVICES", 2, 0, kMaxDevices));
  return count;
}

size_t memory_capacity() {
  static const auto bytes = static_cast<size_t>(read_env("ACCELHAL_TESTDEV_MEMORY", int64_t{8} << 30, 0, int64_t{1} << 50));
  return bytes;
}

bool has_float64() {
  static const bool supported = read_env("ACCELHAL_TESTDEV_FLOAT64", 1, 0, 1) == 1;
  return supported;
}

void check_dtype(c10::ScalarType dtype) {
  TORCH_CHECK_TYPE(dtype != c10::ScalarType::Double || has_float64(),
                   "the test device does not support float64 (ACCELHAL_TESTDEV_FLOAT64=0)");
}

std::array<std::atomic<bool>, kMaxDevices> g_context{};
std::atomic<bool> g_bad_fork{false};
thread_local DeviceIndex t_current = 0;

bool any_context() {
  for (DeviceIndex i = 0; i < kMaxDevices; ++i) {
    if (g_context[i].load()) {
      return true;
    }
  }
  return false;
}

void on_fork_child() {
  if (any_context()) {
    g_bad_fork = true;
  }
}

void check_index(DeviceIndex index) {
  TORCH_CHECK(device_count() > 0, "the test device has no devices (ACCELHAL_TESTDEV_DEVICES=0)");
  TORCH_CHECK(index >= 0 && index < device_count(), "invalid device index ", static_cast<int>(index),
              ": the test device has ", static_cast<int>(device_count()), " device(s)");
}

// Creates the context of ``index`` on first use, as a real runtime does.
void use(DeviceIndex index) {
  check_index(index);
  TORCH_CHECK(!g_bad_fork, "cannot use the test device in a forked subprocess whose parent had created a device "
              "context; use the 'spawn' start method");
  g_context[index] = true;
}

DeviceIndex current_device() {
  TORCH_CHECK(device_count() > 0, "the test device has no devices (ACCELHAL_TESTDEV_DEVICES=0)");
  return t_current;
}

void set_device(DeviceIndex index) {
  use(index);
  t_current = index;
}

DeviceIndex exchange_device(DeviceIndex index) {
  const DeviceIndex previous = current_device();
  if (index != previous) {
    set_device(index);
  }
  return previous;
}

// ------------------------------------------------------------------ device allocator
struct Block {
  DeviceIndex device;
  size_t size;
};

using Blocks = std::map<uintptr_t, Block>;

// The block of ``blocks`` holding ``ptr`` (interior pointers included), or nullptr.
const Block* block_holding(const Blocks& blocks, const void* ptr) {
  const auto address = reinterpret_cast<uintptr_t>(ptr);
  auto it = blocks.upper_bound(address);
  if (it == blocks.begin()) {
    return nullptr;
  }
  --it;
  return address < it->first + it->second.size ? &it->second : nullptr;
}

void free_device_memory(void* ptr);

using c10::CachingAllocator::Stat;
using c10::CachingDeviceAllocator::DeviceStats;
constexpr size_t kByteFigures = 4;

// The aggregate figures this allocator keeps: four in bytes, then three counts.
std::array<Stat*, 7> figures(DeviceStats& s) {
  return {&s.allocated_bytes[0], &s.reserved_bytes[0], &s.active_bytes[0], &s.requested_bytes[0],
          &s.allocation[0],      &s.segment[0],        &s.active[0]};
}

// Counts one block of ``nbytes`` in (``add``) or out of ``s``.
void account(DeviceStats& s, size_t nbytes, bool add) {
  const auto all = figures(s);
  for (size_t i = 0; i < all.size(); ++i) {
    const size_t amount = i < kByteFigures ? nbytes : 1;
    add ? all[i]->increase(amount) : all[i]->decrease(amount);
  }
}

struct HostDeviceAllocator final : public c10::DeviceAllocator {
  std::mutex mutex;
  Blocks blocks;
  std::array<DeviceStats, kMaxDevices> stats;

  c10::DataPtr allocate(size_t nbytes) override {
    const DeviceIndex device = current_device();
    use(device);
    if (nbytes == 0) {
      return {nullptr, nullptr, &free_device_memory, c10::Device(kType, device)};
    }
    {
      std::lock_guard<std::mutex> lock(mutex);
      const auto in_use = static_cast<size_t>(stats[device].allocated_bytes[0].current);
      TORCH_CHECK_WITH(OutOfMemoryError, in_use + nbytes <= memory_capacity(), "test device ",
                       static_cast<int>(device), " is out of memory: tried to allocate ", nbytes, " bytes with ",
                       in_use, " of ", memory_capacity(), " bytes in use");
    }
    const size_t rounded = (nbytes + kAlignment - 1) / kAlignment * kAlignment;
    void* data = std::aligned_alloc(kAlignment, rounded);
    TORCH_CHECK_WITH(OutOfMemoryError, data != nullptr, "host allocation of ", rounded, " bytes failed");
    std::lock_guard<std::mutex> lock(mutex);
    blocks[reinterpret_cast<uintptr_t>(data)] = Block{device, nbytes};
    account(stats[device], nbytes, true);
    stats[device].num_device_alloc++;
    return {data, data, &free_device_memory, c10::Device(kType, device)};
  }

  void release(void* ptr) {
    if (ptr == nullptr) {
      return;
    }
    {
      std::lock_guard<std::mutex> lock(mutex);
      auto it = blocks.find(reinterpret_cast<uintptr_t>(ptr));
      if (it != blocks.end()) {
        account(stats[it->second.device], it->second.size, false);
        stats[it->second.device].num_device_free++;
        blocks.erase(it);
      }
    }
    std::free(ptr);
  }

  // The device of the block holding ``ptr``, or -1.
  DeviceIndex device_of(const void* ptr) {
    std::lock_guard<std::mutex> lock(mutex);
    const Block* block = block_holding(blocks, ptr);
    return block == nullptr ? -1 : block->device;
  }

  c10::DeleterFnPtr raw_deleter() const override {
    return &free_device_memory;
  }

  void copy_data(void* dest, const void* src, std::size_t count) const override {
    std::memcpy(dest, src, count);
  }

  bool initialized() override {
    return true;
  }

  void emptyCache(c10::MempoolId_t /*mempool_id*/) override {}

  void recordStream(const c10::DataPtr& /*ptr*/, c10::Stream /*stream*/) override {}

  DeviceStats getDeviceStats(DeviceIndex device) override {
    check_index(device);
    std::lock_guard<std::mutex> lock(mutex);
    return stats[device];
  }

  void resetAccumulatedStats(DeviceIndex device) override {
    check_index(device);
    std::lock_guard<std::mutex> lock(mutex);
    for (Stat* figure : figures(stats[device])) {
      figure->reset_accumulated();
    }
    stats[device].num_device_alloc = 0;
    stats[device].num_device_free = 0;
  }

  void resetPeakStats(DeviceIndex device) override {
    check_index(device);
    std::lock_guard<std::mutex> lock(mutex);
    for (Stat* figure : figures(stats[device])) {
      figure->reset_peak();
    }
  }

#if ACCELHAL_TORCH_AT_LEAST(2, 10)
  std::pair<size_t, size_t> getMemoryInfo(DeviceIndex device) override {
    check_index(device);
    std::lock_guard<std::mutex> lock(mutex);
    const auto in_use = static_cast<size_t>(stats[device].reserved_bytes[0].current);
    return {memory_capacity() - std::min(in_use, memory_capacity()), memory_capacity()};
  }
#endif
};

// Never destroyed: tensors may outlive static destruction at exit.
HostDeviceAllocator& g_allocator = *new HostDeviceAllocator();

void free_device_memory(void* ptr) {
  g_allocator.release(ptr);
}

// ------------------------------------------------------------------ pinned host memory
void free_pinned_memory(void* ptr);

struct PinnedHostAllocator final : public c10::Allocator {
  std::mutex mutex;
  Blocks blocks;

  c10::DataPtr allocate(size_t nbytes) override {
    if (nbytes == 0) {
      return {nullptr, nullptr, &free_pinned_memory, c10::Device(c10::DeviceType::CPU)};
    }
    const size_t rounded = (nbytes + kAlignment - 1) / kAlignment * kAlignment;
    void* data = std::aligned_alloc(kAlignment, rounded);
    TORCH_CHECK_WITH(OutOfMemoryError, data != nullptr, "pinned host allocation of ", rounded, " bytes failed");
    std::lock_guard<std::mutex> lock(mutex);
    blocks[reinterpret_cast<uintptr_t>(data)] = Block{-1, nbytes};
    return {data, data, &free_pinned_memory, c10::Device(c10::DeviceType::CPU)};
  }

  void release(void* ptr) {
    {
      std::lock_guard<std::mutex> lock(mutex);
      blocks.erase(reinterpret_cast<uintptr_t>(ptr));
    }
    std::free(ptr);
  }

  bool contains(const void* ptr) {
    std::lock_guard<std::mutex> lock(mutex);
    return block_holding(blocks, ptr) != nullptr;
  }

  c10::DeleterFnPtr raw_deleter() const override {
    return &free_pinned_memory;
  }

  void copy_data(void* dest, const void* src, std::size_t count) const override {
    std::memcpy(dest, src, count);
  }
};

PinnedHostAllocator& g_pinned = *new PinnedHostAllocator();

void free_pinned_memory(void* ptr) {
  g_pinned.release(ptr);
}

// ------------------------------------------------------------------ streams and events
// Stream 0 is each device's default stream; new streams get increasing ids. Work is
// synchronous, so every stream is always idle and an event is complete once recorded.
std::atomic<c10::StreamId> g_next_stream{1};
thread_local std::array<c10::StreamId, kMaxDevices> t_stream{};

struct HostEvent {
  bool timing;
  DeviceIndex device;
  bool recorded = false;
  std::chrono::steady_clock::time_point when;
};

struct GuardImpl final : public c10::impl::DeviceGuardImplInterface {
  GuardImpl() = default;
  explicit GuardImpl(c10::DeviceType t) {
    TORCH_CHECK(t == kType, "the test device's guard got device type ", t);
  }

  c10::DeviceType type() const override {
    return kType;
  }

  c10::Device exchangeDevice(c10::Device d) const override {
    TORCH_CHECK(d.type() == kType, "expected a ", kType, " device, got ", d);
    return c10::Device(kType, exchange_device(d.index()));
  }

  c10::Device getDevice() const override {
    return c10::Device(kType, current_device());
  }

  void setDevice(c10::Device d) const override {
    TORCH_CHECK(d.type() == kType, "expected a ", kType, " device, got ", d);
    set_device(d.index());
  }

  void uncheckedSetDevice(c10::Device d) const noexcept override {
    if (d.index() >= 0 && d.index() < device_count()) {
      t_current = d.index();
    }
  }

  c10::Stream getStream(c10::Device d) const override {
    const DeviceIndex index = d.index() < 0 ? current_device() : d.index();
    check_index(index);
    return c10::Stream(c10::Stream::UNSAFE, c10::Device(kType, index), t_stream[index]);
  }

  c10::Stream getDefaultStream(c10::Device d) const override {
    const DeviceIndex index = d.index() < 0 ? current_device() : d.index();
    check_index(index);
    return c10::Stream(c10::Stream::UNSAFE, c10::Device(kType, index), 0);
  }

  c10::Stream getNewStream(c10::Device d, int /*priority*/) const override {
    const DeviceIndex index = d.index() < 0 ? current_device() : d.index();
    use(index);
    return c10::Stream(c10::Stream::UNSAFE, c10::Device(kType, index), g_next_stream++);
  }

  c10::Stream getStreamFromGlobalPool(c10::Device d, bool /*isHighPriority*/) const override {
    return getNewStream(d, 0);
  }

  c10::Stream exchangeStream(c10::Stream s) const override {
    const DeviceIndex index = s.device_index();
    use(index);
    const c10::Stream previous(c10::Stream::UNSAFE, c10::Device(kType, index), t_stream[index]);
    t_stream[index] = s.id();
    return previous;
  }

  DeviceIndex deviceCount() const noexcept override {
    return device_count();
  }

#if ACCELHAL_TORCH_AT_LEAST(2, 10)
  c10::DeviceCapability getDeviceCapability(c10::Device /*device*/) const override {
    c10::DeviceCapability capability;
    if (!has_float64()) {
      capability.capability_data.supported_scalar_types.has_Double = 0;
    }
    return capability;
  }
#endif

  void destroyEvent(void* event, const DeviceIndex /*device_index*/) const noexcept override {
    delete static_cast<HostEvent*>(event);
  }

  void record(void** event, const c10::Stream& stream, const DeviceIndex device_index,
              const c10::EventFlag flag) const override {
    TORCH_CHECK(device_index == -1 || device_index == stream.device_index(), "event device index ",
                static_cast<int>(device_index), " does not match the recording stream's device index ",
                static_cast<int>(stream.device_index()));
    use(stream.device_index());
    auto* host_event = static_cast<HostEvent*>(*event);
    if (host_event == nullptr) {
      host_event = new HostEvent{flag == c10::EventFlag::BACKEND_DEFAULT, stream.device_index()};
      *event = host_event;
    }
    host_event->recorded = true;
    host_event->when = std::chrono::steady_clock::now();
  }

  void block(void* /*event*/, const c10::Stream& stream) const override {
    use(stream.device_index());
  }

  bool queryEvent(void* /*event*/) const override {
    return true;
  }

  bool queryStream(const c10::Stream& /*stream*/) const override {
    return true;
  }

  void synchronizeStream(const c10::Stream& stream) const override {
    use(stream.device_index());
  }

  void synchronizeEvent(void* /*event*/) const override {}

  void synchronizeDevice(const DeviceIndex device_index) const override {
    use(device_index < 0 ? current_device() : device_index);
  }

  double elapsedTime(void* start, void* end, const DeviceIndex /*device_index*/) const override {
    auto* first = static_cast<HostEvent*>(start);
    auto* second = static_cast<HostEvent*>(end);
    TORCH_CHECK(first != nullptr && second != nullptr && first->recorded && second->recorded,
                "both events must be recorded before measuring the time between them");
    TORCH_CHECK(first->timing && second->timing,
                "both events must be created with enable_timing=True to measure the time between them");
    return std::chrono::duration<double, std::milli>(second->when - first->when).count();
  }
};

C10_REGISTER_GUARD_IMPL(PrivateUse1, GuardImpl)

// ------------------------------------------------------------------ generators
// The device's generator is the CPU's Mersenne Twister under the PrivateUse1 device; the
// CPU fallback runs random kernels with a CPU generator holding its state (see fallback).
struct DeviceGenerator final : public at::CPUGeneratorImpl {
  explicit DeviceGenerator(DeviceIndex index, uint64_t seed = c10::default_rng_seed_val)
      : at::CPUGeneratorImpl(seed) {
    device_ = c10::Device(kType, index);
    key_set_ = c10::DispatchKeySet(c10::DispatchKey::PrivateUse1);
  }

 private:
  DeviceGenerator* clone_impl() const override {
    auto* copy = new DeviceGenerator(device_.index());
    copy->set_engine(const_cast<DeviceGenerator*>(this)->engine());
    copy->set_next_float_normal_sample(const_cast<DeviceGenerator*>(this)->next_float_normal_sample());
    copy->set_next_double_normal_sample(const_cast<DeviceGenerator*>(this)->next_double_normal_sample());
    return copy;
  }
};

std::array<std::once_flag, kMaxDevices> g_generator_once;
auto& g_generators = *new std::array<at::Generator, kMaxDevices>();

const at::Generator& default_generator(DeviceIndex index) {
  if (index < 0) {
    index = current_device();
  }
  check_index(index);
  std::call_once(g_generator_once[index], [index] {
    g_generators[index] = at::make_generator<DeviceGenerator>(index);
  });
  return g_generators[index];
}

// ------------------------------------------------------------------ hooks
struct Hooks final : public at::PrivateUse1HooksInterface {
  bool isBuilt() const override {
    return true;
  }

  bool isAvailable() const override {
    return device_count() > 0;
  }

  bool hasPrimaryContext(DeviceIndex device_index) const override {
    return device_index >= 0 && device_index < kMaxDevices && g_context[device_index].load();
  }

  void init() const override {}

  DeviceIndex deviceCount() const override {
    return device_count();
  }

  void setCurrentDevice(DeviceIndex device) const override {
    set_device(device);
  }

  DeviceIndex getCurrentDevice() const override {
    return current_device();
  }

  DeviceIndex exchangeDevice(DeviceIndex device) const override {
    return exchange_device(device);
  }

  DeviceIndex maybeExchangeDevice(DeviceIndex device) const override {
    if (device < 0 || device >= device_count()) {
      return current_device();
    }
    return exchange_device(device);
  }

  const at::Generator& getDefaultGenerator(DeviceIndex device_index) const override {
    return default_generator(device_index);
  }

  at::Generator getNewGenerator(DeviceIndex device_index) const override {
    return at::make_generator<DeviceGenerator>(device_index < 0 ? current_device() : device_index);
  }

  at::Device getDeviceFromPtr(void* data) const override {
    const DeviceIndex device = g_allocator.device_of(data);
    TORCH_CHECK(device >= 0, "the pointer ", data, " is not test-device memory");
    return at::Device(kType, device);
  }

  bool isPinnedPtr(const void* data) const override {
    return g_pinned.contains(data);
  }

  at::Allocator* getPinnedMemoryAllocator() const override {
    return &g_pinned;
  }

  void resizePrivateUse1Bytes(const c10::Storage& storage, size_t newsize) const override {
    c10::StorageImpl* impl = storage.unsafeGetStorageImpl();
    TORCH_CHECK(impl->resizable(), "trying to resize storage that is not resizable");
    c10::DataPtr fresh = impl->allocator()->allocate(newsize);
    const size_t keep = std::min(newsize, impl->nbytes());
    if (keep > 0 && impl->data() != nullptr) {
      std::memcpy(fresh.get(), impl->data(), keep);
    }
    impl->set_data_ptr_noswap(std::move(fresh));
    impl->set_nbytes(newsize);
  }
};

// ------------------------------------------------------------------ ATen kernels
at::Tensor as_cpu(const at::Tensor& t) {
  return at::from_blob(t.data_ptr(), t.sizes(), t.strides(), t.options().device(c10::DeviceType::CPU));
}

// Checks the arguments of a factory and returns the device to allocate on.
c10::Device factory_device(const char* what, std::optional<c10::Device> device, std::optional<c10::ScalarType> dtype,
                           std::optional<c10::Layout> layout, std::optional<bool> pin_memory) {
  const c10::Device target = c10::device_or_default(device);
  TORCH_CHECK(target.type() == kType, "the test device's ", what, "() got device ", target);
  TORCH_CHECK(c10::layout_or_default(layout) == c10::Layout::Strided, "the test device supports strided tensors only");
  TORCH_CHECK(!c10::pinned_memory_or_default(pin_memory), "only CPU tensors can be pinned");
  check_dtype(c10::dtype_or_default(dtype));
  return target;
}

at::Tensor empty_memory_format(c10::IntArrayRef size, std::optional<c10::ScalarType> dtype,
                               std::optional<c10::Layout> layout, std::optional<c10::Device> device,
                               std::optional<bool> pin_memory, std::optional<c10::MemoryFormat> memory_format) {
  const c10::DeviceGuard guard(factory_device("empty", device, dtype, layout, pin_memory));
  return at::detail::empty_generic(size, &g_allocator, c10::DispatchKeySet(c10::DispatchKey::PrivateUse1),
                                   c10::dtype_or_default(dtype), memory_format);
}

at::Tensor empty_strided(c10::IntArrayRef size, c10::IntArrayRef stride, std::optional<c10::ScalarType> dtype,
                         std::optional<c10::Layout> layout, std::optional<c10::Device> device,
                         std::optional<bool> pin_memory) {
  const c10::DeviceGuard guard(factory_device("empty_strided", device, dtype, layout, pin_memory));
  return at::detail::empty_strided_generic(size, stride, &g_allocator,
                                           c10::DispatchKeySet(c10::DispatchKey::PrivateUse1),
                                           c10::dtype_or_default(dtype));
}

at::Tensor as_strided(const at::Tensor& self, c10::IntArrayRef size, c10::IntArrayRef stride,
                      std::optional<int64_t> storage_offset) {
  return at::native::as_strided_tensorimpl(self, size, stride, storage_offset);
}

const at::Tensor& resize_(const at::Tensor& self, c10::IntArrayRef size,
                          std::optional<c10::MemoryFormat> memory_format) {
  const c10::DeviceGuard guard(self.device());
  return at::native::resize_(self, size, memory_format);
}

at::Tensor reshape_alias(const at::Tensor& self, c10::IntArrayRef size, c10::IntArrayRef stride) {
  return at::native::_reshape_alias(self, size, stride);
}

at::Tensor view(const at::Tensor& self, c10::IntArrayRef size) {
  return at::native::view(self, size);
}

// Copies to, from and within the device: all of it is host memory.
at::Tensor copy_from(const at::Tensor& self, const at::Tensor& dst, bool non_blocking) {
  if (self.numel() == 0) {
    return dst;
  }
  at::Tensor target = dst.is_cpu() ? dst : as_cpu(dst);
  const at::Tensor source = self.is_cpu() ? self : as_cpu(self);
  at::native::copy_(target, source, non_blocking);
  return dst;
}

at::Tensor copy_from_and_resize(const at::Tensor& self, const at::Tensor& dst) {
  resize_(dst, self.sizes(), std::nullopt);
  return copy_from(self, dst, false);
}

at::Scalar local_scalar_dense(const at::Tensor& self) {
  return at::native::_local_scalar_dense_cpu(as_cpu(self));
}

// Work on the device runs on the host at once, whatever the stream: a tensor's memory is never in use by
// another stream when it is freed, so recording a stream on it (as engines do before an asynchronous copy) is
// a no-op, as the caching allocators of CUDA and XPU make it when the stream is the tensor's own.
void record_stream(at::Tensor& self, c10::Stream stream) {}

at::Tensor& set_source_tensor(at::Tensor& self, const at::Tensor& source) {
  return at::native::set_tensor_(self, source);
}

at::Tensor& set_source_storage(at::Tensor& self, at::Storage source) {
  return at::native::set_(self, std::move(source));
}

at::Tensor& set_source_storage_offset(at::Tensor& self, at::Storage source, int64_t storage_offset,
                                      c10::IntArrayRef size, c10::IntArrayRef stride) {
  return at::native::set_storage_cpu_(self, std::move(source), storage_offset, size, stride);
}

bool is_generator_argument(const c10::Argument& argument) {
  const auto& type = argument.type();
  if (type->kind() == c10::TypeKind::GeneratorType) {
    return true;
  }
  if (type->kind() == c10::TypeKind::OptionalType) {
    return type->castRaw<c10::OptionalType>()->getElementType()->kind() == c10::TypeKind::GeneratorType;
  }
  return false;
}

DeviceIndex first_device_argument(const torch::jit::Stack& stack, size_t begin) {
  for (size_t i = begin; i < stack.size(); ++i) {
    const auto& value = stack[i];
    if (value.isTensor() && value.toTensor().device().type() == kType) {
      return value.toTensor().device().index();
    }
    if (value.isTensorList()) {
      for (const at::Tensor& t : value.toTensorList().vec()) {
        if (t.defined() && t.device().type() == kType) {
          return t.device().index();
        }
      }
    }
  }
  return -1;
}

// Every operator without a kernel here runs on the CPU over copies of its arguments.
// A random operator draws from the device's generator: its state is lent to a CPU
// generator for the call and taken back afterwards.
void fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  const auto& arguments = op.schema().arguments();
  const size_t begin = stack->size() - arguments.size();
  std::vector<std::pair<at::Generator, at::Generator>> lent;
  for (size_t i = 0; i < arguments.size(); ++i) {
    if (!is_generator_argument(arguments[i])) {
      continue;
    }
    c10::IValue& value = (*stack)[begin + i];
    at::Generator device_generator;
    if (value.isNone()) {
      const DeviceIndex device = first_device_argument(*stack, begin);
      if (device < 0) {
        continue;
      }
      device_generator = default_generator(device);
    } else if (value.isGenerator() && value.toGenerator().device().type() == kType) {
      device_generator = value.toGenerator();
    } else {
      continue;
    }
    at::Generator cpu_generator = at::make_generator<at::CPUGeneratorImpl>();
    {
      std::lock_guard<std::mutex> lock(device_generator.mutex());
      auto* from = at::check_generator<at::CPUGeneratorImpl>(std::optional<at::Generator>(cpu_generator));
      auto* source = static_cast<at::CPUGeneratorImpl*>(device_generator.unsafeGetGeneratorImpl());
      from->set_engine(source->engine());
      from->set_next_float_normal_sample(source->next_float_normal_sample());
      from->set_next_double_normal_sample(source->next_double_normal_sample());
    }
    value = c10::IValue(cpu_generator);
    lent.emplace_back(device_generator, cpu_generator);
  }
  at::native::cpu_fallback(op, stack);
  for (auto& [device_generator, cpu_generator] : lent) {
    std::lock_guard<std::mutex> lock(device_generator.mutex());
    auto* target = static_cast<at::CPUGeneratorImpl*>(device_generator.unsafeGetGeneratorImpl());
    auto* used = static_cast<at::CPUGeneratorImpl*>(cpu_generator.unsafeGetGeneratorImpl());
    target->set_engine(used->engine());
    target->set_next_float_normal_sample(used->next_float_normal_sample());
    target->set_next_double_normal_sample(used->next_double_normal_sample());
  }
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("empty.memory_format", empty_memory_format);
  m.impl("empty_strided", empty_strided);
  m.impl("as_strided", as_strided);
  m.impl("resize_", resize_);
  m.impl("_reshape_alias", reshape_alias);
  m.impl("view", view);
  m.impl("_copy_from", copy_from);
  m.impl("_copy_from_and_resize", copy_from_and_resize);
  m.impl("_local_scalar_dense", local_scalar_dense);
  m.impl("record_stream", record_stream);
  m.impl("set_.source_Tensor", set_source_tensor);
  m.impl("set_.source_Storage", set_source_storage);
  m.impl("set_.source_Storage_storage_offset", set_source_storage_offset);
}

TORCH_LIBRARY_IMPL(_, PrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&fallback>());
}

// ------------------------------------------------------------------ runtime functions for Python
int64_t op_device_count() {
  return device_count();
}

int64_t op_current_device() {
  return current_device();
}

void op_set_device(int64_t index) {
  set_device(static_cast<DeviceIndex>(index));
}

int64_t op_exchange_device(int64_t index) {
  if (index < 0) {
    return -1;
  }
  return exchange_device(static_cast<DeviceIndex>(index));
}

void op_synchronize(int64_t index) {
  use(index < 0 ? current_device() : static_cast<DeviceIndex>(index));
}

bool op_has_primary_context(int64_t index) {
  return index >= 0 && index < kMaxDevices && g_context[index].load();
}

bool op_in_bad_fork() {
  return g_bad_fork.load();
}

void op_lazy_init() {
  use(current_device());
}

at::Generator generator_for(int64_t index) {
  return default_generator(static_cast<DeviceIndex>(index));
}

void op_manual_seed(int64_t seed, int64_t index) {
  at::Generator generator = generator_for(index);
  std::lock_guard<std::mutex> lock(generator.mutex());
  generator.set_current_seed(static_cast<uint64_t>(seed));
}

int64_t op_seed(int64_t index) {
  at::Generator generator = generator_for(index);
  std::lock_guard<std::mutex> lock(generator.mutex());
  return static_cast<int64_t>(generator.seed());
}

int64_t op_initial_seed(int64_t index) {
  at::Generator generator = generator_for(index);
  std::lock_guard<std::mutex> lock(generator.mutex());
  return static_cast<int64_t>(generator.current_seed());
}

at::Generator op_default_generator(int64_t index) {
  return generator_for(index);
}

at::Tensor op_get_rng_state(int64_t index) {
  at::Generator generator = generator_for(index);
  std::lock_guard<std::mutex> lock(generator.mutex());
  return generator.get_state();
}

void op_set_rng_state(const at::Tensor& state, int64_t index) {
  at::Generator generator = generator_for(index);
  std::lock_guard<std::mutex> lock(generator.mutex());
  generator.set_state(state);
}

bool op_is_pinned_host(const at::Tensor& t) {
  return t.is_cpu() && g_pinned.contains(t.data_ptr());
}

TORCH_LIBRARY(accelhal_testdev, m) {
  m.def("device_count() -> int", op_device_count);
  m.def("current_device() -> int", op_current_device);
  m.def("set_device(int index) -> ()", op_set_device);
  m.def("exchange_device(int index) -> int", op_exchange_device);
  m.def("synchronize(int index) -> ()", op_synchronize);
  m.def("has_primary_context(int index) -> bool", op_has_primary_context);
  m.def("in_bad_fork() -> bool", op_in_bad_fork);
  m.def("lazy_init() -> ()", op_lazy_init);
  m.def("manual_seed(int seed, int index) -> ()", op_manual_seed);
  m.def("seed(int index) -> int", op_seed);
  m.def("initial_seed(int index) -> int", op_initial_seed);
  m.def("default_generator(int index) -> Generator?", op_default_generator);
  m.def("get_rng_state(int index) -> Tensor", op_get_rng_state);
  m.def("set_rng_state(Tensor state, int index) -> ()", op_set_rng_state);
  m.def("is_pinned_host(Tensor t) -> bool", op_is_pinned_host);
}

struct Registration {
  Registration() {
    at::RegisterPrivateUse1HooksInterface(new Hooks());  // never destroyed, as torch's own hooks
    c10::SetAllocator(kType, &g_allocator);
    pthread_atfork(nullptr, nullptr, &on_fork_child);
  }
};

Registration g_registration;

}  // namespace
}  // namespace accelhal_testdev
