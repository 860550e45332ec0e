// The link probe of `deepcee profile --name`: a payload is answered with its size, a later
// node's probe introduced over the connection that node opened is kept by name (so that this
// node never dials it), and only the coordinator's node takes reports.
#include "tests/actors/actor_test_util.hpp"

#include "actors/net/link_probe.hpp"
#include "actors/protocol/type_ids.hpp"

#include <boost/test/unit_test.hpp>

#include <caf/io/middleman.hpp>
#include <caf/scoped_actor.hpp>

#include <chrono>
#include <string>

namespace deepcee::actors::test {
namespace {

using namespace std::chrono_literals;

/// `probe`'s answer to `request...`, or -100 when it answered with an error.
template <class... Ts>
int64_t ask(caf::scoped_actor& self, const link_probe_actor& probe, Ts&&... request) {
  int64_t out = -100;
  self->request(probe, 5s, std::forward<Ts>(request)...)
      .receive([&](int64_t answer) { out = answer; }, [&](caf::error&) {});
  return out;
}

} // namespace

BOOST_AUTO_TEST_SUITE(link_probe)

BOOST_FIXTURE_TEST_CASE(answers_sizes_keeps_introduced_probes_and_reports_where_it_collects,
                        system_fixture) {
  auto peers = std::make_shared<link_peers>();
  auto reports = std::make_shared<link_reports>();
  auto member = spawn_link_probe(sys, peers, nullptr);
  auto coordinator = spawn_link_probe(sys, std::make_shared<link_peers>(), reports);
  caf::scoped_actor self{sys};
  BOOST_TEST(ask(self, member, std::string(4096, 'x')) == 4096);
  BOOST_TEST(ask(self, member, std::string()) == 0);

  BOOST_TEST(!peers->find("n2"));
  BOOST_TEST(ask(self, member, peer_atom_v, std::string("n2"),
                 caf::actor_cast<caf::strong_actor_ptr>(coordinator)) == 0);
  const auto n2 = peers->find("n2");
  BOOST_REQUIRE(n2);
  BOOST_TEST((*n2 == coordinator));
  BOOST_TEST(!peers->find("n3"));
  // No handle: refused, nothing kept.
  BOOST_TEST(ask(self, member, peer_atom_v, std::string("n3"), caf::strong_actor_ptr{}) == -1);
  BOOST_TEST(!peers->find("n3"));

  // Reports: refused by a member's probe, counted by the coordinator's.
  BOOST_TEST(ask(self, member, std::string("n1"), std::string("n1 n0 1e-4 1e9\n")) == -1);
  BOOST_TEST(ask(self, coordinator, std::string("n1"), std::string("n1 n0 1e-4 1e9\n")) == 1);
  BOOST_TEST(ask(self, coordinator, std::string("n2"), std::string("n2 n0 2e-4 2e9\n")) == 2);
  BOOST_REQUIRE(reports->rows().size() == 2);
  BOOST_TEST(reports->rows()[1].first == "n2");
  for (auto* p : {&member, &coordinator})
    self->send_exit(*p, caf::exit_reason::user_shutdown);
}

/// Two nodes over a real connection that only the later one opened: the earlier one reaches
/// the later one's probe through the handle it was introduced, without dialling it.
BOOST_AUTO_TEST_CASE(an_introduced_probe_is_reached_over_the_connection_its_node_opened) {
  struct net_config : system_config {
    net_config() {
      load<caf::io::middleman>();
      set("scheduler.max-threads", 2);
      set("logger.console", caf::atom("none"));
      set("middleman.enable-automatic-connections", false);
    }
  };
  net_config cfg_earlier, cfg_later;
  caf::actor_system earlier{cfg_earlier}, later{cfg_later};
  auto earlier_peers = std::make_shared<link_peers>();
  auto earlier_probe = spawn_link_probe(earlier, earlier_peers, nullptr);
  auto later_probe = spawn_link_probe(later, std::make_shared<link_peers>(), nullptr);
  const auto port = earlier.middleman().publish(earlier_probe, 0, "127.0.0.1");
  BOOST_REQUIRE(port);
  auto remote = later.middleman().remote_actor<link_probe_actor>("127.0.0.1", *port);
  BOOST_REQUIRE(remote);
  caf::scoped_actor at_later{later};
  BOOST_TEST(ask(at_later, *remote, peer_atom_v, std::string("n1"),
                 caf::actor_cast<caf::strong_actor_ptr>(later_probe)) == 0);
  const auto introduced = earlier_peers->find("n1");
  BOOST_REQUIRE(introduced);
  caf::scoped_actor at_earlier{earlier};
  BOOST_TEST(ask(at_earlier, *introduced, std::string(64 << 10, 'x')) == (64 << 10));
  earlier.middleman().unpublish(earlier_probe, *port);
  at_earlier->send_exit(earlier_probe, caf::exit_reason::user_shutdown);
  at_later->send_exit(later_probe, caf::exit_reason::user_shutdown);
}

BOOST_AUTO_TEST_SUITE_END()

} // namespace deepcee::actors::test
