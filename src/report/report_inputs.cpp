// What `attnprof report DIR` reads: DIR's newest compare and sweep results, files that may come from
// elsewhere. Each is parsed and every row is checked with the same parsers the report draws with,
// so a bad value is refused up front with one line naming the file and the field.
#include <attnprof/error.h>
#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "report/ceilings.h"
#include "report/glance.h"
#include "report/html_report.h"
#include "report/results.h"
#include "report/step_timeline.h"
#include "report/sweep.h"

namespace attnprof::report {
namespace {

namespace fs = std::filesystem;

// compare's results and a 10000-point sweep's JSON are a few MB; anything this large is not one.
constexpr std::uintmax_t kMaxInputBytes = 256u << 20;

// The message of a parser's exception without the JSON library's "[json.exception...] " or a
// parameter's "dtype: " in front: the caller names the file and the field instead.
std::string bare_message(const std::exception& e) {
  std::string text = e.what();
  if (dynamic_cast<const nlohmann::json::exception*>(&e) != nullptr) return json_error_text(text);
  const std::size_t colon = text.find(": ");
  if (colon != std::string::npos && colon > 0 &&
      text.find_first_not_of("abcdefghijklmnopqrstuvwxyz_") == colon)
    return text.substr(colon + 2);
  return text;
}

// Runs `parse` on `object`; when it throws, names the key whose removal lets it pass (the field
// holding the bad value), else `where` alone.
template <class Parse>
void check_object(const nlohmann::json& object, const std::string& where, const Parse& parse) {
  if (!object.is_object()) throw UsageError(fmt::format("{}: not a JSON object", where.empty() ? "top level" : where));
  try {
    parse(object);
    return;
  } catch (const std::exception& e) {
    for (const auto& item : object.items()) {
      nlohmann::json without = object;
      without.erase(item.key());
      try {
        parse(without);
      } catch (const std::exception&) {
        continue;
      }
      throw UsageError(fmt::format("{}{}{}: {}", where, where.empty() ? "" : ".", item.key(), bare_message(e)));
    }
    throw UsageError(where.empty() ? bare_message(e) : fmt::format("{}: {}", where, bare_message(e)));
  }
}

std::optional<nlohmann::json> read_json_file(const fs::path& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) return std::nullopt;
  if (!fs::is_regular_file(path, ec)) throw UsageError(fmt::format("report: {}: not a regular file", path.string()));
  const std::uintmax_t size = fs::file_size(path, ec);
  if (!ec && size > kMaxInputBytes) {
    throw UsageError(fmt::format("report: {}: {} bytes; allowed: at most {} bytes", path.string(), size, kMaxInputBytes));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UsageError(fmt::format("report: {}: cannot be read", path.string()));
  std::stringstream text;
  text << in.rdbuf();
  try {
    return nlohmann::json::parse(text.str());
  } catch (const nlohmann::json::exception& e) {
    throw UsageError(fmt::format("report: {}: not valid JSON: {}", path.string(), json_error_text(e.what())));
  }
}

void check_compare(const nlohmann::json& compare, const std::string& dir) {
  check_object(compare, "", [](const nlohmann::json& j) {
    (void)j.value("shape", std::string());
    (void)j.value("device", std::string());
    if (j.contains("rows") && !j["rows"].is_array()) throw Error("not an array");
  });
  if (compare.contains("ceilings")) check_object(compare["ceilings"], "ceilings", ceilings_from_json);
  if (!compare.contains("rows")) return;
  const nlohmann::json& rows = compare["rows"];
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const std::string where = fmt::format("rows[{}]", i);
    const nlohmann::json& row = rows[i];
    check_object(row, where, glance_row_from_json);
    if (row.contains("spec") && row["spec"].is_object()) {  // a shape the run would have refused is refused here
      check_object(row["spec"], where + ".spec", [](const nlohmann::json& j) { spec_from_json(j).validate(); });
    }
    if (row.contains("timeline") && row["timeline"].is_object()) {
      check_object(row["timeline"], where + ".timeline", step_timeline_from_json);
    } else if (row.contains("trace_path") && row["trace_path"].is_string() &&
               !row["trace_path"].get<std::string>().empty()) {  // "": the run kept no trace
      // The report reads the trace (as written or relative to DIR): only a regular file, never a
      // FIFO or a device that would block or never end.
      const std::string trace = row["trace_path"].get<std::string>();
      for (const fs::path& candidate : {fs::path(trace), fs::path(dir) / trace}) {
        std::error_code ec;
        if (fs::exists(candidate, ec) && !fs::is_regular_file(candidate, ec)) {
          throw UsageError(fmt::format("{}.trace_path: '{}' is not a regular file; allowed: a trace file", where,
                                       candidate.string()));
        }
      }
    }
    if (row.contains("roofline") && row["roofline"].is_object()) {
      check_object(row["roofline"], where + ".roofline", [](const nlohmann::json& p) {
        (void)p.value("intensity", 0.0);
        (void)p.value("tflops", 0.0);
      });
    }
  }
}

void check_sweep(const nlohmann::json& sweep) {
  check_object(sweep, "", [](const nlohmann::json& j) {
    if (!j.contains("rows") || !j["rows"].is_array()) throw Error("no \"rows\" array");
  });
  if (sweep.contains("ceilings")) check_object(sweep["ceilings"], "ceilings", ceilings_from_json);
  const nlohmann::json& rows = sweep["rows"];
  for (std::size_t i = 0; i < rows.size(); ++i) {
    check_object(rows[i], fmt::format("rows[{}]", i), [](const nlohmann::json& row) {
      for (const SweepRecord& r : sweep_records_from_json(nlohmann::json{{"rows", nlohmann::json::array({row})}}))
        r.point.spec.validate();  // a shape the sweep would have refused is refused here
    });
  }
}

}  // namespace

