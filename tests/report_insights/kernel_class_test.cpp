#include "report/kernel_class.h"

#include <gtest/gtest.h>

#include "report_insights/scenarios.h"

namespace attnprof::report {
namespace {

TEST(ClassifyKernel, GpuNamesFromTheAnchors) {
  EXPECT_EQ(classify_kernel(testing::kNvjetNT), KernelClass::gemm);
  EXPECT_EQ(classify_kernel(testing::kFfmaNN), KernelClass::gemm);
  EXPECT_EQ(classify_kernel(testing::kMulKernel), KernelClass::elementwise);
  EXPECT_EQ(classify_kernel(testing::kMaskedFillKernel), KernelClass::mask);
  EXPECT_EQ(classify_kernel(testing::kSoftmaxKernel), KernelClass::softmax);
  EXPECT_EQ(classify_kernel(testing::kCopyKernel), KernelClass::copy);
  EXPECT_EQ(classify_kernel("void at::native::vectorized_elementwise_kernel<8, at::native::bfloat16_copy_kernel_cuda("
                            "at::TensorIteratorBase&)::{lambda(float)#1}, std::array<char*, 2ul> >(int)"),
            KernelClass::copy);
  EXPECT_EQ(classify_kernel(testing::kFillBool), KernelClass::mask);
  EXPECT_EQ(classify_kernel(testing::kFillFloat), KernelClass::elementwise);
  EXPECT_EQ(classify_kernel(testing::kTrilKernel), KernelClass::mask);
  EXPECT_EQ(classify_kernel(testing::kWhereKernel), KernelClass::elementwise);
  EXPECT_EQ(classify_kernel(testing::kIsneginfKernel), KernelClass::elementwise);
  EXPECT_EQ(classify_kernel(testing::kAllKernel), KernelClass::elementwise);
  EXPECT_EQ(classify_kernel(testing::kFlashKernel), KernelClass::attention);
  EXPECT_EQ(classify_kernel(testing::kCudnnKernel), KernelClass::attention);
  EXPECT_EQ(classify_kernel("fmha_cutlassF_bf16_aligned_64x64_rf_sm80(PyTorchMemEffAttention::AttentionKernel<"
                            "cutlass::bfloat16_t, cutlass::arch::Sm80, true, 64, 64, 64, true, true>::Params)"),
            KernelClass::attention);
  EXPECT_EQ(classify_kernel("triton_per_fused__softmax_exp_masked_fill_mul_prepare_softmax_online_sub_view_0"),
            KernelClass::softmax);
  EXPECT_EQ(classify_kernel("Memcpy DtoD (Device -> Device)"), KernelClass::memcpy);
  EXPECT_EQ(classify_kernel("Memset (Device)"), KernelClass::memset);
}

// FBGEMM's kernels carry "gemm" in their namespace only: embedding lookups and permutes are not
// GEMMs (seen in public recommendation-model traces, where fp32_gemm_cuda_cores named them).
TEST(ClassifyKernel, FbgemmNamespaceIsNotEvidenceOfAGemm) {
  EXPECT_NE(classify_kernel("void fbgemm_gpu::embedding_forward_split_kernel<float, float>(...)"), KernelClass::gemm);
  EXPECT_NE(classify_kernel("void fbgemm_gpu::permute_2D_data_kernel<int, long>(int, int, int const*)"),
            KernelClass::gemm);
  EXPECT_EQ(classify_kernel("void fbgemm_gpu::sgemm_kernel<float>(int)"), KernelClass::gemm);
  EXPECT_EQ(classify_kernel("volta_sgemm_128x64_tn"), KernelClass::gemm);
}

TEST(ClassifyKernel, CpuKernelNames) {
  EXPECT_EQ(classify_kernel("gemm"), KernelClass::gemm);
  EXPECT_EQ(classify_kernel("mul"), KernelClass::elementwise);
  EXPECT_EQ(classify_kernel("add"), KernelClass::elementwise);
  EXPECT_EQ(classify_kernel("copy"), KernelClass::copy);
  EXPECT_EQ(classify_kernel("fill"), KernelClass::elementwise);
  EXPECT_EQ(classify_kernel("masked_fill"), KernelClass::mask);
  EXPECT_EQ(classify_kernel("where"), KernelClass::elementwise);
  EXPECT_EQ(classify_kernel("tril"), KernelClass::mask);
  EXPECT_EQ(classify_kernel("triu"), KernelClass::mask);
  EXPECT_EQ(classify_kernel("logical_not"), KernelClass::mask);
  EXPECT_EQ(classify_kernel("isneginf"), KernelClass::elementwise);
  EXPECT_EQ(classify_kernel("all"), KernelClass::elementwise);
  EXPECT_EQ(classify_kernel("softmax"), KernelClass::softmax);
  EXPECT_EQ(classify_kernel("safe_softmax"), KernelClass::softmax);
  EXPECT_EQ(classify_kernel("scale_mask_softmax"), KernelClass::softmax);
  EXPECT_EQ(classify_kernel("flash_attention"), KernelClass::attention);
  EXPECT_EQ(classify_kernel("efficient_attention"), KernelClass::attention);
  EXPECT_EQ(classify_kernel("something_else"), KernelClass::other);
}

TEST(ClassifyKernel, EventCategoryOverridesTheName) {
  trace::Event e;
  e.name = "gemm-looking memcpy";
  e.category = trace::Category::gpu_memcpy;
  EXPECT_EQ(classify_event(e), KernelClass::memcpy);
  e.category = trace::Category::gpu_memset;
  EXPECT_EQ(classify_event(e), KernelClass::memset);
  e.category = trace::Category::kernel;
  EXPECT_EQ(classify_event(e), KernelClass::gemm);
}

TEST(NameTokens, MatchWholePiecesOnly) {
  EXPECT_TRUE(has_name_token("aten::all", "all"));
  EXPECT_FALSE(has_name_token("small_kernel", "all"));
  EXPECT_TRUE(has_name_token("isneginf_kernel_impl", "isneginf"));
  EXPECT_TRUE(has_name_token("Where", "where"));
}

TEST(ShortKernelName, DropsTemplatesAndArguments) {
  EXPECT_EQ(short_kernel_name(testing::kFlashKernel), "pytorch_flash::flash_fwd_kernel");
  EXPECT_EQ(short_kernel_name(testing::kSoftmaxKernel), "softmax_warp_forward");
  EXPECT_EQ(short_kernel_name(testing::kNvjetNT), "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_TNT");
  EXPECT_EQ(short_kernel_name("abcdefghij", 5), "abcd\u2026");
}

TEST(ShortKernelName, AnAnonymousNamespaceInsideTheScopeIsDropped) {
  // Our Hopper kernel's name as CUPTI reported it on the H200 (it used to shorten to "attnprof::cuda::hopper::").
  EXPECT_EQ(short_kernel_name("void attnprof::cuda::hopper::(anonymous namespace)::flash_forward_sm90_kernel<"
                              "attnprof::cuda::hopper::flash_sm90::FlashSm90Traits<64, 3>, __nv_bfloat16, true>"
                              "(CUtensorMap_st, CUtensorMap_st, CUtensorM"),
            "flash_forward_sm90_kernel");  // over 48 characters with its scope: the last scope
  EXPECT_EQ(short_kernel_name("void a::(anonymous namespace)::k<int>(int)"), "a::k");
}

}  // namespace
}  // namespace attnprof::report
