#include "report/ceilings.h"

#include <attnprof/error.h>

#include <fmt/format.h>

#include <algorithm>
#include <string>

#include "report/insights.h"

namespace attnprof::report {

double Ceilings::peak_tflops(DType dtype) const {
  const bool low_precision = dtype == DType::bf16 || dtype == DType::fp16;
  return low_precision && matmul_bf16_tflops > 0 ? matmul_bf16_tflops : matmul_tflops;
}

namespace {

// "4.2 GB/s (4.0–4.4 over 5 runs; memcpy ...)": the median, then the runs' range in the same
// unit. `scale` and `unit` turn the stored value into the printed one.
std::string with_spread(double value, const CeilingSpread& s, const std::string& what, double scale,
                        const char* unit) {
  const std::string range =
      s.samples > 0 ? fmt::format("{:.1f}\u2013{:.1f} over {} runs; ", s.min * scale, s.max * scale, s.samples) : "";
  return fmt::format("{:.1f} {} ({}{})", value * scale, unit, range, what);
}

// Matmul rates in TFLOP/s, the one unit of every rate attnprof prints (tflops_number's digits).
std::string matmul_text(double tflops, const CeilingSpread& s, const std::string& what) {
  const std::string range = s.samples > 0 ? fmt::format("{}\u2013{} over {} runs; ", tflops_number(s.min),
                                                        tflops_number(s.max), s.samples)
                                          : "";
  return fmt::format("{} ({}{})", format_tflops(tflops), range, what);
}

}  // namespace

std::string ceilings_text(const Ceilings& c) {
  if (!c.measured()) return fmt::format("{}: ceilings {}", c.device_name, c.matmul_what);
  const std::string bf16 =
      c.matmul_bf16_tflops > 0 ? "; bf16 matmul " + matmul_text(c.matmul_bf16_tflops, c.matmul_bf16_spread, c.matmul_bf16_what)
                               : std::string();
  const std::string when = c.measured_at.empty() ? std::string() : "; measured " + c.measured_at;
  return fmt::format("{}: fp32 matmul {}{}; copy {}; ridge at {:.1f} FLOP/byte{}", c.device_name,
                     matmul_text(c.matmul_tflops, c.matmul_spread, c.matmul_what), bf16,
                     with_spread(c.copy_gbps, c.copy_spread, c.copy_what, 1, "GB/s"), c.ridge_flops_per_byte(), when);
}

std::string above_ceiling_note(const Ceilings& c, DType dtype, double tflops) {
  const double peak = c.peak_tflops(dtype);
  const bool bf16 = (dtype == DType::bf16 || dtype == DType::fp16) && c.matmul_bf16_tflops > 0;  // as peak_tflops
  const CeilingSpread& spread = bf16 ? c.matmul_bf16_spread : c.matmul_spread;
  const double top = spread.samples > 0 ? std::max(peak, spread.max) : peak;
  if (peak <= 0 || !(tflops > top)) return std::string();
  const std::string from = c.cache_path.empty() ? std::string("measured") : "cached in " + c.cache_path;
  const std::string when = c.measured_at.empty() ? std::string() : " on " + c.measured_at;
  return fmt::format("%peak above 100%: faster than the {} matmul ceiling {}, {}{}; that ceiling was measured too low "
                     "(under load?); `attnprof devices --remeasure` measures it again",
                     bf16 ? "bf16" : "fp32",
                     matmul_text(peak, spread, bf16 ? c.matmul_bf16_what : c.matmul_what), from, when);
}

nlohmann::json ceilings_json(const Ceilings& c) {
  auto spread = [](const CeilingSpread& s) { return nlohmann::json{{"min", s.min}, {"max", s.max}, {"samples", s.samples}}; };
  return {{"device", std::string(device_name(c.device))},
          {"device_name", c.device_name},
          {"model", c.model},
          {"threads", c.threads},
          {"measured_at", c.measured_at},
          {"matmul_tflops", c.matmul_tflops},
          {"matmul_spread", spread(c.matmul_spread)},
          {"matmul_what", c.matmul_what},
          {"matmul_bf16_tflops", c.matmul_bf16_tflops},
          {"matmul_bf16_spread", spread(c.matmul_bf16_spread)},
          {"matmul_bf16_what", c.matmul_bf16_what},
          {"copy_gbps", c.copy_gbps},
          {"copy_spread", spread(c.copy_spread)},
          {"copy_what", c.copy_what},
          {"seconds_spent", c.seconds_spent}};
}

Ceilings ceilings_from_json(const nlohmann::json& j) {
  auto spread = [&](const char* key) {
    CeilingSpread s;
    if (j.contains(key) && j[key].is_object()) {
      s.min = j[key].value("min", 0.0);
      s.max = j[key].value("max", 0.0);
      s.samples = j[key].value("samples", 0);
    }
    return s;
  };
  Ceilings c;
  c.device = parse_device(j.value("device", std::string("cpu")));
  c.device_name = j.value("device_name", std::string());
  c.model = j.value("model", std::string());
  c.threads = j.value("threads", 0);
  c.measured_at = j.value("measured_at", std::string());
  c.matmul_tflops = j.value("matmul_tflops", 0.0);
  c.matmul_spread = spread("matmul_spread");
  c.matmul_what = j.value("matmul_what", std::string());
  c.matmul_bf16_tflops = j.value("matmul_bf16_tflops", 0.0);
  c.matmul_bf16_spread = spread("matmul_bf16_spread");
  c.matmul_bf16_what = j.value("matmul_bf16_what", std::string());
  c.copy_gbps = j.value("copy_gbps", 0.0);
  c.copy_spread = spread("copy_spread");
  c.copy_what = j.value("copy_what", std::string());
  c.seconds_spent = j.value("seconds_spent", 0.0);
  return c;
}

}  // namespace attnprof::report
