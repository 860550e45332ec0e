// deepcee train: single-device training with a progress bar, metrics files and
// checkpoints in a run directory.
#include "kernels/gpt/trainer.hpp"
#include "runtime/errors.hpp"
#include "runtime/metrics_writer.hpp"
#include "runtime/train_config_toml.hpp"
#include "tools/commands.hpp"
#include "tools/embedded_configs.hpp"
#include "tools/progress.hpp"
#include "tools/run_directory.hpp"

#include <spdlog/spdlog.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <optional>

namespace deepcee::tools {
namespace {

struct train_options {
  std::optional<std::string> config;  ///< default: configs/single.toml, compiled in
  std::optional<int> steps, batch, threads;
  std::optional<uint64_t> seed;
  std::optional<std::string> out, device, data, metrics, resume;
  bool bf16 = false;
};

std::atomic<bool> interrupted{false};

runtime::train_config effective_config(const train_options& o) {
  runtime::train_config c =
      o.config ? runtime::load_train_config(*o.config)
               : runtime::parse_train_config(embedded_single_toml, "configs/single.toml (built in)");
  if (o.steps)
    c.steps = *o.steps;
  if (o.batch)
    c.batch = *o.batch;
  if (o.threads)
    c.threads = *o.threads;
  if (o.seed)
    c.seed = *o.seed;
  if (o.device)
    c.device = *o.device;
  if (o.data)
    c.data.path = std::filesystem::absolute(*o.data);
  if (o.metrics)
    c.metrics_format = *o.metrics;
  if (o.bf16)
    c.bf16 = true;
  runtime::validate(c, "command line");
  return c;
}

int run_train(const train_options& o) {
  runtime::train_config c = effective_config(o);
  auto corpus = runtime::text_corpus::load(c.data.path, c.data.val_fraction);
  corpus.require_context(c.model.context);
  auto be = open_backend(c.device, c.threads, c.bf16);
  kernels::trainer t(*be, c, corpus);
  if (o.resume)
    t.resume(*o.resume);
  // Only once every input has been checked, so that bad input leaves nothing behind.
  std::filesystem::path dir = make_run_directory(o.out, c.out, "train");

  size_t params = 0;
  for (auto* p : t.model().parameters())
    params += static_cast<size_t>(p->value.numel());
  spdlog::info("model: {} layers, d_model {}, {} heads, context {}: {:.2f}M parameters",
               c.model.n_layer, c.model.d_model, c.model.n_head, c.model.context, params / 1e6);
  spdlog::info("data: {} ({} train / {} validation bytes)", c.data.path.string(),
               corpus.size(runtime::corpus_split::train),
               corpus.size(runtime::corpus_split::validation));
  spdlog::info("device: {}; run directory: {}", be->name(), dir.string());

  auto format = runtime::parse_metrics_format(c.metrics_format);
  std::string ext = format == runtime::metrics_format::csv ? ".csv" : ".jsonl";
  runtime::metrics_writer train_log(dir / ("metrics" + ext), format);
  runtime::metrics_writer eval_log(dir / ("eval" + ext), format);
  std::filesystem::path checkpoint = dir / "checkpoint.safetensors";

  interrupted = false;
  auto previous = std::signal(SIGINT, [](int) { interrupted = true; });
  progress_bar bar(t.steps_done(), c.steps);
  const double tokens_per_step = static_cast<double>(c.batch) * c.model.context;
  auto start = std::chrono::steady_clock::now();
  double last_val = NAN, tokens = 0;
  while (t.steps_done() < c.steps && !interrupted) {
    auto t0 = std::chrono::steady_clock::now();
    auto r = t.train_step();
    auto t1 = std::chrono::steady_clock::now();
    double step_s = std::chrono::duration<double>(t1 - t0).count();
    double elapsed = std::chrono::duration<double>(t1 - start).count();
    tokens += tokens_per_step;
    train_log.write({{"step", int64_t{r.step}},
                     {"loss", r.loss},
                     {"lr", r.lr},
                     {"grad_norm", r.grad_norm},
                     {"tokens_per_s", tokens_per_step / step_s},
                     {"elapsed_s", elapsed}});
    bar.update(r.step, fmt::format("loss {:.4f} | {:.0f} tok/s", r.loss, tokens / elapsed));
    bool last = r.step == c.steps;
    if ((c.eval_every > 0 && r.step % c.eval_every == 0) || last) {
      last_val = t.validation_loss();
      eval_log.write({{"step", int64_t{r.step}}, {"val_loss", last_val}, {"elapsed_s", elapsed}});
      bar.message(fmt::format("step {}: validation loss {:.4f}", r.step, last_val));
    }
    if (c.checkpoint_every > 0 && r.step % c.checkpoint_every == 0)
      t.save(checkpoint);
  }
  bar.finish();
  std::signal(SIGINT, previous);
  t.save(checkpoint);
  double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  spdlog::info("{} at step {}: validation loss {:.4f} nats/byte, {:.0f} tokens/s, {}",
               interrupted ? "interrupted" : "done", t.steps_done(), last_val,
               wall > 0 ? tokens / wall : 0.0, progress_bar::duration(wall));
  spdlog::info("wrote {}, {} and {}", train_log.path().string(), eval_log.path().string(),
               checkpoint.string());
  return interrupted ? 130 : 0;
}

} // namespace

command_action add_train_command(CLI::App& app) {
  auto o = std::make_shared<train_options>();
  CLI::App* cmd = app.add_subcommand("train", "Train the GPT on one device");
  cmd->add_option("--config", o->config, "Train config (TOML; default: configs/single.toml, built in)");
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
