// The job deployment of a multi-process job: the coordinator's node sends every other node
// the plan and training settings as one validated Cap'n Proto message; a node builds its job
// from it, checked against the cluster it read; a node that read another cluster is refused;
// the interruption of the coordinator's node reaches the others as such.
#include "tests/actors/actor_test_util.hpp"
#include "tests/actors/wire_test_util.hpp"

#include "actors/job/node_deployment.hpp"
#include "actors/job/node_registry.hpp"
#include "actors/protocol/type_ids.hpp"
#include "actors/protocol/wire_format.hpp"
#include "messages/codec.hpp"
#include "runtime/base/errors.hpp"
#include "runtime/io/plan_json.hpp"

#include "tests/support/refusal.hpp"

#include <boost/test/unit_test.hpp>

#include <caf/binary_deserializer.hpp>
#include <caf/binary_serializer.hpp>
#include <caf/io/middleman.hpp>
#include <caf/scoped_actor.hpp>

#include <cstring>
#include <filesystem>
#include <fstream>

using namespace deepcee;
using namespace deepcee::actors::test;
using namespace std::chrono_literals;

namespace {

/// A corpus file long enough for the tiny model's context.
std::filesystem::path corpus_file() {
  const auto dir = std::filesystem::temp_directory_path() / "deepcee-deployment-test";
  std::filesystem::create_directories(dir);
  const auto file = dir / "corpus.txt";
  std::ofstream out(file);
  for (int i = 0; i < 300; ++i)
    out << "line " << i << ": the coordinator's node deploys the plan to every node\n";
  return file;
}

/// A deployment with values whose every bit matters (lr and eps are not short decimals).
messages::job_deployment sample_deployment() {
  const auto plan = two_pipeline_plan(runtime::schedule_kind::zb_h1);
  auto train = train_for(plan, 30);
  train.seed = 0x9e3779b97f4a7c15ull;
  train.optimizer.lr = 1.0 / 3.0 * 1e-3;
  train.optimizer.eps = 1e-8 * (1.0 + 1e-15);
  train.optimizer.warmup_steps = 3;
  train.checkpoint_every = 5;
  train.data.path = corpus_file();
  train.data.val_fraction = 0.1;
  auto d = actors::make_deployment("deploy-test", plan, train, {runtime::time_mode::wall, true});
  d.node = "e0";
  d.clock_s = 1.0 / 3.0 + 4096; // not a round binary number: the bits must travel
  return d;
}

bool same_bits(double a, double b) {
  return std::memcmp(&a, &b, sizeof a) == 0;
}

void check_same_train(const runtime::train_config& a, const runtime::train_config& b) {
  const auto &oa = a.optimizer, &ob = b.optimizer;
  for (auto [x, y] : {std::pair{oa.lr, ob.lr},
                      {oa.min_lr_ratio, ob.min_lr_ratio},
                      {oa.beta1, ob.beta1},
                      {oa.beta2, ob.beta2},
                      {oa.eps, ob.eps},
                      {oa.weight_decay, ob.weight_decay},
                      {oa.grad_clip, ob.grad_clip},
                      {a.data.val_fraction, b.data.val_fraction}})
    BOOST_TEST(same_bits(x, y));
  BOOST_TEST(oa.warmup_steps == ob.warmup_steps);
  BOOST_TEST((std::tie(a.batch, a.steps, a.seed, a.device, a.bf16, a.threads, a.eval_every,
                       a.eval_batches, a.checkpoint_every, a.metrics_format) ==
              std::tie(b.batch, b.steps, b.seed, b.device, b.bf16, b.threads, b.eval_every,
                       b.eval_batches, b.checkpoint_every, b.metrics_format)));
  BOOST_TEST(a.data.path == b.data.path);
  BOOST_TEST(a.out == b.out);
  BOOST_TEST(
      (std::tie(a.model.n_layer, a.model.d_model, a.model.n_head, a.model.context, a.model.vocab) ==
       std::tie(b.model.n_layer, b.model.d_model, b.model.n_head, b.model.context, b.model.vocab)));
}

} // namespace

BOOST_FIXTURE_TEST_SUITE(deployment, system_fixture)

