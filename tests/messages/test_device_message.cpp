// The messages between a stage and its devices on other nodes: their Float32 values cross bit
// for bit, empty fields where a message may have none, and every rule of their decoders
// refuses what breaks it, naming the field.
#include "samples.hpp"

#include <boost/test/unit_test.hpp>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <stdexcept>

using namespace deepcee::messages;
using namespace deepcee::messages::testing;

namespace {

constexpr float nan_f = std::numeric_limits<float>::quiet_NaN();
constexpr float inf_f = std::numeric_limits<float>::infinity();

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

/// Values whose bits a conversion on the way would change: -0, denormals, the extremes.
std::vector<float> awkward_values() {
  auto v = random_values(12, 31, 1e-30f);
  v[0] = -0.0f;
  v[1] = std::numeric_limits<float>::denorm_min();
  v[2] = std::numeric_limits<float>::max();
  v[3] = -std::numeric_limits<float>::lowest() / 3;
  return v;
}

template <class R>
void check_refused(const R& r, const std::string& mentions) {
  BOOST_REQUIRE(!r.ok());
  BOOST_TEST(r.error().what.find(mentions) != std::string::npos,
             "'" << r.error().what << "' should mention '" << mentions << "'");
}

/// The encoded bytes with the Data field of `from` bytes cut to `to` bytes: its list pointer
/// (Cap'n Proto: the upper 32 bits are count << 3 | 2, byte elements) gets the new count, so
/// the message stays well formed and only the field's size breaks the rules.
std::vector<uint8_t> with_data_size(std::vector<uint8_t> bytes, uint32_t from, uint32_t to) {
  const uint32_t want = from << 3 | 2;
  size_t found = 0, at = 0;
  for (size_t i = 8; i + 8 <= bytes.size(); i += 8) { // word 0 is the segment table
    uint32_t low, high;
    std::memcpy(&low, bytes.data() + i, 4);
    std::memcpy(&high, bytes.data() + i + 4, 4);
    if ((low & 3) == 1 && high == want) {
      ++found;
      at = i;
    }
  }
  BOOST_REQUIRE_MESSAGE(found == 1, found << " list pointers of " << from << " bytes");
  const uint32_t patched = to << 3 | 2;
  std::memcpy(bytes.data() + at + 4, &patched, 4);
  return bytes;
}

} // namespace

BOOST_AUTO_TEST_SUITE(device_message)

BOOST_AUTO_TEST_CASE(every_device_message_round_trips_bit_for_bit) {
  auto rows = sample_device_rows();
  rows.input = awkward_values();
  rows.input.resize(24, 0.5f);
  const auto r = decode_device_rows(encode(rows));
  BOOST_REQUIRE_MESSAGE(r.ok(), why(r));
  BOOST_TEST((*r == rows));
  BOOST_TEST(same_bits(r->input, rows.input));
  BOOST_TEST(std::signbit(r->input[0])); // -0 stays -0 (== alone would not tell)
  BOOST_TEST(!r->recompute);
  rows.recompute = true; // a recomputing stage's F on another node
  const auto rr = decode_device_rows(encode(rows));
  BOOST_REQUIRE_MESSAGE(rr.ok(), why(rr));
  BOOST_TEST(rr->recompute);
  BOOST_TEST((*rr == rows));

  const device_output output{-1.0e-3, awkward_values(), 6.25e-3};
  const auto o = decode_device_output(encode(output));
  BOOST_REQUIRE_MESSAGE(o.ok(), why(o));
  BOOST_TEST(o->loss == output.loss);
  BOOST_TEST(same_bits(o->output, output.output));
  BOOST_TEST(o->compute_s == output.compute_s);

  const ring_chunk chunk{7, 2, awkward_values()};
  const auto c = decode_ring_chunk(encode(chunk));
  BOOST_REQUIRE_MESSAGE(c.ok(), why(c));
  BOOST_TEST((std::tie(c->step, c->round) == std::tie(chunk.step, chunk.round)));
  BOOST_TEST(same_bits(c->values, chunk.values));

  const gradient_values grads{9, awkward_values(), 123456789012};
  const auto g = decode_gradient_values(encode(grads));
  BOOST_REQUIRE_MESSAGE(g.ok(), why(g));
  BOOST_TEST(g->step == grads.step);
  BOOST_TEST(g->offset == grads.offset);
  BOOST_TEST(same_bits(g->values, grads.values));

  // The values travel as their bytes: a message is them and a small fixed envelope.
  BOOST_TEST(encode(gradient_values{1, random_values(1000, 5)}).size() <= 4000u + 64u);
  BOOST_TEST(encode(rows).size() <= (12 + 24) * 4u + 96u);

  // Odd sizes: a Data field of 4 * odd bytes ends mid-word.
  for (size_t n : {1, 3, 1001}) {
    const gradient_values odd{1, random_values(n, static_cast<uint32_t>(n))};
    const auto back = decode_gradient_values(encode(odd));
    BOOST_REQUIRE(back.ok());
    BOOST_TEST(same_bits(back->values, odd.values));
  }
}

