#pragma once
// The one way attnprof writes a nlohmann::json as text. Its strings can hold names from
// untrusted traces; a plain dump() throws type_error.316 on invalid UTF-8, this one writes each
// invalid part as U+FFFD. tests/core/json_dump_test.cpp checks that no other dump( is in src/.
#include <nlohmann/json.hpp>

#include <string>

namespace attnprof {

inline std::string dump_json(const nlohmann::json& value, int indent = -1) {
  return value.dump(indent, ' ', /*ensure_ascii=*/false, nlohmann::json::error_handler_t::replace);
}

}  // namespace attnprof