BOOST_AUTO_TEST_CASE(a_deployment_round_trips_bit_exact_through_caf_serialization) {
  const auto d = sample_deployment();
  const auto buf = serialize(sys, d);
  // What crosses is one Cap'n Proto message: the CAF bytes are its byte vector.
  BOOST_TEST((buf == serialized_bytes(sys, messages::encode(d))));
  messages::job_deployment back;
  BOOST_REQUIRE(deserialize(sys, buf, back));
  BOOST_TEST(runtime::plan_to_json(back.plan) == runtime::plan_to_json(d.plan));
  check_same_train(back.train, d.train);
  BOOST_TEST((std::tie(back.job, back.node, back.mode, back.shape_links, back.clock_s) ==
              std::tie(d.job, d.node, d.mode, d.shape_links, d.clock_s)));
  BOOST_TEST((serialize(sys, back) == buf)); // and again: the same bytes
}

BOOST_AUTO_TEST_CASE(invalid_or_corrupted_deployments_are_refused_and_counted) {
  const auto before = actors::dropped_wire_messages(sys);
  auto refused = [&](const messages::job_deployment& bad) {
    auto out = sample_deployment();
    out.train.seed = 99;
    const bool r = !deserialize(sys, serialized_bytes(sys, messages::encode(bad)), out);
    if (r)
      BOOST_TEST(out.train.seed == 99u); // a refused message leaves the value alone
    return r;
  };
  const auto good = [&] {
    const auto d = sample_deployment();
    messages::job_deployment m;
    m.job = d.job;
    m.node = d.node;
    m.plan = d.plan;
    m.train = d.train;
    return m;
  };
  auto m = good();
  BOOST_TEST(!refused(m));
  m.plan.pipelines[0].stages[0].samples = {2}; // two devices, one share
  BOOST_TEST(refused(m));
  m = good();
  m.node.clear();
  BOOST_TEST(refused(m));
  m = good();
  m.train.threads = 0;
  BOOST_TEST(refused(m));
  m = good();
  m.plan.pipelines[1].stages[1].first_layer = 4; // an empty layer range
  BOOST_TEST(refused(m));
  BOOST_TEST(actors::dropped_wire_messages(sys) - before == 4);

  // Flipped bits and truncations: refused and counted, or a valid deployment; never a crash.
  BOOST_TEST(fuzz<messages::job_deployment>(sys, sample_deployment(), 23, 1000,
                                            [](const messages::job_deployment& out, auto&) {
                                              return !out.node.empty() &&
                                                     !out.plan.pipelines.empty() &&
                                                     out.plan.micro_batch_size > 0;
                                            }) > 0);
}

BOOST_AUTO_TEST_CASE(a_node_builds_its_job_from_the_deployment) {
  const auto cluster = test_cluster();
  const auto d = sample_deployment();
  const auto job = actors::accept_deployment(d, cluster, "e0");
  BOOST_TEST(runtime::plan_to_json(job->plan) == runtime::plan_to_json(d.plan));
  check_same_train(job->train, d.train);
  BOOST_TEST((job->mode.time == runtime::time_mode::wall));
  BOOST_TEST(job->mode.shape_links);
  BOOST_TEST((job->layout.stage_node == std::vector<int>{0, 0, 1, 0, 1}));
  BOOST_TEST((job->stage_nodes == std::vector<std::string>{"c0", "c0", "e0", "c0", "e0"}));

  // Each refusal says what is wrong.
  const auto refusal = [&](messages::job_deployment bad, const std::string& node = "e0") {
    return deepcee::test::refusal<runtime::input_error>(
        [&] { actors::accept_deployment(bad, cluster, node); });
  };
  BOOST_TEST(refusal(d, "c0").find("addressed to node 'e0', not 'c0'") != std::string::npos);
  auto bad = d;
  bad.plan.pipelines[1].stages[1].devices = {5, 7}; // the cluster has devices 0..6
  BOOST_TEST(refusal(bad).find("deployment of job 'deploy-test'") != std::string::npos,
             refusal(bad));
  // A stage across nodes is no error: it runs on its first device's node, the rest apart.
  auto spread = d;
  spread.plan.pipelines[0].stages[0].devices = {0, 4}; // c0 and e0 in one stage
  spread.plan.pipelines[0].stages[2].devices = {1};
  const auto across = actors::accept_deployment(spread, cluster, "e0");
  BOOST_TEST(across->stage_nodes.at(0) == "c0");
  BOOST_TEST(across->layout.apart(0, 1));
  bad = d;
  bad.train.batch += 1;
  BOOST_TEST(refusal(bad).find("differs from the plan's global batch") != std::string::npos,
             refusal(bad));
  bad = d;
  bad.train.data.path = "/nonexistent/deepcee/corpus";
  BOOST_TEST(refusal(bad).find("/nonexistent/deepcee/corpus") != std::string::npos, refusal(bad));
}