BOOST_AUTO_TEST_CASE(fields_a_message_may_leave_empty_round_trip_empty) {
  // A middle stage's B: no tokens, no targets; a W: no input and nothing back.
  device_rows rows{2, 0, 0, 1, 0.0f, {}, {}, {}, 0};
  auto back = decode_device_rows(encode(rows));
  BOOST_REQUIRE_MESSAGE(back.ok(), why(back));
  BOOST_TEST((*back == rows));
  rows = sample_device_rows();
  rows.targets.clear();
  rows.input.clear();
  back = decode_device_rows(encode(rows));
  BOOST_REQUIRE_MESSAGE(back.ok(), why(back));
  BOOST_TEST((*back == rows));

  const device_output nothing{0.0, {}};
  BOOST_TEST((decode_device_output(encode(nothing)).value() == nothing));
  const ring_chunk no_chunk{0, 0, {}};
  BOOST_TEST((decode_ring_chunk(encode(no_chunk)).value() == no_chunk));
  const gradient_values not_rank0{3, {}}; // a reduce's answer on the ranks other than 0
  BOOST_TEST((decode_gradient_values(encode(not_rank0)).value() == not_rank0));
}

BOOST_AUTO_TEST_CASE(a_diverged_loss_crosses_as_data) {
  for (double loss : {std::nan(""), std::numeric_limits<double>::infinity()}) {
    const auto back = decode_device_output(encode(device_output{loss, {1.0f}}));
    BOOST_REQUIRE_MESSAGE(back.ok(), why(back));
    BOOST_TEST(std::isnan(back->loss) == std::isnan(loss));
    BOOST_TEST(std::isinf(back->loss) == std::isinf(loss));
  }
}

BOOST_AUTO_TEST_CASE(a_compute_time_that_is_no_time_is_refused) {
  // The stage's side holds the answer by it (shaped wall time): it must be a duration.
  for (double t : {-1e-3, std::nan(""), std::numeric_limits<double>::infinity()}) {
    const auto back = decode_device_output(encode(device_output{0.5, {1.0f}, t}));
    BOOST_REQUIRE(!back.ok());
    BOOST_TEST(why(back).find("compute_s is not a finite non-negative time") != std::string::npos,
               why(back));
  }
}

BOOST_AUTO_TEST_CASE(each_broken_device_rows_rule_is_refused_naming_the_field) {
  const std::vector<std::pair<std::string, std::function<void(device_rows&)>>> cases{
      {"kind is no op kind (3)", [](auto& m) { m.kind = 3; }},
      {"kind is no op kind (-1)", [](auto& m) { m.kind = -1; }},
      {"micro_batch is negative", [](auto& m) { m.micro_batch = -1; }},
      {"first_sample is negative", [](auto& m) { m.first_sample = -4; }},
      {"samples is not positive (0)", [](auto& m) { m.samples = 0; }},
      {"samples is not positive (-2)", [](auto& m) { m.samples = -2; }},
      {"loss_scale is not finite", [](auto& m) { m.loss_scale = nan_f; }},
      {"loss_scale is not finite", [](auto& m) { m.loss_scale = -inf_f; }},
      {"tokens holds 5 values, no whole number of rows for 2 samples",
       [](auto& m) { m.tokens.pop_back(); }},
      {"targets holds 7 values", [](auto& m) { m.targets.push_back(1); }},
      {"input holds 23 values", [](auto& m) { m.input.pop_back(); }},
      {"input holds 12 values, no whole number of rows for 5 samples",
       [](auto& m) { m = {0, 0, 0, 5, 0.0f, {}, {}, std::vector<float>(12), 0}; }},
      {"output_values is negative", [](auto& m) { m.output_values = -24; }},
      {"output_values (25) is no whole number of rows", [](auto& m) { m.output_values = 25; }},
      {"tokens[2] is negative", [](auto& m) { m.tokens[2] = -250; }},
      {"targets[5] is negative", [](auto& m) { m.targets[5] = -1; }},
  };
  for (const auto& [mentions, breaks] : cases) {
    BOOST_TEST_CONTEXT(mentions) {
      auto m = sample_device_rows();
      breaks(m);
      check_refused(decode_device_rows(encode(m)), "device_rows: " + mentions);
    }
  }
}

