// The versioned profile file that deepcee profile writes: written and read back, and every
// kind of bad file (another format version, truncated, an entry missing, another model or
// device) refused with one line naming the file.
#include "runtime/base/errors.hpp"
#include "runtime/cluster/profile_fingerprint.hpp"
#include "runtime/io/cluster_toml.hpp"
#include "runtime/io/profile_toml.hpp"

#include <boost/test/unit_test.hpp>

#include <string>

using namespace deepcee::runtime;
namespace tt = boost::test_tools;

namespace {

measured_profile two_sizes() {
  measured_profile p;
  p.format_version = profile_format_version;
  p.model = "small";
  p.prec = precision::fp32;
  p.devices = {{"CPU", "Test CPU \"x\", 1 OpenBLAS thread(s)", {1, 2}, 0}};
  p.fingerprint = profile_fingerprint(p.devices, *model_preset("small"), precision::fp32, "b1");
  double t = 1e-3;
  for (int b : {1, 2})
    for (layer_kind k : {layer_kind::embedding, layer_kind::block, layer_kind::head}) {
      measured_entry e;
      e.device_kind = "CPU";
      e.layer = k;
      e.micro_batch = b;
      e.f_s = t;
      e.b_s = 2 * t;
      e.w_s = 0.5 * t;
      e.act_until_b = 1000 * b;
      e.act_until_w = 700 * b;
      p.entries.push_back(e);
      t *= 1.5;
    }
  p.links = {{"n0", "n1", 1.25e-4, 1.1e8, 0}, {"n1", "n0", 1.5e-4, 1.2e8, 0}};
  return p;
}

std::string error_of(const std::string& text) {
  try {
    parse_measured_profile(text, "p.toml");
  } catch (const input_error& e) {
    return e.what();
  }
  return "";
}

/// The text up to (not including) the n-th occurrence of `what`.
std::string before_nth(const std::string& text, const std::string& what, int n) {
  size_t at = 0;
  for (int i = 0; i < n; ++i)
    at = text.find(what, at + (i ? 1 : 0));
  return text.substr(0, at);
}

std::string replaced(std::string text, const std::string& from, const std::string& to) {
  text.replace(text.find(from), from.size(), to);
  return text;
}

} // namespace

BOOST_AUTO_TEST_SUITE(profile_file_suite)

BOOST_AUTO_TEST_CASE(a_written_profile_reads_back) {
  const measured_profile p = two_sizes();
  const measured_profile q = parse_measured_profile(format_measured_profile(p), "p.toml");
  BOOST_TEST(q.format_version == profile_format_version);
  BOOST_TEST(q.model == "small");
  BOOST_TEST(q.fingerprint == p.fingerprint);
  BOOST_TEST_REQUIRE(q.devices.size() == 1u);
  BOOST_TEST(q.devices[0].identity == p.devices[0].identity);
  BOOST_TEST(q.devices[0].micro_batches == std::vector<int>({1, 2}));
  BOOST_TEST_REQUIRE(q.entries.size() == p.entries.size());
  for (size_t i = 0; i < p.entries.size(); ++i) {
    BOOST_TEST((q.entries[i].layer == p.entries[i].layer));
    BOOST_TEST(q.entries[i].micro_batch == p.entries[i].micro_batch);
    BOOST_TEST(q.entries[i].f_s == p.entries[i].f_s, tt::tolerance(1e-8));
    BOOST_TEST(q.entries[i].b_s == p.entries[i].b_s, tt::tolerance(1e-8));
    BOOST_TEST(q.entries[i].w_s == p.entries[i].w_s, tt::tolerance(1e-8));
    BOOST_TEST(*q.entries[i].act_until_b == *p.entries[i].act_until_b);
    BOOST_TEST(*q.entries[i].act_until_w == *p.entries[i].act_until_w);
  }
  BOOST_TEST_REQUIRE(q.links.size() == 2u);
  BOOST_TEST(q.links[1].from == "n1");
  BOOST_TEST(q.links[1].latency_s == 1.5e-4, tt::tolerance(1e-8));
  BOOST_TEST(q.links[1].bandwidth_Bps == 1.2e8, tt::tolerance(1e-8));
  // The planner's costs are the measured ones.
  const profile_table table(make_model_spec(*model_preset("small"), "small"), {}, q);
  BOOST_TEST(table.cost("CPU", 1, 2).measured);
  BOOST_TEST(table.cost("CPU", 1, 2).f_s == p.entries[4].f_s, tt::tolerance(1e-8));
  BOOST_TEST(table.cost("CPU", 1, 2).act_until_w == 1400);
}

