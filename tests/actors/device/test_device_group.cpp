// The device and group actors of a stage: a micro-batch split by samples over three device
// actors, their gradients all-reduced by a ring of actor messages, checked against one
// device_worker that computes the whole micro-batch alone.
#include "tests/actors/actor_test_util.hpp"

#include "actors/device/device_actor.hpp"
#include "actors/device/device_worker.hpp"
#include "actors/device/gpu_all_reduce.hpp"
#include "actors/device/group_actor.hpp"
#include "actors/device/remote_device.hpp"
#include "kernels/device/make_backend.hpp"
#include "kernels/train/stage_worker.hpp"
#include "runtime/schedule/schedule.hpp"

#include <boost/test/unit_test.hpp>

#include <caf/binary_serializer.hpp>
#include <caf/scoped_actor.hpp>

#include <cmath>
#include <memory>
#include <vector>

using namespace deepcee;
using namespace deepcee::actors;

namespace {

struct group_fixture : actors::test::system_fixture {
  runtime::plan plan = actors::test::one_stage_plan({0, 1, 2}, {2, 1, 1});
  runtime::profile_table profile{runtime::make_model_spec(plan.model)};
  std::shared_ptr<job_context> job =
      make_job_context(actors::test::test_cluster(), profile, plan,
                       actors::test::train_for(plan, 1), actors::test::test_corpus());
  std::shared_ptr<const runtime::token_batch> batch =
      std::make_shared<const runtime::token_batch>(job->corpus->sample_batch(
          runtime::corpus_split::train, plan.global_batch(), plan.model.context, 7, 0));
  float loss_scale = 1.0f / static_cast<float>(plan.global_batch() * plan.model.context);

  device_work op(runtime::op_kind kind, int micro) const {
    device_work w;
    w.kind = static_cast<int32_t>(kind);
    w.micro = micro;
    w.first_sample = micro * plan.micro_batch_size;
    w.samples = plan.micro_batch_size;
    w.loss_scale = loss_scale;
    w.batch = batch;
    return w;
  }
};

template <class T, class Handle, class... Ts>
T ask(caf::scoped_actor& self, const Handle& to, Ts&&... xs) {
  T out{};
  bool answered = false;
  self->request(to, std::chrono::seconds(30), std::forward<Ts>(xs)...)
      .receive(
          [&](T& x) {
            out = std::move(x);
            answered = true;
          },
          [&](caf::error& e) { BOOST_FAIL("request failed: " << to_string(e)); });
  BOOST_REQUIRE(answered);
  return out;
}

/// What a group computed for both micro-batches: the loss and the reduced gradients.
struct step_sums {
  double loss = 0;
  std::vector<float> gradients;
};

/// F, B and W of both micro-batches; the loss.
double run_ops(group_fixture& f, caf::scoped_actor& self, const group_actor& group) {
  double loss = 0;
  for (int m = 0; m < 2; ++m) {
    loss += ask<double>(self, group, f.op(runtime::op_kind::forward, m));
    ask<double>(self, group, f.op(runtime::op_kind::backward_input, m));
    ask<double>(self, group, f.op(runtime::op_kind::backward_weight, m));
  }
  return loss;
}

step_sums run_both_micro_batches(group_fixture& f, caf::scoped_actor& self,
                                 const group_actor& group) {
  step_sums out;
  out.loss = run_ops(f, self, group);
  out.gradients = ask<std::vector<float>>(self, group, reduce_atom_v, int64_t{0});
  return out;
}

} // namespace

BOOST_FIXTURE_TEST_SUITE(device_group, group_fixture)

