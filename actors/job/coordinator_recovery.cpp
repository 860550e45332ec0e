#include "actors/job/coordinator_recovery.hpp"

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

/// "3 pipelines of 2, 2 and 1 stages on 5 devices".
std::string shape_of(const runtime::plan& p) {
  std::string stages;
  int devices = 0;
  for (size_t q = 0; q < p.pipelines.size(); ++q) {
    const auto& pipe = p.pipelines[q];
    stages += (q == 0                        ? ""
               : q + 1 == p.pipelines.size() ? " and "
                                             : ", ") +
              std::to_string(pipe.stages.size());
    for (const auto& s : pipe.stages)
      devices += static_cast<int>(s.devices.size());
  }
  return std::to_string(p.pipelines.size()) + " pipeline(s) of " + stages + " stage(s) on " +
         std::to_string(devices) + " device(s)";
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
    return {recovery_plan::kind::unused, {}, lost + ": the plan in force does not use it"};
  if (!held.lost_layers.empty())
    return {recovery_plan::kind::stop, {}, runtime::cannot_go_on(lost, held.lost_layers)};
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
  out.line = lost + ": the job goes on with the planner's plan for the survivors, " +
             shape_of(out.order.plan) + ", its layers taken from the surviving stages";
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
  runtime::plan next;
  try {
    next = runtime::plan_for_survivors(vc.hardware(), vc.profile(), st.plan, st.lost_nodes, {});
  } catch (const std::exception& e) {
    return {recovery_plan::kind::unused, {}, name + "; the plan in force stays (" + e.what() + ")"};
  }
  const double now = step_s(vc, st.plan), then = step_s(vc, next);
  const double move_s = runtime::plan_state_moves(vc.hardware(), vc.model(), st.plan, next).seconds;
  const int payback = runtime::policy_options{}.payback_steps;
  if (then >= now)
    return {recovery_plan::kind::unused,
            {},
            fmt::format("{}; the plan in force stays: the planner's plan for the nodes now there "
                        "is no faster ({:.4g} s a step against {:.4g} s)",
                        name, then, now)};
  if ((now - then) * payback <= move_s)
    return {recovery_plan::kind::unused,
            {},
            fmt::format("{}; the plan in force stays: the planner's plan for the nodes now "
                        "there ({:.4g} s a step against {:.4g} s) would not repay its {:.4g} s "
                        "move within {} steps",
                        name, then, now, move_s, payback)};
  recovery_plan out{recovery_plan::kind::go_on, {}, {}};
  out.order.plan = std::move(next);
  out.order.survivors = true;
  out.line = fmt::format("{}: re-planning onto it, {:.4g} s a step against {:.4g} s, the "
                         "move of {:.4g} s repaid within {} steps",
                         name, then, now, move_s, payback);
  return out;
}

} // namespace deepcee::actors
