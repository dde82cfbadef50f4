#pragma once
// The width tables are laid out for.

namespace attnprof::cli {

// COLUMNS when it holds a width of 20..10000; else the terminal's width (ioctl TIOCGWINSZ on
// stdout) when stdout is a terminal; else 100 (a pipe or a file).
int terminal_width();

}  // namespace attnprof::cli