BOOST_AUTO_TEST_CASE(three_devices_and_their_ring_equal_one_device_on_the_whole_micro_batch) {
  // The reference: one worker computes both micro-batches whole.
  device_worker one(plan.model, 0, plan.model.n_layer + 2, job->train.seed, job->train.optimizer,
                    {});
  double want_loss = 0;
  for (int m = 0; m < 2; ++m) {
    want_loss += one.forward(m, {}, batch.get(), m * 4, 4, loss_scale, {});
    one.backward_input(m, {}, 4, {});
    one.backward_weight(m);
  }
  const auto want = one.gradients();

  caf::scoped_actor self{sys};
  auto group = spawn_group(self.ptr(), job, 0, 0);
  const auto [loss, sum] = run_both_micro_batches(*this, self, group);
  BOOST_TEST(std::abs(loss - want_loss) <= 1e-5 * std::abs(want_loss));
  BOOST_REQUIRE_EQUAL(sum.size(), want.size());
  double worst = 0, scale = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    worst = std::max(worst, static_cast<double>(std::abs(sum[i] - want[i])));
    scale = std::max(scale, static_cast<double>(std::abs(want[i])));
  }
  BOOST_TEST_MESSAGE("largest gradient difference " << worst << " of " << scale);
  BOOST_TEST(scale > 0);
  BOOST_TEST(worst <= 1e-4 * scale);
  // The ring left the same sums on every device: after one optimizer step each holds the
  // same weights (the group's snapshot compares them and fails otherwise) ...
  ask<int64_t>(self, group, optimize_order{1, 1e-3, 1.0});
  const auto states = ask<std::vector<kernels::parameter_state>>(self, group, snapshot_atom_v);
  BOOST_TEST(!states.empty());
  // ... and they equal the reference's after the same step on the reference's gradients.
  one.set_gradients(sum);
  one.optimizer_step(1e-3, 1, 1.0);
  const auto ref = one.parameter_states();
  BOOST_REQUIRE_EQUAL(ref.size(), states.size());
  for (size_t i = 0; i < ref.size(); ++i)
    BOOST_TEST(ref[i].value == states[i].value, ref[i].name);
  self->send_exit(group, caf::exit_reason::user_shutdown);
}

BOOST_AUTO_TEST_CASE(a_ring_of_small_chunks_sums_segment_after_segment) {
  caf::scoped_actor self{sys};
  auto whole = spawn_group(self.ptr(), job, 0, 0);
  const auto want = run_both_micro_batches(*this, self, whole);
  // Chunks of at most 7 values: thousands of segments, each summed in its own order.
  auto bounded = make_job_context(actors::test::test_cluster(), profile, plan,
                                  actors::test::train_for(plan, 1), actors::test::test_corpus());
  bounded->ring_chunk_values = 7;
  auto group = spawn_group(self.ptr(), bounded, 0, 0);
  const auto got = run_both_micro_batches(*this, self, group);
  BOOST_TEST(got.loss == want.loss);
  BOOST_REQUIRE_EQUAL(got.gradients.size(), want.gradients.size());
  double worst = 0, scale = 0;
  for (size_t i = 0; i < want.gradients.size(); ++i) {
    worst = std::max(worst, static_cast<double>(std::abs(got.gradients[i] - want.gradients[i])));
    scale = std::max(scale, static_cast<double>(std::abs(want.gradients[i])));
  }
  BOOST_TEST(worst <= 1e-6 * scale);
  // Every device ended with the same sums: the snapshot compares their digests.
  ask<int64_t>(self, group, optimize_order{1, 1e-3, 1.0});
  BOOST_TEST(!ask<std::vector<kernels::parameter_state>>(self, group, snapshot_atom_v).empty());
  for (const auto& g : {whole, group})
    self->send_exit(g, caf::exit_reason::user_shutdown);
}

BOOST_AUTO_TEST_CASE(a_one_pipeline_reduce_answers_the_sums_squares_and_leaves_the_sums) {
  caf::scoped_actor self{sys};
  auto with_values = spawn_group(self.ptr(), job, 0, 0);
  const auto want = run_both_micro_batches(*this, self, with_values);
  double want_squares = 0;
  for (float g : want.gradients)
    want_squares += static_cast<double>(g) * g;
  auto squares_only = spawn_group(self.ptr(), job, 0, 0);
  run_ops(*this, self, squares_only);
  const double squares = ask<double>(self, squares_only, squares_atom_v, int64_t{0});
  BOOST_TEST(squares > 0);
  BOOST_TEST(std::abs(squares - want_squares) <= 1e-12 * want_squares);
  // The sums stay on the devices: the same step's weights follow.
  ask<int64_t>(self, with_values, optimize_order{1, 1e-3, std::sqrt(want_squares)});
  ask<int64_t>(self, squares_only, optimize_order{1, 1e-3, std::sqrt(want_squares)});
  const auto a = ask<std::vector<kernels::parameter_state>>(self, with_values, snapshot_atom_v);
  const auto b = ask<std::vector<kernels::parameter_state>>(self, squares_only, snapshot_atom_v);
  BOOST_REQUIRE_EQUAL(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i)
    BOOST_TEST((a[i].value == b[i].value), a[i].name);
  for (const auto& g : {with_values, squares_only})
    self->send_exit(g, caf::exit_reason::user_shutdown);
}

