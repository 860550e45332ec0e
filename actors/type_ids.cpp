#include "actors/type_ids.hpp"

namespace deepcee::actors {

void register_types(caf::actor_system_config& cfg) {
  cfg.add_message_types<caf::id_block::deepcee>();
}

} // namespace deepcee::actors
