#pragma once

#include <torch/torch.h>

// out = norm(x) * (1 + scale) + shift, modulation per sample of `seq` rows
// (see adaln_cuda/adaln.cu). Implemented once per backend.
void adaln(torch::Tensor& out, torch::Tensor const& x, torch::Tensor const& scale, torch::Tensor const& shift,
           double eps, bool rms, int64_t seq);
