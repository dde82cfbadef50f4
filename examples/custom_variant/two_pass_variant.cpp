#include "two_pass_variant.h"

#include <attnprof/dtype.h>
#include <attnprof/profiler.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

namespace {

float load(const attnprof::Tensor& t, std::int64_t offset) {
  switch (t.dtype()) {
    case attnprof::DType::bf16: return attnprof::bf16_to_float(t.data<attnprof::bf16>()[offset]);
    case attnprof::DType::fp16: return attnprof::fp16_to_float(t.data<attnprof::fp16>()[offset]);
    default: return t.data<float>()[offset];
  }
}

void store(const attnprof::Tensor& t, std::int64_t offset, float value) {
  switch (t.dtype()) {
    case attnprof::DType::bf16: t.data<attnprof::bf16>()[offset] = attnprof::float_to_bf16(value); break;
    case attnprof::DType::fp16: t.data<attnprof::fp16>()[offset] = attnprof::float_to_fp16(value); break;
    default: t.data<float>()[offset] = value;
  }
}

std::int64_t at(const attnprof::Tensor& t, std::int64_t b, std::int64_t h, std::int64_t s, std::int64_t d) {
  return b * t.stride(0) + h * t.stride(1) + s * t.stride(2) + d * t.stride(3);
}

class TwoPassVariant final : public attnprof::Variant {
 public:
  std::string_view name() const override { return "two_pass"; }
  std::string_view summary() const override {
    return "example plug-in: per query row, one pass for max and sum, one for the weighted values";
  }
  std::optional<std::string> refusal(const attnprof::AttentionSpec& spec) const override {
    if (spec.device != attnprof::Device::cpu) return "runs on device cpu only";
    if (spec.head_dim > 512) return "head_dim above 512 is not supported; allowed: 1..512";
    return std::nullopt;
  }
  std::int64_t workspace_estimate(const attnprof::AttentionSpec& spec) const override {
    return spec.seq_k * static_cast<std::int64_t>(sizeof(float));  // one row of scores
  }
  void forward(const attnprof::AttentionSpec& spec, const attnprof::Tensor& q, const attnprof::Tensor& k,
               const attnprof::Tensor& v, attnprof::Tensor& out) override {
    attnprof::profiler::Range kernel(attnprof::trace::Category::cpu_kernel, "two_pass_attention");
    const std::int64_t group = spec.heads / spec.kv_heads;
    const float scale = static_cast<float>(spec.softmax_scale());
    attnprof::Tensor scores = attnprof::Tensor::empty({spec.seq_k}, attnprof::DType::fp32);
    float* row = scores.data<float>();
    std::vector<float> accumulator(static_cast<std::size_t>(spec.head_dim));
    for (std::int64_t b = 0; b < spec.batch; ++b) {
      for (std::int64_t h = 0; h < spec.heads; ++h) {
        const std::int64_t kv_head = h / group;
        for (std::int64_t i = 0; i < spec.seq_q; ++i) {
          // causal: keys 0..i + causal_offset() (0 top-left; Sk - Sq bottom-right, where rows can see none)
          const std::int64_t visible =
              spec.causal ? std::clamp<std::int64_t>(i + 1 + spec.causal_offset(), 0, spec.seq_k) : spec.seq_k;
          float row_max = -std::numeric_limits<float>::infinity();
          for (std::int64_t j = 0; j < visible; ++j) {  // pass 1: scores and their max
            float dot = 0;
            for (std::int64_t d = 0; d < spec.head_dim; ++d) {
              dot += load(q, at(q, b, h, i, d)) * load(k, at(k, b, kv_head, j, d));
            }
            row[j] = dot * scale;
            row_max = std::max(row_max, row[j]);
          }
          float row_sum = 0;
          std::fill(accumulator.begin(), accumulator.end(), 0.0f);
          for (std::int64_t j = 0; j < visible; ++j) {  // pass 2: weights and the weighted values
            float weight = std::exp(row[j] - row_max);
            row_sum += weight;
            for (std::int64_t d = 0; d < spec.head_dim; ++d) accumulator[d] += weight * load(v, at(v, b, kv_head, j, d));
          }
          for (std::int64_t d = 0; d < spec.head_dim; ++d) {
            store(out, at(out, b, h, i, d), visible > 0 ? accumulator[d] / row_sum : 0.0f);
          }
        }
      }
    }
  }
};

}  // namespace

std::unique_ptr<attnprof::Variant> make_two_pass_variant() { return std::make_unique<TwoPassVariant>(); }
