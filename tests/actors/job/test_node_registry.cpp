// The parts of a multi-process job that need no sockets: which node runs which stage, the
// registry's joins and timeout, and the coordinator failing a step when a node goes away.
#include "tests/actors/actor_test_util.hpp"

#include "actors/job/coordinator.hpp"
#include "actors/job/node_deployment.hpp"
#include "actors/job/node_registry.hpp"
#include "actors/stage/stage_actor.hpp"
#include "runtime/base/errors.hpp"

#include <boost/test/unit_test.hpp>

#include <caf/exit_reason.hpp>
#include <caf/scoped_actor.hpp>

using namespace deepcee;
using namespace deepcee::actors::test;
using namespace std::chrono_literals;

namespace {

/// The job of the same-math tests, with its stages spawned in this process.
struct job_fixture : system_fixture {
  runtime::cluster cluster = test_cluster();
  runtime::plan plan = two_pipeline_plan(runtime::schedule_kind::one_f_one_b);
  runtime::profile_table profile{runtime::make_model_spec(plan.model)};
  std::shared_ptr<actors::job_context> ctx =
      actors::make_job_context(cluster, profile, plan, train_for(plan, 3), test_corpus());
  runtime::node_layout layout = runtime::layout_of(cluster, plan);
  const std::vector<int>& owner = layout.stage_node;
  messages::job_deployment deployment =
      actors::make_deployment("registry-test", plan, ctx->train, ctx->mode);
  std::vector<actors::stage_actor> stages;
  caf::scoped_actor self{sys};

  job_fixture() {
    for (int p = 0; p < 2; ++p)
      for (int s = 0; s < ctx->stage_count(p); ++s)
        stages.push_back(actors::spawn_stage(sys, ctx, p, s));
  }
  ~job_fixture() {
    for (auto& s : stages)
      self->send_exit(s, caf::exit_reason::user_shutdown);
  }
  std::vector<actors::stage_actor> on(int node) const {
    std::vector<actors::stage_actor> out;
    for (size_t k = 0; k < owner.size(); ++k)
      if (owner[k] == node)
        out.push_back(stages[k]);
    return out;
  }
  /// The registry's answer to `await`: the wiring, or the error's text.
  std::string await(const actors::node_registry_actor& r, actors::stage_wiring* out = nullptr) {
    std::string error;
    self->request(r, 10s, actors::await_atom_v)
        .receive(
            [&](actors::stage_wiring& w) {
              if (out)
                *out = std::move(w);
            },
            [&](caf::error& e) { error = sys.render(e); });
    return error;
  }
  void stop(const actors::node_registry_actor& r) { self->send(r, actors::stop_atom_v, ""); }
  /// e0's join with its stages.
  actors::joining_node e0_join(std::string job = "cluster") const {
    actors::joining_node joining;
    joining.join.node = "e0";
    joining.join.job = std::move(job);
    joining.join.stages = {2, 4};
    for (auto& s : on(1))
      joining.handles.push_back(caf::actor_cast<caf::strong_actor_ptr>(s));
    return joining;
  }
  /// A registry of this job whose cluster fingerprint is "cluster".
  actors::node_registry_actor registry(std::chrono::milliseconds timeout) {
    return actors::spawn_node_registry(sys, deployment, "cluster", {"c0", "e0"}, layout,
                                       {0, on(0), {}}, timeout);
  }
};

} // namespace

BOOST_AUTO_TEST_SUITE(node_registry)

BOOST_AUTO_TEST_CASE(stages_belong_to_the_node_of_their_devices) {
  job_fixture f;
  BOOST_CHECK((f.owner == std::vector<int>{0, 0, 1, 0, 1}));
  BOOST_CHECK(f.layout.apart_on(0).empty());
  BOOST_CHECK(f.layout.apart_on(1).empty());
  // A stage whose devices span nodes runs on its first device's node; the others run apart.
  auto split = f.plan;
  split.pipelines[0].stages[1].devices = {4, 1, 5};
  const auto layout = runtime::layout_of(f.cluster, split);
  BOOST_CHECK((layout.stage_node == std::vector<int>{0, 1, 1, 0, 1}));
  const int flat = 1;
  BOOST_CHECK(!layout.apart(flat, 0) && layout.apart(flat, 1) && !layout.apart(flat, 2));
  BOOST_CHECK((layout.apart_on(0) == std::vector<int32_t>{layout.slot(flat, 1)}));
  BOOST_CHECK(layout.apart_on(1).empty());
  BOOST_CHECK((layout.slot_node.at(static_cast<size_t>(layout.slot(flat, 2))) == 1));
  BOOST_CHECK(layout.runs_on(0) && layout.runs_on(1));
  // One process runs every node: nothing is apart.
  BOOST_CHECK(!runtime::node_layout{}.apart(flat, 1));
}

