// Shaped wall time's delivery rules: who waits for a modelled transfer, how long a receiver
// may hold a message, and the order held messages leave in.
#include "runtime/base/model_spec.hpp"
#include "runtime/cluster/profile.hpp"
#include "runtime/step/shaped_delivery.hpp"
#include "tests/support/clusters.hpp"
#include "tests/support/plans.hpp"

#include <boost/test/unit_test.hpp>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

using namespace deepcee::runtime;

using deepcee::test::one_device_stage;

namespace {

link_timeline::piece piece(double latency_s, double bandwidth_Bps, double jitter = 0) {
  link_timeline::piece p;
  p.params = {latency_s, bandwidth_Bps};
  p.jitter = jitter;
  return p;
}

} // namespace

BOOST_AUTO_TEST_SUITE(shaped_delivery)

BOOST_AUTO_TEST_CASE(one_host_boot_holds_at_the_receiver_anything_else_waits_at_the_sender) {
  const std::string a = "2f9c3e1a-7b45-4d8e-9a61-0c5d2e7f8b13";
  const std::string b = "8d1e6f20-3c9a-4b7e-a512-6f0e9d3c2b41";
  BOOST_TEST((shaping_side_of(a, a) == shaping_side::hold_at_receiver));
  BOOST_TEST((shaping_side_of(a, b) == shaping_side::wait_at_sender));
  BOOST_TEST((shaping_side_of(b, a) == shaping_side::wait_at_sender));
  // Unknown boots (no /proc) never count as one clock, not even two unknown ones.
  BOOST_TEST((shaping_side_of("", "") == shaping_side::wait_at_sender));
  BOOST_TEST((shaping_side_of(a, "") == shaping_side::wait_at_sender));
  // Two actors of one process read one clock, whatever the boot ids say.
  BOOST_TEST((shaping_side_of(true, "", "") == shaping_side::hold_at_receiver));
  BOOST_TEST((shaping_side_of(false, a, b) == shaping_side::wait_at_sender));
  BOOST_TEST((shaping_side_of(false, a, a) == shaping_side::hold_at_receiver));
}

BOOST_AUTO_TEST_CASE(the_boot_id_is_the_files_first_line_and_empty_when_there_is_none) {
  const auto path = std::filesystem::temp_directory_path() / "deepcee-test-boot-id";
  std::ofstream(path) << "0c5d2e7f-8b13-4d8e-9a61-2f9c3e1a7b45\n";
  BOOST_TEST(read_boot_id(path.string()) == "0c5d2e7f-8b13-4d8e-9a61-2f9c3e1a7b45");
  std::filesystem::remove(path);
  BOOST_TEST(read_boot_id(path.string()).empty());
  // This host's: a Linux kernel gives one (the tests run on Linux).
  BOOST_TEST(read_boot_id().size() == 36u);
}

