#include "runtime/cluster/codec_cost.hpp"

namespace deepcee::runtime {

namespace {

/// Bytes an encode (or decode) pass moves through memory, and its kernel launches.
struct codec_traffic {
  double bytes = 0;
  int passes = 0;
};

codec_traffic traffic(const model_spec& model, compression c, int samples, bool encode) {
  const double encoded = double(model.transfer_bytes(samples, c));
  const double plain = double(model.transfer_bytes(samples, compression::none));
  switch (c) {
  case compression::none:
    return {};
  case compression::fp16:
  case compression::bf16:
    return {plain + encoded, 1};
  case compression::int8:
    // Encode: a pass for each row's maximum, a pass that scales and writes.
    return encode ? codec_traffic{2 * plain + encoded, 2} : codec_traffic{plain + encoded, 1};
  }
  return {};
}

double seconds(const device& dev, const codec_traffic& t, const estimate_options& options) {
  if (t.passes == 0)
    return 0;
  return t.bytes / dev.mem_bandwidth_Bps + t.passes * options.factors(dev.cls).launch_s;
}

} // namespace

double encode_s(const device& dev, const model_spec& model, compression c, int samples,
                const estimate_options& options) {
  if (samples <= 0)
    return 0;
  return seconds(dev, traffic(model, c, samples, true), options);
}

double decode_s(const device& dev, const model_spec& model, compression c, int samples,
                const estimate_options& options) {
  if (samples <= 0)
    return 0;
  return seconds(dev, traffic(model, c, samples, false), options);
}

codec_seconds stage_codec_s(const device& dev, const model_spec& model, compression in,
                            compression out, int samples, const estimate_options& options) {
  codec_seconds s;
  s.f = decode_s(dev, model, in, samples, options) + encode_s(dev, model, out, samples, options);
  s.b = encode_s(dev, model, in, samples, options) + decode_s(dev, model, out, samples, options);
  return s;
}

} // namespace deepcee::runtime
