// Shaped wall time between two actor systems joined by a real connection (two processes'
// worth of actors; one process, so one steady clock): a ring chunk leaves at once with its
// modelled arrival and the receiving device holds it until then, so the real transfer
// happens inside the modelled time; a hold asked for past what the link model can give is
// cut to the job's limit.
#include "tests/actors/actor_test_util.hpp"

#include "actors/device/device_actor.hpp"
#include "runtime/step/ring_allreduce.hpp"
#include "runtime/step/shaped_delivery.hpp"

#include <boost/test/unit_test.hpp>

#include <caf/after.hpp>
#include <caf/io/middleman.hpp>
#include <caf/scoped_actor.hpp>

#include <chrono>
#include <memory>
#include <vector>

using namespace deepcee;
using namespace deepcee::actors;
using namespace std::chrono_literals;

namespace {

struct net_config : system_config {
  net_config() {
    load<caf::io::middleman>();
    set("scheduler.max-threads", 2);
    set("logger.console", caf::atom("none"));
  }
};

/// One stage of two devices, one on each node of the slow LAN (2 Mbps, 5 ms): each ring
/// chunk of the tiny model's gradients takes a few hundred ms on the emulated link.
struct shaped_ring_fixture {
  runtime::plan plan = actors::test::one_stage_plan({0, 3}, {1, 1});
  runtime::profile_table profile{runtime::make_model_spec(plan.model)};
  std::shared_ptr<job_context> job = make_job_context(
      deepcee::test::slow_lan_two_nodes_cluster(), profile, plan, actors::test::train_for(plan, 1),
      actors::test::test_corpus(), run_mode{runtime::time_mode::wall, true});
  net_config cfg_a, cfg_b;
  caf::actor_system a{cfg_a}, b{cfg_b};

  /// Device 1 of the stage in system b, published there and reached from system a through
  /// a real connection; `self` (in a) plays device 0, its previous and next device, and
  /// `held` says whether device 1 holds what it receives.
  struct ring_peer {
    device_actor device;
    uint16_t port = 0;
    device_actor remote;
  };
  ring_peer wire(caf::scoped_actor& self, bool held) {
    ring_peer p;
    p.device = b.spawn(device_behavior, job, 0, 0, 1);
    const auto port = b.middleman().publish(p.device, 0, "127.0.0.1");
    BOOST_REQUIRE(port);
    p.port = *port;
    const auto remote = a.middleman().remote_actor<device_actor>("127.0.0.1", *port);
    BOOST_REQUIRE(remote);
    p.remote = *remote;
    self->send(p.remote, ring_atom_v, caf::actor_cast<caf::strong_actor_ptr>(self), int32_t{1},
               int32_t{2}, held);
    return p;
  }
};

int64_t now_ns() {
  return job_context::steady_now_ns();
}

/// The next ring chunk that reaches `self` within 10 s, and when it came.
std::pair<ring_chunk, int64_t> next_chunk(caf::scoped_actor& self) {
  ring_chunk got;
  bool came = false;
  self->receive(
      [&](ring_chunk& c) {
        got = std::move(c);
        came = true;
      },
      caf::after(10s) >> [] {});
  BOOST_REQUIRE(came);
  return {std::move(got), now_ns()};
}

} // namespace

BOOST_FIXTURE_TEST_SUITE(shaped_hold, shaped_ring_fixture)

