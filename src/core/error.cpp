#include <attnprof/error.h>

#include "core/utf8.h"

namespace attnprof {

Error::Error(const std::string& what) : std::runtime_error(printable(what)) {}
Error::Error(const char* what) : std::runtime_error(printable(what)) {}

}  // namespace attnprof