BOOST_AUTO_TEST_CASE(a_message_is_held_until_its_arrival_never_before_now_nor_past_the_limit) {
  const int64_t now = 5'000'000'000;
  BOOST_TEST(release_at_ns(now, 0, 2.0) == now);               // not held
  BOOST_TEST(release_at_ns(now, now - 3'000'000, 2.0) == now); // came late: at once
  BOOST_TEST(release_at_ns(now, now + 150'000'000, 2.0) == now + 150'000'000);
  // A bad clock or a hostile peer: cut to the limit.
  BOOST_TEST(release_at_ns(now, INT64_MAX, 2.0) == now + 2'000'000'000);
  BOOST_TEST(release_at_ns(now, now + 2'000'000'001, 2.0) == now + 2'000'000'000);
}

BOOST_AUTO_TEST_CASE(held_messages_leave_in_order_on_each_line_and_lines_do_not_wait) {
  hold_lines<std::string> held;
  held.push(1, 300, "a1");
  held.push(1, 100, "a2"); // earlier modelled arrival, received later: waits for a1
  held.push(2, 200, "b1");
  BOOST_TEST(held.held() == 3u);
  BOOST_TEST((held.take_due(150).empty()));
  BOOST_TEST((held.take_due(250) == std::vector<std::string>{"b1"}));
  BOOST_TEST((held.take_due(300) == std::vector<std::string>{"a1", "a2"}));
  BOOST_TEST(held.held() == 0u);
}

BOOST_AUTO_TEST_CASE(a_wake_up_is_asked_for_once_per_earliest_release) {
  hold_lines<int> held;
  BOOST_TEST(!held.wake_at());
  held.push(0, 500, 1);
  BOOST_TEST(held.wake_at().value_or(-1) == 500);
  BOOST_TEST(!held.wake_at()); // one is coming by then
  held.push(1, 800, 2);
  BOOST_TEST(!held.wake_at()); // the one at 500 comes first
  held.push(2, 300, 3);
  BOOST_TEST(held.wake_at().value_or(-1) == 300);
  held.woken(); // it fired, maybe early: the next call asks again
  BOOST_TEST((held.take_due(300) == std::vector<int>{3}));
  BOOST_TEST(held.wake_at().value_or(-1) == 500);
}

BOOST_AUTO_TEST_CASE(a_transfer_bound_takes_the_worst_latency_and_bandwidth_of_its_history) {
  transfer_part part;
  BOOST_TEST(transfer_bound_s(part, 1e6) == 0.0); // no link: both ends on one node
  part.history = {piece(0.002, 12.5e6), piece(0.010, 25e6, 0.2), piece(0.001, 0)};
  // 10 ms of latency, and 12.5 MB/s is below 25 MB/s at 80%; the link down is left out.
  BOOST_TEST(transfer_bound_s(part, 1.25e6) == 0.010 + 0.1, boost::test_tools::tolerance(1e-12));
}

BOOST_AUTO_TEST_CASE(the_hold_limit_is_twice_a_step_of_lone_transfers_over_every_micro_batch) {
  // Two pipelines of two stages across the slow LAN (2 Mbps, 5 ms): stage 0 on n0, stage 1
  // on n1, layers cut alike so each stage exchanges its gradients with the other pipeline's.
  plan p;
  p.strategy = "test";
  p.model = model_config{2, 32, 2, 16, 256};
  p.micro_batch_size = 2;
  for (int q = 0; q < 2; ++q) {
    pipeline_plan pp;
    pp.micro_batches = 3 - q;
    pp.schedule = schedule_kind::one_f_one_b;
    pp.stages = {one_device_stage(q, 0, 2), one_device_stage(3 + q, 2, 4)};
    p.pipelines.push_back(pp);
  }
  const auto spec = make_model_spec(p.model);
  const profile_table profile(spec);
  const virtual_cluster vc(deepcee::test::slow_lan_two_nodes_cluster(), spec, profile, p);
  const double bandwidth = 2e6 / 8, latency = 0.005;
  const double activation = static_cast<double>(p.micro_batch_size) * 16 * 32 * 4;
  double step = 0;
  for (int q = 0; q < 2; ++q)
    for (int s = 0; s < 2; ++s) {
      // Each boundary's activation (stage 0) and gradient (stage 1) crosses the LAN, for
      // all 5 micro-batches of the job (3 + 2: a rebalance may move them).
      step += 5 * (latency + activation / bandwidth);
      double gradients = 0;
      for (int l = 2 * s; l < 2 * s + 2; ++l)
        gradients += static_cast<double>(spec.layers[size_t(l)].grad_bytes);
      // One share to the other pipeline's stage of the same layers, on its node's link
      // (devices 0 and 1, 3 and 4: within a node, 16 GB/s and 10 us).
      step += 10e-6 + gradients / 16e9;
    }
  BOOST_TEST(hold_limit_s(vc, p) == 2 * step, boost::test_tools::tolerance(1e-9));
  // Finite and short against what a peer could ask for.
  BOOST_TEST(hold_limit_s(vc, p) < 10.0);
}

BOOST_AUTO_TEST_CASE(a_wake_up_timer_never_fires_before_the_release) {
  BOOST_TEST(wake_timer_us(0, 0) == 0);
  BOOST_TEST(wake_timer_us(0, 1) == 1);
  BOOST_TEST(wake_timer_us(5'000, 6'000) == 1);
  BOOST_TEST(wake_timer_us(5'000, 6'001) == 2);
  BOOST_TEST(wake_timer_us(1'000'000'000, 1'002'500'000) == 2'500);
}

BOOST_AUTO_TEST_SUITE_END()
