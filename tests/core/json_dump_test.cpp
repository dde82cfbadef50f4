// dump_json never throws on a string holding invalid UTF-8, and it is the only dump( in src/.
#include "core/json_dump.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace attnprof {
namespace {

TEST(JsonDump, WritesInvalidUtf8AsReplacementCharacters) {
  const nlohmann::json j = {{"name", "bad\xFF\xFE"}, {"ctl", std::string("nul\0\x1b", 5)}};
  EXPECT_THROW((void)j.dump(), nlohmann::json::type_error);  // why dump_json exists
  const std::string text = dump_json(j);
  EXPECT_EQ(text, "{\"ctl\":\"nul\\u0000\\u001b\",\"name\":\"bad\xEF\xBF\xBD\xEF\xBF\xBD\"}");
  EXPECT_EQ(nlohmann::json::parse(text)["name"], "bad\xEF\xBF\xBD\xEF\xBF\xBD");
  EXPECT_EQ(dump_json({{"a", 1}}, 1), "{\n \"a\": 1\n}");
}

// Every JSON text attnprof writes goes through dump_json: a plain .dump( anywhere in src/ (but the
// one inside dump_json) would bring type_error.316 back for the next name from an untrusted trace.
TEST(JsonDump, NoOtherDumpInTheSources) {
  namespace fs = std::filesystem;
  const fs::path src = fs::path(ATTNPROF_SOURCE_DIR) / "src";
  ASSERT_TRUE(fs::is_directory(src)) << src;
  std::vector<std::string> found;
  std::size_t files = 0;
  for (const auto& entry : fs::recursive_directory_iterator(src)) {
    const std::string ext = entry.path().extension().string();
    if (!entry.is_regular_file() || (ext != ".cpp" && ext != ".h" && ext != ".cu" && ext != ".cuh")) continue;
    ++files;
    if (entry.path().filename() == "json_dump.h") continue;
    std::ifstream in(entry.path());
    std::string line;
    for (int number = 1; std::getline(in, line); ++number) {
      if (line.find(".dump(") != std::string::npos || line.find("->dump(") != std::string::npos)
        found.push_back(fs::relative(entry.path(), src).string() + ":" + std::to_string(number) + ": " + line);
    }
  }
  EXPECT_GT(files, 100u);  // the walk saw the tree
  std::ostringstream list;
  for (const std::string& f : found) list << f << "\n";
  EXPECT_TRUE(found.empty()) << "use dump_json (core/json_dump.h) instead:\n" << list.str();
}

}  // namespace
}  // namespace attnprof
