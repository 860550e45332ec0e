#include "runtime/io/safetensors.hpp"

#include "runtime/base/errors.hpp"

#include <boost/test/unit_test.hpp>
#include <nlohmann/json.hpp>

#include "tests/support/temp_dir.hpp"
#include <bit>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <optional>
#include <string>
#include <unistd.h>

namespace fs = std::filesystem;
using namespace deepcee::runtime;

namespace {

using deepcee::test::slurp;
using deepcee::test::temp_dir;

/// A hand-made file: length prefix, header text as given, then `data_bytes` zero bytes.
void write_raw(const fs::path& file, const std::string& header, size_t data_bytes,
               std::optional<uint64_t> length = std::nullopt) {
  const uint64_t n = length.value_or(header.size());
  char prefix[8];
  std::memcpy(prefix, &n, 8);
  std::ofstream out(file, std::ios::binary);
  out.write(prefix, 8);
  out << header << std::string(data_bytes, '\0');
}

std::vector<named_tensor> sample_tensors() {
  const float nan_payload = std::bit_cast<float>(0x7fc01234u);
  const float denormal = std::numeric_limits<float>::denorm_min();
  const std::vector<float> weights = {
      1.0f, -0.0f, nan_payload, std::numeric_limits<float>::infinity(), denormal, 3.14159274f};
  const std::vector<int32_t> steps = {-7, 0, 2147483647};
  const std::vector<float> scalar = {0.5f};
  return {named_tensor::f32("h.0.attn.w", {2, 3}, weights), named_tensor::i32("step", {3}, steps),
          named_tensor::f32("empty", {0, 4}, {}), named_tensor::f32("scale", {}, scalar)};
}

} // namespace

BOOST_AUTO_TEST_SUITE(safetensors_tests)

BOOST_AUTO_TEST_CASE(round_trip_is_bit_exact) {
  temp_dir dir;
  const fs::path file = dir.path / "model.safetensors";
  const auto tensors = sample_tensors();
  const std::map<std::string, std::string> metadata = {{"step", "42"}, {"format", "pt"}};
  write_safetensors(file, tensors, metadata);
  const safetensors_file read = read_safetensors(file);
  BOOST_TEST(read.metadata == metadata);
  BOOST_TEST_REQUIRE(read.tensors.size() == tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) {
    BOOST_TEST(read.tensors[i].name == tensors[i].name);
    BOOST_TEST(read.tensors[i].dtype == tensors[i].dtype);
    BOOST_TEST(read.tensors[i].shape == tensors[i].shape);
    BOOST_TEST(read.tensors[i].data == tensors[i].data);
  }
  const named_tensor* w = read.find("h.0.attn.w");
  BOOST_TEST_REQUIRE(w != nullptr);
  const std::vector<float> values = w->to_f32();
  BOOST_TEST(std::bit_cast<uint32_t>(values[2]) == 0x7fc01234u);
  BOOST_TEST(std::signbit(values[1]));
  BOOST_TEST(read.find("step")->to_i32() == (std::vector<int32_t>{-7, 0, 2147483647}));
  BOOST_TEST(read.find("missing") == nullptr);
  BOOST_CHECK_THROW(w->to_i32(), std::logic_error);
}

BOOST_AUTO_TEST_CASE(header_follows_the_standard_layout) {
  temp_dir dir;
  const fs::path file = dir.path / "model.safetensors";
  write_safetensors(file, sample_tensors(), {{"step", "42"}});
  const std::string bytes = slurp(file);
  BOOST_TEST_REQUIRE(bytes.size() >= 8u);
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i)
    n = (n << 8) | static_cast<unsigned char>(bytes[i]);
  BOOST_TEST(n % 8 == 0u);
  BOOST_TEST_REQUIRE(8 + n <= bytes.size());
  const std::string header = bytes.substr(8, n);
  BOOST_TEST(header.front() == '{');
  const auto json = nlohmann::json::parse(header);
  BOOST_TEST(json["__metadata__"]["step"] == "42");
  BOOST_TEST(json["h.0.attn.w"]["dtype"] == "F32");
  BOOST_TEST(json["h.0.attn.w"]["shape"] == nlohmann::json({2, 3}));
  BOOST_TEST(json["h.0.attn.w"]["data_offsets"] == nlohmann::json({0, 24}));
  BOOST_TEST(json["step"]["dtype"] == "I32");
  BOOST_TEST(json["step"]["data_offsets"] == nlohmann::json({24, 36}));
  BOOST_TEST(json["scale"]["shape"] == nlohmann::json::array());
  BOOST_TEST(bytes.size() == 8 + n + 24 + 12 + 0 + 4);
  // The first float of the data is 1.0f, little-endian.
  const uint32_t one = 0x3f800000u;
  BOOST_TEST(std::memcmp(bytes.data() + 8 + n, &one, 4) == 0);
}

BOOST_AUTO_TEST_CASE(write_replaces_atomically_and_leaves_no_tmp) {
  temp_dir dir;
  const fs::path file = dir.path / "ckpt.safetensors";
  write_safetensors(file, sample_tensors());
  const std::vector<float> other = {9.0f};
  write_safetensors(file, {named_tensor::f32("only", {1}, other)});
  BOOST_TEST(!fs::exists(dir.path / "ckpt.safetensors.tmp"));
  const auto read = read_safetensors(file);
  BOOST_TEST_REQUIRE(read.tensors.size() == 1u);
  BOOST_TEST(read.tensors[0].to_f32() == other);
  BOOST_TEST(read.metadata.empty());
  size_t entries = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir.path))
    ++entries;
  BOOST_TEST(entries == 1u);
}

