// The CUDA backend is a module libattnprof opens on first need (src/run/cuda_module.cpp), and so is
// OpenBLAS (src/cpu/openblas.cpp); checked through the binary with the dynamic loader as the observer: LD_DEBUG=files makes ld.so print a
// "file=NAME" line on stderr for every library it maps, whoever asked for it.
#include <attnprof/tensor.h>
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "cli/cli_runner.h"

using namespace attnprof;
using namespace attnprof::testing;

namespace {

std::string source_dir() { return ATTNPROF_SOURCE_DIR; }

// The file names of the "file=NAME [ns];  needed by / dynamically loaded by" lines of LD_DEBUG=files.
std::set<std::string> mapped_libraries(const std::string& loader_log) {
  std::set<std::string> files;
  std::istringstream lines(loader_log);
  for (std::string line; std::getline(lines, line);) {
    auto at = line.find("file=");
    if (at == std::string::npos) continue;
    auto end = line.find_first_of(" \t", at);
    files.insert(std::filesystem::path(line.substr(at + 5, end - at - 5)).filename().string());
  }
  return files;
}

const char* const kCudaLibraries[] = {"libattnprof_cuda.so", "libcudart", "libcublasLt", "libcupti", "libcudnn"};

// The names among `files` that belong to the CUDA backend.
std::vector<std::string> cuda_libraries_in(const std::set<std::string>& files) {
  std::vector<std::string> found;
  for (const std::string& f : files)
    for (const char* cuda : kCudaLibraries)
      if (f.rfind(cuda, 0) == 0) found.push_back(f);
  return found;
}

std::string joined(const std::set<std::string>& files) {
  std::string all;
  for (const std::string& f : files) all += f + " ";
  return all;
}

}  // namespace

// --help, a CPU run and inspect map libattnprof but none of the CUDA backend's libraries. The
// observer is shown to work by libattnprof.so itself appearing, and (in a CUDA build) by
// DevicesOpensTheModule below seeing the CUDA libraries when a command does need them.
TEST(CudaModule, HelpCpuRunAndInspectMapNoCudaLibrary) {
  attnprof::testing::ScopedEnv env("LD_DEBUG", "files");
  const std::vector<std::vector<std::string>> commands = {
      {"--help"},
      {"run", "--device", "cpu", "--batch", "1", "--heads", "2", "--seq", "128"},
      {"inspect", source_dir() + "/tests/data/pytorch-traces/8_16_1024_64_naive.json.gz"}};
  for (const auto& args : commands) {
    CliResult r = run_cli(args);
    ASSERT_EQ(r.exit_code, 0) << args[0] << ": " << r.err.substr(r.err.size() > 2000 ? r.err.size() - 2000 : 0);
    std::set<std::string> files = mapped_libraries(r.err);
    EXPECT_TRUE(files.count("libattnprof.so")) << args[0] << " mapped: " << joined(files);
    EXPECT_EQ(cuda_libraries_in(files), std::vector<std::string>{}) << args[0] << " mapped: " << joined(files);
  }
}

// OpenBLAS is mapped by the commands that multiply matrices on the CPU and by no other: not by
// --help, not by inspect. The CPU run (naive: two batched GEMMs) is the observer's positive case.
TEST(OpenBlasOnDemand, HelpAndInspectMapNoOpenBlasACpuRunDoes) {
  attnprof::testing::ScopedEnv env("LD_DEBUG", "files");
  const std::vector<std::pair<std::vector<std::string>, bool>> commands = {
      {{"--help"}, false},
      {{"inspect", source_dir() + "/tests/data/pytorch-traces/8_16_1024_64_naive.json.gz"}, false},
      {{"run", "--device", "cpu", "--variant", "naive", "--batch", "1", "--heads", "2", "--seq", "128"}, true}};
  for (const auto& [args, maps_blas] : commands) {
    CliResult r = run_cli(args);
    ASSERT_EQ(r.exit_code, 0) << args[0] << ": " << r.err.substr(r.err.size() > 2000 ? r.err.size() - 2000 : 0);
    std::set<std::string> files = mapped_libraries(r.err);
    bool blas = false;
    for (const std::string& f : files) blas = blas || f.rfind("libopenblas", 0) == 0;
    EXPECT_EQ(blas, maps_blas) << args[0] << " mapped: " << joined(files);
  }
}

#if ATTNPROF_HAVE_CUDA

namespace {
// The libattnprof.so this test links: the one the binary loads, beside which the module lies.
std::filesystem::path libattnprof_path() {
  Dl_info info{};
  EXPECT_NE(dladdr(reinterpret_cast<void*>(&attnprof::device_name), &info), 0);
  return std::filesystem::canonical(info.dli_fname);
}
}  // namespace

// `devices` asks for the GPU, so it opens the module, by its absolute path beside libattnprof,
// and the module brings the CUDA libraries (with or without a GPU on this machine).
TEST(CudaModule, DevicesOpensTheModuleBesideLibattnprof) {
  attnprof::testing::ScopedEnv env("LD_DEBUG", "files");
  CliResult r = run_cli({"devices"});
  ASSERT_EQ(r.exit_code, 0) << r.err.substr(r.err.size() > 2000 ? r.err.size() - 2000 : 0);
  std::string module = (libattnprof_path().parent_path() / "libattnprof_cuda.so").string();
  EXPECT_NE(r.err.find("file=" + module + " "), std::string::npos) << "expected a dlopen of " << module;
  std::set<std::string> files = mapped_libraries(r.err);
  for (const char* cuda : {"libcudart", "libcublasLt", "libcupti", "libcudnn"}) {
    bool seen = false;
    for (const std::string& f : files) seen = seen || f.rfind(cuda, 0) == 0;
    EXPECT_TRUE(seen) << cuda << " not among " << joined(files);
  }
}

// A copy of libattnprof in a folder without the module (or with a broken one): --device cuda
// gets one line naming the module's path and the reason, exit 2, and nothing on stdout.
TEST(CudaModule, MissingOrBrokenModuleIsOneLine) {
  std::string dir = std::filesystem::canonical(make_temp_dir()).string();
  std::filesystem::copy_file(libattnprof_path(), dir + "/libattnprof.so");
  // the copy first; the rest of the path as it was (a carried prefix's libraries, oneDNN)
  const char* old_path = std::getenv("LD_LIBRARY_PATH");
  const std::string path = dir + (old_path && *old_path ? std::string(":") + old_path : std::string());
  attnprof::testing::ScopedEnv env("LD_LIBRARY_PATH", path.c_str());
  const std::vector<std::string> args = {"run", "--device", "cuda", "--batch", "1", "--heads", "2", "--seq", "128"};
  for (bool broken : {false, true}) {
    if (broken) std::ofstream(dir + "/libattnprof_cuda.so") << std::string(256, 'x');  // longer than an ELF header
    CliResult r = run_cli(args);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_NE(r.err.find("--device cuda: cannot load the CUDA backend " + dir + "/libattnprof_cuda.so: "),
              std::string::npos)
        << r.err;
    EXPECT_NE(r.err.find(broken ? "invalid ELF header" : "No such file or directory"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("allowed here: cpu"), std::string::npos) << r.err;
    EXPECT_TRUE(r.files.empty());
  }
  // The CPU does not need the module.
  CliResult cpu = run_cli({"run", "--device", "cpu", "--batch", "1", "--heads", "2", "--seq", "128"});
  EXPECT_EQ(cpu.exit_code, 0) << cpu.err;
  std::filesystem::remove_all(dir);
}

#endif
