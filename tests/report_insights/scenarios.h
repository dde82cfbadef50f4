#pragma once
// Forwards shaped like the anchors' PyTorch traces (naive, math, flash on the GPU) and like
// attnprof's CPU traces, built by hand. Device work lands after the forward's CPU range ends,
// as in real traces, so attribution must go through the launch's correlation id.
#include "report_insights/synthetic_trace.h"

namespace attnprof::testing {

inline const char* kNvjetNT = "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_TNT";
inline const char* kNvjetNN = "nvjet_sm90_tst_64x512_64x2_1x2_h_bz_coopB_NNT";
inline const char* kMulKernel =
    "void at::native::vectorized_elementwise_kernel<8, at::native::AUnaryFunctor<c10::BFloat16, c10::BFloat16, "
    "c10::BFloat16, at::native::binary_internal::MulFunctor<float> >, std::array<char*, 2ul> >(int, "
    "at::native::AUnaryFunctor<c10::BFloat16, c10::BFloat16, c10::BFloat16, "
    "at::native::binary_internal::MulFunctor<float> >, std::array<char*, 2ul>)";
inline const char* kMaskedFillKernel =
    "void at::native::elementwise_kernel<128, 4, at::native::gpu_kernel_impl_nocast<at::native::(anonymous "
    "namespace)::masked_fill_kernel(at::TensorIterator&, c10::Scalar const&)::{lambda()#1}::operator()() "
    "const::{lambda()#12}::operator()() const::{lambda(c10::BFloat16, bool)#1}>(at::TensorIteratorBase&, "
    "at::native::(anonymous namespace)::masked_fill_kernel(at::TensorIterator&, c10::Scalar const&)::{lambda()#1})";
inline const char* kSoftmaxKernel =
    "void (anonymous namespace)::softmax_warp_forward<c10::BFloat16, c10::BFloat16, float, 10, false, "
    "false>(c10::BFloat16*, c10::BFloat16 const*, int, int, int, bool const*, int, bool)";
inline const char* kFfmaNT =
    "sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize128x128x8_stage3_warpsize2x2x1_ffma_aligna4_alignc4_execute_"
    "kernel__5x_cublas";
inline const char* kFfmaNN =
    "sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize64x64x8_stage3_warpsize1x4x1_ffma_aligna4_alignc4_execute_"
    "kernel__5x_cublas";
inline const char* kCopyKernel =
    "void at::native::unrolled_elementwise_kernel<at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{"
    "lambda()#3}::operator()() const::{lambda()#7}::operator()() const::{lambda(float)#1}, std::array<char*, 2ul>, 4>";
inline const char* kFillBool =
    "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<bool>, std::array<char*, 1ul> >(int, "
    "at::native::FillFunctor<bool>, std::array<char*, 1ul>)";
inline const char* kFillFloat =
    "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, std::array<char*, 1ul> >(int, "
    "at::native::FillFunctor<float>, std::array<char*, 1ul>)";
inline const char* kTrilKernel =
    "void at::native::triu_tril_kernel<bool, int, false, 8, false>(at::cuda::detail::TensorInfo<bool, int>, "
    "at::cuda::detail::TensorInfo<bool const, int>, long, long, int)";
inline const char* kWhereKernel =
    "void at::native::elementwise_kernel<128, 2, at::native::gpu_kernel_impl_nocast<at::native::(anonymous "
    "namespace)::where_kernel_impl(at::TensorIterator&)::{lambda()#1}::operator()() const::{lambda()#11}::operator()() "
    "const::{lambda(bool, float, float)#1}>(at::TensorIteratorBase&)>(int)";
inline const char* kAddKernel =
    "void at::native::elementwise_kernel<128, 2, at::native::gpu_kernel_impl_nocast<at::native::CUDAFunctor_add<float> "
    ">(at::TensorIteratorBase&, at::native::CUDAFunctor_add<float> const&)::{lambda(int)#1}>(int)";
inline const char* kIsneginfKernel =
    "void at::native::vectorized_elementwise_kernel<4, at::native::(anonymous "
    "namespace)::isneginf_kernel_impl(at::TensorIteratorBase&)::{lambda()#1}::operator()() const::{lambda()#2}::operator()"
    "() const::{lambda(float)#1}, std::array<char*, 2ul> >(int)";
inline const char* kAllKernel =
    "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<bool, at::native::func_wrapper_t<bool, "
    "at::native::and_kernel_cuda(at::TensorIterator&)::{lambda()#1}::operator()() const::{lambda()#12}::operator()() "
    "const::{lambda(bool, bool)#1}>, unsigned int, bool, 4, 4> >(at::native::ReduceOp<bool>)";
inline const char* kFlashKernel =
    "void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<64, 128, 128, 4, false, false, cutlass::bfloat16_t, "
    "Flash_kernel_traits<64, 128, 128, 4, cutlass::bfloat16_t> >, false, true, false, false, true, true, false, "
    "false>(pytorch_flash::Flash_fwd_params)";
inline const char* kCudnnKernel =
    "cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7_64x128x64_4x1x1_cga1x1x1_kernel0_0";

struct GpuNaiveOptions {
  bool out_of_place = true;       // masked_fill (copy + fill) or masked_fill_
  bool tensor_core_gemms = true;  // nvjet or sm80_xmma…ffma
};

// naive / inplace on the GPU: bmm, mul, masked_fill, softmax, bmm; the mask exists already.
inline void gpu_naive_forward(TraceBuilder& b, std::int64_t t0, GpuNaiveOptions options = {}) {
  using trace::Category;
  const char* gemm1 = options.tensor_core_gemms ? kNvjetNT : kFfmaNT;
  const char* gemm2 = options.tensor_core_gemms ? kNvjetNN : kFfmaNN;
  b.forward(t0, 1000);
  b.op("aten::bmm", t0 + 10, 90);
  b.gpu(Category::gpu_memset, "Memset (Device)", t0 + 20, t0 + 2000, 1, "cudaMemsetAsync");
  b.kernel(gemm1, t0 + 30, t0 + 2001, 85, "cuLaunchKernelEx", Category::cuda_driver).launch = footprint(168, 384, 213188, 0);
  b.op("aten::mul", t0 + 110, 40);
  b.kernel(kMulKernel, t0 + 120, t0 + 2100, 128).launch = footprint(32, 128, 0, 100);
  std::int64_t fill_launch = t0 + 170;
  if (options.out_of_place) {
    b.op("aten::masked_fill", t0 + 160, 140);
    b.op("aten::clone", t0 + 170, 80);
    b.op("aten::copy_", t0 + 180, 60);
    b.gpu(Category::gpu_memcpy, "Memcpy DtoD (Device -> Device)", t0 + 190, t0 + 2230, 127, "cudaMemcpyAsync").bytes =
        268435456;
    b.op("aten::masked_fill_", t0 + 260, 30);
    fill_launch = t0 + 270;
  } else {
    b.op("aten::masked_fill_", t0 + 160, 30);
  }
  b.kernel(kMaskedFillKernel, fill_launch, t0 + 2360, 367).launch = footprint(18, 128, 0, 100);
  b.op("aten::softmax", t0 + 310, 40);
  b.op("aten::_softmax", t0 + 315, 30);
  b.kernel(kSoftmaxKernel, t0 + 320, t0 + 2730, 284).launch = footprint(48, 128, 0, 63);
  b.op("aten::bmm", t0 + 400, 60);
  b.kernel(gemm2, t0 + 410, t0 + 3020, 84, "cuLaunchKernelEx", Category::cuda_driver).launch = footprint(168, 384, 163972, 0);
}

struct GpuMathOptions {
  bool rebuild_mask = true;  // ones + tril inside the forward
  bool safe_softmax = true;  // isneginf, all, where after the softmax
  bool ffma_gemms = true;
};

// math on the GPU: upcast, scale, mask built, fp32 GEMMs, additive mask, NaN-safe softmax, downcast.
inline void gpu_math_forward(TraceBuilder& b, std::int64_t t0, GpuMathOptions options = {}) {
  const std::int64_t d = t0 + 5000;  // device lane
  b.forward(t0, 3000);
  b.op("aten::scaled_dot_product_attention", t0 + 5, 2990);
  b.op("aten::_scaled_dot_product_attention_math", t0 + 10, 2980);
  b.op("aten::to", t0 + 20, 40);
  b.op("aten::_to_copy", t0 + 22, 36);
  b.op("aten::copy_", t0 + 25, 30);
  b.kernel(kCopyKernel, t0 + 30, d, 100);
  b.op("aten::mul", t0 + 70, 20);
  b.kernel(kMulKernel, t0 + 75, d + 110, 50);
  if (options.rebuild_mask) {
    b.op("aten::ones", t0 + 100, 40);
    b.op("aten::fill_", t0 + 110, 20);
    b.kernel(kFillBool, t0 + 115, d + 170, 5);
    b.op("aten::tril", t0 + 150, 20);
    b.kernel(kTrilKernel, t0 + 155, d + 180, 6);
  }
  b.op("aten::where", t0 + 180, 30);
  b.kernel(kWhereKernel, t0 + 185, d + 190, 140);
  b.op("aten::bmm", t0 + 220, 40);
  b.kernel(options.ffma_gemms ? kFfmaNT : kNvjetNT, t0 + 225, d + 340, 538, "cudaLaunchKernelExC")
      .launch = footprint(255, 128, 33280);
  b.op("aten::add_", t0 + 270, 20);
  b.kernel(kAddKernel, t0 + 275, d + 900, 400);
  b.op("aten::_safe_softmax", t0 + 300, 200);
  b.op("aten::softmax", t0 + 305, 30);
  b.op("aten::_softmax", t0 + 308, 25);
  b.kernel(kSoftmaxKernel, t0 + 310, d + 1310, 280);
  if (options.safe_softmax) {
    b.op("aten::isneginf", t0 + 340, 20);
    b.kernel(kIsneginfKernel, t0 + 345, d + 1600, 157);
    b.op("aten::all", t0 + 370, 20);
    b.kernel(kAllKernel, t0 + 375, d + 1760, 96);
    b.op("aten::where", t0 + 430, 30);
    b.kernel(kWhereKernel, t0 + 435, d + 1860, 140);
  }
  b.op("aten::to", t0 + 520, 40);
  b.op("aten::_to_copy", t0 + 522, 36);
  b.op("aten::copy_", t0 + 525, 30);
  b.kernel(kCopyKernel, t0 + 530, d + 2010, 100);
  b.op("aten::bmm", t0 + 600, 40);
  b.kernel(options.ffma_gemms ? kFfmaNN : kNvjetNN, t0 + 605, d + 2120, 417, "cudaLaunchKernelExC");
}

// flash on the GPU: one kernel, 255 registers × 128 threads, 48 KiB shared.
inline void gpu_flash_forward(TraceBuilder& b, std::int64_t t0, std::int64_t regs = 255, std::int64_t shared = 49152) {
  b.forward(t0, 214);
  b.op("aten::scaled_dot_product_attention", t0 + 10, 130);
  b.op("aten::_flash_attention_forward", t0 + 40, 80);
  b.kernel(kFlashKernel, t0 + 100, t0 + 150, 94).launch = footprint(regs, 128, shared, 13);
}

// cudnn on the GPU: a 4-byte memset, then one kernel launched through the driver API.
inline void gpu_cudnn_forward(TraceBuilder& b, std::int64_t t0, bool driver_api = true) {
  using trace::Category;
  b.forward(t0, 200);
  b.op("aten::_scaled_dot_product_cudnn_attention", t0 + 10, 150);
  b.gpu(Category::gpu_memset, "Memset (Device)", t0 + 20, t0 + 300, 1, "cudaMemsetAsync");
  auto& k = driver_api ? b.kernel(kCudnnKernel, t0 + 40, t0 + 310, 98, "cuLaunchKernelEx", Category::cuda_driver)
                       : b.kernel(kCudnnKernel, t0 + 40, t0 + 310, 98, "cudaLaunchKernelExC");
  k.launch = footprint(168, 128, 82944, 0);
}

// naive on the CPU (attnprof's own trace): each op's compute is a cpu_kernel inside the op.
inline void cpu_naive_forward(TraceBuilder& b, std::int64_t t0, bool out_of_place = true) {
  b.forward(t0, 1000);
  b.op("aten::matmul", t0 + 10, 100);
  b.cpu_kernel("gemm", t0 + 20, 80);
  b.op("aten::mul", t0 + 120, 50);
  b.cpu_kernel("mul", t0 + 125, 40);
  if (out_of_place) {
    b.op("aten::masked_fill", t0 + 180, 150);
    b.cpu_kernel("copy", t0 + 185, 60);
    b.cpu_kernel("masked_fill", t0 + 250, 70);
  } else {
    b.op("aten::masked_fill_", t0 + 180, 150);
    b.cpu_kernel("masked_fill", t0 + 250, 70);
  }
  b.op("aten::softmax", t0 + 340, 100);
  b.cpu_kernel("softmax", t0 + 345, 90);
  b.op("aten::matmul", t0 + 450, 100);
  b.cpu_kernel("gemm", t0 + 455, 90);
}

// math on the CPU: to, mul, ones/tril/logical_not (mask), gemm, add, safe softmax, to, gemm.
inline void cpu_math_forward(TraceBuilder& b, std::int64_t t0, bool rebuild_mask = true) {
  b.forward(t0, 2000);
  std::int64_t t = t0 + 10;
  auto op = [&](const char* op_name, std::initializer_list<const char*> kernels) {
    b.op(op_name, t, 20 * static_cast<std::int64_t>(kernels.size()) + 10);
    std::int64_t k = t + 5;
    for (const char* kernel : kernels) {
      b.cpu_kernel(kernel, k, 15);
      k += 20;
    }
    t += 20 * static_cast<std::int64_t>(kernels.size()) + 20;
  };
  op("aten::to", {"copy"});
  op("aten::to", {"copy"});
  op("aten::to", {"copy"});
  op("aten::mul_", {"mul"});
  op("aten::mul_", {"mul"});
  if (rebuild_mask) {
    op("aten::ones", {"fill"});
    op("aten::tril", {"tril"});
    op("aten::logical_not", {"logical_not"});
  }
  op("aten::zeros_like", {"fill"});
  op("aten::masked_fill_", {"masked_fill"});
  op("aten::matmul", {"gemm"});
  op("aten::add_", {"add"});
  op("aten::_safe_softmax", {"softmax", "isneginf", "all", "where"});
  op("aten::matmul", {"gemm"});
  op("aten::to", {"copy"});
}

}  // namespace attnprof::testing
