// Names from untrusted traces reaching the outputs (issue 17, items 8, 9 and 13): invalid UTF-8
// (0xff 0xfe, a cut 3-byte sequence), NUL, ESC[2J, newlines. Through the binary: `inspect` in
// text and JSON, an error line, and `report`'s HTML, each checked with a UTF-8 validator of the
// test's own (it decodes code points; src/core/utf8.cpp walks the standard's byte table).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "cli/cli_runner.h"

using attnprof::testing::CliResult;
using attnprof::testing::make_temp_dir;
using attnprof::testing::run_cli;

namespace {

namespace fs = std::filesystem;

const std::string kFffd = "\xEF\xBF\xBD";  // U+FFFD
const std::string kHan = "\xE6\xB3\xA8";   // 注, three bytes

// UTF-8 as RFC 3629 defines it: decode each sequence to its code point and refuse overlong
// forms, surrogates and anything above U+10FFFF.
bool is_utf8(const std::string& s) {
  std::size_t i = 0;
  while (i < s.size()) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      ++i;
      continue;
    }
    // The lead byte's high bits give the sequence's length: 110xxxxx, 1110xxxx, 11110xxx.
    const std::size_t follow = (c >> 5) == 0x6 ? 1 : (c >> 4) == 0xE ? 2 : (c >> 3) == 0x1E ? 3 : 0;
    if (follow == 0 || i + follow >= s.size()) return false;
    std::uint32_t cp = c & (0x7F >> (follow + 1));
    const std::uint32_t smallest = follow == 1 ? 0x80 : follow == 2 ? 0x800 : 0x10000;
    for (std::size_t k = 1; k <= follow; ++k) {
      const unsigned char b = static_cast<unsigned char>(s[i + k]);
      if ((b >> 6) != 0x2) return false;
      cp = (cp << 6) | (b & 0x3F);
    }
    if (cp < smallest || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += follow + 1;
  }
  return true;
}

// The first control character (C0 but '\n', DEL, or C1 U+0080..U+009F) in `s`, as text; empty if none.
std::string first_control(const std::string& s) {
  for (std::size_t i = 0; i < s.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    const bool c1 = c == 0xC2 && i + 1 < s.size() && static_cast<unsigned char>(s[i + 1]) < 0xA0;
    if ((c < 0x20 && c != '\n') || c == 0x7F || c1)
      return "byte " + std::to_string(c) + " at " + std::to_string(i) + " near '" + s.substr(i > 20 ? i - 20 : 0, 40) +
             "'";
  }
  return {};
}

