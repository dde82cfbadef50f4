// The report of a real `attnprof compare` and `attnprof sweep` (CPU, tiny shape) as headless
// Chromium lays it out. A copy of the page gets a script that reads what Chromium computed (the
// colour of every mark that names a variant, the box of every SVG text and of its SVG, the drawn
// width of every timeline's span) and writes it into the DOM as JSON, which --dump-dom prints.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <stdexcept>
#include <string>

#include "cli/cli_runner.h"
#include "report_insights/headless_chromium.h"

namespace attnprof::testing {
namespace {

namespace fs = std::filesystem;

// Runs in the page after everything above it is laid out; its findings go into <pre id="probe">.
constexpr const char* kProbe = R"(<script>
(() => {
  const out = {marks: [], texts: [], spans: [], ns_per_px: null};
  for (const el of document.querySelectorAll('[data-variant]')) {
    const style = getComputedStyle(el);
    const tag = el.tagName.toLowerCase();
    const colour = tag === 'i' ? style.backgroundColor
                 : (tag === 'line' || tag === 'polyline') ? style.stroke : style.fill;
    out.marks.push({variant: el.dataset.variant, where: el.closest('[id]').id, tag: tag, colour: colour});
  }
  for (const svg of document.querySelectorAll('svg')) {
    const box = svg.getBoundingClientRect();
    for (const text of svg.querySelectorAll('text')) {
      const r = text.getBoundingClientRect();
      // A timeline slice's name ends inside the slice (the <rect> before it in its <g>).
      const slice = text.previousElementSibling;
      const end = svg.classList.contains('timeline') && slice && slice.tagName === 'rect'
                ? slice.getBoundingClientRect().right : box.right;
      out.texts.push({where: svg.closest('[id]').id, text: text.textContent, inside:
        r.left >= box.left - 0.5 && r.right <= Math.min(box.right, end) + 0.5 && r.top >= box.top - 0.5 &&
        r.bottom <= box.bottom + 0.5,
        box: [r.left - box.left, r.right - box.left, end - box.left, box.width]});
    }
  }
  for (const step of document.querySelectorAll('[data-timeline]')) {
    out.spans.push({variant: step.dataset.timeline,
                    width: step.querySelector('rect.span').getBoundingClientRect().width});
  }
  const scale = document.getElementById('time-scale');
  out.ns_per_px = scale ? Number(scale.dataset.nsPerPx) : null;
  const pre = document.createElement('pre');
  pre.id = 'probe';
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
})();
</script>
)";

std::string unescape_html(std::string text) {
  for (auto [entity, c] : {std::pair{"&lt;", "<"}, {"&gt;", ">"}, {"&quot;", "\""}, {"&amp;", "&"}}) {
    for (std::size_t at = text.find(entity); at != std::string::npos; at = text.find(entity, at + 1)) {
      text.replace(at, std::string(entity).size(), c);
    }
  }
  return text;
}

// "#d62728" as getComputedStyle writes it: "rgb(214, 39, 40)".
std::string css_rgb(const std::string& hex) {
  const auto channel = [&](int at) { return std::stoi(hex.substr(at, 2), nullptr, 16); };
  return "rgb(" + std::to_string(channel(1)) + ", " + std::to_string(channel(3)) + ", " + std::to_string(channel(5)) + ")";
}

// The probe's findings on DIR/report.html, which `attnprof report DIR` has written.
nlohmann::json probe_report(const std::string& chromium, const fs::path& dir) {
  std::string page = read_whole_file((dir / "report.html").string());
  const std::size_t body_end = page.rfind("</body>");
  if (body_end == std::string::npos) throw std::runtime_error("report.html has no </body>");
  page.insert(body_end, kProbe);
  const fs::path probe_page = dir / "probe.html";
  std::ofstream(probe_page, std::ios::binary) << page;
  const std::string dom = chromium_dom(chromium, probe_page.string());
  const std::string open = "<pre id=\"probe\">";
  const std::size_t start = dom.find(open);
  if (start == std::string::npos) throw std::runtime_error("Chromium printed no probe; DOM: " + dom.substr(0, 300));
  const std::size_t from = start + open.size();
  return nlohmann::json::parse(unescape_html(dom.substr(from, dom.find("</pre>", from) - from)));
}

const std::map<std::string, std::string> kPalette = {{"naive", "#d62728"}, {"inplace", "#ff7f0e"}, {"math", "#8c564b"},
                                                     {"fused", "#9467bd"}, {"efficient", "#2ca02c"}, {"flash", "#1f77b4"},
                                                     {"cudnn", "#17becf"}};

// Each of `variants` is drawn in `places` (ids of the page's parts) and nowhere else, always in its
// palette colour; every text of every SVG (legends, titles, tick labels, slice names) lies inside
// it, and a timeline slice's name inside its slice.
void expect_colours_and_texts_inside(const nlohmann::json& probe, const std::set<std::string>& variants,
                                     const std::set<std::string>& places) {
  std::map<std::string, std::set<std::string>> colours, where;
  for (const auto& mark : probe["marks"]) {
    colours[mark["variant"]].insert(mark["colour"].get<std::string>());
    where[mark["variant"]].insert(mark["where"].get<std::string>());
  }
  EXPECT_EQ(colours.size(), variants.size());
  for (const std::string& variant : variants) {
    ASSERT_TRUE(kPalette.count(variant)) << variant;
    EXPECT_EQ(colours[variant], std::set<std::string>{css_rgb(kPalette.at(variant))}) << variant;
    EXPECT_EQ(where[variant], places) << variant;
  }
  ASSERT_GT(probe["texts"].size(), 20u);
  for (const auto& text : probe["texts"]) EXPECT_TRUE(text["inside"].get<bool>()) << text.dump();
}

TEST(HtmlReportBrowser, OneColourPerVariantCommonTimeScaleLegendsInside) {
  const std::string chromium = find_chromium();
  if (chromium.empty()) GTEST_SKIP() << "headless Chromium not found (scripts/install-deps.sh installs Debian's `chromium`)";

  CliResult compare = run_cli({"compare", "--device", "cpu", "--batch", "1", "--heads", "2", "--seq", "64", "--threads",
                               "1", "--out", "{work}/rep"});
  ASSERT_EQ(compare.exit_code, 0) << compare.err;
  const fs::path dir = fs::path(compare.work_dir) / "rep";
  // Two head dims: the plots' legends read "efficient D=128".
  CliResult sweep = run_cli({"sweep", "--device", "cpu", "--batch", "1", "--heads", "2", "--seq", "64,128", "--head-dim",
                             "64,128", "--threads", "1", "--no-profile", "--out", dir.string()});
  ASSERT_EQ(sweep.exit_code, 0) << sweep.err;
  CliResult report = run_cli({"report", dir.string()});
  ASSERT_EQ(report.exit_code, 0) << report.err;

  // The variants that ran, and each one's step span, from the compare's results.
  const nlohmann::json results = nlohmann::json::parse(read_whole_file((dir / "compare_1_2_64_64_cpu_t1.json").string()));
  std::map<std::string, double> span_ns;
  std::set<std::string> variants;
  for (const auto& row : results["rows"]) {
    if (row.contains("refused")) continue;
    ASSERT_TRUE(row["timeline"].is_object()) << row["variant"];
    span_ns[row["variant"]] = row["timeline"]["span_ns"].get<double>();
    variants.insert(row["variant"].get<std::string>());
  }
  ASSERT_GE(variants.size(), 4u) << "fewer variants ran on the CPU than naive, inplace, math and flash";

  // One colour per variant, its palette's, wherever the variant is drawn: the table's swatch, the
  // timeline's heading, the two plots against S (lines, points, legend) and the roofline.
  const nlohmann::json probe = probe_report(chromium, dir);
  expect_colours_and_texts_inside(probe, variants, {"glance", "timelines", "plot-time", "plot-memory", "roofline"});

  // One time scale: each step is drawn span_ns / ns_per_px wide, the longest one 980 px.
  const double ns_per_px = probe["ns_per_px"].get<double>();
  double longest = 0;
  for (const auto& [variant, span] : span_ns) longest = std::max(longest, span);
  EXPECT_NEAR(ns_per_px, longest / 980, longest / 980 * 1e-5);
  ASSERT_EQ(probe["spans"].size(), span_ns.size());
  for (const auto& drawn : probe["spans"]) {
    const std::string variant = drawn["variant"];
    EXPECT_NEAR(drawn["width"].get<double>(), span_ns.at(variant) / ns_per_px, 0.5) << variant;
  }

  // A profiled sweep alone: the roofline's points are the sweep's (a point's bytes need its
  // kernel count), labelled "efficient D=128 S=128", the longest legend entry of the page.
  CliResult profiled = run_cli({"sweep", "--device", "cpu", "--batch", "1", "--heads", "2", "--seq", "128", "--head-dim",
                                "64,128", "--variants", "efficient,naive", "--threads", "1", "--out", "{work}/sw"});
  ASSERT_EQ(profiled.exit_code, 0) << profiled.err;
  const fs::path sweep_only = fs::path(profiled.work_dir) / "sw";
  CliResult sweep_report = run_cli({"report", sweep_only.string()});
  ASSERT_EQ(sweep_report.exit_code, 0) << sweep_report.err;
  const nlohmann::json sweep_probe = probe_report(chromium, sweep_only);
  expect_colours_and_texts_inside(sweep_probe, {"efficient", "naive"}, {"plot-time", "plot-memory", "roofline"});
  bool long_label = false;
  for (const auto& text : sweep_probe["texts"]) long_label |= text["text"] == "efficient D=128 S=128";
  EXPECT_TRUE(long_label);
  // Two head dims on the roofline: each variant's point and legend entry as a circle (D=64) and
  // a square (D=128), both in the variant's colour.
  std::map<std::string, std::multiset<std::string>> roofline_shapes;
  for (const auto& mark : sweep_probe["marks"]) {
    if (mark["where"] == "roofline") roofline_shapes[mark["variant"]].insert(mark["tag"].get<std::string>());
  }
  const std::multiset<std::string> two_of_each = {"circle", "circle", "rect", "rect"};
  EXPECT_EQ(roofline_shapes["efficient"], two_of_each);
  EXPECT_EQ(roofline_shapes["naive"], two_of_each);

  for (const auto& r : {compare, sweep, report, profiled, sweep_report}) fs::remove_all(r.work_dir);
}

}  // namespace
}  // namespace attnprof::testing