BOOST_AUTO_TEST_CASE(measured_codecs_read_back_and_price_the_passes) {
  measured_profile p = two_sizes();
  p.codecs = {{"CPU", compression::int8, 1.25e-10, 4.5e-11, 0},
              {"CPU", compression::fp16, 6e-11, 3e-11, 0}};
  const std::string text = format_measured_profile(p);
  const measured_profile q = parse_measured_profile(text, "p.toml");
  BOOST_TEST_REQUIRE(q.codecs.size() == 2u);
  BOOST_TEST((q.codecs[0].comp == compression::int8));
  BOOST_TEST((q.codecs[1].comp == compression::fp16));
  BOOST_TEST(q.codecs[0].device_kind == "CPU");
  BOOST_TEST(q.codecs[0].encode_s_per_byte == 1.25e-10, tt::tolerance(1e-8));
  BOOST_TEST(q.codecs[0].decode_s_per_byte == 4.5e-11, tt::tolerance(1e-8));
  BOOST_TEST(q.codecs[1].encode_s_per_byte == 6e-11, tt::tolerance(1e-8));
  const profile_table table(make_model_spec(*model_preset("small"), "small"), {}, q);
  BOOST_TEST_REQUIRE(table.codec("CPU", compression::int8) != nullptr);
  BOOST_TEST(table.codec("CPU", compression::int8)->encode_s_per_byte == 1.25e-10,
             tt::tolerance(1e-8));
  BOOST_TEST(table.codec("CPU", compression::bf16) == nullptr);
  BOOST_TEST(table.codec("T4", compression::int8) == nullptr);
  // Truncated before the second codec; a count that disagrees; a file written before codecs
  // were measured (no count, none) still reads.
  const std::string second = before_nth(text, "[[codec]]", 2);
  const std::string cut = error_of(second + text.substr(text.find("[[link]]")));
  BOOST_TEST(cut.find("p.toml") == 0u, cut);
  BOOST_TEST(cut.find("1 [[codec]] of the 2") != std::string::npos, cut);
  const std::string older = format_measured_profile(two_sizes());
  BOOST_TEST(parse_measured_profile(replaced(older, "codecs = 0\n", ""), "p.toml").codecs.empty());
  // Bad rows: one line naming the file and the row's line.
  BOOST_TEST(error_of(replaced(text, "\"int8\"", "\"int4\"")).find("unknown compression 'int4'") !=
             std::string::npos);
  BOOST_TEST(error_of(replaced(text, "\"int8\"", "\"none\"")).find("p.toml:") == 0u);
  BOOST_TEST(error_of(replaced(text, "encode = 1.25e-10", "encode = -1")).find("not negative") !=
             std::string::npos);
  BOOST_TEST(error_of(replaced(text, "\"fp16\"", "\"int8\"")).find("a second [[codec]]") !=
             std::string::npos);
  BOOST_TEST(error_of(replaced(text, "decode = 4.5e-11\n", "")).find("needs 'decode'") !=
             std::string::npos);
}