BOOST_AUTO_TEST_CASE(devices_on_another_node_compute_what_local_ones_do) {
  caf::scoped_actor self{sys};
  auto local = spawn_group(self.ptr(), job, 0, 0);
  const auto want = run_both_micro_batches(*this, self, local);
  ask<int64_t>(self, local, optimize_order{1, 1e-3, 1.0});
  const auto want_states = ask<std::vector<kernels::parameter_state>>(self, local, snapshot_atom_v);
  self->send_exit(local, caf::exit_reason::user_shutdown);

  // The same stage with devices 1 and 2 on node e0: the stage's node (c0) hands them over,
  // and their rows, tokens and targets go in device_rows messages.
  auto spread = plan;
  spread.pipelines[0].stages[0].devices = {0, 4, 5};
  auto apart = make_job_context(actors::test::test_cluster(), profile, spread,
                                actors::test::train_for(spread, 1), actors::test::test_corpus());
  apart->place_on_nodes(actors::test::test_cluster());
  BOOST_TEST((apart->layout.apart_on(1) == std::vector<int32_t>{1, 2}));
  const auto on_e0 = spawn_devices_apart(sys, apart, 1);
  BOOST_REQUIRE_EQUAL(on_e0.size(), 2u);
  auto group = spawn_group(self.ptr(), apart, 0, 0);
  // Work, or a reduce, before the handover is refused, naming the devices it waits for.
  const auto refused = [&](caf::error& e) {
    BOOST_TEST(sys.render(e).find("waits for its device 1 (node e0), device 2 (node e0)") !=
                   std::string::npos,
               sys.render(e));
  };
  self->request(group, std::chrono::seconds(30), op(runtime::op_kind::forward, 0))
      .receive([](double) { BOOST_FAIL("a group without its devices took work"); }, refused);
  self->request(group, std::chrono::seconds(30), reduce_atom_v, int64_t{0})
      .receive([](std::vector<float>&) { BOOST_FAIL("a group without its devices reduced"); },
               refused);
  self->send(group, devices_atom_v,
             std::vector<caf::strong_actor_ptr>{{},
                                                caf::actor_cast<caf::strong_actor_ptr>(on_e0[0]),
                                                caf::actor_cast<caf::strong_actor_ptr>(on_e0[1])},
             std::vector<std::string>{}); // no host boots known: unshaped anyway
  const auto got = run_both_micro_batches(*this, self, group);
  // The same rows in the same order: bit for bit what the local devices gave.
  BOOST_TEST(got.loss == want.loss);
  BOOST_TEST((got.gradients == want.gradients));
  ask<int64_t>(self, group, optimize_order{1, 1e-3, 1.0});
  // The snapshot compares the digests of the devices apart with device 0's weights.
  const auto states = ask<std::vector<kernels::parameter_state>>(self, group, snapshot_atom_v);
  BOOST_REQUIRE_EQUAL(states.size(), want_states.size());
  for (size_t i = 0; i < states.size(); ++i)
    BOOST_TEST((states[i].value == want_states[i].value), states[i].name);
  BOOST_TEST(ask<uint64_t>(self, on_e0[1], digest_atom_v) == state_digest(want_states));
  // A device apart that drifts (here: another step of its own) fails the snapshot, named.
  ask<int64_t>(self, on_e0[1], optimize_order{2, 1e-3, 1.0});
  self->request(group, std::chrono::seconds(30), snapshot_atom_v)
      .receive([](std::vector<kernels::parameter_state>&) { BOOST_FAIL("drift unnoticed"); },
               [&](caf::error& e) {
                 BOOST_TEST_MESSAGE(sys.render(e));
                 BOOST_TEST(sys.render(e).find("device 2 of the stage holds other weights") !=
                            std::string::npos);
               });
  // A device apart checks what came from the network before it allocates, and its errors
  // name its node.
  auto rows = rows_of(op(runtime::op_kind::forward, 0), true, true, plan.model.context);
  rows.samples = 1000000;
  self->request(on_e0[0], std::chrono::seconds(30), rows)
      .receive([](device_output&) { BOOST_FAIL("a device took another device's samples"); },
               [&](caf::error& e) {
                 BOOST_TEST_MESSAGE(sys.render(e));
                 BOOST_TEST(sys.render(e).find("pipeline 0 stage 0 device 1 (node e0): "
                                               "device_rows m0: 1000000 samples") !=
                            std::string::npos);
               });
  self->send_exit(group, caf::exit_reason::user_shutdown);
  for (const auto& d : on_e0)
    self->send_exit(d, caf::exit_reason::user_shutdown);
}

