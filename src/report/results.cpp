#include "report/results.h"

#include <attnprof/dtype.h>

#include <fmt/format.h>

#include <filesystem>

#include "core/atomic_file.h"
#include "report/result_keys.h"
#include "core/json_dump.h"
#include "report/roofline.h"
#include "report/step_timeline.h"

namespace attnprof::report {

std::string shape_text(const AttentionSpec& s) {
  std::string text = fmt::format("B={} H={} S={} D={}", s.batch, s.heads, s.seq_q, s.head_dim);
  if (s.kv_heads != s.heads) text += fmt::format(" Hkv={}", s.kv_heads);
  if (s.seq_k != s.seq_q) text += fmt::format(" Sk={}", s.seq_k);
  const std::string mask = !s.causal ? "not causal"
                           : s.causal_align == CausalAlign::top_left
                               ? "causal"
                               : fmt::format("causal {}", causal_align_name(s.causal_align));
  return text + fmt::format(", {}, {}", dtype_name(s.dtype), mask);
}

nlohmann::json spec_json(const AttentionSpec& s) {
  return {{"batch", s.batch},           {"heads", s.heads},
          {"kv_heads", s.kv_heads},     {"seq_q", s.seq_q},
          {"seq_k", s.seq_k},           {"head_dim", s.head_dim},
          {"dtype", std::string(dtype_name(s.dtype))}, {"causal", s.causal},
          {"causal_align", std::string(causal_align_name(s.causal_align))},
          {"layout", std::string(layout_name(s.layout))}, {"device", std::string(device_name(s.device))}};
}

AttentionSpec spec_from_json(const nlohmann::json& j) {
  AttentionSpec s;
  s.batch = j.value("batch", s.batch);
  s.heads = j.value("heads", s.heads);
  s.kv_heads = j.value("kv_heads", s.heads);
  s.seq_q = j.value("seq_q", s.seq_q);
  s.seq_k = j.value("seq_k", s.seq_q);
  s.head_dim = j.value("head_dim", s.head_dim);
  s.dtype = parse_dtype(j.value("dtype", std::string("bf16")));
  s.causal = j.value("causal", true);
  s.causal_align = parse_causal_align(j.value("causal_align", std::string("top-left")));
  s.layout = parse_layout(j.value("layout", std::string("bhsd")));
  s.device = parse_device(j.value("device", std::string("cpu")));
  return s;
}

nlohmann::json compare_json(const std::vector<GlanceRow>& rows, const std::vector<RunResult>& results,
                            const Ceilings& ceilings) {
  nlohmann::json out = glance_json(rows);
  out["kind"] = "attnprof.compare";
  out["version"] = 1;
  out["ceilings"] = ceilings_json(ceilings);
  out["device"] = std::string(device_name(ceilings.device));
  for (std::size_t i = 0; i < rows.size(); ++i) {
    nlohmann::json& row = out["rows"][i];
    row["timeline"] = nullptr;
    for (const RunResult& r : results) {
      if (r.variant != rows[i].variant) continue;
      row["spec"] = spec_json(r.spec);
      put_spec_keys(row, r.spec);
      row["pass"] = std::string(pass_name(r.pass));
      row["flops"] = flops_json(r.flops);
      if (!out.contains("shape")) out["shape"] = shape_text(r.spec);
      if (r.trace) row["timeline"] = step_timeline_json(extract_step_timeline(*r.trace));
      row["roofline"] = roofline_json(
          roofline_point(r.variant, r.spec, r.kernels_per_forward, r.memcpy_per_forward, r.tflops, ceilings));
    }
  }
  return out;
}

void write_compare_json(const std::string& path, const std::vector<GlanceRow>& rows, const std::vector<RunResult>& results,
                        const Ceilings& ceilings, std::string_view parameter) {
  const std::string dir = std::filesystem::path(path).parent_path().string();
  ensure_writable_directory(dir.empty() ? std::string(".") : dir, parameter);
  write_file_atomically(path, dump_json(compare_json(rows, results, ceilings), 1) + "\n", parameter);
}

}  // namespace attnprof::report
