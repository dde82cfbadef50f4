#include "report/roofline.h"

#include <attnprof/dtype.h>

#include <algorithm>

namespace attnprof::report {

double attention_flops(const AttentionSpec& s) { return s.flops(); }

double attention_io_bytes(const AttentionSpec& s) {
  const double element = static_cast<double>(dtype_size(s.dtype));
  const double q_or_out = static_cast<double>(s.batch) * static_cast<double>(s.heads) * static_cast<double>(s.seq_q) *
                          static_cast<double>(s.head_dim);
  const double k_or_v = static_cast<double>(s.batch) * static_cast<double>(s.kv_heads) * static_cast<double>(s.seq_k) *
                        static_cast<double>(s.head_dim);
  return (2 * q_or_out + 2 * k_or_v) * element;
}

double score_matrix_bytes(const AttentionSpec& s) {
  return static_cast<double>(s.batch) * static_cast<double>(s.heads) * static_cast<double>(s.seq_q) *
         static_cast<double>(s.seq_k) * static_cast<double>(dtype_size(s.dtype));
}

double minimal_bytes(const AttentionSpec& spec, double kernels, double memcpys) {
  const double io = attention_io_bytes(spec);
  if (kernels <= 1 && memcpys <= 0) return io;
  const double between = std::max(kernels - 2.0, 0.0) + std::max(memcpys, 0.0);
  return io + score_matrix_bytes(spec) * (2.0 + 2.0 * between);
}

RooflinePoint roofline_point(const std::string& variant, const AttentionSpec& spec, double kernels, double memcpys,
                             double tflops, const Ceilings& ceilings) {
  RooflinePoint p;
  p.variant = variant;
  p.spec = spec;
  p.flops = attention_flops(spec);
  p.bytes = minimal_bytes(spec, kernels, memcpys);
  p.intensity = p.bytes > 0 ? p.flops / p.bytes : 0;
  p.tflops = tflops;
  if (ceilings.measured()) {
    const double peak = ceilings.peak_tflops(spec.dtype);
    const double bandwidth_roof = ceilings.copy_gbps * 1e9 * p.intensity / 1e12;
    p.roof_tflops = std::min(peak, bandwidth_roof);
    p.memory_bound = bandwidth_roof < peak;
    p.pct_of_roof = p.roof_tflops > 0 ? 100.0 * tflops / p.roof_tflops : 0;
  }
  return p;
}

nlohmann::json roofline_json(const RooflinePoint& p) {
  return {{"variant", p.variant},         {"seq", p.spec.seq_q},           {"head_dim", p.spec.head_dim},
          {"flops", p.flops},             {"bytes", p.bytes},              {"intensity", p.intensity},
          {"tflops", p.tflops},           {"roof_tflops", p.roof_tflops},  {"memory_bound", p.memory_bound},
          {"pct_of_roof", p.pct_of_roof}};
}

}  // namespace attnprof::report
