#include "runtime/base/units.hpp"
#include "runtime/cluster/device_catalogue.hpp"

#include <boost/test/unit_test.hpp>

using namespace deepcee::runtime;

BOOST_AUTO_TEST_SUITE(device_catalogue_suite)

BOOST_AUTO_TEST_CASE(every_required_kind_is_present_with_sane_figures) {
  for (const char* kind : {"H100-SXM", "A100-40GB", "A100-80GB", "V100", "RTX3090", "RTX4090",
                           "A10", "L4", "T4", "Jetson-AGX-Orin", "Jetson-Xavier-NX", "Jetson-TX2",
                           "Jetson-Nano", "Raspberry-Pi-4", "CPU"}) {
    auto spec = find_device_kind(kind);
    BOOST_TEST_REQUIRE(spec.has_value(), kind);
    BOOST_TEST(spec->kind == kind);
    BOOST_TEST(spec->fp32_flops > 0);
    BOOST_TEST(spec->bf16_flops >= spec->fp32_flops);
    BOOST_TEST(spec->memory_bytes > 0);
    BOOST_TEST(spec->mem_bandwidth_Bps > 0);
  }
}

BOOST_AUTO_TEST_CASE(datasheet_figures) {
  auto a100 = *find_device_kind("A100-80GB");
  BOOST_TEST(a100.fp32_flops == 19.5e12);
  BOOST_TEST(a100.bf16_flops == 312e12);
  BOOST_TEST(a100.memory_bytes == 80.0 * (1 << 30));
  BOOST_TEST(a100.mem_bandwidth_Bps == 2039e9);
  auto a100_40 = *find_device_kind("A100-40GB");
  BOOST_TEST(a100_40.mem_bandwidth_Bps == 1555e9);
  auto rtx = *find_device_kind("RTX3090");
  BOOST_TEST(rtx.fp32_flops == 35.6e12);
  BOOST_TEST(rtx.bf16_flops == 71e12);
  BOOST_TEST(rtx.mem_bandwidth_Bps == 936e9);
  BOOST_TEST(find_device_kind("H100-SXM")->bf16_flops == 989e12);
  BOOST_TEST(find_device_kind("T4")->fp32_flops == 8.1e12);
  // The default job's devices (configs/clusters/edge-end.toml): fp32 rates from the GPU
  // cores and clocks of the Jetson data sheets, the Pi 4's from 4 Cortex-A72 cores at
  // 1.5 GHz issuing one 4-lane FMA a cycle.
  auto nano = *find_device_kind("Jetson-Nano");
  BOOST_TEST(nano.fp32_flops == 236e9);
  BOOST_TEST(nano.memory_bytes == 4.0 * (1 << 30));
  BOOST_TEST(nano.mem_bandwidth_Bps == 25.6e9);
  BOOST_TEST((nano.cls == device_class::embedded_gpu));
  BOOST_TEST(find_device_kind("Jetson-TX2")->fp32_flops == 665.6e9);
  auto pi = *find_device_kind("Raspberry-Pi-4");
  BOOST_TEST(pi.fp32_flops == 4 * 1.5e9 * 8);
  BOOST_TEST(pi.mem_bandwidth_Bps == 12.8e9);
  BOOST_TEST((pi.cls == device_class::cpu));
  auto cpu = *find_device_kind("CPU");
  BOOST_TEST(cpu.fp32_flops >= 50e9);
  BOOST_TEST(cpu.fp32_flops <= 100e9);
  BOOST_TEST((cpu.cls == device_class::cpu));
}

BOOST_AUTO_TEST_CASE(lookup_ignores_case_spaces_and_dashes_and_accepts_aliases) {
  BOOST_TEST(find_device_kind("rtx3090")->kind == "RTX3090");
  BOOST_TEST(find_device_kind("RTX 3090")->kind == "RTX3090");
  BOOST_TEST(find_device_kind("rtx-4090")->kind == "RTX4090");
  BOOST_TEST(find_device_kind("a100_80gb")->kind == "A100-80GB");
  BOOST_TEST(find_device_kind("h100")->kind == "H100-SXM");
  BOOST_TEST(find_device_kind("jetson agx orin")->kind == "Jetson-AGX-Orin");
  BOOST_TEST(find_device_kind("a10")->kind == "A10");
  BOOST_TEST(find_device_kind("Raspberry Pi 4")->kind == "Raspberry-Pi-4");
  BOOST_TEST(find_device_kind("rpi4")->kind == "Raspberry-Pi-4");
  BOOST_TEST(find_device_kind("jetson tx2")->kind == "Jetson-TX2");
  BOOST_TEST(find_device_kind("tx2")->kind == "Jetson-TX2");
}

BOOST_AUTO_TEST_CASE(ambiguous_and_unknown_names_match_nothing) {
  BOOST_TEST(!find_device_kind("A100").has_value());
  BOOST_TEST(!find_device_kind("GTX1080").has_value());
  BOOST_TEST(!find_device_kind("").has_value());
  BOOST_TEST(known_device_kinds().find("RTX3090") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(unit_parsers) {
  BOOST_TEST(*parse_bandwidth("100Mbps") == 100e6 / 8);
  BOOST_TEST(*parse_bandwidth("1 Gbps") == 1e9 / 8);
  BOOST_TEST(*parse_bandwidth("25GB/s") == 25e9);
  BOOST_TEST(*parse_bandwidth("1GiB/s") == 1073741824.0);
  BOOST_TEST(!parse_bandwidth("100").has_value());
  BOOST_TEST(!parse_bandwidth("fast").has_value());
  BOOST_TEST(!parse_bandwidth("10 Gbit").has_value());
  BOOST_TEST(*parse_duration("40ms") == 0.04);
  BOOST_TEST(*parse_duration("5us") == 5e-6, boost::test_tools::tolerance(1e-12));
  BOOST_TEST(*parse_duration("0.2 ms") == 0.2e-3, boost::test_tools::tolerance(1e-12));
  BOOST_TEST(*parse_duration("1s") == 1.0);
  BOOST_TEST(!parse_duration("40 parsecs").has_value());
  BOOST_TEST(*parse_bytes("24GiB") == 24.0 * (1 << 30));
  BOOST_TEST(*parse_bytes("24GB") == 24e9);
  BOOST_TEST(*parse_flops("35.6TFLOPS") == 35.6e12);
  BOOST_TEST(format_bandwidth(100e6 / 8) == "100 Mbps");
  BOOST_TEST(format_duration(0.04) == "40 ms");
}

BOOST_AUTO_TEST_SUITE_END()
