#include "tools/job_checkpoint.hpp"

#include "kernels/gpt/trainer.hpp"
#include "kernels/make_backend.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstring>

namespace deepcee::tools {

namespace {

std::atomic<bool> sigint_seen{false};
/// The line a second SIGINT writes before it ends the process (empty: it does not). Set
/// before the handler is installed, read only inside it (write(2) and _exit are safe there).
char second_sigint_line[256];
size_t second_sigint_length = 0;

void on_sigint(int) {
  if (sigint_seen.exchange(true) && second_sigint_length > 0) {
    (void)!::write(STDERR_FILENO, second_sigint_line, second_sigint_length);
    ::_exit(130);
  }
}

runtime::metrics_format format_of(const runtime::train_config& t,
                                  const std::optional<std::string>& format) {
  return runtime::parse_metrics_format(format ? *format : t.metrics_format);
}

std::string extension(runtime::metrics_format f) {
  return f == runtime::metrics_format::csv ? ".csv" : ".jsonl";
}

} // namespace

kernels::checkpoint_contents read_resume_checkpoint(const std::filesystem::path& file,
                                                    const runtime::model_config& model) {
  auto contents = kernels::read_checkpoint(file);
  kernels::require_same_model(file, contents.info, model);
  return contents;
}

job_files::job_files(const std::filesystem::path& dir, const runtime::train_config& train,
                     const std::optional<std::string>& format, bool weights)
    : train_(train),
      metrics_(dir / ("metrics" + extension(format_of(train, format))), format_of(train, format)),
      eval_(dir / ("eval" + extension(format_of(train, format))), format_of(train, format)),
      checkpoint_(dir / "checkpoint.safetensors"), weights_(weights) {}

bool job_files::checkpoint_due(int step) const {
  return weights_ && train_.checkpoint_every > 0 && step % train_.checkpoint_every == 0;
}

bool job_files::eval_due(int step) const {
  return weights_ &&
         ((train_.eval_every > 0 && step % train_.eval_every == 0) || step == train_.steps);
}

void job_files::save(const std::vector<kernels::parameter_state>& params, int step) {
  kernels::save_checkpoint(checkpoint_, params, {step, train_.model, train_.seed, clock_s_});
  saved_step_ = step;
}

double job_files::evaluate(const std::vector<kernels::parameter_state>& params, int step,
                           const runtime::text_corpus& corpus, double elapsed_s) {
  auto be = kernels::make_backend({});
  kernels::gpt_model model(*be, train_.model, train_.seed);
  kernels::load_parameter_states(params, *be, model, nullptr, "the stages' weights");
  const double loss =
      kernels::evaluate(*be, model, corpus, train_.batch, train_.eval_batches, train_.seed);
  eval_.write({{"step", int64_t{step}}, {"val_loss", loss}, {"elapsed_s", elapsed_s}});
  return loss;
}

std::optional<double> job_files::after_step(
    int step, double clock_s, const std::function<std::vector<kernels::parameter_state>()>& gather,
    const runtime::text_corpus& corpus, double elapsed_s) {
  clock_s_ = clock_s;
  if (!eval_due(step) && !checkpoint_due(step))
    return std::nullopt;
  const auto params = gather();
  std::optional<double> loss;
  if (eval_due(step))
    loss = evaluate(params, step, corpus, elapsed_s);
  if (checkpoint_due(step))
    save(params, step);
  return loss;
}

std::string job_files::names() const {
  if (!weights_)
    return metrics_.path().filename().string() + ", " + eval_.path().filename().string();
  return metrics_.path().filename().string() + ", " + eval_.path().filename().string() + ", " +
         checkpoint_.filename().string();
}

interrupt_flag::interrupt_flag(std::string second_leaves) {
  sigint_seen = false;
  if (!second_leaves.empty())
    second_leaves += '\n';
  second_sigint_length = std::min(second_leaves.size(), sizeof second_sigint_line);
  std::memcpy(second_sigint_line, second_leaves.data(), second_sigint_length);
  previous_ = std::signal(SIGINT, on_sigint);
}

interrupt_flag::~interrupt_flag() {
  std::signal(SIGINT, previous_);
  second_sigint_length = 0;
}

bool interrupt_flag::raised() const {
  return sigint_seen;
}

} // namespace deepcee::tools
