#pragma once

#include "runtime/base/model_spec.hpp"
#include "runtime/cluster/cluster.hpp"
#include "runtime/cluster/link_timeline.hpp"
#include "runtime/plan/plan.hpp"

#include <vector>

namespace deepcee::runtime {

/// One layer's weights and AdamW moments reaching a device of the new plan that did not
/// hold it, from the old plan's holder with the fastest link to it.
struct layer_move {
  int layer = 0;
  int from_device = 0;
  int to_device = 0;
  double bytes = 0;
  double seconds = 0; ///< over the link between the two devices
};

/// What a re-plan moves, and how long it takes: devices receive in parallel, each one's
/// layers one after another, so the move lasts as long as the slowest receiver's sum.
/// The simulator-side policy (state_move_seconds) and the running job's virtual clock both
/// read `seconds` from here, so their move times are one rule.
struct state_moves {
  std::vector<layer_move> moves;
  double bytes = 0;
  double seconds = 0;
};

/// Every layer a device holds in `to` but not in `from`: weights and both AdamW moments.
/// Gradients are not moved, as the next step rebuilds them. Each layer comes from a device
/// that held it, over `c`'s links as `script` has them when the move starts at `start_s`.
/// A receiver takes its layers one after another, each sent when the previous one arrived.
state_moves plan_state_moves(const cluster& c, const model_spec& model, const plan& from,
                             const plan& to, const link_timeline& script = {}, double start_s = 0);

/// For each stage of `to` (flat order: pipeline by pipeline) and each of its layers, the
/// stage of `from` (flat) it takes the layer's state from. That is the stage with one of its
/// own devices when one held the layer, or else the holder `moves` sends it from.
std::vector<std::vector<int>> layer_sources(const plan& from, const plan& to,
                                            const state_moves& moves);

} // namespace deepcee::runtime
