// A stage's group on CUDA device actors ([train] device = "cuda") against the same group on
// CPU device actors: the micro-batch split over two devices, their gradients all-reduced
// (NCCL where they are two distinct GPUs, the ring of actor messages where they share one),
// the optimizer step, the snapshot's check that both devices hold the same weights.
#include "../actors/actor_test_util.hpp"

#include "actors/device/group_actor.hpp"
#include "kernels/device/make_backend.hpp"
#include "runtime/schedule/schedule.hpp"
#include "tests/support/gpt_test_util.hpp"

#include <boost/test/unit_test.hpp>

#include <caf/scoped_actor.hpp>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

using namespace deepcee;
using namespace deepcee::actors;
namespace fixture = deepcee::actors::test; // the actor suites' cluster, plans and system

namespace {

struct step_sums {
  double loss = 0;
  std::vector<float> gradients;
  std::vector<kernels::parameter_state> weights; ///< after one optimizer step
};

template <class T, class... Ts>
T ask(caf::scoped_actor& self, const group_actor& group, Ts&&... xs) {
  T out{};
  self->request(group, std::chrono::seconds(60), std::forward<Ts>(xs)...)
      .receive([&](T& x) { out = std::move(x); },
               [&](caf::error& e) { BOOST_FAIL("group: " << to_string(e)); });
  return out;
}

/// Two micro-batches (F, B, W each), the reduce, one optimizer step and the snapshot, on
/// device actors of kind `device` ("cpu" or "cuda").
step_sums run_group(const std::string& device) {
  fixture::system_fixture f;
  const auto plan = fixture::one_stage_plan({0, 1}, {2, 2}); // on node c0
  const runtime::profile_table profile{runtime::make_model_spec(plan.model)};
  auto train = fixture::train_for(plan, 1);
  train.device = device;
  auto job =
      make_job_context(fixture::test_cluster(), profile, plan, train, fixture::test_corpus());
  const auto batch = std::make_shared<const runtime::token_batch>(job->corpus->sample_batch(
      runtime::corpus_split::train, plan.global_batch(), plan.model.context, 7, 0));
  caf::scoped_actor self{f.sys};
  auto group = spawn_group(self.ptr(), job, 0, 0);
  step_sums out;
  for (int m = 0; m < 2; ++m)
    for (auto kind : {runtime::op_kind::forward, runtime::op_kind::backward_input,
                      runtime::op_kind::backward_weight}) {
      device_work w;
      w.kind = static_cast<int32_t>(kind);
      w.micro = m;
      w.first_sample = m * plan.micro_batch_size;
      w.samples = plan.micro_batch_size;
      w.loss_scale = 1.0f / static_cast<float>(plan.global_batch() * plan.model.context);
      w.batch = batch;
      out.loss += ask<double>(self, group, w);
    }
  out.gradients = ask<std::vector<float>>(self, group, reduce_atom_v, int64_t{1});
  ask<int64_t>(self, group, optimize_order{1, 1e-3, 1.0});
  out.weights = ask<std::vector<kernels::parameter_state>>(self, group, snapshot_atom_v);
  self->send_exit(group, caf::exit_reason::user_shutdown);
  return out;
}

} // namespace

BOOST_AUTO_TEST_SUITE(cuda_device_actors)

BOOST_AUTO_TEST_CASE(a_group_on_gpus_computes_what_it_does_on_the_cpu) {
  BOOST_TEST_MESSAGE(
      kernels::visible_cuda_devices()
      << " GPU(s): the two devices "
      << (kernels::visible_cuda_devices() >= 2 ? "sum by NCCL" : "share one GPU: ring"));
  const auto cpu = run_group("cpu");
  const auto gpu = run_group("cuda");
  BOOST_TEST(std::abs(gpu.loss - cpu.loss) <= 1e-4 * std::abs(cpu.loss));
  BOOST_REQUIRE_EQUAL(gpu.gradients.size(), cpu.gradients.size());
  BOOST_TEST(deepcee::test::max_rel_diff(gpu.gradients, cpu.gradients) <= 1e-3);
  // The snapshot checked that both GPU devices hold the same bits; they are the CPU's
  // weights within the step's rounding.
  BOOST_REQUIRE_EQUAL(gpu.weights.size(), cpu.weights.size());
  for (size_t i = 0; i < cpu.weights.size(); ++i)
    BOOST_TEST(deepcee::test::adam_weights_disagree(gpu.weights[i].value, cpu.weights[i].value,
                                                    1e-3, 1e-3, 1) == "",
               cpu.weights[i].name);
}

BOOST_AUTO_TEST_SUITE_END()
