#include "actors/protocol/errors.hpp"

#include <caf/actor_system.hpp>

#include <caf/make_message.hpp>
#include <caf/message.hpp>

#include <utility>

namespace deepcee::actors {

namespace {

/// CAF 0.17 reads code 0 as "no error" in every category, and ErrorCode starts at 0
/// (internal): the CAF code is the schema's plus one.
uint8_t caf_code(messages::error_code code) {
  return static_cast<uint8_t>(static_cast<uint8_t>(code) + 1);
}

} // namespace

caf::error make_error(messages::error_code code, std::string context) {
  return caf::error(caf_code(code), error_category, caf::make_message(std::move(context)));
}

std::optional<messages::error_code> code_of(const caf::error& e) {
  if (!e || e.category() != error_category || e.code() < caf_code(messages::error_code::internal) ||
      e.code() > caf_code(messages::error_code::timeout))
    return std::nullopt;
  return static_cast<messages::error_code>(e.code() - 1);
}

std::string render_error(uint8_t, caf::atom_value, const caf::message& context) {
  if (context.size() == 1 && context.match_element<std::string>(0))
    return context.get_as<std::string>(0);
  return "deepcee error without context"; // every make_error gives one: not reached
}

std::string reason_text(const caf::actor_system& sys, const caf::error& e) {
  const auto& ctx = e.context();
  if (ctx.size() == 1 && ctx.match_element<std::string>(0))
    return ctx.get_as<std::string>(0);
  return sys.render(e);
}

} // namespace deepcee::actors
