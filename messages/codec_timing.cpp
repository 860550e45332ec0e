#include "messages/codec_timing.hpp"

#include "messages/codec.hpp"
#include "runtime/base/statistics.hpp"

#include <chrono>
#include <random>
#include <stdexcept>
#include <vector>

namespace deepcee::messages {

codec_timing time_codec(tensor_dtype d, int64_t rows, int64_t cols, int warmup, int repetitions) {
  if (d == tensor_dtype::f32)
    throw std::invalid_argument("time_codec: f32 is not compressed");
  if (rows < 1 || cols < 1 || rows > max_payload_bytes / 4 / cols)
    throw std::invalid_argument("time_codec: the tensor must have positive rows and columns "
                                "and fit one message");
  if (repetitions < 1 || warmup < 0)
    throw std::invalid_argument("time_codec: repetitions must be positive");
  std::mt19937 rng(7);
  std::normal_distribution<float> pick(0.0f, 1.0f);
  std::vector<float> values(static_cast<size_t>(rows * cols));
  for (auto& v : values)
    v = pick(rng);
  tensor_header h;
  h.shape = {rows, cols};
  h.dtype = d;
  std::vector<float> widened(values.size());
  std::vector<double> enc, dec;
  using clock = std::chrono::steady_clock;
  const auto since = [](clock::time_point t) {
    return std::chrono::duration<double>(clock::now() - t).count();
  };
  for (int run = 0; run < warmup + repetitions; ++run) {
    auto start = clock::now();
    auto bytes = encode_tensor(h, values);
    const double e = since(start);
    auto decoded = decode_tensor(std::move(bytes));
    if (!decoded)
      throw std::logic_error("time_codec: its own message does not decode: " +
                             decoded.error().what);
    start = clock::now();
    decompress(*decoded, widened);
    const double w = since(start);
    if (run < warmup)
      continue;
    enc.push_back(e);
    dec.push_back(w);
  }
  const double plain = static_cast<double>(values.size() * sizeof(float));
  return {runtime::median(enc) / plain, runtime::median(dec) / plain};
}

} // namespace deepcee::messages
