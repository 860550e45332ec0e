#include "runtime/planner/planner_baselines.hpp"

#include "runtime/base/errors.hpp"
#include "runtime/planner/baselines.hpp"

#include <algorithm>
#include <optional>
#include <string>
#include <utility>

namespace deepcee::runtime {
namespace {

/// On a cluster of more than 64 devices a restricted baseline is tried on the 3 groups or
/// regions with the most aggregate compute only. A baseline over one group then costs
/// seconds (metis's own search, a simulation of hundreds of devices), and its best single
/// group is among the strongest in practice.
constexpr size_t restricted_all_subsets_max_devices = 64;
constexpr size_t restricted_subsets_large_cluster = 3;

/// Whether devices can hold the model's state between them and its largest layer on one
/// device: the test check_model_fits applies to the whole cluster.
bool devices_can_hold(const cluster& c, const std::vector<int>& devices, const model_spec& model) {
  double total = 0, largest_device = 0, largest_layer = 0;
  for (int d : devices) {
    total += c.devices[size_t(d)].memory_bytes;
    largest_device = std::max(largest_device, c.devices[size_t(d)].memory_bytes);
  }
  for (const auto& l : model.layers)
    largest_layer = std::max(largest_layer, double(l.state_bytes()));
  return double(model.total_state_bytes()) <= total && largest_layer <= largest_device;
}

/// A named set of devices a restricted baseline may use.
using device_subset = std::pair<std::string, std::vector<int>>;

/// The subsets a restricted baseline may use: network groups, then regions, each once, each
/// able to hold the model and smaller than the cluster; on a large cluster only those with
/// the most aggregate compute.
std::vector<device_subset> restricted_subsets(const cost_cache& costs, const grouping& groups,
                                              const model_spec& model) {
  const cluster& c = costs.cl();
  std::vector<device_subset> subsets;
  auto add = [&](std::string name, std::vector<int> devices) {
    if (devices.empty() || devices.size() == c.devices.size() ||
        !devices_can_hold(c, devices, model))
      return;
    for (const auto& s : subsets)
      if (s.second == devices)
        return;
    subsets.emplace_back(std::move(name), std::move(devices));
  };
  for (const auto& ng : groups.network)
    add(network_group_name(c, ng), ng.devices);
  for (size_t reg = 0; reg < c.regions.size(); ++reg) {
    std::vector<int> devices;
    for (const auto& d : c.devices)
      if (d.region == static_cast<int>(reg))
        devices.push_back(d.id);
    add(c.regions[reg].name, std::move(devices));
  }
  const size_t keep = c.devices.size() > restricted_all_subsets_max_devices
                          ? restricted_subsets_large_cluster
                          : subsets.size();
  if (subsets.size() > keep) {
    auto compute = [&](const std::vector<int>& devices) {
      double sum = 0;
      for (int d : devices)
        sum += costs.speed(d, 1);
      return sum;
    };
    std::stable_sort(subsets.begin(), subsets.end(), [&](const auto& a, const auto& b) {
      return compute(a.second) > compute(b.second);
    });
    subsets.resize(keep);
  }
  return subsets;
}

using baseline_maker = plan (*)(const cost_cache&, const baseline_request&);

/// One baseline's row: its plan and simulation, or why it has none.
strategy_result score_baseline(const cost_cache& costs, baseline_maker make,
                               const baseline_request& request, plan_scorer& score,
                               strategy_result row) {
  try {
    row.chosen = make(costs, request);
    row.sim = score(*row.chosen);
  } catch (const input_error& e) {
    row.chosen.reset();
    row.error = e.what();
  }
  return row;
}

/// The fastest of a baseline's restricted variants (a plan first, then fitting memory,
/// then samples/s), or none when there is no subset.
std::optional<strategy_result> best_restricted(const cost_cache& costs, const char* name,
                                               baseline_maker make, const baseline_request& all,
                                               const std::vector<device_subset>& subsets,
                                               plan_scorer& score) {
  std::optional<strategy_result> best;
  for (const auto& [subset_name, subset] : subsets) {
    baseline_request request = all;
    request.devices = subset;
    request.restricted_to = subset_name;
    strategy_result v;
    v.strategy = std::string(name) + " (" + subset_name + " only)";
    v.baseline = name;
    v.restricted_devices = subset;
    v.restricted_to = subset_name;
    v = score_baseline(costs, make, request, score, std::move(v));
    bool better = !best || (v.chosen && !best->chosen) ||
                  (v.chosen && best->chosen && ranks_faster(v.sim, best->sim));
    if (better)
      best = std::move(v);
  }
  return best;
}

} // namespace

bool ranks_faster(const sim_result& a, const sim_result& b) {
  if (a.out_of_memory != b.out_of_memory)
    return !a.out_of_memory;
  return a.samples_per_s > b.samples_per_s;
}

std::vector<strategy_result> score_baselines(const cost_cache& costs, const grouping& groups,
                                             int global_batch, const planner_options& options,
                                             plan_scorer& score) {
  baseline_request all;
  all.model_name = options.model_name;
  all.global_batch = global_batch;
  all.memory_fraction = options.memory_fraction;
  all.source = options.source;
  std::vector<device_subset> subsets;
  if (options.restricted_baselines)
    subsets = restricted_subsets(costs, groups, score.model);
  const std::pair<const char*, baseline_maker> baselines[] = {{"dp", make_dp_plan},
                                                              {"gpipe", make_gpipe_plan},
                                                              {"megatron", make_megatron_plan},
                                                              {"metis", make_metis_plan}};
  std::vector<strategy_result> rows;
  for (const auto& [name, make] : baselines) {
    strategy_result row;
    row.strategy = name;
    row.baseline = name;
    rows.push_back(score_baseline(costs, make, all, score, std::move(row)));
    if (auto best = best_restricted(costs, name, make, all, subsets, score))
      rows.push_back(std::move(*best));
  }
  return rows;
}

} // namespace deepcee::runtime
