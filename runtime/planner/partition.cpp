#include "runtime/planner/partition.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <string>
#include <utility>

namespace deepcee::runtime {

cost_cache::cost_cache(const cluster& c, const profile_table& profiles)
    : cluster_(&c), profiles_(&profiles),
      layers_(static_cast<int>(profiles.model().layers.size())) {
  // Devices with the same kind and figures cost the same; a 1024-device cluster has a
  // handful of classes, so the roofline runs a handful of times per micro-batch size.
  using key = std::tuple<std::string, double, double, double, int>;
  std::map<key, int> classes;
  for (const auto& d : c.devices) {
    key k{d.kind, d.fp32_flops, d.bf16_flops, d.mem_bandwidth_Bps, static_cast<int>(d.cls)};
    auto [it, added] = classes.emplace(k, static_cast<int>(class_device_.size()));
    if (added)
      class_device_.push_back(d.id);
    figure_class_.push_back(it->second);
  }
  state_prefix_.assign(size_t(layers_) + 1, 0.0);
  for (int l = 0; l < layers_; ++l)
    state_prefix_[size_t(l) + 1] =
        state_prefix_[size_t(l)] + double(profiles.model().layers[size_t(l)].state_bytes());
  for (int representative : class_device_) {
    const device& dev = c.devices[size_t(representative)];
    auto& sums = optimizer_prefix_.emplace_back(size_t(layers_) + 1, 0.0);
    for (int l = 0; l < layers_; ++l)
      sums[size_t(l) + 1] = sums[size_t(l)] + profiles.optimizer_s(dev, l, l + 1);
  }
}

const cost_cache::prefix& cost_cache::get(int device_id, int samples) const {
  int cls = figure_class_.at(size_t(device_id));
  auto it = memo_.find({cls, samples});
  if (it != memo_.end())
    return it->second;
  prefix p;
  size_t n = size_t(layers_) + 1;
  p.f.assign(n, 0);
  p.b.assign(n, 0);
  p.w.assign(n, 0);
  p.act_b.assign(n, 0);
  p.act_w.assign(n, 0);
  const device& dev = cluster_->devices[size_t(class_device_[size_t(cls)])];
  for (int l = 0; l < layers_; ++l) {
    layer_cost lc = profiles_->cost(dev, l, samples);
    size_t i = size_t(l);
    p.f[i + 1] = p.f[i] + lc.f_s;
    p.b[i + 1] = p.b[i] + lc.b_s;
    p.w[i + 1] = p.w[i] + lc.w_s;
    p.act_b[i + 1] = p.act_b[i] + double(lc.act_until_b);
    p.act_w[i + 1] = p.act_w[i] + double(lc.act_until_w);
  }
  return memo_.emplace(std::make_pair(cls, samples), std::move(p)).first->second;
}

double cost_cache::range_f(int device, int first, int last, int samples) const {
  const auto& p = get(device, samples);
  return p.f[size_t(last)] - p.f[size_t(first)];
}
double cost_cache::range_b(int device, int first, int last, int samples) const {
  const auto& p = get(device, samples);
  return p.b[size_t(last)] - p.b[size_t(first)];
}
double cost_cache::range_w(int device, int first, int last, int samples) const {
  const auto& p = get(device, samples);
  return p.w[size_t(last)] - p.w[size_t(first)];
}
double cost_cache::range_time(int device, int first, int last, int samples) const {
  const auto& p = get(device, samples);
  size_t a = size_t(first), z = size_t(last);
  return (p.f[z] - p.f[a]) + (p.b[z] - p.b[a]) + (p.w[z] - p.w[a]);
}
double cost_cache::range_act_until_b(int device, int first, int last, int samples) const {
  const auto& p = get(device, samples);
  return p.act_b[size_t(last)] - p.act_b[size_t(first)];
}
double cost_cache::range_act_until_w(int device, int first, int last, int samples) const {
  const auto& p = get(device, samples);
  return p.act_w[size_t(last)] - p.act_w[size_t(first)];
}
double cost_cache::range_activation(int device, int first, int last, int samples) const {
  return range_act_until_b(device, first, last, samples) +
         range_act_until_w(device, first, last, samples);
}
stage_figures cost_cache::stage(int device, int first, int last, int samples,
                                bool recompute) const {
  const auto& p = get(device, samples);
  const size_t a = size_t(first), z = size_t(last);
  stage_figures plain;
  plain.f_s = p.f[z] - p.f[a];
  plain.b_s = p.b[z] - p.b[a];
  plain.w_s = p.w[z] - p.w[a];
  plain.act_until_b = p.act_b[z] - p.act_b[a];
  plain.act_until_w = p.act_w[z] - p.act_w[a];
  return with_recompute(plain, recompute, profiles_->model(), first, last, samples);
}

double cost_cache::range_state(int first, int last) const {
  return state_prefix_[size_t(last)] - state_prefix_[size_t(first)];
}
double cost_cache::range_optimizer(int device, int first, int last) const {
  const auto& sums = optimizer_prefix_[size_t(figure_class_.at(size_t(device)))];
  return sums[size_t(last)] - sums[size_t(first)];
}
double cost_cache::speed(int device, int samples) const {
  return samples / range_time(device, 0, layers_, samples);
}

std::vector<int> split_proportional(int total, const std::vector<double>& weights, int min_each) {
  const int n = static_cast<int>(weights.size());
  if (n == 0 || total < min_each * n)
    throw std::invalid_argument("cannot split " + std::to_string(total) + " into " +
                                std::to_string(n) + " shares of at least " +
                                std::to_string(min_each));
  std::vector<int> out(size_t(n), min_each);
  int left = total - min_each * n;
  double sum = std::accumulate(weights.begin(), weights.end(), 0.0);
  if (left == 0 || !(sum > 0)) {
    for (int i = 0; left > 0; i = (i + 1) % n, --left)
      ++out[size_t(i)];
    return out;
  }
  // Largest remainder over the whole total, so a device twice as fast gets twice the
  // samples where the minimum allows it.
  std::vector<double> ideal(static_cast<size_t>(n));
  std::vector<double> rem(static_cast<size_t>(n));
  int given = 0;
  for (int i = 0; i < n; ++i) {
    ideal[size_t(i)] = total * weights[size_t(i)] / sum;
    int extra = std::max(0, static_cast<int>(std::floor(ideal[size_t(i)])) - min_each);
    extra = std::min(extra, left - given);
    out[size_t(i)] += extra;
    given += extra;
    rem[size_t(i)] = ideal[size_t(i)] - out[size_t(i)];
  }
  std::vector<int> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return rem[size_t(a)] > rem[size_t(b)]; });
  for (int k = 0; given < left; k = (k + 1) % n, ++given)
    ++out[size_t(order[size_t(k)])];
  return out;
}

