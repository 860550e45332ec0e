#include "runtime/cluster/profile_fingerprint.hpp"

#define XXH_INLINE_ALL
#include <xxhash.h>

#include <cstdio>
#include <fstream>
#include <stdexcept>
#include <vector>

namespace deepcee::runtime {

namespace {

std::string hex(XXH64_hash_t h) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

/// Fields with their lengths, so that no two different inputs give the same text.
void field(std::string& text, std::string_view s) {
  text += std::to_string(s.size()) + ':' + std::string(s) + ';';
}

} // namespace

std::string profile_fingerprint(const std::vector<measured_device>& devices,
                                const model_config& model, precision prec, std::string_view build) {
  std::string text;
  for (const auto& d : devices) {
    field(text, d.kind);
    field(text, d.identity);
    for (int b : d.micro_batches)
      field(text, std::to_string(b));
    field(text, "/");
  }
  for (int v : {model.n_layer, model.d_model, model.n_head, model.context, model.vocab})
    field(text, std::to_string(v));
  field(text, to_string(prec));
  field(text, build);
  return hex(XXH3_64bits(text.data(), text.size()));
}

std::string file_digest(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in)
    throw std::runtime_error("cannot read " + file.string());
  XXH3_state_t state;
  XXH3_64bits_reset(&state);
  std::vector<char> buf(1 << 20);
  while (in) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    XXH3_64bits_update(&state, buf.data(), static_cast<size_t>(in.gcount()));
  }
  return hex(XXH3_64bits_digest(&state));
}

} // namespace deepcee::runtime
