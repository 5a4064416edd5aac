// What kind of work a GPU kernel is, by its name (cuDNN, cuBLAS, CUTLASS, ATen's own kernels,
// Triton, NCCL): convolution, GEMM, attention, batch norm, ... A line that calls a model from
// an installed package (torchvision's ResNet, a Hugging Face model) holds all of that model's
// kernels and no line beneath it is the user's: its work by kind is what there is to say of it,
// as HTA's kernel breakdown and the TensorBoard plugin's operator view say it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/attribution/attribution.h"
#include "analysis/model/profile.h"

namespace sightline::features {

// "convolution", "GEMM", "attention", "batch norm", "layer norm", "softmax", "pooling",
// "reduction", "elementwise", "embedding", "loss", "optimizer", "recurrent (RNN)",
// "communication", "copy", "fill", "fused (Triton)", or "other".
std::string_view kernelKind(std::string_view kernel_name);

struct WorkKind {
  std::string kind;
  int64_t ns = 0;      // over the profile (not scaled)
  uint32_t count = 0;  // kernels (or copies, fills)
  double share = 0;    // of the line's GPU work
};

// A line's GPU work by kind, most first; kinds under 1% of it are folded into "other".
std::vector<WorkKind> workByKind(const attribution::LineCost& cost, const model::StringTable& strings);

}  // namespace sightline::features
