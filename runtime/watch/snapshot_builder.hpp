#pragma once

#include "runtime/cluster/cluster.hpp"
#include "runtime/plan/plan.hpp"
#include "runtime/plan/plan_allocation.hpp"
#include "runtime/sim/simulator.hpp"
#include "runtime/watch/job_snapshot.hpp"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace deepcee::runtime {

/// What the job's adapter has seen of one link so far (its transfers' totals).
struct link_facts {
  int from_device = 0;
  int to_device = 0;
  int64_t transfers = 0;
  double bytes = 0;
  double busy_s = 0;       ///< sum of drain times
  double mean_delay_s = 0; ///< mean of arrival - send
};

/// What one finished step left, in plain values.
struct step_facts {
  int step = 0;
  std::optional<double> loss; ///< none in dry mode
  double start_s = 0;         ///< on the job's clock
  double end_s = 0;
  double compute_end_s = 0;
  double real_s = 0;                               ///< real seconds the step took
  std::vector<std::vector<timeline_op>> stage_ops; ///< by flat stage (pipeline by pipeline)
  std::vector<link_facts> links;
  int64_t dropped_messages = 0;
};

/// The job's name and settings as the snapshot shows them.
struct snapshot_header {
  std::string job, model, time_mode;
  std::vector<std::string> groups;
  int steps = 0;
};

/// Turns a job's steps into snapshots: the plan's layout and the cluster's names once, each
/// step's facts after it. `estimate` (the simulator's run of the plan) gives each device's
/// memory need.
class snapshot_builder {
public:
  snapshot_builder(snapshot_header header, plan p, cluster c, const sim_result& estimate);

  /// The job before its first step (or at `resumed_step` after a restore).
  job_snapshot initial(int resumed_step = 0) const;
  job_snapshot after_step(const step_facts& f);
  void validated(int step, double loss);
  /// An injected event or fault, and a decision of the adapter: the latest `recent` of each
  /// are kept in the snapshot.
  void injected(job_event e);
  void decided(adapter_decision d);
  /// The allocation `a` is in force from step `from_step` on (a decision of the adapter):
  /// the snapshots of that step and later show it.
  void allocated(int64_t from_step, plan_allocation a);
  /// The last snapshot built, with any validation since.
  const job_snapshot& latest() const { return last_; }

  /// Losses kept for the sparkline.
  static constexpr size_t history = 120;
  static constexpr size_t recent = 50;

private:
  std::string device_name(int device) const;
  void fill_stages(job_snapshot& s, const step_facts& f) const;
  void fill_links(job_snapshot& s, const step_facts& f) const;
  void fill_allocation(job_snapshot& s) const;

  plan plan_;
  cluster cluster_;
  job_snapshot last_;
  std::map<int64_t, plan_allocation> pending_; ///< by the step each takes effect at
};

} // namespace deepcee::runtime
