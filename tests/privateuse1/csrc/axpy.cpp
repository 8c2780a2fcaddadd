// An op for the test device, built through accelhal's op builders: axpy(x, y, alpha) = alpha * x + y.
//
// The kernel is registered for the PrivateUse1 dispatch key only, so it runs for tensors
// on the test device and for nothing else (cpu tensors find no kernel). It reads and
// writes the tensors' memory through data pointers, as a device kernel does; the test
// device's memory is host memory, so the host runs it. The result is allocated on the
// input's device, by the device's allocator. ``calls()`` counts the kernel's runs.
#include <Python.h>

#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <torch/library.h>

#include <atomic>
#include <cstdint>

#define ACCELHAL_CAT2(a, b) a##b
#define ACCELHAL_CAT(a, b) ACCELHAL_CAT2(a, b)
#define ACCELHAL_STR2(x) #x
#define ACCELHAL_STR(x) ACCELHAL_STR2(x)

namespace {

std::atomic<int64_t> g_calls{0};

at::Tensor axpy(const at::Tensor& x, const at::Tensor& y, double alpha) {
  TORCH_CHECK(x.device() == y.device(), "axpy: x and y must be on one device, got ", x.device(), " and ", y.device());
  TORCH_CHECK(x.scalar_type() == at::kFloat && y.scalar_type() == at::kFloat, "axpy: float32 tensors only, got ",
              x.scalar_type(), " and ", y.scalar_type());
  TORCH_CHECK(x.sizes() == y.sizes(), "axpy: the shapes differ: ", x.sizes(), " and ", y.sizes());
  const at::Tensor xs = x.contiguous();
  const at::Tensor ys = y.contiguous();
  at::Tensor out = at::empty(x.sizes(), x.options());
  const float* px = xs.const_data_ptr<float>();
  const float* py = ys.const_data_ptr<float>();
  float* po = out.mutable_data_ptr<float>();
  const auto a = static_cast<float>(alpha);
  for (int64_t i = 0; i < out.numel(); ++i) {
    po[i] = a * px[i] + py[i];
  }
  ++g_calls;
  return out;
}

PyObject* calls(PyObject*, PyObject*) { return PyLong_FromLongLong(g_calls.load()); }

PyMethodDef methods[] = {{"calls", calls, METH_NOARGS, "How many times the device kernel ran."},
                         {nullptr, nullptr, 0, nullptr}};

PyModuleDef module = {PyModuleDef_HEAD_INIT, ACCELHAL_STR(TORCH_EXTENSION_NAME),
                      "axpy for the accelhal test device (torch.ops.accelhal_testdev_ops.axpy)", -1, methods};

}  // namespace

TORCH_LIBRARY(accelhal_testdev_ops, m) { m.def("axpy(Tensor x, Tensor y, float alpha) -> Tensor"); }

TORCH_LIBRARY_IMPL(accelhal_testdev_ops, PrivateUse1, m) { m.impl("axpy", axpy); }

PyMODINIT_FUNC ACCELHAL_CAT(PyInit_, TORCH_EXTENSION_NAME)(void) { return PyModule_Create(&module); }
