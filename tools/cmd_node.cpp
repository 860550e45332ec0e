// deepcee node JOB --name N: one node (process) of a multi-process job. The coordinator's
// node plans the job (or loads its plan file) once, and publishes a registry through CAF's
// middleman. Every other node (node_member.cpp) connects to it and asks it for the job's
// deployment. From it, the node spawns the stage actors of its devices and joins. The
// coordinator then wires the stages to each other, so activations and gradients go node to
// node. Then it runs the steps. Every failure (a node that never joins, a port in use, another
// cluster, a lost peer) ends every process non-zero with one line naming the node.
#include "actors/job/local_job.hpp"
#include "actors/job/node_deployment.hpp"
#include "actors/job/node_registry.hpp"
#include "actors/job/node_replanner.hpp"
#include "actors/protocol/type_ids.hpp"
#include "runtime/base/errors.hpp"
#include "runtime/cluster/cluster_fingerprint.hpp"
#include "runtime/io/job_config_toml.hpp"
#include "runtime/io/job_token.hpp"
#include "runtime/io/link_timeline_toml.hpp"
#include "runtime/io/metrics_writer.hpp"
#include "runtime/io/plan_json.hpp"
#include "runtime/plan/job_config.hpp"
#include "runtime/step/shaped_delivery.hpp"
#include "tools/adapt_orders.hpp"
#include "tools/commands.hpp"
#include "tools/job_setup.hpp"
#include "tools/job_steps.hpp"
#include "tools/job_watch.hpp"
#include "tools/node_process.hpp"
#include "tools/run_directory.hpp"
#include "tools/script_log.hpp"
#include "tools/step_loop.hpp"

#include <caf/actor_system.hpp>
#include <caf/io/middleman.hpp>
#include <caf/scoped_actor.hpp>
#include <caf/send.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace deepcee::tools {
namespace {

using namespace std::chrono_literals;

struct node_options {
  std::string job;
  std::string name;
  std::optional<int> steps; ///< the coordinator's node's value applies to every node
  std::optional<std::string> token_file;
  bool insecure = false; ///< no token: CAF on the public port, open to anyone who reaches it
  std::optional<std::string> out;
  std::optional<std::string> metrics, resume; ///< the coordinator's node reads them
  std::optional<std::string> inspect;         ///< the coordinator's node serves it
  std::optional<double> connect_timeout_s;
  int step_timeout_s = 60;
  int trace_steps = 3;               ///< written by the coordinator's node
  std::vector<std::string> adapt_to; ///< STEP:PLAN, the coordinator's node (adapt_orders.hpp)
  std::optional<double> search_s;    ///< the planner's time limit, the coordinator's node
};

/// The coordinator's node's job: what it resolved and what it deploys to the others.
struct node_setup {
  runtime::job_config job;
  runtime::plan plan;
  int me = 0;
  std::shared_ptr<actors::job_context> context; ///< laid out on the nodes
  actors::job_deployment deployment;
  std::optional<kernels::checkpoint_contents> resume;
  std::optional<inspect_address> inspect; ///< where `deepcee inspect` attaches
  runtime::snapshot_builder snapshots;
};

/// Plans (or loads the plan file) once for the whole job.
node_setup prepare_coordinator(runtime::job_config job, const node_options& o, int me) {
  auto r = resolve_job(std::move(job),
                       {o.steps, std::nullopt, std::nullopt, std::nullopt, o.search_s}, false);
  node_setup s{.snapshots = make_snapshot_builder(r.job, r.profile, r.plan, r.report)};
  s.inspect = inspect_address_of(o.inspect, r.job);
  s.job = std::move(r.job);
  s.me = me;
  s.plan = std::move(r.plan);
  const actors::run_mode mode{s.job.time, s.job.shape_links, s.job.adapt, s.job.heartbeat_timeout_s,
                              s.job.snapshot_every};
  s.context = actors::make_job_context(s.job.cluster, r.profile, s.plan, s.job.train, r.corpus,
                                       mode, s.job.script);
  s.deployment = actors::make_deployment(s.job.name, s.plan, s.job.train, mode);
  s.context->place_on_nodes(s.job.cluster);
  s.context->boot_id = runtime::read_boot_id();
  s.resume = read_resume_checkpoint(o.resume, o.job, s.job.time, s.plan.model);
  return s;
}

/// How the coordinator's node reads what `deepcee inject` sends against the job's cluster.
actors::script_parser injected_events_parser(const runtime::cluster& c) {
  return [c](const std::string& source, const std::string& text) {
    return runtime::parse_injection(source, text, c);
  };
}

/// Ends the job on every node: they watch the registry and exit with its reason.
class job_end {
public:
  job_end(caf::actor_system& sys, actors::node_registry_actor registry, std::string node)
      : self_(sys), registry_(std::move(registry)), node_(std::move(node)) {}

