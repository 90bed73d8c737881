#pragma once

#include <torch/torch.h>

void rms_norm(torch::Tensor& out, torch::Tensor const& input, torch::Tensor const& weight, double eps);

void fused_add_rms_norm(torch::Tensor& out, torch::Tensor& residual_out, torch::Tensor const& input,
                        torch::Tensor const& residual, torch::Tensor const& weight, double eps);
