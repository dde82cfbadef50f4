#pragma once
// Errors. UsageError is bad input from the user: the CLI prints its one line and exits 2.
// Error is everything else that went wrong (a vendor call, a file that broke mid-read): exit 1.
#include <stdexcept>
#include <string>

namespace attnprof {

class Error : public std::runtime_error {
 public:
  // The message is stored printable (valid UTF-8, control characters shown as escapes such as \0
  // and \x1b): it may name something from an untrusted file, and what() is one C-string line.
  explicit Error(const std::string& what);
  explicit Error(const char* what);
};

class UsageError : public Error {
 public:
  using Error::Error;
};

}  // namespace attnprof
