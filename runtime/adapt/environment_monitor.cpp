#include "runtime/adapt/environment_monitor.hpp"

#include "runtime/cluster/codec_cost.hpp"
#include "runtime/cluster/network_path.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

namespace deepcee::runtime {

namespace {

bool usable_reference(double x) {
  return x > 0 && std::isfinite(x);
}

/// The lower median of ratios (as drift_tracker::estimate).
double median_of(std::vector<double> v) {
  const auto mid = v.begin() + static_cast<std::ptrdiff_t>((v.size() - 1) / 2);
  std::nth_element(v.begin(), mid, v.end());
  return *mid;
}

} // namespace

environment_monitor::environment_monitor(cluster c, const profile_table& profile, const plan& p,
                                         drift_band band, size_t window)
    : cluster_(std::move(c)), profile_(&profile), band_(band), window_(window) {
  rebase(p);
}

void environment_monitor::rebase(const plan& p) {
  auto next = expected_of(p);
  if (calibration_)
    for (const auto& [device, e] : next) {
      const auto was = expected_.find(device);
      const bool same = was != expected_.end() && was->second.f == e.f && was->second.b == e.b &&
                        was->second.w == e.w && was->second.micro_batches == e.micro_batches;
      if (!same && devices_.count(device))
        rescales_[device] = {};
    }
  expected_ = std::move(next);
}

std::map<int, environment_monitor::expected_ops>
environment_monitor::expected_of(const plan& p) const {
  std::map<int, expected_ops> out;
  for (const auto& pipe : p.pipelines)
    for (size_t si = 0; si < pipe.stages.size(); ++si) {
      const auto& st = pipe.stages[si];
      const bool last = si + 1 == pipe.stages.size();
      const compression in = si > 0 ? pipe.stages[si - 1].send_compression : compression::none;
      for (size_t k = 0; k < st.devices.size(); ++k) {
        expected_ops e;
        e.micro_batches = pipe.micro_batches;
        const auto& dev = cluster_.devices.at(static_cast<size_t>(st.devices[k]));
        stage_figures plain;
        for (int layer = st.first_layer; layer < st.last_layer; ++layer) {
          const auto cost = profile_->cost(dev, layer, st.samples[k]);
          plain.f_s += cost.f_s;
          plain.b_s += cost.b_s;
          plain.w_s += cost.w_s;
        }
        // A recomputing stage's B repeats its F, and a compressed boundary's encode and
        // decode passes are part of the op times the emulated cluster gives (as the
        // simulator's world adds them), not a drift.
        const auto fig = with_recompute(plain, st.recompute, profile_->model(), st.first_layer,
                                        st.last_layer, st.samples[k]);
        const auto codec =
            stage_codec_s(dev, profile_->model(), in,
                          last ? compression::none : st.send_compression, st.samples[k], *profile_);
        e.f += fig.f_s + codec.f;
        e.b += fig.b_s + codec.b;
        e.w += fig.w_s;
        out[st.devices[k]] = e;
      }
    }
  return out;
}

int environment_monitor::critical_device(const std::map<int, expected_ops>& expected,
                                         const std::vector<int>& devices) {
  int critical = -1;
  double longest = -1;
  for (int d : devices)
    if (const auto it = expected.find(d); it != expected.end()) {
      const auto& e = it->second;
      if (const double t = e.micro_batches * (e.f + e.b + e.w); t > longest) {
        longest = t;
        critical = d;
      }
    }
  return critical;
}

std::set<int> environment_monitor::measured_devices(const plan& p) const {
  const auto expected = expected_of(p);
  std::set<int> out;
  for (const auto& pipe : p.pipelines)
    for (const auto& st : pipe.stages)
      if (const int d = critical_device(expected, st.devices); d >= 0)
        out.insert(d);
  return out;
}

double environment_monitor::earliest_send_s(const plan& p) const {
  const auto expected = expected_of(p);
  double earliest = std::numeric_limits<double>::infinity();
  for (const auto& pipe : p.pipelines)
    for (const auto& st : pipe.stages) {
      double f = 0; // one op lasts as long as its slowest share
      for (int d : st.devices)
        if (const auto it = expected.find(d); it != expected.end())
          f = std::max(f, it->second.f);
      earliest = std::min(earliest, f);
    }
  return std::isfinite(earliest) ? earliest : 0.0;
}

environment_monitor::link_trackers& environment_monitor::trackers_of(int from, int to) {
  auto [it, fresh] = links_.try_emplace({from, to});
  if (fresh) {
    const auto assumed = cluster_.link_between(from, to);
    if (usable_reference(assumed.bandwidth_Bps))
      it->second.bandwidth.emplace(assumed.bandwidth_Bps, band_, window_);
    if (usable_reference(assumed.latency_s))
      it->second.latency.emplace(assumed.latency_s, band_, window_);
  }
  return it->second;
}

void environment_monitor::observe(const link_observation& o) {
  if (o.from == o.to)
    return;
  auto& t = trackers_of(o.from, o.to);
  const double drain = o.drained_s - o.start_s;
  if (t.bandwidth && o.bytes > 0 && drain > 0)
    changed_ |= t.bandwidth->add(o.bytes / drain);
  if (t.latency && o.arrival_s >= o.drained_s)
    changed_ |= t.latency->add(o.arrival_s - o.drained_s);
}

void environment_monitor::calibrate_devices(drift_band band, int skip, int samples) {
  calibration_ =
      calibration{.band = band, .skip = skip, .samples = std::max(samples, 1), .seen = {}};
}

bool environment_monitor::add_rescaled(int device, double ratio, rescale& r) {
  auto& tracker = devices_.at(device);
  if (r.factor > 0)
    return tracker.add(ratio / r.factor);
  r.seen.push_back(ratio);
  if (static_cast<int>(r.seen.size()) < calibration_->skip + calibration_->samples)
    return false;
  r.seen.erase(r.seen.begin(), r.seen.begin() + calibration_->skip);
  r.factor = median_of(std::move(r.seen)) / tracker.estimate();
  r.seen.clear();
  return false;
}

bool environment_monitor::add_device_ratio(int device, double ratio) {
  if (const auto r = rescales_.find(device); r != rescales_.end())
    return add_rescaled(device, ratio, r->second);
  if (const auto it = devices_.find(device); it != devices_.end())
    return it->second.add(ratio);
  if (!calibration_) {
    devices_.try_emplace(device, 1.0, band_, window_);
    return devices_.at(device).add(ratio);
  }
  auto& seen = calibration_->seen[device];
  seen.push_back(ratio);
  if (static_cast<int>(seen.size()) < calibration_->skip + calibration_->samples)
    return false;
  seen.erase(seen.begin(), seen.begin() + calibration_->skip);
  devices_.try_emplace(device, median_of(std::move(seen)), calibration_->band, window_);
  calibration_->seen.erase(device);
  return false;
}

void environment_monitor::observe_op(int device, op_kind kind, double seconds) {
  const auto it = expected_.find(device);
  if (it == expected_.end())
    return;
  const auto& e = it->second;
  const double expected = kind == op_kind::forward          ? e.f
                          : kind == op_kind::backward_input ? e.b
                                                            : e.w;
  if (expected > 0)
    changed_ |= add_device_ratio(device, seconds / expected);
}

void environment_monitor::observe_step_compute(int device, double seconds) {
  const auto it = expected_.find(device);
  if (it == expected_.end())
    return;
  const auto& e = it->second;
  const double expected = e.micro_batches * (e.f + e.b + e.w);
  if (expected > 0)
    changed_ |= add_device_ratio(device, seconds / expected);
}

void environment_monitor::observe_slowdown(int device, double slowdown) {
  if (slowdown > 0 && std::isfinite(slowdown))
    changed_ |= add_device_ratio(device, slowdown);
}

void environment_monitor::observe_stage_compute(const std::vector<int>& devices, double seconds) {
  if (const int critical = critical_device(expected_, devices); critical >= 0)
    observe_step_compute(critical, seconds);
}

std::vector<link_estimate> environment_monitor::links() const {
  std::vector<link_estimate> out;
  for (const auto& [pair, t] : links_) {
    link_estimate e;
    e.from = pair.first;
    e.to = pair.second;
    e.assumed = cluster_.link_between(pair.first, pair.second);
    e.estimated = e.assumed;
    if (t.bandwidth) {
      e.estimated.bandwidth_Bps = t.bandwidth->estimate();
      e.drifted |= t.bandwidth->drifted();
      e.samples = t.bandwidth->samples();
    }
    if (t.latency) {
      e.estimated.latency_s = t.latency->estimate();
      e.drifted |= t.latency->drifted();
      e.samples = std::max(e.samples, t.latency->samples());
    }
    out.push_back(e);
  }
  return out;
}

std::vector<device_estimate> environment_monitor::devices() const {
  std::vector<device_estimate> out;
  for (const auto& [dev, t] : devices_)
    out.push_back({dev, t.ratio(), t.drifted(), t.samples()});
  return out;
}

std::vector<int> environment_monitor::affected_devices() const {
  std::set<int> out;
  for (const auto& l : links())
    if (l.drifted) {
      out.insert(l.from);
      out.insert(l.to);
    }
  for (const auto& d : devices())
    if (d.drifted)
      out.insert(d.device);
  return {out.begin(), out.end()};
}

cluster environment_monitor::estimated_cluster() const {
  cluster c = cluster_;
  for (const auto& [pair, t] : links_) {
    const bool bw = t.bandwidth && t.bandwidth->drifted();
    const bool lat = t.latency && t.latency->drifted();
    if (!bw && !lat)
      continue;
    link_override o;
    o.from = {link_endpoint::scope::device, pair.first};
    o.to = {link_endpoint::scope::device, pair.second};
    o.directed = true;
    // A field within its band keeps the assumed value; an override must name both, since a
    // field left out falls back to the level default, not to a broader override.
    const auto assumed = cluster_.link_between(pair.first, pair.second);
    o.bandwidth_Bps = bw ? t.bandwidth->estimate() : assumed.bandwidth_Bps;
    o.latency_s = lat ? t.latency->estimate() : assumed.latency_s;
    c.overrides.push_back(o);
  }
  for (const auto& o : inferred_links())
    c.overrides.push_back(o);
  for (const auto& [dev, t] : devices_)
    if (t.drifted()) {
      c.devices.at(static_cast<size_t>(dev)).slowdown = t.ratio();
    }
  return c;
}

namespace {

/// The directed WAN path a transfer from x to y crosses, if any.
std::optional<std::pair<int, int>> wan_of(const cluster& c, int x, int y) {
  for (const auto& r : path_between(c, x, y))
    if (r.what == net_resource::kind::wan)
      return std::pair{r.a, r.b};
  return std::nullopt;
}

} // namespace

std::vector<link_override> environment_monitor::inferred_links() const {
  // Per WAN path and field: the measured pairs' ratios, and whether all of them drifted to
  // one side.
  struct field_votes {
    std::vector<double> ratios;
    int below = 0, above = 0, calm = 0;
    std::optional<double> ratio() const {
      const int n = static_cast<int>(ratios.size());
      if (n == 0 || calm > 0 || (below != n && above != n))
        return std::nullopt;
      return median_of(ratios);
    }
  };
  struct wan_votes {
    field_votes bandwidth, latency;
  };
  const auto vote = [](field_votes& v, const drift_tracker& t) {
    if (t.samples() == 0)
      return;
    v.ratios.push_back(t.ratio());
    if (!t.drifted())
      ++v.calm;
    else if (t.ratio() < 1)
      ++v.below;
    else
      ++v.above;
  };
  std::map<std::pair<int, int>, wan_votes> wans;
  for (const auto& [pair, t] : links_) {
    const auto wan = wan_of(cluster_, pair.first, pair.second);
    if (!wan)
      continue;
    auto& w = wans[*wan];
    if (t.bandwidth)
      vote(w.bandwidth, *t.bandwidth);
    if (t.latency)
      vote(w.latency, *t.latency);
  }
  std::vector<link_override> out;
  const int n = static_cast<int>(cluster_.devices.size());
  for (int x = 0; x < n; ++x)
    for (int y = 0; y < n; ++y) {
      if (x == y)
        continue;
      if (const auto it = links_.find({x, y}); it != links_.end()) {
        const auto& t = it->second;
        if ((t.bandwidth && t.bandwidth->samples() > 0) || (t.latency && t.latency->samples() > 0))
          continue; // measured: its own estimate holds
      }
      const auto wan = wan_of(cluster_, x, y);
      if (!wan)
        continue;
      const auto it = wans.find(*wan);
      if (it == wans.end())
        continue;
      const auto bw = it->second.bandwidth.ratio();
      const auto lat = it->second.latency.ratio();
      if (!bw && !lat)
        continue;
      const auto assumed = cluster_.link_between(x, y);
      link_override o;
      o.from = {link_endpoint::scope::device, x};
      o.to = {link_endpoint::scope::device, y};
      o.directed = true;
      o.bandwidth_Bps = assumed.bandwidth_Bps * bw.value_or(1.0);
      o.latency_s = assumed.latency_s * lat.value_or(1.0);
      out.push_back(o);
    }
  return out;
}

} // namespace deepcee::runtime
