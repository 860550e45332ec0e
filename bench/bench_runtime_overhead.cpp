// What the actor runtime costs in wall mode, printed as two tables.
// Table (a) sets a one-stage, one-CPU-device job's step time beside the single-device
// trainer that `deepcee train` runs (kernels/gpt/trainer). Both have the same model, batch,
// data and thread count. It adds the same stage split over two CPU devices. Their device
// actors compute their halves of each micro-batch in parallel, and all-reduce gradients by
// their ring.
// Table (b) shows what one activation or gradient message costs on the tensor path of a
// two-stage job. It counts serializations, deserializations and further payload copies, as
// the stage actors' counters saw them. Usage:
//   build/bench/bench_runtime_overhead                    # the "small" model, batch 32
//   build/bench/bench_runtime_overhead --model gpt2-124m --batch 4 --steps 5
#include "actors/job/local_job.hpp"
#include "actors/protocol/type_ids.hpp"
#include "kernels/device/make_backend.hpp"
#include "kernels/train/trainer.hpp"
#include "runtime/base/model_spec.hpp"
#include "runtime/base/statistics.hpp"
#include "runtime/io/cluster_toml.hpp"

#include <caf/actor_system.hpp>

#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <stdexcept>

using namespace deepcee;

namespace {

struct options {
  std::string model = "small";
  int batch = 32, steps = 10, warmup = 2, micro_batches = 4;
};

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

/// Deterministic text, long enough for any preset's context.
std::shared_ptr<const runtime::text_corpus> corpus_for(int context) {
  std::string train, validation;
  const char* words[] = {"cloud ", "edge ",  "end ",  "pipeline ", "stage ", "bubble ",
                         "link ",  "actor ", "zero ", "gradient ", "the ",   "of "};
  uint64_t x = 99;
  const int n = std::max(20000, 40 * context);
  for (int i = 0; i < n; ++i) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    (i % 10 == 9 ? validation : train) += words[(x >> 33) % 12];
  }
  return std::make_shared<const runtime::text_corpus>(
      runtime::text_corpus::from_texts(train, validation, "bench-corpus"));
}

/// One node with two devices in one region (a fast link between them).
runtime::cluster two_device_cluster() {
  return runtime::parse_cluster(R"(
name = "bench"
[links]
same_node = { bandwidth = "16GB/s", latency = "10us" }
same_region = { bandwidth = "1Gbps", latency = "1ms" }
cross_region = { bandwidth = "100Mbps", latency = "40ms" }
[[region]]
name = "r"
tier = "cloud"
[[node]]
name = "n0"
region = "r"
devices = [{ kind = "A100-80GB", count = 2 }]
)",
                                "bench");
}

runtime::plan make_plan(const runtime::model_config& m, int batch, int stages, int micro) {
  runtime::plan p;
  p.strategy = "bench";
  p.model = m;
  p.micro_batch_size = batch / micro;
  runtime::pipeline_plan pp;
  pp.micro_batches = micro;
  pp.schedule = runtime::schedule_kind::zb_h1;
  const int layers = m.n_layer + 2;
  for (int s = 0; s < stages; ++s) {
    runtime::stage_plan st;
    st.devices = {s};
    st.samples = {p.micro_batch_size};
    st.first_layer = layers * s / stages;
    st.last_layer = layers * (s + 1) / stages;
    pp.stages.push_back(st);
  }
  p.pipelines = {pp};
  return p;
}

struct actor_system_2 : actors::system_config {
  actor_system_2() {
    set("scheduler.max-threads", 2);
    set("logger.console", caf::atom("none"));
  }
};

