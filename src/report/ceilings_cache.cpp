#include "core/json_dump.h"
#include "report/ceilings_cache.h"

#include <attnprof/error.h>
#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <regex>
#include <system_error>

#include "core/atomic_file.h"

namespace attnprof::report {
namespace {

namespace fs = std::filesystem;

constexpr int kCacheVersion = 1;
constexpr std::uintmax_t kMaxCacheBytes = 64 * 1024;  // a valid file is under 2 KiB
constexpr std::size_t kMaxTextChars = 512;

std::string safe_model(const std::string& model) {
  std::string out;
  for (char c : model) {
    const bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '-';
    out += plain ? c : '_';
  }
  return out.empty() ? "unknown" : out.substr(0, 100);
}

std::string file_prefix(Device device, const std::string& model) {
  return fmt::format("ceilings-{}-{}-", device_name(device), safe_model(model));
}

// Checks one ceiling: a finite median in (0, bound], and its spread min <= median <= max over
// 1..1e6 runs. Returns what is wrong, or "".
std::string check_ceiling(const nlohmann::json& j, const char* key, const char* spread_key, double bound,
                          bool may_be_zero) {
  if (!j.contains(key) || !j[key].is_number()) return fmt::format("{} missing or not a number", key);
  const double median = j[key].get<double>();
  if (may_be_zero && median == 0) return "";
  if (!std::isfinite(median) || median <= 0 || median > bound) return fmt::format("{} {} out of range", key, median);
  if (!j.contains(spread_key) || !j[spread_key].is_object()) return fmt::format("{} missing", spread_key);
  const nlohmann::json& s = j[spread_key];
  for (const char* field : {"min", "max"}) {
    if (!s.contains(field) || !s[field].is_number()) return fmt::format("{}.{} missing or not a number", spread_key, field);
  }
  if (!s.contains("samples") || !s["samples"].is_number_integer() || s["samples"].get<std::int64_t>() < 1 ||
      s["samples"].get<std::int64_t>() > 1000000) {
    return fmt::format("{}.samples missing or not 1..1000000", spread_key);
  }
  const double min = s["min"].get<double>(), max = s["max"].get<double>();
  if (!(min > 0 && min <= median && median <= max && std::isfinite(max))) {
    return fmt::format("{} {} is not within its spread {}..{}", key, median, min, max);
  }
  return "";
}

// The file's text, or nullopt: absent (problem left empty) or unreadable (problem says why).
std::optional<std::string> read_cache_file(const std::string& path, std::string& problem) {
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  if (ec || !fs::exists(status)) return std::nullopt;
  if (!fs::is_regular_file(status)) {
    problem = "not a regular file";
    return std::nullopt;
  }
  const std::uintmax_t size = fs::file_size(path, ec);
  if (ec || size > kMaxCacheBytes) {
    problem = ec ? ec.message() : fmt::format("{} bytes, more than a cache file's {}", size, kMaxCacheBytes);
    return std::nullopt;
  }
  std::ifstream in(path, std::ios::binary);
  std::string text(static_cast<std::size_t>(size), '\0');
  if (!in.read(text.data(), static_cast<std::streamsize>(size))) {
    problem = "cannot be read";
    return std::nullopt;
  }
  return text;
}

void note(const std::string& line) { std::fprintf(stderr, "attnprof: %s\n", line.c_str()); }

}  // namespace

std::string ceilings_cache_dir() {
  for (auto [variable, suffix] : {std::pair{"XDG_CACHE_HOME", ""}, std::pair{"HOME", "/.cache"}}) {
    const char* value = std::getenv(variable);
    if (value != nullptr && value[0] == '/') return std::string(value) + suffix + "/attnprof";
  }
  return "";
}

std::string ceilings_cache_path(const std::string& dir, Device device, const std::string& model, int threads) {
  return (fs::path(dir) / fmt::format("{}{}t.json", file_prefix(device, model), threads)).string();
}

std::string ceilings_cache_text(const Ceilings& c) {
  return dump_json(nlohmann::json{{"kind", "attnprof.ceilings"}, {"version", kCacheVersion}, {"ceilings", ceilings_json(c)}}, 1) +
         "\n";
}

std::optional<Ceilings> parse_ceilings_cache(const std::string& text, Device device, const std::string& model,
                                             int threads, std::string& problem) {
  const nlohmann::json root = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded()) {
    problem = "not JSON";
    return std::nullopt;
  }
  if (!root.is_object() || root.value("kind", nlohmann::json()) != "attnprof.ceilings") {
    problem = "not an attnprof ceilings file";
    return std::nullopt;
  }
  if (root.value("version", nlohmann::json()) != kCacheVersion) {
    problem = fmt::format("version {} where {} is read", dump_json(root.value("version", nlohmann::json())), kCacheVersion);
    return std::nullopt;
  }
  if (!root.contains("ceilings") || !root["ceilings"].is_object()) {
    problem = "no ceilings object";
    return std::nullopt;
  }
  const nlohmann::json& j = root["ceilings"];
  for (const char* key : {"device", "device_name", "model", "measured_at", "matmul_what", "matmul_bf16_what", "copy_what"}) {
    if (!j.contains(key) || !j[key].is_string() || j[key].get_ref<const std::string&>().size() > kMaxTextChars) {
      problem = fmt::format("{} missing, not a string or longer than {} characters", key, kMaxTextChars);
      return std::nullopt;
    }
  }
  if (j["device"] != std::string(device_name(device)) || j["model"] != model || !j.contains("threads") ||
      !j["threads"].is_number_integer() || j["threads"].get<std::int64_t>() != threads) {
    problem = fmt::format("measured for {} '{}' at {} threads, not {} '{}' at {}", j["device"].get<std::string>(),
                          j["model"].get<std::string>(), dump_json(j.value("threads", nlohmann::json())),
                          device_name(device), model, threads);
    return std::nullopt;
  }
  static const std::regex date(R"(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z)");
  if (!std::regex_match(j["measured_at"].get<std::string>(), date)) {
    problem = "measured_at is not a UTC date and time (YYYY-MM-DDTHH:MM:SSZ)";
    return std::nullopt;
  }
  for (const std::string& wrong : {check_ceiling(j, "matmul_tflops", "matmul_spread", 1e5, false),
                                   check_ceiling(j, "matmul_bf16_tflops", "matmul_bf16_spread", 1e5, true),
                                   check_ceiling(j, "copy_gbps", "copy_spread", 1e6, false)}) {
    if (!wrong.empty()) {
      problem = wrong;
      return std::nullopt;
    }
  }
  if (!j.contains("seconds_spent") || !j["seconds_spent"].is_number() || !(j["seconds_spent"].get<double>() >= 0)) {
    problem = "seconds_spent missing or negative";
    return std::nullopt;
  }
  return ceilings_from_json(j);
}

