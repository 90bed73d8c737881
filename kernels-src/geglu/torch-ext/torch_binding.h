#pragma once

#include <torch/torch.h>

// out[..., d] = gelu(gate) * value for input[..., 2d] = [value | gate]
// ([gate | value] when gate_first). Implemented once per backend.
void geglu(torch::Tensor& out, torch::Tensor const& input, bool approximate_tanh, bool gate_first);
