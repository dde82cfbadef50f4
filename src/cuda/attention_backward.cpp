#include "cuda/attention_backward.h"

#include <attnprof/error.h>
#include <fmt/format.h>

#include <initializer_list>
#include <vector>

#include "cuda/hopper/flash_bwd.h"
#include "cuda/tensor_layout.h"
#include "ops/fused_head_dim.h"

namespace attnprof::cuda {
namespace {

void copy_strides(std::int64_t (&dst)[3], const Tensor& t) {
  for (int d = 0; d < 3; ++d) dst[d] = t.stride(d);
}

FusedBackwardArgs fused_backward_args(const AttentionSpec& spec, Tensor& dq, Tensor& dk, Tensor& dv, const Tensor& q,
                                      const Tensor& k, const Tensor& v, const Tensor& out, const Tensor& lse,
                                      const Tensor& dout, Tensor& delta) {
  const std::initializer_list<const Tensor*> all{&dq, &dk, &dv, &q, &k, &v, &out, &dout};
  for (const Tensor* t : all)
    if (t->dtype() != spec.dtype || t->device() != Device::cuda)
      throw Error(fmt::format("fused backward: {} is not a {} device tensor", t->describe(), dtype_name(spec.dtype)));
  const std::vector<std::int64_t> q_shape{spec.batch, spec.heads, spec.seq_q, spec.head_dim};
  const std::vector<std::int64_t> kv_shape{spec.batch, spec.kv_heads, spec.seq_k, spec.head_dim};
  for (const Tensor* t : std::initializer_list<const Tensor*>{&dq, &q, &out, &dout})
    if (t->shape() != q_shape) throw Error(fmt::format("fused backward: {} is not [B, H, Sq, D]", t->describe()));
  for (const Tensor* t : std::initializer_list<const Tensor*>{&dk, &dv, &k, &v})
    if (t->shape() != kv_shape) throw Error(fmt::format("fused backward: {} is not [B, Hkv, Sk, D]", t->describe()));
  if (lse.device() != Device::cuda) throw Error("fused backward: lse must be a device tensor");
  FusedBackwardArgs a;
  Tensor lse_handle = lse;  // the forward's arguments take it writable; the backward only reads it
  a.fwd = fused_attention_args(spec, out, q, k, v, &lse_handle);
  check_fused_rows("fused backward", {&dq, &dk, &dv, &dout});  // cp.async and the Δ kernel move 16-byte chunks
  a.dout = dout.raw();
  a.delta = delta.data<float>();
  a.dq = dq.raw();
  a.dk = dk.raw();
  a.dv = dv.raw();
  copy_strides(a.do_stride, dout);
  copy_strides(a.dq_stride, dq);
  copy_strides(a.dk_stride, dk);
  copy_strides(a.dv_stride, dv);
  return a;
}

}  // namespace

void run_fused_backward(const AttentionSpec& spec, Tensor& dq, Tensor& dk, Tensor& dv, const Tensor& q, const Tensor& k,
                        const Tensor& v, const Tensor& out, const Tensor& lse, const Tensor& dout,
                        cudaStream_t stream, bool sm90) {
  if (auto why = ops::fused_backward_head_dim_refusal(spec.head_dim)) throw UsageError(*why);
  if (spec.dtype != DType::bf16 && spec.dtype != DType::fp16)
    throw UsageError(fmt::format("dtype {}: the GPU backward takes bf16 or fp16", dtype_name(spec.dtype)));
  Tensor delta = Tensor::empty({spec.batch, spec.heads, spec.seq_q}, DType::fp32, Device::cuda);
  Tensor dq_accum;
  if (sm90)
    dq_accum = Tensor::empty({hopper::flash_backward_sm90_accumulator_bytes(spec) / 4}, DType::fp32, Device::cuda);
  launch_fused_backward(fused_backward_args(spec, dq, dk, dv, q, k, v, out, lse, dout, delta), stream,
                        sm90 ? dq_accum.data<float>() : nullptr);
}

}  // namespace attnprof::cuda
