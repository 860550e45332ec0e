#pragma once

#include "runtime/base/train_config.hpp"
#include "runtime/io/metrics_writer.hpp"
#include "tools/interrupt_flag.hpp"
#include "tools/progress.hpp"

#include <cmath>
#include <filesystem>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>

/// The one step loop of `deepcee train`, `deepcee run` and `deepcee node`: run a step, write
/// its metrics row, show it, validate and checkpoint when due, stop at the last step or at
/// Ctrl-C, and write the final checkpoint. What differs between the commands is a parameter:
/// the step_source (the single-device trainer, or a job's coordinator) and the step_view
/// (the metrics columns, a progress bar or plain lines).
namespace deepcee::tools {

/// One finished step, whatever ran it.
struct step_record {
  int step = 0;
  double loss = 0;
  double lr = 0;
  double grad_norm = 0;
  /// When it started and ended on its source's clock: virtual seconds of the emulated
  /// cluster, or real seconds (wall time, single-device training).
  double start_s = 0;
  double end_s = 0;

  double seconds() const { return end_s - start_s; }
};

/// The one layout of metrics.csv / metrics.jsonl, the same for train, run (every time
/// mode) and node (docs/formats.md, "Metrics files", gives the units):
/// step, loss, lr, grad_norm, step_s, time_s, samples_per_s, tokens_per_s, elapsed_s, clock.
const std::vector<std::string>& metrics_columns();
/// The columns of eval.csv / eval.jsonl: step, val_loss, elapsed_s.
const std::vector<std::string>& eval_columns();

/// How a run's steps are counted in its metrics: `clock` is "virtual", "dry" or "wall";
/// a step is `samples` sequences of `context` tokens. Dry steps compute no loss or
/// gradients: their loss and grad_norm cells stay empty (CSV) or absent (JSONL).
struct metrics_clock {
  std::string clock;
  double samples = 0;
  double context = 0;
};

/// What the progress line of a job's step shows after its counter, the same for `deepcee
/// run` and the member nodes of `deepcee node`: `clock` as in metrics_clock.
std::string job_progress_fields(const std::string& clock, double loss, double samples_per_s,
                                double clock_s);

/// A step's row in the layout of metrics_columns().
runtime::metric_row metrics_row(const step_record& r, double elapsed_s, const metrics_clock& m);

/// The weights after a step, read once for both its validation and its checkpoint.
class step_weights {
public:
  virtual ~step_weights() = default;
  /// The mean loss over the configured validation batches.
  virtual double validation_loss() = 0;
  /// Writes them with their AdamW moments as the checkpoint `file` (atomically).
  virtual void save(const std::filesystem::path& file) = 0;
};

/// What the loop drives.
class step_source {
public:
  virtual ~step_source() = default;
  virtual int steps_done() const = 0;
  /// Runs step steps_done() + 1; throws with the reason when it fails.
  virtual step_record step() = 0;
  /// The weights after the last step.
  virtual std::unique_ptr<step_weights> weights() = 0;
};

/// How a command shows its steps.
class step_view {
public:
  virtual ~step_view() = default;
  /// The metrics row of a finished step; `elapsed_s`: real seconds since the loop started.
  virtual runtime::metric_row row(const step_record& r, double elapsed_s) = 0;
  /// After the step's row is written.
  virtual void step_done(const step_record& r, double elapsed_s) = 0;
  virtual void validated(int step, double loss) = 0;
  /// After a checkpoint that was due at `step` (not the final one).
  virtual void checkpointed(int step, const std::filesystem::path& file) = 0;
  /// After the last step, before the final checkpoint.
  virtual void finish() = 0;
};

/// A progress bar (progress.hpp) from step `first` to `total`: each step's fields after the
/// counter, each validation loss on a line of its own.
class bar_view : public step_view {
public:
  bar_view(int first, int total) : bar_(first, total) {}
  void step_done(const step_record& r, double elapsed_s) override;
  void validated(int step, double loss) override;
  void checkpointed(int, const std::filesystem::path&) override {}
  void finish() override;

protected:
  /// What the bar shows of a step after its counter.
  virtual std::string fields(const step_record& r, double elapsed_s) = 0;

private:
  progress_bar bar_;
};

/// The files of a run directory (metrics, eval, checkpoint.safetensors) and when to write
/// them, the same for every command.
class run_files {
public:
  /// `format` overrides the config's metrics format ("csv" | "jsonl"). Without `weights`
  /// (dry mode: no stage holds any) no checkpoint or validation is ever due: the eval file
  /// stays empty and no checkpoint is written.
  run_files(const std::filesystem::path& dir, const runtime::train_config& train,
            const std::optional<std::string>& format, bool weights = true);

  /// The total of steps the run goes to.
  int steps() const { return train_.steps; }
  runtime::metrics_writer& metrics() { return metrics_; }
  runtime::metrics_writer& eval() { return eval_; }
  /// Whether there are weights to validate and save.
  bool weights() const { return weights_; }
  const std::filesystem::path& checkpoint() const { return checkpoint_; }

  /// Every `checkpoint_every` steps (0: only the final one).
  bool checkpoint_due(int step) const;
  /// Every `eval_every` steps and at the last one.
  bool eval_due(int step) const;

  /// Writes `w` as the checkpoint after `step` steps.
  void save(step_weights& w, int step);
  /// Whether the checkpoint file already holds step `step` (the final save is then skipped).
  bool saved(int step) const { return saved_step_ == step; }

  std::string names() const; ///< the files, for the closing line

private:
  runtime::train_config train_;
  runtime::metrics_writer metrics_, eval_;
  std::filesystem::path checkpoint_;
  bool weights_ = true;
  int saved_step_ = -1;
};

/// A step (or its validation or checkpoint) that failed: "step N: why".
struct step_failed : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// The weights could not be read after a step because a node of the job was lost meanwhile:
/// the validation and checkpoint due then are skipped, and the next ones follow the
/// recovery.
struct weights_unavailable : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// What a run of the loop did.
struct loop_outcome {
  int first_step = 0; ///< the first step it ran (steps_done + 1 at its start)
  int steps_done = 0; ///< at its end
  std::optional<step_record> first, last;
  double val_loss = NAN; ///< the last validation loss, and its step (0: none)
  int val_step = 0;

  int steps_run() const { return steps_done - first_step + 1; }
  /// "validation loss 2.1234 at step 40", or "no validation yet" before the first one.
  std::string validation() const;
};

/// Runs the steps of `source` up to `files.steps()` or until `interrupted`, then saves the
/// final checkpoint unless the last step's is there. A failure of a step, its validation or
/// its checkpoint throws step_failed naming the step (no final checkpoint then: a failed
/// step may leave its job mid-step).
loop_outcome run_steps(step_source& source, run_files& files, step_view& view,
                       const interrupt_flag& interrupted);

} // namespace deepcee::tools
