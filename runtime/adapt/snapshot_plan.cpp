#include "runtime/adapt/snapshot_plan.hpp"

#include <algorithm>
#include <cmath>
#include <set>
#include <string>

namespace deepcee::runtime {

namespace {

/// Each flat stage's node: `stage_node`'s, else its first device's.
std::vector<int> nodes_of_stages(const cluster& c, const plan& p,
                                 const std::vector<int>& stage_node) {
  if (!stage_node.empty())
    return stage_node;
  std::vector<int> out;
  for (const auto& pipe : p.pipelines)
    for (const auto& st : pipe.stages)
      out.push_back(st.devices.empty() ? -1 : c.devices.at(size_t(st.devices.front())).node);
  return out;
}

/// The layers whose holders all run on one node.
std::vector<int> layers_on_one_node(const plan& p, const std::vector<int>& node_of) {
  std::vector<std::set<int>> nodes(static_cast<size_t>(p.model.n_layer + 2));
  size_t flat = 0;
  for (const auto& pipe : p.pipelines)
    for (const auto& st : pipe.stages) {
      for (int layer = st.first_layer; layer < st.last_layer; ++layer)
        nodes.at(size_t(layer)).insert(node_of.at(flat));
      ++flat;
    }
  std::vector<int> out;
  for (size_t layer = 0; layer < nodes.size(); ++layer)
    if (nodes[layer].size() == 1)
      out.push_back(static_cast<int>(layer));
  return out;
}

/// The flat stages of pipeline 0 with their state: the running plan's flat stage `flat`.
const stage_plan& stage_at(const plan& p, int flat) {
  for (const auto& pipe : p.pipelines) {
    if (flat < static_cast<int>(pipe.stages.size()))
      return pipe.stages.at(size_t(flat));
    flat -= static_cast<int>(pipe.stages.size());
  }
  throw std::out_of_range("no flat stage " + std::to_string(flat));
}

} // namespace

snapshot_layout plan_snapshots(const cluster& c, const plan& p,
                               const std::vector<int>& stage_node) {
  snapshot_layout out;
  const auto node_of = nodes_of_stages(c, p, stage_node);
  out.single_node_layers = layers_on_one_node(p, node_of);
  if (out.single_node_layers.empty() || p.pipelines.empty())
    return out;
  const int total = static_cast<int>(node_of.size());
  for (int s = 0; s < static_cast<int>(p.pipelines.front().stages.size()); ++s) {
    int keeper = -1;
    for (int k = 1; k < total && keeper < 0; ++k)
      if (node_of.at(size_t((s + k) % total)) != node_of.at(size_t(s)))
        keeper = (s + k) % total;
    if (keeper < 0) // one node runs every stage: losing it loses every copy
      return {out.single_node_layers, {}, {}};
    out.stages.push_back(s);
    out.keepers.push_back(keeper);
  }
  return out;
}

snapshot_cost snapshot_send(const cluster& c, const model_spec& model, const plan& p,
                            const snapshot_layout& l, const link_timeline& script, double at_s) {
  snapshot_cost out;
  for (size_t i = 0; i < l.stages.size(); ++i) {
    const auto& st = stage_at(p, l.stages[i]);
    double bytes = 0;
    for (int layer = st.first_layer; layer < st.last_layer; ++layer) {
      const auto& spec = model.layers.at(size_t(layer));
      bytes += static_cast<double>(spec.param_bytes + spec.optimizer_bytes);
    }
    const int from = st.devices.front(), to = stage_at(p, l.keepers[i]).devices.front();
    out.bytes += bytes;
    out.seconds =
        std::max(out.seconds, transfer_duration(script.history(c, from, to), at_s, bytes));
  }
  return out;
}

int snapshot_interval(double send_s, double step_s, double budget) {
  if (!(send_s > 0) || !(step_s > 0) || !(budget > 0))
    return 1;
  const double steps = std::ceil(send_s / (budget * step_s) - 1e-9);
  return static_cast<int>(std::clamp(steps, 1.0, 1e9));
}

int snapshot_every(int set, const snapshot_cost& cost, double step_s) {
  return set >= 0 ? set : snapshot_interval(cost.seconds, step_s);
}

std::optional<int64_t> newest_complete_snapshot(int64_t steps_done, int every) {
  if (every <= 0 || steps_done < every + 1)
    return std::nullopt;
  return (steps_done - 1) / every * every;
}

void snapshot_ledger::kept(int64_t step, size_t index) {
  if (index >= stages_ || (complete_ && step <= *complete_))
    return;
  auto& got = arriving_[step];
  got.resize(stages_, false);
  got[index] = true;
  if (std::find(got.begin(), got.end(), false) != got.end())
    return;
  complete_ = step;
  arriving_.erase(arriving_.begin(), arriving_.upper_bound(step));
}

rollback_sources snapshot_sources(const plan& running, const snapshot_layout& l,
                                  const std::vector<int>& lost_stages) {
  rollback_sources out;
  out.layer_source.assign(size_t(running.model.n_layer + 2), -1);
  const auto lost = [&](int flat) {
    return std::find(lost_stages.begin(), lost_stages.end(), flat) != lost_stages.end();
  };
  out.holders = running;
  out.holders.pipelines.resize(std::min<size_t>(1, running.pipelines.size()));
  for (size_t i = 0; i < l.stages.size(); ++i) {
    const int own = l.stages[i], keeper = l.keepers[i];
    const int from = !lost(own) ? own : !lost(keeper) ? keeper : -1;
    auto& holder = out.holders.pipelines.front().stages.at(size_t(own));
    holder.devices = from < 0 ? std::vector<int>{} : stage_at(running, from).devices;
    for (int layer = holder.first_layer; layer < holder.last_layer; ++layer)
      out.layer_source.at(size_t(layer)) = from;
  }
  for (size_t layer = 0; layer < out.layer_source.size(); ++layer)
    if (out.layer_source[layer] < 0)
      out.lost_layers.push_back(static_cast<int>(layer));
  return out;
}

std::vector<std::vector<int>> sources_by_stage(const plan& next,
                                               const std::vector<int>& layer_source) {
  std::vector<std::vector<int>> out;
  for (const auto& pipe : next.pipelines)
    for (const auto& st : pipe.stages) {
      auto& one = out.emplace_back();
      for (int layer = st.first_layer; layer < st.last_layer; ++layer)
        one.push_back(layer_source.at(size_t(layer)));
    }
  return out;
}

std::optional<int64_t> newest_checkpoint(int64_t steps_done, int every) {
  if (every <= 0 || steps_done < every)
    return std::nullopt;
  return steps_done / every * every;
}

std::string checkpoint_note(std::optional<int64_t> step) {
  if (!step)
    return "it wrote no checkpoint before its end (checkpoint_every), so start it again";
  return "resume it from its newest complete checkpoint, step " + std::to_string(*step) + "'s";
}

} // namespace deepcee::runtime