BOOST_AUTO_TEST_CASE(a_node_that_never_joins_is_named_after_the_timeout) {
  job_fixture f;
  auto r = f.registry(200ms);
  const auto error = f.await(r);
  BOOST_CHECK_MESSAGE(error.find("node(s) e0 did not join within 0.20 s") != std::string::npos,
                      error);
  f.stop(r);
}

BOOST_AUTO_TEST_CASE(joins_are_checked_then_every_stage_is_wired) {
  job_fixture f;
  auto r = f.registry(10s);
  auto join = f.e0_join("another job");
  const auto ask = [&](const actors::joining_node& j) {
    std::string error;
    f.self->request(r, 10s, j).receive([](int32_t) {},
                                       [&](caf::error& e) { error = f.sys.render(e); });
    return error;
  };
  join.join.job = "cluster";
  auto stranger = join;
  stranger.join.node = "x9";
  BOOST_CHECK(ask(stranger).find("runs nothing of this job") != std::string::npos);
  BOOST_CHECK_EQUAL(ask(join), "");
  BOOST_CHECK(ask(join).find("joined twice") != std::string::npos);
  actors::stage_wiring w;
  BOOST_CHECK_EQUAL(f.await(r, &w), "");
  BOOST_REQUIRE_EQUAL(w.stages.size(), f.stages.size());
  for (size_t k = 0; k < w.stages.size(); ++k)
    BOOST_CHECK(w.stages[k] == caf::actor_cast<caf::strong_actor_ptr>(f.stages[k]));
  f.stop(r);
}

BOOST_AUTO_TEST_CASE(each_nodes_host_boot_reaches_the_wiring) {
  // Whether two nodes share a steady clock (shaped wall time's receiver-side hold) is
  // decided from these, on every stage that gets the wiring.
  job_fixture f;
  actors::local_part here{0, f.on(0), {}, {}, "boot-of-c0"};
  auto r = actors::spawn_node_registry(f.sys, f.deployment, "cluster", {"c0", "e0"}, f.layout, here,
                                       10s);
  auto join = f.e0_join();
  join.boot_id = "boot-of-e0";
  f.self->request(r, 10s, join)
      .receive([](int32_t) {}, [&](caf::error& e) { BOOST_FAIL(f.sys.render(e)); });
  actors::stage_wiring w;
  BOOST_CHECK_EQUAL(f.await(r, &w), "");
  BOOST_CHECK((w.boot_ids == std::vector<std::string>{"boot-of-c0", "boot-of-e0"}));
  f.stop(r);
}

