#include "actors/protocol/type_ids.hpp"

#include "actors/protocol/errors.hpp"

namespace deepcee::actors {

void register_types(caf::actor_system_config& cfg) {
  cfg.add_message_types<caf::id_block::deepcee>();
  cfg.add_error_category(error_category, render_error);
}

system_config::system_config() {
  register_types(*this);
}

} // namespace deepcee::actors
