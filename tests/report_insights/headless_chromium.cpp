#include "report_insights/headless_chromium.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "cli/cli_runner.h"

namespace attnprof::testing {
namespace {

namespace fs = std::filesystem;

std::string run_capture(const std::string& command) {
  std::string out;
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) return out;
  char buffer[65536];
  std::size_t n;
  while ((n = fread(buffer, 1, sizeof buffer, pipe)) > 0) out.append(buffer, n);
  pclose(pipe);
  return out;
}

// Runs Chromium on `page` with `what` (--dump-dom, --screenshot=...) in a profile of its own,
// removed afterwards; stderr is dropped (Chromium logs its sandbox and GPU setup there).
std::string run_chromium(const std::string& chromium, const std::string& what, const std::string& page) {
  const std::string profile = make_temp_dir();
  const std::string out = run_capture(fmt::format(
      "timeout 60 {} --headless --no-sandbox --disable-gpu --disable-quic --no-first-run "
      "--disable-background-networking --disable-component-update --disable-sync --user-data-dir={} {} {} 2>/dev/null",
      shell_quote(chromium), shell_quote(profile), what, shell_quote("file://" + fs::absolute(page).string())));
  fs::remove_all(profile);
  return out;
}

}  // namespace

std::string find_chromium() {
  if (const char* exe = std::getenv("ATTNPROF_CHROMIUM")) return exe;
  for (const char* candidate : {"/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"}) {
    if (access(candidate, X_OK) == 0) return candidate;
  }
  return {};
}

std::string chromium_dom(const std::string& chromium, const std::string& page) {
  return run_chromium(chromium, "--dump-dom", page);
}

void chromium_screenshot(const std::string& chromium, const std::string& page, const std::string& png, int height) {
  run_chromium(chromium, fmt::format("--hide-scrollbars --window-size=1280,{} --screenshot={}", height, shell_quote(png)),
               page);
}

}  // namespace attnprof::testing
