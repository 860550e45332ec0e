#include "actors/job/coordinator_recovery.hpp"
#include "actors/job/coordinator_replan.hpp"
#include "actors/job/snapshot_keeping.hpp"

#include "runtime/adapt/adapt_policy.hpp"
#include "runtime/adapt/node_loss.hpp"
#include "runtime/adapt/state_move.hpp"
#include "runtime/base/errors.hpp"
#include "runtime/sim/simulator.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <exception>

namespace deepcee::actors {

namespace {

/// cannot_go_on's line with why no snapshot helped and the newest checkpoint.
std::string cannot_go_on_line(const coordinator_state& st, const std::string& lost,
                              const std::vector<int>& layers, const std::string& snapshots) {
  const int64_t done = in_step(st.phase) ? st.result.step - 1 : st.next_step - 1;
  const auto checkpoint = runtime::newest_checkpoint(done, st.job->train.checkpoint_every);
  return runtime::cannot_go_on(lost, layers, snapshots, runtime::checkpoint_note(checkpoint));
}

} // namespace

recovery_plan plan_recovery(coordinator_state& st, const std::string& node,
                            const std::string& why) {
  const auto& c = st.cluster->hardware();
  const auto index = c.find_node(node);
  if (!index || std::count(st.lost_nodes.begin(), st.lost_nodes.end(), *index))
    return {};
  st.lost_nodes.push_back(*index);
  if (static_cast<size_t>(*index) < st.replanners.size())
    st.replanners[static_cast<size_t>(*index)] = nullptr;
  const std::string lost = runtime::lost_line(node, why);
  const auto held =
      runtime::surviving_holders(c, st.plan, st.lost_nodes, st.job->layout.stage_node);
  if (held.lost_stages.empty())
    return {recovery_plan::kind::no_change, {}, lost + ": the plan in force does not use it"};
  std::optional<int64_t> snapshot;
  if (!held.lost_layers.empty()) {
    const auto back = can_roll_back(st, held.lost_stages);
    if (!back.step)
      return {
          recovery_plan::kind::stop, {}, cannot_go_on_line(st, lost, held.lost_layers, back.why)};
    snapshot = back.step;
  }
  recovery_plan out{recovery_plan::kind::go_on, {}, {}};
  try {
    out.order.plan = runtime::plan_for_survivors(c, st.cluster->profile(), st.plan, st.lost_nodes,
                                                 runtime::planner_options{});
  } catch (const std::exception& e) {
    return {recovery_plan::kind::stop,
            {},
            lost + ": the surviving devices cannot run the job (" + e.what() + ")"};
  }
  out.order.survivors = true;
  if (snapshot) {
    out.order.from_snapshot = *snapshot;
    out.line = lost + ": no other node held " + runtime::layer_ranges(held.lost_layers) +
               "; the job rolls back to its snapshot of step " + std::to_string(*snapshot) +
               " and goes on with the planner's plan for the survivors, " +
               stages_of(out.order.plan) + ", its layers taken from the snapshot's copies";
    return out;
  }
  out.line = lost + ": the job goes on with the planner's plan for the survivors, " +
             stages_of(out.order.plan) + ", its layers taken from the surviving stages";
  return out;
}

namespace {

double step_s(const runtime::virtual_cluster& vc, const runtime::plan& p) {
  runtime::sim_options one;
  one.steps = 1;
  return runtime::simulate(vc.hardware(), vc.model(), vc.profile(), p, {}, one).step_time_s;
}

} // namespace

recovery_plan plan_for_spare(coordinator_state& st, int node, caf::strong_actor_ptr replanner,
                             std::string boot_id) {
  const auto n = static_cast<size_t>(node);
  std::erase(st.lost_nodes, node);
  if (n < st.replanners.size())
    st.replanners[n] = std::move(replanner);
  if (n < st.boot_ids.size())
    st.boot_ids[n] = std::move(boot_id);
  const auto& vc = *st.cluster;
  const std::string name = "node " + vc.hardware().nodes.at(n).name + " joined the running job";
  if (!st.job->mode.adapt)
    return {recovery_plan::kind::no_change, {}, name + "; the plan in force stays: adapt = false"};
  runtime::plan next;
  try {
    next = runtime::plan_for_survivors(vc.hardware(), vc.profile(), st.plan, st.lost_nodes, {});
  } catch (const std::exception& e) {
    return {
        recovery_plan::kind::no_change, {}, name + "; the plan in force stays (" + e.what() + ")"};
  }
  const double now = step_s(vc, st.plan), then = step_s(vc, next);
  const double move_s = runtime::state_move_seconds(vc.hardware(), vc.model(), st.plan, next);
  const runtime::policy_options policy;
  if (!runtime::worth_changing(now, then, move_s, policy))
    return {recovery_plan::kind::no_change,
            {},
            fmt::format("{}; the plan in force stays: the planner's plan for the nodes now there "
                        "({:.4g} s a step against {:.4g} s, a move of {:.4g} s) is not {:.0f}% "
                        "faster, or does not repay its move within {} steps",
                        name, then, now, move_s, policy.min_gain * 100, policy.payback_steps)};
  recovery_plan out{recovery_plan::kind::go_on, {}, {}};
  out.order.plan = std::move(next);
  out.order.survivors = true;
  out.line = fmt::format("{}: re-planning onto it, {:.4g} s a step against {:.4g} s, the "
                         "move of {:.4g} s repaid within {} steps",
                         name, then, now, move_s, policy.payback_steps);
  return out;
}

} // namespace deepcee::actors
