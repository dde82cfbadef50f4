#include "report/sweep.h"

#include <attnprof/dtype.h>
#include <attnprof/error.h>

#include <fmt/format.h>

#include <cmath>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>

#include "core/atomic_file.h"
#include "core/json_dump.h"
#include "core/utf8.h"
#include "report/insights.h"
#include "report/result_keys.h"
#include "report/roofline.h"
#include "report/time_stats_text.h"

namespace attnprof::report {

std::vector<std::int64_t> parse_int_list(std::string_view text, std::string_view parameter) {
  const std::size_t max_values = kMaxSweepPoints;
  std::vector<std::string> tokens;
  std::size_t start = 0;
  while (true) {
    std::size_t comma = text.find(',', start);
    std::string token(text.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start));
    while (!token.empty() && token.front() == ' ') token.erase(token.begin());
    while (!token.empty() && token.back() == ' ') token.pop_back();
    tokens.push_back(token);
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  const char* example = parameter == "seq_q" || parameter == "seq_k" ? "512,1024,...,16384" : "64,128";
  auto bad = [&](const std::string& why) {
    return UsageError(fmt::format("{}: {} in '{}'; allowed: positive integers in increasing order, comma-separated, "
                                  "'...' continuing a doubling (e.g. {})",
                                  parameter, why, text, example));
  };
  std::vector<std::int64_t> values;
  bool pending_ellipsis = false;
  for (const std::string& token : tokens) {
    if (token == "...") {
      if (values.size() < 2 || pending_ellipsis) throw bad("'...' needs two values before it");
      pending_ellipsis = true;
      continue;
    }
    std::int64_t value = 0;
    std::size_t used = 0;
    try {
      value = std::stoll(token, &used);
    } catch (const std::exception&) {
      throw bad(fmt::format("'{}' is not an integer", token));
    }
    if (used != token.size()) throw bad(fmt::format("'{}' is not an integer", token));
    if (value <= 0) throw bad(fmt::format("{} is not positive", value));
    if (pending_ellipsis) {
      const std::int64_t a = values[values.size() - 2], b = values.back();
      const bool ratio = b % a == 0 && b / a >= 2;
      // The next term, or nullopt past INT64_MAX (then it is past `value` too, which does fit).
      auto after = [&](std::int64_t x) -> std::optional<std::int64_t> {
        std::int64_t y = 0;
        if (ratio ? __builtin_mul_overflow(x, b / a, &y) : __builtin_add_overflow(x, b - a, &y)) return std::nullopt;
        return y;
      };
      std::optional<std::int64_t> next = after(b);
      while (next && *next < value) {
        if (values.size() >= max_values) {
          throw bad(fmt::format("more than {} values (a sweep runs at most {} points)", max_values, kMaxSweepPoints));
        }
        values.push_back(*next);
        next = after(*next);
      }
      if (next != value) throw bad(fmt::format("{} does not continue {},{}", value, a, b));
      pending_ellipsis = false;
    }
    if (!values.empty() && value <= values.back()) throw bad(fmt::format("{} does not increase", value));
    if (values.size() >= max_values) {
      throw bad(fmt::format("more than {} values (a sweep runs at most {} points)", max_values, kMaxSweepPoints));
    }
    values.push_back(value);
  }
  if (pending_ellipsis) throw bad("'...' needs a last value after it");
  return values;
}

namespace {
}  // namespace

std::optional<std::string> memory_skip_reason(std::int64_t needed, std::optional<std::int64_t> available) {
  if (!available || needed <= *available) return std::nullopt;
  return fmt::format("needs {} (inputs, output and workspace), {} free", format_bytes(static_cast<double>(needed)),
                     format_bytes(static_cast<double>(*available)));
}

std::vector<SweepPoint> sweep_grid(const AttentionSpec& base, const std::vector<std::int64_t>& seqs,
                                   const std::vector<std::int64_t>& head_dims, const std::vector<std::string>& variants,
                                   const std::vector<std::int64_t>& seq_ks) {
  std::vector<SweepPoint> points;
  for (std::int64_t s : seqs) {
    for (std::int64_t k : seq_ks.empty() ? std::vector<std::int64_t>{s} : seq_ks) {
      for (std::int64_t d : head_dims) {
        for (const std::string& v : variants) {
          SweepPoint p{base, v};
          p.spec.seq_q = s;
          p.spec.seq_k = k;
          p.spec.head_dim = d;
          points.push_back(p);
        }
      }
    }
  }
  return points;
}

SweepRecord record_from_result(const SweepPoint& point, const RunResult& result, const Ceilings& ceilings) {
  SweepRecord r;
  r.point = point;
  r.device_ms = result.median_ns / 1e6;
  r.cpu_ms = result.cpu_ns / 1e6;
  r.setup_ms = result.setup_ns / 1e6;
  r.time = result.time.scaled(1e-6);
  r.tflops = result.tflops;
  r.pct_of_peak = pct_of_peak(result.tflops, ceilings.peak_tflops(point.spec.dtype));
  r.rel_err = result.rel_err;
  r.kernels_per_forward = result.kernels_per_forward;
  r.memcpy_per_forward = result.memcpy_per_forward;
  r.memset_per_forward = result.memset_per_forward;
  r.peak_extra_bytes = result.peak_extra_bytes;
  r.nan_output = result.nan_output;
  r.flops = pass_flops(point.spec, point.pass);
  // Without a trace (--no-profile) the kernel chain is unknown, and so are its least bytes; the
  // chain model is the forward's, so a backward or train point has none either.
  if (result.kernels_per_forward > 0 && point.pass == Pass::forward) {
    r.min_bytes = minimal_bytes(point.spec, result.kernels_per_forward, result.memcpy_per_forward);
    r.intensity = r.flops / r.min_bytes;
  }
  r.trace_path = result.trace_path;
  return r;
}

SweepRecord record_not_run(const SweepPoint& point, std::string status, std::string reason) {
  SweepRecord r;
  r.point = point;
  r.status = std::move(status);
  r.reason = std::move(reason);
  r.flops = pass_flops(point.spec, point.pass);
  return r;
}

namespace {

const std::vector<std::string>& csv_columns() {
  static const std::vector<std::string> cols = {
      "variant", "device", "batch", "heads", "kv_heads", "seq", "seq_k", "head_dim", "dtype", "causal", "causal_align",
      "layout", "pass", "status", "reason", "device_ms", "device_ms_min", "device_ms_max", "device_ms_p10", "device_ms_p90",
      "samples", "cpu_ms", "setup_ms", "tflops", "pct_of_peak", "rel_err", "nan_output", "kernels_per_forward",
      "memcpy_per_forward", "memset_per_forward", "peak_extra_bytes", "flops", "min_bytes", "intensity", "trace_path"};
  return cols;
}

std::string csv_quote(const std::string& field) {
  if (field.find_first_of(",\"\n") == std::string::npos) return field;
  std::string out = "\"";
  for (char c : field) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

nlohmann::json record_json(const SweepRecord& r) {
  const AttentionSpec& s = r.point.spec;
  nlohmann::json j = {{"variant", r.point.variant}};
  put_spec_keys(j, s);
  j["pass"] = std::string(pass_name(r.point.pass));
  j["status"] = r.status;
  j["reason"] = r.reason;
  j["flops"] = flops_json(r.flops);
  j["trace_path"] = r.trace_path;
  const bool ran = r.status == "ok";
  auto number = [&](double v) { return ran && std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); };
  j["device_ms"] = number(r.device_ms);
  j["cpu_ms"] = number(r.cpu_ms);
  j["setup_ms"] = number(r.setup_ms);
  // time_stats for tools reading the JSON; the flat device_ms_* keys are the CSV's columns
  j["time_stats"] = ran ? time_stats_json(r.time) : nlohmann::json(nullptr);
  j["device_ms_min"] = number(r.time.min);
  j["device_ms_max"] = number(r.time.max);
  j["device_ms_p10"] = number(r.time.p10);
  j["device_ms_p90"] = number(r.time.p90);
  j["samples"] = ran ? nlohmann::json(r.time.count) : nlohmann::json(nullptr);
  j["tflops"] = number(r.tflops);
  j["pct_of_peak"] = number(r.pct_of_peak);
  j["rel_err"] = r.nan_output ? nlohmann::json(nullptr) : number(r.rel_err);
  j["nan_output"] = r.nan_output;
  auto count = [&](double v) { return ran && std::isfinite(v) ? count_json(v) : nlohmann::json(nullptr); };
  j["kernels_per_forward"] = count(r.kernels_per_forward);
  j["memcpy_per_forward"] = count(r.memcpy_per_forward);
  j["memset_per_forward"] = count(r.memset_per_forward);
  j["peak_extra_bytes"] = ran ? nlohmann::json(r.peak_extra_bytes) : nlohmann::json(nullptr);
  j["min_bytes"] = count(r.min_bytes);
  j["intensity"] = number(r.intensity);
  return j;
}

}  // namespace

std::string sweep_csv(const std::vector<SweepRecord>& records) {
  std::string out;
  for (std::size_t i = 0; i < csv_columns().size(); ++i) out += (i ? "," : "") + csv_columns()[i];
  out += "\n";
  for (const SweepRecord& r : records) {
    nlohmann::json j = record_json(r);
    for (std::size_t i = 0; i < csv_columns().size(); ++i) {
      const nlohmann::json& v = j[csv_columns()[i]];
      std::string field;
      if (v.is_string()) {
        field = v.get<std::string>();
      } else if (v.is_boolean()) {
        field = v.get<bool>() ? "true" : "false";
      } else if (v.is_number_integer()) {
        field = std::to_string(v.get<std::int64_t>());
      } else if (v.is_number()) {
        field = fmt::format("{:.6g}", v.get<double>());
      }
      out += (i ? "," : "") + csv_quote(field);
    }
    out += "\n";
  }
  return out;
}

nlohmann::json sweep_json(const std::vector<SweepRecord>& records, const Ceilings& ceilings) {
  nlohmann::json rows = nlohmann::json::array();
  for (const SweepRecord& r : records) rows.push_back(record_json(r));
  return {{"kind", "attnprof.sweep"}, {"version", 1}, {"ceilings", ceilings_json(ceilings)}, {"rows", rows}};
}

std::vector<SweepRecord> sweep_records_from_json(const nlohmann::json& json) {
  if (!json.contains("rows") || !json["rows"].is_array()) throw Error("sweep JSON: no \"rows\" array");
  std::vector<SweepRecord> out;
  auto num = [](const nlohmann::json& j, const char* key) {
    return j.contains(key) && j[key].is_number() ? j[key].get<double>() : 0.0;
  };
  for (const auto& j : json["rows"]) {
    SweepRecord r;
    r.point.variant = j.value("variant", std::string());
    AttentionSpec& s = r.point.spec;
    s.device = parse_device(j.value("device", std::string("cpu")));
    s.batch = j.value("batch", s.batch);
    s.heads = j.value("heads", s.heads);
    s.kv_heads = j.value("kv_heads", s.kv_heads);
    s.seq_q = j.value("seq", s.seq_q);
    s.seq_k = j.value("seq_k", s.seq_q);
    s.head_dim = j.value("head_dim", s.head_dim);
    s.dtype = parse_dtype(j.value("dtype", std::string("bf16")));
    s.causal = j.value("causal", true);
    s.causal_align = parse_causal_align(j.value("causal_align", std::string("top-left")));
    s.layout = parse_layout(j.value("layout", std::string(layout_name(s.layout))));
    r.point.pass = parse_pass(j.value("pass", std::string("forward")));
    r.status = j.value("status", std::string("ok"));
    r.reason = j.value("reason", std::string());
    r.device_ms = num(j, "device_ms");
    r.cpu_ms = num(j, "cpu_ms");
    if (j.contains("time_stats")) r.time = time_stats_from_json(j["time_stats"]);
    r.tflops = num(j, "tflops");
    r.pct_of_peak = num(j, "pct_of_peak");
    r.setup_ms = num(j, "setup_ms");
    r.rel_err = num(j, "rel_err");
    r.nan_output = j.value("nan_output", false);
    r.kernels_per_forward = num(j, "kernels_per_forward");
    r.memcpy_per_forward = num(j, "memcpy_per_forward");
    r.memset_per_forward = num(j, "memset_per_forward");
    r.peak_extra_bytes = static_cast<std::int64_t>(num(j, "peak_extra_bytes"));
    r.flops = num(j, "flops");
    r.min_bytes = num(j, "min_bytes");
    r.intensity = num(j, "intensity");
    r.trace_path = j.value("trace_path", std::string());
    out.push_back(std::move(r));
  }
  return out;
}

void write_sweep_files(const std::string& dir, const std::vector<SweepRecord>& records, const Ceilings& ceilings,
                       const std::string& stem) {
  const std::string csv = sweep_csv(records);
  const std::string json = dump_json(sweep_json(records, ceilings), 1) + "\n";
  // Both temporaries are written and synced before either is renamed: a write error (a full
  // disk) renames neither, so the CSV and the JSON on disk always hold the same rows.
  SignalDeferral together;
  AtomicFile csv_file(dir + "/" + stem + ".csv", "out_dir");
  AtomicFile json_file(dir + "/" + stem + ".json", "out_dir");
  csv_file.write(csv);
  json_file.write(json);
  csv_file.sync();
  json_file.sync();
  csv_file.commit();
  json_file.commit();
}

std::string progress_line(std::size_t done, std::size_t total, const SweepRecord& r, bool terminal, int width) {
  const AttentionSpec& s = r.point.spec;
  std::string what = s.seq_k == s.seq_q ? fmt::format("{} S={} D={}", r.point.variant, s.seq_q, s.head_dim)
                                        : fmt::format("{} S={} Sk={} D={}", r.point.variant, s.seq_q, s.seq_k, s.head_dim);
  std::string outcome = r.status == "ok" ? fmt::format("{} ms ({}), {}", ms_text(r.device_ms), spread_text(r.time),
                                                       format_tflops(r.tflops))
                                         : fmt::format("{}: {}", r.status, printable(r.reason));
  std::string counter = fmt::format("{}/{}", done, total);
  if (!terminal) return fmt::format("[{}] {}: {}", counter, what, outcome);
  const int bar = 20;
  const int filled = total ? static_cast<int>(bar * done / total) : bar;
  std::string line = fmt::format("[{}{}] {} {} {}", std::string(filled, '#'), std::string(bar - filled, '.'), counter,
                                 what, outcome);
  if (width >= 0) line = std::string(utf8_prefix_columns(line, static_cast<std::size_t>(width)));
  return line;
}

}  // namespace attnprof::report
