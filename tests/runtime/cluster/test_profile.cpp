#include "runtime/base/errors.hpp"
#include "runtime/cluster/profile.hpp"
#include "runtime/io/profile_toml.hpp"

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <string>

using namespace deepcee::runtime;
namespace tt = boost::test_tools;

namespace {

model_spec gpt2() {
  return make_model_spec(*model_preset("gpt2-124m"), "gpt2-124m");
}

std::string error_of(const std::string& text) {
  try {
    profile_table(gpt2(), {}, parse_measured_profile(text, "p.toml"));
  } catch (const input_error& e) {
    return e.what();
  }
  return "";
}

} // namespace

BOOST_AUTO_TEST_SUITE(profile_suite)

BOOST_AUTO_TEST_CASE(roofline_by_hand_on_one_cpu_core) {
  model_spec m = make_model_spec(*model_preset("small"), "small");
  estimate_options o;
  device_spec cpu = *find_device_kind("CPU");
  layer_cost c = estimate_cost(cpu, m.layers[1], 4, o);
  const double tokens = 4 * 128, width = 128;
  const double size = tokens / (tokens + o.cpu.tokens_half) * width / (width + o.cpu.width_half);
  const double rate = 96e9 * o.cpu.matmul_efficiency * size;
  layer_work w = work_at(m.layers[1], 4);
  BOOST_TEST(c.f_s == std::max(w.f_flops / rate, w.f_bytes / 15e9) + 14 * o.cpu.launch_s,
             tt::tolerance(1e-12));
  BOOST_TEST(c.w_s == std::max(w.w_flops / rate, w.w_bytes / 15e9) + 8 * o.cpu.launch_s,
             tt::tolerance(1e-12));
  BOOST_TEST(c.act_until_b == w.act_until_b);
  BOOST_TEST(c.state_bytes == m.layers[1].state_bytes());
  BOOST_TEST(!c.measured);
  // The embedding has no B at all and is memory bound in F.
  layer_cost e = estimate_cost(cpu, m.layers[0], 4, o);
  BOOST_TEST(e.b_s == 0);
  BOOST_TEST(e.f_s == work_at(m.layers[0], 4).f_bytes / 15e9 + o.cpu.launch_s,
             tt::tolerance(1e-12));
}

BOOST_AUTO_TEST_CASE(estimates_grow_with_the_micro_batch) {
  profile_table table(gpt2());
  for (const auto& spec : device_catalogue())
    for (int layer : {0, 1, 13}) {
      layer_cost prev = table.cost(spec.kind, layer, 1);
      for (int b : {2, 4, 8, 16}) {
        layer_cost c = table.cost(spec.kind, layer, b);
        BOOST_TEST(c.f_s > prev.f_s, spec.kind << " layer " << layer << " b " << b);
        BOOST_TEST(c.w_s > prev.w_s);
        BOOST_TEST(c.act_until_b > prev.act_until_b);
        // Bigger batches use the device better: time per sample does not grow.
        BOOST_TEST(c.f_s / b <= prev.f_s / (b / 2) * (1 + 1e-9));
        prev = c;
      }
    }
}

BOOST_AUTO_TEST_CASE(faster_devices_take_less_time) {
  profile_table table(gpt2());
  const char* order[] = {"H100-SXM",        "A100-80GB",        "V100", "T4",
                         "Jetson-AGX-Orin", "Jetson-Xavier-NX", "CPU"};
  for (int layer : {1, 13})
    for (size_t i = 1; i < std::size(order); ++i)
      BOOST_TEST(table.cost(order[i - 1], layer, 4).f_s < table.cost(order[i], layer, 4).f_s,
                 order[i - 1] << " vs " << order[i]);
  // bf16 helps where the device has bf16 tensor cores, and not on a T4.
  estimate_options bf16;
  bf16.prec = precision::bf16;
  profile_table fast(gpt2(), bf16);
  BOOST_TEST(fast.cost("A100-80GB", 1, 8).f_s < table.cost("A100-80GB", 1, 8).f_s / 4);
  BOOST_TEST(fast.cost("T4", 1, 8).f_s == table.cost("T4", 1, 8).f_s);
}