int micro_batches_held(schedule_kind kind, int stage, int stages, int micro_batches) {
  int n = 1;
  switch (kind) {
  case schedule_kind::gpipe:
    n = micro_batches;
    break;
  case schedule_kind::one_f_one_b:
  case schedule_kind::zb_h1:
  case schedule_kind::greedy:
    n = stages - stage;
    break;
  case schedule_kind::zb_h2:
    n = 2 * (stages - stage) - 1;
    break;
  }
  return std::max(1, std::min(n, micro_batches));
}

bool fits_memory(const cost_cache& costs, const split_request& r, const std::vector<int>& bounds) {
  const cluster& c = costs.cl();
  for (size_t s = 0; s + 1 < bounds.size(); ++s) {
    double state = costs.range_state(bounds[s], bounds[s + 1]);
    for (size_t i = 0; i < r.devices[s].size(); ++i) {
      int d = r.devices[s][i];
      double need = state + r.in_flight[s] * costs.range_activation(d, bounds[s], bounds[s + 1],
                                                                    r.samples[s][i]);
      if (need > r.memory_fraction * c.devices[size_t(d)].memory_bytes)
        return false;
    }
  }
  return true;
}

namespace {

/// A stage's members as the partition sees them: (device, samples) pairs.
using member_list = std::vector<std::pair<int, int>>;

/// Distinct members per stage: devices of the same class with the same samples behave the
/// same, and the one with the least memory binds.
std::vector<member_list> distinct_members(const cluster& c, const split_request& r) {
  const size_t stages = r.devices.size();
  std::vector<member_list> members(stages);
  for (size_t s = 0; s < stages; ++s) {
    std::map<std::tuple<double, double, std::string, int>, std::pair<int, int>> best;
    for (size_t i = 0; i < r.devices[s].size(); ++i) {
      int d = r.devices[s][i];
      int smp = r.samples[s][i];
      const device& dev = c.devices[size_t(d)];
      auto key = std::make_tuple(dev.fp32_flops, dev.mem_bandwidth_Bps, dev.kind, smp);
      auto it = best.find(key);
      if (it == best.end() || c.devices[size_t(it->second.first)].memory_bytes > dev.memory_bytes)
        best[key] = {d, smp};
    }
    for (auto& [k, v] : best)
      members[s].push_back(v);
  }
  return members;
}

/// What the dynamic program asks of stage `s` over layers [a, z): its time (its slowest
/// member's) and whether every member holds the layers' state and in-flight activations.
struct stage_ranges {
  /// A member's prefix sums (taken once: the program asks for O(layers^2) ranges of each)
  /// and the memory it may fill.
  struct member_sums {
    const cost_cache::prefix* sums;
    double usable;
  };

