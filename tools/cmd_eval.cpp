// deepcee eval: validation loss of a checkpoint.
#include "kernels/train/checkpoint.hpp"
#include "kernels/train/trainer.hpp"
#include "runtime/base/errors.hpp"
#include "runtime/base/host_resources.hpp"
#include "runtime/base/train_config.hpp"
#include "tools/commands.hpp"
#include "tools/host_probe.hpp"
#include "tools/run_directory.hpp"

#include <fmt/format.h>

namespace deepcee::tools {
namespace {

struct eval_options {
  std::string checkpoint;
  std::string data = runtime::data_config{}.path.string();
  double val_fraction = runtime::data_config{}.val_fraction;
  std::string device = "cpu";
  int batch = 32, batches = 8, threads = 1;
};

int run_eval(const eval_options& o) {
  if (o.batch < 1 || o.batch > runtime::max_batch || o.batches < 1 ||
      o.batches > runtime::max_eval_batches)
    runtime::fail_input("command line", 0,
                        "--batch must be in 1.." + std::to_string(runtime::max_batch) +
                            " and --batches in 1.." + std::to_string(runtime::max_eval_batches));
  kernels::checkpoint_info info = kernels::read_checkpoint_info(o.checkpoint);
  const auto host = probe_host();
  if (auto problem = runtime::threads_problem(o.threads, host); !problem.empty())
    runtime::fail_input("--threads", 0, problem);
  if (auto problem =
          runtime::memory_problem(runtime::evaluation_bytes(info.model, o.batch), host,
                                  "evaluating its model on batches of " + std::to_string(o.batch));
      !problem.empty())
    runtime::fail_input(o.checkpoint, 0, problem);
  auto corpus = runtime::text_corpus::load(o.data, o.val_fraction);
  corpus.require_context(info.model.context);
  auto be = open_backend(o.device, o.threads, false);
  kernels::gpt_model model(*be, info.model, info.seed);
  kernels::load_checkpoint(o.checkpoint, *be, model, nullptr);
  double loss = kernels::evaluate(*be, model, corpus, o.batch, o.batches, info.seed);
  fmt::print("validation loss {:.4f} nats/byte ({} batches of {} x {} bytes, step {})\n", loss,
             o.batches, o.batch, info.model.context, info.step);
  return 0;
}

} // namespace

command_action add_eval_command(CLI::App& app, const process_environment&) {
  auto o = std::make_shared<eval_options>();
  CLI::App* cmd = app.add_subcommand("eval", "Print the validation loss of a checkpoint");
  cmd->add_option("--checkpoint", o->checkpoint, "Checkpoint (safetensors)")->required();
  cmd->add_option("--data", o->data, "Text file or directory")->capture_default_str();
  cmd->add_option("--val-fraction", o->val_fraction, "Validation share of each file")
      ->capture_default_str();
  cmd->add_option("--device", o->device, "cpu or cuda")->check(CLI::IsMember({"cpu", "cuda"}));
  cmd->add_option("--batch", o->batch, "Sequences per batch")->capture_default_str();
  cmd->add_option("--batches", o->batches, "Validation batches")->capture_default_str();
  cmd->add_option("--threads", o->threads, "CPU: OpenBLAS threads")->capture_default_str();
  return [o] { return run_eval(*o); };
}

} // namespace deepcee::tools
