#pragma once
// attnprof's help text: each option with a placeholder for its value (N, X, TEXT), then what it
// does, its default and what it cannot be combined with, in words; no parser notation.
#include <CLI/CLI.hpp>

#include <string>

namespace attnprof::cli {

class HelpFormatter : public CLI::Formatter {
 public:
  std::string make_option_opts(const CLI::Option* opt) const override;
  std::string make_option_desc(const CLI::Option* opt) const override;
};

}  // namespace attnprof::cli
