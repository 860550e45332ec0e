#include "actors/job/node_registry.hpp"
#include "actors/protocol/errors.hpp"
#include "actors/protocol/wire_format.hpp"

#include <caf/actor_system.hpp>
#include <caf/exit_reason.hpp>
#include <caf/make_message.hpp>
#include <caf/sec.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include <cstdio>
#include <stdexcept>

namespace deepcee::actors {

namespace {

using self_ptr = node_registry_actor::stateful_pointer<node_registry_state>;

/// Whether node `n` runs something this registry waits for.
bool must_join(const node_registry_state& st, size_t n) {
  return !st.expected[n].empty() || !st.expected_devices[n].empty();
}

bool complete(const node_registry_state& st) {
  for (size_t n = 0; n < st.joined.size(); ++n)
    if (!st.joined[n] && must_join(st, n))
      return false;
  return true;
}

void try_deliver(self_ptr self) {
  auto& st = self->state;
  if (!st.waiting)
    return;
  if (!st.failure.empty())
    st.waiting->deliver(make_error(st.failure_code, st.failure));
  else if (complete(st)) {
    st.waiting->deliver(st.wiring);
    st.running = true;
  } else
    return;
  st.waiting.reset();
}

/// A node's request or join that the job cannot take (its own or the job's failure).
caf::error refuse(const std::string& why) {
  return make_error(messages::error_code::bad_input, why);
}

/// The node named `name`, or names.size() when it is none of the job's.
size_t node_index(const node_registry_state& st, const std::string& name) {
  size_t n = 0;
  while (n < st.node_names.size() && st.node_names[n] != name)
    ++n;
  return n;
}

std::string slots_text(const std::vector<int32_t>& slots) {
  std::string out = "[";
  for (size_t i = 0; i < slots.size(); ++i)
    out += (i ? ", " : "") + std::to_string(slots[i]);
  return out + "]";
}

/// The first device slot of `j` whose handle is missing, or -1. Dry mode spawns no device
/// actors (nothing is computed), so there they all are.
int32_t first_null(const joining_node& j, runtime::time_mode time) {
  if (time == runtime::time_mode::dry)
    return -1;
  for (size_t i = 0; i < j.join.devices.size(); ++i)
    if (!j.device_handles[i])
      return j.join.devices[i];
  return -1;
}

/// The process the current message came from (none when it has no sender).
caf::node_id sender_node(self_ptr self) {
  const auto& from = self->current_sender();
  return from ? from->node() : caf::node_id{};
}

/// Whether a join or report for node `n` may fail the job: it comes from this process, or
/// from the one that asked for node `n`'s deployment (or nothing asked yet).
bool speaks_for(self_ptr self, size_t n) {
  const auto from = sender_node(self);
  const auto& asked = self->state.asked_from[n];
  return from == self->node() || !asked || from == asked;
}

/// `deepcee inject`: the events, read against the job's cluster, go to the coordinator,
/// whose answer (the step they are in force from, or why not) is the injector's.
caf::result<int64_t> inject(self_ptr self, const std::string& source, const std::string& text) {
  auto& s = self->state;
  if (!s.parse)
    return refuse("this job takes no injected events");
  if (!s.coordinator)
    return make_error(messages::error_code::internal,
                      "the job has not started its steps yet: try again once it runs");
  runtime::link_timeline events;
  try {
    events = s.parse(source, text);
  } catch (const std::exception& e) {
    return refuse(e.what());
  }
  return self->delegate(s.coordinator, script_update{.step = 0, .script = std::move(events)});
}

std::string other_cluster(const std::string& node) {
  return "node '" + node + "' read a different cluster than the coordinator's node";
}

/// The registry's state at its start: who must join with what, and what this process runs
/// (`local`'s stages, devices apart and replanner are in the wiring at once).
void start_registry(node_registry_state& st, job_deployment deployment, std::string cluster,
                    std::vector<std::string> names, const runtime::node_layout& layout,
                    const local_part& local, heartbeat_actor beats, script_parser parse) {
  st.beats = std::move(beats);
  st.parse = std::move(parse);
  st.deployment = std::move(deployment);
  st.cluster = std::move(cluster);
  st.node_names = std::move(names);
  st.joined.assign(st.node_names.size(), false);
  st.asked_from.assign(st.node_names.size(), caf::node_id{});
  for (size_t n = 0; n < st.node_names.size(); ++n) {
    const bool here = static_cast<int>(n) == local.node;
    st.expected.push_back(here ? std::vector<int32_t>{} : layout.stages_on(static_cast<int>(n)));
    st.expected_devices.push_back(here ? std::vector<int32_t>{}
                                       : layout.apart_on(static_cast<int>(n)));
  }
  st.wiring.stages.resize(layout.stage_node.size());
  st.wiring.devices.resize(layout.slot_node.size());
  st.wiring.replanners.resize(st.node_names.size());
  st.wiring.boot_ids.resize(st.node_names.size());
  st.wiring.clock_errors.resize(st.node_names.size());
  st.wiring.heartbeat = caf::actor_cast<caf::strong_actor_ptr>(st.beats);
  st.wiring.boot_ids.at(static_cast<size_t>(local.node)) = local.boot_id;
  st.wiring.replanners.at(static_cast<size_t>(local.node)) =
      caf::actor_cast<caf::strong_actor_ptr>(local.replanner);
  const auto stages = layout.stages_on(local.node);
  for (size_t i = 0; i < stages.size(); ++i)
    st.wiring.stages[static_cast<size_t>(stages[i])] =
        caf::actor_cast<caf::strong_actor_ptr>(local.stages.at(i));
  const auto slots = layout.apart_on(local.node);
  if (slots.size() != local.devices.size())
    throw std::logic_error("node registry: " + std::to_string(local.devices.size()) +
                           " local devices apart, the layout gives " +
                           std::to_string(slots.size()));
  for (size_t i = 0; i < slots.size(); ++i)
    st.wiring.devices[static_cast<size_t>(slots[i])] =
        caf::actor_cast<caf::strong_actor_ptr>(local.devices[i]);
}

/// A node asks while the job runs: it gets the plan in force, marked running, when that
/// plan leaves it out; a node the job runs on is refused (a second process claiming it).
caf::result<job_deployment> late_deployment(self_ptr self, size_t n, const deployment_request& r) {
  auto& s = self->state;
  if (r.cluster != s.cluster)
    return refuse(other_cluster(r.node));
  const auto from = sender_node(self); // before the promise takes the sender
  auto promise = self->make_response_promise<job_deployment>();
  self->request(s.coordinator, std::chrono::seconds(10), plan_atom_v)
      .then(
          [self, promise, n, from, name = r.node](job_in_force& now) mutable {
            auto& st = self->state;
            if (runtime::layout_of(now.job->cluster->hardware(), now.plan)
                    .runs_on(static_cast<int>(n))) {
              promise.deliver(refuse("node '" + name + "' is in the job already"));
              return;
            }
            st.asked_from[n] = from;
            st.joined[n] = false;
            auto d = st.deployment;
            d.node = name;
            d.plan = now.plan;
            d.running = true;
            d.clock_s +=
                std::chrono::duration<double>(std::chrono::steady_clock::now() - st.started)
                    .count();
            promise.deliver(std::move(d));
          },
          [promise](caf::error& e) mutable { promise.deliver(std::move(e)); });
  return promise;
}

/// A node asks for its deployment. A node of the cluster that runs nothing gets it too: it
/// sees that the plan leaves it out, says why and ends, without joining.
caf::result<job_deployment> on_deployment_request(self_ptr self, const deployment_request& r) {
  auto& s = self->state;
  const size_t n = node_index(s, r.node);
  if (n == s.node_names.size())
    return refuse("node '" + r.node + "' is not a node of this job");
  if (!s.failure.empty())
    return refuse(s.failure);
  if (s.running && s.coordinator)
    return late_deployment(self, n, r);
  const auto from = sender_node(self);
  if (s.asked_from[n] && from != s.asked_from[n])
    return refuse("node '" + r.node + "' was asked for by another process already");
  s.asked_from[n] = from;
  // A node that read another cluster can never join: the job fails now (unless the plan
  // leaves the node out anyway).
  if (r.cluster != s.cluster && !must_join(s, n))
    return refuse(other_cluster(r.node));
  if (r.cluster != s.cluster) {
    s.failure = other_cluster(r.node);
    try_deliver(self);
    return refuse(s.failure);
  }
  auto d = s.deployment;
  d.node = r.node;
  d.clock_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - s.started).count();
  return d;
}

/// Why node `n` cannot join as `joining` offers (empty when it can): the job's cluster, and
/// the stages, device slots and device actors the plan gives it.
std::string join_refusal(const node_registry_state& s, size_t n, const joining_node& joining) {
  const auto& j = joining.join;
  if (j.job != s.cluster)
    return other_cluster(j.node);
  if (j.stages != s.expected[n] || joining.handles.size() != j.stages.size())
    return "node '" + j.node + "' offers other stages than the plan gives it";
  if (j.devices != s.expected_devices[n] || joining.device_handles.size() != j.devices.size())
    return "node '" + j.node + "' offers device slots " + slots_text(j.devices) +
           ", the plan gives it " + slots_text(s.expected_devices[n]);
  if (const auto k = first_null(joining, s.deployment.mode); k >= 0)
    return "node '" + j.node + "' handed over no actor for device slot " + std::to_string(k);
  return "";
}

/// Node `n`'s actors take their places in the wiring; its heartbeat actor goes to `beats`.
void admit(self_ptr self, size_t n, joining_node& joining) {
  auto& s = self->state;
  const auto& j = joining.join;
  for (size_t i = 0; i < j.stages.size(); ++i)
    s.wiring.stages[static_cast<size_t>(j.stages[i])] = std::move(joining.handles[i]);
  for (size_t i = 0; i < j.devices.size(); ++i)
    s.wiring.devices[static_cast<size_t>(j.devices[i])] = std::move(joining.device_handles[i]);
  s.wiring.replanners[n] = std::move(joining.replanner);
  s.wiring.boot_ids[n] = std::move(joining.boot_id);
  s.wiring.clock_errors[n] = joining.clock_error_s;
  s.joined[n] = true;
  if (s.beats && joining.heartbeat)
    self->send(s.beats, peer_atom_v, j.node, std::move(joining.heartbeat));
  if (j.devices.empty())
    std::fprintf(stderr, "node %s joined with %zu stage(s)\n", j.node.c_str(), j.stages.size());
  else
    std::fprintf(stderr, "node %s joined with %zu stage(s) and %zu device(s) of others\n",
                 j.node.c_str(), j.stages.size(), j.devices.size());
}

/// A spare joins the running job: no stages, no devices; the coordinator learns it.
caf::result<int32_t> late_join(self_ptr self, size_t n, joining_node& joining) {
  auto& s = self->state;
  const auto& j = joining.join;
  if (j.job != s.cluster)
    return refuse(other_cluster(j.node));
  if (s.joined[n])
    return refuse("node '" + j.node + "' is in the job already");
  if (sender_node(self) != s.asked_from[n])
    return refuse("node '" + j.node + "' did not ask for the running job's deployment first");
  if (!j.stages.empty() || !j.devices.empty())
    return refuse("node '" + j.node + "' joins the running job with stages");
  s.joined[n] = true;
  if (s.beats && joining.heartbeat)
    self->send(s.beats, peer_atom_v, j.node, joining.heartbeat);
  std::fprintf(stderr, "node %s joined the running job as a spare\n", j.node.c_str());
  self->send(s.coordinator, peer_atom_v, static_cast<int32_t>(n), std::move(joining.replanner),
             std::move(joining.boot_id));
  return static_cast<int32_t>(n);
}

/// A node joins with its actors. A join the plan does not expect fails the job, unless it
/// comes from a process that does not speak for the node.
caf::result<int32_t> on_join(self_ptr self, joining_node& joining) {
  auto& s = self->state;
  const auto& j = joining.join;
  const size_t n = node_index(s, j.node);
  if (s.running && s.coordinator && n < s.node_names.size() && s.failure.empty())
    return late_join(self, n, joining);
  if (n == s.node_names.size() || !must_join(s, n))
    return refuse("node '" + j.node + "' runs nothing of this job");
  if (s.joined[n])
    return refuse("node '" + j.node + "' joined twice");
  if (!s.failure.empty())
    return refuse(s.failure);
  if (!speaks_for(self, n))
    return refuse("node '" + j.node +
                  "' joins from another process than the one that asked for its deployment");
  s.failure = join_refusal(s, n, joining);
  if (!s.failure.empty()) {
    try_deliver(self);
    return refuse(s.failure);
  }
  admit(self, n, joining);
  try_deliver(self);
  return static_cast<int32_t>(n);
}

/// A node that cannot run its part says why: the job fails with its reason and code.
void on_error_report(self_ptr self, const error_report& e) {
  auto& s = self->state;
  const size_t n = node_index(s, e.node);
  if (n == s.node_names.size() || !must_join(s, n) || s.joined[n] || !s.failure.empty() ||
      !speaks_for(self, n))
    return;
  s.failure = "node " + e.node + " cannot run the job: " + e.message;
  s.failure_code = e.code;
  try_deliver(self);
}

caf::result<stage_wiring> on_await(self_ptr self) {
  auto& s = self->state;
  s.waiting = self->make_response_promise<stage_wiring>();
  auto promise = *s.waiting;
  try_deliver(self);
  return promise;
}

/// The join's time is up: the job fails naming the nodes that did not join.
void on_join_timeout(self_ptr self, std::chrono::milliseconds timeout) {
  auto& s = self->state;
  if (complete(s))
    return;
  std::string missing;
  for (size_t n = 0; n < s.joined.size(); ++n)
    if (!s.joined[n] && must_join(s, n))
      missing += (missing.empty() ? "" : ", ") + s.node_names[n];
  s.failure = "node(s) " + missing + " did not join within " +
              std::to_string(timeout.count() / 1000.0).substr(0, 4) + " s";
  s.failure_code = messages::error_code::timeout;
  try_deliver(self);
}

node_registry_actor::behavior_type
registry_behavior(self_ptr self, job_deployment deployment, std::string cluster,
                  std::vector<std::string> names, runtime::node_layout layout, local_part local,
                  std::chrono::milliseconds timeout, heartbeat_actor beats, script_parser parse) {
  self->set_default_handler(drop_unexpected);
  start_registry(self->state, std::move(deployment), std::move(cluster), std::move(names), layout,
                 local, std::move(beats), std::move(parse));
  self->delayed_send(self, timeout, timeout_atom_v);
  return {
      [self](deployment_request& r) { return on_deployment_request(self, r); },
      [self](joining_node& joining) { return on_join(self, joining); },
      [self](const error_report& e) { on_error_report(self, e); },
      [self](await_atom) { return on_await(self); },
      [self, timeout](timeout_atom) { on_join_timeout(self, timeout); },
      [self](stop_atom, const std::string& why) {
        if (why.empty())
          self->quit(caf::exit_reason::normal);
        else
          self->quit(make_error(messages::error_code::internal, why)); // the job's own failure
      },
      [self](stop_atom, interrupt_atom, std::string& why) { self->quit(job_interrupted(why)); },
      [self](wire_atom, const caf::strong_actor_ptr& coordinator) {
        if (sender_node(self) == self->node()) // never another process's
          self->state.coordinator = caf::actor_cast<coordinator_actor>(coordinator);
      },
      [self](inject_atom, const std::string& source, const std::string& text) {
        return inject(self, source, text);
      },
  };
}

} // namespace

node_registry_actor spawn_node_registry(caf::actor_system& sys, job_deployment deployment,
                                        std::string cluster, std::vector<std::string> node_names,
                                        const runtime::node_layout& layout, const local_part& local,
                                        std::chrono::milliseconds timeout, heartbeat_actor beats,
                                        script_parser parse) {
  return sys.spawn(registry_behavior, std::move(deployment), std::move(cluster),
                   std::move(node_names), layout, local, timeout, std::move(beats),
                   std::move(parse));
}

namespace {
/// An error category of our own, so that no CAF exit reason reads as an interruption.
const caf::atom_value interrupted_category = caf::atom("interrupt");
} // namespace

caf::error job_interrupted(std::string why) {
  return caf::error(uint8_t{1}, interrupted_category, caf::make_message(std::move(why)));
}

bool is_job_interrupted(const caf::error& reason) {
  return reason && reason.compare(uint8_t{1}, interrupted_category) == 0;
}

} // namespace deepcee::actors
