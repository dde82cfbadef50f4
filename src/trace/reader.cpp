#include "trace/reader.h"

#include <attnprof/error.h>
#include <fmt/format.h>

#include <climits>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <tuple>
#include <algorithm>
#include <unordered_map>

#include "core/utf8.h"
#include "trace/json_pull.h"
#include "trace/json_text.h"

namespace attnprof::trace {
namespace {

struct PendingArg {
  std::string key;
  std::string json;
};

// Parses "[a, b, c]" of integers.
bool parse_triple(const std::string& json, std::array<std::int64_t, 3>& out) {
  std::size_t i = 0;
  auto space = [&] {
    while (i < json.size() && (json[i] == ' ' || json[i] == '\n' || json[i] == '\t' || json[i] == '\r')) ++i;
  };
  space();
  if (i >= json.size() || json[i] != '[') return false;
  ++i;
  for (int k = 0; k < 3; ++k) {
    space();
    std::size_t b = i;
    while (i < json.size() && (json[i] == '-' || (json[i] >= '0' && json[i] <= '9'))) ++i;
    auto v = parse_integer(std::string_view(json).substr(b, i - b));
    if (!v) return false;
    out[k] = *v;
    space();
    if (i >= json.size() || json[i] != (k < 2 ? ',' : ']')) return false;
    ++i;
  }
  space();
  return i == json.size();
}

// An event's name as an error message shows it: control characters as visible escapes and
// invalid UTF-8 as U+FFFD (core/utf8's printable), so nothing from the file reaches the terminal
// raw; at most 80 code points.
std::string shown_name(const std::string& name) { return cut_to_columns(printable(name), 80, "..."); }

std::optional<double> parse_double(const std::string& json) {
  if (json.empty() || !(json[0] == '-' || (json[0] >= '0' && json[0] <= '9'))) return std::nullopt;
  char* end = nullptr;
  double v = std::strtod(json.c_str(), &end);
  if (end != json.c_str() + json.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

class Reader {
 public:
  Reader(ByteSource& source, const std::string& name, Trace& out, const std::function<void(Event&)>& on_event,
         const bool& keep_flows, const ReadLimits& limits)
      : p_(source, name, limits), out_(out), on_event_(on_event), keep_flows_(keep_flows) {}

  void read() {
    char c = p_.peek();
    if (p_.at_end()) p_.fail("no JSON in the file");
    if (c == '[') {
      // The Trace Event Format's array form: just the events.
      events();
      saw_events_ = true;
    } else if (c == '{') {
      top_level();
    } else {
      p_.fail(fmt::format("not JSON: the file starts with {}",
                          static_cast<unsigned char>(c) >= 0x20 && static_cast<unsigned char>(c) < 0x7f
                              ? fmt::format("'{}'", c)
                              : fmt::format("byte 0x{:02x}", static_cast<unsigned char>(c))));
    }
    if (!p_.at_end()) p_.fail("not valid JSON: unexpected data after the end of the document");
    if (!saw_events_) p_.fail("not a Kineto/Chrome trace: no \"traceEvents\" array");
    pair_flows();
  }

 private:
  void top_level() {
    p_.expect('{', "at the start of the document");
    if (p_.consume_if('}')) return;
    do {
      p_.read_string(key_);
      p_.expect(':', "after a key");
      if (key_ == "traceEvents") {
        if (p_.peek() != '[') p_.fail("not a Kineto/Chrome trace: \"traceEvents\" is not an array");
        events();
        saw_events_ = true;
      } else if (key_ == "schemaVersion") {
        out_.schema_version = integer("schemaVersion");
      } else if (key_ == "baseTimeNanoseconds") {
        out_.base_time_ns = integer("baseTimeNanoseconds");
      } else if (key_ == "displayTimeUnit") {
        string_value("displayTimeUnit", out_.display_time_unit);
      } else if (key_ == "traceName") {
        string_value("traceName", out_.trace_name);
      } else if (key_ == "deviceProperties" && p_.peek() == '[') {
        device_properties();
      } else if (key_ == "distributedInfo" && p_.peek() == '{') {
        distributed_info();
      } else if (key_ == "droppedRecords") {
        out_.dropped_records = integer("droppedRecords");
      } else {
        RawArg raw;
        raw.key = key_;
        p_.capture(raw.json);
        out_.other_top_level.push_back(std::move(raw));
      }
    } while (p_.consume_if(','));
    p_.expect('}', "at the end of the document's object");
  }

  std::int64_t integer(const char* what) {
    char c = p_.peek();
    if (c != '-' && (c < '0' || c > '9')) p_.fail(fmt::format("not a Kineto trace: \"{}\" is not an integer", what));
    p_.read_number(text_);
    auto v = parse_integer(text_);
    if (!v) p_.fail(fmt::format("not a Kineto trace: \"{}\" is not an integer", what));
    return *v;
  }

  void string_value(const char* what, std::string& out) {
    if (p_.peek() != '"') p_.fail(fmt::format("not a Kineto trace: \"{}\" is not a string", what));
    p_.read_string(out);
  }

  void device_properties() {
    p_.expect('[', "");
    if (p_.consume_if(']')) return;
    do {
      DeviceProperties d;
      p_.expect('{', "at the start of a deviceProperties entry");
      if (!p_.consume_if('}')) {
        do {
          p_.read_string(key_);
          p_.expect(':', "after a key");
          if (key_ == "name" && p_.peek() == '"') {
            p_.read_string(d.name);
            continue;
          }
          static const std::unordered_map<std::string, std::int64_t DeviceProperties::*> kFields = {
              {"id", &DeviceProperties::id},
              {"totalGlobalMem", &DeviceProperties::total_global_mem},
              {"computeMajor", &DeviceProperties::compute_major},
              {"computeMinor", &DeviceProperties::compute_minor},
              {"maxThreadsPerBlock", &DeviceProperties::max_threads_per_block},
              {"maxThreadsPerMultiprocessor", &DeviceProperties::max_threads_per_sm},
              {"regsPerBlock", &DeviceProperties::regs_per_block},
              {"regsPerMultiprocessor", &DeviceProperties::regs_per_sm},
              {"warpSize", &DeviceProperties::warp_size},
              {"sharedMemPerBlock", &DeviceProperties::shared_per_block},
              {"sharedMemPerBlockOptin", &DeviceProperties::shared_per_block_optin},
              {"sharedMemPerMultiprocessor", &DeviceProperties::shared_per_sm},
              {"numSms", &DeviceProperties::num_sms},
              {"maxBlocksPerMultiprocessor", &DeviceProperties::max_blocks_per_sm},
          };
          auto it = kFields.find(key_);
          char c = p_.peek();
          if (it != kFields.end() && (c == '-' || (c >= '0' && c <= '9'))) {
            p_.read_number(text_);
            if (auto v = parse_integer(text_)) d.*(it->second) = *v;
          } else {
            p_.skip();  // not modelled (documented in docs/trace-format.md)
          }
        } while (p_.consume_if(','));
        p_.expect('}', "at the end of a deviceProperties entry");
      }
      out_.devices.push_back(std::move(d));
    } while (p_.consume_if(','));
    p_.expect(']', "at the end of deviceProperties");
  }

  void distributed_info() {
    p_.expect('{', "");
    if (p_.consume_if('}')) return;
    do {
      p_.read_string(key_);
      p_.expect(':', "after a key");
      char c = p_.peek();
      bool number = c == '-' || (c >= '0' && c <= '9');
      if ((key_ == "rank" || key_ == "world_size") && number) {
        p_.read_number(text_);
        if (auto v = parse_integer(text_)) {
          (key_ == "rank" ? out_.rank : out_.world_size) = *v;
          if (key_ == "rank") out_.rank_recorded = true;
        }
      } else {
        p_.skip();
      }
    } while (p_.consume_if(','));
    p_.expect('}', "at the end of distributedInfo");
  }

  void events() {
    p_.expect('[', "");
    if (p_.consume_if(']')) return;
    do {
      if (++event_index_ > p_.limits().max_events)
        p_.fail_limit(fmt::format("more than {} entries in \"traceEvents\"", p_.limits().max_events), "max_events");
      event();
    } while (p_.consume_if(','));
    if (p_.at_end()) p_.fail("truncated: the JSON ends inside the \"traceEvents\" array");
    p_.expect(']', "at the end of the \"traceEvents\" array");
  }

  // The fields of one traceEvents entry, before we know its phase.
  struct Raw {
    std::string ph, cat, name, pid, tid, ts, dur, id, scope;
    bool has_ts = false, has_dur = false, has_id = false, has_args = false;
    std::vector<PendingArg> args;
    std::size_t arg_count = 0;
  };

  enum class Key { ph, cat, name, pid, tid, ts, dur, id, s, args, other };
  static Key event_key(const std::string& k) {
    const char* p = k.data();
    switch (k.size()) {
      case 1: return p[0] == 's' ? Key::s : Key::other;
      case 2:
        if (p[0] == 'p' && p[1] == 'h') return Key::ph;
        if (p[0] == 't' && p[1] == 's') return Key::ts;
        if (p[0] == 'i' && p[1] == 'd') return Key::id;
        return Key::other;
      case 3:
        if (std::memcmp(p, "cat", 3) == 0) return Key::cat;
        if (std::memcmp(p, "pid", 3) == 0) return Key::pid;
        if (std::memcmp(p, "tid", 3) == 0) return Key::tid;
        if (std::memcmp(p, "dur", 3) == 0) return Key::dur;
        return Key::other;
      case 4:
        if (std::memcmp(p, "name", 4) == 0) return Key::name;
        if (std::memcmp(p, "args", 4) == 0) return Key::args;
        return Key::other;
      default: return Key::other;
    }
  }

  void id_value(std::string& out) {
    char c = p_.peek();
    if (c == '"')
      p_.read_string(out);
    else if (c == '-' || (c >= '0' && c <= '9'))
      p_.read_number(out);
    else
      p_.fail(fmt::format("not a Kineto trace: event #{} has a pid/tid/id that is neither a number nor a string",
                          event_index_));
  }

  void event() {
    Raw& r = raw_;
    r.ph.clear();
    r.cat.clear();
    r.name.clear();
    r.pid.clear();
    r.tid.clear();
    r.scope.clear();
    r.has_ts = r.has_dur = r.has_id = r.has_args = false;
    r.arg_count = 0;
    bool has_cat = false;
    if (p_.at_end()) p_.fail("truncated: the JSON ends inside the \"traceEvents\" array");
    if (p_.peek() != '{') p_.fail(fmt::format("not a Kineto trace: event #{} is not an object", event_index_));
    p_.expect('{', "");
    if (!p_.consume_if('}')) {
      do {
        p_.read_string(key_);
        p_.expect(':', "after a key");
        char c = p_.peek();
        switch (event_key(key_)) {
          case Key::ph:
            if (c != '"') goto other;
            p_.read_string(r.ph);
            break;
          case Key::cat:
            if (c != '"') goto other;
            p_.read_string(r.cat);
            has_cat = true;
            break;
          case Key::name:
            if (c != '"') goto other;
            p_.read_string(r.name);
            break;
          case Key::pid: id_value(r.pid); break;
          case Key::tid: id_value(r.tid); break;
          case Key::ts:
            if (c == '"') goto other;
            p_.read_number(r.ts);
            r.has_ts = true;
            break;
          case Key::dur:
            if (c == '"') goto other;
            p_.read_number(r.dur);
            r.has_dur = true;
            break;
          case Key::id:
            id_value(r.id);
            r.has_id = true;
            break;
          case Key::s:
            if (c != '"') goto other;
            p_.read_string(r.scope);
            break;
          case Key::args:
            if (c != '{') goto other;
            args();
            r.has_args = true;
            break;
          case Key::other:
          other:
            p_.skip();
            break;
        }
      } while (p_.consume_if(','));
      p_.expect('}', "at the end of an event");
    }
    if (r.ph.size() != 1) {
      if (r.ph.empty()) p_.fail(fmt::format("not a Kineto trace: event #{} has no \"ph\"", event_index_));
      return;  // an unknown multi-letter phase: not part of the model
    }
    char ph = r.ph[0];
    switch (ph) {
      case 'X':
      case 'i':
      case 'I':
        emit_event(ph, has_cat);
        break;
      case 's':
      case 'f':
        emit_flow(ph);
        break;
      case 'M':
        emit_metadata();
        break;
      default:
        break;  // B/E, counters, async and object events are not part of the model (docs/trace-format.md)
    }
  }

  void args() {
    p_.expect('{', "");
    if (p_.consume_if('}')) return;
    do {
      if (raw_.arg_count == raw_.args.size()) raw_.args.emplace_back();
      PendingArg& a = raw_.args[raw_.arg_count++];
      p_.read_string(a.key);
      p_.expect(':', "after a key");
      p_.capture(a.json);
    } while (p_.consume_if(','));
    p_.expect('}', "at the end of an event's args");
  }

  std::int64_t time_ns(const std::string& text, const char* what) {
    auto v = parse_us_as_ns(text);
    if (!v) p_.fail(fmt::format("not a Kineto trace: event #{} has a \"{}\" out of range", event_index_, what));
    return *v;
  }

  // dur >= 0 (the trace format's rule), the end ts + dur fits in int64 ns, and the durations of all
  // the trace's X events add up to at most INT64_MAX ns, so no sum of durations the reports make wraps.
  void check_duration(const Event& e) {
    std::int64_t end = 0;
    if (e.dur_ns < 0) {
      std::string dur;
      append_us(dur, e.dur_ns);
      p_.fail(fmt::format("not a Kineto trace: event #{} ('{}', ph X) has a negative \"dur\" ({} us); dur must be >= 0",
                          event_index_, shown_name(e.name), dur));
    }
    if (__builtin_add_overflow(e.ts_ns, e.dur_ns, &end))
      p_.fail(fmt::format("not a Kineto trace: event #{} ('{}', ph X) ends past the int64 ns range (ts + dur)",
                          event_index_, shown_name(e.name)));
    if (__builtin_add_overflow(dur_total_ns_, e.dur_ns, &dur_total_ns_))
      p_.fail(fmt::format("not a Kineto trace: at event #{} ('{}', ph X) the durations add up past the int64 ns range "
                          "(over 292 years)",
                          event_index_, shown_name(e.name)));
    note_time(end);
  }

  // Every time of an event or flow: the earliest and latest stay less than INT64_MAX ns apart, so
  // no difference between two times of the trace wraps.
  void note_time(std::int64_t t) {
    first_ns_ = std::min(first_ns_, t);
    last_ns_ = std::max(last_ns_, t);
    std::int64_t span = 0;
    if (__builtin_sub_overflow(last_ns_, first_ns_, &span))
      p_.fail(fmt::format("not a Kineto trace: event #{} lies more than INT64_MAX ns (292 years) from another event",
                          event_index_));
  }

  void require_ts() {
    if (!raw_.has_ts)
      p_.fail(fmt::format("not a Kineto trace: event #{} ('{}', ph {}) has no numeric \"ts\"", event_index_,
                          shown_name(raw_.name), shown_name(raw_.ph)));
  }

  void emit_event(char ph, bool has_cat) {
    Raw& r = raw_;
    require_ts();
    Event& e = scratch_;
    e.category = has_cat ? parse_category(r.cat) : Category::other;
    e.raw_category.clear();
    if (e.category == Category::other && has_cat) e.raw_category = r.cat;
    e.phase = ph;
    e.name.swap(r.name);
    e.pid.swap(r.pid);
    e.tid.swap(r.tid);
    e.ts_ns = time_ns(r.ts, "ts");
    e.dur_ns = 0;
    e.scope = 0;
    e.external_id = e.correlation = e.device = e.stream = -1;
    e.bytes = e.total_allocated = -1;
    e.launch.reset();
    e.input_dims.clear();
    e.input_types.clear();
    if (ph == 'X') {
      if (!r.has_dur)
        p_.fail(fmt::format("not a Kineto trace: event #{} ('{}', ph X) has no numeric \"dur\"", event_index_,
                            shown_name(e.name)));
      e.dur_ns = time_ns(r.dur, "dur");
      check_duration(e);
    } else if (r.scope.size() == 1) {
      e.scope = r.scope[0];
    }
    note_time(e.ts_ns);
    resolve_args(e);
    on_event_(e);
  }

  // Known args become fields; the rest stay as written, in order.
  void resolve_args(Event& e) {
    const bool memory = e.category == Category::cpu_instant_event;
    std::size_t other = 0;
    std::uint32_t seen = 0;  // bit per modelled key, so a repeated key stays raw
    auto once = [&](int bit) {
      if (seen & (1u << bit)) return false;
      seen |= 1u << bit;
      return true;
    };
    // Kernel footprint: present when the args have a grid or block.
    for (std::size_t i = 0; i < raw_.arg_count; ++i) {
      const std::string& k = raw_.args[i].key;
      std::array<std::int64_t, 3> t{};
      if ((k == "grid" || k == "block") && parse_triple(raw_.args[i].json, t)) {
        e.launch.emplace();
        break;
      }
    }
    for (std::size_t i = 0; i < raw_.arg_count; ++i) {
      PendingArg& a = raw_.args[i];
      const std::string& k = a.key;
      bool used = false;
      auto int_field = [&](int bit, std::int64_t& field) {
        if (auto v = parse_integer(a.json); v && once(bit)) {
          field = *v;
          used = true;
        }
      };
      auto dbl_field = [&](int bit, std::optional<double>& field) {
        if (auto v = parse_double(a.json); v && once(bit)) {
          field = *v;
          used = true;
        }
      };
      if (k == "External id") {
        int_field(0, e.external_id);
      } else if (k == "correlation") {
        int_field(1, e.correlation);
      } else if (memory ? k == "Device Id" : k == "device") {
        int_field(2, e.device);
      } else if (!memory && k == "stream") {
        int_field(3, e.stream);
      } else if (memory ? k == "Bytes" : k == "bytes") {
        int_field(4, e.bytes);
      } else if (k == "Total Allocated") {
        int_field(5, e.total_allocated);
      } else if (k == "Input Dims" && once(6)) {
        e.input_dims = a.json;
        used = true;
      } else if (k == "Input type" && once(7)) {
        e.input_types = a.json;
        used = true;
      } else if (e.launch) {
        KernelLaunch& l = *e.launch;
        if (k == "registers per thread") {
          int_field(8, l.registers_per_thread);
        } else if (k == "shared memory") {
          int_field(9, l.shared_bytes);
        } else if (k == "static shared memory") {
          int_field(10, l.static_shared_bytes);
        } else if (k == "dynamic shared memory") {
          int_field(11, l.dynamic_shared_bytes);
        } else if (k == "blocks per SM") {
          dbl_field(12, l.blocks_per_sm);
        } else if (k == "warps per SM") {
          dbl_field(13, l.warps_per_sm);
        } else if (k == "est. achieved occupancy %") {
          dbl_field(14, l.recorded_occupancy_pct);
        } else if (k == "grid" || k == "block") {
          std::array<std::int64_t, 3> t{};
          if (parse_triple(a.json, t) && once(k == "grid" ? 15 : 16)) {
            (k == "grid" ? l.grid : l.block) = t;
            used = true;
          }
        }
      }
      if (!used) {
        // Reuse the scratch event's strings: no allocation per arg once warmed up.
        if (other < e.other_args.size()) {
          e.other_args[other].key = a.key;
          e.other_args[other].json = a.json;
        } else {
          e.other_args.push_back(RawArg{a.key, a.json});
        }
        ++other;
      }
    }
    e.other_args.resize(other);
  }

  void emit_flow(char ph) {
    Raw& r = raw_;
    require_ts();
    if (!r.has_id) p_.fail(fmt::format("not a Kineto trace: flow event #{} has no \"id\"", event_index_));
    auto id = parse_integer(r.id);
    if (!keep_flows_) {
      if (flow_ends_.capacity() > 0) std::vector<FlowEnd>().swap(flow_ends_);  // turned off while reading
      return;
    }
    if (!id) return;  // string flow ids are not part of the model
    FlowEnd f;
    f.id = *id;
    f.start = ph == 's';
    f.ts_ns = time_ns(r.ts, "ts");
    note_time(f.ts_ns);
    f.pid = std::move(r.pid);
    f.tid = std::move(r.tid);
    f.category = r.cat;
    f.name = r.name;
    flow_ends_.push_back(std::move(f));
  }

  // Pairs flow ends by id: the k-th 's' of an id (in time order) with its k-th 'f', whatever
  // order the file lists them in (Kineto writes each 'f' before its 's'). The result depends only
  // on the set of ends, so write -> read -> write gives the same bytes.
  void pair_flows() {
    if (!keep_flows_) flow_ends_.clear();
    auto key = [](const FlowEnd& e) { return std::tie(e.id, e.start, e.ts_ns, e.pid, e.tid, e.category, e.name); };
    std::sort(flow_ends_.begin(), flow_ends_.end(), [&](const FlowEnd& a, const FlowEnd& b) { return key(a) < key(b); });
    std::vector<Flow> flows;
    for (std::size_t i = 0; i < flow_ends_.size();) {
      std::size_t j = i;
      while (j < flow_ends_.size() && flow_ends_[j].id == flow_ends_[i].id) ++j;
      std::size_t ends = i;  // sorted with 'f' (start=false) before 's'
      std::size_t starts = i;
      while (starts < j && !flow_ends_[starts].start) ++starts;
      std::size_t n_end = starts - ends, n_start = j - starts;
      for (std::size_t k = 0; k < std::max(n_end, n_start); ++k) {
        Flow f;
        f.id = flow_ends_[i].id;
        if (k < n_start) {
          FlowEnd& s = flow_ends_[starts + k];
          f.has_start = true;
          f.start_ts_ns = s.ts_ns;
          f.start_pid = std::move(s.pid);
          f.start_tid = std::move(s.tid);
          f.category = s.category;
          f.name = s.name;
        }
        if (k < n_end) {
          FlowEnd& e = flow_ends_[ends + k];
          f.has_end = true;
          f.end_ts_ns = e.ts_ns;
          f.end_pid = std::move(e.pid);
          f.end_tid = std::move(e.tid);
          if (!f.has_start) {
            f.category = e.category;
            f.name = e.name;
          }
        }
        flows.push_back(std::move(f));
      }
      i = j;
    }
    flow_ends_.clear();
    auto first_ts = [](const Flow& f) { return f.has_start ? f.start_ts_ns : f.end_ts_ns; };
    std::stable_sort(flows.begin(), flows.end(), [&](const Flow& a, const Flow& b) {
      if (first_ts(a) != first_ts(b)) return first_ts(a) < first_ts(b);
      return a.id < b.id;
    });
    for (Flow& f : flows) out_.flows.push_back(std::move(f));
  }

  void emit_metadata() {
    Raw& r = raw_;
    Metadata m;
    m.name = std::move(r.name);
    m.pid = std::move(r.pid);
    m.tid = std::move(r.tid);
    m.ts_ns = r.has_ts ? time_ns(r.ts, "ts") : 0;
    for (std::size_t i = 0; i < r.arg_count; ++i)
      m.args.push_back(RawArg{std::move(r.args[i].key), std::move(r.args[i].json)});
    out_.metadata.push_back(std::move(m));
  }

  JsonPull p_;
  Trace& out_;
  const std::function<void(Event&)>& on_event_;
  std::string key_, text_;
  Raw raw_;
  Event scratch_;
  bool saw_events_ = false;
  std::uint64_t event_index_ = 0;
  std::int64_t dur_total_ns_ = 0;
  std::int64_t first_ns_ = INT64_MAX, last_ns_ = INT64_MIN;
  struct FlowEnd {
    std::int64_t id = 0;
    bool start = false;
    std::int64_t ts_ns = 0;
    std::string pid, tid, category, name;
  };
  std::vector<FlowEnd> flow_ends_;
  const bool& keep_flows_;
};

}  // namespace

void read_trace_file(const std::string& path, Trace& out, const std::function<void(Event&)>& on_event,
                     const bool& keep_flows, const ReadLimits& limits) {
  auto source = open_trace_bytes(path);
  Reader(*source, trace_display_name(path), out, on_event, keep_flows, limits).read();
}

Trace read_trace_file(const std::string& path, const ReadLimits& limits) {
  Trace t;
  read_trace_file(path, t, [&](Event& e) { t.events.push_back(std::move(e)); }, /*keep_flows=*/true, limits);
  return t;
}

Trace read_trace_bytes(const std::string& name, const char* data, std::size_t size, const ReadLimits& limits) {
  Trace t;
  auto source = memory_trace_bytes(name, data, size);
  std::function<void(Event&)> sink = [&](Event& e) { t.events.push_back(std::move(e)); };
  Reader(*source, name, t, sink, true, limits).read();
  return t;
}

}  // namespace attnprof::trace