BOOST_AUTO_TEST_CASE(device_rows_carry_the_rows_and_tokens_of_a_devices_samples) {
  auto work = op(runtime::op_kind::forward, 1);
  work.first_sample += 1; // samples 5 and 6 of the batch
  work.samples = 2;
  std::vector<float> input(static_cast<size_t>(2 * plan.model.context * plan.model.d_model));
  input[3] = 1.5f;
  work.input = input;
  const auto t = static_cast<size_t>(plan.model.context);
  const auto rows = rows_of(work, true, true, plan.model.context);
  BOOST_TEST(rows.first_sample == 5);
  BOOST_TEST(rows.samples == 2);
  BOOST_TEST((rows.tokens ==
              std::vector<int32_t>(batch->tokens.begin() + 5 * t, batch->tokens.begin() + 7 * t)));
  BOOST_TEST((rows.targets == std::vector<int32_t>(batch->targets.begin() + 5 * t,
                                                   batch->targets.begin() + 7 * t)));
  BOOST_TEST((rows.input == input));
  BOOST_TEST(rows.output_values == 0);
  // A middle stage reads neither; B and W never do.
  BOOST_TEST(rows_of(work, false, false, plan.model.context).tokens.empty());
  work.kind = static_cast<int32_t>(runtime::op_kind::backward_input);
  BOOST_TEST(rows_of(work, true, true, plan.model.context).targets.empty());
}

BOOST_AUTO_TEST_CASE(a_failing_device_fails_the_answer_with_its_name_and_the_group_lives_on) {
  caf::scoped_actor self{sys};
  auto group = spawn_group(self.ptr(), job, 0, 0);
  auto bad = op(runtime::op_kind::backward_input, 1); // B before its F
  std::string error;
  self->request(group, std::chrono::seconds(30), bad)
      .receive([&](double) { BOOST_FAIL("B before F was accepted"); },
               [&](caf::error& e) { error = sys.render(e); });
  BOOST_TEST_MESSAGE(error);
  BOOST_TEST(error.find("pipeline 0 stage 0 device") != std::string::npos);
  // Still there: a whole F answers.
  BOOST_TEST(std::isfinite(ask<double>(self, group, op(runtime::op_kind::forward, 0))));
  self->send_exit(group, caf::exit_reason::user_shutdown);
}

BOOST_AUTO_TEST_CASE(a_ring_chunk_no_honest_ring_sends_fails_the_devices_reduce_naming_it) {
  caf::scoped_actor self{sys};
  auto device = sys.spawn(device_behavior, job, 0, 0, 1);
  self->send(device, ring_atom_v, caf::actor_cast<caf::strong_actor_ptr>(self), 1, 3, false);
  self->send(device, ring_chunk{0, 9, {1.0f}}); // a ring of 3 has rounds 0 to 3
  self->request(device, std::chrono::seconds(30), reduce_atom_v, int64_t{0}, true)
      .receive([](gradient_values&) { BOOST_FAIL("a reduce ran past a refused chunk"); },
               [&](caf::error& e) {
                 BOOST_TEST(sys.render(e).find("pipeline 0 stage 0 device 1: a ring chunk from "
                                               "the previous device refused: round 9 of step "
                                               "0: a ring of 3 has 4 rounds") != std::string::npos,
                            sys.render(e));
               });
  self->send_exit(device, caf::exit_reason::user_shutdown);
}

