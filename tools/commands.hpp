#pragma once

#include "tools/environment.hpp"

#include <CLI/CLI.hpp>

#include <functional>

namespace deepcee::tools {

/// A subcommand's action: returns the process exit code (0 ok, 2 bad input, 1 failure).
using command_action = std::function<int()>;

/// Each subcommand adds its options to `app` and returns the action that runs it; `env` is
/// what main read from the process's environment.
command_action add_train_command(CLI::App& app, const process_environment& env);
command_action add_eval_command(CLI::App& app, const process_environment& env);
command_action add_run_command(CLI::App& app, const process_environment& env);
command_action add_plan_command(CLI::App& app, const process_environment& env);
command_action add_simulate_command(CLI::App& app, const process_environment& env);
command_action add_node_command(CLI::App& app, const process_environment& env);
command_action add_inspect_command(CLI::App& app, const process_environment& env);
command_action add_profile_command(CLI::App& app, const process_environment& env);
command_action add_inject_command(CLI::App& app, const process_environment& env);
command_action add_lab_command(CLI::App& app, const process_environment& env);

} // namespace deepcee::tools
