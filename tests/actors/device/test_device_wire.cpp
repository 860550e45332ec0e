// What a stage and its devices on other nodes say to each other crosses as Cap'n Proto bytes
// validated on load: a round trip through CAF's own serializer gives the values back bit for
// bit; refused bytes are counted and leave the value alone; a node's join carries the slots
// and handles of its devices that serve other nodes' stages.
#include "tests/actors/actor_test_util.hpp"
#include "tests/actors/wire_test_util.hpp"

#include "actors/protocol/type_ids.hpp"
#include "actors/protocol/wire_format.hpp"

#include <boost/test/unit_test.hpp>

#include <caf/event_based_actor.hpp>
#include <caf/exit_reason.hpp>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

using namespace deepcee;
using namespace deepcee::actors::test;

namespace {

/// Finite values of every magnitude, with -0 and a denormal among them.
std::vector<float> awkward_values(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] = std::ldexp(static_cast<float>(static_cast<int32_t>(rng())), -60 + static_cast<int>(i));
  v[0] = -0.0f;
  v[1] = std::numeric_limits<float>::denorm_min();
  return v;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

/// The last stage's F on 2 samples of T = 2, C = 3: tokens, targets and activations in.
messages::device_rows sample_rows() {
  return {0, 4, 6, 2, 1.0f / 48, {3, 9, 0, 250}, {9, 0, 250, 17}, awkward_values(12, 1), 12};
}

/// Loads the CAF bytes of `bad` into `out`; true when they were refused.
template <class T>
bool refused(caf::actor_system& sys, const T& bad, T& out) {
  return !deserialize(sys, serialize(sys, bad), out);
}

} // namespace

BOOST_FIXTURE_TEST_SUITE(device_wire, system_fixture)

BOOST_AUTO_TEST_CASE(device_messages_round_trip_through_caf_serialization_bit_for_bit) {
  const auto rows = sample_rows();
  const auto buf = serialize(sys, rows);
  // What crosses is one Cap'n Proto message: the CAF bytes are its byte vector.
  BOOST_TEST((buf == serialized_bytes(sys, messages::encode(rows))));
  messages::device_rows r;
  BOOST_REQUIRE(deserialize(sys, buf, r));
  BOOST_TEST((std::tie(r.kind, r.micro_batch, r.first_sample, r.samples, r.loss_scale, r.tokens,
                       r.targets, r.output_values) ==
              std::tie(rows.kind, rows.micro_batch, rows.first_sample, rows.samples,
                       rows.loss_scale, rows.tokens, rows.targets, rows.output_values)));
  BOOST_TEST(same_bits(r.input, rows.input));

  const messages::device_output output{37.8125, awkward_values(12, 2)};
  const auto o = round_trip(sys, output);
  BOOST_TEST(o.loss == output.loss);
  BOOST_TEST(same_bits(o.output, output.output));

  const messages::ring_chunk chunk{5, 3, awkward_values(9, 3)};
  const auto c = round_trip(sys, chunk);
  BOOST_TEST((std::tie(c.step, c.round) == std::tie(chunk.step, chunk.round)));
  BOOST_TEST(same_bits(c.values, chunk.values));

  const messages::gradient_values grads{5, awkward_values(31, 4), 62};
  const auto g = round_trip(sys, grads);
  BOOST_TEST(g.step == grads.step);
  BOOST_TEST(g.offset == grads.offset);
  BOOST_TEST(same_bits(g.values, grads.values));

  // Empty where a message may be: a middle stage's W (nothing in, nothing back), a reduce's
  // answer on a rank other than 0.
  const auto w = round_trip(sys, messages::device_rows{2, 1, 0, 1, 0.0f, {}, {}, {}, 0});
  BOOST_TEST((w.kind == 2 && w.samples == 1 && w.tokens.empty() && w.input.empty()));
  BOOST_TEST(round_trip(sys, messages::device_output{}).output.empty());
  BOOST_TEST(round_trip(sys, messages::gradient_values{3, {}}).values.empty());
  // A diverged loss is the run's news, not a malformed message.
  BOOST_TEST(std::isnan(round_trip(sys, messages::device_output{std::nan(""), {1.0f}}).loss));
}

