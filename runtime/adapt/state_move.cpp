#include "runtime/adapt/state_move.hpp"

#include <algorithm>
#include <limits>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>

namespace deepcee::runtime {

namespace {

/// The flat index of the first stage of `p` that runs `device` and holds `layer`, or -1.
int stage_holding(const plan& p, int device, int layer) {
  int flat = 0;
  for (const auto& pipe : p.pipelines)
    for (const auto& st : pipe.stages) {
      if (layer >= st.first_layer && layer < st.last_layer &&
          std::find(st.devices.begin(), st.devices.end(), device) != st.devices.end())
        return flat;
      ++flat;
    }
  return -1;
}

} // namespace

state_moves plan_state_moves(const cluster& c, const model_spec& model, const plan& from,
                             const plan& to, const link_timeline& script, double start_s) {
  std::map<int, std::set<int>> held; // layer -> devices holding it in `from`
  for (const auto& pipe : from.pipelines)
    for (const auto& st : pipe.stages)
      for (int layer = st.first_layer; layer < st.last_layer; ++layer)
        held[layer].insert(st.devices.begin(), st.devices.end());
  // Each pair's history once, not once per layer it carries.
  std::map<std::pair<int, int>, std::vector<link_timeline::piece>> histories;
  const auto history = [&](int x, int y) -> const std::vector<link_timeline::piece>& {
    auto [it, added] = histories.try_emplace({x, y});
    if (added)
      it->second = script.history(c, x, y);
    return it->second;
  };
  state_moves out;
  for (const auto& pipe : to.pipelines)
    for (const auto& st : pipe.stages)
      for (int d : st.devices) {
        double receive = 0;
        for (int layer = st.first_layer; layer < st.last_layer; ++layer) {
          const auto& holders = held[layer];
          if (holders.empty())
            throw std::invalid_argument("layer " + std::to_string(layer) +
                                        " is held by no stage of the running plan");
          if (holders.count(d))
            continue;
          const auto& spec = model.layers.at(static_cast<size_t>(layer));
          layer_move m;
          m.layer = layer;
          m.to_device = d;
          m.bytes = static_cast<double>(spec.param_bytes + spec.optimizer_bytes);
          m.seconds = std::numeric_limits<double>::infinity();
          for (int h : holders)
            if (const double t = transfer_duration(history(h, d), start_s + receive, m.bytes);
                t < m.seconds) {
              m.seconds = t;
              m.from_device = h;
            }
          receive += m.seconds;
          out.bytes += m.bytes;
          out.moves.push_back(m);
        }
        out.seconds = std::max(out.seconds, receive);
      }
  return out;
}

std::vector<std::vector<int>> layer_sources(const plan& from, const plan& to,
                                            const state_moves& moves) {
  std::vector<std::vector<int>> out;
  for (const auto& pipe : to.pipelines)
    for (const auto& st : pipe.stages) {
      auto& sources = out.emplace_back();
      for (int layer = st.first_layer; layer < st.last_layer; ++layer) {
        int source = -1;
        for (int d : st.devices) // one of its own devices held it: nothing crosses a link
          if (source < 0)
            source = stage_holding(from, d, layer);
        for (const auto& m : moves.moves)
          if (source < 0 && m.layer == layer &&
              std::find(st.devices.begin(), st.devices.end(), m.to_device) != st.devices.end())
            source = stage_holding(from, m.from_device, layer);
        if (source < 0)
          throw std::invalid_argument("layer " + std::to_string(layer) +
                                      " is held by no stage of the running plan");
        sources.push_back(source);
      }
    }
  return out;
}

} // namespace deepcee::runtime
