#include "runtime/plan/replan_check.hpp"

#include <stdexcept>
#include <string>

namespace deepcee::runtime {

namespace {

bool same_model(const model_config& a, const model_config& b) {
  return a.n_layer == b.n_layer && a.d_model == b.d_model && a.n_head == b.n_head &&
         a.context == b.context && a.vocab == b.vocab;
}

} // namespace

void check_replan(const plan& running, const node_layout& layout, const cluster& c,
                  const plan& next, const std::vector<bool>& can_spawn) {
  if (!same_model(next.model, running.model))
    throw std::invalid_argument("a re-plan must keep the job's model");
  if (next.global_batch() != running.global_batch())
    throw std::invalid_argument("a re-plan must keep the global batch " +
                                std::to_string(running.global_batch()) + " (it has " +
                                std::to_string(next.global_batch()) + ")");
  validate_plan(next, static_cast<int>(c.devices.size()), "re-plan");
  if (layout.empty())
    return;
  // The nodes of the new plan must have joined the job (at its start, or as a spare while it
  // runs): those can spawn, and are connected to the others.
  const auto next_layout = layout_of(c, next);
  for (int n = 0; n < static_cast<int>(c.nodes.size()); ++n) {
    const auto k = static_cast<size_t>(n);
    if (next_layout.runs_on(n) && (k >= can_spawn.size() || !can_spawn[k]))
      throw std::invalid_argument("node " + c.nodes[k].name +
                                  " has not joined the job, so a re-plan cannot give it work");
  }
}

} // namespace deepcee::runtime
