// Kernel kinds on the names real captures hold (tests/data: the CNN of examples/, the GPT and
// the cuDNN LSTM), and a line's work by kind.
#include "analysis/features/kernel_kinds.h"

#include <gtest/gtest.h>

namespace sightline::features {
namespace {

TEST(KernelKinds, RealKernelNames) {
  struct Want {
    const char* name;
    const char* kind;
  };
  for (const Want& w : {
           Want{"sm90_xmma_fprop_implicit_gemm_f32f32_tf32f32_f32_nhwckrsc_nhwc_tilesize128x128x32", "convolution"},
           Want{"sm90_xmma_wgrad_indexed_implicit_gemm_f32f32_tf32f32_f32_nhwckrsc_nhwc", "convolution"},
           Want{"sm90_xmma_dgrad_implicit_gemm_f32f32_tf32f32_f32_nhwckrsc_nhwc", "convolution"},
           Want{"nchwToNhwcKernel", "convolution"},
           Want{"ampere_scudnn_winograd_128x128_ldg1_ldg4_relu_tile148t_nt_v1", "convolution"},
           Want{"bn_bw_1C11_kernel_new", "batch norm"},
           Want{"bn_fw_tr_1C11_kernel_NCHW", "batch norm"},
           Want{"max_pool_backward_nchw", "pooling"},
           Want{"sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize128x128x8_stage3_warpsize2x2x1_ffma", "GEMM"},
           Want{"void cutlass::Kernel2<cutlass_80_simt_sgemm_128x256_8x4_nt_align1>(T1::Params)", "GEMM"},
           Want{"void cutlass__5x_cudnn::Kernel<cutlass_tensorop_bf16_s16816fprop_optimized_bf16_256x64_32x4_nhwc_"
                "align8>(T1::Params)",
                "convolution"},
           Want{"nvjet_tst_128x256_64x4_1x2_h_bz_coopA_NTN", "GEMM"},
           Want{"fmha_cutlassB_f32_aligned_64x64_k64_sm80", "attention"},
           Want{"flash_fwd_kernel", "attention"},
           Want{"cunn_SoftMaxForwardReg", "softmax"},
           Want{"nll_loss_forward_reduce_cuda_kernel_2d", "loss"},
           Want{"GammaBetaBackwardCUDAKernelTemplate", "layer norm"},
           Want{"vectorized_layer_norm_kernel", "layer norm"},
           Want{"LSTM_elementWise_bp1", "recurrent (RNN)"},
           Want{"elemWiseRNNcell", "recurrent (RNN)"},
           Want{"embedding_backward_feature_kernel", "embedding"},
           Want{"vectorized_gather_kernel", "embedding"},
           Want{"multi_tensor_apply_kernel", "optimizer"},
           Want{"reduce_kernel", "reduction"},
           Want{"vectorized_elementwise_kernel", "elementwise"},
           Want{"elementwise_kernel", "elementwise"},
           Want{"ncclDevKernel_AllReduce_Sum_f32_RING_LL", "communication"},
           Want{"triton_poi_fused_add_mul_0", "fused (Triton)"},
           Want{"[memcpy HtoD]", "copy"},
           Want{"[memset]", "fill"},
           Want{"some_custom_kernel", "other"},
       })
    EXPECT_EQ(kernelKind(w.name), w.kind) << w.name;
}

TEST(KernelKinds, ALinesWorkByKindMostFirstSmallOnesFolded) {
  model::StringTable strings;
  attribution::LineCost c;
  c.by_name[strings.intern("sm90_xmma_fprop_implicit_gemm_f32")] = {10, 600};
  c.by_name[strings.intern("sm90_xmma_dgrad_implicit_gemm_f32")] = {10, 200};
  c.by_name[strings.intern("bn_fw_tr_1C11_kernel_NCHW")] = {10, 150};
  c.by_name[strings.intern("vectorized_elementwise_kernel")] = {20, 45};
  c.by_name[strings.intern("reduce_kernel")] = {2, 5};  // 0.5%: folded into "other"
  auto kinds = workByKind(c, strings);
  ASSERT_EQ(kinds.size(), 4u);
  EXPECT_EQ(kinds[0].kind, "convolution");
  EXPECT_EQ(kinds[0].ns, 800);
  EXPECT_EQ(kinds[0].count, 20u);
  EXPECT_DOUBLE_EQ(kinds[0].share, 0.8);
  EXPECT_EQ(kinds[1].kind, "batch norm");
  EXPECT_EQ(kinds[2].kind, "elementwise");
  EXPECT_EQ(kinds[3].kind, "other");
  EXPECT_EQ(kinds[3].ns, 5);
}

}  // namespace
}  // namespace sightline::features