BOOST_AUTO_TEST_CASE(invalid_device_messages_are_refused_counted_and_leave_the_value_alone) {
  const auto before = actors::dropped_wire_messages(sys);
  auto out = sample_rows();
  out.micro_batch = 8;
  auto bad = sample_rows();
  bad.kind = 3; // no op kind
  BOOST_TEST(refused(sys, bad, out));
  bad = sample_rows();
  bad.samples = 0;
  BOOST_TEST(refused(sys, bad, out));
  bad = sample_rows();
  bad.tokens.pop_back(); // 3 tokens for 2 samples
  BOOST_TEST(refused(sys, bad, out));
  bad = sample_rows();
  bad.output_values = 13;
  BOOST_TEST(refused(sys, bad, out));
  bad = sample_rows();
  bad.loss_scale = std::numeric_limits<float>::infinity();
  BOOST_TEST(refused(sys, bad, out));
  BOOST_TEST(out.micro_batch == 8);
  BOOST_TEST(out.input.size() == 12u);

  messages::ring_chunk chunk{1, 1, {2.0f}};
  BOOST_TEST(refused(sys, messages::ring_chunk{1, -1, {1.0f}}, chunk));
  BOOST_TEST(refused(sys, messages::ring_chunk{-1, 0, {1.0f}}, chunk));
  BOOST_TEST((chunk.round == 1 && chunk.values == std::vector<float>{2.0f}));
  messages::gradient_values grads{1, {2.0f}};
  BOOST_TEST(refused(sys, messages::gradient_values{-4, {1.0f}}, grads));
  BOOST_TEST(refused(sys, messages::gradient_values{4, {1.0f}, -1}, grads));
  BOOST_TEST(grads.step == 1);
  // Another kind's bytes: a ring chunk is no gradient_values, nor rows a device_output.
  BOOST_TEST(!deserialize(sys, serialized_bytes(sys, messages::encode(chunk)), grads));
  messages::device_output output{1.5, {}};
  BOOST_TEST(!deserialize(sys, serialize(sys, sample_rows()), output));
  BOOST_TEST(output.loss == 1.5);
  BOOST_TEST(actors::dropped_wire_messages(sys) - before == 11);
}

BOOST_AUTO_TEST_CASE(corrupted_device_messages_are_refused_and_counted_never_crash) {
  const auto rows_valid = [](const messages::device_rows& r, auto&) {
    return r.kind >= 0 && r.kind <= 2 && r.samples >= 1 && r.micro_batch >= 0 &&
           r.first_sample >= 0 && std::isfinite(r.loss_scale) && r.tokens.size() % r.samples == 0 &&
           r.targets.size() % r.samples == 0 && r.input.size() % r.samples == 0 &&
           r.output_values >= 0 && r.output_values % r.samples == 0;
  };
  BOOST_TEST(fuzz<messages::device_rows>(sys, sample_rows(), 21, 600, rows_valid) > 0);
  BOOST_TEST(fuzz<messages::device_output>(sys, {2.5, awkward_values(12, 5)}, 22, 300,
                                           [](auto&, auto&) { return true; }) > 0);
  BOOST_TEST(
      fuzz<messages::ring_chunk>(sys, {4, 1, awkward_values(10, 6)}, 23, 300,
                                 [](auto& c, auto&) { return c.step >= 0 && c.round >= 0; }) > 0);
  BOOST_TEST(fuzz<messages::gradient_values>(
                 sys, {4, awkward_values(10, 7), 3}, 24, 300,
                 [](auto& g, auto&) { return g.step >= 0 && g.offset >= 0; }) > 0);
}

BOOST_AUTO_TEST_CASE(a_node_join_carries_its_device_slots_and_handles) {
  const auto idle = [](caf::event_based_actor*) -> caf::behavior { return {[](int32_t) {}}; };
  auto d0 = sys.spawn(idle), d1 = sys.spawn(idle);
  actors::joining_node join;
  join.join.node = "e0";
  join.join.job = "00ab12cd34ef5678";
  join.join.stages = {2};
  join.handles = {nullptr};
  join.join.devices = {5, 0};
  join.device_handles = {caf::actor_cast<caf::strong_actor_ptr>(d0),
                         caf::actor_cast<caf::strong_actor_ptr>(d1)};
  const auto j = round_trip(sys, join);
  BOOST_TEST((j.join == join.join));
  BOOST_REQUIRE(j.device_handles.size() == 2u);
  BOOST_TEST((j.device_handles[0] == join.device_handles[0]));
  BOOST_TEST((j.device_handles[1] == join.device_handles[1]));
  BOOST_TEST(j.handles.size() == 1u);

  const auto before = actors::dropped_wire_messages(sys);
  auto bad = join;
  bad.join.devices = {5, -1};
  actors::joining_node out;
  BOOST_TEST(refused(sys, bad, out));
  BOOST_TEST(out.join.devices.empty());
  BOOST_TEST(actors::dropped_wire_messages(sys) - before == 1);
  caf::anon_send_exit(d0, caf::exit_reason::user_shutdown);
  caf::anon_send_exit(d1, caf::exit_reason::user_shutdown);
}

BOOST_AUTO_TEST_SUITE_END()
