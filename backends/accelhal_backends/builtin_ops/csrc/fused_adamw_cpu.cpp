// Fused AdamW step over flat fp32 CPU tensors, in place: one pass over memory instead of torch's five.
// Same arithmetic as torch.optim.AdamW (foreach=False, fused=False, amsgrad=False, maximize=False).
//
// Only the headers it uses (at::Tensor, at::parallel_for, and torch's pybind11 type casters), not
// <torch/extension.h>: that one pulls in all of libtorch's C++ API and compiles three times as long.
#include <ATen/Parallel.h>
#include <ATen/core/Tensor.h>
#include <torch/csrc/utils/pybind.h>

#include <cmath>

namespace {

void check(const at::Tensor& t, const char* what, int64_t numel) {
  TORCH_CHECK(t.device().is_cpu(), "fused_adamw (cpu): ", what, " must be a CPU tensor, got ", t.device());
  TORCH_CHECK(t.scalar_type() == at::kFloat, "fused_adamw (cpu): ", what, " must be float32, got ", t.scalar_type());
  TORCH_CHECK(t.is_contiguous(), "fused_adamw (cpu): ", what, " must be contiguous");
  TORCH_CHECK(t.numel() == numel, "fused_adamw (cpu): ", what, " has ", t.numel(), " elements, param has ", numel);
}

}  // namespace

void adamw_step(at::Tensor param, at::Tensor grad, at::Tensor exp_avg, at::Tensor exp_avg_sq, double lr, double beta1,
                double beta2, double eps, double weight_decay, int64_t step) {
  TORCH_CHECK(step >= 1, "fused_adamw (cpu): step counts from 1, got ", step);
  const int64_t n = param.numel();
  check(param, "param", n);
  check(grad, "grad", n);
  check(exp_avg, "exp_avg", n);
  check(exp_avg_sq, "exp_avg_sq", n);
  const float decay = static_cast<float>(1.0 - lr * weight_decay);
  const float b1 = static_cast<float>(beta1), b2 = static_cast<float>(beta2);
  const float one_minus_b1 = static_cast<float>(1.0 - beta1), one_minus_b2 = static_cast<float>(1.0 - beta2);
  const float step_size = static_cast<float>(lr / (1.0 - std::pow(beta1, static_cast<double>(step))));
  const float bias2_sqrt = static_cast<float>(std::sqrt(1.0 - std::pow(beta2, static_cast<double>(step))));
  const float epsilon = static_cast<float>(eps);
  float* p = param.data_ptr<float>();
  const float* g = grad.data_ptr<float>();
  float* m = exp_avg.data_ptr<float>();
  float* v = exp_avg_sq.data_ptr<float>();
  at::parallel_for(0, n, 2048, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const float gi = g[i];
      const float mi = m[i] + one_minus_b1 * (gi - m[i]);
      const float vi = v[i] * b2 + one_minus_b2 * gi * gi;
      m[i] = mi;
      v[i] = vi;
      const float denom = std::sqrt(vi) / bias2_sqrt + epsilon;
      p[i] = p[i] * decay - step_size * mi / denom;
    }
  });
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.doc() = "accelhal fused AdamW step (cpu)";
  m.def("adamw_step", &adamw_step, "In-place AdamW step over flat float32 tensors", py::arg("param"),
        py::arg("grad"), py::arg("exp_avg"), py::arg("exp_avg_sq"), py::arg("lr"), py::arg("beta1"),
        py::arg("beta2"), py::arg("eps"), py::arg("weight_decay"), py::arg("step"));
}
