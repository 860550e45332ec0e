#include "tools/step_loop.hpp"

#include <spdlog/fmt/fmt.h>
#include <spdlog/spdlog.h>

#include <chrono>

namespace deepcee::tools {

namespace {

runtime::metrics_format format_of(const runtime::train_config& t,
                                  const std::optional<std::string>& format) {
  return runtime::parse_metrics_format(format ? *format : t.metrics_format);
}

std::string extension(runtime::metrics_format f) {
  return f == runtime::metrics_format::csv ? ".csv" : ".jsonl";
}

/// Validation and a checkpoint when due after `step`, from one read of the weights.
void after_step(step_source& source, run_files& files, step_view& view, int step, double elapsed_s,
                loop_outcome& out) {
  const bool evaluate = files.eval_due(step), save = files.checkpoint_due(step);
  if (!evaluate && !save)
    return;
  std::unique_ptr<step_weights> weights;
  try {
    weights = source.weights();
  } catch (const weights_unavailable& e) {
    spdlog::warn("step {}: no validation or checkpoint now: {}", step, e.what());
    return;
  }
  if (evaluate) {
    out.val_loss = weights->validation_loss();
    out.val_step = step;
    files.eval().write({{eval_columns()[0], int64_t{step}},
                        {eval_columns()[1], out.val_loss},
                        {eval_columns()[2], elapsed_s}});
    view.validated(step, out.val_loss);
  }
  if (save) {
    files.save(*weights, step);
    view.checkpointed(step, files.checkpoint());
  }
}

} // namespace

const std::vector<std::string>& metrics_columns() {
  static const std::vector<std::string> columns{
      "step",   "loss",          "lr",           "grad_norm", "step_s",
      "time_s", "samples_per_s", "tokens_per_s", "elapsed_s", "clock"};
  return columns;
}

const std::vector<std::string>& eval_columns() {
  static const std::vector<std::string> columns{"step", "val_loss", "elapsed_s"};
  return columns;
}

runtime::metric_row metrics_row(const step_record& r, double elapsed_s, const metrics_clock& m) {
  const auto& c = metrics_columns();
  const double seconds = r.seconds();
  const double samples_per_s = seconds > 0 ? m.samples / seconds : 0.0;
  runtime::metric_row row{{c[0], int64_t{r.step}}};
  const bool dry = m.clock == "dry"; // no loss or gradients computed
  if (!dry)
    row.emplace_back(c[1], r.loss);
  row.emplace_back(c[2], r.lr);
  if (!dry)
    row.emplace_back(c[3], r.grad_norm);
  row.insert(row.end(), {{c[4], seconds},
                         {c[5], r.end_s},
                         {c[6], samples_per_s},
                         {c[7], samples_per_s * m.context},
                         {c[8], elapsed_s},
                         {c[9], m.clock}});
  return row;
}

std::string job_progress_fields(const std::string& clock, double loss, double samples_per_s,
                                double clock_s) {
  if (clock == "wall")
    return fmt::format("loss {:.4f} | {:.1f} real samples/s", loss, samples_per_s);
  if (clock == "dry")
    return fmt::format("loss not computed (dry) | {:.1f} emulated samples/s | virtual {:.3f} s",
                       samples_per_s, clock_s);
  return fmt::format("loss {:.4f} | {:.1f} emulated samples/s | virtual {:.3f} s", loss,
                     samples_per_s, clock_s);
}

std::string loop_outcome::validation() const {
  if (val_step <= 0)
    return "no validation yet";
  return fmt::format("validation loss {:.4f} at step {}", val_loss, val_step);
}

void bar_view::step_done(const step_record& r, double elapsed_s) {
  bar_.update(r.step, fields(r, elapsed_s));
}

void bar_view::validated(int step, double loss) {
  bar_.message(fmt::format("step {}: validation loss {:.4f}", step, loss));
}

void bar_view::finish() {
  bar_.finish();
}

run_files::run_files(const std::filesystem::path& dir, const runtime::train_config& train,
                     const std::optional<std::string>& format, bool weights)
    : train_(train),
      metrics_(dir / ("metrics" + extension(format_of(train, format))), format_of(train, format)),
      eval_(dir / ("eval" + extension(format_of(train, format))), format_of(train, format)),
      checkpoint_(dir / "checkpoint.safetensors"), weights_(weights) {
  metrics_.declare_columns(metrics_columns());
  eval_.declare_columns(eval_columns());
}

bool run_files::checkpoint_due(int step) const {
  return weights_ && train_.checkpoint_every > 0 && step % train_.checkpoint_every == 0;
}

bool run_files::eval_due(int step) const {
  return weights_ &&
         ((train_.eval_every > 0 && step % train_.eval_every == 0) || step == train_.steps);
}

void run_files::save(step_weights& w, int step) {
  w.save(checkpoint_);
  saved_step_ = step;
}

std::string run_files::names() const {
  if (!weights_)
    return metrics_.path().filename().string() + ", " + eval_.path().filename().string();
  return metrics_.path().filename().string() + ", " + eval_.path().filename().string() + ", " +
         checkpoint_.filename().string();
}

loop_outcome run_steps(step_source& source, run_files& files, step_view& view,
                       const interrupt_flag& interrupted) {
  loop_outcome out;
  out.first_step = source.steps_done() + 1;
  const auto start = std::chrono::steady_clock::now();
  while (source.steps_done() < files.steps() && !interrupted.raised()) {
    const int k = source.steps_done() + 1;
    try {
      const auto r = source.step();
      const double elapsed_s =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      files.metrics().write(view.row(r, elapsed_s));
      view.step_done(r, elapsed_s);
      if (!out.first)
        out.first = r;
      out.last = r;
      after_step(source, files, view, k, elapsed_s, out);
    } catch (const std::exception& e) {
      throw step_failed("step " + std::to_string(k) + ": " + e.what());
    }
  }
  view.finish();
  out.steps_done = source.steps_done();
  if (files.weights() && !files.saved(out.steps_done))
    files.save(*source.weights(), out.steps_done);
  return out;
}

} // namespace deepcee::tools
