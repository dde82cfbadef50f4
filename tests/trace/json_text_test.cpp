#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "trace/json_text.h"

namespace attnprof::trace {
namespace {

std::string us(std::int64_t ns) {
  std::string s;
  append_us(s, ns);
  return s;
}

std::string json_quoted(std::string_view text) {
  std::string s;
  append_json_string(s, text);
  return s;
}

TEST(JsonText, MicrosecondsHaveExactlyThreeDecimalsFromIntegerNanoseconds) {
  EXPECT_EQ(us(0), "0.000");
  EXPECT_EQ(us(1), "0.001");
  EXPECT_EQ(us(999), "0.999");
  EXPECT_EQ(us(1000), "1.000");
  EXPECT_EQ(us(5165424235049688), "5165424235049.688");
  EXPECT_EQ(us(-1500), "-1.500");
  EXPECT_EQ(us(INT64_MIN), "-9223372036854775.808");
}

TEST(JsonText, ParsesMicrosecondTextBackToTheSameNanoseconds) {
  EXPECT_EQ(parse_us_as_ns("5165424235049.688"), 5165424235049688);
  EXPECT_EQ(parse_us_as_ns("12"), 12000);
  EXPECT_EQ(parse_us_as_ns("0.5"), 500);
  EXPECT_EQ(parse_us_as_ns("-1.5"), -1500);
  EXPECT_EQ(parse_us_as_ns("1.2345"), 1235);   // rounded to the nearest ns
  EXPECT_EQ(parse_us_as_ns("1.2344"), 1234);
  EXPECT_EQ(parse_us_as_ns("1e3"), 1000000);
  EXPECT_EQ(parse_us_as_ns("1e300"), std::nullopt);
  for (std::int64_t ns : {std::int64_t{0}, std::int64_t{7}, std::int64_t{123456789}, std::int64_t{5165424718886273},
                          INT64_MAX, INT64_MIN, INT64_MIN + 1, std::int64_t{-999}})
    EXPECT_EQ(parse_us_as_ns(us(ns)), ns) << ns;
  EXPECT_EQ(parse_us_as_ns("9223372036854775.808"), std::nullopt);  // one past INT64_MAX
  EXPECT_EQ(parse_us_as_ns("9223372036854775.8074"), INT64_MAX);    // rounds down to INT64_MAX
}

TEST(JsonText, EscapesQuotesBackslashesAndControlCharacters) {
  EXPECT_EQ(json_quoted("a\"b"), R"("a\"b")");
  EXPECT_EQ(json_quoted("a\\b"), R"("a\\b")");
  EXPECT_EQ(json_quoted(std::string("\n\t\x01\x1f", 4)), R"("\u000a\u0009\u0001\u001f")");
  EXPECT_EQ(json_quoted("x<int, 4>::y"), R"("x<int, 4>::y")");
  EXPECT_EQ(json_quoted("µs → 注意"), "\"µs → 注意\"");  // UTF-8 passed through
  EXPECT_EQ(json_quoted("\xff"), "\"\xEF\xBF\xBD\"");                  // an invalid byte becomes U+FFFD
  EXPECT_EQ(json_quoted("\xe2\x82"), "\"\xEF\xBF\xBD\"");  // a truncated sequence is one invalid part
  EXPECT_EQ(json_quoted("\xed\xa0\x80"), "\"\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\"");  // an encoded surrogate, three
  // Whatever goes in, a JSON parser reads back the same text (invalid UTF-8 aside).
  std::string awkward = "q\"b\\s/\b\f\r\x7f 😀 end";
  EXPECT_EQ(nlohmann::json::parse(json_quoted(awkward)).get<std::string>(), awkward);
}

TEST(JsonText, IntegersAndIdentifiers) {
  EXPECT_EQ(parse_integer("-12"), -12);
  EXPECT_EQ(parse_integer("1.0"), std::nullopt);
  EXPECT_EQ(parse_integer("99999999999999999999"), std::nullopt);
  EXPECT_TRUE(looks_like_integer("515"));
  EXPECT_TRUE(looks_like_integer("-1"));
  EXPECT_FALSE(looks_like_integer("Spans"));
  EXPECT_FALSE(looks_like_integer(""));
  EXPECT_FALSE(looks_like_integer("007"));
}

}  // namespace
}  // namespace attnprof::trace
