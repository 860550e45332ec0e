#pragma once

#include "kernels/gpt/checkpoint.hpp"
#include "runtime/metrics_writer.hpp"
#include "runtime/text_corpus.hpp"
#include "runtime/train_config.hpp"

#include <atomic>
#include <csignal>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

/// Checkpoints, validation and metrics files of `deepcee run` and the coordinator's node of
/// `deepcee node`: the same files `deepcee train` writes, from weights gathered from the
/// stage actors.
namespace deepcee::tools {

/// A checkpoint to resume a job of `model` from; another model's checkpoint is an
/// input_error naming the file.
kernels::checkpoint_contents read_resume_checkpoint(const std::filesystem::path& file,
                                                    const runtime::model_config& model);

/// The files of a job's run directory and when to write them.
class job_files {
public:
  /// `format` overrides the config's metrics format ("csv" | "jsonl"). Without `weights`
  /// (dry mode: no stage holds any) no checkpoint or validation is ever due: the eval file
  /// stays empty and no checkpoint is written.
  job_files(const std::filesystem::path& dir, const runtime::train_config& train,
            const std::optional<std::string>& format, bool weights = true);

  runtime::metrics_writer& metrics() { return metrics_; }
  /// Whether the stages hold weights to check, validate and save.
  bool weights() const { return weights_; }
  const std::filesystem::path& checkpoint() const { return checkpoint_; }

  /// Every `checkpoint_every` steps (0: only at the end, which the caller writes itself).
  bool checkpoint_due(int step) const;
  /// Every `eval_every` steps and at the last one.
  bool eval_due(int step) const;

  /// The checkpoint after `step` steps, written atomically (temporary file, then rename),
  /// with the virtual clock the last after_step gave.
  void save(const std::vector<kernels::parameter_state>& params, int step);
  /// Whether the checkpoint file already holds step `step` (the final save is then skipped).
  bool saved(int step) const { return saved_step_ == step; }
  /// The validation loss of gathered weights (the whole model on one CPU backend, the
  /// batches `deepcee train` and `deepcee eval` use), also appended to the eval file.
  double evaluate(const std::vector<kernels::parameter_state>& params, int step,
                  const runtime::text_corpus& corpus, double elapsed_s);

  /// After step `step`, which ended at `clock_s` of virtual time (0 in wall time): when
  /// validation or a checkpoint is due, gathers the weights once (`gather`) and evaluates
  /// and/or saves them. Returns the validation loss if evaluated.
  std::optional<double>
  after_step(int step, double clock_s,
             const std::function<std::vector<kernels::parameter_state>()>& gather,
             const runtime::text_corpus& corpus, double elapsed_s);

  std::string names() const; ///< the files, for the closing line

private:
  runtime::train_config train_;
  runtime::metrics_writer metrics_, eval_;
  std::filesystem::path checkpoint_;
  bool weights_ = true;
  int saved_step_ = -1;
  double clock_s_ = 0; ///< the virtual clock after the last step
};

/// While it lives, Ctrl-C (SIGINT) sets a flag instead of ending the process, so the job
/// stops after its current step and saves its checkpoint, as `deepcee train` does.
/// With `second_leaves` (a member node, which waits for the coordinator's node to end the
/// job), a second Ctrl-C ends the process at once: it writes `second_leaves` as its one
/// line and exits 130.
class interrupt_flag {
public:
  explicit interrupt_flag(std::string second_leaves = "");
  ~interrupt_flag();
  interrupt_flag(const interrupt_flag&) = delete;
  interrupt_flag& operator=(const interrupt_flag&) = delete;
  bool raised() const;

private:
  void (*previous_)(int);
};

} // namespace deepcee::tools
