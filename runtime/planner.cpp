#include "runtime/planner.hpp"

#include "runtime/baselines.hpp"
#include "runtime/errors.hpp"
#include "runtime/planner_search.hpp"
#include "runtime/units.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <set>

namespace deepcee::runtime {

int default_global_batch(const model_config& model) {
  return std::max(1, (1 << 19) / std::max(1, model.context));
}

grouping planner_grouping(const cluster& c, const model_spec& model) {
  grouping_options o;
  o.transfer_bytes = double(model.transfer_bytes(1, compression::none));
  return group_devices(c, o);
}

void check_model_fits(const cluster& c, const model_spec& model,
                      const std::filesystem::path& source) {
  double total = 0, largest_device = 0;
  for (const auto& d : c.devices) {
    total += d.memory_bytes;
    largest_device = std::max(largest_device, d.memory_bytes);
  }
  double need = double(model.total_state_bytes());
  if (need > total)
    fail_input(source, 0,
               "model " + model.name + " needs " + format_bytes(need) +
                   " for weights, gradients and AdamW state, but the cluster's " +
                   std::to_string(c.devices.size()) + " devices have " + format_bytes(total) +
                   " in total");
  double largest_layer = 0;
  for (const auto& l : model.layers)
    largest_layer = std::max(largest_layer, double(l.state_bytes()));
  if (largest_layer > largest_device)
    fail_input(source, 0,
               "model " + model.name + " has a layer that needs " + format_bytes(largest_layer) +
                   " of state, more than the largest device's " + format_bytes(largest_device));
}

std::string network_group_name(const cluster& c, const network_group& g) {
  std::set<int> regions;
  for (int n : g.nodes)
    regions.insert(c.nodes[size_t(n)].region);
  size_t region_nodes = 0;
  for (const auto& n : c.nodes)
    region_nodes += regions.count(n.region);
  std::string s;
  if (region_nodes == g.nodes.size() && regions.size() <= 3) {
    for (int reg : regions)
      s += (s.empty() ? "" : "+") + c.regions[size_t(reg)].name;
    return s;
  }
  for (size_t i = 0; i < g.nodes.size() && i < 3; ++i)
    s += (i ? "," : "") + c.nodes[size_t(g.nodes[i])].name;
  if (g.nodes.size() > 3)
    s += ",+" + std::to_string(g.nodes.size() - 3);
  return s;
}

namespace {

bool faster(const sim_result& a, const sim_result& b) {
  if (a.out_of_memory != b.out_of_memory)
    return !a.out_of_memory;
  return a.samples_per_s > b.samples_per_s;
}

int auto_top_k(const cluster& c) {
  size_t n = c.devices.size();
  return n <= 64 ? 12 : n <= 256 ? 6 : 3;
}

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

std::string group_label(const cluster& c, const network_group& g) {
  std::string s;
  for (size_t i = 0; i < g.nodes.size() && i < 4; ++i)
    s += (i ? "," : "") + c.nodes[size_t(g.nodes[i])].name;
  if (g.nodes.size() > 4)
    s += ",... (" + std::to_string(g.nodes.size()) + " nodes)";
  return s;
}

/// Why a network group the plan does not use was left out: its slowest link to the
/// devices the plan uses, and what the best plan that used it would have achieved.
std::string exclusion_reason(const cluster& c, const network_group& g, const plan& best,
                             double best_rate, double rate_with_group) {
  std::set<int> used;
  for (const auto& pp : best.pipelines)
    for (const auto& st : pp.stages)
      used.insert(st.devices.begin(), st.devices.end());
  double slowest = 0;
  if (!used.empty()) {
    slowest = std::numeric_limits<double>::infinity();
    for (int u : used) {
      slowest = std::min(slowest, c.link_between(g.devices.front(), u).bandwidth_Bps);
      if (used.size() > 64)
        break;
    }
  }
  char buf[160];
  std::string why =
      "group " + group_label(c, g) + ": link to the plan's devices " + format_bandwidth(slowest);
  if (rate_with_group > 0)
    std::snprintf(buf, sizeof buf,
                  "; the best plan using it simulates at %.1f samples/s vs %.1f without",
                  rate_with_group, best_rate);
  else
    std::snprintf(buf, sizeof buf,
                  "; no plan using it fits memory or comes within 1.5x of %.1f samples/s",
                  best_rate);
  return why + buf;
}

} // namespace

planner_report plan_training(const cluster& c, const profile_table& profiles,
                             const planner_options& options) {
  auto t0 = std::chrono::steady_clock::now();
  const model_spec& model = profiles.model();
  check_model_fits(c, model, options.source);
  planner_report r;
  r.global_batch =
      options.global_batch > 0 ? options.global_batch : default_global_batch(model.config);
  if (options.global_batch < 0)
    fail_input(options.source, 0,
               "global batch " + std::to_string(options.global_batch) + " must be positive");
  r.groups = planner_grouping(c, model);
  cost_cache costs(c, profiles);

  auto simulate_plan = [&](const plan& p) {
    ++r.plans_simulated;
    return simulate(c, model, profiles, p);
  };

  // Baselines: each scored by the same simulator, over every device (as the issue
  // specifies) and restricted to each network group or region that can hold the model.
  auto baselines_t0 = std::chrono::steady_clock::now();
  baseline_request br;
  br.model_name = options.model_name;
  br.global_batch = r.global_batch;
  br.memory_fraction = options.memory_fraction;
  br.source = options.source;
  // The subsets a restricted baseline may use: network groups, then regions, each once.
  std::vector<std::pair<std::string, std::vector<int>>> subsets;
  if (options.restricted_baselines) {
    auto add = [&](std::string name, std::vector<int> devices) {
      if (devices.empty() || devices.size() == c.devices.size() ||
          !devices_can_hold(c, devices, model))
        return;
      for (const auto& s : subsets)
        if (s.second == devices)
          return;
      subsets.emplace_back(std::move(name), std::move(devices));
    };
    for (const auto& ng : r.groups.network)
      add(network_group_name(c, ng), ng.devices);
    for (size_t reg = 0; reg < c.regions.size(); ++reg) {
      std::vector<int> devices;
      for (const auto& d : c.devices)
        if (d.region == static_cast<int>(reg))
          devices.push_back(d.id);
      add(c.regions[reg].name, std::move(devices));
    }
    // On large clusters a baseline over one group costs seconds (metis's own search and a
    // simulation of hundreds of devices), so only the groups with the most aggregate
    // compute are tried: a baseline's best single group is among them in practice.
    const size_t keep = c.devices.size() > 64 ? 3 : subsets.size();
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
  }
  using maker = plan (*)(const cost_cache&, const baseline_request&);
  const std::pair<const char*, maker> baselines[] = {{"dp", make_dp_plan},
                                                     {"gpipe", make_gpipe_plan},
                                                     {"megatron", make_megatron_plan},
                                                     {"metis", make_metis_plan}};
  for (const auto& [name, make] : baselines) {
    auto score = [&, make = make](strategy_result& row, const baseline_request& req) {
      try {
        row.chosen = make(costs, req);
        row.sim = simulate_plan(*row.chosen);
      } catch (const input_error& e) {
        row.chosen.reset();
        row.error = e.what();
      }
    };
    strategy_result row;
    row.strategy = name;
    row.baseline = name;
    score(row, br);
    r.strategies.push_back(std::move(row));

    // The fastest single-group variant (fitting memory first), as its own row.
    std::optional<strategy_result> best_group;
    for (const auto& [subset_name, subset] : subsets) {
      baseline_request rb = br;
      rb.devices = subset;
      rb.restricted_to = subset_name;
      strategy_result v;
      v.strategy = std::string(name) + " (" + subset_name + " only)";
      v.baseline = name;
      v.restricted_devices = subset;
      v.restricted_to = subset_name;
      score(v, rb);
      bool better = !best_group || (v.chosen && !best_group->chosen) ||
                    (v.chosen && best_group->chosen && faster(v.sim, best_group->sim));
      if (better)
        best_group = std::move(v);
    }
    if (best_group)
      r.strategies.push_back(std::move(*best_group));
  }

  r.baselines_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - baselines_t0).count();

