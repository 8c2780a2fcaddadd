// Fused AdamW step over flat fp32 CUDA tensors, in place: the Python binding and the checks.
#include <torch/extension.h>

#include <c10/core/DeviceGuard.h>

#include <cmath>

// Scalars are computed in double on the host, then rounded once, as torch.optim.AdamW does.
void launch_adamw_step(float* param, const float* grad, float* exp_avg, float* exp_avg_sq, int64_t n, float decay,
                       float one_minus_b1, float beta2, float one_minus_b2, float step_size, float bias2_sqrt,
                       float eps);

namespace {

void check(const torch::Tensor& t, const char* what, const torch::Tensor& param) {
  TORCH_CHECK(t.is_cuda(), "fused_adamw (cuda): ", what, " must be a CUDA tensor, got ", t.device());
  TORCH_CHECK(t.device() == param.device(), "fused_adamw (cuda): ", what, " is on ", t.device(), ", param on ",
              param.device());
  TORCH_CHECK(t.scalar_type() == torch::kFloat32, "fused_adamw (cuda): ", what, " must be float32, got ",
              t.scalar_type());
  TORCH_CHECK(t.is_contiguous(), "fused_adamw (cuda): ", what, " must be contiguous");
  TORCH_CHECK(t.numel() == param.numel(), "fused_adamw (cuda): ", what, " has ", t.numel(),
              " elements, param has ", param.numel());
}

}  // namespace

void adamw_step(torch::Tensor param, torch::Tensor grad, torch::Tensor exp_avg, torch::Tensor exp_avg_sq, double lr,
                double beta1, double beta2, double eps, double weight_decay, int64_t step) {
  TORCH_CHECK(step >= 1, "fused_adamw (cuda): step counts from 1, got ", step);
  check(param, "param", param);
  check(grad, "grad", param);
  check(exp_avg, "exp_avg", param);
  check(exp_avg_sq, "exp_avg_sq", param);
  if (param.numel() == 0) return;
  const c10::DeviceGuard guard(param.device());
  launch_adamw_step(param.data_ptr<float>(), grad.data_ptr<float>(), exp_avg.data_ptr<float>(),
                    exp_avg_sq.data_ptr<float>(), param.numel(), static_cast<float>(1.0 - lr * weight_decay),
                    static_cast<float>(1.0 - beta1), static_cast<float>(beta2), static_cast<float>(1.0 - beta2),
                    static_cast<float>(lr / (1.0 - std::pow(beta1, static_cast<double>(step)))),
                    static_cast<float>(std::sqrt(1.0 - std::pow(beta2, static_cast<double>(step)))),
                    static_cast<float>(eps));
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.doc() = "accelhal fused AdamW step (cuda)";
  m.def("adamw_step", &adamw_step, "In-place AdamW step over flat float32 tensors", py::arg("param"),
        py::arg("grad"), py::arg("exp_avg"), py::arg("exp_avg_sq"), py::arg("lr"), py::arg("beta1"),
        py::arg("beta2"), py::arg("eps"), py::arg("weight_decay"), py::arg("step"));
}
