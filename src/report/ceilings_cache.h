#pragma once
// The machine's ceilings, measured once and kept in a file, so that every later run's %peak is
// measured against the same yardstick: $XDG_CACHE_HOME/attnprof/ (or ~/.cache/attnprof/)
// ceilings-<device>-<model>-<threads>t.json, one file per CPU/GPU model and thread count,
// holding the measurement's date and each ceiling's median, min and max over its runs. A file is
// checked field by field before it is trusted; a corrupt or foreign one is measured again.
#include "report/ceilings.h"

#include <functional>
#include <optional>
#include <string>

namespace attnprof::report {

// $XDG_CACHE_HOME/attnprof, else $HOME/.cache/attnprof (each only when an absolute path, as the
// XDG spec asks); "" when neither is.
std::string ceilings_cache_dir();
// DIR/ceilings-<device>-<model>-<threads>t.json, the model's characters outside [A-Za-z0-9.-]
// written as '_' (the file itself names the model exactly; a file for another model is refused).
std::string ceilings_cache_path(const std::string& dir, Device device, const std::string& model, int threads);

// The cache file's text for `c` (its model and threads are the key it is filed under).
std::string ceilings_cache_text(const Ceilings& c);
// The ceilings a cache file's text holds when every field is present, typed and in range and the
// key matches; else nullopt, with `problem` saying what was wrong.
std::optional<Ceilings> parse_ceilings_cache(const std::string& text, Device device, const std::string& model,
                                             int threads, std::string& problem);

// The cached ceilings for this key when the cache holds valid ones and `remeasure` is false; else
// measure()'s, written to the cache atomically (on `remeasure`, the files of the same model for
// other thread counts are removed, to be measured again when next needed). One line on stderr
// for each event: a measurement starting, a cache file that is not usable (and why), a cache
// that cannot be written.
Ceilings cached_or_measured(Device device, const std::string& model, int threads, bool remeasure,
                            const std::function<Ceilings()>& measure);

// Now, in UTC: "2026-12-01T14:50:03Z".
std::string utc_now_text();

}  // namespace attnprof::report
