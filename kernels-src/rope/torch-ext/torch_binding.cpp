#include <torch/library.h>

#include "registration.h"
#include "torch_binding.h"

// In place: the same kernel with out = x (each pair is read before it is written).
static void rope_inplace(torch::Tensor& x, torch::Tensor const& cos, torch::Tensor const& sin, bool interleaved,
                         int64_t inner, int64_t mid) {
  rope(x, x, cos, sin, interleaved, inner, mid);
}

// The namespace is TORCH_EXTENSION_NAME, unique per build, so that several
// builds of this kernel can be loaded in one process.
TORCH_LIBRARY_EXPAND(TORCH_EXTENSION_NAME, ops) {
  ops.def("rope(Tensor! out, Tensor x, Tensor cos, Tensor sin, bool interleaved, int inner, int mid) -> ()");
  ops.def("rope_inplace(Tensor! x, Tensor cos, Tensor sin, bool interleaved, int inner, int mid) -> ()");
#if defined(CPU_KERNEL)
  ops.impl("rope", torch::kCPU, &rope);
  ops.impl("rope_inplace", torch::kCPU, &rope_inplace);
#elif defined(CUDA_KERNEL) || defined(ROCM_KERNEL)
  ops.impl("rope", torch::kCUDA, &rope);
  ops.impl("rope_inplace", torch::kCUDA, &rope_inplace);
#endif
}

REGISTER_EXTENSION(TORCH_EXTENSION_NAME)
