#include <torch/library.h>

#include "registration.h"
#include "torch_binding.h"

// The namespace is TORCH_EXTENSION_NAME, unique per build, so that several
// builds of this kernel can be loaded in one process.
TORCH_LIBRARY_EXPAND(TORCH_EXTENSION_NAME, ops) {
  ops.def("adaln(Tensor! out, Tensor x, Tensor scale, Tensor shift, float eps, bool rms, int seq) -> ()");
#if defined(CPU_KERNEL)
  ops.impl("adaln", torch::kCPU, &adaln);
#elif defined(CUDA_KERNEL) || defined(ROCM_KERNEL)
  ops.impl("adaln", torch::kCUDA, &adaln);
#endif
}

REGISTER_EXTENSION(TORCH_EXTENSION_NAME)
