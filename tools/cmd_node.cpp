// deepcee node JOB --name N: one node (process) of a multi-process job. The coordinator's
// node plans the job (or loads its plan file) once and publishes a registry through CAF's
// middleman; every other node (node_member.cpp) connects to it, asks it for the job's
// deployment, spawns the stage actors of its devices from it and joins; then the
// coordinator wires the stages to each other (activations and gradients go node to node)
// and runs the steps. Every failure (a node that never joins, a port in use, another
// cluster, a lost peer) ends every process non-zero with one line naming the node.
#include "actors/adapter_actor.hpp"
#include "actors/checkpoint_transfer.hpp"
#include "actors/coordinator.hpp"
#include "actors/local_job.hpp"
#include "actors/node_deployment.hpp"
#include "actors/node_registry.hpp"
#include "actors/pipe_actor.hpp"
#include "actors/stage_actor.hpp"
#include "actors/type_ids.hpp"
#include "runtime/cluster_fingerprint.hpp"
#include "runtime/errors.hpp"
#include "runtime/job_config.hpp"
#include "runtime/job_config_toml.hpp"
#include "runtime/metrics_writer.hpp"
#include "runtime/plan_json.hpp"
#include "tools/commands.hpp"
#include "tools/job_checkpoint.hpp"
#include "tools/job_setup.hpp"
#include "tools/node_process.hpp"
#include "tools/run_directory.hpp"

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/io/middleman.hpp>
#include <caf/scoped_actor.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <optional>
#include <stdexcept>
#include <thread>

namespace deepcee::tools {
namespace {

using namespace std::chrono_literals;

struct node_options {
  std::string job;
  std::string name;
  std::optional<int> steps; ///< the coordinator's node's value applies to every node
  std::optional<std::string> out;
  std::optional<std::string> metrics, resume; ///< the coordinator's node reads them
  std::optional<double> connect_timeout_s;
  int step_timeout_s = 60;
};

/// The coordinator's node's job: what it resolved and what it deploys to the others.
struct node_setup {
  runtime::job_config job;
  runtime::plan plan;
  int me = 0;
  std::shared_ptr<actors::job_context> context; ///< laid out on the nodes
  actors::job_deployment deployment;
  std::optional<kernels::checkpoint_contents> resume;
};

/// Plans (or loads the plan file) once for the whole job.
node_setup prepare_coordinator(runtime::job_config job, const node_options& o, int me) {
  auto r = resolve_job(std::move(job), {o.steps, std::nullopt, std::nullopt}, false);
  node_setup s;
  s.job = std::move(r.job);
  s.me = me;
  s.plan = std::move(r.plan);
  const actors::run_mode mode{s.job.time, s.job.shape_links};
  s.context =
      actors::make_job_context(s.job.cluster, r.profile, s.plan, s.job.train, r.corpus, mode);
  s.deployment = actors::make_deployment(s.job.name, s.plan, s.job.train, mode);
  s.context->place_on_nodes(s.job.cluster);
  if (o.resume && s.job.time == runtime::time_mode::dry)
    runtime::fail_input(o.job, 0,
                        "--resume: a dry-mode job has no weights to load a checkpoint into");
  if (o.resume)
    s.resume = read_resume_checkpoint(*o.resume, s.plan.model);
  return s;
}

int run_coordinator(caf::actor_system& sys, node_setup& s, const node_options& o,
                    const actors::local_part& local, actor_guard& guard) {
  const auto& me = s.job.cluster.nodes[static_cast<size_t>(s.me)];
  std::vector<std::string> names;
  for (const auto& n : s.job.cluster.nodes)
    names.push_back(n.name);
  const auto timeout =
      std::chrono::milliseconds(static_cast<int64_t>(s.job.connect_timeout_s * 1e3));
  auto beats = start_heartbeat(sys, s.job, s.me, {}, {}, guard); // learns each node at its join
  s.deployment.clock_s = s.context->real_now_s(); // the members' clocks follow this one
  auto registry =
      actors::spawn_node_registry(sys, s.deployment, runtime::cluster_fingerprint(s.job.cluster),
                                  names, s.context->layout, local, timeout, beats);
  guard.add(registry);
  const auto host = host_of(me);
  listen_on(sys, me, [&] {
    return sys.middleman().publish(registry, static_cast<uint16_t>(me.port), host.c_str(), true);
  });
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
  for (const auto& stage : wiring.stages)
    stages.push_back(caf::actor_cast<actors::stage_actor>(stage));
  auto adapter = actors::spawn_adapter(sys);
  auto coordinator =
      actors::spawn_coordinator(sys, s.context, stages, s.context->stage_nodes,
                                std::chrono::seconds(o.step_timeout_s), wiring.devices);
  guard.add(adapter);
  guard.add(coordinator);
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
      actors::restore_clock(sys, coordinator, s.resume->info.clock_s, wait);
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
  double clock_s = 0; // the last step's end in virtual time, for the checkpoint
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
              clock_s = wall ? 0 : r.end_s;
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
      if (const auto loss = files.after_step(k, clock_s, gather, *s.context->corpus, elapsed))
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
  if (interrupted.raised()) { // the other nodes end with 130 too, naming the reason
    self->send(registry, actors::stop_atom_v, actors::interrupt_atom_v,
               "Ctrl-C after step " + std::to_string(done) +
                   (files.weights() ? ", checkpoint saved" : ""));
    std::this_thread::sleep_for(300ms);
    std::fprintf(stderr, "node %s: interrupted after step %d\n", me.name.c_str(), done);
    return 130;
  }
  finish("");
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
  auto job = runtime::load_job_config(o.job);
  if (o.connect_timeout_s)
    job.connect_timeout_s = *o.connect_timeout_s;
  const auto me = job.cluster.find_node(o.name);
  if (!me)
    runtime::fail_input(
        o.job, 0, "node '" + o.name + "' is not a node of cluster '" + job.cluster.name + "'");
  // Only the coordinator's node plans; the others run what it deploys.
  std::optional<node_setup> s;
  if (*me == job.coordinator_node)
    s = prepare_coordinator(std::move(job), o, *me);
  dropped_note note{o.name};
  caf::actor_system_config cfg;
  actors::register_types(cfg);
  cfg.load<caf::io::middleman>();
  cfg.set("middleman.enable-automatic-connections", true);
  cfg.set("scheduler.max-threads", 2);
  cfg.set("logger.console", caf::atom("none"));
  caf::actor_system sys{cfg};
  actor_guard guard{sys, {}};
  if (!s)
    return run_member(sys, job, *me, guard);
  const auto local = spawn_local_part(sys, s->context, s->me, guard);
  return run_coordinator(sys, *s, o, local, guard);
}

} // namespace

command_action add_node_command(CLI::App& app) {
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
  cmd->add_option("--connect-timeout", o->connect_timeout_s,
                  "Seconds to wait for the other nodes (overrides the job)");
  cmd->add_option("--step-timeout", o->step_timeout_s, "Seconds a step may take in real time")
      ->check(CLI::PositiveNumber);
  return [o] { return run_node(*o); };
}

} // namespace deepcee::tools
