#include "report/expect.h"

#include <attnprof/error.h>

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <map>

#include "core/utf8.h"

namespace attnprof::report {
namespace {

struct Word {
  const char* word;
  std::vector<KernelClass> matches;
};

// A copy may run as a copy kernel or a memcpy; "mask" covers masked_fill and the mask builders.
const std::vector<Word>& vocabulary() {
  using K = KernelClass;
  static const std::vector<Word> words = {
      {"gemm", {K::gemm}},           {"matmul", {K::gemm}},          {"bmm", {K::gemm}},
      {"mm", {K::gemm}},             {"elementwise", {K::elementwise}}, {"mul", {K::elementwise}},
      {"scale", {K::elementwise}},   {"add", {K::elementwise}},      {"div", {K::elementwise}},
      {"where", {K::elementwise}},   {"fill", {K::elementwise, K::mask}}, {"isneginf", {K::elementwise}},
      {"all", {K::elementwise}},     {"exp", {K::elementwise}},      {"mask", {K::mask}},
      {"masked_fill", {K::mask}},    {"masked_fill_", {K::mask}},    {"tril", {K::mask}},
      {"triu", {K::mask}},           {"logical_not", {K::mask}},     {"copy", {K::copy, K::memcpy}},
      {"clone", {K::copy, K::memcpy}}, {"to", {K::copy}},            {"memcpy", {K::memcpy, K::copy}},
      {"softmax", {K::softmax}},     {"attention", {K::attention}},  {"flash", {K::attention}},
      {"fused", {K::attention}},     {"sdpa", {K::attention}},       {"memset", {K::memset}},
      {"other", {K::other}},
  };
  return words;
}

const Word* find_word(const std::string& word) {
  for (const Word& w : vocabulary()) {
    if (word == w.word) return &w;
  }
  return nullptr;
}

std::string trim_lower(std::string_view text) {
  std::size_t begin = 0, end = text.size();
  while (begin < end && std::isspace(static_cast<unsigned char>(text[begin]))) ++begin;
  while (end > begin && std::isspace(static_cast<unsigned char>(text[end - 1]))) --end;
  std::string out(text.substr(begin, end - begin));
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (out.rfind("aten::", 0) == 0) out = out.substr(6);
  return out;
}

std::vector<KernelClass> kinds_of(const Forward& f, bool with_memsets) {
  std::vector<KernelClass> kinds;
  for (const WorkItem& w : f.work) {
    if (w.kind == KernelClass::memset && !with_memsets) continue;
    kinds.push_back(w.kind);
  }
  return kinds;
}

}  // namespace

std::string expect_vocabulary() {
  std::string out;
  for (const Word& w : vocabulary()) out += (out.empty() ? "" : ", ") + std::string(w.word);
  return out;
}

bool expect_word_matches(const std::string& word, KernelClass observed) {
  const Word* w = find_word(word);
  return w && std::find(w->matches.begin(), w->matches.end(), observed) != w->matches.end();
}

std::vector<std::string> parse_expect(std::string_view list) {
  std::vector<std::string> words;
  std::size_t start = 0;
  while (start <= list.size()) {
    std::size_t comma = list.find(',', start);
    std::string word = trim_lower(list.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start));
    if (word.empty()) {
      throw UsageError(fmt::format("expect: empty entry in '{}'; give a comma-separated list such as "
                                   "gemm,mul,masked_fill,softmax,gemm",
                                   list));
    }
    if (!find_word(word)) {
      throw UsageError(fmt::format("expect: unknown kernel '{}'; allowed: {}", word, expect_vocabulary()));
    }
    words.push_back(word);
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return words;
}

int ExpectResult::matched() const {
  return static_cast<int>(std::count_if(rows.begin(), rows.end(), [](const Row& r) { return r.guess >= 0 && r.observed >= 0; }));
}
std::vector<int> ExpectResult::missing() const {
  std::vector<int> out;
  for (const Row& r : rows) {
    if (r.observed < 0) out.push_back(r.guess);
  }
  return out;
}
std::vector<int> ExpectResult::not_guessed() const {
  std::vector<int> out;
  for (const Row& r : rows) {
    if (r.guess < 0) out.push_back(r.observed);
  }
  return out;
}

ExpectResult compare_expect(const std::vector<std::string>& guess, const TraceWork& work) {
  ExpectResult result;
  result.guess = guess;
  result.forwards = static_cast<int>(work.forwards.size());
  const bool with_memsets = std::find(guess.begin(), guess.end(), "memset") != guess.end();

  // The most common sequence of classes; the first forward that has it is the one shown.
  std::map<std::vector<KernelClass>, int> frequency;
  for (const Forward& f : work.forwards) ++frequency[kinds_of(f, with_memsets)];
  int best = -1;
  for (std::size_t i = 0; i < work.forwards.size(); ++i) {
    int n = frequency[kinds_of(work.forwards[i], with_memsets)];
    if (best < 0 || n > result.same_as_compared) {
      best = static_cast<int>(i);
      result.same_as_compared = n;
    }
  }
  if (best >= 0) {
    result.forward_index = best;
    for (const WorkItem& w : work.forwards[best].work) {
      if (w.kind == KernelClass::memset && !with_memsets) {
        ++result.memsets_apart;
        continue;
      }
      std::string path;
      const std::size_t shown = std::min<std::size_t>(w.ops.size(), 3);
      for (std::size_t k = shown; k-- > 0;) path += (path.empty() ? "" : " \u203a ") + w.ops[k]->name;
      result.observed.push_back({w.kind, w.label(), short_kernel_name(w.event->name), path.empty() ? w.label() : path});
    }
  }

  // Longest common subsequence; ties prefer keeping the observed step first, so a step the
  // guess left out is listed where it ran.
  const std::size_t n = guess.size(), m = result.observed.size();
  std::vector<std::vector<int>> lcs(n + 1, std::vector<int>(m + 1, 0));
  for (std::size_t i = n; i-- > 0;) {
    for (std::size_t j = m; j-- > 0;) {
      lcs[i][j] = expect_word_matches(guess[i], result.observed[j].kind) ? lcs[i + 1][j + 1] + 1
                                                                          : std::max(lcs[i + 1][j], lcs[i][j + 1]);
    }
  }
  std::size_t i = 0, j = 0;
  while (i < n || j < m) {
    if (i < n && j < m && expect_word_matches(guess[i], result.observed[j].kind) && lcs[i][j] == lcs[i + 1][j + 1] + 1) {
      result.rows.push_back({static_cast<int>(i++), static_cast<int>(j++)});
    } else if (j < m && (i == n || lcs[i][j + 1] >= lcs[i + 1][j])) {
      result.rows.push_back({-1, static_cast<int>(j++)});
    } else {
      result.rows.push_back({static_cast<int>(i++), -1});
    }
  }
  return result;
}

ExpectResult compare_expect(const std::vector<std::string>& guess, const trace::Trace& trace) {
  return compare_expect(guess, collect_forwards(trace));
}

std::string expect_text(const ExpectResult& r) {
  std::string out = fmt::format("expected vs observed, forward {} of {} ({} of {} forwards ran this sequence{}):\n",
                                r.forward_index + 1, r.forwards, r.same_as_compared, r.forwards,
                                r.memsets_apart ? fmt::format("; {} memset apart", r.memsets_apart) : std::string());
  out += fmt::format("    {:<14} {:<12} {}\n", "guess", "observed", "launched by / kernel");
  for (const auto& row : r.rows) {
    const char* mark = row.guess >= 0 && row.observed >= 0 ? "ok" : (row.guess < 0 ? "+ " : "- ");
    std::string guessed = row.guess >= 0 ? r.guess[row.guess] : "(not guessed)";
    std::string seen = row.observed >= 0 ? kernel_class_name(r.observed[row.observed].kind) : "(missing)";
    std::string where;
    if (row.observed >= 0) {
      const ObservedStep& s = r.observed[row.observed];
      where = s.label == s.kernel ? s.label : s.label + "  " + s.kernel;
    }
    out += fmt::format("  {} {:<14} {:<12} {}\n", mark, printable(guessed), seen, printable(where));
  }
  out += fmt::format("{} of {} guessed steps observed", r.matched(), r.guess.size());
  std::vector<int> missing = r.missing(), extra = r.not_guessed();
  if (!missing.empty()) {
    std::string names;
    for (int g : missing) {
      names += names.empty() ? "" : ", ";
      names += printable(r.guess[g]);
    }
    out += fmt::format("; missing: {}", names);
  }
  if (!extra.empty()) {
    std::string names;
    for (int o : extra) {
      names += (names.empty() ? "" : ", ") +
               fmt::format("{} ({})", kernel_class_name(r.observed[o].kind), printable(r.observed[o].path));
    }
    out += fmt::format("; not guessed: {}", names);
  }
  out += r.exact() ? ". The guess was right.\n" : ".\n";
  return out;
}

nlohmann::json expect_json(const ExpectResult& r) {
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& row : r.rows) {
    nlohmann::json j;
    j["guess"] = row.guess >= 0 ? nlohmann::json(r.guess[row.guess]) : nlohmann::json(nullptr);
    if (row.observed >= 0) {
      const ObservedStep& s = r.observed[row.observed];
      j["observed"] = kernel_class_name(s.kind);
      j["label"] = s.label;
      j["kernel"] = s.kernel;
    } else {
      j["observed"] = nullptr;
    }
    j["status"] = row.guess >= 0 && row.observed >= 0 ? "match" : (row.guess < 0 ? "not_guessed" : "missing");
    rows.push_back(j);
  }
  nlohmann::json missing = nlohmann::json::array(), extra = nlohmann::json::array();
  for (int g : r.missing()) missing.push_back(r.guess[g]);
  for (int o : r.not_guessed()) {
    extra.push_back({{"observed", kernel_class_name(r.observed[o].kind)},
                     {"label", r.observed[o].label},
                     {"path", r.observed[o].path}});
  }
  return {{"guess", r.guess},
          {"forward", r.forward_index + 1},
          {"forwards", r.forwards},
          {"same_sequence_forwards", r.same_as_compared},
          {"memsets_apart", r.memsets_apart},
          {"matched", r.matched()},
          {"exact", r.exact()},
          {"missing", missing},
          {"not_guessed", extra},
          {"rows", rows}};
}

}  // namespace attnprof::report
