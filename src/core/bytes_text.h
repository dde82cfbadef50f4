#pragma once
// Byte counts as every command prints them.
#include <string>

namespace attnprof {

// "256.0 MiB", "16.0 KiB", "812 B", "1.50 GiB"
std::string format_bytes(double bytes);

}  // namespace attnprof
