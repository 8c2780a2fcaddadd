// The CUDA kernel of the fused AdamW step: one thread per element, grid-stride loop.
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>

#include <cstdint>

namespace {

__global__ void adamw_step_kernel(float* __restrict__ param, const float* __restrict__ grad,
                                  float* __restrict__ exp_avg, float* __restrict__ exp_avg_sq, int64_t n,
                                  float decay, float one_minus_b1, float beta2, float one_minus_b2,
                                  float step_size, float bias2_sqrt, float eps) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(blockDim.x) * gridDim.x) {
    const float g = grad[i];
    const float m = exp_avg[i] + one_minus_b1 * (g - exp_avg[i]);
    const float v = exp_avg_sq[i] * beta2 + one_minus_b2 * g * g;
    exp_avg[i] = m;
    exp_avg_sq[i] = v;
    const float denom = sqrtf(v) / bias2_sqrt + eps;
    param[i] = param[i] * decay - step_size * m / denom;
  }
}

}  // namespace

void launch_adamw_step(float* param, const float* grad, float* exp_avg, float* exp_avg_sq, int64_t n, float decay,
                       float one_minus_b1, float beta2, float one_minus_b2, float step_size, float bias2_sqrt,
                       float eps) {
  constexpr int threads = 256;
  const int64_t wanted = (n + threads - 1) / threads;
  const int blocks = static_cast<int>(wanted < 65535 ? wanted : 65535);
  adamw_step_kernel<<<blocks, threads, 0, at::cuda::getCurrentCUDAStream()>>>(
      param, grad, exp_avg, exp_avg_sq, n, decay, one_minus_b1, beta2, one_minus_b2, step_size, bias2_sqrt, eps);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}
