#include "runtime/adapt/wall_transfers.hpp"

#include "runtime/base/statistics.hpp"

#include <algorithm>
#include <cmath>

namespace deepcee::runtime {

namespace {

/// `drain` read against `expected` with `allowance`: `expected` within it, else moved
/// toward `expected` by it.
double within_allowance(double drain, double expected, double allowance) {
  if (std::abs(drain - expected) <= allowance)
    return expected;
  return drain > expected ? drain - allowance : drain + allowance;
}

} // namespace

wall_transfers::wall_transfers(cluster c, std::vector<double> clock_error_s,
                               wall_transfer_options o)
    : cluster_(std::move(c)), clock_error_s_(std::move(clock_error_s)), options_(o) {
  for (double e : clock_error_s_)
    largest_error_s_ = std::max(largest_error_s_, e);
}

double wall_transfers::clock_error_s(int from_node, int to_node) const {
  const auto bound = [&](int node) {
    const auto k = static_cast<size_t>(node);
    return node >= 0 && k < clock_error_s_.size() ? clock_error_s_[k] : largest_error_s_;
  };
  return bound(from_node) + bound(to_node);
}

std::optional<double> wall_transfers::message_cost_s(int from_node, int to_node) const {
  const auto it = pairs_.find({from_node, to_node});
  return it == pairs_.end() ? std::nullopt : it->second.cost_s;
}

std::optional<double> wall_transfers::noise_s(int from_node, int to_node) const {
  const auto it = pairs_.find({from_node, to_node});
  if (it == pairs_.end() || !it->second.cost_s)
    return std::nullopt;
  return it->second.noise_s;
}

double wall_transfers::allowance_s(const node_pair& pair, int from_node, int to_node) const {
  return options_.noise_factor * pair.noise_s + clock_error_s(from_node, to_node);
}

double wall_transfers::informative_bytes(int from_node, int to_node, double bandwidth_Bps) const {
  const auto it = pairs_.find({from_node, to_node});
  if (it == pairs_.end() || !it->second.cost_s)
    return 0;
  // The drain at the distinguishable ratio exceeds the expected one by the allowance.
  const double excess = 1 / options_.distinguishable - 1;
  return excess > 0 ? bandwidth_Bps * allowance_s(it->second, from_node, to_node) / excess : 0;
}

bool wall_transfers::reports(node_pair& pair, bool slower, bool informative) const {
  const bool toward_other = pair.slow ? !slower && informative : slower;
  if (pair.slow && !slower && !informative)
    return false; // too small to show that the link is back
  pair.run = toward_other ? pair.run + 1 : 0;
  if (pair.run >= options_.drift_samples) {
    pair.slow = !pair.slow;
    pair.run = 0;
  }
  return true;
}

void wall_transfers::calibrate(node_pair& pair, const real_message& m, double bytes,
                               bool queued) const {
  if (++pair.seen <= options_.warm_up || queued)
    return;
  const auto& first = m.parts.front();
  const double bandwidth = cluster_.link_between(first.from, first.to).bandwidth_Bps;
  pair.costs.push_back(m.arrival_s - m.send_s - bytes / bandwidth);
  if (static_cast<int>(pair.costs.size()) < options_.calibration)
    return;
  const double cost = median(pair.costs);
  std::vector<double> deviations;
  for (double c : pair.costs)
    deviations.push_back(std::abs(c - cost));
  pair.cost_s = cost;
  pair.noise_s = 1.4826 * median(std::move(deviations));
  pair.costs.clear();
}

std::vector<link_observation> wall_transfers::observe(const real_message& m) {
  if (m.parts.empty() || m.from_node == m.to_node)
    return {};
  double bytes = 0;
  for (const auto& p : m.parts)
    bytes += p.bytes;
  auto& pair = pairs_[{m.from_node, m.to_node}];
  const bool queued = m.send_s < pair.last_arrival_s;
  const double previous = pair.last_arrival_s;
  pair.last_arrival_s = std::max(pair.last_arrival_s, m.arrival_s);
  if (!pair.cost_s) {
    calibrate(pair, m, bytes, queued);
    return {};
  }
  const double start = std::max(m.send_s + *pair.cost_s, previous);
  const auto& first = m.parts.front();
  const double expected = bytes / cluster_.link_between(first.from, first.to).bandwidth_Bps;
  const double allowance = allowance_s(pair, m.from_node, m.to_node);
  const double measured = m.arrival_s - start;
  const bool as_the_cluster = std::abs(measured - expected) <= allowance;
  const bool informative = expected * (1 / options_.distinguishable - 1) > allowance;
  if (!reports(pair, !as_the_cluster && measured > expected, informative))
    return {};
  const double drain = within_allowance(measured, expected, allowance);
  if (drain <= 0)
    return {};
  std::vector<link_observation> out;
  for (const auto& p : m.parts) {
    // Each part drains at the message's bandwidth: its share of the message's drain time.
    const double share = bytes > 0 ? p.bytes / bytes : 1.0;
    const double drained = start + drain * share;
    out.push_back({.from = p.from,
                   .to = p.to,
                   .bytes = p.bytes,
                   .start_s = start,
                   .drained_s = drained,
                   .arrival_s = drained + cluster_.link_between(p.from, p.to).latency_s});
  }
  return out;
}

} // namespace deepcee::runtime
