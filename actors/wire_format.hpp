#pragma once

#include <caf/error.hpp>
#include <caf/meta/load_callback.hpp>
#include <caf/meta/save_callback.hpp>
#include <caf/meta/type_name.hpp>

#include <cstdint>
#include <vector>

/// Every actor message that can cross a node travels as the bytes of its Cap'n Proto
/// message (messages/codec.hpp) and is validated by that codec when it is loaded: the
/// struct's CAF `inspect` (actors/messages.hpp) writes one byte vector made by `to_wire`
/// and, on load, decodes it with `from_wire`. In one process CAF passes the structs
/// without serializing them, so nothing is encoded there.
///
/// When a loader refuses the bytes, CAF 0.17's middleman (basp::remote_message_handler)
/// drops that one message: it never reaches an actor, so no actor dies, and the
/// connection goes on (each BASP message has its own payload). `from_wire` logs the refusal
/// once through spdlog and counts it in `dropped_wire_messages`. The counter is per
/// process (= per node) because the loader runs inside CAF's middleman, which gives it no
/// actor to count in.
///
/// Actor handles (caf::strong_actor_ptr in stage_wiring and node_join) are CAF's own
/// addressing, so they stay CAF-serialized beside the bytes; so do the bare replies
/// (int32_t, int64_t) and caf::error values.
namespace deepcee::actors {

struct step_order;
struct grad_share;
struct stage_report;
struct optimize_order;
struct link_sample;
struct node_join;
struct heartbeat;

std::vector<uint8_t> to_wire(const step_order& x);
std::vector<uint8_t> to_wire(const grad_share& x);
std::vector<uint8_t> to_wire(const stage_report& x);
std::vector<uint8_t> to_wire(const optimize_order& x);
std::vector<uint8_t> to_wire(const link_sample& x);
std::vector<uint8_t> to_wire(const node_join& x); ///< all but the handles
std::vector<uint8_t> to_wire(const heartbeat& x);

/// Fills `x` from validated bytes, or leaves it alone and returns why they were refused.
caf::error from_wire(const std::vector<uint8_t>& bytes, step_order& x);
caf::error from_wire(const std::vector<uint8_t>& bytes, grad_share& x);
caf::error from_wire(const std::vector<uint8_t>& bytes, stage_report& x);
caf::error from_wire(const std::vector<uint8_t>& bytes, optimize_order& x);
caf::error from_wire(const std::vector<uint8_t>& bytes, link_sample& x);
caf::error from_wire(const std::vector<uint8_t>& bytes, node_join& x);
caf::error from_wire(const std::vector<uint8_t>& bytes, heartbeat& x);

/// Messages this process refused in `from_wire` so far.
int64_t dropped_wire_messages();

/// The body of the `inspect` of a struct that crosses nodes as Cap'n Proto bytes;
/// `handles` are the fields that stay CAF-serialized (actor handles).
template <class Inspector, class T, class... Handles>
typename Inspector::result_type inspect_as_wire(Inspector& f, T& x, const char* name,
                                                Handles&... handles) {
  std::vector<uint8_t> bytes;
  return f(caf::meta::type_name(name), caf::meta::save_callback([&]() -> caf::error {
             bytes = to_wire(x);
             return caf::none;
           }),
           bytes, caf::meta::load_callback([&]() -> caf::error { return from_wire(bytes, x); }),
           handles...);
}

} // namespace deepcee::actors
