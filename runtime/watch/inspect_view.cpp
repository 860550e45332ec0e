#include "runtime/watch/inspect_view.hpp"

#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <limits>

namespace deepcee::runtime {

namespace {

std::string format(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
std::string format(const char* fmt, ...) {
  char buffer[512];
  va_list args;
  va_start(args, fmt);
  std::vsnprintf(buffer, sizeof buffer, fmt, args);
  va_end(args);
  return buffer;
}

std::string number_or(const std::optional<double>& v, const char* fmt, const char* none) {
  return v && std::isfinite(*v) ? format(fmt, *v) : std::string(none);
}

/// "12.3 MB/s", "850 kB/s": decimal units, as link speeds are given.
std::string rate(double bytes_per_s) {
  if (!(bytes_per_s > 0))
    return "-";
  if (std::isinf(bytes_per_s))
    return "unlimited";
  const char* units[] = {"B/s", "kB/s", "MB/s", "GB/s", "TB/s"};
  int u = 0;
  while (bytes_per_s >= 1000 && u < 4) {
    bytes_per_s /= 1000;
    ++u;
  }
  return format("%.1f %s", bytes_per_s, units[u]);
}

std::string bytes(double b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (b >= 1024 && u < 4) {
    b /= 1024;
    ++u;
  }
  return u == 0 ? format("%.0f B", b) : format("%.1f %s", b, units[u]);
}

std::string millis(double s) {
  return format("%.3f ms", s * 1e3);
}

std::string percent(double share) {
  return format("%5.1f%%", 100 * share);
}

/// A bar of `width` cells filled to `share`.
std::string bar(double share, int width) {
  const int filled = static_cast<int>(std::lround(std::clamp(share, 0.0, 1.0) * width));
  return "[" + std::string(size_t(filled), '#') + std::string(size_t(width - filled), '.') + "]";
}

/// The compute window of the last step: from its first op's start to its last op's end.
std::pair<double, double> compute_window(const job_snapshot& s) {
  double from = std::numeric_limits<double>::infinity(), to = -from;
  for (const auto& st : s.stages)
    for (const auto& op : st.ops) {
      from = std::min(from, op.start_s);
      to = std::max(to, op.end_s);
    }
  return from < to ? std::pair{from, to} : std::pair{0.0, 0.0};
}

std::string stage_label(const stage_status& st) {
  std::string devices;
  for (const auto& d : st.devices)
    devices += (devices.empty() ? "" : " ") + d;
  return format("p%d s%d [%s]", st.pipeline, st.stage, devices.c_str());
}

/// Columns left for a bar or timeline once `used` characters are taken.
int room(const inspect_frame& f, int used, int least = 10) {
  const int width = f.width > 0 ? std::min(f.width, 200) : 100; // 0: no terminal
  return std::max(least, width - used);
}

void overview(const job_snapshot& s, const inspect_frame& f, std::vector<std::string>& out) {
  out.push_back(format("job %s: model %s on %s, plan %s, time %s", s.job.c_str(), s.model.c_str(),
                       s.cluster.c_str(), s.strategy.c_str(), s.time_mode.c_str()));
  out.push_back(
      format("step %d/%d  loss %s  validation %s", s.step, s.steps,
             number_or(s.loss, "%.4f", s.time_mode == "dry" ? "not computed (dry)" : "-").c_str(),
             s.val_step > 0
                 ? (number_or(s.val_loss, "%.4f", "-") + format(" at step %d", s.val_step)).c_str()
                 : "none yet"));
  std::string range;
  if (!s.loss_history.empty())
    range = format("  %.4f -> %.4f", s.loss_history.front(), s.loss_history.back());
  out.push_back("loss  " + sparkline(s.loss_history, room(f, 30, 8)) + range);
  out.push_back(format("samples/s: real %s, emulated %s  |  clock %.3f s",
                       number_or(s.real_samples_per_s, "%.1f", "-").c_str(),
                       number_or(s.emulated_samples_per_s, "%.1f", "-").c_str(), s.clock_s));
  out.push_back(format("dropped: %lld message(s), %lld frame(s)",
                       static_cast<long long>(s.dropped_messages),
                       static_cast<long long>(s.dropped_frames)));
  out.push_back("");
  const auto [from, to] = compute_window(s);
  for (const auto& st : s.stages) {
    const auto label = stage_label(st);
    out.push_back(format("stage %-28s bubble %s  ", label.c_str(), percent(st.bubble).c_str()) +
                  op_timeline(st.ops, from, to, room(f, 52)));
  }
  if (!s.groups.empty()) {
    out.push_back("");
    out.insert(out.end(), s.groups.begin(), s.groups.end());
  }
}

void stages(const job_snapshot& s, const inspect_frame& f, std::vector<std::string>& out) {
  const auto [from, to] = compute_window(s);
  out.push_back(format("op timeline of step %d, %s to %s on the job's clock (F forward, B "
                       "backward, W weight gradients, . idle)",
                       s.step, millis(from).c_str(), millis(to).c_str()));
  for (const auto& st : s.stages) {
    out.push_back("");
    out.push_back(format("stage %s  layers %d-%d  bubble %s", stage_label(st).c_str(),
                         st.first_layer, st.last_layer - 1, percent(st.bubble).c_str()));
    out.push_back("  " + op_timeline(st.ops, from, to, room(f, 4)));
    std::string ops;
    for (const auto& op : st.ops)
      ops += format("%s%s%d %.2f-%.2f", ops.empty() ? "" : ", ", op.kind.c_str(), op.micro,
                    (op.start_s - from) * 1e3, (op.end_s - from) * 1e3);
    out.push_back("  ops (ms from the step's first op): " + (ops.empty() ? "none" : ops));
  }
}

void devices(const job_snapshot& s, const inspect_frame& f, std::vector<std::string>& out) {
  out.push_back(format("%-18s %-18s %-8s %-7s %-24s %s", "device", "kind", "stage", "util", "",
                       "memory used / capacity (estimated peak)"));
  for (const auto& d : s.devices) {
    const auto stage =
        d.pipeline < 0 ? std::string("unused") : format("p%d s%d", d.pipeline, d.stage);
    const double mem =
        d.memory_capacity_bytes > 0 ? d.memory_used_bytes / d.memory_capacity_bytes : 0;
    out.push_back(format("%-18s %-18s %-8s %s %-24s %s / %s %s", d.name.c_str(), d.kind.c_str(),
                         stage.c_str(), percent(d.utilization).c_str(),
                         bar(d.utilization, 22).c_str(), bytes(d.memory_used_bytes).c_str(),
                         bytes(d.memory_capacity_bytes).c_str(), bar(mem, 10).c_str()));
  }
  (void)f;
}

/// "drifted", "ok", or "no sample" while the estimates are still the plan's figures.
const char* link_state(const link_status& l) {
  return l.drifted ? "drifted" : l.samples > 0 ? "ok" : "no sample";
}

void links(const job_snapshot& s, const inspect_frame&, std::vector<std::string>& out) {
  out.push_back(format("%-34s %12s %12s %12s %12s %11s %9s %9s", "link", "bandwidth", "plan's",
                       "latency", "plan's", "sent", "transfers", "state"));
  if (s.links.empty())
    out.push_back("(no stage boundary: the all-reduce's links are not measured yet)");
  for (const auto& l : s.links)
    out.push_back(format("%-34s %12s %12s %12s %12s %11s %9lld %9s", l.name.c_str(),
                         rate(l.bandwidth_Bps).c_str(), rate(l.plan_bandwidth_Bps).c_str(),
                         millis(l.latency_s).c_str(), millis(l.plan_latency_s).c_str(),
                         bytes(l.bytes_sent).c_str(), static_cast<long long>(l.transfers),
                         link_state(l)));
}

void adapter(const job_snapshot& s, const inspect_frame&, std::vector<std::string>& out) {
  const auto& a = s.allocation;
  std::string micro;
  for (size_t p = 0; p < a.micro_batches.size(); ++p)
    micro += format("%spipeline %zu: %d", p ? ", " : "", p, a.micro_batches[p]);
  out.push_back("micro-batches: " + micro);
  std::string samples;
  for (const auto& d : a.samples)
    samples += format("%s%s %d", samples.empty() ? "" : ", ", d.device.c_str(), d.samples);
  out.push_back("samples per micro-batch: " + samples);
  out.push_back("compression:");
  if (a.compression.empty())
    out.push_back("  (no link between stages)");
  for (const auto& c : a.compression)
    out.push_back(format("  %-34s %s", c.link.c_str(), c.compression.c_str()));
  out.push_back("");
  out.push_back("adapter decisions:");
  if (s.decisions.empty())
    out.push_back("  (none)");
  for (const auto& d : s.decisions)
    out.push_back(format("  step %-6d %-14s %+.1f%%  %s", d.step, d.kind.c_str(),
                         100 * d.predicted_gain, d.reason.c_str()));
  out.push_back("");
  out.push_back("injected events and faults:");
  if (s.events.empty())
    out.push_back("  (none)");
  for (const auto& e : s.events)
    out.push_back(format("  step %-6d %10.3f s  %s", e.step, e.time_s, e.text.c_str()));
}

void page_lines(const job_snapshot& s, inspect_page page, const inspect_frame& f,
                std::vector<std::string>& out) {
  switch (page) {
  case inspect_page::overview:
    return overview(s, f, out);
  case inspect_page::stages:
    return stages(s, f, out);
  case inspect_page::devices:
    return devices(s, f, out);
  case inspect_page::links:
    return links(s, f, out);
  case inspect_page::adapter:
    return adapter(s, f, out);
  }
}

/// Cuts lines to the frame's width and their number to its height.
std::vector<std::string> fit(std::vector<std::string> lines, const inspect_frame& f) {
  for (auto& l : lines)
    if (f.width > 0 && l.size() > size_t(f.width))
      l.resize(size_t(f.width));
  if (f.height > 0 && lines.size() > size_t(f.height)) {
    const auto hidden = lines.size() - size_t(f.height) + 1;
    lines.resize(size_t(f.height) - 1);
    auto more = format("... %zu more line(s): a taller terminal shows them", hidden);
    if (f.width > 0 && more.size() > size_t(f.width))
      more.resize(size_t(f.width));
    lines.push_back(more);
  }
  return lines;
}

} // namespace

std::string_view page_name(inspect_page p) {
  switch (p) {
  case inspect_page::overview:
    return "overview";
  case inspect_page::stages:
    return "stages";
  case inspect_page::devices:
    return "devices";
  case inspect_page::links:
    return "links";
  case inspect_page::adapter:
    return "adapter & events";
  }
  return "?";
}

inspect_page next_page(inspect_page p) {
  return static_cast<inspect_page>((static_cast<int>(p) + 1) % inspect_page_count);
}

std::vector<std::string> render_page(const job_snapshot& s, inspect_page page,
                                     const inspect_frame& frame) {
  std::vector<std::string> out;
  out.push_back(format("deepcee inspect %s  |  job %s  step %d/%d  |  version %llu",
                       frame.address.c_str(), s.job.c_str(), s.step, s.steps,
                       static_cast<unsigned long long>(s.version)));
  std::string tabs;
  for (int k = 0; k < inspect_page_count; ++k) {
    const auto p = static_cast<inspect_page>(k);
    const auto name = std::string(page_name(p));
    tabs += p == page ? format("[%d %s] ", k + 1, name.c_str())
                      : format(" %d %s  ", k + 1, name.c_str());
  }
  out.push_back(tabs + " Tab next, q quits");
  if (!frame.status.empty())
    out.push_back(frame.status);
  out.push_back("");
  page_lines(s, page, frame, out);
  return fit(std::move(out), frame);
}

std::vector<std::string> render_all(const job_snapshot& s, const inspect_frame& frame) {
  std::vector<std::string> out;
  out.push_back(format("deepcee inspect %s  |  job %s  step %d/%d  |  version %llu",
                       frame.address.c_str(), s.job.c_str(), s.step, s.steps,
                       static_cast<unsigned long long>(s.version)));
  for (int k = 0; k < inspect_page_count; ++k) {
    const auto p = static_cast<inspect_page>(k);
    out.push_back("");
    out.push_back("== " + std::string(page_name(p)));
    page_lines(s, p, frame, out);
  }
  return fit(std::move(out), frame);
}

std::string summary_line(const job_snapshot& s) {
  return format("step %d/%d loss %s | real %s samples/s | emulated %s samples/s | clock %.3f s",
                s.step, s.steps, number_or(s.loss, "%.4f", "-").c_str(),
                number_or(s.real_samples_per_s, "%.1f", "-").c_str(),
                number_or(s.emulated_samples_per_s, "%.1f", "-").c_str(), s.clock_s);
}

std::string sparkline(const std::vector<double>& values, int width) {
  static constexpr std::string_view levels = " .:-=+*#";
  if (width <= 0)
    return "";
  const size_t n = std::min(values.size(), size_t(width));
  const auto first = values.end() - static_cast<std::ptrdiff_t>(n);
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (auto it = first; it != values.end(); ++it)
    if (std::isfinite(*it)) {
      lo = std::min(lo, *it);
      hi = std::max(hi, *it);
    }
  std::string out(size_t(width) - n, ' ');
  for (auto it = first; it != values.end(); ++it) {
    if (!std::isfinite(*it)) {
      out += ' ';
      continue;
    }
    const double level = hi > lo ? (*it - lo) / (hi - lo) : 0.5;
    out += levels[1 + size_t(std::lround(level * double(levels.size() - 2)))];
  }
  return out;
}

std::string op_timeline(const std::vector<timeline_op>& ops, double from_s, double to_s,
                        int width) {
  if (width <= 0)
    return "";
  std::string out(size_t(width), '.');
  const double span = to_s - from_s;
  if (!(span > 0))
    return out;
  const double cell = span / width;
  std::vector<double> covered(size_t(width), 0.0);
  for (const auto& op : ops) {
    const double a = std::max(op.start_s, from_s), b = std::min(op.end_s, to_s);
    if (!(b > a))
      continue;
    const int first = std::clamp(static_cast<int>((a - from_s) / cell), 0, width - 1);
    const int last = std::clamp(static_cast<int>((b - from_s) / cell), 0, width - 1);
    for (int c = first; c <= last; ++c) {
      const double c0 = from_s + c * cell, c1 = c0 + cell;
      const double share = std::min(b, c1) - std::max(a, c0);
      if (share > covered[size_t(c)] && !op.kind.empty()) {
        covered[size_t(c)] = share;
        out[size_t(c)] = op.kind[0];
      }
    }
  }
  return out;
}

} // namespace deepcee::runtime
