#include "runtime/planner/planner.hpp"

#include "runtime/base/errors.hpp"
#include "runtime/base/units.hpp"
#include "runtime/planner/planner_baselines.hpp"
#include "runtime/planner/planner_refine.hpp"
#include "runtime/planner/planner_search.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <limits>
#include <set>

namespace deepcee::runtime {

/// ideal_samples_per_s tries micro-batches of 1 to 64 samples: past that a device's
/// roofline is flat.
constexpr int ideal_max_micro_batch = 64;

/// GPT-3's tokens per step (planner.hpp's default_global_batch).
constexpr int default_tokens_per_step = 1 << 19;

int default_global_batch(const model_config& model) {
  return std::max(1, default_tokens_per_step / std::max(1, model.context));
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

double ideal_samples_per_s(const cluster& c, const profile_table& profiles) {
  cost_cache costs(c, profiles);
  double sum = 0;
  for (const auto& d : c.devices) {
    double best = 0;
    for (int n = 1; n <= ideal_max_micro_batch; n *= 2)
      best = std::max(best, costs.speed(d.id, n));
    sum += best;
  }
  return sum;
}

memory_shortfall worst_shortfall(const cluster& c, const sim_result& s) {
  memory_shortfall worst;
  for (const auto& d : s.devices) {
    const double usable = c.devices[size_t(d.device)].usable_memory_bytes();
    if (d.out_of_memory && (worst.device < 0 || d.peak_bytes / usable > worst.need / worst.usable))
      worst = {d.device, d.peak_bytes, usable};
  }
  return worst;
}

namespace {

std::string format_rate(double samples_per_s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", samples_per_s);
  return buf;
}

/// Candidates the simulator scores when planner_options::simulate_top_k is 0. The
/// simulator's cost grows with devices, so a larger cluster gets a shorter list: up to 64
/// devices 24 (a simulation there takes a millisecond or less, and the closed form and the
/// simulator disagree most on plans whose ranks are close), up to 256 devices 6, beyond that 3.
constexpr size_t top_k_small_cluster = 64;
constexpr size_t top_k_medium_cluster = 256;
constexpr int top_k_small = 24;
constexpr int top_k_medium = 6;
constexpr int top_k_large = 3;

/// exclusion_reason takes the slowest link from a left-out group to each device of the plan
/// when the plan has at most 64 devices; a larger plan is judged by the link to its first
/// device alone, which keeps the reason cheap on clusters of thousands of devices.
constexpr size_t slowest_link_max_devices = 64;

/// Names in a table cell: at most 3 regions or nodes in network_group_name, 4 nodes in a
/// group_label, so a cell stays one short line.
constexpr size_t name_max_parts = 3;
constexpr size_t label_max_nodes = 4;

} // namespace

std::string network_group_name(const cluster& c, const network_group& g) {
  std::set<int> regions;
  for (int n : g.nodes)
    regions.insert(c.nodes[size_t(n)].region);
  size_t region_nodes = 0;
  for (const auto& n : c.nodes)
    region_nodes += regions.count(n.region);
  std::string s;
  if (region_nodes == g.nodes.size() && regions.size() <= name_max_parts) {
    for (int reg : regions)
      s += (s.empty() ? "" : "+") + c.regions[size_t(reg)].name;
    return s;
  }
  for (size_t i = 0; i < g.nodes.size() && i < name_max_parts; ++i)
    s += (i ? "," : "") + c.nodes[size_t(g.nodes[i])].name;
  if (g.nodes.size() > name_max_parts)
    s += ",+" + std::to_string(g.nodes.size() - name_max_parts);
  return s;
}

double planner_time_limit_s(size_t devices) {
  return devices <= top_k_small_cluster ? 10.0 : 30.0;
}

double user_time_limit_s(std::optional<double> given, const std::filesystem::path& source) {
  if (given && *given < 0) {
    char text[32];
    std::snprintf(text, sizeof text, "%g", *given);
    fail_input(source, 0,
               std::string("--search-s ") + text +
                   ": the search's time limit must be positive (0: by cluster size)");
  }
  return given.value_or(0);
}

namespace {

/// Shares of planner_options::time_limit_s: the closed-form search stops enumerating at
/// 40% of it, the simulator's shortlist, probes and last improvement at 80%. The rest is
/// slack for the simulation that runs when the limit passes (one of a prime batch's
/// micro-batches of one sample on a large cluster takes a second or more).
constexpr double search_share = 0.4;
constexpr double simulate_share = 0.8;

using clock_point = std::chrono::steady_clock::time_point;

/// When the phase that may use `share` of the search's time limit stops; never for a
/// search without a limit.
clock_point stop_time(const cluster& c, const planner_options& o, clock_point t0, double share) {
  const double limit =
      o.time_limit_s != 0 ? o.time_limit_s : planner_time_limit_s(c.devices.size());
  if (limit < 0 || !o.prune)
    return clock_point::max();
  return t0 + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                  std::chrono::duration<double>(share * limit));
}

bool past(clock_point t) {
  return std::chrono::steady_clock::now() > t;
}

int auto_top_k(const cluster& c) {
  size_t n = c.devices.size();
  return n <= top_k_small_cluster    ? top_k_small
         : n <= top_k_medium_cluster ? top_k_medium
                                     : top_k_large;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

/// The batch the options ask for, or the model's default; a negative one is the user's
/// mistake, named as such.
int global_batch_of(const planner_options& options, const model_spec& model) {
  if (options.global_batch < 0)
    fail_input(options.source, 0,
               "global batch " + std::to_string(options.global_batch) + " must be positive");
  return options.global_batch > 0 ? options.global_batch : default_global_batch(model.config);
}

/// The fastest plan so far that fits memory and its simulation; of those that do not fit,
/// the closest (the smallest worst overflow), for the error when none fits.
struct best_plan {
  const cluster& c;
  std::optional<plan> p;
  sim_result sim;
  memory_shortfall closest;

  /// Whether a plan simulated as `s` would replace it (the first that fits always does).
  bool beaten_by(const sim_result& s) const {
    return !s.out_of_memory && (!p || ranks_faster(s, sim));
  }

  void offer(plan candidate, sim_result s) {
    if (s.out_of_memory) {
      note_unfit(s);
      return;
    }
    if (beaten_by(s)) {
      p = std::move(candidate);
      sim = std::move(s);
    }
  }

  void note_unfit(const sim_result& s) { note_unfit(worst_shortfall(c, s)); }
  void note_unfit(const memory_shortfall& m) {
    if (m.closer_than(closest))
      closest = m;
  }
};

/// Input error: no plan found fits memory. One line: the model, the closest plan's worst
/// device and its need, and the largest device's usable memory.
[[noreturn]] void fail_no_plan_fits(const cluster& c, const model_spec& model,
                                    const memory_shortfall& closest,
                                    const std::filesystem::path& source) {
  const device* largest = &c.devices.front();
  for (const auto& d : c.devices)
    if (d.memory_bytes > largest->memory_bytes)
      largest = &d;
  std::string what = "model " + model.name + " fits no plan in memory: the smallest per-device ";
  if (closest.device >= 0)
    what += "need found is " + format_bytes(closest.need) + " on " +
            c.devices[size_t(closest.device)].name + " (" + format_bytes(closest.usable) +
            " usable)";
  else
    what += "need is unknown (no plan could be built)";
  fail_input(source, 0,
             what + "; the largest device, " + largest->name + ", has " +
                 format_bytes(largest->usable_memory_bytes()) + " usable");
}

/// Every device some stage of `p` uses.
std::set<int> devices_used(const plan& p) {
  std::set<int> used;
  for (const auto& pp : p.pipelines)
    for (const auto& st : pp.stages)
      used.insert(st.devices.begin(), st.devices.end());
  return used;
}

std::string group_label(const cluster& c, const network_group& g) {
  std::string s;
  for (size_t i = 0; i < g.nodes.size() && i < label_max_nodes; ++i)
    s += (i ? "," : "") + c.nodes[size_t(g.nodes[i])].name;
  if (g.nodes.size() > label_max_nodes)
    s += ",... (" + std::to_string(g.nodes.size()) + " nodes)";
  return s;
}

/// A plan's shape in a few words: "2 pipelines x 3 stages, micro-batch 4, 1f1b".
std::string plan_shape(const plan& p) {
  size_t fewest = p.pipelines.front().stages.size(), most = fewest;
  for (const auto& pp : p.pipelines) {
    fewest = std::min(fewest, pp.stages.size());
    most = std::max(most, pp.stages.size());
  }
  const size_t n = p.pipelines.size();
  return std::to_string(n) + (n == 1 ? " pipeline x " : " pipelines x ") + std::to_string(fewest) +
         (most > fewest ? "-" + std::to_string(most) : "") + (most == 1 ? " stage" : " stages") +
         ", micro-batch " + std::to_string(p.micro_batch_size) + ", " +
         std::string(to_string(p.pipelines.front().schedule));
}

/// Why a network group the plan does not use was left out: its slowest link to the
/// devices the plan uses, and the best plan found that used it with its simulated rate
/// (`rate_with_group`; 0: not simulated, then the estimate's) beside the chosen plan's.
std::string exclusion_reason(const cluster& c, const network_group& g, const plan& best,
                             double best_rate, double rate_with_group,
                             const std::optional<search_candidate>& with_group) {
  const std::set<int> used = devices_used(best);
  double slowest = 0;
  if (!used.empty()) {
    slowest = std::numeric_limits<double>::infinity();
    for (int u : used) {
      slowest = std::min(slowest, c.link_between(g.devices.front(), u).bandwidth_Bps);
      if (used.size() > slowest_link_max_devices)
        break;
    }
  }
  char buf[160];
  std::string why =
      "group " + group_label(c, g) + ": link to the plan's devices " + format_bandwidth(slowest);
  if (!with_group) {
    std::snprintf(buf, sizeof buf,
                  "; no plan found using it fits memory or comes within %gx of the fastest "
                  "estimate",
                  search_prune_factor);
    return why + buf;
  }
  if (rate_with_group > 0)
    std::snprintf(buf, sizeof buf, "; the best plan found using it (%s) simulates at %.1f",
                  plan_shape(with_group->p).c_str(), rate_with_group);
  else
    std::snprintf(buf, sizeof buf, "; the best plan found using it (%s) is estimated at %.1f",
                  plan_shape(with_group->p).c_str(), with_group->est.samples_per_s);
  return why + buf + " samples/s, the chosen plan at " + format_rate(best_rate);
}

/// The shortlist's fastest plan by the simulator. Each is also tried with the greedy
/// schedule, which sees the real heterogeneous stage costs that a fixed schedule cannot,
/// unless it cannot win: no schedule runs a stage's ops faster than one after the other,
/// so a plan whose busiest stage alone (compute_bound_s) takes longer than the best step so
/// far is not simulated again.
best_plan simulate_shortlist(const cost_cache& costs, const search_outcome& found,
                             const planner_options& options, plan_scorer& score,
                             clock_point stop_at) {
  const bool try_greedy = std::find(options.schedules.begin(), options.schedules.end(),
                                    schedule_kind::greedy) != options.schedules.end();
  // Progress counts each candidate and each greedy try, simulated or pruned.
  const int total = static_cast<int>(found.ranked.size() * (try_greedy ? 2 : 1));
  best_plan best{score.c, {}, {}, {}};
  int done = 0;
  score.on_simulated = [&](int simulated) {
    if (options.progress)
      options.progress({"simulate", ++done, total, found.estimated, simulated});
  };
  const auto pruned = [&] { score.on_simulated(score.simulated); };
  for (const auto& candidate : found.ranked) {
    if (best.p && past(stop_at))
      break;
    best.offer(candidate.p, score(candidate.p));
  }
  if (!try_greedy)
    return best;
  for (const auto& candidate : found.ranked) {
    if (past(stop_at) || candidate.p.pipelines.front().schedule == schedule_kind::greedy ||
        (best.p && candidate.p.global_batch() / compute_bound_s(costs, candidate.p) <=
                       best.sim.samples_per_s)) {
      pruned();
      continue;
    }
    plan g = candidate.p;
    for (auto& pp : g.pipelines)
      pp.schedule = schedule_kind::greedy;
    sim_result s = score(g);
    best.offer(std::move(g), std::move(s));
  }
  return best;
}

/// Simulates, for each network group the best plan leaves out, the best plan that used it:
/// either it wins, or its simulated rate (per group, 0: none) is why the group stays out.
std::vector<double> probe_left_out_groups(const grouping& groups, const search_outcome& found,
                                          plan_scorer& score, best_plan& best,
                                          clock_point stop_at) {
  std::vector<double> probe_rate(groups.network.size(), 0.0);
  for (size_t g = 0; g < groups.network.size() && best.p && !past(stop_at); ++g) {
    const auto& ng = groups.network[g];
    bool used_now = false;
    for (const auto& pp : best.p->pipelines)
      for (const auto& st : pp.stages)
        for (int d : st.devices)
          used_now = used_now || std::count(ng.devices.begin(), ng.devices.end(), d) > 0;
    if (used_now || !found.best_with_group[g])
      continue;
    sim_result s = score(found.best_with_group[g]->p);
    probe_rate[g] = s.out_of_memory ? 0.0 : s.samples_per_s;
    best.offer(found.best_with_group[g]->p, std::move(s));
  }
  return probe_rate;
}

/// What refine_best may spend, in simulated work (simulation_work): about two seconds of
/// simulation on a two-core host busy with builds. The budget is in work, not seconds, so the plan
/// is the same on a busy host as on an idle one; a plan of many micro-batches and stages costs more
/// to simulate and gets fewer tries. At most refine_simulations simulations however small the
/// plans, since each also has a fixed cost.
constexpr double refine_work = 3.0e6;
constexpr int refine_simulations = 1000;
/// However costly its plans, the local search may take this many simulations (the time
/// limit still stops it): a plan over a thousand devices costs tens of thousands of units.
constexpr int refine_min_simulations = 96;

/// The greedy schedule's list scheduler costs the simulator about this many times a fixed
/// schedule's op order (measured on 18 stages of 32 micro-batches).
constexpr double greedy_simulation_factor = 8;

/// What simulating `p` costs, in units of about 0.7 microseconds on a two-core host busy with
/// builds: its ops (each pipeline's micro-batches times its stages, more under greedy) and its
/// devices (the all-reduce).
double simulation_work(const plan& p) {
  double work = 0;
  for (const auto& pp : p.pipelines) {
    const double factor = pp.schedule == schedule_kind::greedy ? greedy_simulation_factor : 1;
    work += factor * double(pp.micro_batches) * double(pp.stages.size());
    for (const auto& st : pp.stages)
      work += double(st.devices.size());
  }
  return work;
}

/// Local search on the simulator around the best plan: the moves of refine_moves, each kept
/// when the simulation is faster and fits; repeated from the improved plan until nothing
/// improves, the budget (refine_work, at least refine_min_simulations, at most
/// refine_simulations) is spent or the search's time is up.
/// The estimate that ranked the shortlist balances layers by compute alone; the simulator sees
/// the transfers, the schedule's bubbles and memory, so a neighbouring split or schedule can be
/// faster.
void refine_best(const cost_cache& costs, best_plan& best, const planner_options& options,
                 const search_outcome& found, plan_scorer& score, clock_point stop_at) {
  // Progress goes on in the "simulate" phase after the shortlist's entries, its total
  // growing with each simulation (how many the search will take is not known ahead).
  int done = static_cast<int>(found.ranked.size()) *
             (std::find(options.schedules.begin(), options.schedules.end(),
                        schedule_kind::greedy) != options.schedules.end()
                  ? 2
                  : 1);
  if (options.progress)
    score.on_simulated = [&](int simulated) {
      ++done;
      options.progress({"simulate", done, done, found.estimated, simulated});
    };
  double work = refine_work;
  int simulations = refine_simulations;
  bool improved = true;
  size_t start = 0; // each round goes on where the last improvement was found
  const auto spent = [&] {
    return simulations <= 0 ||
           (work <= 0 && refine_simulations - simulations >= refine_min_simulations);
  };
  while (best.p && improved && !spent()) {
    improved = false;
    std::vector<plan> moves = refine_moves(costs, *best.p, options);
    for (size_t i = 0; i < moves.size(); ++i) {
      if (spent() || past(stop_at))
        break;
      --simulations;
      plan& q = moves[(start + i) % moves.size()];
      work -= simulation_work(q);
      sim_result r = score(q);
      if (best.beaten_by(r)) {
        best.offer(std::move(q), std::move(r));
        improved = true;
        start = (start + i) % moves.size();
        break;
      }
    }
  }
  score.on_simulated = nullptr;
}

/// Takes a baseline's plan when no searched one is faster (the search space contains the
/// baselines; this makes it a guarantee), and says so in `origin`.
void fall_back_to_baselines(const std::vector<strategy_result>& rows, best_plan& best,
                            std::string& origin) {
  for (const auto& row : rows) {
    if (row.chosen && row.sim.out_of_memory)
      best.note_unfit(row.sim);
    if (row.chosen && best.beaten_by(row.sim)) {
      best.p = row.chosen;
      best.p->strategy = "deepcee";
      best.sim = row.sim;
      origin = "baseline " + row.strategy + " (no searched plan was faster)";
    }
  }
}

/// Which devices `best` leaves out, and why, by device: too small for any layer, in a left-out
/// network group (its link and probe_rate say why), or slower than the rest of its group.
std::vector<excluded_device> excluded_devices(const cluster& c, const grouping& groups,
                                              const search_outcome& found, const plan& best,
                                              double best_rate,
                                              const std::vector<double>& probe_rate) {
  const std::set<int> used = devices_used(best);
  std::vector<excluded_device> out;
  std::set<int> reported;
  for (const auto& e : found.too_small)
    if (!used.count(e.device)) {
      out.push_back(e);
      reported.insert(e.device);
    }
  for (size_t g = 0; g < groups.network.size(); ++g) {
    const auto& ng = groups.network[g];
    std::string reason;
    for (int d : ng.devices) {
      if (used.count(d) || reported.count(d))
        continue;
      if (reason.empty()) {
        bool group_unused = std::none_of(ng.devices.begin(), ng.devices.end(),
                                         [&](int x) { return used.count(x) > 0; });
        reason = group_unused ? exclusion_reason(c, ng, best, best_rate, probe_rate[g],
                                                 found.best_with_group[g])
                              : "slower than the rest of its group: the fastest plan runs "
                                "without it";
      }
      out.push_back({d, reason});
    }
  }
  std::sort(out.begin(), out.end(),
            [](const auto& a, const auto& b) { return a.device < b.device; });
  return out;
}

/// Index of the fastest row whose plan fits memory (planner_report::best_baseline), -1:
/// none.
int fastest_baseline(const std::vector<strategy_result>& rows) {
  int best = -1;
  for (size_t i = 0; i < rows.size(); ++i)
    if (rows[i].chosen && !rows[i].sim.out_of_memory &&
        (best < 0 || ranks_faster(rows[i].sim, rows[size_t(best)].sim)))
      best = static_cast<int>(i);
  return best;
}

} // namespace

planner_report plan_training(const cluster& c, const profile_table& profiles,
                             const planner_options& options) {
  const auto t0 = std::chrono::steady_clock::now();
  const model_spec& model = profiles.model();
  check_model_fits(c, model, options.source);
  planner_report r;
  r.global_batch = global_batch_of(options, model);
  r.groups = planner_grouping(c, model);
  cost_cache costs(c, profiles);
  plan_scorer score{c, model, profiles};

  const auto baselines_t0 = std::chrono::steady_clock::now();
  if (options.progress)
    score.on_simulated = [&](int simulated) {
      options.progress({"baselines", simulated, 0, 0, simulated});
    };
  r.strategies = score_baselines(costs, r.groups, r.global_batch, options, score);
  score.on_simulated = nullptr;
  r.baselines_s = seconds_since(baselines_t0);

  // The search: closed-form ranking, then the simulator on the shortlist.
  const int top_k = options.simulate_top_k > 0 ? options.simulate_top_k : auto_top_k(c);
  planner_options search_options = options; // its progress counts the baselines' simulations
  if (options.progress)
    search_options.progress = [&](planner_progress p) {
      p.plans_simulated = score.simulated;
      options.progress(p);
    };
  search_outcome found = search_candidates(costs, r.groups, r.global_batch, search_options,
                                           size_t(top_k), stop_time(c, options, t0, search_share));
  r.plans_estimated = found.estimated;
  const clock_point simulate_until = stop_time(c, options, t0, simulate_share);
  best_plan best = simulate_shortlist(costs, found, options, score, simulate_until);
  score.on_simulated = nullptr;
  const std::vector<double> probe_rate =
      probe_left_out_groups(r.groups, found, score, best, simulate_until);
  refine_best(costs, best, options, found, score, simulate_until);
  r.origin = "search";
  if (options.compare_baselines)
    fall_back_to_baselines(r.strategies, best, r.origin);
  best.note_unfit(found.closest);
  if (!best.p && best.closest.device >= 0)
    fail_no_plan_fits(c, model, best.closest, options.source);
  if (!best.p)
    fail_input(options.source, 0,
               "global batch " + std::to_string(r.global_batch) +
                   " cannot be split over the cluster's devices by any plan");
  best.p->excluded =
      excluded_devices(c, r.groups, found, *best.p, best.sim.samples_per_s, probe_rate);
  r.best_baseline = fastest_baseline(r.strategies);

  r.best = *best.p;
  r.best_sim = best.sim;
  strategy_result mine;
  mine.strategy = "deepcee";
  mine.chosen = r.best;
  mine.sim = best.sim;
  r.strategies.push_back(std::move(mine));
  r.plans_simulated = score.simulated;
  r.search_s = seconds_since(t0);
  return r;
}

} // namespace deepcee::runtime
