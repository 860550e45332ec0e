// deepcee train: single-device training with a progress bar, metrics files and
// checkpoints in a run directory.
#include "kernels/device/make_backend.hpp"
#include "kernels/train/trainer.hpp"
#include "runtime/base/errors.hpp"
#include "runtime/base/host_resources.hpp"
#include "runtime/io/metrics_writer.hpp"
#include "runtime/io/train_config_toml.hpp"
#include "tools/commands.hpp"
#include "tools/embedded_configs.hpp"
#include "tools/host_probe.hpp"
#include "tools/progress.hpp"
#include "tools/run_directory.hpp"
#include "tools/step_loop.hpp"

#include <spdlog/spdlog.h>

#include <chrono>
#include <optional>

namespace deepcee::tools {
namespace {

struct train_options {
  std::optional<std::string> config; ///< default: configs/single.toml, compiled in
  std::optional<int> steps, batch, threads;
  std::optional<uint64_t> seed;
  std::optional<std::string> out, device, data, metrics, resume;
  bool bf16 = false;
};

runtime::train_config effective_config(const train_options& o) {
  runtime::train_config c =
      o.config
          ? runtime::load_train_config(*o.config)
          : runtime::parse_train_config(embedded_single_toml, "configs/single.toml (built in)");
  // A value a flag sets is no longer the file's: errors about it name no line.
  auto set = [&c](auto& field, const auto& flag, const char* key) {
    if (flag) {
      field = *flag;
      c.origin.lines.erase(key);
    }
  };
  set(c.steps, o.steps, "steps");
  set(c.batch, o.batch, "batch");
  set(c.threads, o.threads, "threads");
  set(c.seed, o.seed, "seed");
  set(c.device, o.device, "device");
  if (o.data)
    c.data.path = std::filesystem::absolute(*o.data);
  if (o.metrics)
    c.metrics_format = *o.metrics;
  if (o.bf16)
    c.bf16 = true;
  runtime::validate(c, "command line");
  return c;
}

/// Single-device training as the step loop's source: real time is its clock.
class trainer_steps : public step_source {
public:
  explicit trainer_steps(kernels::trainer& t) : t_(t) {}

  int steps_done() const override { return t_.steps_done(); }

  step_record step() override {
    const double start_s = seconds();
    const auto r = t_.train_step();
    return {r.step, r.loss, r.lr, r.grad_norm, start_s, seconds()};
  }

  std::unique_ptr<step_weights> weights() override { return std::make_unique<in_place>(t_); }

private:
  /// The trainer's own weights, validated on its own backend.
  struct in_place : step_weights {
    explicit in_place(kernels::trainer& t) : t(t) {}
    double validation_loss() override { return t.validation_loss(); }
    void save(const std::filesystem::path& file) override { t.save(file); }
    kernels::trainer& t;
  };

  double seconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - epoch_).count();
  }

  kernels::trainer& t_;
  std::chrono::steady_clock::time_point epoch_ = std::chrono::steady_clock::now();
};

/// Tokens per second on the bar and in the metrics.
class train_view : public bar_view {
public:
  train_view(int first, int total, int batch, int context)
      : bar_view(first, total), first_(first),
        tokens_per_step_(double(batch) * context), clock_{"wall", double(batch), double(context)} {}

  runtime::metric_row row(const step_record& r, double elapsed_s) override {
    return metrics_row(r, elapsed_s, clock_);
  }

protected:
  std::string fields(const step_record& r, double elapsed_s) override {
    const double tokens = tokens_per_step_ * (r.step - first_);
    return fmt::format("loss {:.4f} | {:.0f} tok/s", r.loss, tokens / elapsed_s);
  }

private:
  int first_; ///< steps done before this run
  double tokens_per_step_;
  metrics_clock clock_;
};