  /// Success (`error` empty), or the node's failure: the others end naming `error`, and so
  /// does this one (fail() throws).
  void finish(const std::string& error) {
    tell(error);
    if (!error.empty())
      fail(node_, error);
  }
  /// Tells the others why the job stops, without ending this node.
  void tell(const std::string& error) {
    self_->send(registry_, actors::stop_atom_v, error);
    std::this_thread::sleep_for(300ms); // lets the down messages leave before the sockets
  }
  /// Ctrl-C on this node: the others end with 130 too, naming `why`.
  void interrupted(const std::string& why) {
    self_->send(registry_, actors::stop_atom_v, actors::interrupt_atom_v, why);
    std::this_thread::sleep_for(300ms);
  }
  const actors::node_registry_actor& registry() const { return registry_; }

private:
  caf::scoped_actor self_;
  actors::node_registry_actor registry_;
  std::string node_;
};

/// Publishes the registry the other nodes ask for the job's deployment and join; `beats`
/// learns each node at its join.
actors::node_registry_actor publish_registry(caf::actor_system& sys, node_setup& s,
                                             const actors::local_part& local,
                                             const actors::heartbeat_actor& beats,
                                             node_network& net, actors::actor_guard& guard) {
  const auto& me = s.job.cluster.nodes[static_cast<size_t>(s.me)];
  std::vector<std::string> names;
  for (const auto& n : s.job.cluster.nodes)
    names.push_back(n.name);
  const auto timeout =
      std::chrono::milliseconds(static_cast<int64_t>(s.job.connect_timeout_s * 1e3));
  s.deployment.clock_s = s.context->real_now_s(); // the members' clocks follow this one
  s.deployment.boot_id = s.context->boot_id;      // exactly, on this host
  s.deployment.epoch_ns = s.context->steady_ns_at(0);
  auto registry = actors::spawn_node_registry(
      sys, s.deployment, runtime::cluster_fingerprint(s.job.cluster), names, s.context->layout,
      local, timeout, beats, injected_events_parser(s.job.cluster));
  guard.add(registry);
  const auto host = host_of(me);
  publish_on(sys, me, net, registry);
  std::fprintf(stderr, "node %s: coordinator at %s:%d, waiting up to %.1f s for the others\n",
               me.name.c_str(), host.c_str(), me.port, s.job.connect_timeout_s);
  return registry;
}

/// Waits until every node has joined, then wires every stage of the job, wherever it runs,
/// from here (actors/job_wiring.hpp). From then on a silent node fails the running step
/// (and every later one), naming it.
actors::wired_job wire_nodes(caf::actor_system& sys, const node_setup& s,
                             const actors::node_registry_actor& registry,
                             const actors::heartbeat_actor& beats, const node_options& o,
                             job_end& end, actors::actor_guard& guard) {
  caf::scoped_actor self{sys};
  actors::stage_wiring wiring;
  std::string error;
  self->request(registry, caf::infinite, actors::await_atom_v)
      .receive([&](actors::stage_wiring& w) { wiring = std::move(w); },
               [&](caf::error& e) { error = reason_text(sys, e); });
  if (!error.empty())
    end.finish(error);
  auto wired = actors::wire_job(sys, s.context, std::move(wiring),
                                std::chrono::seconds(o.step_timeout_s), guard);
  self->send(beats, actors::stop_atom_v, caf::actor_cast<caf::actor>(wired.coordinator));
  // From now on `deepcee inject` reaches the coordinator through the registry.
  self->send(registry, actors::wire_atom_v,
             caf::actor_cast<caf::strong_actor_ptr>(wired.coordinator));
  return wired;
}

/// Loads the checkpoint to resume from into the stages on every node. Bad input stops the
/// others and is this node's input error; any other failure ends the job.
void resume(job_steps& steps, node_setup& s, const node_options& o, job_end& end) {
  if (!s.resume)
    return;
  try {
    steps.restore(*s.resume, *o.resume);
  } catch (const runtime::input_error& e) {
    end.tell(e.what());
    throw;
  } catch (const std::exception& e) {
    end.finish(e.what());
  }
  s.resume.reset(); // the stages hold their copies
}

/// Plain lines (a node's output is a log): each step's loss, validation and checkpoints.
class node_view : public step_view {
public:
  /// `beats`: this node's heartbeat actor, which passes each step on to the other nodes
  /// (their progress line).
  /// `script`: the job's events, scripted and injected, reported with each step's row.
  node_view(runtime::time_mode time, int global_batch, int context, int total,
            actors::heartbeat_actor beats, script_log& script)
      : time_(time), global_batch_(global_batch), total_(total),
        beats_(std::move(beats)), clock_{std::string(runtime::to_string(time)),
                                         double(global_batch), double(context)},
        script_(script) {}

