#include "runtime/adapt/node_loss.hpp"
#include "runtime/adapt/snapshot_plan.hpp"
#include "runtime/adapt/state_move.hpp"
#include "runtime/plan/node_layout.hpp"
#include "runtime/sim/simulator.hpp"

#include <cstdio>

#include <algorithm>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>

namespace deepcee::runtime {

namespace {

bool contains(const std::vector<int>& v, int x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

/// Whether flat stage `flat` (`st`) survives the loss of `lost_nodes`.
bool stage_survives(const cluster& c, const stage_plan& st, size_t flat,
                    const std::vector<int>& lost_nodes, const std::vector<int>& stage_node) {
  if (!stage_node.empty() && contains(lost_nodes, stage_node.at(flat)))
    return false;
  return std::none_of(st.devices.begin(), st.devices.end(), [&](int d) {
    return contains(lost_nodes, c.devices.at(static_cast<size_t>(d)).node);
  });
}

/// `e` in the survivors' numbering (`node_of`, `device_of`: old index -> new, -1 lost).
std::optional<link_endpoint> renumbered(const link_endpoint& e, const std::vector<int>& node_of,
                                        const std::vector<int>& device_of) {
  if (e.what == link_endpoint::scope::region)
    return e;
  const auto& table = e.what == link_endpoint::scope::node ? node_of : device_of;
  const int now = table.at(static_cast<size_t>(e.index));
  if (now < 0)
    return std::nullopt;
  return link_endpoint{e.what, now};
}

} // namespace

surviving_state surviving_holders(const cluster& c, const plan& running,
                                  const std::vector<int>& lost_nodes,
                                  const std::vector<int>& stage_node) {
  surviving_state out{running, {}, {}};
  std::set<int> held;
  size_t flat = 0;
  for (auto& pipe : out.holders.pipelines)
    for (auto& st : pipe.stages) {
      if (stage_survives(c, st, flat, lost_nodes, stage_node)) {
        for (int layer = st.first_layer; layer < st.last_layer; ++layer)
          held.insert(layer);
      } else {
        st.devices.clear();
        out.lost_stages.push_back(static_cast<int>(flat));
      }
      ++flat;
    }
  const int layers = running.model.n_layer + 2;
  for (int layer = 0; layer < layers; ++layer)
    if (!held.count(layer))
      out.lost_layers.push_back(layer);
  return out;
}

survivor_cluster cluster_without(const cluster& c, const std::vector<int>& lost_nodes) {
  survivor_cluster out;
  auto& s = out.survivors;
  s.name = c.name;
  s.regions = c.regions;
  s.links = c.links;
  std::vector<int> node_of(c.nodes.size(), -1), device_of(c.devices.size(), -1);
  for (size_t n = 0; n < c.nodes.size(); ++n) {
    if (contains(lost_nodes, static_cast<int>(n)))
      continue;
    node_of[n] = static_cast<int>(s.nodes.size());
    auto node = c.nodes[n];
    node.devices.clear();
    for (int d : c.nodes[n].devices) {
      auto dev = c.devices.at(static_cast<size_t>(d));
      dev.id = static_cast<int>(s.devices.size());
      dev.node = node_of[n];
      device_of[static_cast<size_t>(d)] = dev.id;
      node.devices.push_back(dev.id);
      out.original_device.push_back(d);
      s.devices.push_back(std::move(dev));
    }
    s.nodes.push_back(std::move(node));
  }
  for (const auto& o : c.overrides) {
    auto from = renumbered(o.from, node_of, device_of), to = renumbered(o.to, node_of, device_of);
    if (!from || !to)
      continue;
    auto kept = o;
    kept.from = *from;
    kept.to = *to;
    s.overrides.push_back(kept);
  }
  return out;
}

plan plan_for_survivors(const cluster& c, const profile_table& profile, const plan& running,
                        const std::vector<int>& lost_nodes, planner_options options) {
  const auto part = cluster_without(c, lost_nodes);
  options.global_batch = running.global_batch();
  options.model_name = running.model_name;
  auto next = plan_training(part.survivors, profile, options).best;
  const auto original = [&](int d) { return part.original_device.at(static_cast<size_t>(d)); };
  for (auto& pipe : next.pipelines)
    for (auto& st : pipe.stages)
      for (auto& d : st.devices)
        d = original(d);
  for (auto& e : next.excluded)
    e.device = original(e.device);
  for (int n : lost_nodes)
    for (int d : c.nodes.at(static_cast<size_t>(n)).devices)
      next.excluded.push_back({d, "node " + c.nodes.at(static_cast<size_t>(n)).name + " lost"});
  return next;
}

std::optional<node_change> first_kill(const link_timeline& script, const cluster& c,
                                      const plan& running, const std::vector<int>& lost) {
  const auto layout = layout_of(c, running);
  std::optional<node_change> first;
  for (const auto& e : script.node_changes())
    if (e.action == node_action::kill && !e.at_step && layout.runs_on(e.node) &&
        !contains(lost, e.node) && (!first || e.at_s < first->at_s))
      first = e;
  return first;
}

std::string layer_ranges(const std::vector<int>& layers) {
  std::string out;
  for (size_t i = 0; i < layers.size();) {
    size_t j = i;
    while (j + 1 < layers.size() && layers[j + 1] == layers[j] + 1)
      ++j;
    const std::string piece =
        std::to_string(layers[i]) + (j > i ? "-" + std::to_string(layers[j]) : std::string());
    out += out.empty() ? piece : (j + 1 == layers.size() ? " and " : ", ") + piece;
    i = j + 1;
  }
  return out.empty() ? out : (layers.size() == 1 ? "layer " : "layers ") + out;
}

std::string lost_line(const std::string& node, const std::string& why) {
  return "node " + node + " lost (" + why + ")";
}

std::string killed_by_script(double at_s) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "killed at %.4g s by the script", at_s);
  return buf;
}

