// deepcee node JOB --name N: one node (process) of a multi-process job. The coordinator's
// node publishes a registry through CAF's middleman; the others connect to it, spawn the
// stage actors of their devices and join; then the coordinator wires the stages to each
// other (activations and gradients go node to node) and runs the steps. Every failure
// (a node that never joins, a port in use, a lost peer) ends every process non-zero with
// one line naming the node.
#include "actors/adapter_actor.hpp"
#include "actors/checkpoint_transfer.hpp"
#include "actors/coordinator.hpp"
#include "actors/heartbeat_actor.hpp"
#include "actors/local_job.hpp"
#include "actors/node_registry.hpp"
#include "actors/pipe_actor.hpp"
#include "actors/stage_actor.hpp"
#include "actors/type_ids.hpp"
#include "runtime/errors.hpp"
#include "runtime/job_config.hpp"
#include "runtime/metrics_writer.hpp"
#include "runtime/planner.hpp"
#include "runtime/train_config_toml.hpp"
#include "tools/commands.hpp"
#include "tools/job_checkpoint.hpp"
#include "tools/job_setup.hpp"
#include "tools/run_directory.hpp"

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/exit_reason.hpp>
#include <caf/io/middleman.hpp>
#include <caf/scoped_actor.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <optional>
#include <stdexcept>
#include <thread>

