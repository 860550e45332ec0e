#include "actors/protocol/wire_format.hpp"

#include "actors/protocol/errors.hpp"
#include "actors/protocol/type_ids.hpp"

#include <caf/actor_system.hpp>
#include <caf/message.hpp>
#include <caf/message_view.hpp>
#include <spdlog/spdlog.h>

namespace deepcee::actors {

caf::error refuse(caf::execution_unit* ctx, const std::string& why) {
  int64_t n = 0;
  if (ctx != nullptr)
    if (const auto* cfg = dynamic_cast<const system_config*>(&ctx->system().config()))
      n = cfg->count_dropped();
  spdlog::warn("dropped a malformed message from another node ({}); {} so far", why, n);
  return make_error(messages::error_code::malformed_message, why);
}

caf::result<caf::message> drop_unexpected(caf::scheduled_actor*, caf::message_view& x) {
  if (!x.content().empty()) // an empty one was refused by its loader, and logged there
    spdlog::warn("dropped a message of unexpected type ({} element(s))", x.content().size());
  return caf::message{};
}

int64_t dropped_wire_messages(const caf::actor_system& sys) {
  const auto* cfg = dynamic_cast<const system_config*>(&sys.config());
  return cfg ? cfg->dropped_wire_messages() : 0;
}

std::string too_large_to_send(const messages::stage_snapshot& x) {
  int64_t total = 0;
  for (const auto& p : x.params)
    for (const auto* t : {&p.value, &p.exp_avg, &p.exp_avg_sq}) {
      const auto bytes = static_cast<int64_t>(t->size()) * 4;
      total += bytes;
      if (bytes > messages::max_payload_bytes)
        return "parameter '" + p.name + "' has " + std::to_string(bytes) +
               " bytes, more than one Cap'n Proto message field holds (" +
               std::to_string(messages::max_payload_bytes) + "), so it cannot cross nodes";
    }
  if (total > messages::max_snapshot_bytes)
    return "the stage's parameters have " + std::to_string(total) +
           " bytes, more than one message between nodes carries (" +
           std::to_string(messages::max_snapshot_bytes) + ")";
  return {};
}

caf::error unsendable(const std::string& why) {
  spdlog::error("cannot send a message to another node: {}", why);
  return make_error(messages::error_code::bad_input, why);
}

caf::error stays_in_process(const char* name) {
  const std::string why = std::string("a ") + name + " never leaves its process";
  spdlog::error("cannot send a message to another node: {}", why);
  return make_error(messages::error_code::internal, why);
}

} // namespace deepcee::actors
