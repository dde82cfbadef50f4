// attnprof: what attention costs, and why.
#include <attnprof/error.h>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cstdio>
#include <map>
#include <new>
#include <string>

#include "cli/commands.h"
#include "core/atomic_file.h"
#include "core/utf8.h"

int main(int argc, char** argv) {
  using namespace attnprof;
  CLI::App app{"attnprof: profile attention variants on the CPU and NVIDIA GPUs, and explain the traces"};
  app.require_subcommand(1);
  std::map<CLI::App*, cli::Command> commands;
  auto add = [&](cli::Command (*adder)(CLI::App&)) {
    std::size_t before = app.get_subcommands({}).size();
    cli::Command command = adder(app);
    commands[app.get_subcommands({})[before]] = std::move(command);
  };
  add(cli::add_run);
  add(cli::add_compare);
  add(cli::add_devices);
  add(cli::add_inspect);
  add(cli::add_sweep);
  add(cli::add_report);

  install_signal_cleanup();
  if (argc > 1 && argv[1][0] != '-') {
    std::string names;
    bool known = false;
    for (const CLI::App* sub : app.get_subcommands({})) {
      known = known || sub->get_name() == argv[1];
      names += (names.empty() ? "" : ", ") + sub->get_name();
    }
    if (!known) {
      std::fprintf(stderr, "attnprof: unknown command '%s'; allowed: %s\n", printable(argv[1]).c_str(), names.c_str());
      return 2;
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // One line naming what was wrong; CLI11's own text names the flag.
    std::fprintf(stderr, "attnprof: %s (see attnprof --help)\n", printable(e.what()).c_str());
    return 2;
  }
  for (auto& [sub, command] : commands) {
    if (!sub->parsed()) continue;
    try {
      return command();
    } catch (const UsageError& e) {
      std::fprintf(stderr, "attnprof: %s\n", printable(e.what()).c_str());
      return 2;
    } catch (const std::bad_alloc&) {
      std::fprintf(stderr, "attnprof: out of memory\n");
      return 1;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "attnprof: error: %s\n", printable(e.what()).c_str());
      return 1;
    }
  }
  return 2;
}