BOOST_AUTO_TEST_CASE(a_stand_in_answers_after_the_emulated_round_trip) {
  caf::scoped_actor self{sys};
  auto device = sys.spawn(device_behavior, job, 0, 0, 1);
  // Shaped wall time, 150 ms each way to the device: its answer comes once the work, the
  // device's compute and the answer would have crossed (runtime::apart_answer_s), the real
  // messages inside that time.
  const std::vector<runtime::link_timeline::piece> link{{0.0, {0.15, 1e9}, 0, 0}};
  auto held = sys.spawn(remote_device_behavior, device, std::string("device 1 (node e0)"), true,
                        true, plan.model.context, messages::max_payload_floats,
                        std::make_shared<const shaped_round_trip>(shaped_round_trip{job, link}));
  auto work = op(runtime::op_kind::forward, 0);
  work.first_sample = 2; // device 1's sample of micro-batch 0 (device 0 holds two)
  work.samples = 1;
  const auto timed = [&](const device_actor& to, const device_work& w) {
    const auto began = std::chrono::steady_clock::now();
    const double loss = ask<double>(self, to, w);
    BOOST_TEST(std::isfinite(loss));
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
  };
  const double shaped = timed(held, work);
  BOOST_TEST(shaped >= 0.3);
  BOOST_TEST(shaped < 0.3 + 0.25); // one round trip, not the compute's or the timer's many
  // Without a link (not shaped): at once.
  auto plain = sys.spawn(remote_device_behavior, device, std::string("device 1 (node e0)"), true,
                         true, plan.model.context, messages::max_payload_floats, nullptr);
  work.kind = static_cast<int32_t>(runtime::op_kind::backward_input);
  BOOST_TEST(timed(plain, work) < 0.25);
  for (const auto& a : {caf::actor_cast<caf::actor>(held), caf::actor_cast<caf::actor>(plain),
                        caf::actor_cast<caf::actor>(device)})
    self->send_exit(a, caf::exit_reason::user_shutdown);
}

BOOST_AUTO_TEST_CASE(gradients_too_large_for_one_message_reach_a_device_apart_in_pieces) {
  caf::scoped_actor self{sys};
  auto device = sys.spawn(device_behavior, job, 0, 0, 1);
  const auto before = ask<std::vector<float>>(self, device, gradients_atom_v);
  std::vector<float> values(before.size());
  for (size_t i = 0; i < values.size(); ++i)
    values[i] = static_cast<float>(i % 97) * 0.25f - 3.0f;
  // Messages of at most 1000 values: the stand-in sends them in pieces, in order.
  const size_t piece = 1000;
  BOOST_REQUIRE_GT(values.size(), 3 * piece);
  auto stand_in = sys.spawn(remote_device_behavior, device, std::string("device 1 (node e0)"), true,
                            true, plan.model.context, piece, nullptr);
  BOOST_TEST(ask<int64_t>(self, stand_in, gradient_values{6, values}) == 6);
  BOOST_TEST((ask<std::vector<float>>(self, device, gradients_atom_v) == values));
  // A piece out of order (or of another step) is refused, naming what was expected.
  ask<int64_t>(self, device, gradient_values{7, {1.0f, 2.0f}, 0});
  self->request(device, std::chrono::seconds(30), gradient_values{7, {1.0f}, 5})
      .receive([](int64_t) { BOOST_FAIL("a piece out of order was taken"); },
               [&](caf::error& e) {
                 BOOST_TEST(sys.render(e).find("gradients of step 7 from 5 (1 values): expected "
                                               "step 7 from 2 of") != std::string::npos,
                            sys.render(e));
               });
  // The gradients stay what the last whole set made them, and no step is taken on them while
  // a series of pieces is incomplete.
  BOOST_TEST((ask<std::vector<float>>(self, device, gradients_atom_v) == values));
  self->request(device, std::chrono::seconds(30), optimize_order{7, 1e-3, 1.0})
      .receive([](int64_t) { BOOST_FAIL("a step on incomplete gradients"); },
               [&](caf::error& e) {
                 BOOST_TEST(sys.render(e).find("step 7: gradients of step 7 incomplete (2 of") !=
                                std::string::npos,
                            sys.render(e));
               });
  for (const auto& a : {caf::actor_cast<caf::actor>(stand_in), caf::actor_cast<caf::actor>(device)})
    self->send_exit(a, caf::exit_reason::user_shutdown);
}