std::string json_error_text(const std::string& what) {
  if (what.rfind("[json.exception.", 0) == 0) {
    const std::size_t end = what.find("] ");
    if (end != std::string::npos) return what.substr(end + 2);
  }
  return what;
}

std::string results_file(const std::string& dir, const std::string& kind, int& count) {
  count = 0;
  std::optional<std::pair<fs::file_time_type, std::string>> newest;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    const bool named = name == kind + ".json" || (name.rfind(kind + "_", 0) == 0 && name.size() > kind.size() + 6 &&
                                                   name.compare(name.size() - 5, 5, ".json") == 0);
    if (!named) continue;
    std::error_code time_error;
    const auto when = fs::last_write_time(it->path(), time_error);
    ++count;
    const std::pair<fs::file_time_type, std::string> key{time_error ? fs::file_time_type::min() : when, name};
    if (!newest || key > *newest) newest = key;
  }
  return newest ? (fs::path(dir) / newest->second).string() : std::string();
}

ReportInputs read_report_inputs(const std::string& dir) {
  if (!fs::is_directory(dir)) {
    throw UsageError(fmt::format("report: '{}' is not a directory; give the out_dir directory of compare or sweep", dir));
  }
  ReportInputs in;
  int compares = 0, sweeps = 0;
  in.compare_path = results_file(dir, "compare", compares);
  in.sweep_path = results_file(dir, "sweep", sweeps);
  const fs::path compare_path = in.compare_path, sweep_path = in.sweep_path;
  if (!in.compare_path.empty()) in.compare = read_json_file(compare_path);
  if (!in.sweep_path.empty()) in.sweep = read_json_file(sweep_path);
  if (!in.compare && !in.sweep) {
    throw UsageError(fmt::format("report: '{}' holds no compare or sweep results (compare_*.json, sweep_*.json); "
                                 "write them with compare or sweep, out_dir {}",
                                 dir, dir));
  }
  auto checked = [](const fs::path& path, const auto& check) {
    try {
      check();
    } catch (const UsageError& e) {
      throw UsageError(fmt::format("report: {}: {}", path.string(), e.what()));
    }
  };
  if (in.compare) checked(compare_path, [&] { check_compare(*in.compare, dir); });
  if (in.sweep) checked(sweep_path, [&] { check_sweep(*in.sweep); });
  in.measured = results_written(in.compare_path, in.sweep_path);
  return in;
}

}  // namespace attnprof::report