/// The model, the data and the device, before the first step.
void print_setup(const runtime::train_config& c, kernels::trainer& t,
                 const runtime::text_corpus& corpus, const kernels::backend& be,
                 const std::filesystem::path& dir) {
  size_t params = 0;
  for (auto* p : t.model().parameters())
    params += static_cast<size_t>(p->value.numel());
  spdlog::info("model: {} layers, d_model {}, {} heads, context {}: {:.2f}M parameters",
               c.model.n_layer, c.model.d_model, c.model.n_head, c.model.context, params / 1e6);
  spdlog::info("data: {} ({} train / {} validation bytes)", c.data.path.string(),
               corpus.size(runtime::corpus_split::train),
               corpus.size(runtime::corpus_split::validation));
  spdlog::info("device: {}; run directory: {}", be.name(), dir.string());
}

int run_train(const train_options& o) {
  runtime::train_config c = effective_config(o);
  runtime::require_fits_host(c, probe_host(), runtime::batch_use::whole);
  if (c.device == "cuda" && !o.device && kernels::visible_cuda_devices() == 0)
    runtime::fail_input(c.origin.file, c.origin.line("device"),
                        "device = \"cuda\", but " + kernels::no_cuda_devices_reason());
  auto corpus = runtime::text_corpus::load(c.data.path, c.data.val_fraction);
  corpus.require_context(c.model.context);
  auto be = open_backend(c.device, c.threads, c.bf16);
  kernels::trainer t(*be, c, corpus);
  if (o.resume)
    t.resume(*o.resume);
  // Only once every input has been checked, so that bad input leaves nothing behind.
  std::filesystem::path dir = make_run_directory(o.out, c.out, "train");
  print_setup(c, t, corpus, *be, dir);

  run_files files(dir, c, std::nullopt);
  trainer_steps steps(t);
  const double tokens_per_step = static_cast<double>(c.batch) * c.model.context;
  interrupt_flag interrupted;
  train_view view(t.steps_done(), c.steps, c.batch, c.model.context);
  const auto start = std::chrono::steady_clock::now();
  const auto done = run_steps(steps, files, view, interrupted);
  const double tokens = tokens_per_step * done.steps_run();
  double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  spdlog::info("{} at step {}: {}, {:.0f} tokens/s, {}",
               interrupted.raised() ? "interrupted" : "done", done.steps_done,
               done.validation() + (done.val_step > 0 ? " nats/byte" : ""),
               wall > 0 ? tokens / wall : 0.0, progress_bar::duration(wall));
  spdlog::info("wrote {}, {} and {}", files.metrics().path().string(), files.eval().path().string(),
               files.checkpoint().string());
  return interrupted.raised() ? 130 : 0;
}

} // namespace

command_action add_train_command(CLI::App& app, const process_environment&) {
  auto o = std::make_shared<train_options>();
  CLI::App* cmd = app.add_subcommand("train", "Train the GPT on one device");
  cmd->add_option("--config", o->config,
                  "Train config (TOML; default: configs/single.toml, built in)");
  cmd->add_option("--steps", o->steps, "Total optimizer steps (overrides the config)");
  cmd->add_option("--batch", o->batch, "Sequences per step");
  cmd->add_option("--seed", o->seed, "Seed of weights and data sampling");
  cmd->add_option("--device", o->device, "cpu or cuda")->check(CLI::IsMember({"cpu", "cuda"}));
  cmd->add_flag("--bf16", o->bf16, "CUDA: bf16 tensor-core matrix products");
  cmd->add_option("--threads", o->threads, "CPU: OpenBLAS threads (0 = all cores)");
  cmd->add_option("--data", o->data, "Text file or directory to train on");
  cmd->add_option("--out", o->out, "Run directory (default: a new one under the config's out)");
  cmd->add_option("--metrics", o->metrics, "csv or jsonl")->check(CLI::IsMember({"csv", "jsonl"}));
  cmd->add_option("--resume", o->resume, "Continue from this checkpoint");
  return [o] { return run_train(*o); };
}

} // namespace deepcee::tools
