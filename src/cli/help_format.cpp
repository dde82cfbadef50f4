#include "cli/help_format.h"

namespace attnprof::cli {

std::string HelpFormatter::make_option_opts(const CLI::Option* opt) const {
  const std::string type = opt->get_type_name();
  if (opt->get_type_size() == 0 || type.empty()) return "";  // a flag takes no value
  std::string value = type.rfind("INT", 0) == 0 || type.rfind("UINT", 0) == 0 ? " N"
                      : type.rfind("FLOAT", 0) == 0                           ? " X"
                                                                              : " TEXT";
  if (opt->get_expected_max() > 1) value += " ...";
  return value;
}

std::string HelpFormatter::make_option_desc(const CLI::Option* opt) const {
  std::string text = opt->get_description();
  if (opt->get_type_size() != 0 && !opt->get_type_name().empty() && !opt->get_default_str().empty()) {
    text += " (default: " + opt->get_default_str() + ")";
  }
  std::string excluded;
  for (const CLI::Option* other : opt->get_excludes()) excluded += (excluded.empty() ? "" : ", ") + other->get_name();
  if (!excluded.empty()) text += " (not with " + excluded + ")";
  if (opt->get_required()) text += " (required)";
  return text;
}

}  // namespace attnprof::cli
