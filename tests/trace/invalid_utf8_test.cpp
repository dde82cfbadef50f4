// Invalid UTF-8 in a trace stops at the reader: every string it keeps (names, categories, pids,
// arg keys, raw arg values) comes out valid, each invalid part as one U+FFFD, and what the writer
// makes of it parses with nlohmann, which refuses invalid UTF-8.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <string>

#include "trace/reader.h"
#include "trace/writer.h"

namespace attnprof::trace {
namespace {

const std::string kFffd = "\xEF\xBF\xBD";

TEST(InvalidUtf8, EveryKeptStringComesOutValid) {
  const std::string text =
      "{\"traceEvents\": [{\"ph\": \"X\", \"cat\": \"odd\xFF\", \"name\": \"bad\xFF\xFE op\", \"pid\": \"p\xE2\x82\", "
      "\"tid\": 1, \"ts\": 1, \"dur\": 2, \"args\": {\"key\xC0\": \"v\xED\xA0\x80\", \"list\": [\"\xF0\x9F\x98\"]}}]}";
  Trace t = read_trace_bytes("mem", text.data(), text.size());
  ASSERT_EQ(t.events.size(), 1u);
  const Event& e = t.events[0];
  EXPECT_EQ(e.name, "bad" + kFffd + kFffd + " op");
  EXPECT_EQ(e.raw_category, "odd" + kFffd);
  EXPECT_EQ(e.pid, "p" + kFffd);
  ASSERT_EQ(e.other_args.size(), 2u);
  EXPECT_EQ(e.other_args[0].key, "key" + kFffd);
  EXPECT_EQ(e.other_args[0].json, "\"v" + kFffd + kFffd + kFffd + "\"");
  EXPECT_EQ(e.other_args[1].json, "[\"" + kFffd + "\"]");
  const nlohmann::json back = nlohmann::json::parse(to_json(t));
  EXPECT_EQ(back.at("traceEvents").at(0).at("name"), e.name);
  EXPECT_EQ(back.at("traceEvents").at(0).at("args").at("key" + kFffd), "v" + kFffd + kFffd + kFffd);
}

}  // namespace
}  // namespace attnprof::trace