Ceilings cached_or_measured(Device device, const std::string& model, int threads, bool remeasure,
                            const std::function<Ceilings()>& measure) {
  const std::string dir = ceilings_cache_dir();
  if (dir.empty()) {
    note(fmt::format("no cache directory (XDG_CACHE_HOME and HOME are unset or not absolute); measuring the {} "
                     "ceilings for this run only",
                     device_name(device)));
    return measure();
  }
  const std::string path = ceilings_cache_path(dir, device, model, threads);
  std::string problem;
  if (!remeasure) {
    if (std::optional<std::string> text = read_cache_file(path, problem)) {
      if (std::optional<Ceilings> cached = parse_ceilings_cache(*text, device, model, threads, problem)) {
        cached->cache_path = path;
        return *cached;
      }
    }
  }
  note(problem.empty() ? fmt::format("measuring the {} ceilings of this machine (kept in {})", device_name(device), path)
                       : fmt::format("ceilings cache {} is not usable ({}); measuring again", path, problem));
  Ceilings c = measure();
  try {
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (remeasure) {
      const std::string prefix = file_prefix(device, model);
      for (const auto& entry : fs::directory_iterator(dir, ec)) {
        const std::string name = entry.path().filename().string();
        if (name.size() <= prefix.size() + 6 || !name.starts_with(prefix) || !name.ends_with("t.json")) continue;
        const std::string count = name.substr(prefix.size(), name.size() - prefix.size() - 6);  // <threads>
        if (count.find_first_not_of("0123456789") == std::string::npos && name != fs::path(path).filename()) {
          fs::remove(entry.path(), ec);
        }
      }
    }
    write_file_atomically(path, ceilings_cache_text(c), "ceilings cache");
    c.cache_path = path;
  } catch (const std::exception& e) {
    note(fmt::format("cannot write the ceilings cache {} ({}); these ceilings hold for this run only", path, e.what()));
  }
  return c;
}

std::string utc_now_text() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm utc{};
  gmtime_r(&now, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

}  // namespace attnprof::report
