// Which extern call of a generated wrapper launched a kernel (internal to analysis/attribution,
// used by LineResolver): cuBLAS, cuDNN and attention calls carry no Python backtrace of their
// own, so the launches between two placed ones are matched to the wrapper's extern calls
// between those by what each kernel is (an attention kernel to the attention call, a GEMM to a
// matmul), in order, rather than by position alone.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace sightline::attribution {

enum class KernelFamily : uint8_t {
  Other,      // an ATen kernel with no family of its own (elementwise, reductions)
  Gemm,       // cuBLAS/CUTLASS matmuls (nvjet, gemm, xmma, ...)
  Attention,  // flash, memory-efficient or cuDNN attention, and their helper kernels
  Conv,       // cuDNN convolutions
  AfterGemm,  // a split-K reduction: belongs with the GEMM before it
  Before,     // a memset or copy an extern call makes before its kernels
};

// A GPU kernel's family from its name ("[memset]" for memsets).
KernelFamily familyOfKernel(std::string_view name);
// An extern call's family from the wrapper's call ("extern_kernels.mm",
// "aten._scaled_dot_product_flash_attention_backward").
KernelFamily familyOfCall(std::string_view call);

// For each of `kernels` (in launch order), the index into `calls` (the extern calls between,
// in wrapper order) that launched it: consecutive attention kernels go to one attention call,
// any other kernel of a family to the next call of that family, split-K reductions with the
// GEMM before them, memsets with the kernel after them. Empty when the kernels do not fit the
// calls (a family with no call left): the caller then places them by position.
std::vector<int32_t> matchExternCalls(const std::vector<KernelFamily>& kernels, const std::vector<KernelFamily>& calls);

}  // namespace sightline::attribution
