#include "cuda/attention_backward.h"

#include <attnprof/error.h>
#include <fmt/format.h>

#include <initializer_list>
#include <utility>
#include <vector>

#include "cuda/fused_padding.h"
#include "cuda/hopper/flash_bwd.h"
#include "cuda/kernels.h"
#include "cuda/problem_text.h"
#include "cuda/tensor_layout.h"
#include "ops/fused_head_dim.h"

namespace attnprof::cuda {
namespace {

void copy_strides(std::int64_t (&dst)[3], const Tensor& t) {
  for (int d = 0; d < 3; ++d) dst[d] = t.stride(d);
}

// Every tensor a `spec.dtype` device tensor of the spec's shape, the LSE on the device.
void check_tensors(const AttentionSpec& spec, const Tensor& dq, const Tensor& dk, const Tensor& dv, const Tensor& q,
                   const Tensor& k, const Tensor& v, const Tensor& out, const Tensor& lse, const Tensor& dout) {
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
}

FusedBackwardArgs fused_backward_args(const AttentionSpec& spec, Tensor& dq, Tensor& dk, Tensor& dv, const Tensor& q,
                                      const Tensor& k, const Tensor& v, const Tensor& out, const Tensor& lse,
                                      const Tensor& dout, Tensor& delta) {
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

// The kernels on tensors (checked by check_tensors) whose head dim is a multiple of 8;
// `softmax_scale` the problem's (a padded spec's own would be that of the padded head dim).
void run_kernels(const AttentionSpec& spec, Tensor& dq, Tensor& dk, Tensor& dv, const Tensor& q, const Tensor& k,
                 const Tensor& v, const Tensor& out, const Tensor& lse, const Tensor& dout, float softmax_scale,
                 cudaStream_t stream, bool sm90) {
  Tensor delta = Tensor::empty({spec.batch, spec.heads, spec.seq_q}, DType::fp32, Device::cuda);
  Tensor dq_accum;
  if (sm90)
    dq_accum = Tensor::empty({hopper::flash_backward_sm90_accumulator_bytes(spec) / 4}, DType::fp32, Device::cuda);
  FusedBackwardArgs args = fused_backward_args(spec, dq, dk, dv, q, k, v, out, lse, dout, delta);
  args.fwd.softmax_scale = softmax_scale;
  launch_fused_backward(args, stream, sm90 ? dq_accum.data<float>() : nullptr);
}

}  // namespace

void run_fused_backward(const AttentionSpec& spec, Tensor& dq, Tensor& dk, Tensor& dv, const Tensor& q, const Tensor& k,
                        const Tensor& v, const Tensor& out, const Tensor& lse, const Tensor& dout,
                        cudaStream_t stream, bool sm90) {
  const auto route = ops::fused_head_dim_route(spec.head_dim);
  if (!route) throw UsageError(*ops::fused_head_dim_refusal(spec.head_dim));
  if (spec.dtype != DType::bf16 && spec.dtype != DType::fp16)
    throw UsageError(fmt::format("dtype {}: the GPU backward takes bf16 or fp16", dtype_name(spec.dtype)));
  check_tensors(spec, dq, dk, dv, q, k, v, out, lse, dout);  // the caller's, before any copy
  const auto scale = static_cast<float>(softmax_scale_of(spec));
  if (!route->padded_copy()) return run_kernels(spec, dq, dk, dv, q, k, v, out, lse, dout, scale, stream, sm90);
  AttentionSpec padded_spec = spec;
  padded_spec.head_dim = route->padded_dim;
  const std::int64_t d8 = route->padded_dim;
  const Tensor q_padded = padded_copy(q, d8, stream), k_padded = padded_copy(k, d8, stream);
  const Tensor v_padded = padded_copy(v, d8, stream), out_padded = padded_copy(out, d8, stream);
  const Tensor dout_padded = padded_copy(dout, d8, stream);
  Tensor dq_padded = Tensor::empty({spec.batch, spec.heads, spec.seq_q, d8}, spec.dtype, Device::cuda);
  Tensor dk_padded = Tensor::empty({spec.batch, spec.kv_heads, spec.seq_k, d8}, spec.dtype, Device::cuda);
  Tensor dv_padded = Tensor::empty({spec.batch, spec.kv_heads, spec.seq_k, d8}, spec.dtype, Device::cuda);
  run_kernels(padded_spec, dq_padded, dk_padded, dv_padded, q_padded, k_padded, v_padded, out_padded, lse, dout_padded,
              scale, stream, sm90);
  for (auto [grad, padded] : {std::pair{&dq, &dq_padded}, std::pair{&dk, &dk_padded}, std::pair{&dv, &dv_padded}})
    launch_convert(make_arg(*grad), make_arg(columns(*padded, 0, spec.head_dim)), stream);
}

}  // namespace attnprof::cuda
