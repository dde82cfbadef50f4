// OpenBLAS opened on first use (src/cpu/openblas.cpp): it starts no server thread of its own, leaves
// the environment as it found it, and still grows to more threads when asked (the sgemm ceiling).
#include "cpu/openblas.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

namespace {

// Threads of this process, counted by the kernel.
int thread_count() {
  int n = 0;
  for ([[maybe_unused]] const auto& task : std::filesystem::directory_iterator("/proc/self/task")) ++n;
  return n;
}

// Runs `check` in a child process (a clean slate: OpenBLAS not yet opened there, whatever this
// process did before) and returns its exit status; the child exits with the line number of the
// first failed check, 0 when all held.
int in_child(int (*check)()) {
  const pid_t pid = ::fork();
  if (pid == 0) ::_exit(check());
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

#define CHILD_CHECK(condition) \
  if (!(condition)) return __LINE__

// A pthreads OpenBLAS started by the loader would add (cores - 1) threads here; opened by
// cpu::openblas() it adds none, and OPENBLAS_NUM_THREADS is unset again afterwards.
// Whether a libopenblas is mapped into this process.
bool openblas_mapped() {
  std::ifstream maps("/proc/self/maps");
  for (std::string line; std::getline(maps, line);)
    if (line.find("libopenblas") != std::string::npos) return true;
  return false;
}

int opens_without_threads() {
  ::unsetenv("OPENBLAS_NUM_THREADS");
  CHILD_CHECK(!openblas_mapped());  // the child opens it here, not a parent's copy
  const int before = thread_count();
  const attnprof::cpu::OpenBlas& blas = attnprof::cpu::openblas();
  CHILD_CHECK(std::getenv("OPENBLAS_NUM_THREADS") == nullptr);
  if (blas.get_parallel() != 1) return 0;  // sequential or OpenMP build: no server threads at all
  CHILD_CHECK(thread_count() == before);
  CHILD_CHECK(blas.get_num_threads() == 1);
  // Asked for two, it runs two: one new server thread beside the caller.
  blas.set_num_threads(2);
  CHILD_CHECK(blas.get_num_threads() == 2);
  CHILD_CHECK(thread_count() == before + 1);
  return 0;
}

// The user's own setting is kept in the environment (attnprof still runs sgemm on one thread).
// Set but empty, which OpenBLAS reads as unset (every core): opened on one thread all the same,
// and the empty value is put back.
int treats_an_empty_setting_as_unset() {
  ::setenv("OPENBLAS_NUM_THREADS", "", 1);
  CHILD_CHECK(!openblas_mapped());
  const int before = thread_count();
  const attnprof::cpu::OpenBlas& blas = attnprof::cpu::openblas();
  const char* value = std::getenv("OPENBLAS_NUM_THREADS");
  CHILD_CHECK(value != nullptr && *value == '\0');
  CHILD_CHECK(blas.get_parallel() != 1 || thread_count() == before);
  return 0;
}

int keeps_the_users_setting() {
  ::setenv("OPENBLAS_NUM_THREADS", "3", 1);
  const attnprof::cpu::OpenBlas& blas = attnprof::cpu::openblas();
  const char* value = std::getenv("OPENBLAS_NUM_THREADS");
  CHILD_CHECK(value != nullptr && std::string(value) == "3");
  CHILD_CHECK(blas.get_parallel() != 1 || blas.get_num_threads() == 1);
  return 0;
}

}  // namespace

TEST(OpenBlas, OpensWithoutServerThreadsAndLeavesTheEnvironmentUnset) {
  if (std::thread::hardware_concurrency() < 2) {
    GTEST_SKIP() << "one core: a pthreads OpenBLAS starts no server thread here either way";
  }
  EXPECT_EQ(in_child(&opens_without_threads), 0) << "the check on that line of " << __FILE__ << " failed";
}

TEST(OpenBlas, TreatsAnEmptySettingAsUnset) {
  if (std::thread::hardware_concurrency() < 2) {
    GTEST_SKIP() << "one core: a pthreads OpenBLAS starts no server thread here either way";
  }
  EXPECT_EQ(in_child(&treats_an_empty_setting_as_unset), 0) << "the check on that line of " << __FILE__ << " failed";
}

TEST(OpenBlas, KeepsTheUsersOwnSetting) {
  EXPECT_EQ(in_child(&keeps_the_users_setting), 0) << "the check on that line of " << __FILE__ << " failed";
}
