// A member node of `deepcee node`: every node but the coordinator's. It connects to the
// coordinator's node and asks it for the job's deployment: plan, training settings, time
// mode. From it, it spawns the stage actors of its devices, and joins with their handles.
// It then serves until the coordinator's node ends the job. Ctrl-C does not end it at once:
// the coordinator's node (interrupted by the same Ctrl-C of the terminal's process group)
// still gathers pipeline 0's stages, wherever they run, for its final checkpoint.
#include "actors/job/node_deployment.hpp"
#include "actors/job/node_registry.hpp"
#include "actors/job/node_replanner.hpp"
#include "actors/stage/stage_actor.hpp"
#include "runtime/cluster/cluster_fingerprint.hpp"
#include "runtime/step/shaped_delivery.hpp"
#include "tools/interrupt_flag.hpp"
#include "tools/node_process.hpp"
#include "tools/step_loop.hpp"

#include <caf/after.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/exit_reason.hpp>
#include <caf/io/middleman.hpp>
#include <caf/scoped_actor.hpp>
#include <spdlog/spdlog.h>

#include <chrono>
#include <cstdio>
#include <optional>
#include <thread>

namespace deepcee::tools {

namespace {

using namespace std::chrono_literals;

/// The registry's reply, or why there is none.
template <class Reply>
struct registry_answer {
  std::optional<Reply> reply;
  std::string refusal; ///< the coordinator's node's reason (or that it ended the job)
  bool timed_out = false;
};

/// Asks the registry and waits for its reply, its refusal, its end or `timeout`, whichever
/// comes first. Why not a plain blocking request: a lost proxy does not answer pending
/// requests. So when the coordinator's node ends the job meanwhile (another node failed), a
/// plain request would wait out its whole timeout.
template <class Reply, class Request>
registry_answer<Reply> ask_registry(caf::actor_system& sys, caf::scoped_actor& self,
                                    const actors::node_registry_actor& registry, Request request,
                                    std::chrono::milliseconds timeout) {
  auto waiter = caf::actor_cast<caf::actor>(self);
  sys.spawn([waiter, registry, request, timeout](caf::event_based_actor* a) {
    const std::string ended = "it ended the job before this node joined";
    a->monitor(registry);
    a->set_down_handler([a, waiter, ended](caf::down_msg&) {
      a->send(waiter, actors::stop_atom_v, ended);
      a->quit();
    });
    a->request(registry, timeout, request)
        .then(
            [a, waiter](Reply& r) {
              a->send(waiter, std::move(r));
              a->quit();
            },
            [a, waiter, ended](caf::error& e) {
              if (e == caf::sec::request_timeout)
                a->send(waiter, actors::timeout_atom_v);
              else
                a->send(waiter, actors::stop_atom_v,
                        e == caf::sec::request_receiver_down ? ended : reason_text(a->system(), e));
              a->quit();
            });
  });
  registry_answer<Reply> answer;
  self->receive([&](Reply& r) { answer.reply = std::move(r); },
                [&](actors::stop_atom, std::string& why) { answer.refusal = std::move(why); },
                [&](actors::timeout_atom) { answer.timed_out = true; });
  return answer;
}

std::string seconds_text(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f s", s);
  return buf;
}

/// Fails the node when the registry gave no reply, naming the coordinator's node.
template <class Reply>
Reply require_reply(const caf::actor_system& sys, registry_answer<Reply> a, const std::string& me,
                    const std::string& boss, const std::string& what, double timeout_s) {
  if (a.reply)
    return std::move(*a.reply);
  if (a.timed_out) {
    std::string dropped;
    if (const auto n = actors::dropped_wire_messages(sys); n > 0)
      dropped = " (" + std::to_string(n) + " malformed message(s) from other nodes dropped)";
    fail(me, "no valid " + what + " from the coordinator's node " + boss + " within " +
                 seconds_text(timeout_s) + dropped);
  }
  fail(me, "refused by the coordinator's node " + boss + ": " + a.refusal);
}

/// Fails this node at once when node `n`'s gate did not authenticate (a wrong token on
/// one side), naming it and its address: waiting would not change the token.
void fail_if_refused(const node_network& net, const runtime::node& me, int n) {
  if (auto why = net.refusal(n); !why.empty())
    fail(me.name, why);
}

actors::node_registry_actor connect(caf::actor_system& sys, const runtime::job_config& job,
                                    const runtime::node& me, node_network& net) {
  const auto& boss = job.cluster.nodes[static_cast<size_t>(job.coordinator_node)];
  // Its own port, so that its peers connect to it directly.
  // SO_REUSEADDR lets a restarted job bind past TIME_WAIT; a live listener still refuses.
  listen_on(sys, me, net);
  const auto deadline = std::chrono::steady_clock::now() + millis(job.connect_timeout_s);
  const auto at = net.reach(job.coordinator_node);
  while (true) {
    if (auto r = sys.middleman().remote_actor<actors::node_registry_actor>(at.host, at.port))
      return *r;
    fail_if_refused(net, me, job.coordinator_node);
    if (std::chrono::steady_clock::now() > deadline)
      fail(me.name, "could not reach the coordinator's node " + boss.name + " at " + host_of(boss) +
                        ":" + std::to_string(boss.port) + " within " +
                        std::to_string(job.connect_timeout_s).substr(0, 4) + " s");
    std::this_thread::sleep_for(100ms);
  }
}

/// Connects straight to every other member node of the job that comes before this one,
/// before this node joins; a spare (`spare`: the job runs already) connects to every member
/// the plan in force runs on. The later ones connect to this one. Traffic between members
/// then goes straight from one to the other (through their gates), never through the
/// coordinator's node. A member that cannot be reached within the connect timeout fails
/// this node, naming it.
void connect_members(caf::actor_system& sys, const runtime::job_config& job, int me_index,
                     const runtime::node_layout& layout, const node_network& net, bool spare) {
  const auto& me = job.cluster.nodes[static_cast<size_t>(me_index)];
  const auto deadline = std::chrono::steady_clock::now() + millis(job.connect_timeout_s);
  const int last = spare ? static_cast<int>(job.cluster.nodes.size()) : me_index;
  for (int j = 0; j < last; ++j) {
    if (j == me_index || j == job.coordinator_node || !layout.runs_on(j))
      continue;
    const auto& peer = job.cluster.nodes[static_cast<size_t>(j)];
    const auto at = net.reach(j);
    while (!sys.middleman().connect(at.host, at.port)) {
      fail_if_refused(net, me, j);
      if (std::chrono::steady_clock::now() > deadline)
        fail(me.name, "could not reach node " + peer.name + " at " + host_of(peer) + ":" +
                          std::to_string(peer.port) + " within " +
                          std::to_string(job.connect_timeout_s).substr(0, 4) + " s");
      std::this_thread::sleep_for(100ms);
    }
  }
}

/// Why the plan uses none of node `node`'s devices: the planner's reasons for excluding
/// them, or that it did not need them.
std::string left_out_because(const runtime::plan& plan, const runtime::cluster& c, int node) {
  std::string why;
  for (const auto& x : plan.excluded)
    if (c.devices.at(static_cast<size_t>(x.device)).node == node &&
        why.find(x.reason) == std::string::npos)
      why += (why.empty() ? "" : "; ") + x.reason;
  return why.empty() ? "the plan does not need them" : why;
}

/// A member node and the coordinator's node it talks to.
struct member {
  caf::actor_system& sys;
  const runtime::job_config& job;
  int index;
  const runtime::node& me;
  const runtime::node& boss;
  caf::scoped_actor& self; ///< watches the registry, receives the registry's replies
  actors::node_registry_actor registry;
  const node_network& net;
  bool running = false; ///< the job ran already when this node asked: it joins as a spare

