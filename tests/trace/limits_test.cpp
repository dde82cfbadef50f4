// ReadLimits at their boundaries: a value exactly at a limit is read, one byte (level, event) more
// is a LimitExceeded naming the ReadLimits field, also where the value straddles the reader's
// 1 MiB buffer; negative and overflowing durations are UsageErrors naming the event.
#include <gtest/gtest.h>

#include <string>

#include "trace/reader.h"

namespace attnprof::trace {
namespace {

// The field LimitExceeded names when `text` is read under `limits` ("" when it is read).
std::string refused_by(const std::string& text, const ReadLimits& limits) {
  try {
    read_trace_bytes("mem", text.data(), text.size(), limits);
    return "";
  } catch (const LimitExceeded& e) {
    EXPECT_NE(std::string(e.what()).find(std::string("; the read limit ") + e.limit() + " raises it"),
              std::string::npos)
        << e.what();
    EXPECT_EQ(std::string(e.what()).rfind("mem: ", 0), 0u) << e.what();
    return e.limit();
  }
}

std::string event_with(const std::string& key_value) {
  return R"({"traceEvents": [{"ph": "X", "name": "n", "ts": 1, "dur": 1, )" + key_value + "}]}";
}

TEST(ReadLimits, StringLengthAtTheBoundary) {
  ReadLimits l;
  l.max_string_bytes = 16;  // keys are strings too: "traceEvents" is 11
  EXPECT_EQ(refused_by(event_with(R"("cat": "0123456789abcdef")"), l), "");
  EXPECT_EQ(refused_by(event_with(R"("cat": "0123456789abcdefg")"), l), "max_string_bytes");
  // Decoded length: sixteen escapes are sixteen bytes.
  EXPECT_EQ(refused_by(event_with(R"("cat": "\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n")"), l), "");
  EXPECT_EQ(refused_by(event_with(R"("cat": "\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n")"), l), "max_string_bytes");
  // A kept arg string (raw text between the quotes) and a skipped one.
  EXPECT_EQ(refused_by(event_with(R"("args": {"k": "0123456789abcdef"})"), l), "");
  EXPECT_EQ(refused_by(event_with(R"("args": {"k": "0123456789abcdefg"})"), l), "max_string_bytes");
  EXPECT_EQ(refused_by(event_with(R"("tts": "0123456789abcdefg")"), l), "max_string_bytes");
  // A kept arg value's whole text: 15 bytes, then 19.
  EXPECT_EQ(refused_by(event_with(R"("args": {"k": [1,2,3,4,5,6,7]})"), l), "");
  EXPECT_EQ(refused_by(event_with(R"("args": {"k": [1,2,3,4,5,6,7,8,9]})"), l), "max_string_bytes");
  // Whitespace kept inside a captured value counts too (a long run of it, across buffers).
  EXPECT_EQ(refused_by(event_with(R"("args": {"k": [1,)" + std::string(3 << 20, ' ') + "2]}"), l), "max_string_bytes");
}

TEST(ReadLimits, NumberLengthAtTheBoundaryAndAcrossTheBuffer) {
  ReadLimits l;
  l.max_number_chars = 20;
  std::string twenty = "1" + std::string(19, '0');
  EXPECT_EQ(refused_by(event_with(R"("args": {"k": )" + twenty + "}"), l), "");
  EXPECT_EQ(refused_by(event_with(R"("args": {"k": )" + twenty + "0}"), l), "max_number_chars");
  // The same number starting 5 bytes before the end of the first 1 MiB buffer (the streaming path).
  for (const std::string& number : {twenty, twenty + "0"}) {
    std::string head = R"({"traceEvents": [{"ph": "X", "name": "n", "ts": 1, "dur": 1, "args": {"k": )";
    std::string text = head + std::string((std::size_t{1} << 20) - 5 - head.size(), ' ') + number + "}}]}";
    EXPECT_EQ(refused_by(text, l), number == twenty ? "" : "max_number_chars");
  }
}

TEST(ReadLimits, DepthEventsAndTextAtTheBoundary) {
  ReadLimits l;
  l.max_depth = 3;
  EXPECT_EQ(refused_by(event_with(R"("args": {"k": [[[1]]]})"), l), "");
  EXPECT_EQ(refused_by(event_with(R"("args": {"k": [[[[1]]]]})"), l), "max_depth");
  ReadLimits e;
  e.max_events = 2;
  std::string ev = R"({"ph": "i", "name": "n", "ts": 1})";
  EXPECT_EQ(refused_by(R"({"traceEvents": [)" + ev + "," + ev + "]}", e), "");
  EXPECT_EQ(refused_by(R"({"traceEvents": [)" + ev + "," + ev + "," + ev + "]}", e), "max_events");
  EXPECT_EQ(refused_by("[" + ev + "," + ev + "," + ev + "]", e), "max_events");  // the array form
  std::string text = R"({"traceEvents": []})";
  ReadLimits t;
  t.max_trace_bytes = text.size();
  EXPECT_EQ(refused_by(text, t), "");
  EXPECT_EQ(refused_by(text + " ", t), "max_trace_bytes");
}

std::string usage_error(const std::string& text) {
  try {
    read_trace_bytes("mem", text.data(), text.size());
    return "";
  } catch (const UsageError& e) {
    return e.what();
  }
}

TEST(Durations, NegativeIsRefusedZeroIsRead) {
  EXPECT_EQ(usage_error(R"({"traceEvents": [{"ph": "X", "name": "z", "ts": 1, "dur": 0}]})"), "");
  std::string text = R"({"traceEvents": [{"ph": "X", "name": "z", "ts": 1, "dur": -0.001}]})";
  // Refused once the event is read: the offset is just past its closing brace.
  EXPECT_EQ(usage_error(text),
            "mem: not a Kineto trace: event #1 ('z', ph X) has a negative \"dur\" (-0.001 us); dur must be >= 0 "
            "(at byte " + std::to_string(text.find("}]}") + 1) + ")");
}

TEST(Durations, SumsAndSpansUpToInt64AreRead) {
  // 9223372036854775.807 us is INT64_MAX ns: one such duration from ts 0 fits exactly.
  EXPECT_EQ(usage_error(R"({"traceEvents": [{"ph": "X", "name": "a", "ts": 0, "dur": 9223372036854775.807}]})"), "");
  EXPECT_NE(usage_error(R"({"traceEvents": [{"ph": "X", "name": "a", "ts": 0.001, "dur": 9223372036854775.807}]})"),
            "");
  // Two halves that add up to INT64_MAX exactly, and one ns more.
  auto two = [](const std::string& second) {
    return R"({"traceEvents": [{"ph": "X", "name": "a", "ts": 0, "dur": 4611686018427387.903}, )"
           R"({"ph": "X", "name": "b", "ts": 0, "dur": )" +
           second + "}]}";
  };
  EXPECT_EQ(usage_error(two("4611686018427387.904")), "");
  EXPECT_NE(usage_error(two("4611686018427387.905")).find("add up past"), std::string::npos);
}

}  // namespace
}  // namespace attnprof::trace
