#pragma once

#include "runtime/adapt/active_probe.hpp"
#include "runtime/adapt/adapt_policy.hpp"
#include "runtime/adapt/drift_tracker.hpp"
#include "runtime/adapt/environment_monitor.hpp"
#include "runtime/cluster/link_timeline.hpp"

#include <cstdint>
#include <optional>
#include <vector>

namespace deepcee::runtime {

struct adaptive_options {
  int steps = 1;
  drift_band band;
  policy_options policy;
  probe_options probes;
  /// Each observed transfer's drain and latency scaled by a seeded uniform factor in
  /// [1 - noise, 1 + noise]: what the monitor sees of a noisy network (the steps
  /// themselves follow the timeline).
  double sample_noise = 0;
  uint64_t seed = 1;
  /// How long a lost node goes unnoticed (the job's heartbeat_timeout): a kill of a node the
  /// plan uses is recovered from as the coordinator does (node_loss.hpp).
  double liveness_s = 3;
  /// The job file's snapshot_every (-1: auto): where a kill takes layers held on its node
  /// only, the job rolls back to its newest complete peer snapshot (snapshot_plan.hpp).
  int snapshot_every = -1;
};

struct adaptive_step {
  int step = 0;
  double start_s = 0; ///< on the timeline's clock
  double step_s = 0;  ///< including the moves of a re-plan and the probes at its start
  double samples_per_s = 0;
  /// What the policy decided at this step's end, when the monitor saw a drift begin or
  /// end (it takes effect at the next step).
  std::optional<adapt_decision> decision;
  double probe_hold_s = 0; ///< what the probes sent at its start held it
};

struct adaptive_result {
  int global_batch = 0;
  std::vector<adaptive_step> adaptive;
  std::vector<adaptive_step> fixed; ///< the static plan under the same timeline
};

/// The transfers one step of `p` makes between devices, as the monitor would see them if
/// the step ran from `start_s` for `step_s` under `timeline`. Each pipeline's micro-batches
/// spread evenly over the step. A micro-batch sends an activation from every device of a
/// stage to every device of the next whose samples overlap, and the gradient back. Each
/// transfer's drain and latency follow the device pair's link history. That is what the
/// simulator charges, without the FIFO wait, which the runtime's samples leave out too.
std::vector<link_observation> observed_transfers(const cluster& c, const model_spec& model,
                                                 const plan& p, const link_timeline& timeline,
                                                 double start_s, double step_s);

/// The adapter in the simulator. Step k runs under the timeline. The running adapter's
/// rule (step_adapter) reads the transfers the simulation records and each stage's compute.
/// It decides at the step's end when a drift began or ended. Its decision takes effect at
/// the next step boundary, as the runtime applies it.
///
/// A script's step event happens when the adapted run starts its step's ops. That is
/// take_injected at every boundary, as the runtime's coordinator takes it. So when decisions
/// changed the steps before, the adapted run meets the event at another time than the static
/// run.
///
/// A kill of a node the plan in force uses is a recovery (recover_from_kill): the step runs
/// again on the survivors' plan, charged from its start. A kill that leaves some layer on no
/// surviving node throws job_stopped.
///
/// A re-plan's state moves are charged to the step it starts, before its step events. So
/// are the active probes that the rule sends at its boundary (step_adapter::probes_due, run
/// on the script's link model by run_probes). The step's ops start once the probes' hold
/// and the moves are over.
adaptive_result simulate_adaptive(const cluster& c, const model_spec& model,
                                  const profile_table& profile, const plan& p,
                                  const link_timeline& timeline, const adaptive_options& options);

} // namespace deepcee::runtime