  std::chrono::milliseconds wait() const { return millis(job.connect_timeout_s); }

  /// What stops this node before it joins, the coordinator's node learns at once (and stops
  /// the job naming it) instead of at its connect timeout.
  [[noreturn]] void tell_and_fail(const std::string& why) const {
    self->send(registry, messages::error_report{me.name, messages::error_code::bad_input, why});
    std::this_thread::sleep_for(300ms); // lets the message leave before the socket closes
    fail(me.name, why);
  }
};

/// The coordinator's plan and settings as this node's job, checked against what it read,
/// its wall clock reading the coordinator's (link samples between nodes).
std::shared_ptr<actors::job_context> accept_job(member& m) {
  const auto asked = std::chrono::steady_clock::now();
  const auto deployment = require_reply(
      m.sys,
      ask_registry<actors::job_deployment>(
          m.sys, m.self, m.registry,
          actors::deployment_request{m.me.name, runtime::cluster_fingerprint(m.job.cluster)},
          m.wait()),
      m.me.name, m.boss.name, "deployment", m.job.connect_timeout_s);
  const auto answered = std::chrono::steady_clock::now();
  m.running = deployment.running;
  std::shared_ptr<actors::job_context> context;
  try {
    context = actors::accept_deployment(deployment, m.job.cluster, m.me.name, m.job.script);
  } catch (const std::exception& e) {
    m.tell_and_fail("refused the deployment from the coordinator's node " + m.boss.name + ": " +
                    e.what());
  }
  context->boot_id = runtime::read_boot_id();
  actors::align_clock(*context, deployment, context->boot_id, asked, answered);
  spdlog::debug("node {}: clock within {:.3g} ms of node {}'s", m.me.name,
                context->clock_error_s * 1e3, m.boss.name);
  return context;
}

/// Spawns this node's part of the job and joins with it; from then on the silence of the
/// coordinator's node (hung, its connection still open) ends this node.
void join_job(member& m, const std::shared_ptr<actors::job_context>& context,
              actors::actor_guard& guard) {
  const auto& ctx = *context;
  actors::joining_node joining;
  auto& join = joining.join;
  join.node = m.me.name;
  join.job = runtime::cluster_fingerprint(m.job.cluster);
  actors::local_part part;
  try {
    connect_members(m.sys, m.job, m.index, ctx.layout, m.net, m.running);
    part = actors::spawn_local_part(m.sys, context, m.index, guard);
  } catch (const std::exception& e) {
    const std::string prefix = "node " + m.me.name + ": "; // fail() adds it again
    std::string why = e.what();
    m.tell_and_fail(why.rfind(prefix, 0) == 0 ? why.substr(prefix.size()) : why);
  }
  join.stages = ctx.layout.stages_on(m.index);
  for (const auto& stage : part.stages)
    joining.handles.push_back(caf::actor_cast<caf::strong_actor_ptr>(stage));
  join.devices = ctx.layout.apart_on(m.index);
  for (const auto& device : part.devices)
    joining.device_handles.push_back(caf::actor_cast<caf::strong_actor_ptr>(device));
  const auto replanner = actors::spawn_node_replanner(m.sys, m.job.cluster, m.me.name, m.index,
                                                      m.job.script, ctx.epoch);
  guard.add(replanner);
  joining.replanner = caf::actor_cast<caf::strong_actor_ptr>(replanner);
  joining.boot_id = ctx.boot_id;
  joining.clock_error_s = ctx.clock_error_s;
  std::fprintf(stderr,
               "node %s: runs the plan and [train] settings of the coordinator's node %s "
               "(%s time, seed %llu, %d steps)\n",
               m.me.name.c_str(), m.boss.name.c_str(),
               std::string(runtime::to_string(ctx.mode.time)).c_str(),
               static_cast<unsigned long long>(ctx.train.seed), ctx.train.steps);
  joining.heartbeat = caf::actor_cast<caf::strong_actor_ptr>(start_heartbeat(
      m.sys, m.job, m.index, {m.boss.name}, caf::actor_cast<caf::actor>(m.self), guard));
  const auto stages = join.stages.size();
  require_reply(m.sys,
                ask_registry<int32_t>(m.sys, m.self, m.registry, std::move(joining), m.wait()),
                m.me.name, m.boss.name, "answer to its join", m.job.connect_timeout_s);
  std::fprintf(stderr, "node %s: joined %s at %s:%d with %zu stage(s)\n", m.me.name.c_str(),
               m.boss.name.c_str(), host_of(m.boss).c_str(), m.boss.port, stages);
}

/// Serves until the coordinator's node ends the job (the registry goes away) or falls
/// silent; the exit code (0 done, 130 it was interrupted), failures thrown.
int serve_until_end(member& m, const interrupt_flag& interrupted, const std::string& clock) {
  caf::error reason;
  std::string silent;
  bool done = false, told = false;
  std::optional<progress_bar> bar; // the coordinator's steps, as deepcee run shows them
  while (!done) {
    m.self->receive(
        [&](actors::progress_atom, int64_t step, int64_t steps, double loss, double rate,
            double clock_s) {
          if (!bar)
            bar.emplace(static_cast<int>(step) - 1, static_cast<int>(steps));
          bar->update(static_cast<int>(step), job_progress_fields(clock, loss, rate, clock_s));
        },
        [&](caf::down_msg& d) {
          reason = d.reason;
          done = true;
        },
        [&](actors::lost_atom, std::string& node, std::string& why) {
          // The coordinator's node fell silent, or it says this node is out of the job.
          silent = node == m.me.name ? why : "node " + node + " is silent: " + why;
          done = true;
        },
        caf::after(100ms) >> [] {});
    if (interrupted.raised() && !told && !done) {
      if (bar)
        bar->finish();
      std::fprintf(stderr,
                   "node %s: interrupted: its stages keep running until the coordinator's node "
                   "%s ends the job (Ctrl-C again to leave at once)\n",
                   m.me.name.c_str(), m.boss.name.c_str());
      told = true;
    }
  }
  if (bar)
    bar->finish();
  if (!silent.empty())
    fail(m.me.name, silent);
  if (actors::is_job_interrupted(reason)) {
    std::fprintf(stderr, "node %s: stopped because the coordinator's node %s was interrupted: %s\n",
                 m.me.name.c_str(), m.boss.name.c_str(), reason_text(m.sys, reason).c_str());
    return 130;
  }
  if (reason && reason != caf::exit_reason::normal) {
    if (reason == caf::exit_reason::remote_link_unreachable)
      fail(m.me.name, "lost the coordinator's node " + m.boss.name);
    fail(m.me.name, "job stopped by " + m.boss.name + ": " + reason_text(m.sys, reason));
  }
  std::fprintf(stderr, "node %s: job done\n", m.me.name.c_str());
  return 0;
}

} // namespace

int run_member(caf::actor_system& sys, const runtime::job_config& job, int me_index,
               node_network& net, actors::actor_guard& guard) {
  const auto& me = job.cluster.nodes[static_cast<size_t>(me_index)];
  const auto& boss = job.cluster.nodes[static_cast<size_t>(job.coordinator_node)];
  interrupt_flag interrupted("node " + me.name +
                             ": interrupted twice: leaving now, without waiting for the "
                             "coordinator's node " +
                             boss.name);
  const auto registry = connect(sys, job, me, net);
  caf::scoped_actor self{sys};
  self->monitor(registry);
  member m{sys, job, me_index, me, boss, self, registry, net};
  const auto context = accept_job(m);
  if (m.running)
    std::fprintf(stderr,
                 "node %s: the job of the coordinator's node %s runs already: joining it "
                 "as a spare\n",
                 me.name.c_str(), boss.name.c_str());
  else if (!context->layout.runs_on(me_index)) { // the plan leaves it out: nothing to join
    std::fprintf(stderr,
                 "node %s: the plan of the coordinator's node %s uses none of its devices "
                 "(%s); nothing to run\n",
                 me.name.c_str(), boss.name.c_str(),
                 left_out_because(context->plan, job.cluster, me_index).c_str());
    return 0;
  }
  join_job(m, context, guard);
  return serve_until_end(m, interrupted, std::string(runtime::to_string(context->mode.time)));
}

} // namespace deepcee::tools
