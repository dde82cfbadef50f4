#pragma once
// Parses the .txt tables torch.profiler printed beside the anchor traces (key_averages().table()).
#include <cstdint>
#include <fstream>
#include <regex>
#include <string>
#include <vector>

namespace attnprof::testing {

struct TorchRow {
  std::string name;
  double self_cpu_us = 0, cpu_total_us = 0, self_cuda_us = 0, cuda_total_us = 0, self_cuda_pct = 0;
  long calls = 0;
};

struct TorchTable {
  std::vector<TorchRow> rows;
  double self_cpu_total_us = 0, self_cuda_total_us = 0;
};

// "85.455us", "1.254ms", "2.000s" -> µs
inline double torch_time_us(const std::string& s) {
  if (s.size() > 2 && s.substr(s.size() - 2) == "us") return std::stod(s.substr(0, s.size() - 2));
  if (s.size() > 2 && s.substr(s.size() - 2) == "ms") return std::stod(s.substr(0, s.size() - 2)) * 1e3;
  return std::stod(s.substr(0, s.size() - 1)) * 1e6;
}

inline TorchTable read_torch_table(const std::string& path) {
  TorchTable t;
  std::ifstream in(path);
  std::string line;
  std::regex total(R"(Self (CPU|CUDA) time total: (\S+))");
  std::size_t name_width = 55;  // torch's default max_name_column_width
  while (std::getline(in, line)) {
    std::smatch m;
    if (std::regex_search(line, m, total)) {
      (m[1] == "CPU" ? t.self_cpu_total_us : t.self_cuda_total_us) = torch_time_us(m[2]);
      continue;
    }
    if (line.find("Self CPU %") != std::string::npos) {
      name_width = line.find("Name") + 4;  // the header's "Name" ends the name column
      continue;
    }
    if (line.empty() || line[0] == '-' || line.size() < name_width) continue;
    // The name is right-aligned in the first name_width columns; the 10 value columns follow.
    std::string name = line.substr(0, name_width);
    name.erase(0, name.find_first_not_of(' '));
    std::vector<std::string> cells;
    std::string rest = line.substr(name_width);
    std::size_t i = 0;
    while (i < rest.size()) {
      while (i < rest.size() && rest[i] == ' ') ++i;
      std::size_t b = i;
      while (i < rest.size() && rest[i] != ' ') ++i;
      if (i > b) cells.push_back(rest.substr(b, i - b));
    }
    if (cells.size() != 10) continue;
    TorchRow r;
    r.name = name;
    r.self_cpu_us = torch_time_us(cells[1]);
    r.cpu_total_us = torch_time_us(cells[3]);
    r.self_cuda_us = torch_time_us(cells[5]);
    r.self_cuda_pct = std::stod(cells[6]);
    r.cuda_total_us = torch_time_us(cells[7]);
    r.calls = std::stol(cells[9]);
    t.rows.push_back(r);
  }
  return t;
}

}  // namespace attnprof::testing