  const cost_cache& costs;
  const split_request& r;
  std::vector<member_list> members;
  std::vector<std::vector<member_sums>> sums; ///< per stage, per member

  stage_ranges(const cost_cache& c, const split_request& request, std::vector<member_list> m)
      : costs(c), r(request), members(std::move(m)), sums(members.size()) {
    for (size_t s = 0; s < members.size(); ++s)
      for (auto [d, smp] : members[s])
        sums[s].push_back(
            {&costs.sums(d, smp), r.memory_fraction * costs.cl().devices[size_t(d)].memory_bytes});
  }

  /// cost_cache::range_time over the member's sums, the slowest member's.
  double time(int s, int a, int z) const {
    const size_t i = size_t(a), j = size_t(z);
    double t = 0;
    for (const auto& m : sums[size_t(s)]) {
      const auto& p = *m.sums;
      t = std::max(t, (p.f[j] - p.f[i]) + (p.b[j] - p.b[i]) + (p.w[j] - p.w[i]));
    }
    return t;
  }

  /// Every member holds the layers' state and its in-flight activations
  /// (cost_cache::range_activation over the member's sums).
  bool fits(int s, int a, int z) const {
    const size_t i = size_t(a), j = size_t(z);
    double state = costs.range_state(a, z);
    for (const auto& m : sums[size_t(s)]) {
      const auto& p = *m.sums;
      double act = (p.act_b[j] - p.act_b[i]) + (p.act_w[j] - p.act_w[i]);
      if (state + r.in_flight[size_t(s)] * act > m.usable)
        return false;
    }
    return true;
  }
};

/// The bounds of the split of `n` layers into the ranges' stages whose slowest stage is
/// fastest, considering only ranges each stage holds when `with_memory`, and that stage's
/// time; an infinite time and no bounds when no split qualifies.
std::pair<double, std::vector<int>> fastest_split(const stage_ranges& ranges, int n,
                                                  bool with_memory) {
  const int stages = static_cast<int>(ranges.members.size());
  const double inf = std::numeric_limits<double>::infinity();
  // best[s][j]: the smallest bottleneck of stages 0..s-1 covering layers [0, j).
  std::vector<std::vector<double>> best(size_t(stages) + 1,
                                        std::vector<double>(size_t(n) + 1, inf));
  std::vector<std::vector<int>> from(size_t(stages) + 1, std::vector<int>(size_t(n) + 1, -1));
  best[0][0] = 0;
  for (int s = 1; s <= stages; ++s) {
    int lo = s, hi = n - (stages - s);
    for (int j = lo; j <= hi; ++j) {
      for (int i = s - 1; i < j; ++i) {
        double prev = best[size_t(s) - 1][size_t(i)];
        if (prev == inf)
          continue;
        if (with_memory && !ranges.fits(s - 1, i, j))
          continue;
        double v = std::max(prev, ranges.time(s - 1, i, j));
        if (v < best[size_t(s)][size_t(j)]) {
          best[size_t(s)][size_t(j)] = v;
          from[size_t(s)][size_t(j)] = i;
        }
      }
    }
  }
  if (best[size_t(stages)][size_t(n)] == inf)
    return {inf, {}};
  std::vector<int> bounds(size_t(stages) + 1, 0);
  bounds[size_t(stages)] = n;
  for (int s = stages, j = n; s > 0; --s) {
    j = from[size_t(s)][size_t(j)];
    bounds[size_t(s) - 1] = j;
  }
  return {best[size_t(stages)][size_t(n)], std::move(bounds)};
}

} // namespace

