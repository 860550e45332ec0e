#include "runtime/adapt/adapt_policy.hpp"
#include "runtime/adapt/state_move.hpp"

#include "runtime/base/errors.hpp"
#include "runtime/sim/simulator.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <sstream>

namespace deepcee::runtime {

std::string_view to_string(decision_kind k) {
  switch (k) {
  case decision_kind::keep:
    return "keep";
  case decision_kind::rebalance:
    return "rebalance";
  case decision_kind::resplit:
    return "resplit";
  case decision_kind::compression:
    return "compression";
  case decision_kind::restore:
    return "restore";
  case decision_kind::replan:
    return "replan";
  }
  return "?";
}

namespace {

constexpr double never = std::numeric_limits<double>::infinity();

/// The simulator's view of plans on the estimated cluster: one step, no timeline (the
/// estimates are the network now).
class scorer {
public:
  scorer(const cluster& c, const model_spec& m, const profile_table& p) : c_(c), m_(m), p_(p) {}

  sim_result run(const plan& pl) const { return simulate(c_, m_, p_, pl); }
  double step(const plan& pl) const {
    const auto r = run(pl);
    return r.out_of_memory ? never : r.step_time_s;
  }

private:
  const cluster& c_;
  const model_spec& m_;
  const profile_table& p_;
};

struct candidate {
  decision_kind kind = decision_kind::keep;
  plan next;
  double step_s = never;
  double move_s = 0;
  std::string what;
};

/// When each pipeline's compute ends in the step (its slowest stage).
std::vector<double> pipeline_ends(const sim_result& r) {
  std::vector<double> out;
  for (const auto& stages : r.stages) {
    double end = 0;
    for (const auto& s : stages)
      end = std::max(end, s.compute_end_s);
    out.push_back(end);
  }
  return out;
}

std::string micro_batches_of(const plan& p) {
  std::string s;
  for (const auto& pipe : p.pipelines)
    s += (s.empty() ? "" : ",") + std::to_string(pipe.micro_batches);
  return "[" + s + "]";
}

/// Micro-batches, stages and encodings, for a re-plan's reason.
std::string shape_of(const plan& p) {
  std::ostringstream s;
  s << "micro-batches " << micro_batches_of(p) << " of " << p.micro_batch_size << ", stages [";
  int compressed = 0;
  for (size_t i = 0; i < p.pipelines.size(); ++i) {
    s << (i ? "," : "") << p.pipelines[i].stages.size();
    for (const auto& st : p.pipelines[i].stages)
      compressed += st.send_compression != compression::none;
  }
  s << "], " << to_string(p.pipelines.front().schedule);
  if (compressed > 0)
    s << ", " << compressed << " compressed boundaries";
  return s.str();
}

/// Micro-batches in proportion to each pipeline's measured rate (largest remainders, at
/// least one each), then single moves from the pipeline that ends last to the one that
/// ends first while the simulator predicts a shorter step.
candidate rebalance(const scorer& score, const plan& start) {
  candidate best{decision_kind::rebalance, start, score.step(start), 0, ""};
  const size_t n = start.pipelines.size();
  if (n < 2)
    return best;
  int total = 0;
  for (const auto& pipe : start.pipelines)
    total += pipe.micro_batches;
  const auto ends = pipeline_ends(score.run(start));
  std::vector<double> rate(n);
  double rate_sum = 0;
  for (size_t i = 0; i < n; ++i)
    rate_sum += rate[i] = start.pipelines[i].micro_batches / std::max(ends[i], 1e-12);
  plan guess = start;
  std::vector<std::pair<double, size_t>> remainders;
  int given = 0;
  for (size_t i = 0; i < n; ++i) {
    const double share = (total - static_cast<int>(n)) * rate[i] / rate_sum;
    guess.pipelines[i].micro_batches = 1 + static_cast<int>(std::floor(share));
    given += guess.pipelines[i].micro_batches;
    remainders.push_back({share - std::floor(share), i});
  }
  std::sort(remainders.rbegin(), remainders.rend());
  for (size_t k = 0; given < total; ++k, ++given)
    ++guess.pipelines[remainders[k % n].second].micro_batches;
  if (const double t = score.step(guess); t < best.step_s)
    best = {decision_kind::rebalance, guess, t, 0, ""};

  for (int iter = 0; iter < total; ++iter) {
    const auto e = pipeline_ends(score.run(best.next));
    const size_t slow = static_cast<size_t>(std::max_element(e.begin(), e.end()) - e.begin());
    if (best.next.pipelines[slow].micro_batches < 2)
      break;
    candidate step_best = best;
    for (size_t to = 0; to < n; ++to) {
      if (to == slow)
        continue;
      plan p = best.next;
      --p.pipelines[slow].micro_batches;
      ++p.pipelines[to].micro_batches;
      if (const double t = score.step(p); t < step_best.step_s)
        step_best = {decision_kind::rebalance, p, t, 0, ""};
    }
    if (step_best.step_s >= best.step_s)
      break;
    best = step_best;
  }
  best.what = "micro-batches " + micro_batches_of(start) + " -> " + micro_batches_of(best.next);
  return best;
}

bool touches(const stage_plan& st, const std::set<int>& affected) {
  return std::any_of(st.devices.begin(), st.devices.end(),
                     [&](int d) { return affected.count(d) > 0; });
}

/// Single samples between the devices of each affected stage while the step gets shorter.
candidate resplit(const scorer& score, const plan& start, const std::set<int>& affected) {
  candidate best{decision_kind::resplit, start, score.step(start), 0, ""};
  std::ostringstream what;
  for (size_t pi = 0; pi < start.pipelines.size(); ++pi)
    for (size_t si = 0; si < start.pipelines[pi].stages.size(); ++si) {
      const auto& st0 = start.pipelines[pi].stages[si];
      if (st0.devices.size() < 2 || !touches(st0, affected))
        continue;
      for (int iter = 0; iter < start.micro_batch_size; ++iter) {
        candidate round = best;
        const auto& st = best.next.pipelines[pi].stages[si];
        for (size_t a = 0; a < st.devices.size(); ++a)
          for (size_t b = 0; b < st.devices.size(); ++b) {
            if (a == b || st.samples[a] < 2)
              continue;
            plan p = best.next;
            --p.pipelines[pi].stages[si].samples[a];
            ++p.pipelines[pi].stages[si].samples[b];
            if (const double t = score.step(p); t < round.step_s)
              round = {decision_kind::resplit, p, t, 0, ""};
          }
        if (round.step_s >= best.step_s)
          break;
        best = round;
      }
      const auto& now = best.next.pipelines[pi].stages[si].samples;
      if (now != st0.samples) {
        what << "pipeline " << pi << " stage " << si << " samples";
        for (int s : now)
          what << ' ' << s;
        what << "; ";
      }
    }
  best.what = what.str();
  return best;
}

/// The best send compression of each stage whose transfers leave or reach an affected
/// device, one stage after another.
candidate recompress(const scorer& score, const plan& start, const std::set<int>& affected) {
  candidate best{decision_kind::compression, start, score.step(start), 0, ""};
  std::ostringstream what;
  for (size_t pi = 0; pi < start.pipelines.size(); ++pi) {
    const auto& stages = start.pipelines[pi].stages;
    for (size_t si = 0; si + 1 < stages.size(); ++si) {
      if (!touches(stages[si], affected) && !touches(stages[si + 1], affected))
        continue;
      for (auto c : {compression::none, compression::bf16, compression::int8}) {
        plan p = best.next;
        if (p.pipelines[pi].stages[si].send_compression == c)
          continue;
        p.pipelines[pi].stages[si].send_compression = c;
        if (const double t = score.step(p); t < best.step_s)
          best = {decision_kind::compression, p, t, 0, ""};
      }
      const auto now = best.next.pipelines[pi].stages[si].send_compression;
      if (now != stages[si].send_compression)
        what << "pipeline " << pi << " stage " << si << " sends " << to_string(now) << "; ";
    }
  }
  best.what = what.str();
  return best;
}

/// The planner on the estimated cluster, for the current global batch. A cluster on which
/// it finds no plan (every device too slow or too small now) leaves no candidate: the
/// cheaper changes still apply.
std::optional<candidate> replan(const scorer& score, const cluster& estimated,
                                const cluster& moves_on, const model_spec& model,
                                const profile_table& profile, const plan& current,
                                planner_options opts) {
  opts.global_batch = current.global_batch();
  opts.model_name = current.model_name;
  // The planner groups devices by their figures: a slow device's slowdown goes into them.
  cluster slowed = estimated;
  for (auto& d : slowed.devices)
    if (d.slowdown != 1) {
      d.fp32_flops /= d.slowdown;
      d.bf16_flops /= d.slowdown;
      d.mem_bandwidth_Bps /= d.slowdown;
      d.slowdown = 1;
    }
  planner_report report;
  try {
    report = plan_training(slowed, profile, opts);
  } catch (const input_error&) {
    return std::nullopt;
  }
  return candidate{decision_kind::replan, report.best, score.step(report.best),
                   state_move_seconds(moves_on, model, current, report.best),
                   "the planner's plan for the estimated cluster: " +
                       std::to_string(report.best.pipelines.size()) + " pipelines, " +
                       shape_of(report.best)};
}

std::string describe(const candidate& c) {
  std::string s(to_string(c.kind));
  if (!c.what.empty())
    s += ": " + c.what;
  while (!s.empty() && (s.back() == ' ' || s.back() == ';'))
    s.pop_back();
  return s;
}

} // namespace

bool worth_changing(double old_step_s, double new_step_s, double move_s,
                    const policy_options& options) {
  if (!(new_step_s < old_step_s * (1 - options.min_gain)))
    return false;
  return move_s <= 0 || move_s <= options.payback_steps * (old_step_s - new_step_s);
}

double state_move_seconds(const cluster& c, const model_spec& model, const plan& from,
                          const plan& to) {
  return plan_state_moves(c, model, from, to).seconds;
}

adapt_decision choose_adaptation(const cluster& estimated, const model_spec& model,
                                 const profile_table& profile, const plan& current,
                                 const plan& original, const std::vector<int>& affected,
                                 const policy_options& options) {
  return choose_adaptation(estimated, estimated, model, profile, current, original, affected,
                           options);
}

adapt_decision choose_adaptation(const cluster& estimated, const cluster& moves_on,
                                 const model_spec& model, const profile_table& profile,
                                 const plan& current, const plan& original,
                                 const std::vector<int>& affected, const policy_options& options) {
  const scorer score(estimated, model, profile);
  const std::set<int> hit(affected.begin(), affected.end());
  adapt_decision d;
  d.next = current;
  d.old_step_s = d.new_step_s = score.step(current);

  std::vector<candidate> candidates;
  candidates.push_back(rebalance(score, current));
  if (!hit.empty()) {
    candidates.push_back(resplit(score, current, hit));
    auto comp = recompress(score, current, hit);
    auto both = rebalance(score, comp.next);
    both.kind = decision_kind::compression;
    both.what = comp.what + both.what;
    candidates.push_back(comp);
    candidates.push_back(both);
  }
  const size_t restore_index = candidates.size();
  const double restore_move = state_move_seconds(moves_on, model, current, original);
  candidates.push_back(
      {decision_kind::restore, original, score.step(original), restore_move, "the starting plan"});
  if (options.allow_replan && !hit.empty())
    if (auto c = replan(score, estimated, moves_on, model, profile, current, options.planner))
      candidates.push_back(std::move(*c));

  // Ranked by the step time with the moves spread over the payback horizon.
  const auto cost = [&](const candidate& c) {
    if (c.move_s <= 0)
      return c.step_s;
    return options.payback_steps > 0 ? c.step_s + c.move_s / options.payback_steps : never;
  };
  const candidate* best = nullptr;
  for (const auto& c : candidates)
    if (worth_changing(d.old_step_s, c.step_s, c.move_s, options) &&
        (!best || cost(c) < cost(*best)))
      best = &c;
  // The starting plan wins a near tie: the planner chose it for the network as assumed,
  // and it undoes compression that costs accuracy.
  const candidate& restore = candidates[restore_index];
  if (best && best != &restore && restore.step_s <= best->step_s * (1 + options.min_gain) &&
      worth_changing(d.old_step_s, restore.step_s, restore.move_s, options))
    best = &restore;
  std::ostringstream why;
  if (!best) {
    why << "no candidate predicts a step more than " << options.min_gain * 100
        << "% shorter (or repays its moves within " << options.payback_steps << " steps)";
    d.reason = why.str();
    return d;
  }
  d.kind = best->kind;
  d.next = best->next;
  d.new_step_s = best->step_s;
  d.move_s = best->move_s;
  why << describe(*best);
  if (best->move_s > 0)
    why << " (moving state takes " << best->move_s << " s, repaid in "
        << best->move_s / (d.old_step_s - best->step_s) << " steps)";
  d.reason = why.str();
  return d;
}

} // namespace deepcee::runtime
