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

/// One pass: the measured seconds per fp32 byte where the profile has them, else the
/// roofline of the pass's memory traffic.
double pass_s(const device& dev, const model_spec& model, compression c, int samples,
              const profile_table& profile, bool encode) {
  if (samples <= 0 || c == compression::none)
    return 0;
  if (const auto* measured = profile.codec(dev.kind, c)) {
    const double plain = double(model.transfer_bytes(samples, compression::none));
    return plain * (encode ? measured->encode_s_per_byte : measured->decode_s_per_byte);
  }
  return seconds(dev, traffic(model, c, samples, encode), profile.options());
}

} // namespace

double encode_s(const device& dev, const model_spec& model, compression c, int samples,
                const profile_table& profile) {
  return pass_s(dev, model, c, samples, profile, true);
}

double decode_s(const device& dev, const model_spec& model, compression c, int samples,
                const profile_table& profile) {
  return pass_s(dev, model, c, samples, profile, false);
}

codec_seconds stage_codec_s(const device& dev, const model_spec& model, compression in,
                            compression out, int samples, const profile_table& profile) {
  codec_seconds s;
  s.f = decode_s(dev, model, in, samples, profile) + encode_s(dev, model, out, samples, profile);
  s.b = encode_s(dev, model, in, samples, profile) + decode_s(dev, model, out, samples, profile);
  return s;
}

} // namespace deepcee::runtime
