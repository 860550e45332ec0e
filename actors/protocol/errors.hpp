#pragma once

#include "messages/types.hpp"

#include <caf/atom.hpp>
#include <caf/error.hpp>
#include <caf/fwd.hpp>

#include <cstdint>
#include <optional>
#include <string>

/// Failures that cross actors: a caf::error of deepcee's own category whose code is the
/// schema's ErrorCode (messages::error_code) and whose context is one line naming where and
/// why (the failing stage, device or node and the cause). The line is what a user reads:
/// the category's renderer (registered by register_types, actors/type_ids.hpp) gives it back
/// as it is, so `sys.render(e)` prints the same text a string error printed before. CAF
/// 0.17 reads code 0 as "no error", so the CAF code is the schema's plus one (code_of
/// undoes it).
namespace deepcee::actors {

/// The category atom of deepcee's errors.
constexpr caf::atom_value error_category = caf::atom("deepcee");

/// A failure of kind `code`, described by `context` (one line).
caf::error make_error(messages::error_code code, std::string context);

/// The code of one of deepcee's errors; nothing for CAF's own (a timeout, a lost actor).
std::optional<messages::error_code> code_of(const caf::error& e);

/// The one line a failure says: the context of an error that carries a line of its own
/// (deepcee's, and CAF errors made with a single string), or CAF's rendering of its own.
std::string reason_text(const caf::actor_system& sys, const caf::error& e);

/// The renderer of the category: the context line alone.
std::string render_error(uint8_t code, caf::atom_value category, const caf::message& context);

} // namespace deepcee::actors