  // The search: closed-form ranking, then the simulator on the shortlist.
  int top_k = options.simulate_top_k > 0 ? options.simulate_top_k : auto_top_k(c);
  search_outcome found = search_candidates(costs, r.groups, r.global_batch, options, size_t(top_k));
  r.plans_estimated = found.estimated;
  std::optional<plan> best;
  sim_result best_sim;
  bool try_greedy = std::find(options.schedules.begin(), options.schedules.end(),
                              schedule_kind::greedy) != options.schedules.end();
  for (size_t i = 0; i < found.ranked.size(); ++i) {
    std::vector<plan> variants{found.ranked[i].p};
    // Greedy zero-bubble schedules for the best few: the scheduler sees the real
    // heterogeneous stage costs, which a fixed schedule cannot.
    if (try_greedy && i < 3) {
      plan g = found.ranked[i].p;
      for (auto& pp : g.pipelines)
        pp.schedule = schedule_kind::greedy;
      variants.push_back(std::move(g));
    }
    for (auto& v : variants) {
      sim_result s = simulate_plan(v);
      if (!best || faster(s, best_sim)) {
        best = std::move(v);
        best_sim = std::move(s);
      }
    }
  }
  // Probe each network group the best plan leaves out with the best plan that used it:
  // either it wins, or its simulated rate is the reason the group stays out.
  std::vector<double> probe_rate(r.groups.network.size(), 0.0);
  for (size_t g = 0; g < r.groups.network.size() && best; ++g) {
    const auto& ng = r.groups.network[g];
    bool used_now = false;
    for (const auto& pp : best->pipelines)
      for (const auto& st : pp.stages)
        for (int d : st.devices)
          used_now = used_now || std::count(ng.devices.begin(), ng.devices.end(), d) > 0;
    if (used_now || !found.best_with_group[g])
      continue;
    sim_result s = simulate_plan(found.best_with_group[g]->p);
    probe_rate[g] = s.out_of_memory ? 0.0 : s.samples_per_s;
    if (faster(s, best_sim)) {
      best = found.best_with_group[g]->p;
      best_sim = std::move(s);
    }
  }
  r.origin = "search";
  if (options.compare_baselines)
    for (const auto& row : r.strategies)
      if (row.chosen && !row.sim.out_of_memory && (!best || faster(row.sim, best_sim))) {
        best = row.chosen;
        best->strategy = "deepcee";
        best_sim = row.sim;
        r.origin = "baseline " + row.strategy + " (no searched plan was faster)";
      }
  if (!best)
    fail_input(options.source, 0,
               "global batch " + std::to_string(r.global_batch) +
                   " cannot be split over the cluster's devices by any plan");