BOOST_AUTO_TEST_CASE(a_member_clock_reads_the_coordinators_half_a_round_trip_after_its_answer) {
  using std::chrono::steady_clock;
  const auto asked = steady_clock::now();
  const auto answered = asked + std::chrono::milliseconds(40); // 20 ms each way
  const auto epoch = actors::aligned_epoch(asked, answered, 12.5);
  // At `answered` the coordinator's clock reads 12.5 s plus the 20 ms the answer travelled.
  BOOST_TEST(std::chrono::duration<double>(answered - epoch).count() == 12.52,
             boost::test_tools::tolerance(1e-9));
}

BOOST_AUTO_TEST_CASE(the_registry_deploys_to_each_node_and_refuses_another_cluster) {
  const auto cluster = test_cluster();
  auto d = sample_deployment();
  d.node.clear();
  const auto layout = runtime::layout_of(cluster, d.plan);
  caf::scoped_actor self{sys};
  const auto ask = [&](const actors::node_registry_actor& r, messages::deployment_request q,
                       messages::job_deployment* out = nullptr) {
    std::string error;
    self->request(r, 10s, q).receive(
        [&](messages::job_deployment& got) {
          if (out)
            *out = std::move(got);
        },
        [&](caf::error& e) { error = sys.render(e); });
    return error;
  };
  // Stages of c0 left empty: this test asks, it never wires.
  const actors::local_part none{0, std::vector<actors::stage_actor>(3), {}};
  for (const bool same_cluster : {true, false}) {
    auto r = actors::spawn_node_registry(sys, d, "f00d", {"c0", "e0"}, layout, none, 30s);
    BOOST_TEST(ask(r, {"x9", "f00d"}).find("'x9' is not a node of this job") != std::string::npos);
    messages::job_deployment got;
    const auto error = ask(r, {"e0", same_cluster ? "f00d" : "beef"}, &got);
    if (same_cluster) {
      BOOST_TEST(error == "");
      BOOST_TEST(got.node == "e0");
      // The coordinator's clock as it answered: what it read at the registry's start, plus
      // the time since (a few ms here, well under a second).
      BOOST_TEST(got.clock_s >= d.clock_s);
      BOOST_TEST(got.clock_s < d.clock_s + 1.0);
      BOOST_TEST(runtime::plan_to_json(got.plan) == runtime::plan_to_json(d.plan));
      BOOST_TEST(got.train.seed == d.train.seed);
    } else {
      BOOST_TEST(error.find("node 'e0' read a different cluster") != std::string::npos, error);
      std::string failed; // the job fails at once, long before the 30 s timeout
      self->request(r, 10s, actors::await_atom_v)
          .receive([](actors::stage_wiring&) {}, [&](caf::error& e) { failed = sys.render(e); });
      BOOST_TEST(failed.find("node 'e0' read a different cluster") != std::string::npos, failed);
    }
    self->send(r, actors::stop_atom_v, "");
  }
}

