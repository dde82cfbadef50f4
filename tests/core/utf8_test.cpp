// The UTF-8 helpers against answers worked out by hand from the Unicode Standard's table 3-7
// (well-formed byte sequences) and its U+FFFD substitution of maximal subparts.
#include "core/utf8.h"

#include <gtest/gtest.h>

#include <string>

namespace attnprof {
namespace {

const std::string kFffd = "\xEF\xBF\xBD";

TEST(Utf8, StepsOverValidSequencesOfEachLength) {
  const std::string text = "a\xC2\xB5\xE2\x82\xAC\xF0\x9F\x98\x80";  // a µ € 😀
  EXPECT_EQ(utf8_step(text, 0).length, 1u);
  EXPECT_EQ(utf8_step(text, 1).length, 2u);
  EXPECT_EQ(utf8_step(text, 3).length, 3u);
  EXPECT_EQ(utf8_step(text, 6).length, 4u);
  for (std::size_t at : {0, 1, 3, 6}) EXPECT_TRUE(utf8_step(text, at).valid) << at;
  EXPECT_TRUE(is_valid_utf8(text));
  EXPECT_EQ(utf8_columns(text), 4u);
}

TEST(Utf8, InvalidPartsAreMaximalSubparts) {
  // Lone bytes that never start a sequence: one part each.
  EXPECT_EQ(utf8_step("\xFF", 0).length, 1u);
  EXPECT_FALSE(utf8_step("\xFF", 0).valid);
  EXPECT_EQ(utf8_step("\x80", 0).length, 1u);
  EXPECT_EQ(utf8_step("\xC0\xAF", 0).length, 1u);  // C0 is never a lead byte (overlong '/')
  // A truncated euro sign E2 82 [AC]: both bytes are one part, at the end and before ASCII.
  EXPECT_EQ(utf8_step("\xE2\x82", 0).length, 2u);
  EXPECT_EQ(utf8_step("\xE2\x82x", 0).length, 2u);
  // ED A0 80 would be the surrogate U+D800: ED allows only 80..9F next, so ED alone is a part.
  EXPECT_EQ(utf8_step("\xED\xA0\x80", 0).length, 1u);
  // F4 90 would be above U+10FFFF; F0 8F an overlong form.
  EXPECT_EQ(utf8_step("\xF4\x90\x80\x80", 0).length, 1u);
  EXPECT_EQ(utf8_step("\xF0\x8F\xBF\xBF", 0).length, 1u);
  // F0 9F 98 [80] cut after three bytes: one part of three.
  EXPECT_EQ(utf8_step("\xF0\x9F\x98", 0).length, 3u);
  EXPECT_FALSE(utf8_step("\xF0\x9F\x98", 0).valid);
}

TEST(Utf8, ValidUtf8ReplacesEachInvalidPartWithOneReplacementCharacter) {
  EXPECT_EQ(valid_utf8("plain"), "plain");
  EXPECT_EQ(valid_utf8("bad\xFF\xFE"), "bad" + kFffd + kFffd);
  EXPECT_EQ(valid_utf8("cut\xE2\x82"), "cut" + kFffd);
  EXPECT_EQ(valid_utf8("cut\xE2\x82 op"), "cut" + kFffd + " op");
  EXPECT_EQ(valid_utf8("\xED\xA0\x80!"), kFffd + kFffd + kFffd + "!");
  EXPECT_EQ(valid_utf8("\xC0\xAF"), kFffd + kFffd);
  EXPECT_EQ(valid_utf8("\xF0\x9F\x98\xE2\x82\xAC"), kFffd + "\xE2\x82\xAC");  // the cut emoji, then a whole euro
  EXPECT_EQ(valid_utf8(kFffd), kFffd);
  // ASCII is passed over eight bytes at a time: invalid bytes after such runs, and in a tail shorter than eight.
  EXPECT_EQ(valid_utf8(std::string(16, 'a') + "\xFF" + std::string(7, 'b') + "\x80"),
            std::string(16, 'a') + kFffd + std::string(7, 'b') + kFffd);
  EXPECT_EQ(valid_utf8(std::string(7, 'a') + "\xE2\x82\xAC" + std::string(9, 'b')),
            std::string(7, 'a') + "\xE2\x82\xAC" + std::string(9, 'b'));
  std::string in_place = "x\xFFy";
  make_valid_utf8(in_place);
  EXPECT_EQ(in_place, "x" + kFffd + "y");
  EXPECT_FALSE(is_valid_utf8("x\xFFy"));
  EXPECT_TRUE(is_valid_utf8(in_place));
  EXPECT_EQ(utf8_columns("cut\xE2\x82"), 4u);  // the cut euro counts as the one U+FFFD it becomes
}

TEST(Utf8, PrintableEscapesControlCharacters) {
  EXPECT_EQ(printable(std::string("nul\0after", 9)), "nul\\0after");
  EXPECT_EQ(printable("clear\x1b[2Jscreen"), "clear\\x1b[2Jscreen");
  EXPECT_EQ(printable("two\nlines\r\tend"), "two\\nlines\\r\\tend");
  EXPECT_EQ(printable("bell\x07 del\x7f"), "bell\\x07 del\\x7f");
  EXPECT_EQ(printable("csi\xC2\x9B" "31m"), "csi\\u009b31m");  // U+009B, the one-byte CSI
  EXPECT_EQ(printable("nbsp\xC2\xA0 \xC2\xB5s"), "nbsp\xC2\xA0 \xC2\xB5s");  // U+00A0 and after are text
  EXPECT_EQ(printable("bad\xFF"), "bad" + kFffd);
  EXPECT_EQ(printable("back\\slash"), "back\\slash");
  EXPECT_EQ(printable("row 1\nrow 2\x1b\n", Newlines::keep), "row 1\nrow 2\\x1b\n");
  const std::string once = printable(std::string("a\0\x1b\n\xFF", 5));
  EXPECT_EQ(printable(once), once);
}

TEST(Utf8, PrefixesEndBetweenCodePoints) {
  const std::string euros = "\xE2\x82\xAC\xE2\x82\xAC";  // €€, 6 bytes
  EXPECT_EQ(utf8_prefix_bytes(euros, 6), euros);
  EXPECT_EQ(utf8_prefix_bytes(euros, 5), "\xE2\x82\xAC");
  EXPECT_EQ(utf8_prefix_bytes(euros, 3), "\xE2\x82\xAC");
  EXPECT_EQ(utf8_prefix_bytes(euros, 2), "");
  EXPECT_EQ(utf8_prefix_bytes("ab", 100), "ab");
  EXPECT_EQ(utf8_prefix_columns(euros, 1), "\xE2\x82\xAC");
  EXPECT_EQ(utf8_prefix_columns("a\xC2\xB5" "bc", 2), "a\xC2\xB5");
  EXPECT_EQ(utf8_prefix_columns("abc", 0), "");
  EXPECT_EQ(utf8_prefix_columns("abc", 9), "abc");
}

TEST(Utf8, CutToColumnsEndsWithTheEllipsisWhenSomethingWasCut) {
  EXPECT_EQ(cut_to_columns("attention", 6, "..."), "att...");
  EXPECT_EQ(cut_to_columns("attention", 9, "..."), "attention");
  EXPECT_EQ(cut_to_columns("attention", 2, "..."), "at");
  // 注意力机制 is five code points of three bytes: four columns keep three of them and the ellipsis.
  EXPECT_EQ(cut_to_columns("\xE6\xB3\xA8\xE6\x84\x8F\xE5\x8A\x9B\xE6\x9C\xBA\xE5\x88\xB6", 4),
            "\xE6\xB3\xA8\xE6\x84\x8F\xE5\x8A\x9B\xE2\x80\xA6");
  EXPECT_EQ(cut_to_columns("\xE6\xB3\xA8\xE6\x84\x8F", 2), "\xE6\xB3\xA8\xE6\x84\x8F");
}

}  // namespace
}  // namespace attnprof
