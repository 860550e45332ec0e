#pragma once

#include "actors/job/job_wiring.hpp"
#include "actors/protocol/interfaces.hpp"
#include "actors/protocol/job_context.hpp"
#include "kernels/train/checkpoint.hpp"
#include "runtime/cluster/cluster.hpp"
#include "runtime/cluster/profile.hpp"

#include <caf/actor_system.hpp>

#include <chrono>
#include <memory>
#include <vector>

namespace deepcee::actors {

/// The immutable context of a job, shared by every actor of a process. Throws input_error
/// when the training batch differs from the plan's or the corpus is too short (dry mode
/// reads no data). `script`: the fluctuation and fault script the emulated cluster follows.
std::shared_ptr<job_context>
make_job_context(const runtime::cluster& c, const runtime::profile_table& profile,
                 const runtime::plan& plan, const runtime::train_config& train,
                 std::shared_ptr<const runtime::text_corpus> corpus, run_mode mode = {},
                 const runtime::link_timeline& script = {});

/// Every actor of a job in one process (`deepcee run`): one stage actor per (pipeline,
/// stage), the coordinator, the adapter and the pipes, wired together (job_wiring.hpp) and
/// ended with it. The caller drives steps; each waits at most `step_timeout` of real time,
/// so a stuck actor is an error, not a hang.
class local_job {
public:
  /// `train.batch` must equal the plan's global batch. Throws input_error when the plan
  /// does not fit the cluster or the profile's model.
  local_job(caf::actor_system& sys, const runtime::cluster& c,
            const runtime::profile_table& profile, const runtime::plan& plan,
            const runtime::train_config& train, std::shared_ptr<const runtime::text_corpus> corpus,
            std::chrono::milliseconds step_timeout = std::chrono::minutes(2), run_mode mode = {},
            const runtime::link_timeline& script = {});
  local_job(const local_job&) = delete;
  local_job& operator=(const local_job&) = delete;

  /// Runs the next step; throws std::runtime_error with the failing actor's reason.
  step_result step();
  /// The whole model's weights and AdamW moments, from the stages (for a checkpoint).
  std::vector<kernels::parameter_state> gather_parameters();
  /// Loads a checkpoint's tensors into every stage; the next step is `step + 1`, starting
  /// at virtual time `clock_s` (the checkpoint's). Tensors that do not fit the job's model
  /// are an input_error naming `source`; each stage then keeps its own weights, but stages
  /// checked before may hold the file's: do not run it.
  void restore(const std::vector<kernels::parameter_state>& params, int step, double clock_s,
               const std::filesystem::path& source);
  std::vector<runtime::link_report> links();
  std::vector<link_sample> samples();
  /// The adapter's recent decisions, oldest first (adapter_actor.hpp).
  std::vector<adapt_record> decisions();
  /// Runs `next` (a plan of this job's layout: other micro-batch counts, device splits or
  /// compressions) from step `at_step` on, through the adapter as its policy does; returns
  /// the step it takes effect at. Throws std::runtime_error when the job refuses it.
  int64_t adapt_to(const runtime::plan& next, int64_t at_step);

  const job_context& context() const { return *wired_.job; }
  /// The wired actors, for a driver of its own (tools/job_steps.hpp).
  const wired_job& wired() const { return wired_; }
  /// For tests that drive the scheduler themselves (CAF's test_coordinator).
  const coordinator_actor& coordinator() const { return wired_.coordinator; }
  const std::vector<stage_actor>& stages() const { return wired_.stages; }
  int steps_done() const { return steps_done_; }

private:
  caf::actor_system& sys_;
  actor_guard guard_; ///< every actor of the job, ended with it
  wired_job wired_;
  std::chrono::milliseconds timeout_;
  int steps_done_ = 0;
};

} // namespace deepcee::actors
