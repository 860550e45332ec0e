// deepcee inject ADDR SCRIPT | --event '...': sends fluctuation and fault events to a running
// job's coordinator node (`deepcee node`) and returns once they are in force.
//
// The client reaches the node through its gate with the job's token, as the other nodes do.
// It speaks only to the node's registry. The registry reads the events against the job's
// cluster and passes them to the coordinator. The coordinator answers after the step
// boundary at which they took effect. An event whose time or step has passed, or that gives
// neither, takes effect at the next boundary (runtime::take_injected).
//
// A job with TLS certificates ([security] ca) is reached as a node reaches it. The client
// presents the certificate of node --name from the job's file. That is node_tls, the rule
// of `deepcee node` and `deepcee profile --name`. It checks that the node at ADDR holds the
// coordinator's node's certificate.
#include "actors/job/node_registry.hpp"
#include "actors/protocol/errors.hpp"
#include "actors/protocol/type_ids.hpp"
#include "runtime/base/errors.hpp"
#include "runtime/io/job_config_toml.hpp"
#include "runtime/io/job_token.hpp"
#include "runtime/io/link_timeline_toml.hpp"
#include "tools/commands.hpp"
#include "tools/job_steps.hpp"
#include "tools/node_network.hpp"
#include "transport/gate.hpp"
#include "transport/tls_identity.hpp"

#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/io/middleman.hpp>
#include <caf/scoped_actor.hpp>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace deepcee::tools {
namespace {

using namespace std::chrono_literals;

struct inject_options {
  std::string addr;
  std::optional<std::string> script;
  std::vector<std::string> events;
  std::optional<std::string> token_file;
  std::optional<std::string> job;  ///< the job's file: events checked here, its token_file
  std::optional<std::string> name; ///< the node whose certificate a TLS job's gate is shown
  bool insecure = false;
  double connect_timeout_s = 3;
  double timeout_s = 120;
};

/// HOST:PORT, or an input_error naming it.
transport::endpoint parse_addr(const std::string& addr) {
  const auto colon = addr.rfind(':');
  const auto bad = [&](const std::string& why) {
    throw runtime::input_error(addr + ": " + why + " (give HOST:PORT, the coordinator's node's)");
  };
  if (colon == std::string::npos || colon == 0)
    bad("no host and port");
  const auto port_text = addr.substr(colon + 1);
  if (port_text.empty() || port_text.size() > 5 ||
      port_text.find_first_not_of("0123456789") != std::string::npos)
    bad("'" + port_text + "' is not a port");
  const int port = std::stoi(port_text);
  if (port < 1 || port > 65535)
    bad("port " + port_text + " is outside 1..65535");
  return {addr.substr(0, colon), static_cast<uint16_t>(port)};
}

/// What goes to the registry: (source, text) of the script, or the --event lines.
std::pair<std::string, std::string> request_of(const inject_options& o) {
  if (o.script.has_value() == !o.events.empty())
    throw runtime::input_error("give a SCRIPT or --event, one of them");
  if (o.script) {
    std::ifstream in(*o.script);
    if (!in)
      runtime::fail_input(*o.script, 0, "cannot be read");
    std::ostringstream text;
    text << in.rdbuf();
    return {*o.script, text.str()};
  }
  std::string lines;
  for (const auto& e : o.events) {
    if (e.find('\n') != std::string::npos)
      throw runtime::input_error("--event: one line each ('" + e.substr(0, e.find('\n')) + "...')");
    lines += e + "\n";
  }
  return {"--event", lines};
}

/// The job's registry at `at`, through `tunnel` when the job has a token. Gives up after
/// `timeout` (nothing listening) or at once when the node's gate refused the token or the
/// certificates (`tls`: the tunnel speaks TLS; without, a TLS job's gate refuses it too).
actors::node_registry_actor connect(caf::actor_system& sys, const std::string& addr,
                                    const transport::endpoint& at, const transport::tunnel* tunnel,
                                    double timeout_s, bool tls) {
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::milliseconds(static_cast<int64_t>(timeout_s * 1e3));
  const std::string host = tunnel ? "127.0.0.1" : at.host;
  const uint16_t port = tunnel ? tunnel->local_port() : at.port;
  while (true) {
    if (auto r = sys.middleman().remote_actor<actors::node_registry_actor>(host, port))
      return *r;
    if (tunnel && !tunnel->refusal().empty()) {
      // A TLS job's gate closes a client without a certificate at its first bytes.
      const auto why = tunnel->refusal();
      const bool token = why.find("the job's token") != std::string::npos;
      throw std::runtime_error(why + (tls || token ? ""
                                                   : " (a job with TLS certificates, [security] "
                                                     "ca, needs --job JOB --name NODE)"));
    }
    if (std::chrono::steady_clock::now() > deadline)
      throw std::runtime_error(addr + ": no job's coordinator node answers there");
    std::this_thread::sleep_for(100ms);
  }
}

struct inject_answer {
  std::optional<int64_t> step;
  caf::error refusal;
  std::string gone; ///< the node went away before it answered
};

/// Asks the registry and waits for its answer, its end or `timeout`: a blocking request
/// alone would wait out the whole timeout when the node goes away meanwhile.
inject_answer ask(caf::actor_system& sys, const actors::node_registry_actor& registry,
                  const std::pair<std::string, std::string>& request, double timeout_s) {
  caf::scoped_actor self{sys};
  auto waiter = caf::actor_cast<caf::actor>(self);
  const auto timeout = std::chrono::milliseconds(static_cast<int64_t>(timeout_s * 1e3));
  sys.spawn([waiter, registry, request, timeout](caf::event_based_actor* a) {
    a->monitor(registry);
    a->set_down_handler([a, waiter](caf::down_msg& d) {
      a->send(waiter, actors::stop_atom_v, a->system().render(d.reason));
      a->quit();
    });
    a->request(registry, timeout, actors::inject_atom_v, request.first, request.second)
        .then(
            [a, waiter](int64_t step) {
              a->send(waiter, step);
              a->quit();
            },
            [a, waiter](caf::error& e) {
              a->send(waiter, std::move(e));
              a->quit();
            });
  });
  inject_answer out;
  self->receive([&](int64_t step) { out.step = step; },
                [&](caf::error& e) { out.refusal = std::move(e); },
                [&](actors::stop_atom, std::string& why) { out.gone = std::move(why); });
  return out;
}

int run_inject(const inject_options& o, const runtime::token_environment& token_env) {
  const auto at = parse_addr(o.addr);
  const auto request = request_of(o);
  std::optional<std::filesystem::path> job_token_file;
  std::shared_ptr<const transport::tls_context> tls;
  std::string coordinator = "of the job"; // for the tunnel's refusal line
  if (o.name && !o.job)
    throw runtime::input_error("--name " + *o.name + ": give the job's file too (--job JOB)");
  if (o.job) {
    // Read as the coordinator's node will read them: bad events never leave this process.
    const auto job = runtime::load_job_config(*o.job);
    runtime::parse_injection(request.first, request.second, job.cluster);
    job_token_file = job.token_file;
    const auto& nodes = job.cluster.nodes;
    coordinator = nodes[size_t(job.coordinator_node)].name;
    if (job.tls) {
      if (!o.name)
        runtime::fail_input(job.source, 0,
                            "the job speaks TLS ([security] ca): give --name NODE, the node of "
                            "the job whose certificate and key this host holds");
      int me = -1;
      for (size_t n = 0; n < nodes.size(); ++n)
        if (nodes[n].name == *o.name)
          me = static_cast<int>(n);
      if (me < 0)
        runtime::fail_input(job.source, 0, "--name " + *o.name + ": no node of the job");
      tls = node_tls(job, me, o.insecure);
    }
  }
  auto token =
      o.insecure ? std::nullopt : runtime::find_job_token(o.token_file, job_token_file, token_env);
  if (!token && !o.insecure)
    throw runtime::input_error("the job's token is needed: --token-file FILE (or the "
                               "environment's DEEPCEE_TOKEN_FILE or DEEPCEE_TOKEN), or "
                               "--insecure for a job that runs without one");
  actors::system_config cfg;
  configure_actors(cfg);
  cfg.load<caf::io::middleman>();
  cfg.set("middleman.enable-automatic-connections", false);
  std::unique_ptr<transport::tunnel> tunnel;
  if (token) {
    transport::gate_settings s;
    s.token = *token;
    s.tls = tls;
    tunnel = std::make_unique<transport::tunnel>(std::move(s), coordinator, at);
  }
  caf::actor_system sys{cfg};
  const auto registry = connect(sys, o.addr, at, tunnel.get(), o.connect_timeout_s, tls != nullptr);
  const auto answer = ask(sys, registry, request, o.timeout_s);
  if (answer.step) {
    std::printf("injected into the job at %s: in force from step %lld\n", o.addr.c_str(),
                static_cast<long long>(*answer.step));
    return 0;
  }
  if (!answer.gone.empty())
    throw std::runtime_error(o.addr + ": the node went away before the events were in force (" +
                             answer.gone + ")");
  const auto why = actors::reason_text(sys, answer.refusal);
  if (actors::code_of(answer.refusal) == messages::error_code::bad_input)
    throw runtime::input_error(why); // the script's FILE:LINE, or why the job takes none now
  throw std::runtime_error(o.addr + ": " + why);
}

} // namespace