std::string cannot_go_on(const std::string& lost, const std::vector<int>& lost_layers,
                         const std::string& snapshots, const std::string& checkpoint) {
  return lost + ": no other node held " + layer_ranges(lost_layers) + ", so the job cannot go on" +
         (snapshots.empty() ? "" : " (" + snapshots + ")") + "; " +
         (checkpoint.empty() ? "resume it from its newest checkpoint" : checkpoint);
}

double loss_noticed_s(double lost_at_s, double step_start_s, double liveness_s) {
  return std::max(lost_at_s, step_start_s) + liveness_s;
}

namespace {

/// Where a rollback takes the layers `held` lost from, at which step: the newest complete
/// snapshot of `running`, as the coordinator keeps them (snapshot_keeping); none where no
/// snapshot holds every lost layer.
struct snapshot_rollback {
  int64_t step = 0;
  plan holders;
};
std::optional<snapshot_rollback>
rollback_from_snapshot(const cluster& c, const profile_table& profile, const plan& running,
                       const surviving_state& held, const link_timeline& script,
                       const kill_moment& at) {
  const auto layout = plan_snapshots(c, running);
  if (!layout.needed())
    return std::nullopt;
  sim_options one;
  one.steps = 1;
  const double step_s = simulate(c, profile.model(), profile, running, {}, one).step_time_s;
  const auto cost = snapshot_send(c, profile.model(), running, layout, script, at.step_start_s);
  const auto step =
      newest_complete_snapshot(at.steps_done, snapshot_every(at.snapshot_every, cost, step_s));
  auto sources = snapshot_sources(running, layout, held.lost_stages);
  if (!step || !sources.lost_layers.empty())
    return std::nullopt;
  return snapshot_rollback{*step, std::move(sources.holders)};
}

} // namespace

kill_recovery recover_from_kill(const cluster& c, const profile_table& profile, const plan& running,
                                const link_timeline& script, std::vector<int>& lost,
                                const kill_moment& at, const planner_options& options) {
  const auto kill = first_kill(script, c, running, lost);
  if (!kill)
    throw std::logic_error("recover_from_kill: the script kills no node the plan uses");
  lost.push_back(kill->node);
  const auto held = surviving_holders(c, running, lost);
  std::optional<snapshot_rollback> back;
  if (!held.lost_layers.empty()) {
    back = rollback_from_snapshot(c, profile, running, held, script, at);
    if (!back)
      throw job_stopped(cannot_go_on(
          lost_line(c.nodes.at(static_cast<size_t>(kill->node)).name, killed_by_script(kill->at_s)),
          held.lost_layers));
  }
  kill_recovery out{plan_for_survivors(c, profile, running, lost, options), 0, 0};
  const double noticed = loss_noticed_s(kill->at_s, at.step_start_s, at.liveness_s);
  const auto& from = back ? back->holders : held.holders;
  out.restart_s =
      noticed + plan_state_moves(c, profile.model(), from, out.next, script, noticed).seconds;
  out.replayed = back ? static_cast<int>(at.steps_done - back->step) : 0;
  return out;
}

} // namespace deepcee::runtime