BOOST_AUTO_TEST_CASE(measured_optimizer_steps_read_back_and_price_the_step) {
  measured_profile p = two_sizes();
  p.optimizers = {{"CPU", layer_kind::embedding, 2e-4, 0},
                  {"CPU", layer_kind::block, 7e-4, 0},
                  {"CPU", layer_kind::head, 1e-4, 0}};
  const std::string text = format_measured_profile(p);
  const measured_profile q = parse_measured_profile(text, "p.toml");
  BOOST_TEST_REQUIRE(q.optimizers.size() == 3u);
  BOOST_TEST((q.optimizers[1].layer == layer_kind::block));
  BOOST_TEST(q.optimizers[1].step_s == 7e-4, tt::tolerance(1e-8));
  // The measured steps price the optimizer of the CPU's layers; another kind keeps AdamW's
  // memory traffic (28 bytes a parameter: weights, gradients and moments read, weights and
  // moments written) at its memory bandwidth.
  const auto model = make_model_spec(*model_preset("small"), "small");
  const profile_table table(model, {}, q);
  const auto c = parse_cluster(R"(
name = "two"
[[region]]
name = "r"
tier = "edge"
[[node]]
name = "a"
region = "r"
devices = [{ kind = "CPU", count = 1 }, { kind = "T4", count = 1 }]
)",
                               "c.toml");
  const int n = static_cast<int>(model.layers.size());
  BOOST_TEST(table.optimizer_s(c.devices[0], 0, n) == 2e-4 + (n - 2) * 7e-4 + 1e-4,
             tt::tolerance(1e-9));
  BOOST_TEST(table.optimizer_s(c.devices[0], 1, 2) == 7e-4, tt::tolerance(1e-9));
  double traffic = 0;
  for (const auto& layer : model.layers)
    traffic += double(layer.state_bytes() + layer.param_bytes + layer.optimizer_bytes);
  BOOST_TEST(table.optimizer_s(c.devices[1], 0, n) == traffic / c.devices[1].mem_bandwidth_Bps,
             tt::tolerance(1e-9));
  BOOST_TEST(traffic == 28.0 * double(model.total_params()), tt::tolerance(1e-9));
  // Truncated, a count that disagrees, a layer kind missing, a duplicate, bad values.
  const std::string cut =
      error_of(before_nth(text, "[[optimizer]]", 3) + text.substr(text.find("[[link]]")));
  BOOST_TEST(cut.find("p.toml") == 0u, cut);
  BOOST_TEST(cut.find("2 [[optimizer]] of the 3") != std::string::npos, cut);
  const std::string two_rows =
      replaced(replaced(text, "optimizers = 3", "optimizers = 2"),
               "\n[[optimizer]]\ndevice = \"CPU\"\nlayer = \"head\"\nstep = 0.0001\n", "");
  const std::string missing = error_of(two_rows);
  BOOST_TEST(missing.find("missing the optimizer step for device CPU, layer head") !=
                 std::string::npos,
             missing);
  BOOST_TEST(error_of(replaced(text, "\"head\"\nstep", "\"block\"\nstep"))
                 .find("a second [[optimizer]] for CPU block") != std::string::npos);
  BOOST_TEST(error_of(replaced(text, "step = 0.0007", "step = -1")).find("not negative") !=
             std::string::npos);
  BOOST_TEST(error_of(replaced(text, "\"head\"\nstep", "\"tail\"\nstep"))
                 .find("unknown layer kind 'tail'") != std::string::npos);
  // A file written before optimizer steps were measured (no count, none) still reads.
  const std::string older = format_measured_profile(two_sizes());
  BOOST_TEST(
      parse_measured_profile(replaced(older, "optimizers = 0\n", ""), "p.toml").optimizers.empty());
}

BOOST_AUTO_TEST_CASE(another_format_version_is_refused) {
  const std::string text = format_measured_profile(two_sizes());
  const std::string e = error_of(replaced(text, "format_version = 1", "format_version = 2"));
  BOOST_TEST(e.find("p.toml:2:") == 0u, e);
  BOOST_TEST(e.find("format_version 2") != std::string::npos, e);
}