BOOST_AUTO_TEST_CASE(device_overrides_change_the_estimate) {
  profile_table table(gpt2());
  device d;
  d.kind = "RTX3090";
  d.cls = device_class::consumer_gpu;
  auto spec = *find_device_kind("RTX3090");
  d.fp32_flops = spec.fp32_flops;
  d.bf16_flops = spec.bf16_flops;
  d.mem_bandwidth_Bps = spec.mem_bandwidth_Bps;
  d.memory_bytes = spec.memory_bytes;
  BOOST_TEST(table.cost(d, 1, 4).f_s == table.cost("RTX3090", 1, 4).f_s);
  d.fp32_flops /= 2;
  BOOST_TEST(table.cost(d, 1, 4).f_s > table.cost("RTX3090", 1, 4).f_s);
  BOOST_CHECK_THROW(table.cost("GTX1080", 1, 4), std::invalid_argument);
  BOOST_CHECK_THROW(table.cost("T4", 14, 4), std::out_of_range);
}

BOOST_AUTO_TEST_CASE(measured_entries_override_and_calibrate) {
  measured_profile p = parse_measured_profile(R"(model = "gpt2-124m"
precision = "fp32"
[[entry]]
device = "rtx 3090"
layer = "block"
micro_batch = 4
f = 0.010
b = "20ms"
w = 0.005
act_until_b = 1000
)",
                                              "p.toml");
  BOOST_TEST(p.entries.size() == 1u);
  BOOST_TEST(p.entries[0].device_kind == "RTX3090");
  BOOST_TEST(p.entries[0].line == 3);
  profile_table plain(gpt2());
  profile_table table(gpt2(), {}, p);
  layer_cost exact = table.cost("RTX3090", 5, 4);
  BOOST_TEST(exact.measured);
  BOOST_TEST(exact.f_s == 0.010);
  BOOST_TEST(exact.b_s == 0.020, tt::tolerance(1e-12));
  BOOST_TEST(exact.w_s == 0.005);
  BOOST_TEST(exact.act_until_b == 1000);
  BOOST_TEST(exact.act_until_w == plain.cost("RTX3090", 5, 4).act_until_w);
  // Another micro-batch: the estimate scaled by measured / estimated at b = 4.
  layer_cost scaled = table.cost("RTX3090", 5, 8);
  BOOST_TEST(scaled.measured);
  BOOST_TEST(scaled.f_s ==
                 plain.cost("RTX3090", 5, 8).f_s * 0.010 / plain.cost("RTX3090", 5, 4).f_s,
             tt::tolerance(1e-12));
  // Other layer kinds and devices keep the roofline.
  BOOST_TEST(!table.cost("RTX3090", 13, 4).measured);
  BOOST_TEST(table.cost("RTX3090", 13, 4).f_s == plain.cost("RTX3090", 13, 4).f_s);
  BOOST_TEST(!table.cost("T4", 5, 4).measured);
}

BOOST_AUTO_TEST_CASE(bad_profiles_name_file_and_line) {
  const std::string entry = "[[entry]]\nlayer = \"block\"\nmicro_batch = 1\nf = 1\nb = 1\nw = 1\n";
  BOOST_TEST(error_of("model = \"gpt2-355m\"\n") ==
             "p.toml:1: the profile was measured for model 'gpt2-355m', not 'gpt2-124m'");
  BOOST_TEST(error_of("\nprecision = \"bf16\"\n") ==
             "p.toml:2: the profile was measured in bf16, but the plan uses fp32");
  BOOST_TEST(error_of(entry + "device = \"GTX1080\"\n")
                 .rfind("p.toml:7: unknown device kind 'GTX1080' (known: ", 0) == 0);
  BOOST_TEST(error_of(entry + "device = \"T4\"\n" + entry + "device = \"T4\"\n") ==
             "p.toml:8: duplicate entry for T4 block micro_batch 1 (first at line 1)");
  BOOST_TEST(error_of(entry + "device = \"T4\"\nspeed = 3\n") ==
             "p.toml:8: unknown key 'speed' in [[entry]] (expected one of: device, layer, "
             "micro_batch, f, b, w, act_until_b, act_until_w)");
  BOOST_TEST(error_of("[[entry]]\ndevice = \"T4\"\nlayer = \"mlp\"\nmicro_batch = 1\n")
                 .rfind("p.toml:3: unknown layer kind 'mlp'", 0) == 0);
  BOOST_TEST(error_of("[[entry]]\ndevice = \"T4\"\nlayer = \"head\"\nmicro_batch = 1\nf = -1\n")
                 .rfind("p.toml:5: f must not be negative", 0) == 0);
  BOOST_TEST(error_of("[[entry]]\ndevice = \"T4\"\nlayer = \"head\"\nmicro_batch = 1\n") ==
             "p.toml:1: [[entry]] needs 'f'");
}

BOOST_AUTO_TEST_SUITE_END()
