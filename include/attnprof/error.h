#pragma once
// Errors. UsageError is bad input from the user: the CLI prints its one line and exits 2.
// Error is everything else that went wrong (a vendor call, a file that broke mid-read): exit 1.
#include <stdexcept>
#include <string>

namespace attnprof {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class UsageError : public Error {
 public:
  using Error::Error;
};

}  // namespace attnprof