  /// The script's events of this step are reported with its row.
  runtime::metric_row row(const step_record& r, double elapsed_s) override {
    script_.step_done(r.step, r.end_s);
    return metrics_row(r, elapsed_s, clock_);
  }
  void step_done(const step_record& r, double) override {
    caf::anon_send(beats_, actors::progress_atom_v, int64_t{r.step}, int64_t{total_}, r.loss,
                   global_batch_ / std::max(r.seconds(), 1e-30), r.end_s);
    if (wall())
      std::printf("step %d loss %.6f | %.1f real samples/s\n", r.step, r.loss,
                  global_batch_ / std::max(r.seconds(), 1e-30));
    else
      std::printf("step %d loss %.6f\n", r.step, r.loss);
    std::fflush(stdout);
  }
  void validated(int step, double loss) override {
    std::printf("validation loss %.6f at step %d\n", loss, step);
    std::fflush(stdout);
  }
  void checkpointed(int step, const std::filesystem::path& file) override {
    std::printf("checkpoint at step %d: %s\n", step, file.string().c_str());
    std::fflush(stdout);
  }
  void finish() override {}

private:
  bool wall() const { return time_ == runtime::time_mode::wall; }

  runtime::time_mode time_;
  int global_batch_;
  int total_;
  actors::heartbeat_actor beats_;
  metrics_clock clock_;
  script_log& script_;
};

/// The closing lines: the final checkpoint and the run directory.
void print_closing(const run_files& files, int done, const std::filesystem::path& dir,
                   bool events) {
  if (files.weights())
    std::printf("checkpoint at step %d: %s\n", done, files.checkpoint().string().c_str());
  else
    std::printf("dry mode: no weights, no checkpoint\n");
  std::printf("wrote %s: %s, plan.json, trace.json%s\n", dir.string().c_str(),
              files.names().c_str(), events ? ", events.csv" : "");
}

int run_coordinator(caf::actor_system& sys, node_setup& s, const node_options& o,
                    const actors::local_part& local, node_network& net,
                    actors::actor_guard& guard) {
  const auto orders = read_adapt_orders(o.adapt_to, s.plan);
  const auto& me = s.job.cluster.nodes[static_cast<size_t>(s.me)];
  auto beats = start_heartbeat(sys, s.job, s.me, {}, {}, guard); // learns each node at its join
  job_end end(sys, publish_registry(sys, s, local, beats, net, guard), me.name);
  const auto wired = wire_nodes(sys, s, end.registry(), beats, o, end, guard);
  job_steps steps(sys, wired, std::chrono::seconds(2 * o.step_timeout_s), o.trace_steps);
  resume(steps, s, o, end);
  auto names = s.job.inspect_hosts;
  names.push_back(host_of(me));
  job_watch watch(std::move(s.snapshots), s.inspect, net.token().value_or(""), std::move(names),
                  net.inspect_tls());
  steps.watch(&watch);
  watch.started(steps.steps_done());
  apply_adapt_orders(sys, wired, orders, std::chrono::seconds(2 * o.step_timeout_s));

  const auto dir = make_run_directory(o.out, s.job.train.out, "node");
  runtime::save_plan(s.plan, dir / "plan.json");
  run_files files(dir, s.job.train, o.metrics, s.job.time != runtime::time_mode::dry);
  script_log events(dir, s.context->cluster->timeline(), s.job.cluster);
  events.on_event([&watch](int step, const auto& e) { watch.injected(step, e); });
  steps.log_script(&events);
  node_view view(s.job.time, s.plan.global_batch(), s.plan.model.context, files.steps(), beats,
                 events);
  interrupt_flag interrupted;
  loop_outcome done;
  try {
    done = run_steps(steps, files, view, interrupted);
  } catch (const step_failed& e) {
    end.finish(e.what());
  }
  steps.write_trace(dir / "trace.json", s.job.cluster, events.instants());
  print_closing(files, done.steps_done, dir, !events.empty());
  // No later step: the members that leave now are not lost.
  caf::anon_send(wired.coordinator, actors::stop_atom_v, std::string("the job ended"));
  if (interrupted.raised()) {
    end.interrupted("Ctrl-C after step " + std::to_string(done.steps_done) +
                    (files.weights() ? ", checkpoint saved" : ""));
    std::fprintf(stderr, "node %s: interrupted after step %d\n", me.name.c_str(), done.steps_done);
    return 130;
  }
  end.finish("");
  return 0;
}

/// Says how many messages from other nodes this node's actor system refused, however it ends.
struct dropped_note {
  std::string node;
  const actors::system_config& cfg;
  ~dropped_note() {
    if (const auto n = cfg.dropped_wire_messages(); n > 0)
      std::fprintf(stderr, "node %s: dropped %lld malformed message(s) from other nodes\n",
                   node.c_str(), static_cast<long long>(n));
  }
};

int run_node(const node_options& o, const runtime::token_environment& token_env) {
  auto job = runtime::load_job_config(o.job);
  if (o.connect_timeout_s)
    job.connect_timeout_s = *o.connect_timeout_s;
  const auto me = job.cluster.find_node(o.name);
  if (!me)
    runtime::fail_input(
        o.job, 0, "node '" + o.name + "' is not a node of cluster '" + job.cluster.name + "'");
  auto token = node_token(job, o.name, o.token_file, o.insecure, token_env);
  // Only the coordinator's node plans; the others run what it deploys.
  std::optional<node_setup> s;
  if (*me == job.coordinator_node)
    s = prepare_coordinator(std::move(job), o, *me);
  actors::system_config cfg;
  dropped_note note{o.name, cfg};
  configure_actors(cfg);
  cfg.load<caf::io::middleman>();
  // With a token, CAF may only use the connections made through the gates: an automatic
  // connection would dial the address a peer's middleman announces, its port on 127.0.0.1.
  cfg.set("middleman.enable-automatic-connections", !token.has_value());
  const auto& network_job = s ? s->job : job;
  // Outlives the actor system: its connections close after CAF's.
  node_network net(network_job, *me, std::move(token));
  caf::actor_system sys{cfg};
  actors::actor_guard guard{sys};
  if (!s)
    return run_member(sys, job, *me, net, guard);
  auto local = actors::spawn_local_part(sys, s->context, s->me, guard);
  local.replanner = actors::spawn_node_replanner(
      sys, s->job.cluster, s->job.cluster.nodes.at(static_cast<size_t>(s->me)).name, s->me,
      s->job.script, s->context->epoch);
  guard.add(local.replanner);
  return run_coordinator(sys, *s, o, local, net, guard);
}

} // namespace

