// Kernels matched to the extern calls that launched them, by family.
#include "analysis/attribution/extern_sites.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <string>

namespace sightline::attribution {

namespace {

bool containsAny(std::string_view text, std::initializer_list<std::string_view> needles) {
  return std::any_of(needles.begin(), needles.end(),
                     [&](std::string_view n) { return text.find(n) != std::string_view::npos; });
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace

KernelFamily familyOfKernel(std::string_view name) {
  if (name.starts_with("[memset") || name.starts_with("[memcpy")) return KernelFamily::Before;
  std::string n = lower(name);
  if (containsAny(n, {"sdpa", "flash", "fmha", "attention", "attn", "compute_dot_do_o", "convert_dq"}))
    return KernelFamily::Attention;
  if (containsAny(n, {"splitkreduce", "splitk_reduce"})) return KernelFamily::AfterGemm;
  if (containsAny(n, {"conv", "winograd", "implicit_gemm", "dgrad", "wgrad", "fprop_", "nchwtonhwc", "nhwctonchw"}))
    return KernelFamily::Conv;
  if (containsAny(n, {"gemm", "nvjet", "xmma", "cutlass", "gemv", "cublas", "sm90_", "sm80_", "sm100_", "ampere_",
                      "volta_", "turing_", "hopper_"}) ||
      n == "kernel2")
    return KernelFamily::Gemm;
  return KernelFamily::Other;
}

KernelFamily familyOfCall(std::string_view call) {
  size_t dot = call.find('.');
  std::string_view op = dot == std::string_view::npos ? call : call.substr(dot + 1);
  if (containsAny(
          op, {"scaled_dot_product", "flash_attention", "efficient_attention", "cudnn_attention", "flex_attention"}))
    return KernelFamily::Attention;
  if (containsAny(op, {"convolution", "cudnn_convolution", "conv"})) return KernelFamily::Conv;
  static constexpr std::array<std::string_view, 10> kMatmuls = {"mm",      "addmm", "bmm", "baddbmm", "_scaled_mm",
                                                                "_int_mm", "addmv", "mv",  "linear",  "matmul"};
  if (std::find(kMatmuls.begin(), kMatmuls.end(), op) != kMatmuls.end()) return KernelFamily::Gemm;
  return KernelFamily::Other;
}

std::vector<int32_t> matchExternCalls(const std::vector<KernelFamily>& kernels,
                                      const std::vector<KernelFamily>& calls) {
  std::vector<int32_t> out(kernels.size(), -1);
  int32_t next = 0;        // the first call not taken yet
  int32_t attention = -1;  // the attention call the previous kernel went to
  for (size_t k = 0; k < kernels.size(); ++k) {
    KernelFamily f = kernels[k];
    if (f == KernelFamily::AfterGemm || f == KernelFamily::Before) continue;
    if (f == KernelFamily::Attention && attention >= 0) {
      out[k] = attention;
      continue;
    }
    int32_t c = next;
    while (c < static_cast<int32_t>(calls.size()) && calls[static_cast<size_t>(c)] != f) ++c;
    if (c == static_cast<int32_t>(calls.size())) return {};
    out[k] = c;
    next = c + 1;
    attention = f == KernelFamily::Attention ? c : -1;
  }
  // Split-K reductions with the kernel before them, memsets with the kernel after them.
  for (size_t k = 0; k < kernels.size(); ++k)
    if (kernels[k] == KernelFamily::AfterGemm && k > 0) out[k] = out[k - 1];
  for (size_t k = kernels.size(); k-- > 0;)
    if (out[k] < 0 && k + 1 < kernels.size()) out[k] = out[k + 1];
  for (size_t k = 1; k < kernels.size(); ++k)
    if (out[k] < 0) out[k] = out[k - 1];
  if (std::find(out.begin(), out.end(), -1) != out.end()) return {};
  return out;
}

}  // namespace sightline::attribution
