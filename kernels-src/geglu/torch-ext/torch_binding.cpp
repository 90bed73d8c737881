#include <torch/library.h>

#include "registration.h"
#include "torch_binding.h"

// The namespace is TORCH_EXTENSION_NAME, unique per build, so that several
// builds of this kernel can be loaded in one process.
TORCH_LIBRARY_EXPAND(TORCH_EXTENSION_NAME, ops) {
  ops.def("geglu(Tensor! out, Tensor input, bool approximate_tanh, bool gate_first) -> ()");
#if defined(CPU_KERNEL)
  ops.impl("geglu", torch::kCPU, &geglu);
#elif defined(CUDA_KERNEL) || defined(ROCM_KERNEL)
  ops.impl("geglu", torch::kCUDA, &geglu);
#endif
}

REGISTER_EXTENSION(TORCH_EXTENSION_NAME)
