// The deepcee command: one subcommand per file, wired together here.
#include "runtime/base/errors.hpp"
#include "tools/commands.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdio>
#include <exception>
#include <map>
#include <string>

int main(int argc, char** argv) {
  CLI::App app{"deepcee: train one model across heterogeneous GPUs in many regions"};
  app.require_subcommand(1);
  std::string log_level = "info";
  app.add_option("--log-level", log_level, "trace|debug|info|warn|error|off")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "off"}));

  // The environment is read here, once; the commands get the values.
  const auto env = deepcee::tools::read_process_environment();
  std::map<CLI::App*, deepcee::tools::command_action> actions;
  auto add = [&](deepcee::tools::command_action (*make)(
                 CLI::App&, const deepcee::tools::process_environment&)) {
    size_t before = app.get_subcommands({}).size();
    auto action = make(app, env);
    actions[app.get_subcommands({})[before]] = std::move(action);
  };
  add(deepcee::tools::add_train_command);
  add(deepcee::tools::add_eval_command);
  add(deepcee::tools::add_run_command);
  add(deepcee::tools::add_plan_command);
  add(deepcee::tools::add_simulate_command);
  add(deepcee::tools::add_node_command);
  add(deepcee::tools::add_inspect_command);
  add(deepcee::tools::add_profile_command);
  add(deepcee::tools::add_inject_command);
  add(deepcee::tools::add_lab_command);

  // A word where the subcommand goes that names none: say so (CLI11 would only say that a
  // subcommand is required).
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--log-level") {
      ++i;
      continue;
    }
    if (arg.starts_with("-"))
      continue;
    const auto subs = app.get_subcommands({});
    if (std::none_of(subs.begin(), subs.end(),
                     [&](CLI::App* sub) { return sub->check_name(arg); })) {
      std::string known;
      for (const auto* sub : subs)
        known += (known.empty() ? "" : ", ") + sub->get_name();
      std::fprintf(stderr, "deepcee: unknown subcommand '%s' (known: %s)\n", arg.c_str(),
                   known.c_str());
      return 2;
    }
    break;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
    return code == 0 ? 0 : 2;
  }
  spdlog::set_level(spdlog::level::from_str(log_level));
  // Bad input is one line naming the file and exit code 2; anything else is a failure.
  for (auto& [sub, action] : actions) {
    if (!sub->parsed())
      continue;
    try {
      return action();
    } catch (const deepcee::runtime::input_error& e) {
      std::fprintf(stderr, "deepcee %s: %s\n", sub->get_name().c_str(), e.what());
      return 2;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "deepcee %s: failed: %s\n", sub->get_name().c_str(), e.what());
      return 1;
    }
  }
  return 2;
}
