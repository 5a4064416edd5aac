#include "analysis/attribution/extern_sites.h"

#include <gtest/gtest.h>

namespace sightline::attribution {
namespace {

using F = KernelFamily;

TEST(ExternSites, KernelFamiliesFromTheirNames) {
  EXPECT_EQ(familyOfKernel("cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7_64x128x64_4x1"),
            F::Attention);
  EXPECT_EQ(familyOfKernel("pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<64, 128>>"), F::Attention);
  EXPECT_EQ(familyOfKernel("fmha_cutlassB_f16_aligned_64x64_k64_sm80"), F::Attention);
  EXPECT_EQ(familyOfKernel("compute_dot_do_o_specialized"), F::Attention);
  EXPECT_EQ(familyOfKernel("nvjet_sm90_tst_192x128_64x5_1x2_h_bz_coopB_NNT"), F::Gemm);
  EXPECT_EQ(familyOfKernel("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64"), F::Gemm);
  EXPECT_EQ(familyOfKernel("Kernel2"), F::Gemm);
  EXPECT_EQ(familyOfKernel("splitKreduce_kernel"), F::AfterGemm);
  EXPECT_EQ(familyOfKernel("[memset]"), F::Before);
  EXPECT_EQ(familyOfKernel("sm80_xmma_fprop_implicit_gemm_indexed_wo_smem_bf16"), F::Conv);
  EXPECT_EQ(familyOfKernel("vectorized_elementwise_kernel"), F::Other);
  EXPECT_EQ(familyOfCall("extern_kernels.mm"), F::Gemm);
  EXPECT_EQ(familyOfCall("extern_kernels.addmm"), F::Gemm);
  EXPECT_EQ(familyOfCall("aten._scaled_dot_product_flash_attention_backward"), F::Attention);
  EXPECT_EQ(familyOfCall("aten._scaled_dot_product_cudnn_attention"), F::Attention);
  EXPECT_EQ(familyOfCall("extern_kernels.convolution"), F::Conv);
  EXPECT_EQ(familyOfCall("aten.index_put"), F::Other);
}

TEST(ExternSites, AttentionKernelsGoToTheAttentionCallNotByPosition) {
  // A backward stretch: the output projection's two matmuls, then attention's backward (a
  // memset and three kernels), then the qkv projection's two matmuls. By position alone the
  // eight launches would spread over the five calls and put a GEMM on attention.
  std::vector<F> calls = {F::Gemm, F::Gemm, F::Attention, F::Gemm, F::Gemm};
  std::vector<F> kernels = {F::Gemm,      F::Gemm,      F::Before, F::Attention,
                            F::Attention, F::Attention, F::Gemm,   F::AfterGemm};
  EXPECT_EQ(matchExternCalls(kernels, calls), (std::vector<int32_t>{0, 1, 2, 2, 2, 2, 3, 3}));
}

TEST(ExternSites, KernelsThatFitNoCallAreLeftToPosition) {
  EXPECT_TRUE(matchExternCalls({F::Gemm, F::Attention}, {F::Attention, F::Gemm}).empty());
  EXPECT_TRUE(matchExternCalls({F::Conv}, {F::Gemm}).empty());
  // Only memsets: they follow nothing, so there is no match to make.
  EXPECT_TRUE(matchExternCalls({F::Before}, {F::Gemm}).empty());
  EXPECT_TRUE(matchExternCalls({}, {F::Gemm}).empty());
}

}  // namespace
}  // namespace sightline::attribution