void one_stage_table(const options& o, const runtime::model_config& model) {
  const auto corpus = corpus_for(model.context);
  const auto cluster = two_device_cluster();
  const auto plan = make_plan(model, o.batch, 1, 1);
  runtime::train_config train;
  train.model = model;
  train.batch = o.batch;
  train.steps = o.warmup + o.steps;
  train.seed = 3;
  const runtime::profile_table profile(runtime::make_model_spec(model));

  auto be = kernels::make_backend({}); // one OpenBLAS thread, as a stage's device has
  kernels::trainer reference(*be, train, *corpus);
  actor_system_2 cfg;
  caf::actor_system sys{cfg};
  actors::local_job job(sys, cluster, profile, plan, train, corpus, std::chrono::minutes(5),
                        {runtime::time_mode::wall, false});
  auto split = plan;
  split.pipelines[0].stages[0].devices = {0, 1};
  split.pipelines[0].stages[0].samples = {o.batch / 2, o.batch - o.batch / 2};
  actors::local_job two(sys, cluster, profile, split, train, corpus, std::chrono::minutes(5),
                        {runtime::time_mode::wall, false});
  // Alternating steps, so that whatever else the host runs meanwhile hits all alike.
  std::vector<double> trainer_s, actors_s, two_s;
  double worst_loss_diff = 0, worst_two_diff = 0;
  for (int k = 0; k < o.warmup + o.steps; ++k) {
    auto t0 = std::chrono::steady_clock::now();
    const auto want = reference.train_step();
    const double t = seconds_since(t0);
    t0 = std::chrono::steady_clock::now();
    const auto got = job.step();
    const double a = seconds_since(t0);
    t0 = std::chrono::steady_clock::now();
    const auto got_two = two.step();
    const double d = seconds_since(t0);
    worst_loss_diff = std::max(worst_loss_diff, std::abs(got.loss - want.loss));
    worst_two_diff = std::max(worst_two_diff, std::abs(got_two.loss - want.loss) / want.loss);
    if (k >= o.warmup) {
      trainer_s.push_back(t);
      actors_s.push_back(a);
      two_s.push_back(d);
    }
  }
  const double t = runtime::median(trainer_s), a = runtime::median(actors_s),
               d = runtime::median(two_s);
  std::printf("(a) one stage on one CPU device, wall mode, vs the single-device trainer\n");
  std::printf("    model %d layers, d_model %d, context %d, vocab %d; batch %d; 1 OpenBLAS "
              "thread; median of %d steps after %d warm-up\n",
              model.n_layer, model.d_model, model.context, model.vocab, o.batch, o.steps, o.warmup);
  std::printf("    %-34s %12s %12s\n", "", "step (ms)", "samples/s");
  std::printf("    %-34s %12.2f %12.1f\n", "trainer (deepcee train)", t * 1e3, o.batch / t);
  std::printf("    %-34s %12.2f %12.1f\n", "actors, wall mode (deepcee run)", a * 1e3, o.batch / a);
  std::printf("    %-34s %11.2f%%\n", "overhead", (a / t - 1) * 100);
  std::printf("    largest loss difference %.3g\n", worst_loss_diff);
  std::printf("    %-34s %12.2f %12.1f\n", "actors, the stage on 2 CPU devices", d * 1e3,
              o.batch / d);
  std::printf("    %-34s %11.2fx\n", "speed-up over one device", a / d);
  std::printf("    largest relative loss difference %.3g (sums in another order)\n\n",
              worst_two_diff);
}

void tensor_path_table(const options& o, const runtime::model_config& model) {
  const auto corpus = corpus_for(model.context);
  const auto cluster = two_device_cluster();
  std::printf("(b) tensor path of a two-stage job, wall mode, %d micro-batches of %d, %d steps\n",
              o.micro_batches, o.batch / o.micro_batches, 2);
  std::printf("    %-12s %9s %15s %17s %15s\n", "schedule", "messages", "serializations",
              "deserializations", "payload copies");
  for (auto kind : {runtime::schedule_kind::zb_h1, runtime::schedule_kind::one_f_one_b}) {
    auto plan = make_plan(model, o.batch, 2, o.micro_batches);
    plan.pipelines[0].schedule = kind;
    runtime::train_config train;
    train.model = model;
    train.batch = plan.global_batch();
    train.steps = 2;
    train.seed = 3;
    const runtime::profile_table profile(runtime::make_model_spec(model));
    actor_system_2 cfg;
    caf::actor_system sys{cfg};
    actors::local_job job(sys, cluster, profile, plan, train, corpus, std::chrono::minutes(5),
                          {runtime::time_mode::wall, false});
    job.step();
    job.step();
    const auto& c = job.context().counts;
    const double n = static_cast<double>(c.messages);
    std::printf("    %-12s %9lld %15.2f %17.2f %15.2f   (per message)\n",
                std::string(runtime::to_string(kind)).c_str(),
                static_cast<long long>(c.messages.load()), c.serializations / n,
                c.deserializations / n, c.payload_copies / n);
  }
  std::printf("    a serialization writes the devices' output straight into the message's "
              "payload;\n    a deserialization uploads the received payload, read in place, "
              "to the device;\n    1F1B's fused backward keeps each input gradient in its "
              "message until W ends.\n");
}

} // namespace

int main(int argc, char** argv) {
  options o;
  CLI::App app("Actor runtime overhead in wall mode");
  app.add_option("--model", o.model, "Model preset");
  app.add_option("--batch", o.batch, "Global batch");
  app.add_option("--steps", o.steps, "Measured steps");
  app.add_option("--warmup", o.warmup, "Warm-up steps");
  app.add_option("--micro-batches", o.micro_batches, "Micro-batches of the two-stage job");
  CLI11_PARSE(app, argc, argv);
  try {
    const auto model = runtime::model_preset(o.model);
    if (!model)
      throw std::invalid_argument("unknown model preset '" + o.model + "'");
    if (o.batch % o.micro_batches != 0)
      throw std::invalid_argument("--batch must be a multiple of --micro-batches");
    one_stage_table(o, *model);
    tensor_path_table(o, *model);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_runtime_overhead: %s\n", e.what());
    return 1;
  }
  return 0;
}