/// Through a real connection: the typed request crosses as Cap'n Proto, and the end of an
/// interrupted job reaches the other node as an interruption, an ordinary stop not.
BOOST_AUTO_TEST_CASE(a_deployment_and_an_interruption_cross_a_real_connection) {
  struct net_config : actors::system_config {
    net_config() {
      load<caf::io::middleman>();
      set("scheduler.max-threads", 2);
      set("logger.console", caf::atom("none"));
    }
  };
  const auto cluster = test_cluster();
  auto d = sample_deployment();
  d.node.clear();
  const auto layout = runtime::layout_of(cluster, d.plan);
  const actors::local_part none{0, std::vector<actors::stage_actor>(3), {}};
  net_config cfg_a, cfg_b;
  caf::actor_system a{cfg_a}, b{cfg_b};
  for (const bool interrupted : {true, false}) {
    auto registry = actors::spawn_node_registry(a, d, "f00d", {"c0", "e0"}, layout, none, 30s);
    auto port = a.middleman().publish(registry, 0, "127.0.0.1");
    BOOST_REQUIRE(port);
    auto remote = b.middleman().remote_actor<actors::node_registry_actor>("127.0.0.1", *port);
    BOOST_REQUIRE(remote);
    caf::scoped_actor member{b};
    member->monitor(*remote);
    messages::job_deployment got;
    member->request(*remote, 5s, messages::deployment_request{"e0", "f00d"})
        .receive([&](messages::job_deployment& x) { got = std::move(x); },
                 [&](caf::error& e) { BOOST_FAIL(b.render(e)); });
    BOOST_TEST(got.node == "e0");
    BOOST_TEST(runtime::plan_to_json(got.plan) == runtime::plan_to_json(d.plan));
    check_same_train(got.train, d.train);

    caf::scoped_actor boss{a};
    if (interrupted)
      boss->send(registry, actors::stop_atom_v, actors::interrupt_atom_v,
                 std::string("Ctrl-C after step 3, checkpoint saved"));
    else
      boss->send(registry, actors::stop_atom_v, std::string("step 3: node e1 disconnected"));
    caf::error reason;
    member->receive([&](caf::down_msg& m) { reason = m.reason; },
                    caf::after(5s) >> [] { BOOST_FAIL("no down message"); });
    BOOST_TEST(actors::is_job_interrupted(reason) == interrupted);
    const auto& context = reason.context();
    BOOST_REQUIRE(context.match_elements<std::string>());
    BOOST_TEST(
        context.get_as<std::string>(0) ==
        (interrupted ? "Ctrl-C after step 3, checkpoint saved" : "step 3: node e1 disconnected"));
    a.middleman().unpublish(registry, *port);
  }
}

/// An outsider (another process than the one that asked for e0's deployment) that joins
/// as e0 with stages of its own, or reports e0 broken, is refused without failing the job:
/// e0's own process is still served afterwards.
BOOST_AUTO_TEST_CASE(an_outsiders_refused_join_does_not_poison_the_registry) {
  struct net_config : actors::system_config {
    net_config() {
      load<caf::io::middleman>();
      set("scheduler.max-threads", 2);
      set("logger.console", caf::atom("none"));
    }
  };
  const auto cluster = test_cluster();
  auto d = sample_deployment();
  d.node.clear();
  const auto layout = runtime::layout_of(cluster, d.plan);
  const actors::local_part none{0, std::vector<actors::stage_actor>(3), {}};
  net_config cfg_a, cfg_b, cfg_c;
  caf::actor_system a{cfg_a}, b{cfg_b}, c{cfg_c};
  auto registry = actors::spawn_node_registry(a, d, "f00d", {"c0", "e0"}, layout, none, 30s);
  auto port = a.middleman().publish(registry, 0, "127.0.0.1");
  BOOST_REQUIRE(port);
  const auto deploy = [&](caf::actor_system& sys) {
    auto remote = sys.middleman().remote_actor<actors::node_registry_actor>("127.0.0.1", *port);
    BOOST_REQUIRE(remote);
    caf::scoped_actor self{sys};
    std::string error;
    self->request(*remote, 5s, messages::deployment_request{"e0", "f00d"})
        .receive([](messages::job_deployment&) {}, [&](caf::error& e) { error = sys.render(e); });
    return error;
  };
  BOOST_TEST(deploy(b) == ""); // e0's own process
  auto outsider = c.middleman().remote_actor<actors::node_registry_actor>("127.0.0.1", *port);
  BOOST_REQUIRE(outsider);
  caf::scoped_actor self{c};
  actors::joining_node forged;
  forged.join.node = "e0";
  forged.join.job = "f00d";
  forged.join.stages = {0, 1, 2}; // not e0's
  forged.handles.resize(3);
  std::string refused;
  self->request(*outsider, 5s, forged)
      .receive([](int32_t) {}, [&](caf::error& e) { refused = c.render(e); });
  BOOST_TEST(refused.find("joins from another process") != std::string::npos, refused);
  self->send(*outsider, messages::error_report{"e0", messages::error_code::bad_input, "forged"});
  BOOST_TEST(deploy(c).find("asked for by another process") != std::string::npos);
  // Not poisoned: e0's own process is answered as before (a failed job refuses every request).
  BOOST_TEST(deploy(b) == "");
  a.middleman().unpublish(registry, *port);
  caf::scoped_actor boss{a};
  boss->send(registry, actors::stop_atom_v, std::string());
}

BOOST_AUTO_TEST_SUITE_END()