BOOST_AUTO_TEST_CASE(a_node_joins_with_its_devices_of_other_nodes_stages) {
  job_fixture f;
  auto split = f.plan; // pipeline 0's stage 1 (on c0) gets a device of e0
  split.pipelines[0].stages[1].devices = {2, 4};
  const auto layout = runtime::layout_of(f.cluster, split);
  const auto slot = layout.slot(1, 1);
  BOOST_REQUIRE((layout.apart_on(1) == std::vector<int32_t>{slot}));
  auto r = actors::spawn_node_registry(f.sys, f.deployment, "cluster", {"c0", "e0"}, layout,
                                       {0, f.on(0), {}}, 10s);
  auto join = f.e0_join();
  const auto device = caf::actor_cast<caf::strong_actor_ptr>(f.stages[2]); // any handle
  join.join.devices = {slot};
  join.device_handles = {device};
  std::string error;
  f.self->request(r, 10s, join)
      .receive([](int32_t) {}, [&](caf::error& e) { error = f.sys.render(e); });
  BOOST_CHECK_EQUAL(error, "");
  actors::stage_wiring w;
  BOOST_CHECK_EQUAL(f.await(r, &w), "");
  BOOST_REQUIRE_EQUAL(w.devices.size(), layout.slot_node.size());
  for (size_t k = 0; k < w.devices.size(); ++k)
    BOOST_CHECK(w.devices[k] == (static_cast<int>(k) == slot ? device : nullptr));
  f.stop(r);

  // Without them, or without an actor for one, it is refused, naming what is wrong.
  const auto refusal = [&](actors::joining_node bad) {
    auto again = actors::spawn_node_registry(f.sys, f.deployment, "cluster", {"c0", "e0"}, layout,
                                             {0, f.on(0), {}}, 10s);
    std::string why;
    f.self->request(again, 10s, bad)
        .receive([](int32_t) {}, [&](caf::error& e) { why = f.sys.render(e); });
    f.stop(again);
    return why;
  };
  auto none = join;
  none.join.devices.clear();
  none.device_handles.clear();
  const auto slots = "offers device slots [], the plan gives it [" + std::to_string(slot) + "]";
  BOOST_CHECK_MESSAGE(refusal(none).find(slots) != std::string::npos, refusal(none));
  auto null = join;
  null.device_handles = {nullptr};
  BOOST_CHECK_MESSAGE(refusal(null).find("handed over no actor for device slot " +
                                         std::to_string(slot)) != std::string::npos,
                      refusal(null));
}

/// A node with another cluster, or claiming other stages, fails the job at once.
BOOST_AUTO_TEST_CASE(a_node_with_another_cluster_fails_the_job_at_once) {
  for (const bool other_cluster : {true, false}) {
    job_fixture f;
    auto r = f.registry(30s);
    auto join = f.e0_join(other_cluster ? "another cluster" : "cluster");
    if (!other_cluster)
      join.join.stages = {1, 4};
    std::string error;
    f.self->request(r, 10s, join)
        .receive([](int32_t) {}, [&](caf::error& e) { error = f.sys.render(e); });
    const auto want =
        other_cluster ? "node 'e0' read a different cluster" : "node 'e0' offers other stages";
    BOOST_CHECK_MESSAGE(error.find(want) != std::string::npos, error);
    const auto failed = f.await(r); // long before the 30 s timeout
    BOOST_CHECK_MESSAGE(failed.find(want) != std::string::npos, failed);
    f.stop(r);
  }
}

BOOST_AUTO_TEST_CASE(a_node_that_cannot_run_the_job_fails_it_at_once_naming_itself) {
  job_fixture f;
  auto r = f.registry(30s);
  const auto bad_input = messages::error_code::bad_input;
  f.self->send(r, messages::error_report{"x9", bad_input, "not one of the job's nodes: ignored"});
  f.self->send(r, messages::error_report{"e0", bad_input, "data/ holds no text"});
  const auto failed = f.await(r); // long before the 30 s timeout
  BOOST_CHECK_MESSAGE(
      failed.find("node e0 cannot run the job: data/ holds no text") != std::string::npos, failed);
  f.stop(r);
}

// Layer 3 lives only on e0: losing it ends the job, naming the node and the layer.
BOOST_AUTO_TEST_CASE(a_lost_stage_fails_the_step_naming_its_node) {
  job_fixture f;
  auto coordinator =
      actors::spawn_coordinator(f.sys, f.ctx, f.stages, {"c0", "c0", "e0", "c0", "e0"});
  f.self->send_exit(f.stages[4], caf::exit_reason::kill);
  std::string error;
  for (int attempt = 0; attempt < 2; ++attempt) // the down message may trail the first ask
    f.self->request(coordinator, 10s, actors::step_atom_v, int64_t{1})
        .receive([](actors::step_result&) {}, [&](caf::error& e) { error = f.sys.render(e); });
  BOOST_CHECK_MESSAGE(error.find("node e0 lost (disconnected") != std::string::npos, error);
  BOOST_CHECK_MESSAGE(error.find("no other node held layer 3,") != std::string::npos, error);
  f.self->send_exit(coordinator, caf::exit_reason::user_shutdown);
}

BOOST_AUTO_TEST_SUITE_END()