BOOST_AUTO_TEST_CASE(a_truncated_profile_is_refused) {
  const std::string text = format_measured_profile(two_sizes());
  // Cut at an entry's boundary: valid TOML, but fewer entries than declared.
  const std::string e = error_of(before_nth(text, "[[entry]]", 4));
  BOOST_TEST(e.find("p.toml") == 0u, e);
  BOOST_TEST(e.find("3 [[entry]] of the 6") != std::string::npos, e);
  // Cut before the links.
  const std::string l = error_of(before_nth(text, "[[link]]", 2));
  BOOST_TEST(l.find("1 [[link]] of the 2") != std::string::npos, l);
  // Cut inside a value: a syntax error at its line.
  const std::string s = error_of(text.substr(0, text.rfind("latency = ") + 11));
  BOOST_TEST(s.find("p.toml:") == 0u, s);
}

BOOST_AUTO_TEST_CASE(a_missing_entry_is_named) {
  measured_profile p = two_sizes();
  p.entries.erase(p.entries.begin() + 5); // head at micro-batch 2
  const std::string e = error_of(format_measured_profile(p));
  BOOST_TEST(e.find("missing the entry for device CPU, layer head, micro_batch 2") !=
                 std::string::npos,
             e);
}

BOOST_AUTO_TEST_CASE(a_versioned_profile_needs_its_header) {
  const std::string text = format_measured_profile(two_sizes());
  const std::string no_print = replaced(text, "fingerprint = ", "# fingerprint = ");
  BOOST_TEST(error_of(no_print).find("missing 'fingerprint'") != std::string::npos);
  const std::string unversioned = replaced(text, "format_version = 1", "");
  BOOST_TEST(error_of(unversioned).find("belongs to a versioned profile") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(a_profile_of_another_model_or_device_is_refused) {
  const measured_profile p = parse_measured_profile(format_measured_profile(two_sizes()), "p.toml");
  try {
    profile_table(make_model_spec(*model_preset("gpt2-124m"), "gpt2-124m"), {}, p);
    BOOST_FAIL("another model was accepted");
  } catch (const input_error& e) {
    BOOST_TEST(std::string(e.what()).find("p.toml:3:") == 0u, e.what());
  }
  const cluster gpus = parse_cluster(R"(name = "g"
[[region]]
name = "r"
tier = "cloud"
[[node]]
name = "n0"
region = "r"
devices = [{ kind = "T4", count = 2 }]
)",
                                     "c.toml");
  try {
    require_profile_covers(p, gpus.devices);
    BOOST_FAIL("a profile of another device was accepted");
  } catch (const input_error& e) {
    BOOST_TEST(std::string(e.what()).find("measured on CPU") != std::string::npos, e.what());
    BOOST_TEST(std::string(e.what()).find("(T4)") != std::string::npos, e.what());
  }
  cluster mixed = gpus;
  mixed.devices.push_back(mixed.devices[0]);
  mixed.devices.back().kind = "CPU";
  BOOST_CHECK_NO_THROW(require_profile_covers(p, mixed.devices));
}

BOOST_AUTO_TEST_CASE(the_fingerprint_follows_devices_model_and_build) {
  const std::vector<measured_device> d = {{"CPU", "cpu A, 1 thread", {1, 2}, 0}};
  const model_config m = *model_preset("small");
  const std::string base = profile_fingerprint(d, m, precision::fp32, "build1");
  BOOST_TEST(base.size() == 16u);
  BOOST_TEST(base == profile_fingerprint(d, m, precision::fp32, "build1"));
  BOOST_TEST(base != profile_fingerprint(d, m, precision::fp32, "build2"));
  BOOST_TEST(base != profile_fingerprint(d, m, precision::bf16, "build1"));
  model_config wider = m;
  wider.d_model *= 2;
  BOOST_TEST(base != profile_fingerprint(d, wider, precision::fp32, "build1"));
  auto other = d;
  other[0].identity = "cpu A, 2 threads";
  BOOST_TEST(base != profile_fingerprint(other, m, precision::fp32, "build1"));
  other = d;
  other[0].micro_batches = {1, 2, 4};
  BOOST_TEST(base != profile_fingerprint(other, m, precision::fp32, "build1"));
}

BOOST_AUTO_TEST_SUITE_END()
