#include <torch/library.h>

#include "registration.h"
#include "torch_binding.h"

// Outputs are arguments marked (a!)/(b!) and the ops return nothing, so the
// caller owns allocation (and can poison or reuse buffers); torch.compile
// functionalises the mutation and the Python register_fake covers tracing.
TORCH_LIBRARY_EXPAND(TORCH_EXTENSION_NAME, ops) {
  ops.def("rms_norm(Tensor(a!) out, Tensor input, Tensor weight, float eps) -> ()");
  ops.def(
      "fused_add_rms_norm(Tensor(a!) out, Tensor(b!) residual_out, Tensor input, Tensor residual, "
      "Tensor weight, float eps) -> ()");
#if defined(CPU_KERNEL)
  ops.impl("rms_norm", torch::kCPU, &rms_norm);
  ops.impl("fused_add_rms_norm", torch::kCPU, &fused_add_rms_norm);
#elif defined(CUDA_KERNEL) || defined(ROCM_KERNEL)
  ops.impl("rms_norm", torch::kCUDA, &rms_norm);
  ops.impl("fused_add_rms_norm", torch::kCUDA, &fused_add_rms_norm);
#endif
}

REGISTER_EXTENSION(TORCH_EXTENSION_NAME)