namespace deepcee::tools {
namespace {

using namespace std::chrono_literals;

struct node_options {
  std::string job;
  std::string name;
  std::optional<int> steps;
  std::optional<std::string> out;
  std::optional<std::string> metrics, resume; ///< the coordinator's node reads them
  std::optional<double> connect_timeout_s;
  int step_timeout_s = 60;
};

/// The reason an actor gave, without CAF's error(...) wrapping when it is our own text.
std::string reason_text(caf::actor_system& sys, const caf::error& e) {
  const auto& ctx = e.context();
  if (ctx.size() == 1 && ctx.match_element<std::string>(0))
    return ctx.get_as<std::string>(0);
  return sys.render(e);
}

/// Ends the local actors however the node leaves, so the actor system's destructor (which
/// waits for every actor) cannot hang.
struct actor_guard {
  caf::actor_system& sys;
  std::vector<caf::strong_actor_ptr> actors;
  ~actor_guard() {
    caf::scoped_actor self{sys};
    for (auto& a : actors)
      self->send_exit(caf::actor_cast<caf::actor>(a), caf::exit_reason::user_shutdown);
  }
};

/// What every node must have read alike: a node started with another file is refused.
std::string fingerprint(const runtime::plan& plan, const runtime::train_config& t) {
  const auto text = runtime::plan_to_json(plan) + "|" + std::to_string(t.seed) + "|" +
                    std::to_string(t.steps) + "|" + std::to_string(t.batch) + "|" +
                    t.data.path.string();
  char buf[32];
  std::snprintf(buf, sizeof buf, "%016zx", std::hash<std::string>{}(text));
  return buf;
}

struct node_setup {
  runtime::job_config job;
  runtime::plan plan;
  int me = 0;
  std::vector<int> owner; ///< flat stage -> node
  std::shared_ptr<actors::job_context> context;
  std::optional<kernels::checkpoint_contents> resume; ///< the coordinator's node only
};

node_setup prepare(const node_options& o) {
  auto r = resolve_job(o.job, {o.steps, std::nullopt, std::nullopt}, false);
  node_setup s;
  s.job = std::move(r.job);
  if (o.connect_timeout_s)
    s.job.connect_timeout_s = *o.connect_timeout_s;
  const auto me = s.job.cluster.find_node(o.name);
  if (!me)
    runtime::fail_input(
        o.job, 0, "node '" + o.name + "' is not a node of cluster '" + s.job.cluster.name + "'");
  s.me = *me;
  s.plan = std::move(r.plan);
  s.owner = actors::stage_owners(s.job.cluster, s.plan);
  s.context = actors::make_job_context(s.job.cluster, r.profile, s.plan, s.job.train, r.corpus,
                                       {s.job.time, s.job.shape_links});
  if (o.resume && s.job.time == runtime::time_mode::dry)
    runtime::fail_input(o.job, 0,
                        "--resume: a dry-mode job has no weights to load a checkpoint into");
  if (o.resume && s.me == s.job.coordinator_node)
    s.resume = read_resume_checkpoint(*o.resume, s.plan.model);
  return s;
}

std::string host_of(const runtime::node& n) {
  return n.host.empty() ? "127.0.0.1" : n.host;
}

[[noreturn]] void fail(const std::string& node, const std::string& what) {
  throw std::runtime_error("node " + node + ": " + what);
}

std::chrono::milliseconds millis(double seconds) {
  return std::chrono::milliseconds(std::llround(seconds * 1e3));
}

/// This node's heartbeat actor (actors/heartbeat_actor.hpp): `expect` names the peers it
/// must hear from from now on; `notify` is told (stop_atom, reason) when one falls silent.
actors::heartbeat_actor start_heartbeat(caf::actor_system& sys, const node_setup& s,
                                        std::vector<std::string> expect, caf::actor notify,
                                        actor_guard& guard) {
  auto beats = actors::spawn_heartbeat(
      sys, s.job.cluster.nodes[static_cast<size_t>(s.me)].name, millis(s.job.heartbeat_interval_s),
      millis(s.job.heartbeat_timeout_s), std::move(expect), std::move(notify));
  guard.actors.push_back(caf::actor_cast<caf::strong_actor_ptr>(beats));
  return beats;
}

int run_coordinator(caf::actor_system& sys, node_setup& s, const node_options& o,
                    const std::vector<actors::stage_actor>& local, actor_guard& guard) {
  const auto& me = s.job.cluster.nodes[static_cast<size_t>(s.me)];
  std::vector<std::string> names;
  for (const auto& n : s.job.cluster.nodes)
    names.push_back(n.name);
  const auto timeout =
      std::chrono::milliseconds(static_cast<int64_t>(s.job.connect_timeout_s * 1e3));
  auto beats = start_heartbeat(sys, s, {}, {}, guard); // learns each node at its join
  auto registry = actors::spawn_node_registry(sys, fingerprint(s.plan, s.job.train), names, s.owner,
                                              s.me, local, timeout, beats);
  guard.actors.push_back(caf::actor_cast<caf::strong_actor_ptr>(registry));
  const auto host = host_of(me);
  if (auto port =
          sys.middleman().publish(registry, static_cast<uint16_t>(me.port), host.c_str(), true);
      !port)
    fail(me.name, "port " + std::to_string(me.port) + " on " + host + " is in use or unusable (" +
                      sys.render(port.error()) + ")");
  std::fprintf(stderr, "node %s: coordinator at %s:%d, waiting up to %.1f s for the others\n",
               me.name.c_str(), host.c_str(), me.port, s.job.connect_timeout_s);
  caf::scoped_actor self{sys};
  // Ends the job on every node: they watch the registry and exit with its reason.
  auto finish = [&](const std::string& error) {
    self->send(registry, actors::stop_atom_v, error);
    std::this_thread::sleep_for(300ms); // lets the down messages leave before the sockets
    if (!error.empty())
      fail(me.name, error);
  };
  actors::stage_wiring wiring;
  std::string error;
  self->request(registry, caf::infinite, actors::await_atom_v)
      .receive([&](actors::stage_wiring& w) { wiring = std::move(w); },
               [&](caf::error& e) { error = reason_text(sys, e); });
  if (!error.empty())
    finish(error);
  std::vector<actors::stage_actor> stages;
  std::vector<std::string> stage_nodes;
  for (size_t k = 0; k < wiring.stages.size(); ++k) {
    stages.push_back(caf::actor_cast<actors::stage_actor>(wiring.stages[k]));
    stage_nodes.push_back(names[static_cast<size_t>(s.owner[k])]);
  }
  auto adapter = actors::spawn_adapter(sys);
  auto coordinator = actors::spawn_coordinator(sys, s.context, stages, stage_nodes,
                                               std::chrono::seconds(o.step_timeout_s));
  guard.actors.push_back(caf::actor_cast<caf::strong_actor_ptr>(adapter));
  guard.actors.push_back(caf::actor_cast<caf::strong_actor_ptr>(coordinator));
  wiring.coordinator = caf::actor_cast<caf::strong_actor_ptr>(coordinator);
  wiring.adapter = caf::actor_cast<caf::strong_actor_ptr>(adapter);
  // Shared links' pipes live here; stages on every node reach them through the wiring.
  wiring.pipes = actors::spawn_pipes(sys, s.context, stages, coordinator, adapter);
  for (const auto& pipe : wiring.pipes)
    guard.actors.push_back(pipe);
  for (auto& stage : stages)
    self->send(stage, wiring);
  // A silent node fails the running step (and every later one), naming it.
  self->send(beats, actors::stop_atom_v, caf::actor_cast<caf::actor>(coordinator));

  const auto wait = std::chrono::seconds(2 * o.step_timeout_s);
  int done = 0;
  if (s.resume) {
    try {
      actors::restore_stages(sys, *s.context, stages, s.resume->params, s.resume->info.step,
                             *o.resume, wait);
    } catch (const runtime::input_error& e) {
      self->send(registry, actors::stop_atom_v, std::string(e.what()));
      std::this_thread::sleep_for(300ms);
      throw;
    } catch (const std::exception& e) {
      finish(e.what());
    }
    done = s.resume->info.step;
    s.resume.reset(); // the stages hold their copies
  }
  const auto dir = make_run_directory(o.out, s.job.train.out, "node");
  runtime::save_plan(s.plan, dir / "plan.json");
  const bool dry = s.job.time == runtime::time_mode::dry;
  job_files files(dir, s.job.train, o.metrics, !dry);
  const auto gather = [&] { return actors::gather_parameters(sys, *s.context, stages, wait); };
  interrupt_flag interrupted;
  const auto start = std::chrono::steady_clock::now();
  while (done < s.job.train.steps && error.empty() && !interrupted.raised()) {
    const int k = done + 1;
    self->request(coordinator, wait, actors::step_atom_v, static_cast<int64_t>(k))
        .receive(
            [&](actors::step_result& r) {
              const bool wall = s.job.time == runtime::time_mode::wall;
              files.metrics().write(
                  {{"step", int64_t{r.step}},
                   {"loss", r.loss},
                   {"lr", r.lr},
                   {"grad_norm", r.grad_norm},
                   {wall ? "wall_step_s" : "virtual_step_s", r.end_s - r.start_s}});
              if (wall)
                std::printf("step %d loss %.6f | %.1f real samples/s\n", k, r.loss,
                            s.plan.global_batch() / std::max(r.end_s - r.start_s, 1e-30));
              else
                std::printf("step %d loss %.6f\n", k, r.loss);
              std::fflush(stdout);
              done = k;
            },
            [&](caf::error& e) {
              error = "step " + std::to_string(k) + ": " + reason_text(sys, e);
            });
    if (done != k)
      continue;
    try {
      const double elapsed =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (const auto loss = files.after_step(k, gather, *s.context->corpus, elapsed))
        std::printf("validation loss %.6f at step %d\n", *loss, k);
      if (files.saved(k))
        std::printf("checkpoint at step %d: %s\n", k, files.checkpoint().string().c_str());
      std::fflush(stdout);
    } catch (const std::exception& e) {
      error = "step " + std::to_string(k) + ": " + e.what();
    }
  }
  // A failed step leaves the stages mid-step: the last checkpoint stays as it is.
  if (!error.empty())
    finish(error);
  if (files.weights()) {
    if (!files.saved(done))
      files.save(gather(), done);
    std::printf("checkpoint at step %d: %s\n", done, files.checkpoint().string().c_str());
  } else {
    std::printf("dry mode: no weights, no checkpoint\n");
  }
  std::printf("wrote %s: %s, plan.json\n", dir.string().c_str(), files.names().c_str());
  if (interrupted.raised()) { // the other nodes end non-zero, naming the reason
    self->send(registry, actors::stop_atom_v,
               "interrupted (Ctrl-C) after step " + std::to_string(done) +
                   (files.weights() ? ", checkpoint saved" : ""));
    std::this_thread::sleep_for(300ms);
    std::fprintf(stderr, "node %s: interrupted after step %d\n", me.name.c_str(), done);
    return 130;
  }
  finish("");
  return 0;
}

/// The join's answer, or the registry's end, whichever comes first: a blocking request
/// would wait out its whole timeout when the coordinator's node ends the job meanwhile
/// (another node failed), because a lost proxy does not answer pending requests.
std::string join_registry(caf::actor_system& sys, caf::scoped_actor& self,
                          const actors::node_registry_actor& registry, actors::node_join join) {
  auto waiter = caf::actor_cast<caf::actor>(self);
  sys.spawn([waiter, registry, join](caf::event_based_actor* a) {
    a->monitor(registry);
    a->set_down_handler([a, waiter](caf::down_msg&) {
      a->send(waiter, std::string("it ended the job before this node joined"));
      a->quit();
    });
    a->request(registry, caf::infinite, join)
        .then(
            [a, waiter](int32_t) {
              a->send(waiter, std::string());
              a->quit();
            },
            [a, waiter](caf::error& e) {
              a->send(waiter, e == caf::sec::request_receiver_down
                                  ? std::string("it ended the job before this node joined")
                                  : reason_text(a->system(), e));
              a->quit();
            });
  });
  std::string error;
  self->receive([&](std::string& e) { error = std::move(e); });
  return error;
}

int run_member(caf::actor_system& sys, node_setup& s, const std::vector<actors::stage_actor>& local,
               actor_guard& guard) {
  const auto& me = s.job.cluster.nodes[static_cast<size_t>(s.me)];
  const auto& boss = s.job.cluster.nodes[static_cast<size_t>(s.job.coordinator_node)];
  // Its own port, so that its peers connect to it directly (automatic connections).
  // SO_REUSEADDR lets a restarted job bind past TIME_WAIT; a live listener still refuses.
  const auto host = host_of(me);
  if (auto port = sys.middleman().open(static_cast<uint16_t>(me.port), host.c_str(), true); !port)
    fail(me.name, "port " + std::to_string(me.port) + " on " + host + " is in use or unusable (" +
                      sys.render(port.error()) + ")");
  const auto deadline =
      std::chrono::steady_clock::now() +
      std::chrono::milliseconds(static_cast<int64_t>(s.job.connect_timeout_s * 1e3));
  std::optional<actors::node_registry_actor> registry;
  while (!registry) {
    if (auto r = sys.middleman().remote_actor<actors::node_registry_actor>(
            host_of(boss), static_cast<uint16_t>(boss.port)))
      registry = *r;
    else if (std::chrono::steady_clock::now() > deadline)
      fail(me.name, "could not reach the coordinator's node " + boss.name + " at " + host_of(boss) +
                        ":" + std::to_string(boss.port) + " within " +
                        std::to_string(s.job.connect_timeout_s).substr(0, 4) + " s");
    else
      std::this_thread::sleep_for(100ms);
  }
  actors::node_join join;
  join.node = me.name;
  join.job = fingerprint(s.plan, s.job.train);
  size_t next = 0;
  for (size_t k = 0; k < s.owner.size(); ++k)
    if (s.owner[k] == s.me) {
      join.stages.push_back(static_cast<int32_t>(k));
      join.handles.push_back(caf::actor_cast<caf::strong_actor_ptr>(local[next++]));
    }
  caf::scoped_actor self{sys};
  self->monitor(*registry);
  // Silence of the coordinator's node (hung, its connection still open) ends this node.
  join.heartbeat = caf::actor_cast<caf::strong_actor_ptr>(
      start_heartbeat(sys, s, {boss.name}, caf::actor_cast<caf::actor>(self), guard));
  const auto error = join_registry(sys, self, *registry, join);
  if (!error.empty())
    fail(me.name, "refused by the coordinator's node " + boss.name + ": " + error);
  std::fprintf(stderr, "node %s: joined %s at %s:%d with %zu stage(s)\n", me.name.c_str(),
               boss.name.c_str(), host_of(boss).c_str(), boss.port, join.stages.size());
  caf::error reason;
  std::string silent;
  bool done = false;
  while (!done)
    self->receive(
        [&](caf::down_msg& d) {
          reason = d.reason;
          done = true;
        },
        [&](actors::stop_atom, std::string& why) {
          silent = std::move(why);
          done = true;
        });
  if (!silent.empty())
    fail(me.name, silent);
  if (reason && reason != caf::exit_reason::normal) {
    if (reason == caf::exit_reason::remote_link_unreachable)
      fail(me.name, "lost the coordinator's node " + boss.name);
    fail(me.name, "job stopped by " + boss.name + ": " + reason_text(sys, reason));
  }
  std::fprintf(stderr, "node %s: job done\n", me.name.c_str());
  return 0;
}

/// Says how many messages from other nodes this process refused, however it ends.
struct dropped_note {
  std::string node;
  ~dropped_note() {
    if (const auto n = actors::dropped_wire_messages(); n > 0)
      std::fprintf(stderr, "node %s: dropped %lld malformed message(s) from other nodes\n",
                   node.c_str(), static_cast<long long>(n));
  }
};

int run_node(const node_options& o) {
  auto s = prepare(o);
  dropped_note note{o.name};
  caf::actor_system_config cfg;
  actors::register_types(cfg);
  cfg.load<caf::io::middleman>();
  cfg.set("middleman.enable-automatic-connections", true);
  cfg.set("scheduler.max-threads", 2);
  cfg.set("logger.console", caf::atom("none"));
  caf::actor_system sys{cfg};
  actor_guard guard{sys, {}};
  std::vector<actors::stage_actor> local;
  for (size_t p = 0, k = 0; p < s.plan.pipelines.size(); ++p)
    for (size_t t = 0; t < s.plan.pipelines[p].stages.size(); ++t, ++k)
      if (s.owner[k] == s.me) {
        local.push_back(
            actors::spawn_stage(sys, s.context, static_cast<int>(p), static_cast<int>(t)));
        guard.actors.push_back(caf::actor_cast<caf::strong_actor_ptr>(local.back()));
      }
  if (s.me == s.job.coordinator_node)
    return run_coordinator(sys, s, o, local, guard);
  return run_member(sys, s, local, guard);
}

} // namespace

command_action add_node_command(CLI::App& app) {
  auto o = std::make_shared<node_options>();
  CLI::App* cmd = app.add_subcommand("node", "Run one node (process) of a multi-process job");
  cmd->add_option("job", o->job, "Job file (TOML) naming the nodes")->required();
  cmd->add_option("--name", o->name, "This node's name in the job's cluster")->required();
  cmd->add_option("--steps", o->steps, "Total optimizer steps (overrides the job)");
  cmd->add_option("--out", o->out, "Run directory of the coordinator's node");
  cmd->add_option("--metrics", o->metrics, "csv or jsonl (overrides the job)")
      ->check(CLI::IsMember({"csv", "jsonl"}));
  cmd->add_option(
      "--resume", o->resume,
      "Continue from this checkpoint (read by the coordinator's node; others ignore it)");
  cmd->add_option("--connect-timeout", o->connect_timeout_s,
                  "Seconds to wait for the other nodes (overrides the job)");
  cmd->add_option("--step-timeout", o->step_timeout_s, "Seconds a step may take in real time")
      ->check(CLI::PositiveNumber);
  return [o] { return run_node(*o); };
}

} // namespace deepcee::tools
