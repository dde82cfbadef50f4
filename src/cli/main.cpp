// attnprof: what attention costs, and why.
#include <attnprof/error.h>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cstdio>
#include <map>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/help_format.h"
#include "cli/round_process.h"
#include "cli/parameter_flags.h"
#include "core/atomic_file.h"
#include "core/did_you_mean.h"
#include "core/utf8.h"

int main(int argc, char** argv) {
  using namespace attnprof;
  CLI::App app{"attnprof: profile attention variants on the CPU and NVIDIA GPUs, and explain the traces"};
  app.name("attnprof");  // the usage line's name, whatever path ran the binary
  app.formatter(std::make_shared<cli::HelpFormatter>());  // before the subcommands, which copy it
  app.set_version_flag("--version", "attnprof " ATTNPROF_VERSION, "print the version and exit");
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
  cli::remember_command_line(argc, argv);  // compare's later rounds run it again, each in a process
  // Bare `attnprof` and `attnprof help [COMMAND]` print the help.
  if (argc == 1 || (argc <= 3 && std::string(argv[1]) == "help")) {
    const CLI::App* about = &app;
    if (argc == 3) {
      about = nullptr;
      for (const CLI::App* sub : app.get_subcommands({})) {
        if (sub->get_name() == argv[2]) about = sub;
      }
      if (about == nullptr) std::fprintf(stderr, "attnprof: help: unknown command '%s'\n", argv[2]);
    }
    if (about == nullptr) return 2;
    std::fputs(about->help(about == &app ? "" : "attnprof").c_str(), stdout);
    return 0;
  }
  if (argv[1][0] != '-') {
    std::string names;
    std::vector<std::string> candidates{"help"};
    bool known = false;
    for (const CLI::App* sub : app.get_subcommands({})) {
      known = known || sub->get_name() == argv[1];
      names += (names.empty() ? "" : ", ") + sub->get_name();
      candidates.push_back(sub->get_name());
    }
    if (!known) {
      std::fprintf(stderr, "attnprof: unknown command '%s'%s; allowed: %s, help\n", printable(argv[1]).c_str(),
                   did_you_mean(argv[1], candidates).c_str(), names.c_str());
      return 2;
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // One line naming what was wrong; CLI11's own text names the flag.
    std::fprintf(stderr, "attnprof: %s (see attnprof --help)\n", printable(e.what()).c_str());
    return 2;
  }
  // The arguments the user typed (not the flags themselves): kept as they are in an error line.
  std::vector<std::string> typed;
  for (int i = 2; i < argc; ++i)
    if (argv[i][0] != '-' || argv[i][1] == '\0') typed.emplace_back(argv[i]);
  for (auto& [sub, command] : commands) {
    if (!sub->parsed()) continue;
    const cli::FlagTable table = sub->get_name() == "inspect" || sub->get_name() == "report" ? cli::FlagTable::inspect
                                                                                              : cli::FlagTable::run;
    auto flags_named = [&](const char* what) { return printable(cli::name_flags(what, table, typed)); };
    try {
      return command();
    } catch (const UsageError& e) {  // the library names parameters; the line names flags
      std::fprintf(stderr, "attnprof: %s\n", flags_named(e.what()).c_str());
      return 2;
    } catch (const std::bad_alloc&) {
      std::fprintf(stderr, "attnprof: out of memory\n");
      return 1;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "attnprof: error: %s\n", flags_named(e.what()).c_str());
      return 1;
    }
  }
  return 2;
}
