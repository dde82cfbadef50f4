#include "cuda/fused_padding.h"

#include <attnprof/error.h>

#include "core/saturating.h"
#include "cuda/kernels.h"
#include "cuda/problem_text.h"
#include "ops/fused_head_dim.h"

namespace attnprof::cuda {

Tensor columns(const Tensor& padded, std::int64_t first, std::int64_t count) {
  return padded.view_strided({padded.size(0), padded.size(1), padded.size(2), count},
                             {padded.stride(0), padded.stride(1), padded.stride(2), 1}, first);
}

Tensor padded_copy(const Tensor& src, std::int64_t padded_dim, cudaStream_t stream) {
  const std::int64_t d = src.size(3);
  Tensor padded = Tensor::empty({src.size(0), src.size(1), src.size(2), padded_dim}, src.dtype(), Device::cuda);
  launch_fill(make_arg(columns(padded, d, padded_dim - d)), 0.0, stream);
  launch_convert(make_arg(columns(padded, 0, d)), make_arg(src), stream);
  return padded;
}

void run_fused_attention(const AttentionSpec& spec, Tensor& out, const Tensor& q, const Tensor& k, const Tensor& v,
                         Tensor* lse, FusedLaunch launch, cudaStream_t stream) {
  const auto route = ops::fused_head_dim_route(spec.head_dim);
  if (!route) throw UsageError(*ops::fused_head_dim_refusal(spec.head_dim));
  if (!route->padded_copy()) {
    launch(fused_attention_args(spec, out, q, k, v, lse), stream);
    return;
  }
  AttentionSpec padded_spec = spec;
  padded_spec.head_dim = route->padded_dim;
  const Tensor q_padded = padded_copy(q, route->padded_dim, stream);
  const Tensor k_padded = padded_copy(k, route->padded_dim, stream);
  const Tensor v_padded = padded_copy(v, route->padded_dim, stream);
  const Tensor out_padded = Tensor::empty({spec.batch, spec.heads, spec.seq_q, route->padded_dim}, spec.dtype, Device::cuda);
  FusedAttentionArgs args = fused_attention_args(padded_spec, out_padded, q_padded, k_padded, v_padded, lse);
  args.softmax_scale = static_cast<float>(softmax_scale_of(spec));  // the real head dim's, not the padded one's
  launch(args, stream);
  launch_convert(make_arg(out), make_arg(columns(out_padded, 0, spec.head_dim)), stream);
}

std::int64_t padded_copy_bytes(const AttentionSpec& spec) {
  const auto route = ops::fused_head_dim_route(spec.head_dim);
  if (!route || !route->padded_copy()) return 0;
  const std::int64_t rows = sat_add(sat_product({2, spec.batch, spec.heads, spec.seq_q}),   // q and out
                                    sat_product({2, spec.batch, spec.kv_heads, spec.seq_k}));  // k and v
  return sat_product({rows, route->padded_dim, static_cast<std::int64_t>(dtype_size(spec.dtype))});
}

std::int64_t padded_backward_copy_bytes(const AttentionSpec& spec) {
  return sat_product({2, padded_copy_bytes(spec)});  // q, out, dout, dq and k, v, dk, dv: twice the forward's
}

}  // namespace attnprof::cuda
