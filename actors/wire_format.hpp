#pragma once

#include <caf/error.hpp>
#include <caf/fwd.hpp>
#include <caf/make_message.hpp>
#include <caf/message.hpp>
#include <caf/result.hpp>
#include <caf/meta/load_callback.hpp>
#include <caf/meta/save_callback.hpp>
#include <caf/meta/type_name.hpp>

#include <cstdint>
#include <exception>
#include <string>
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
struct pipe_request;
struct send_horizon;
struct pipe_arrival;
struct stage_snapshot;
struct deployment_request;
struct job_deployment;
struct device_rows;
struct device_output;
struct ring_chunk;
struct gradient_values;
struct node_error;

std::vector<uint8_t> to_wire(const step_order& x);
std::vector<uint8_t> to_wire(const grad_share& x);
std::vector<uint8_t> to_wire(const stage_report& x);
std::vector<uint8_t> to_wire(const optimize_order& x);
std::vector<uint8_t> to_wire(const link_sample& x);
std::vector<uint8_t> to_wire(const node_join& x); ///< all but the handles
std::vector<uint8_t> to_wire(const heartbeat& x);
std::vector<uint8_t> to_wire(const pipe_request& x);
std::vector<uint8_t> to_wire(const send_horizon& x);
std::vector<uint8_t> to_wire(const pipe_arrival& x);
/// Throws std::invalid_argument when a tensor is above Cap'n Proto's 512 MiB per field.
std::vector<uint8_t> to_wire(const stage_snapshot& x);
std::vector<uint8_t> to_wire(const deployment_request& x);
std::vector<uint8_t> to_wire(const job_deployment& x);
std::vector<uint8_t> to_wire(const device_rows& x);
std::vector<uint8_t> to_wire(const device_output& x);
std::vector<uint8_t> to_wire(const ring_chunk& x);
std::vector<uint8_t> to_wire(const gradient_values& x);
std::vector<uint8_t> to_wire(const node_error& x);

/// Fills `x` from validated bytes, or leaves it alone and returns why they were refused.
caf::error from_wire(const std::vector<uint8_t>& bytes, step_order& x);
caf::error from_wire(const std::vector<uint8_t>& bytes, grad_share& x);
caf::error from_wire(const std::vector<uint8_t>& bytes, stage_report& x);
caf::error from_wire(const std::vector<uint8_t>& bytes, optimize_order& x);
caf::error from_wire(const std::vector<uint8_t>& bytes, link_sample& x);
caf::error from_wire(const std::vector<uint8_t>& bytes, node_join& x);
caf::error from_wire(const std::vector<uint8_t>& bytes, heartbeat& x);
caf::error from_wire(const std::vector<uint8_t>& bytes, pipe_request& x);
caf::error from_wire(const std::vector<uint8_t>& bytes, send_horizon& x);
caf::error from_wire(const std::vector<uint8_t>& bytes, pipe_arrival& x);
caf::error from_wire(const std::vector<uint8_t>& bytes, stage_snapshot& x);
caf::error from_wire(const std::vector<uint8_t>& bytes, deployment_request& x);
caf::error from_wire(const std::vector<uint8_t>& bytes, job_deployment& x);
caf::error from_wire(const std::vector<uint8_t>& bytes, device_rows& x);
caf::error from_wire(const std::vector<uint8_t>& bytes, device_output& x);
caf::error from_wire(const std::vector<uint8_t>& bytes, ring_chunk& x);
caf::error from_wire(const std::vector<uint8_t>& bytes, gradient_values& x);
caf::error from_wire(const std::vector<uint8_t>& bytes, node_error& x);

/// The default handler of every actor that receives messages from other nodes. A message
/// whose bytes `from_wire` refused reaches the actor empty; it is dropped without a reply
/// (CAF's default would answer the sender with an error, and that error kills the sender).
caf::result<caf::message> drop_unexpected(caf::scheduled_actor* self, caf::message_view& x);

/// Messages this process refused in `from_wire` so far.
int64_t dropped_wire_messages();

/// Why `x` cannot cross nodes (a tensor above Cap'n Proto's 512 MiB per field, or the
/// whole above what one CAF message between nodes carries), or empty when it can: asked
/// before sending one to another node, so the asker gets this reason instead of a timeout.
std::string too_large_to_send(const stage_snapshot& x);

/// A value `to_wire` cannot encode (too large for one message), logged once and returned
/// as the error of CAF's serializer: the message is not sent, nothing crashes.
caf::error unsendable(const std::exception& e);

/// The error of serializing a message that stays in its process, logged once.
caf::error stays_in_process(const char* name);

/// The body of the `inspect` of a struct that crosses nodes as Cap'n Proto bytes;
/// `handles` are the fields that stay CAF-serialized (actor handles).
template <class Inspector, class T, class... Handles>
typename Inspector::result_type inspect_as_wire(Inspector& f, T& x, const char* name,
                                                Handles&... handles) {
  std::vector<uint8_t> bytes;
  return f(caf::meta::type_name(name), caf::meta::save_callback([&]() -> caf::error {
             try {
               bytes = to_wire(x);
             } catch (const std::exception& e) {
               return unsendable(e);
             }
             return caf::none;
           }),
           bytes, caf::meta::load_callback([&]() -> caf::error { return from_wire(bytes, x); }),
           handles...);
}

/// The `inspect` of a struct that stays in its process (pointers into local buffers):
/// serializing or deserializing one is an error, so it can never cross a node by mistake.
template <class Inspector, class T>
typename Inspector::result_type inspect_in_process(Inspector& f, T&, const char* name) {
  const auto refuse = [name]() -> caf::error { return stays_in_process(name); };
  return f(caf::meta::type_name(name), caf::meta::save_callback(refuse),
           caf::meta::load_callback(refuse));
}

} // namespace deepcee::actors
