#pragma once

#include <torch/torch.h>

// Rotary embedding with full-width cos/sin tables; see rope_cuda/rope.cu for
// the row mapping (inner, mid). out may alias x. Implemented once per backend.
void rope(torch::Tensor& out, torch::Tensor const& x, torch::Tensor const& cos, torch::Tensor const& sin,
          bool interleaved, int64_t inner, int64_t mid);
