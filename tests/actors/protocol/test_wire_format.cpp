// Actor messages that cross a node travel as Cap'n Proto bytes validated on load: a round
// trip through CAF's own serializer gives the values back; refused bytes are counted and
// never reach an actor, also through a real middleman connection; heartbeats name a
// silent peer.
#include "tests/actors/actor_test_util.hpp"
#include "tests/actors/wire_test_util.hpp"

#include "actors/job/heartbeat_actor.hpp"
#include "actors/protocol/errors.hpp"
#include "actors/protocol/type_ids.hpp"
#include "actors/protocol/wire_format.hpp"
#include "messages/codec.hpp"

#include <boost/test/unit_test.hpp>

#include <algorithm>

#include <caf/binary_deserializer.hpp>
#include <caf/binary_serializer.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/exit_reason.hpp>
#include <caf/io/middleman.hpp>
#include <caf/scoped_actor.hpp>
#include <caf/sec.hpp>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

using namespace deepcee;
using namespace deepcee::actors::test;
using namespace std::chrono_literals;

namespace {

messages::stage_report sample_report() {
  messages::stage_report r;
  r.step = 9;
  r.pipeline = 1;
  r.stage = 2;
  r.end_time = 12.5;
  r.loss_sum = 301.25;
  r.grad_sum_squares = 0.5;
  r.ops = {{0, 0, 10.0, 10.5}, {2, 1, 11.0, 12.5}};
  r.dropped = 4;
  return r;
}

messages::stage_snapshot sample_snapshot() {
  messages::stage_snapshot s;
  s.step = 40;
  s.pipeline = 1;
  s.stage = 2;
  s.source = "runs/a/checkpoint_40.safetensors";
  s.params.push_back({"transformer.h.5.mlp.c_fc.weight", {3, 4}, {}, {}, {}});
  std::mt19937 rng(5);
  for (auto* v : {&s.params[0].value, &s.params[0].exp_avg, &s.params[0].exp_avg_sq})
    for (int i = 0; i < 12; ++i) // arbitrary bit patterns that are finite floats
      v->push_back(std::ldexp(static_cast<float>(static_cast<int32_t>(rng())), -40 + i));
  s.params[0].exp_avg[3] = -0.0f;
  s.params.push_back({"transformer.h.5.mlp.c_fc.bias", {4}, {0.5f, -1.5f, 2.0f, 1e-40f}, {}, {}});
  return s;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

} // namespace

BOOST_FIXTURE_TEST_SUITE(wire_format, system_fixture)

BOOST_AUTO_TEST_CASE(every_crossing_struct_round_trips_through_caf_serialization) {
  const messages::step_start order{7, {4, 2}, 0.0, 31.25};
  const auto o = round_trip(sys, order);
  BOOST_TEST(o.step == 7);
  BOOST_TEST(o.start_time == 31.25);
  BOOST_TEST(o.micro_batches == order.micro_batches);

  messages::gradient_share share{7, 1, 0, 2, 4, {1.5f, -2.25f, 3.0e-7f, 0.0f}};
  const auto g = round_trip(sys, share);
  BOOST_TEST(
      (std::tie(g.step, g.pipeline, g.stage, g.first_layer, g.last_layer) ==
       std::tie(share.step, share.pipeline, share.stage, share.first_layer, share.last_layer)));
  BOOST_TEST(g.values == share.values);

  auto report = sample_report();
  report.error = "pipeline 1 stage 2: out of memory";
  const auto r = round_trip(sys, report);
  BOOST_TEST((std::tie(r.step, r.pipeline, r.stage, r.end_time, r.loss_sum, r.grad_sum_squares,
                       r.dropped, r.error) ==
              std::tie(report.step, report.pipeline, report.stage, report.end_time, report.loss_sum,
                       report.grad_sum_squares, report.dropped, report.error)));
  BOOST_REQUIRE(r.ops.size() == 2);
  BOOST_TEST((std::tie(r.ops[1].kind, r.ops[1].micro_batch, r.ops[1].start, r.ops[1].end) ==
              std::tie(report.ops[1].kind, report.ops[1].micro_batch, report.ops[1].start,
                       report.ops[1].end)));

  const auto opt = round_trip(sys, messages::optimize_order{7, 2.5e-3, 0.875});
  BOOST_TEST(
      (std::tie(opt.step, opt.learning_rate, opt.grad_norm) == std::make_tuple(7L, 2.5e-3, 0.875)));

  messages::link_sample link{4, 5, 4096, 1.25, 1.75, 7,  messages::tensor_kind::gradient,
                             3, 1, 2,    9,    1.0,  1.5};
  const auto l = round_trip(sys, link);
  BOOST_TEST((std::tie(l.step, l.kind, l.micro_batch, l.pipeline, l.stage, l.from, l.to, l.link,
                       l.bytes, l.send_time, l.start, l.drained,
                       l.end) == std::tie(link.step, link.kind, link.micro_batch, link.pipeline,
                                          link.stage, link.from, link.to, link.link, link.bytes,
                                          link.send_time, link.start, link.drained, link.end)));

  actors::joining_node join;
  join.join.node = "edge-1";
  join.join.job = "00ab12cd34ef5678";
  join.join.stages = {2, 5};
  join.handles = {nullptr, nullptr}; // handles stay CAF's: checked in the middleman test
  const auto j = round_trip(sys, join);
  BOOST_TEST((j.join == join.join));
  BOOST_TEST(j.handles.size() == 2u);

  const auto h = round_trip(sys, messages::heartbeat{"n1", 42, 17.5});
  BOOST_TEST((std::tie(h.node, h.sequence, h.time) == std::make_tuple("n1", 42ul, 17.5)));

  const auto pr = round_trip(sys, messages::pipe_request{6, 1, 2, 3, 4, 5, 0.125});
  BOOST_TEST((std::tie(pr.step, pr.role, pr.pipeline, pr.stage, pr.micro_batch, pr.part,
                       pr.send_time) == std::make_tuple(6L, 1, 2, 3, 4, 5, 0.125)));
  // "Nothing before step 9" is the lowest finite double: it must cross unchanged.
  const double lowest = std::numeric_limits<double>::lowest();
  const auto hz = round_trip(sys, messages::send_horizon{9, lowest, 1, 2, 0});
  BOOST_TEST((std::tie(hz.step, hz.time, hz.pipeline, hz.stage, hz.role) ==
              std::make_tuple(9L, lowest, 1, 2, 0)));
  const auto a = round_trip(sys, messages::pipe_arrival{6, 0, 1, 2, 3, 0.75});
  BOOST_TEST((std::tie(a.step, a.role, a.pipeline, a.stage, a.micro_batch, a.arrival_time) ==
              std::make_tuple(6L, 0, 1, 2, 3, 0.75)));

  runtime::link_change drop;
  drop.at_s = 2.5;
  drop.a = {runtime::link_endpoint::scope::region, 0};
  drop.b = {runtime::link_endpoint::scope::region, 1};
  drop.bandwidth_scale = 0.1;
  drop.line = 4;
  const messages::script_update update{
      5, runtime::link_timeline({drop}, {{3.0, {}, 2, 3.0, 9}},
                                {{4.0, {}, 1, runtime::node_action::stop, 12}})};
  const auto u = round_trip(sys, update);
  BOOST_TEST((u == update));
  BOOST_TEST(*u.script.changes()[0].bandwidth_scale == 0.1);
}

BOOST_AUTO_TEST_CASE(a_stage_snapshot_round_trips_bit_for_bit) {
  const auto snapshot = sample_snapshot();
  auto copy = snapshot;
  const auto buf = serialize(sys, copy);
  // What crosses is one Cap'n Proto message: the CAF bytes are its byte vector.
  BOOST_TEST((buf == serialized_bytes(sys, messages::encode(snapshot))));
  messages::stage_snapshot back;
  BOOST_REQUIRE(deserialize(sys, buf, back));
  BOOST_TEST((std::tie(back.step, back.pipeline, back.stage, back.source) ==
              std::tie(snapshot.step, snapshot.pipeline, snapshot.stage, snapshot.source)));
  BOOST_REQUIRE(back.params.size() == snapshot.params.size());
  for (size_t i = 0; i < back.params.size(); ++i) {
    const auto &a = back.params[i], &b = snapshot.params[i];
    BOOST_TEST((std::tie(a.name, a.shape) == std::tie(b.name, b.shape)));
    BOOST_TEST(same_bits(a.value, b.value));
    BOOST_TEST(same_bits(a.exp_avg, b.exp_avg));
    BOOST_TEST(same_bits(a.exp_avg_sq, b.exp_avg_sq));
  }
}

BOOST_AUTO_TEST_CASE(invalid_or_corrupted_snapshots_are_refused_and_counted) {
  const auto before = actors::dropped_wire_messages(sys);
  auto refused = [&](messages::stage_snapshot bad) {
    auto out = sample_snapshot();
    out.step = 7;
    const bool r = !deserialize(sys, serialize(sys, bad), out);
    BOOST_TEST(out.step == 7); // a refused message leaves the value alone
    return r;
  };
  auto s = sample_snapshot();
  s.params[1].value.pop_back(); // 3 values for a shape of 4
  BOOST_TEST(refused(s));
  s = sample_snapshot();
  s.params[0].shape = {3, 0};
  BOOST_TEST(refused(s));
  s = sample_snapshot();
  s.params[1].name.clear();
  BOOST_TEST(refused(s));
  s = sample_snapshot();
  s.params[0].exp_avg_sq.clear(); // one moment without the other
  BOOST_TEST(refused(s));
  s = sample_snapshot();
  s.step = -3;
  BOOST_TEST(refused(s));
  BOOST_TEST(actors::dropped_wire_messages(sys) - before == 5);

  // Flipped bits and truncations: refused and counted, or a valid snapshot; never a crash.
  BOOST_TEST(fuzz<messages::stage_snapshot>(
                 sys, sample_snapshot(), 17, 1000,
                 [](const messages::stage_snapshot& out, const std::vector<uint8_t>& bytes) {
                   return std::all_of(out.params.begin(), out.params.end(), [&](const auto& p) {
                     return !p.name.empty() && p.value.size() * 4 <= bytes.size();
                   });
                 }) > 0);
}

BOOST_AUTO_TEST_CASE(a_snapshot_too_large_for_one_message_is_not_sent) {
  auto s = sample_snapshot();
  s.params[1].shape = {int64_t{1} << 27}; // 512 MiB of floats: one byte above a Data field
  s.params[1].value.resize(size_t{1} << 27);
  const auto why = actors::too_large_to_send(s);
  BOOST_TEST(why.find("parameter 'transformer.h.5.mlp.c_fc.bias' has 536870912 bytes") !=
                 std::string::npos,
             why);
  BOOST_TEST(actors::too_large_to_send(sample_snapshot()).empty());
  std::vector<char> buf;
  caf::binary_serializer sink{sys, buf};
  BOOST_TEST(static_cast<bool>(sink(s))); // CAF's serializer gets an error, nothing throws
}

BOOST_AUTO_TEST_CASE(malformed_pipe_messages_are_refused) {
  const auto before = actors::dropped_wire_messages(sys);
  auto refused = [&](auto bad, auto& out) { return !deserialize(sys, serialize(sys, bad), out); };
  messages::pipe_request out{1, 0, 0, 1, 0, 0, 0.5};
  BOOST_TEST(refused(messages::pipe_request{1, 2, 0, 1, 0, 0, 0.5}, out));  // unknown role
  BOOST_TEST(refused(messages::pipe_request{1, 0, 0, 1, -1, 0, 0.5}, out)); // negative micro
  BOOST_TEST(refused(messages::pipe_request{1, 0, 0, 1, 0, 0, -0.5}, out)); // negative time
  messages::send_horizon horizon{2, 1.0, 0, 0, 0};
  BOOST_TEST(refused(messages::send_horizon{2, std::nan(""), 0, 0, 0}, horizon));
  messages::pipe_arrival arrival{2, 0, 0, 0, 0, 1.0};
  BOOST_TEST(refused(messages::pipe_arrival{-2, 0, 0, 0, 0, 1.0}, arrival));
  BOOST_TEST(actors::dropped_wire_messages(sys) - before == 5);
  BOOST_TEST(out.send_time == 0.5);
  BOOST_TEST(horizon.time == 1.0);
  BOOST_TEST(arrival.step == 2);
}

BOOST_AUTO_TEST_CASE(refused_bytes_are_counted_and_leave_the_value_alone) {
  const auto before = actors::dropped_wire_messages(sys);
  messages::step_start out{3, {1}, 0.0, 1.0};
  // Not a message at all; a message of another kind; a valid encoding of invalid values.
  BOOST_TEST(!deserialize(sys, serialized_bytes(sys, {1, 2, 3, 4, 5, 6, 7, 8}), out));
  messages::heartbeat beat{"n0", 1, 0.5};
  BOOST_TEST(!deserialize(sys, serialize(sys, beat), out));
  messages::step_start negative{-1, {1}, 0.0, 0.0};
  BOOST_TEST(!deserialize(sys, serialize(sys, negative), out));
  messages::step_start no_counts{4, {}, 0.0, std::nan("")};
  BOOST_TEST(!deserialize(sys, serialize(sys, no_counts), out));
  BOOST_TEST(actors::dropped_wire_messages(sys) - before == 4);
  BOOST_TEST(out.step == 3);
  BOOST_TEST(out.micro_batches == std::vector<int32_t>{1});
  // A gradient share must be one: an activation tensor is refused as a share.
  messages::tensor_header h;
  h.shape = {2};
  messages::gradient_share share;
  const std::vector<float> two{1.0f, 2.0f};
  BOOST_TEST(!deserialize(sys, serialized_bytes(sys, messages::encode_tensor(h, two)), share));
  auto report = sample_report();
  report.ops[0].end = report.ops[0].start - 1;
  BOOST_TEST(!deserialize(sys, serialize(sys, report), report));
  BOOST_TEST(actors::dropped_wire_messages(sys) - before == 6);
}

BOOST_AUTO_TEST_CASE(corrupted_bytes_never_crash_the_loader) {
  auto report = sample_report();
  const auto good = messages::encode(report);
  std::mt19937 rng(11);
  int refused = 0;
  const auto before = actors::dropped_wire_messages(sys);
  for (int i = 0; i < 2000; ++i) {
    auto bytes = good;
    const int flips = 1 + static_cast<int>(rng() % 4);
    for (int f = 0; f < flips; ++f)
      bytes[rng() % bytes.size()] ^= static_cast<uint8_t>(1u << (rng() % 8));
    if (i % 7 == 0)
      bytes.resize(rng() % bytes.size());
    messages::stage_report out;
    if (!deserialize(sys, serialized_bytes(sys, bytes), out))
      ++refused;
    else
      BOOST_TEST(out.ops.size() <= bytes.size() / 8); // accepted: a valid message
  }
  BOOST_TEST(refused > 0);
  BOOST_TEST(actors::dropped_wire_messages(sys) - before == refused);
}

BOOST_AUTO_TEST_CASE(the_middleman_drops_a_refused_message_and_the_actor_lives_on) {
  struct net_config : actors::system_config {
    net_config() {
      load<caf::io::middleman>();
      set("scheduler.max-threads", 2);
      set("logger.console", caf::atom("none"));
    }
  };
  net_config cfg_a, cfg_b;
  caf::actor_system a{cfg_a}, b{cfg_b};
  caf::scoped_actor sink{a};
  auto sink_handle = caf::actor_cast<caf::actor>(sink);
  auto receiver = a.spawn([sink_handle](caf::event_based_actor* self) -> caf::behavior {
    self->set_default_handler(actors::drop_unexpected);
    return {[sink_handle](messages::step_start& o) { caf::anon_send(sink_handle, o.step); }};
  });
  auto port = a.middleman().publish(receiver, 0, "127.0.0.1");
  BOOST_REQUIRE(port);
  auto remote = b.middleman().remote_actor("127.0.0.1", *port);
  BOOST_REQUIRE(remote);
  const auto before = actors::dropped_wire_messages(a);
  // Sent by an actor: the refused message must not come back to it as an error (that error
  // would kill a sending stage).
  caf::scoped_actor sender{b};
  sender->send(*remote, messages::step_start{-5, {1}, 0.0, 0.0}); // encoded, refused on load
  sender->send(*remote, messages::step_start{6, {1}, 0.0, 2.0});
  int64_t got = -1;
  sink->receive([&](int64_t step) { got = step; }, caf::after(5s) >> [] {});
  BOOST_TEST(got == 6);
  bool answered = false;
  sender->receive([&](caf::error&) { answered = true; }, caf::after(300ms) >> [] {});
  BOOST_TEST(!answered);
  BOOST_TEST(actors::dropped_wire_messages(a) - before == 1);
  caf::anon_send_exit(receiver, caf::exit_reason::user_shutdown);
  caf::anon_send_exit(*remote, caf::exit_reason::user_shutdown);
}

BOOST_AUTO_TEST_CASE(a_failure_crosses_as_its_code_and_renders_as_its_line) {
  using messages::error_code;
  for (const auto code : {error_code::internal, error_code::malformed_message,
                          error_code::bad_input, error_code::peer_down, error_code::timeout}) {
    const auto e = actors::make_error(code, "pipeline 1 stage 2: out of memory");
    BOOST_TEST(static_cast<bool>(e)); // internal is 0 in the schema, yet an error
    const auto back = round_trip(sys, e);
    BOOST_TEST((actors::code_of(back) == code));
    BOOST_TEST(sys.render(back) == "pipeline 1 stage 2: out of memory");
  }
  BOOST_TEST(!actors::code_of(caf::make_error(caf::sec::request_timeout)));
  // A stage's failure travels in its report as the code and the line.
  auto report = sample_report();
  report.error = "pipeline 1 stage 2: out of memory";
  report.code = error_code::bad_input;
  BOOST_TEST((round_trip(sys, report) == report));
}

BOOST_AUTO_TEST_CASE(a_silent_peer_is_named_within_the_timeout) {
  caf::scoped_actor self{sys};
  auto notify = caf::actor_cast<caf::actor>(self);
  auto boss = actors::spawn_heartbeat(sys, "boss", 50ms, 400ms, {}, notify);
  auto member = actors::spawn_heartbeat(sys, "member", 50ms, 400ms, {"boss"}, notify);
  self->send(boss, actors::peer_atom_v, std::string("member"),
             caf::actor_cast<caf::strong_actor_ptr>(member));
  std::string who, why;
  const auto lost = [&](actors::lost_atom, std::string& n, std::string& w) {
    who = n;
    why = w;
  };
  self->receive(
      lost, caf::after(900ms) >> [] {});
  BOOST_TEST(why.empty()); // both beat: nobody is silent
  self->send_exit(boss, caf::exit_reason::user_shutdown);
  const auto t0 = std::chrono::steady_clock::now();
  self->receive(
      lost, caf::after(3s) >> [] {});
  BOOST_TEST(who == "boss");
  BOOST_TEST(why == "no heartbeat for 0.4 s");
  BOOST_TEST((std::chrono::steady_clock::now() - t0 < 1s));
  self->send_exit(member, caf::exit_reason::user_shutdown);
}

// A peer declared lost that beats again (stopped, then resumed) is told it is out of the
// job, and its node hears it from its own heartbeat.
BOOST_AUTO_TEST_CASE(a_lost_peer_that_comes_back_is_told_it_is_out) {
  caf::scoped_actor self{sys};
  caf::scoped_actor member_side{sys};
  auto boss = actors::spawn_heartbeat(sys, "boss", 50ms, 300ms, {"member"},
                                      caf::actor_cast<caf::actor>(self));
  std::string who, why;
  self->receive([&](actors::lost_atom, std::string& n, std::string& w) { who = n, why = w; },
                caf::after(2s) >> [] {});
  BOOST_TEST(who == "member"); // it never beat
  auto member = actors::spawn_heartbeat(sys, "member", 50ms, 300ms, {"boss"},
                                        caf::actor_cast<caf::actor>(member_side));
  self->send(member, actors::peer_atom_v, std::string("boss"),
             caf::actor_cast<caf::strong_actor_ptr>(boss));
  who.clear();
  member_side->receive([&](actors::lost_atom, std::string& n, std::string& w) { who = n, why = w; },
                       caf::after(2s) >> [] {});
  BOOST_TEST(who == "member");
  BOOST_TEST(why.find("the job went on without it: it is out of the job") != std::string::npos);
  self->send_exit(boss, caf::exit_reason::user_shutdown);
  self->send_exit(member, caf::exit_reason::user_shutdown);
}

BOOST_AUTO_TEST_SUITE_END()
