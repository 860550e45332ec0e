#pragma once

#include "runtime/adapt/link_statistics.hpp"
#include "runtime/cluster/cluster.hpp"
#include "runtime/plan/plan.hpp"
#include "runtime/plan/plan_allocation.hpp"
#include "runtime/sim/simulator.hpp"
#include "runtime/watch/job_snapshot.hpp"

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace deepcee::runtime {

/// What one finished step left, in plain values.
struct step_facts {
  int step = 0;
  std::optional<double> loss; ///< none in dry mode
  double start_s = 0;         ///< on the job's clock
  double end_s = 0;
  double compute_end_s = 0;
  double real_s = 0;                               ///< real seconds the step took
  std::vector<std::vector<timeline_op>> stage_ops; ///< by flat stage (pipeline by pipeline)
  std::vector<link_report> links;                  ///< as the job's adapter sees them
  int64_t dropped_messages = 0;
};

/// The job's name and settings as the snapshot shows them.
struct snapshot_header {
  std::string job, model, time_mode;
  std::vector<std::string> groups;
  int steps = 0;
};

/// Turns a job's steps into snapshots: the layout of the plan in force and the cluster's
/// names, each step's facts after it.
class snapshot_builder {
public:
  /// The simulator's run of a plan, for each device's memory need under it.
  using memory_estimate = std::function<sim_result(const plan&)>;

  snapshot_builder(snapshot_header header, plan p, cluster c, memory_estimate estimate);

  /// The job before its first step (or at `resumed_step` after a restore).
  job_snapshot initial(int resumed_step = 0) const;
  job_snapshot after_step(const step_facts& f);
  void validated(int step, double loss);
  /// An injected event or fault, and a decision of the adapter: the latest `recent` of each
  /// are kept in the snapshot.
  void injected(job_event e);
  void decided(adapter_decision d);
  /// The next steps run on `p` (after a rebalance or a re-plan): their snapshots show its
  /// stages, devices and allocation.
  void plan_in_force(const plan& p);
  /// The last snapshot built, with any validation since.
  const job_snapshot& latest() const { return last_; }

  /// Losses kept for the sparkline.
  static constexpr size_t history = 120;
  static constexpr size_t recent = 50;

private:
  std::string device_name(int device) const;
  /// The plan's stages and each device's place and memory need in it.
  void fill_layout(job_snapshot& s) const;
  void fill_stages(job_snapshot& s, const step_facts& f) const;
  void fill_links(job_snapshot& s, const step_facts& f) const;
  void fill_allocation(job_snapshot& s) const;
  /// Adds `s`'s figures to the run's history and gives `s` the history as it is now.
  void record_history(job_snapshot& s);

  plan plan_;
  cluster cluster_;
  memory_estimate estimate_;
  job_snapshot last_;
  run_history history_;
};

} // namespace deepcee::runtime
