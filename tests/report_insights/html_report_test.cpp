// The HTML report from PyTorch's own traces (with the anchors' numbers) and a sweep: checked as
// text (self-contained, escaped) and rendered by headless Chromium, whose DOM must hold the
// glance table and non-empty SVG timelines and plots.
#include "report/html_report.h"

#include <attnprof/error.h>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "core/atomic_file.h"
#include "report/glance.h"
#include "report/results.h"
#include "report/sweep.h"
#include "report_insights/headless_chromium.h"
#include "trace/reader.h"

namespace attnprof::report {
namespace {

namespace fs = std::filesystem;

std::string source_dir() {
  const char* dir = std::getenv("ATTNPROF_SOURCE_DIR");
  return dir ? dir : ATTNPROF_TEST_SOURCE_DIR;
}

// One of the anchors' H200 rows, with PyTorch's trace of that run.
RunResult anchor_result(const std::string& variant, const std::string& summary, double ms, double cpu_us,
                        double peak_mib, double rel_err) {
  RunResult r;
  r.variant = variant;
  r.summary = summary;
  r.spec.device = Device::cuda;
  r.median_ns = ms * 1e6;
  r.cpu_ns = cpu_us * 1e3;
  r.peak_extra_bytes = static_cast<std::int64_t>(peak_mib * 1024 * 1024);
  r.rel_err = rel_err;
  r.flops = 4.0 * 8 * 16 * 1024 * 1024 * 64 / 2;
  r.tflops = r.flops / r.median_ns / 1e3;
  r.trace_path = "tests/data/pytorch-traces/8_16_1024_64_" + variant + ".json.gz";
  r.trace = trace::read_trace_file(source_dir() + "/" + r.trace_path);
  TraceWork work = collect_forwards(*r.trace);
  r.kernels_per_forward = work.kernels_per_forward();
  r.memcpy_per_forward = work.per_forward(KernelClass::memcpy);
  r.memset_per_forward = work.per_forward(KernelClass::memset);
  return r;
}

Ceilings h200() {
  Ceilings c;
  c.device = Device::cuda;
  c.device_name = "NVIDIA H200 (the anchors' measured ceilings)";
  c.matmul_tflops = 807;
  c.matmul_what = "bf16 8192\u00b3 matmul";
  c.copy_gbps = 4219;
  c.copy_what = "device-to-device copy, read + write";
  return c;
}

ReportInputs sample_inputs() {
  std::vector<RunResult> results = {
      anchor_result("naive", "matmul \u2192 mul \u2192 masked_fill (out of place) \u2192 softmax \u2192 matmul", 1.123, 315,
                    528.0, 3.6e-3),
      anchor_result("math", "fp32 upcast, mask rebuilt, fp32 GEMMs, NaN-safe softmax", 2.804, 695, 1284.1, 1.6e-3),
      anchor_result("flash", "FlashAttention-2 fused kernel <one launch>", 0.147, 134, 16.5, 2.0e-3)};
  std::vector<GlanceRow> rows;
  for (const auto& r : results) rows.push_back(glance_row(r, h200().matmul_tflops));
  rows.push_back(refused_row("cudnn", "cuDNN fused SDPA", "cuDNN was not built in (needs the CUDA toolkit's cuDNN 9)"));

  // A sweep over S: time ∝ S² (S^1 for the fused kernel's memory).
  std::vector<SweepRecord> sweep;
  AttentionSpec base;
  base.device = Device::cuda;
  for (std::int64_t s : {512, 1024, 2048, 4096}) {
    for (const char* v : {"naive", "flash"}) {
      SweepPoint p{base, v};
      p.spec.seq_q = p.spec.seq_k = s;
      RunResult r;
      const double scale = static_cast<double>(s) / 1024;
      r.median_ns = (std::string(v) == "naive" ? 1.123e6 : 0.147e6) * scale * scale;
      r.tflops = 4.0 * 8 * 16 * s * s * 64 / 2 / r.median_ns / 1e3;
      r.peak_extra_bytes = static_cast<std::int64_t>((std::string(v) == "naive" ? 528.0 * scale * scale : 16.5 * scale) *
                                                     1024 * 1024);
      r.kernels_per_forward = std::string(v) == "naive" ? 5 : 1;
      sweep.push_back(record_from_result(p, r, h200()));
    }
  }
  SweepPoint big{base, "naive"};
  big.spec.seq_q = big.spec.seq_k = 8192;
  sweep.push_back(record_not_run(big, "skipped", "needs 33.0 GiB (inputs, output and workspace), 20.0 GiB free"));

  ReportInputs in;
  in.compare = compare_json(rows, results, h200());
  in.sweep = sweep_json(sweep, h200());
  in.title = "attnprof report: PyTorch's traces on the H200 (anchors)";
  return in;
}

int count(const std::string& haystack, const std::string& needle) {
  int n = 0;
  for (std::size_t at = haystack.find(needle); at != std::string::npos; at = haystack.find(needle, at + 1)) ++n;
  return n;
}

TEST(HtmlReport, SelfContainedAndEscaped) {
  std::string html = render_html_report(sample_inputs());
  EXPECT_EQ(html.find("http"), std::string::npos);  // no URL of any kind, not even an SVG namespace
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("<link"), std::string::npos);
  EXPECT_EQ(html.find("url("), std::string::npos);
  EXPECT_EQ(html.find("@import"), std::string::npos);
  EXPECT_NE(html.find("FlashAttention-2 fused kernel &lt;one launch&gt;"), std::string::npos);
  EXPECT_EQ(count(html, "<table class=\"glance\">"), 1);
  EXPECT_EQ(count(html, "<svg class=\"timeline\""), 3);
  EXPECT_EQ(count(html, "<svg class=\"plot\""), 3);  // time and memory against S, the roofline
  EXPECT_NE(html.find("<code>hidden_copy</code>"), std::string::npos);
  EXPECT_NE(html.find("<code>low_occupancy_by_design</code>"), std::string::npos);
  EXPECT_NE(html.find("naive S=8192 D=64: skipped"), std::string::npos);
  EXPECT_NE(html.find("refused: cuDNN was not built in"), std::string::npos);
}

// A compare of the backward pass: its rows say per backward, and the gradients' error has a column
// (a NaN one reads NaN); a forward compare has neither.
TEST(HtmlReport, BackwardCompareCountsBackwardsAndShowsGradientError) {
  std::vector<RunResult> results = {
      anchor_result("naive", "naive", 1.123, 315, 528.0, 3.6e-3),
      anchor_result("flash", "flash", 0.147, 134, 16.5, 2.0e-3)};
  results[0].pass = results[1].pass = Pass::backward;
  results[0].grad_rel_err = 4.2e-3;
  results[1].grad_rel_err = std::nan("");
  results[0].time.count = results[1].time.count = 10;
  std::vector<GlanceRow> rows;
  for (const auto& r : results) rows.push_back(glance_row(r, h200().matmul_tflops));
  rows.push_back(refused_row("cudnn", "cuDNN fused SDPA", "no backward"));
  ReportInputs in;
  in.compare = compare_json(rows, results, h200());
  const std::string html = render_html_report(in);
  EXPECT_NE(html.find("<th>kernels / bwd</th>"), std::string::npos);
  EXPECT_NE(html.find("<th>gradient error vs fp64</th>"), std::string::npos);
  EXPECT_NE(html.find(">4.2e-03</td>"), std::string::npos);
  EXPECT_NE(html.find(">NaN</td>"), std::string::npos);
  EXPECT_NE(html.find("10 backwards)"), std::string::npos);
  EXPECT_NE(html.find("colspan=\"11\">refused: no backward"), std::string::npos);
  const std::string forward = render_html_report(sample_inputs());
  EXPECT_EQ(forward.find("gradient error"), std::string::npos);
  EXPECT_NE(forward.find("<th>kernels / fwd</th>"), std::string::npos);
}

TEST(HtmlReport, HeaderNamesShapeDtypeDeviceDateAndVersion) {
  std::string html = render_html_report(sample_inputs());
  std::smatch header;
  ASSERT_TRUE(std::regex_search(html, header, std::regex("<table class=\"header\">(.*?)</table>")));
  const std::string rows = header[1];
  EXPECT_NE(rows.find("<tr><th>shape</th><td>B=8 H=16 S=1024 D=64</td></tr>"), std::string::npos) << rows;
  EXPECT_NE(rows.find("<tr><th>sweep</th><td>B=8 H=16 S=512\u20268192 D=64</td></tr>"), std::string::npos) << rows;
  EXPECT_NE(rows.find("<tr><th>dtype</th><td>bf16</td></tr>"), std::string::npos) << rows;
  EXPECT_NE(rows.find("<tr><th>mask</th><td>causal, top-left</td></tr>"), std::string::npos) << rows;
  EXPECT_NE(rows.find("<tr><th>device</th><td>NVIDIA H200 (the anchors&#39; measured ceilings)</td></tr>"),
            std::string::npos)
      << rows;
  // Inputs built in memory have no file date; read_report_inputs takes the files' (ReadsInputsFromADirectory).
  EXPECT_NE(rows.find("<tr><th>measured</th><td>not recorded</td></tr>"), std::string::npos) << rows;
  EXPECT_TRUE(std::regex_search(rows, std::regex("<tr><th>report by</th><td>attnprof [0-9]+\\.[0-9]+\\.[0-9]+</td></tr>")))
      << rows;
}

TEST(HtmlReport, EachVariantOneColourOnEveryPlot) {
  // Every mark that names its variant (table swatch, timeline heading, lines, points, legends)
  // carries the variant's palette colour: naive red, flash blue, math brown.
  const std::string html = render_html_report(sample_inputs());
  const std::regex mark("data-variant=\"([a-z]+)\"[^>]*?(?:fill|stroke|background)[=:]\\s*\"?(#[0-9a-f]{6})");
  std::map<std::string, std::set<std::string>> colours;
  std::map<std::string, int> marks;
  for (auto it = std::sregex_iterator(html.begin(), html.end(), mark); it != std::sregex_iterator(); ++it) {
    colours[(*it)[1]].insert((*it)[2]);
    ++marks[(*it)[1]];
  }
  EXPECT_EQ(colours["naive"], (std::set<std::string>{"#d62728"}));
  EXPECT_EQ(colours["flash"], (std::set<std::string>{"#1f77b4"}));
  EXPECT_EQ(colours["math"], (std::set<std::string>{"#8c564b"}));
  // naive and flash: 2 swatches + 4 points, a line and a legend line on each of the 2 sweep
  // plots + a roofline point and its legend; math is not in the sweep: 2 swatches + 2 roofline marks.
  EXPECT_EQ(marks["naive"], 2 + 2 * (4 + 1 + 1) + 2);
  EXPECT_EQ(marks["flash"], 2 + 2 * (4 + 1 + 1) + 2);
  EXPECT_EQ(marks["math"], 4);
}

TEST(HtmlReport, ReadsInputsFromADirectory) {
  fs::path dir = fs::temp_directory_path() / fmt::format("attnprof_report_inputs_{}", getpid());
  fs::remove_all(dir);
  fs::create_directories(dir);
  try {
    read_report_inputs(dir.string());
    FAIL() << "no UsageError for an empty directory";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("holds no compare or sweep results"), std::string::npos);
  }
  EXPECT_THROW(read_report_inputs((dir / "missing").string()), UsageError);
  write_file_atomically((dir / "sweep.json").string(), "{ not json");
  EXPECT_THROW(read_report_inputs(dir.string()), Error);
  ReportInputs sample = sample_inputs();
  write_file_atomically((dir / "sweep.json").string(), sample.sweep->dump());
  write_file_atomically((dir / "compare.json").string(), sample.compare->dump());
  // `measured` is the later of the two files' modification times, in UTC to the minute.
  using namespace std::chrono;
  fs::last_write_time(dir / "compare.json", file_clock::from_sys(sys_days{2026y / 3 / 14} + 9h + 26min + 53s));
  fs::last_write_time(dir / "sweep.json", file_clock::from_sys(sys_days{2026y / 3 / 14} + 8h + 59min + 0s));
  ReportInputs back = read_report_inputs(dir.string());
  ASSERT_TRUE(back.compare && back.sweep);
  EXPECT_EQ((*back.compare)["rows"].size(), 4u);
  EXPECT_EQ(back.measured, "2026-03-14 09:26 UTC");
  fs::remove_all(dir);
}

