#pragma once

#include "actors/job/job_wiring.hpp"
#include "kernels/train/checkpoint.hpp"
#include "runtime/base/train_config.hpp"
#include "runtime/io/trace_writer.hpp"
#include "runtime/plan/job_config.hpp"
#include "tools/job_watch.hpp"
#include "tools/script_log.hpp"
#include "tools/step_loop.hpp"

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

/// The steps of a job whose stages are actors, driven from its coordinator's process: every
/// actor of `deepcee run`, or the coordinator's node of `deepcee node` (stages on every
/// node). Checkpoints and validation use weights gathered from the stages: the same files
/// `deepcee train` writes.
namespace deepcee::tools {

/// The checkpoint `resume` (when given) that a job of `model`, read from `job_file`,
/// continues from. A dry-mode job (no weights) refuses it, naming `job_file`; another
/// model's checkpoint is an input_error naming the checkpoint.
std::optional<kernels::checkpoint_contents>
read_resume_checkpoint(const std::optional<std::string>& resume,
                       const std::filesystem::path& job_file, runtime::time_mode time,
                       const runtime::model_config& model);

/// The actor system of a job's process: the job's message types, two scheduler threads,
/// CAF's console log off (a node adds the middleman).
void configure_actors(actors::system_config& cfg);

class job_steps : public step_source {
public:
  /// `wait`: the longest one step, one gather of the weights or a restore may take in real
  /// time. The first `trace_steps` steps' results are kept for the run's trace.
  job_steps(caf::actor_system& sys, const actors::wired_job& job, std::chrono::milliseconds wait,
            int trace_steps = 0);

  int steps_done() const override { return done_; }
  /// Throws std::runtime_error with the coordinator's reason.
  step_record step() override;
  std::unique_ptr<step_weights> weights() override;

  /// Loads checkpoint `c` (read from `source`) into every stage and the coordinator's
  /// clock: the next step is c.info.step + 1. Tensors that do not fit the job's model are
  /// an input_error naming `source`.
  void restore(const kernels::checkpoint_contents& c, const std::filesystem::path& source);

  /// Publishes each step (and validation) to `w` from now on (nullptr: to none).
  void watch(job_watch* w) { watch_ = w; }
  /// Tells `log` of the events injected into the job (`deepcee inject`) at each step's
  /// start, before the step is returned (nullptr: none).
  void log_script(script_log* log) { script_ = log; }

  const std::vector<actors::step_result>& traced() const { return traced_; }
  /// trace.json (actors/job/run_trace.hpp): the traced steps and the adapter's link samples
  /// until the last of them ended, whichever node each came from.
  void write_trace(const std::filesystem::path& file, const runtime::cluster& cluster,
                   const std::vector<runtime::trace_instant>& injected = {}) const;

private:
  /// The adapter's totals per link so far.
  std::vector<runtime::link_report> link_totals() const;
  /// The adapter's decisions that came since the last call: printed, one line each, when
  /// the log level hides the adapter's own lines, and shown to the inspector.
  void show_new_decisions();

  caf::actor_system& sys_;
  const actors::wired_job& job_;
  std::chrono::milliseconds wait_;
  size_t trace_steps_;
  int done_ = 0;
  double clock_s_ = 0; ///< the last step's end in virtual time (0 in wall time)
  std::vector<actors::step_result> traced_;
  std::vector<runtime::plan> traced_plans_; ///< the plan that ran each traced step
  job_watch* watch_ = nullptr;
  script_log* script_ = nullptr;
  int64_t shown_ = 0; ///< the last decision shown (adapt_record::sequence)
};

} // namespace deepcee::tools