BOOST_AUTO_TEST_CASE(a_shaped_ring_chunk_is_used_at_its_modelled_arrival_and_not_before) {
  caf::scoped_actor self{a};
  const auto peer = wire(self, true);
  const auto& remote = peer.remote;
  std::vector<float> gradients;
  self->request(remote, 30s, gradients_atom_v)
      .receive([&](std::vector<float>& g) { gradients = std::move(g); },
               [&](caf::error& e) { BOOST_FAIL(a.render(e)); });
  runtime::ring_allreduce previous(0, 2, std::vector<float>(gradients.size(), 1.0f));
  const auto& hop = job->cluster->stage(0, 0).ring_parts.at(1);
  const auto modelled = [&](const ring_chunk& c) {
    return runtime::transfer_bound_s(hop, static_cast<double>(c.values.size() * sizeof(float)));
  };

  // Round 0 leaves the device at once, its modelled arrival with it: here before then.
  const auto asked = now_ns();
  self->send(remote, reduce_atom_v, int64_t{0}, false);
  const auto [sent, came] = next_chunk(self);
  const double transfer_s = modelled(sent);
  BOOST_TEST_MESSAGE("round 0: modelled " << transfer_s * 1e3 << " ms, here after "
                                          << (came - asked) / 1e6 << " ms");
  BOOST_TEST(transfer_s > 0.1); // a link slow enough to tell a hold from a wait
  BOOST_TEST(sent.deliver_at_ns > came);
  const auto transfer_ns = static_cast<int64_t>(transfer_s * 1e9);
  BOOST_TEST(sent.deliver_at_ns >= asked + transfer_ns - 1'000'000); // 1 ms of rounding
  BOOST_TEST(sent.deliver_at_ns <= came + transfer_ns + 1'000'000);

  // The previous device's round 0, modelled to arrive 300 ms from now: the device uses it
  // (and sends its round 1) no earlier, and not much later.
  const auto out = previous.outgoing();
  const auto arrival = now_ns() + 300'000'000;
  self->send(remote, ring_chunk{0, out.round, out.values, arrival});
  const auto [round1, used] = next_chunk(self);
  BOOST_TEST_MESSAGE("round 0 used " << (used - arrival) / 1e6 << " ms after its arrival");
  BOOST_TEST(round1.round == 1);
  BOOST_TEST(used >= arrival);
  BOOST_TEST(used <= arrival + 150'000'000);

  // Round 1 asks for a hold of 11 days (a bad clock or a hostile peer): the device holds
  // it no longer than the job's link model allows, then ends its reduce.
  const double limit_s = runtime::hold_limit_s(*job->cluster, job->plan);
  BOOST_TEST_MESSAGE("hold limit " << limit_s << " s");
  BOOST_TEST(limit_s >= 4 * transfer_s); // two hops, twice the gradients each, twice
  BOOST_TEST(limit_s < 10.0);
  previous.receive({sent.round, sent.values});
  const auto last = previous.outgoing();
  const auto hostile = now_ns();
  self->send(remote, ring_chunk{0, last.round, last.values, hostile + 950'400'000'000'000});
  bool reduced = false;
  self->receive([&](gradient_values& g) { reduced = g.step == 0; }, caf::after(30s) >> [] {});
  const double held_s = static_cast<double>(now_ns() - hostile) / 1e9;
  BOOST_TEST_MESSAGE("held " << held_s << " s");
  BOOST_TEST(reduced);
  BOOST_TEST(held_s >= limit_s - 0.01);
  BOOST_TEST(held_s <= limit_s + 1.0);

  b.middleman().unpublish(peer.device, peer.port);
  self->send_exit(remote, caf::exit_reason::user_shutdown);
}

BOOST_AUTO_TEST_CASE(across_hosts_the_sender_waits_for_the_modelled_arrival_and_sends_no_hold) {
  // The group found no shared clock with the next device (other host boots): the chunk
  // leaves when the link model says it arrives, asking for no hold.
  caf::scoped_actor self{a};
  const auto peer = wire(self, false);
  const auto& remote = peer.remote;
  const auto asked = now_ns();
  self->send(remote, reduce_atom_v, int64_t{0}, false);
  const auto [sent, came] = next_chunk(self);
  const auto& hop = job->cluster->stage(0, 0).ring_parts.at(1);
  const double transfer_s =
      runtime::transfer_bound_s(hop, static_cast<double>(sent.values.size() * sizeof(float)));
  BOOST_TEST(sent.deliver_at_ns == 0);
  BOOST_TEST(came - asked >= static_cast<int64_t>(transfer_s * 1e9) - 1'000'000);
  b.middleman().unpublish(peer.device, peer.port);
  self->send_exit(remote, caf::exit_reason::user_shutdown);
}

BOOST_AUTO_TEST_SUITE_END()