// Every <svg class="KIND" ...>...</svg> in the DOM Chromium built.
std::vector<std::string> svgs(const std::string& dom, const std::string& kind) {
  std::vector<std::string> out;
  const std::string open = "<svg class=\"" + kind + "\"";
  for (std::size_t at = dom.find(open); at != std::string::npos; at = dom.find(open, at + 1)) {
    std::size_t end = dom.find("</svg>", at);
    out.push_back(dom.substr(at, end == std::string::npos ? std::string::npos : end - at));
  }
  return out;
}

TEST(HtmlReport, HeadlessChromiumRendersTheTableAndPlots) {
  const std::string chromium = testing::find_chromium();
  ASSERT_FALSE(chromium.empty()) << "headless Chromium not found: install Debian's `chromium` (scripts/install-deps.sh) "
                                    "or set ATTNPROF_CHROMIUM";
  fs::path dir = fs::temp_directory_path() / fmt::format("attnprof_report_browser_{}", getpid());
  fs::remove_all(dir);
  fs::create_directories(dir);
  const fs::path page = dir / "report.html";
  write_file_atomically(page.string(), render_html_report(sample_inputs()));
  const std::string dom = testing::chromium_dom(chromium, page.string());
  ASSERT_NE(dom.find("</html>"), std::string::npos) << "Chromium printed no DOM";

  // The glance table: a header and one row per variant (three measured, one refused).
  std::size_t body = dom.find("<tbody>", dom.find("id=\"glance\""));
  ASSERT_NE(body, std::string::npos);
  std::string rows = dom.substr(body, dom.find("</tbody>", body) - body);
  EXPECT_EQ(count(rows, "<tr"), 4);
  EXPECT_NE(rows.find(">naive<"), std::string::npos);
  EXPECT_NE(rows.find(">flash<"), std::string::npos);

  auto timelines = svgs(dom, "timeline");
  ASSERT_EQ(timelines.size(), 3u);
  for (const auto& svg : timelines) EXPECT_GE(count(svg, "<rect"), 2) << svg.substr(0, 200);
  EXPECT_NE(timelines[2].find("pytorch_flash::flash_fwd_kernel"), std::string::npos);
  auto plots = svgs(dom, "plot");
  ASSERT_EQ(plots.size(), 3u);
  for (const auto& svg : plots) {
    EXPECT_GE(count(svg, "<circle"), 2) << svg.substr(0, 200);
    std::smatch points;
    ASSERT_TRUE(std::regex_search(svg, points, std::regex("points=\"([0-9., ]+)\""))) << svg.substr(0, 200);
    EXPECT_GT(points[1].str().size(), 10u);
  }

  // A screenshot: a real PNG, well above the size of a blank page.
  const fs::path shot = std::getenv("ATTNPROF_REPORT_SCREENSHOT") ? fs::path(std::getenv("ATTNPROF_REPORT_SCREENSHOT"))
                                                                  : dir / "report.png";
  testing::chromium_screenshot(chromium, page.string(), shot.string(), 2400);
  ASSERT_TRUE(fs::exists(shot));
  std::ifstream png(shot, std::ios::binary);
  char signature[8] = {};
  png.read(signature, 8);
  EXPECT_EQ(std::string(signature + 1, 3), "PNG");
  EXPECT_GT(fs::file_size(shot), 40000u);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace attnprof::report
