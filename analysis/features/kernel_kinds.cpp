// What kind of work a GPU kernel is, by its name (kernel_kinds.h).
#include "analysis/features/kernel_kinds.h"

#include <algorithm>
#include <cctype>
#include <map>

namespace sightline::features {
namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool has(const std::string& s, std::string_view part) { return s.find(part) != std::string::npos; }

}  // namespace

std::string_view kernelKind(std::string_view kernel_name) {
  std::string n = lower(kernel_name);
  // The profile's own names for copies and fills.
  if (n.starts_with("[memcpy") || has(n, "memcpy")) return "copy";
  if (n.starts_with("[memset") || has(n, "memset")) return "fill";
  if (has(n, "nccl")) return "communication";
  // Triton kernels Inductor fused: what their name says first (it lists the ops).
  if (n.starts_with("triton_")) {
    if (has(n, "_mm") || has(n, "bmm") || has(n, "addmm")) return "GEMM";
    return "fused (Triton)";
  }
  if (has(n, "rnn") || has(n, "lstm") || has(n, "gru_")) return "recurrent (RNN)";
  if (has(n, "flash") || has(n, "fmha") || has(n, "attention") || has(n, "_sdpa") || has(n, "efficient_attention"))
    return "attention";
  // cuDNN's and CUTLASS's convolutions: fprop (forward), dgrad and wgrad (backward).
  if (has(n, "conv") || has(n, "fprop") || has(n, "dgrad") || has(n, "wgrad") || has(n, "implicit_gemm") ||
      has(n, "winograd") || has(n, "scudnn") || has(n, "hcudnn") || has(n, "cudnn::cnn") || has(n, "nchwtonhwc") ||
      has(n, "nhwctonchw"))
    return "convolution";
  if (has(n, "batch_norm") || has(n, "batchnorm") || has(n, "bn_fw") || has(n, "bn_bw") || has(n, "bn_") ||
      has(n, "welford"))
    return "batch norm";
  if (has(n, "layer_norm") || has(n, "layernorm") || has(n, "gammabeta") || has(n, "rms_norm") || has(n, "rmsnorm") ||
      has(n, "group_norm"))
    return "layer norm";
  if (has(n, "softmax")) return "softmax";
  if (has(n, "gemm") || has(n, "gemv") || has(n, "cublas") || has(n, "cutlass") || has(n, "nvjet") ||
      has(n, "matmul") || has(n, "_mma") || has(n, "sm90_xmma") || has(n, "ampere_") || has(n, "volta_") ||
      has(n, "turing_") || has(n, "hopper_"))
    return "GEMM";
  if (has(n, "pool")) return "pooling";
  if (has(n, "embedding") || has(n, "index_select") || has(n, "indexing_backward") || has(n, "gather") ||
      has(n, "scatter"))
    return "embedding";
  if (has(n, "nll_loss") || has(n, "cross_entropy") || has(n, "log_softmax") || has(n, "mse_loss") || has(n, "bce"))
    return "loss";
  if (has(n, "multi_tensor_apply") || has(n, "fused_adam") || has(n, "adam") || has(n, "sgd") || has(n, "_foreach"))
    return "optimizer";
  if (has(n, "reduce") || has(n, "reduction") || has(n, "sum_kernel") || has(n, "mean_kernel") ||
      has(n, "norm_kernel") || has(n, "argmax") || has(n, "topk") || has(n, "cub::"))
    return "reduction";
  if (has(n, "elementwise") || has(n, "vectorized") || has(n, "unrolled") || has(n, "pointwise") ||
      has(n, "copy_kernel") || has(n, "fill_kernel") || has(n, "cat_") || has(n, "catarray"))
    return "elementwise";
  return "other";
}

std::vector<WorkKind> workByKind(const attribution::LineCost& cost, const model::StringTable& strings) {
  std::map<std::string_view, WorkKind> by_kind;
  int64_t total = 0;
  for (const auto& [name, stat] : cost.by_name) {
    if (name >= strings.size()) continue;
    auto kind = kernelKind(strings[name]);
    auto& w = by_kind[kind];
    w.kind = std::string(kind);
    w.ns += stat.ns;
    w.count += stat.count;
    total += stat.ns;
  }
  std::vector<WorkKind> out;
  WorkKind other{"other", 0, 0, 0};
  for (auto& [kind, w] : by_kind) {
    if (kind == "other" || w.ns * 100 < total) {
      other.ns += w.ns, other.count += w.count;
      continue;
    }
    out.push_back(std::move(w));
  }
  if (other.ns > 0 || other.count > 0) out.push_back(other);
  for (auto& w : out) w.share = total > 0 ? static_cast<double>(w.ns) / static_cast<double>(total) : 0;
  std::stable_sort(out.begin(), out.end(), [](const WorkKind& a, const WorkKind& b) {
    if ((a.kind == "other") != (b.kind == "other")) return b.kind == "other";
    return a.ns > b.ns;
  });
  return out;
}

}  // namespace sightline::features