layer_split balance_layers(const cost_cache& costs, const split_request& r) {
  const int n = costs.layer_count();
  const int stages = static_cast<int>(r.devices.size());
  if (stages < 1 || stages > n)
    throw std::invalid_argument("balance_layers: " + std::to_string(stages) + " stages for " +
                                std::to_string(n) + " layers");
  const stage_ranges ranges{costs, r, distinct_members(costs.cl(), r)};
  layer_split out;
  if (r.respect_memory) {
    std::tie(out.bottleneck_s, out.bounds) = fastest_split(ranges, n, true);
    if (!std::isinf(out.bottleneck_s)) {
      out.fits = true;
      return out;
    }
  }
  std::tie(out.bottleneck_s, out.bounds) = fastest_split(ranges, n, false);
  out.fits = fits_memory(costs, r, out.bounds);
  return out;
}

const layer_split& split_memo::balance(const cost_cache& costs, const split_request& r) {
  // Runs of equal (class, samples, memory) are written once with their length: a stage
  // of a node's identical devices is one run, so a key stays short on large clusters.
  const cluster& c = costs.cl();
  std::vector<double> key{r.memory_fraction, r.respect_memory ? 1.0 : 0.0};
  for (size_t s = 0; s < r.devices.size(); ++s) {
    key.push_back(-1.0); // stage separator (every field below is >= 0)
    key.push_back(double(r.in_flight[s]));
    for (size_t i = 0; i < r.devices[s].size();) {
      const int d = r.devices[s][i];
      const int cls = costs.figure_class(d), smp = r.samples[s][i];
      const double mem = c.devices[size_t(d)].memory_bytes;
      size_t run = 1;
      for (; i + run < r.devices[s].size(); ++run) {
        const int e = r.devices[s][i + run];
        if (costs.figure_class(e) != cls || r.samples[s][i + run] != smp ||
            c.devices[size_t(e)].memory_bytes != mem)
          break;
      }
      key.insert(key.end(), {double(cls), double(smp), mem, double(run)});
      i += run;
    }
  }
  auto it = done_.find(key);
  if (it == done_.end())
    it = done_.emplace(std::move(key), balance_layers(costs, r)).first;
  return it->second;
}

std::vector<int> uniform_bounds(int layers, int stages) {
  if (stages < 1 || stages > layers)
    throw std::invalid_argument("uniform_bounds: " + std::to_string(stages) + " stages for " +
                                std::to_string(layers) + " layers");
  std::vector<int> b(size_t(stages) + 1, 0);
  for (int s = 0; s < stages; ++s)
    b[size_t(s) + 1] = b[size_t(s)] + layers / stages + (s < layers % stages ? 1 : 0);
  return b;
}

} // namespace deepcee::runtime