command_action add_inject_command(CLI::App& app, const process_environment& env) {
  auto o = std::make_shared<inject_options>();
  CLI::App* cmd = app.add_subcommand(
      "inject", "Send fluctuation and fault events to a running job (`deepcee node`'s "
                "coordinator) and return once they are in force");
  cmd->add_option("addr", o->addr, "HOST:PORT of the job's coordinator node")->required();
  cmd->add_option("script", o->script,
                  "Events (TOML, the syntax of [inject] script; `at` and `step` optional)");
  cmd->add_option("--event", o->events,
                  "One event instead of a script, e.g. 'change = { between = [\"cloud\", "
                  "\"edge\"], bandwidth_scale = 0.1 }' (repeatable)");
  cmd->add_option("--token-file", o->token_file,
                  "File holding the job's token (else DEEPCEE_TOKEN_FILE or DEEPCEE_TOKEN)");
  cmd->add_option("--job", o->job,
                  "The job's file: the events are checked against its cluster before anything "
                  "is sent, and its [security] token_file is used");
  cmd->add_option("--name", o->name,
                  "With --job of a job with TLS certificates ([security] ca): the node of the "
                  "job whose certificate and key to present, as `deepcee node --name` does");
  cmd->add_flag("--insecure", o->insecure,
                "The job runs without a token (deepcee node --insecure)");
  cmd->add_option("--connect-timeout", o->connect_timeout_s, "Seconds to try reaching the node")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_option("--timeout", o->timeout_s,
                  "Seconds to wait until the events are in force (the next step boundary)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  return [o, token_env = env.token] { return run_inject(*o, token_env); };
}

} // namespace deepcee::tools
