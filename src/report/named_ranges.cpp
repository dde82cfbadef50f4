#include "report/named_ranges.h"

#include <attnprof/error.h>
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

namespace attnprof::report {
namespace {

using trace::Category;

constexpr std::string_view kModulePrefix = "nn.Module: ";

// The name a user gives for a range event: the module's own name for "nn.Module: NAME".
std::string given_name(Category category, const std::string& name) {
  if (category == Category::python_function && name.rfind(kModulePrefix, 0) == 0) return name.substr(kModulePrefix.size());
  return name;
}

}  // namespace

const std::vector<std::string>& default_range_names() {
  static const std::vector<std::string> kDefault = {"attn_fwd"};
  return kDefault;
}

bool is_named_range(Category category, const std::string& name, const std::vector<std::string>& names) {
  const bool module = category == Category::python_function && name.rfind(kModulePrefix, 0) == 0;
  if (category != Category::user_annotation && !module) return false;
  return std::find(names.begin(), names.end(), given_name(category, name)) != names.end();
}

void check_range_names(const Timeline& timeline, const std::vector<std::string>& names, const std::string& path) {
  std::set<std::pair<Category, std::string>> host;
  std::set<std::string> device;
  std::map<std::string, std::size_t> found;  // range names a user could give, by count
  std::string first_step;                    // the first ProfilerStep#N range's name
  for (const TimelineEvent& e : timeline.events()) {
    const std::string& name = timeline.name(e);
    if (e.category == Category::gpu_user_annotation) {
      device.insert(name);
      continue;
    }
    if (!is_named_range(e.category, name, {given_name(e.category, name)})) continue;
    host.insert({e.category, name});
    // The steps count as one entry, under the first step's own name (a name --range takes).
    if (name.rfind("ProfilerStep#", 0) == 0 && first_step.empty()) first_step = name;
    ++found[name.rfind("ProfilerStep#", 0) == 0 ? first_step : given_name(e.category, name)];
  }
  for (const std::string& wanted : names) {
    if (wanted.empty())
      throw UsageError("range_name '': an empty name; give a record_function/NVTX range or a module name");
    const bool on_host = std::any_of(host.begin(), host.end(), [&](const auto& range) {
      return is_named_range(range.first, range.second, {wanted});
    });
    if (on_host) continue;
    if (device.count(wanted))
      throw UsageError(fmt::format("range_name '{}': {} holds only its GPU span (gpu_user_annotation), not the host "
                                   "range whose launches per-range work is counted from",
                                   wanted, path));
    std::vector<std::pair<std::string, std::size_t>> list(found.begin(), found.end());
    std::stable_sort(list.begin(), list.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
    std::string some;
    const std::size_t shown = std::min<std::size_t>(list.size(), 5);
    for (std::size_t i = 0; i < shown; ++i) some += (i ? ", " : "") + list[i].first;
    if (list.size() > shown) some += fmt::format(" and {} more", list.size() - shown);
    throw UsageError(fmt::format("range_name '{}': no record_function/NVTX range or module of that name in {}; {}",
                                 wanted, path,
                                 some.empty() ? "it has no named ranges" : "ranges found: " + some));
  }
}

}  // namespace attnprof::report