BOOST_AUTO_TEST_CASE(write_errors) {
  temp_dir dir;
  const fs::path file = dir.path / "no" / "such" / "dir" / "x.safetensors";
  BOOST_CHECK_EXCEPTION(write_safetensors(file, sample_tensors()), input_error,
                        [&](const input_error& e) {
                          return std::string(e.what()).find(dir.path.string()) != std::string::npos;
                        });
  const std::vector<float> two = {1, 2};
  BOOST_CHECK_THROW(write_safetensors(dir.path / "y", {named_tensor::f32("a", {3}, two)}),
                    std::invalid_argument);
  BOOST_CHECK_THROW(write_safetensors(dir.path / "y", {named_tensor::f32("a", {2}, two),
                                                       named_tensor::f32("a", {2}, two)}),
                    std::invalid_argument);
  named_tensor f16 = named_tensor::f32("a", {2}, two);
  f16.dtype = "F16";
  BOOST_CHECK_THROW(write_safetensors(dir.path / "y", {f16}), std::invalid_argument);
  BOOST_TEST(!fs::exists(dir.path / "y"));
  BOOST_TEST(!fs::exists(dir.path / "y.tmp"));
}

BOOST_AUTO_TEST_CASE(malformed_files_are_input_errors_naming_the_file) {
  temp_dir dir;
  int count = 0;
  auto rejects = [&](const std::string& header, size_t data_bytes, std::optional<uint64_t> length,
                     const std::string& fragment) {
    const fs::path file = dir.path / ("bad" + std::to_string(count++) + ".safetensors");
    write_raw(file, header, data_bytes, length);
    BOOST_TEST_CONTEXT("header " << header << ", expecting '" << fragment << "'") {
      BOOST_CHECK_EXCEPTION(read_safetensors(file), input_error, [&](const input_error& e) {
        const std::string what = e.what();
        BOOST_TEST_MESSAGE(what);
        return what.rfind(file.string() + ": ", 0) == 0 && what.find(fragment) != std::string::npos;
      });
    }
  };
  const std::string one = R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";

  // Shorter than the length prefix.
  {
    const fs::path file = dir.path / "tiny.safetensors";
    std::ofstream(file, std::ios::binary) << "abcd";
    BOOST_CHECK_EXCEPTION(read_safetensors(file), input_error, [&](const input_error& e) {
      return std::string(e.what()).find(file.string()) != std::string::npos;
    });
  }
  rejects(one, 8, 1000, "header length 1000");
  rejects(one, 8, uint64_t(1) << 62, "header length");
  rejects("{not json", 8, std::nullopt, "invalid JSON");
  rejects("[1, 2]", 0, std::nullopt, "'{'");
  rejects(R"({"a":{"dtype":"F16","shape":[2],"data_offsets":[0,4]}})", 4, std::nullopt,
          "unsupported dtype 'F16'");
  rejects(R"({"a":{"dtype":"F32","shape":[100],"data_offsets":[0,400]}})", 8, std::nullopt,
          "outside");
  rejects(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}})", 8, std::nullopt, "outside");
  rejects(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,12]}})", 12, std::nullopt, "need 8");
  rejects(R"({"a":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", 8, std::nullopt, "shape");
  rejects(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
          R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
          12, std::nullopt, "overlap");
  rejects(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
          R"("a":{"dtype":"F32","shape":[2],"data_offsets":[8,16]}})",
          16, std::nullopt, "duplicate key 'a'");
  rejects(one, 12, std::nullopt, "belong to no tensor");
  rejects(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})", 12, std::nullopt, "gap");
  rejects(R"({"a":{"dtype":"F32","shape":[2]}})", 8, std::nullopt, "data_offsets");
  rejects(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8],"x":1}})", 8, std::nullopt,
          "unknown field 'x'");
  rejects(R"({"__metadata__":{"k":1},"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", 8,
          std::nullopt, "__metadata__");

  const fs::path missing = dir.path / "missing.safetensors";
  BOOST_CHECK_EXCEPTION(read_safetensors(missing), input_error, [&](const input_error& e) {
    return std::string(e.what()).find(missing.string()) != std::string::npos;
  });
}

BOOST_AUTO_TEST_CASE(padded_hand_written_file_is_accepted) {
  temp_dir dir;
  const fs::path file = dir.path / "hand.safetensors";
  std::string header = R"({"b":{"dtype":"I32","shape":[1],"data_offsets":[4,8]},)"
                       R"("a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})";
  header.append((8 - header.size() % 8) % 8, ' ');
  write_raw(file, header, 8);
  const auto read = read_safetensors(file);
  BOOST_TEST_REQUIRE(read.tensors.size() == 2u);
  BOOST_TEST(read.tensors[0].name == "a"); // data order, not header order
  BOOST_TEST(read.tensors[1].name == "b");
}

BOOST_AUTO_TEST_SUITE_END()