std::string slurp(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

void write(const fs::path& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

std::string event(const std::string& cat, const std::string& name, int pid, int tid, int ts, int dur) {
  return "{\"ph\": \"X\", \"cat\": \"" + cat + "\", \"name\": \"" + name + "\", \"pid\": " + std::to_string(pid) +
         ", \"tid\": " + std::to_string(tid) + ", \"ts\": " + std::to_string(ts) + ", \"dur\": " + std::to_string(dur) +
         "}";
}

std::string trace_of(const std::vector<std::string>& events) {
  std::string json = "{\"schemaVersion\": 1, \"traceEvents\": [\n";
  for (std::size_t i = 0; i < events.size(); ++i) json += (i ? ",\n" : "") + events[i];
  return json + "\n]}\n";
}

// The hostile names as they stand in the trace file (raw bytes and JSON escapes), and the bytes the
// reader makes of them.
struct Hostile {
  std::string in_file, decoded;
};
const std::vector<Hostile>& hostile_names() {
  static const std::vector<Hostile> names = {
      {"bad\xFF\xFE op", "bad" + kFffd + kFffd + " op"},
      {"cut\xE2\x82 op", "cut" + kFffd + " op"},  // a euro sign E2 82 AC without its last byte
      {"nul\\u0000after", std::string("nul\0after", 9)},
      {"clear\\u001b[2Jscreen", "clear\x1b[2Jscreen"},
      {"two\\nlines\\r", "two\nlines\r"},
  };
  return names;
}

std::string hostile_trace() {
  std::vector<std::string> events = {event("user_annotation", "ProfilerStep#1", 1, 1, 0, 1000)};
  int ts = 10;
  for (const Hostile& h : hostile_names()) {
    events.push_back(event("cpu_op", h.in_file, 1, 1, ts, 50));
    ts += 100;
  }
  return trace_of(events);
}

TEST(HostileNames, InspectTextShowsEveryNameEscapedAndWholeTable) {
  const std::string dir = make_temp_dir();
  write(fs::path(dir) / "t.json", hostile_trace());
  CliResult r = run_cli({"inspect", dir + "/t.json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(is_utf8(r.out)) << r.out;
  EXPECT_EQ(first_control(r.out), "");
  // Each name shown once, its control characters as visible escapes, its invalid bytes as U+FFFD.
  for (const std::string& shown : {"bad" + kFffd + kFffd + " op", "cut" + kFffd + " op", std::string("nul\\0after"),
                                   std::string("clear\\x1b[2Jscreen"), std::string("two\\nlines\\r")}) {
    EXPECT_NE(r.out.find(shown), std::string::npos) << shown << "\n" << r.out;
  }
  // The NUL did not end the output: the table's last line and the steps table follow it.
  EXPECT_NE(r.out.find("Self CPU time total"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("ProfilerStep#1"), std::string::npos) << r.out;
  fs::remove_all(dir);
  fs::remove_all(r.work_dir);
}

TEST(HostileNames, InspectJsonParsesAndKeepsTheNamesLosslesslyEscaped) {
  const std::string dir = make_temp_dir();
  write(fs::path(dir) / "t.json", hostile_trace());
  CliResult r = run_cli({"inspect", "--format", "json", "--insights", dir + "/t.json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(is_utf8(r.out));
  EXPECT_EQ(first_control(r.out), "");  // JSON escapes them: \u0000, \u001b, \n
  nlohmann::json j = nlohmann::json::parse(r.out);
  std::set<std::string> names;
  for (const auto& row : j.at("key_averages")) names.insert(row.at("name").get<std::string>());
  for (const Hostile& h : hostile_names()) EXPECT_EQ(names.count(h.decoded), 1u) << h.in_file;
  fs::remove_all(dir);
  fs::remove_all(r.work_dir);
}

// An error naming an event prints its name on the one stderr line, escaped.
TEST(HostileNames, ErrorLineNamingAnEventIsOneEscapedLine) {
  const std::string dir = make_temp_dir();
  write(fs::path(dir) / "t.json",
        "{\"traceEvents\": [{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"x\\u001b[2J\\ny\\u0000\xFF\", "
        "\"pid\": 1, \"tid\": 1, \"ts\": 5}]}");
  CliResult r = run_cli({"inspect", dir + "/t.json"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_TRUE(is_utf8(r.err));
  EXPECT_EQ(first_control(r.err), "");
  ASSERT_FALSE(r.err.empty());
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << r.err;  // one line
  EXPECT_NE(r.err.find("x\\x1b[2J\\ny\\0" + kFffd), std::string::npos) << r.err;
  fs::remove_all(dir);
  fs::remove_all(r.work_dir);
}

// The labels inside report.html's step timeline: each `<text ...>` holding a 注 name.
std::vector<std::string> han_labels(const std::string& html) {
  std::vector<std::string> labels;
  for (std::size_t at = html.find("<text "); at != std::string::npos; at = html.find("<text ", at + 1)) {
    const std::size_t open = html.find('>', at), close = html.find("</text>", at);
    if (open == std::string::npos || close == std::string::npos) break;
    std::string label = html.substr(open + 1, close - open - 1);
    if (label.find(kHan) != std::string::npos) labels.push_back(label);
  }
  return labels;
}

TEST(HostileNames, ReportHtmlIsValidUtf8AndCutsLabelsBetweenCodePoints) {
  const std::string dir = make_temp_dir();
  // Three long names of 注 behind 0, 1 and 2 ASCII letters, side by side with equal widths: a cut
  // after a fixed number of bytes splits a 注 in at least two of them.
  std::string han;
  for (int i = 0; i < 80; ++i) han += kHan;
  const std::vector<std::string> long_names = {han, "a" + han, "ab" + han};
  std::vector<std::string> events = {event("user_annotation", "ProfilerStep#1\\u001b[2J", 1, 1, 0, 3000)};
  for (std::size_t i = 0; i < long_names.size(); ++i)
    events.push_back(event("cpu_op", long_names[i], 1, 1, static_cast<int>(i) * 1000, 1000));
  events.push_back(event("cpu_op", "bad\xFF\\u0000end", 1, 1, 100, 10));  // inside the first, one row down
  write(fs::path(dir) / "t.json", trace_of(events));
  write(fs::path(dir) / "compare.json", R"({"rows": [{"variant": "v", "trace_path": "t.json"}]})");
  CliResult r = run_cli({"report", dir, "--title", "title\x1b[2J\xFF"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string html = slurp(fs::path(dir) / "report.html");
  ASSERT_FALSE(html.empty());
  EXPECT_TRUE(is_utf8(html));
  EXPECT_EQ(first_control(html), "");
  EXPECT_NE(html.find("<h1>title\\x1b[2J" + kFffd + "</h1>"), std::string::npos);
  EXPECT_NE(html.find("ProfilerStep#1\\x1b[2J"), std::string::npos);
  EXPECT_NE(html.find("bad" + kFffd + "\\0end"), std::string::npos);
  // Each long name is drawn with a label: a prefix of the name ending between two code points,
  // then the ellipsis.
  const std::vector<std::string> labels = han_labels(html);
  ASSERT_EQ(labels.size(), long_names.size()) << html;
  const std::string ellipsis = "\xE2\x80\xA6";
  for (std::size_t i = 0; i < labels.size(); ++i) {
    const std::string& label = labels[i];
    ASSERT_GT(label.size(), ellipsis.size() + kHan.size()) << label;
    EXPECT_EQ(label.substr(label.size() - ellipsis.size()), ellipsis) << label;
    const std::string kept = label.substr(0, label.size() - ellipsis.size());
    EXPECT_EQ(long_names[i].rfind(kept, 0), 0u) << label;
    EXPECT_EQ((kept.size() - i) % kHan.size(), 0u) << label;  // whole 注s after the ASCII letters
  }
  fs::remove_all(dir);
  fs::remove_all(r.work_dir);
}

}  // namespace
