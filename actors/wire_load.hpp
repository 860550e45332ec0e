#pragma once

// Internal to the wire_format*.cpp files: the one way a `from_wire` decodes, refuses (logged
// and counted in dropped_wire_messages) or fills its struct.

#include <caf/error.hpp>

#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace deepcee::actors::detail {

/// The one place a refused message is logged and counted.
caf::error refuse(const std::string& why);

/// Decodes with `decode` and, when the bytes are valid, converts with `assign`.
template <class Decode, class Assign>
caf::error load(const std::vector<uint8_t>& bytes, Decode decode, Assign assign) {
  auto r = decode(std::span<const uint8_t>(bytes));
  if (!r)
    return refuse(r.error().what);
  assign(std::move(*r));
  return caf::none;
}

} // namespace deepcee::actors::detail
