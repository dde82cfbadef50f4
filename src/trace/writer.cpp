#include "trace/writer.h"

#include <attnprof/error.h>
#include <fmt/format.h>
#include <zlib.h>

#include "core/atomic_file.h"
#include "trace/json_text.h"

namespace attnprof::trace {
namespace {

constexpr std::size_t kFlushBytes = 1 << 20;

void append_int(std::string& out, std::int64_t v) { fmt::format_to(std::back_inserter(out), "{}", v); }

void append_id(std::string& out, const std::string& value) {
  if (looks_like_integer(value))
    out.append(value);
  else
    append_json_string(out, value);
}

void key(std::string& out, std::string_view name) {
  append_json_string(out, name);
  out.append(": ");
}

void append_triple(std::string& out, const std::array<std::int64_t, 3>& v) {
  fmt::format_to(std::back_inserter(out), "[{}, {}, {}]", v[0], v[1], v[2]);
}

void append_double(std::string& out, double v) { fmt::format_to(std::back_inserter(out), "{}", v); }

bool is_memory_instant(const Event& e) { return e.category == Category::cpu_instant_event; }

}  // namespace

ChromeTraceWriter::ChromeTraceWriter(Sink sink) : sink_(std::move(sink)) { buffer_.reserve(kFlushBytes + 4096); }

void ChromeTraceWriter::maybe_flush() {
  if (buffer_.size() >= kFlushBytes) {
    sink_(buffer_);
    buffer_.clear();
  }
}

void ChromeTraceWriter::begin(const Trace& h) {
  std::string& o = buffer_;
  o.append("{\n  \"schemaVersion\": ");
  append_int(o, h.schema_version);
  o.append(",\n  \"deviceProperties\": [");
  for (std::size_t i = 0; i < h.devices.size(); ++i) {
    const DeviceProperties& d = h.devices[i];
    o.append(i ? ",\n    {" : "\n    {");
    auto field = [&](std::string_view name, std::int64_t v, bool first = false) {
      if (!first) o.append(", ");
      key(o, name);
      append_int(o, v);
    };
    field("id", d.id, true);
    o.append(", ");
    key(o, "name");
    append_json_string(o, d.name);
    field("totalGlobalMem", d.total_global_mem);
    field("computeMajor", d.compute_major);
    field("computeMinor", d.compute_minor);
    field("maxThreadsPerBlock", d.max_threads_per_block);
    field("maxThreadsPerMultiprocessor", d.max_threads_per_sm);
    field("regsPerBlock", d.regs_per_block);
    field("warpSize", d.warp_size);
    field("sharedMemPerBlock", d.shared_per_block);
    field("numSms", d.num_sms);
    field("regsPerMultiprocessor", d.regs_per_sm);
    field("sharedMemPerBlockOptin", d.shared_per_block_optin);
    field("sharedMemPerMultiprocessor", d.shared_per_sm);
    if (d.max_blocks_per_sm > 0) field("maxBlocksPerMultiprocessor", d.max_blocks_per_sm);
    o.append("}");
  }
  o.append(h.devices.empty() ? "],\n" : "\n  ],\n");
  o.append("  \"distributedInfo\": {\"rank\": ");
  append_int(o, h.rank);
  o.append(", \"world_size\": ");
  append_int(o, h.world_size);
  o.append("},\n");
  if (h.dropped_records != 0) {
    o.append("  \"droppedRecords\": ");
    append_int(o, h.dropped_records);
    o.append(",\n");
  }
  for (const RawArg& raw : h.other_top_level) {
    o.append("  ");
    key(o, raw.key);
    o.append(raw.json);
    o.append(",\n");
  }
  o.append("  \"displayTimeUnit\": ");
  append_json_string(o, h.display_time_unit);
  o.append(",\n  \"baseTimeNanoseconds\": ");
  append_int(o, h.base_time_ns);
  o.append(",\n  \"traceEvents\": [");
  first_event_ = true;
}

void ChromeTraceWriter::open_event() {
  buffer_.append(first_event_ ? "\n  {" : ",\n  {");
  first_event_ = false;
}

void ChromeTraceWriter::write_args(const Event& e) {
  std::string& o = buffer_;
  bool first = true;
  auto next = [&](std::string_view name) {
    o.append(first ? ", \"args\": {" : ", ");
    first = false;
    key(o, name);
  };
  auto integer = [&](std::string_view name, std::int64_t v) {
    next(name);
    append_int(o, v);
  };
  if (e.external_id >= 0) integer("External id", e.external_id);
  if (is_memory_instant(e)) {
    if (e.total_allocated >= 0) integer("Total Allocated", e.total_allocated);
    if (e.bytes != -1) integer("Bytes", e.bytes);
    if (e.device != -1) integer("Device Id", e.device);
  } else {
    if (e.device >= 0) integer("device", e.device);
    if (e.stream >= 0) integer("stream", e.stream);
    if (e.correlation >= 0) integer("correlation", e.correlation);
    if (e.bytes >= 0) integer("bytes", e.bytes);
    if (e.total_allocated >= 0) integer("Total Allocated", e.total_allocated);
  }
  if (e.launch) {
    const KernelLaunch& k = *e.launch;
    if (k.registers_per_thread >= 0) integer("registers per thread", k.registers_per_thread);
    if (k.shared_bytes >= 0) integer("shared memory", k.shared_bytes);
    if (k.static_shared_bytes >= 0) integer("static shared memory", k.static_shared_bytes);
    if (k.dynamic_shared_bytes >= 0) integer("dynamic shared memory", k.dynamic_shared_bytes);
    if (k.blocks_per_sm) {
      next("blocks per SM");
      append_double(o, *k.blocks_per_sm);
    }
    if (k.warps_per_sm) {
      next("warps per SM");
      append_double(o, *k.warps_per_sm);
    }
    next("grid");
    append_triple(o, k.grid);
    next("block");
    append_triple(o, k.block);
    if (k.recorded_occupancy_pct) {
      next("est. achieved occupancy %");
      append_double(o, *k.recorded_occupancy_pct);
    }
  }
  if (!e.input_dims.empty()) {
    next("Input Dims");
    o.append(e.input_dims);
  }
  if (!e.input_types.empty()) {
    next("Input type");
    o.append(e.input_types);
  }
  for (const RawArg& raw : e.other_args) {
    next(raw.key);
    o.append(raw.json);
  }
  if (!first) o.push_back('}');
}

namespace {
void common_head(std::string& o, char phase, const Event& e) {
  o.append("\"ph\": \"");
  o.push_back(phase);
  o.append("\"");
  if (e.category != Category::other) {
    o.append(", \"cat\": \"");
    o.append(category_name(e.category));
    o.append("\"");
  } else if (!e.raw_category.empty()) {
    o.append(", \"cat\": ");
    append_json_string(o, e.raw_category);
  }
  o.append(", \"name\": ");
  append_json_string(o, e.name);
  o.append(", \"pid\": ");
  append_id(o, e.pid);
  o.append(", \"tid\": ");
  append_id(o, e.tid);
  o.append(", \"ts\": ");
  append_us(o, e.ts_ns);
}
}  // namespace

void ChromeTraceWriter::complete(const Event& e) {
  open_event();
  common_head(buffer_, 'X', e);
  buffer_.append(", \"dur\": ");
  append_us(buffer_, e.dur_ns);
  write_args(e);
  buffer_.push_back('}');
  maybe_flush();
}

void ChromeTraceWriter::instant(const Event& e) {
  open_event();
  common_head(buffer_, e.phase == 'I' ? 'I' : 'i', e);
  if (e.scope != 0) {
    buffer_.append(", \"s\": \"");
    buffer_.push_back(e.scope);
    buffer_.push_back('"');
  }
  write_args(e);
  buffer_.push_back('}');
  maybe_flush();
}

namespace {
void flow_common(std::string& o, char phase, const Flow& f, const std::string& pid, const std::string& tid,
                 std::int64_t ts) {
  o.append("\"ph\": \"");
  o.push_back(phase);
  o.append("\", \"id\": ");
  append_int(o, f.id);
  o.append(", \"pid\": ");
  append_id(o, pid);
  o.append(", \"tid\": ");
  append_id(o, tid);
  o.append(", \"ts\": ");
  append_us(o, ts);
  o.append(", \"cat\": ");
  append_json_string(o, f.category);
  o.append(", \"name\": ");
  append_json_string(o, f.name);
}
}  // namespace

void ChromeTraceWriter::flow_start(const Flow& f) {
  open_event();
  flow_common(buffer_, 's', f, f.start_pid, f.start_tid, f.start_ts_ns);
  buffer_.push_back('}');
  maybe_flush();
}

void ChromeTraceWriter::flow_end(const Flow& f) {
  open_event();
  flow_common(buffer_, 'f', f, f.end_pid, f.end_tid, f.end_ts_ns);
  buffer_.append(", \"bp\": \"e\"}");
  maybe_flush();
}

void ChromeTraceWriter::metadata(const Metadata& m) {
  open_event();
  std::string& o = buffer_;
  o.append("\"name\": ");
  append_json_string(o, m.name);
  o.append(", \"ph\": \"M\", \"ts\": ");
  append_us(o, m.ts_ns);
  o.append(", \"pid\": ");
  append_id(o, m.pid);
  o.append(", \"tid\": ");
  append_id(o, m.tid);
  o.append(", \"args\": {");
  for (std::size_t i = 0; i < m.args.size(); ++i) {
    if (i) o.append(", ");
    key(o, m.args[i].key);
    o.append(m.args[i].json);
  }
  o.append("}}");
  maybe_flush();
}

void ChromeTraceWriter::end(const Trace& h) {
  buffer_.append(first_event_ ? "],\n  \"traceName\": " : "\n  ],\n  \"traceName\": ");
  append_json_string(buffer_, h.trace_name);
  buffer_.append("\n}\n");
  sink_(buffer_);
  buffer_.clear();
}

void write_trace(ChromeTraceWriter& w, const Trace& trace) {
  w.begin(trace);
  for (const Metadata& m : trace.metadata) w.metadata(m);
  for (const Event& e : trace.events) {
    if (e.phase == 'X')
      w.complete(e);
    else
      w.instant(e);
  }
  for (const Flow& f : trace.flows) {
    if (f.has_start) w.flow_start(f);
    if (f.has_end) w.flow_end(f);
  }
  w.end(trace);
}

std::string to_json(const Trace& trace) {
  std::string out;
  ChromeTraceWriter w([&](std::string_view bytes) { out.append(bytes); });
  write_trace(w, trace);
  return out;
}

namespace {

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// gzip (RFC 1952) through zlib's deflate into the temporary file.
class GzipSink {
 public:
  GzipSink(AtomicFile& file, std::string path) : file_(file), path_(std::move(path)) {
    if (deflateInit2(&z_, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
      throw Error(fmt::format("{}: zlib deflateInit2 failed", path_));
  }
  ~GzipSink() { deflateEnd(&z_); }
  void write(std::string_view bytes, bool finish) {
    z_.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data()));
    z_.avail_in = static_cast<uInt>(bytes.size());
    int rc;
    do {
      z_.next_out = out_;
      z_.avail_out = sizeof out_;
      rc = deflate(&z_, finish ? Z_FINISH : Z_NO_FLUSH);
      if (rc == Z_STREAM_ERROR) throw Error(fmt::format("{}: zlib deflate failed", path_));
      file_.write(std::string_view(reinterpret_cast<char*>(out_), sizeof out_ - z_.avail_out));
    } while (z_.avail_out == 0 || (finish && rc != Z_STREAM_END));
  }

 private:
  AtomicFile& file_;
  std::string path_;
  z_stream z_{};
  Bytef out_[1 << 16];
};

}  // namespace

void write_trace_file(const std::string& path, const Trace& trace, std::string_view parameter) {
  AtomicFile file(path, parameter);
  if (ends_with(path, ".gz")) {
    auto gz = std::make_unique<GzipSink>(file, path);
    ChromeTraceWriter w([&](std::string_view bytes) { gz->write(bytes, false); });
    write_trace(w, trace);
    gz->write({}, true);
  } else {
    ChromeTraceWriter w([&](std::string_view bytes) { file.write(bytes); });
    write_trace(w, trace);
  }
  file.commit();
}

}  // namespace attnprof::trace
