#include <attnprof/compare.h>
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "run/preflight.h"
#include "run/run_json.h"

namespace attnprof {
namespace {

std::string render_text(const std::vector<CompareRow>& rows) {
  std::string text = fmt::format("{:<10} {:>11} {:>10} {:>10} {:>9} {:>12} {:>10}  {}\n", "variant", "work/fwd",
                                 "time/fwd", "CPU/fwd", "GFLOP/s", "peak extra", "err fp64", "");
  for (const CompareRow& row : rows) {
    if (!row.result) {
      text += fmt::format("{:<10} refused: {}\n", row.variant, row.refusal);
      continue;
    }
    const RunResult& r = *row.result;
    std::string work = fmt::format("{:g}k {:g}c", r.kernels_per_forward, r.memcpy_per_forward);
    text += fmt::format("{:<10} {:>11} {:>8.3f}ms {:>8.3f}ms {:>9.1f} {:>12} {:>10.2e}  {}\n", r.variant, work,
                        r.median_ns / 1e6, r.cpu_ns / 1e6, r.median_ns > 0 ? r.flops / r.median_ns : 0.0,
                        format_bytes(r.peak_extra_bytes), r.rel_err, r.summary);
  }
  return text;
}

std::string render_json(const std::vector<CompareRow>& rows) {
  nlohmann::json out;
  out["rows"] = nlohmann::json::array();
  for (const CompareRow& row : rows) {
    if (row.result) {
      out["rows"].push_back(run_result_json(*row.result));
    } else {
      out["rows"].push_back({{"variant", row.variant}, {"refused", row.refusal}});
    }
  }
  return out.dump(2) + "\n";
}

}  // namespace

std::string render_compare(const std::vector<CompareRow>& rows, CompareFormat format) {
  return format == CompareFormat::json ? render_json(rows) : render_text(rows);
}

}  // namespace attnprof