command_action add_node_command(CLI::App& app, const process_environment& env) {
  auto o = std::make_shared<node_options>();
  CLI::App* cmd = app.add_subcommand("node", "Run one node (process) of a multi-process job");
  cmd->add_option("job", o->job, "Job file (TOML) naming the nodes")->required();
  cmd->add_option("--name", o->name, "This node's name in the job's cluster")->required();
  cmd->add_option("--steps", o->steps,
                  "Total optimizer steps (overrides the job; the coordinator's node's applies)");
  cmd->add_option("--out", o->out, "Run directory of the coordinator's node");
  cmd->add_option("--metrics", o->metrics, "csv or jsonl (overrides the job)")
      ->check(CLI::IsMember({"csv", "jsonl"}));
  cmd->add_option(
      "--resume", o->resume,
      "Continue from this checkpoint (read by the coordinator's node; others ignore it)");
  cmd->add_option("--token-file", o->token_file,
                  "File holding the job's token (else DEEPCEE_TOKEN_FILE or DEEPCEE_TOKEN)");
  cmd->add_flag("--insecure", o->insecure,
                "Run without a token: anyone who reaches a node's port can join or steer the job");
  cmd->add_option("--connect-timeout", o->connect_timeout_s,
                  "Seconds to wait for the other nodes (overrides the job)");
  cmd->add_option("--trace-steps", o->trace_steps,
                  "Steps the coordinator's node writes to its trace (from the first)")
      ->capture_default_str();
  cmd->add_option("--step-timeout", o->step_timeout_s, "Seconds a step may take in real time")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--inspect", o->inspect,
                  "Where `deepcee inspect` attaches to the coordinator's node: HOST:PORT or off");
  cmd->add_option("--adapt-to", o->adapt_to,
                  "STEP:PLAN: run PLAN from STEP on, through the adapter (the coordinator's "
                  "node; repeatable; see deepcee run)");
  cmd->add_option("--search-s", o->search_s,
                  "Seconds the planner may take on the coordinator's node (0: 10 up to 64 "
                  "devices, 30 beyond)");
  return [o, token_env = env.token] { return run_node(*o, token_env); };
}

} // namespace deepcee::tools
