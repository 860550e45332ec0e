#pragma once

#include "messages/codec.hpp"
#include "messages/message_list.hpp"

#include <caf/error.hpp>
#include <caf/execution_unit.hpp>
#include <caf/fwd.hpp>
#include <caf/make_message.hpp>
#include <caf/message.hpp>
#include <caf/meta/load_callback.hpp>
#include <caf/meta/save_callback.hpp>
#include <caf/meta/type_name.hpp>
#include <caf/result.hpp>

#include <cstdint>
#include <exception>
#include <span>
#include <string>
#include <utility>
#include <vector>

/// Every message of the schema (messages/types.hpp) that crosses a node travels as the
/// bytes of its Cap'n Proto message and is validated by the codec (messages/codec.hpp) when
/// it is loaded: its CAF `inspect` (actors/protocol.hpp) writes the one byte vector that
/// `messages::encode` makes and, on load, reads it back with `messages::decode<T>`. In one
/// process CAF passes the structs without serializing them, so nothing is encoded there.
///
/// When a loader refuses the bytes, CAF 0.17's middleman (basp::remote_message_handler)
/// drops that one message: it never reaches an actor, so no actor dies, and the
/// connection goes on (each BASP message has its own payload). The loader logs the refusal
/// once through spdlog and counts it in the receiving actor system's system_config
/// (actors/type_ids.hpp), found through the deserializer's execution unit.
///
/// Actor handles (caf::strong_actor_ptr in stage_wiring and joining_node) are CAF's own
/// addressing, so they stay CAF-serialized beside the bytes; so do the bare replies
/// (int32_t, int64_t) and caf::error values.
namespace deepcee::actors {

/// The default handler of every actor that receives messages from other nodes. A message
/// whose bytes the codec refused reaches the actor empty; it is dropped without a reply
/// (CAF's default would answer the sender with an error, and that error kills the sender).
caf::result<caf::message> drop_unexpected(caf::scheduled_actor* self, caf::message_view& x);

/// Messages from other nodes that the loaders of `sys` refused so far.
int64_t dropped_wire_messages(const caf::actor_system& sys);

/// Why `x` cannot cross nodes (a tensor above Cap'n Proto's 512 MiB per field, or the
/// whole above what one CAF message between nodes carries), or empty when it can: asked
/// before sending one to another node, so the asker gets this reason instead of a timeout.
std::string too_large_to_send(const messages::stage_snapshot& x);

/// Any other message is checked by its encoder alone.
template <class T>
std::string too_large_to_send(const T&) {
  return {};
}

/// A value that cannot be encoded (too large for one message), logged once and returned
/// as the error of CAF's serializer: the message is not sent, nothing crashes.
caf::error unsendable(const std::string& why);

/// Bytes the codec refused: logged once, counted in the system of `ctx` (when there is
/// one), and returned as the error of CAF's deserializer.
caf::error refuse(caf::execution_unit* ctx, const std::string& why);

/// The error of serializing a message that stays in its process, logged once.
caf::error stays_in_process(const char* name);

/// The body of the `inspect` of a message of the schema: its Cap'n Proto bytes, made by
/// the one codec and validated by it on load (a refused message leaves `x` alone).
template <class Inspector, class T>
typename Inspector::result_type inspect_as_wire(Inspector& f, T& x, const char* name) {
  std::vector<uint8_t> bytes;
  return f(caf::meta::type_name(name), caf::meta::save_callback([&]() -> caf::error {
             if (auto why = too_large_to_send(x); !why.empty()) // before copying anything
               return unsendable(std::string(name) + ": " + why);
             try {
               bytes = messages::encode(x);
             } catch (const std::exception& e) {
               return unsendable(e.what());
             }
             return caf::none;
           }),
           bytes, caf::meta::load_callback([&]() -> caf::error {
             auto r = messages::decode<T>(std::span<const uint8_t>(bytes));
             if (!r) {
               caf::execution_unit* ctx = nullptr;
               if constexpr (Inspector::writes_state)
                 ctx = f.context();
               return refuse(ctx, r.error().what);
             }
             x = std::move(*r);
             return caf::none;
           }));
}

/// The `inspect` of a struct that stays in its process (pointers into local buffers):
/// serializing or deserializing one is an error, so it can never cross a node by mistake.
template <class Inspector, class T>
typename Inspector::result_type inspect_in_process(Inspector& f, T&, const char* name) {
  const auto refuse_both = [name]() -> caf::error { return stays_in_process(name); };
  return f(caf::meta::type_name(name), caf::meta::save_callback(refuse_both),
           caf::meta::load_callback(refuse_both));
}

} // namespace deepcee::actors

/// The `inspect` of every message of the schema (messages/message_list.hpp): found by ADL
/// beside its struct, it carries the message as its Cap'n Proto bytes.
namespace deepcee::messages {

#define DEEPCEE_INSPECT_AS_WIRE(type, kind, schema)                                                \
  template <class Inspector>                                                                       \
  typename Inspector::result_type inspect(Inspector& f, type& x) {                                 \
    return actors::inspect_as_wire(f, x, #type);                                                   \
  }
DEEPCEE_WIRE_MESSAGES(DEEPCEE_INSPECT_AS_WIRE)
#undef DEEPCEE_INSPECT_AS_WIRE

} // namespace deepcee::messages
