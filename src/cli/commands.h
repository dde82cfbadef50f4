#pragma once
// Each subcommand registers itself on the app and returns the function that runs it.
#include <CLI/CLI.hpp>

#include <functional>

namespace attnprof::cli {

using Command = std::function<int()>;  // returns the exit code

Command add_run(CLI::App& app);
Command add_compare(CLI::App& app);
Command add_devices(CLI::App& app);
Command add_inspect(CLI::App& app);
Command add_sweep(CLI::App& app);
Command add_report(CLI::App& app);

}  // namespace attnprof::cli
