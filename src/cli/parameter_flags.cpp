#include "cli/parameter_flags.h"

#include <algorithm>
#include <cstddef>

namespace attnprof::cli {
namespace {

struct ParameterFlag {
  std::string_view parameter;  // the field name the library's messages use
  std::string_view flag;
};

constexpr ParameterFlag kParameterFlags[] = {
    {"batch", "--batch"},
    {"heads", "--heads"},
    {"kv_heads", "--kv-heads"},
    {"seq_q", "--seq"},
    {"seq_k", "--seq-k"},
    {"head_dim", "--head-dim"},
    {"dtype", "--dtype"},
    {"device", "--device"},
    {"layout", "--layout"},
    {"causal_align", "--causal-align"},
    {"variant", "--variant"},
    {"variants", "--variants"},
    {"pass", "--pass"},
    {"plugin", "--plugin"},
    {"out_dir", "--out"},
    {"dump_dir", "--dump"},
    {"wait", "--wait"},
    {"warmup", "--warmup"},
    {"active", "--active"},
    {"repeat", "--repeat"},
    {"expect", "--expect"},
    {"sort_by", "--sort-by"},
    {"row_limit", "--row-limit"},
};

// inspect and report name their own parameters only: no shape or schedule word, so a trace's own
// names ("warmup", "variant" as range names) are never taken for a flag.
constexpr ParameterFlag kInspectFlags[] = {
    {"expect", "--expect"},
    {"sort_by", "--sort-by"},
    {"row_limit", "--row-limit"},
    {"range_name", "--range"},
    {"out_dir", "--out"},
};

bool word_char(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_'; }

// Where a one-word parameter may stand: the start, or after ": ", "; " or ", ".
bool opens_clause(std::string_view text, std::size_t at) {
  if (at == 0) return true;
  if (at < 2 || text[at - 1] != ' ') return false;
  const char before = text[at - 2];
  return before == ':' || before == ';' || before == ',';
}

}  // namespace

std::string_view flag_for_parameter(std::string_view parameter, FlagTable table) {
  if (table == FlagTable::inspect) {
    for (const ParameterFlag& p : kInspectFlags)
      if (p.parameter == parameter) return p.flag;
    return {};
  }
  for (const ParameterFlag& p : kParameterFlags)
    if (p.parameter == parameter) return p.flag;
  return {};
}

std::string name_flags(std::string_view message, FlagTable table, const std::vector<std::string>& verbatim) {
  std::string out;
  out.reserve(message.size() + 16);
  std::size_t i = 0;
  while (i < message.size()) {
    // What the user typed (a path, a value) is copied as it is, whatever words it holds; the
    // longest one that starts here wins.
    std::size_t kept = 0;
    for (const std::string& v : verbatim)
      if (v.size() > kept && message.substr(i, v.size()) == v) kept = v.size();
    if (kept > 0) {
      out += message.substr(i, kept);
      i += kept;
      continue;
    }
    if (!word_char(message[i]) || (i > 0 && (word_char(message[i - 1]) || message[i - 1] == '-'))) {
      out += message[i++];
      continue;
    }
    std::size_t end = i;
    while (end < message.size() && word_char(message[end])) ++end;
    const std::string_view word = message.substr(i, end - i);
    const std::string_view flag = flag_for_parameter(word, table);
    const bool whole_word = end == message.size() || message[end] == ' ' || message[end] == ':' ||
                            message[end] == ',' || message[end] == ';' || message[end] == ')';
    const bool in_sentence = i == 0 || message[i - 1] == ' ' || message[i - 1] == '(';
    const bool replace = !flag.empty() && whole_word &&
                         (word.find('_') != std::string_view::npos ? in_sentence : opens_clause(message, i));
    out += replace ? flag : word;
    i = end;
  }
  return out;
}

}  // namespace attnprof::cli