BOOST_AUTO_TEST_CASE(the_other_device_messages_refuse_what_breaks_their_rules) {
  check_refused(decode_ring_chunk(encode(ring_chunk{-1, 0, {1.0f}})),
                "ring_chunk: step is negative");
  check_refused(decode_ring_chunk(encode(ring_chunk{4, -3, {1.0f}})),
                "ring_chunk: round is negative");
  check_refused(decode_gradient_values(encode(gradient_values{-2, {1.0f}})),
                "gradient_values: step is negative");
  check_refused(decode_gradient_values(encode(gradient_values{2, {1.0f}, -7})),
                "gradient_values: offset is negative");
  // Another kind's bytes, even one of the same shape, are refused.
  check_refused(decode_ring_chunk(encode(sample_gradient_values())),
                "expected ring_chunk, got gradient_values");
  check_refused(decode_gradient_values(encode(sample_ring_chunk())),
                "expected gradient_values, got ring_chunk");
  check_refused(decode_device_output(encode(sample_device_rows())),
                "expected device_output, got device_rows");
  check_refused(decode_device_rows(encode(sample_node_join())),
                "expected device_rows, got node_join");
}

BOOST_AUTO_TEST_CASE(a_float_field_of_no_whole_number_of_floats_is_refused) {
  for (uint32_t cut = 1; cut < 4; ++cut) {
    BOOST_TEST_CONTEXT("cut by " << cut) {
      const auto rows = encode(sample_device_rows()); // input: 24 floats, 96 bytes
      check_refused(decode_device_rows(with_data_size(rows, 96, 96 - cut)),
                    "device_rows: input has " + std::to_string(96 - cut) +
                        " bytes, no whole number of floats");
      const auto output = encode(sample_device_output());
      check_refused(decode_device_output(with_data_size(output, 96, 96 - cut)),
                    "device_output: output has");
      const auto chunk = encode(sample_ring_chunk()); // 5 floats
      check_refused(decode_ring_chunk(with_data_size(chunk, 20, 20 - cut)),
                    "ring_chunk: values has");
      const auto grads = encode(sample_gradient_values()); // 7 floats
      check_refused(decode_gradient_values(with_data_size(grads, 28, 28 - cut)),
                    "gradient_values: values has");
    }
  }
  // The patch itself keeps a message valid when the size stays whole floats.
  const auto shorter = decode_ring_chunk(with_data_size(encode(sample_ring_chunk()), 20, 16));
  BOOST_REQUIRE_MESSAGE(shorter.ok(), why(shorter));
  BOOST_TEST(shorter->values.size() == 4u);
}

BOOST_AUTO_TEST_CASE(values_above_one_message_field_are_refused_by_the_sender) {
  ring_chunk big{1, 0, std::vector<float>(static_cast<size_t>(max_payload_bytes / 4 + 1))};
  try {
    (void)encode(big);
    BOOST_FAIL("encoded values larger than a Data field");
  } catch (const std::invalid_argument& e) {
    const std::string what = e.what();
    BOOST_TEST(what.find("ring_chunk: values has 536870912 bytes") != std::string::npos, what);
  }
}

BOOST_AUTO_TEST_SUITE_END()