  // Which devices the plan leaves out, and why.
  std::set<int> used;
  for (const auto& pp : best->pipelines)
    for (const auto& st : pp.stages)
      used.insert(st.devices.begin(), st.devices.end());
  best->excluded.clear();
  std::set<int> reported;
  for (const auto& e : found.too_small)
    if (!used.count(e.device)) {
      best->excluded.push_back(e);
      reported.insert(e.device);
    }
  for (size_t g = 0; g < r.groups.network.size(); ++g) {
    const auto& ng = r.groups.network[g];
    std::string reason;
    for (int d : ng.devices) {
      if (used.count(d) || reported.count(d))
        continue;
      if (reason.empty()) {
        bool group_unused = std::none_of(ng.devices.begin(), ng.devices.end(),
                                         [&](int x) { return used.count(x) > 0; });
        reason = group_unused
                     ? exclusion_reason(c, ng, *best, best_sim.samples_per_s, probe_rate[g])
                     : "slower than the rest of its group: the fastest plan runs "
                       "without it";
      }
      best->excluded.push_back({d, reason});
    }
  }
  std::sort(best->excluded.begin(), best->excluded.end(),
            [](const auto& a, const auto& b) { return a.device < b.device; });

  for (size_t i = 0; i < r.strategies.size(); ++i) {
    const auto& row = r.strategies[i];
    if (row.chosen &&
        (r.best_baseline < 0 || faster(row.sim, r.strategies[size_t(r.best_baseline)].sim)))
      r.best_baseline = static_cast<int>(i);
  }

  r.best = *best;
  r.best_sim = best_sim;
  strategy_result mine;
  mine.strategy = "deepcee";
  mine.chosen = r.best;
  mine.sim = best_sim;
  r.strategies.push_back(std::move(mine));
  r.search_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

} // namespace deepcee::runtime