/// Only the messages that point into local memory: ring chunks and gradient values may go to
/// a device on another node (test_device_wire.cpp).
BOOST_AUTO_TEST_CASE(the_messages_that_point_into_local_memory_never_leave_the_process) {
  std::vector<char> buffer;
  caf::binary_serializer sink{sys, buffer};
  BOOST_TEST(static_cast<bool>(sink(op(runtime::op_kind::forward, 0))));
  float gradient = 1.0f;
  device_buffers buffers{{std::span<float>(&gradient, 1)}};
  BOOST_TEST(static_cast<bool>(sink(buffers)));
}

BOOST_AUTO_TEST_CASE(device_actors_run_on_the_cpu_or_on_the_nodes_gpus_in_turn) {
  runtime::train_config t;
  auto o = device_backend(t, 3, 2);
  BOOST_TEST((o.kind == kernels::backend_kind::cpu));
  BOOST_TEST(o.threads == 1);
  t.device = "cuda";
  t.bf16 = true;
  o = device_backend(t, 3, 2); // the node's 4th device on its 2nd GPU
  BOOST_TEST((o.kind == kernels::backend_kind::cuda));
  BOOST_TEST(o.device == 1);
  BOOST_TEST((o.precision == kernels::matmul_precision::bf16));
  BOOST_TEST(device_backend(t, 2, 2).device == 0);
  // Each cluster device's place on its node: c0 has 4 devices, e0 3.
  const std::vector<int> want{0, 1, 2, 3, 0, 1, 2};
  BOOST_TEST(job->local_index == want);
}

BOOST_AUTO_TEST_CASE(nccl_serves_only_distinct_gpus_of_the_process) {
  using kernels::backend_kind;
  const kernels::backend_options cpu{}, gpu0{backend_kind::cuda, 1, 0},
      gpu1{backend_kind::cuda, 1, 1};
  BOOST_TEST(!make_gpu_all_reduce({cpu, cpu}));   // emulated devices: the ring
  BOOST_TEST(!make_gpu_all_reduce({gpu0}));       // one device: nothing to reduce
  BOOST_TEST(!make_gpu_all_reduce({gpu0, gpu0})); // one GPU twice: NCCL refuses, the ring
  BOOST_TEST(!make_gpu_all_reduce({gpu0, cpu}));
  if (kernels::visible_cuda_devices() >= 2)
    BOOST_TEST(static_cast<bool>(make_gpu_all_reduce({gpu0, gpu1})));
  else // GPUs this process does not see: NCCL cannot start, and says so
    BOOST_CHECK_THROW(make_gpu_all_reduce({gpu0, gpu1}), std::exception);
}

BOOST_AUTO_TEST_CASE(a_cuda_job_without_a_gpu_stops_at_setup_naming_it) {
  if (kernels::visible_cuda_devices() > 0)
    return; // it runs there (the GPU machine's tests cover it)
  auto train = actors::test::train_for(plan, 1);
  train.device = "cuda";
  try {
    make_job_context(actors::test::test_cluster(), profile, plan, train,
                     actors::test::test_corpus());
    BOOST_FAIL("a cuda job started without a GPU");
  } catch (const std::exception& e) {
    BOOST_TEST_MESSAGE(e.what());
    BOOST_TEST(std::string(e.what()).find("cuda") != std::string::npos);
  }
}

BOOST_AUTO_TEST_SUITE_END()
