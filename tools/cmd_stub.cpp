// Temporary until the train and eval commands land.
#include "tools/commands.hpp"
namespace deepcee::tools {
command_action add_train_command(CLI::App& app) {
  app.add_subcommand("train", "train on one device");
  return [] { return 1; };
}
command_action add_eval_command(CLI::App& app) {
  app.add_subcommand("eval", "validation loss of a checkpoint");
  return [] { return 1; };
}
} // namespace deepcee::tools
