#pragma once

#include "actors/protocol/type_ids.hpp"
#include "kernels/train/checkpoint.hpp"

#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include <cstdint>
#include <string>
#include <vector>

/// The typed interfaces of the actors, in one header because stages and the coordinator
/// name each other. Typed, so that a later remote connect is checked against them.
namespace deepcee::actors {

/// One pipeline stage: runs its schedule's op list for its layers on its device group,
/// sends activations to the next stage and gradients to the previous one directly, then
/// exchanges gradient shares with the other holders of its layers. Between steps, `snapshot`
/// answers with its layers' weights and moments (checkpoints; with a layer: that layer's
/// alone) and `restore` loads them; `move` (a re-plan's new stage) takes its layers from the
/// old stages named, one per layer, and answers with the bytes received. `slowed` (from
/// itself, in wall time) ends an op that a script's slowdown or stop held back, unless the
/// step it belongs to (by its epoch) was abandoned. `optimize_order` needs no answer: the
/// next step's start follows it (the group steps the devices first); a failure comes as
/// an error report. `step` (from itself, in shaped wall time) starts the held step once
/// the optimizer's emulated time is up; `release` (from itself, in shaped wall time) takes
/// the held tensors and gradient shares whose modelled arrival has come. `keep` with a step
/// and a keeper snapshots the stage after that step's optimizer step in the background,
/// keeps the copy and sends one to the keeper; `keep` with a snapshot is a copy to keep
/// for a stage on another node; `snapshot` with a layer and a step answers that layer from a
/// copy kept at that step (actors/stage/stage_snapshots.hpp).
using stage_actor = caf::typed_actor<
    caf::reacts_to<stage_wiring>, caf::reacts_to<step_start>, caf::reacts_to<tensor_msg>,
    caf::reacts_to<gradient_share>, caf::reacts_to<optimize_order>, caf::reacts_to<send_horizon>,
    caf::reacts_to<pipe_arrival>, caf::replies_to<snapshot_atom>::with<stage_snapshot>,
    caf::replies_to<restore_atom, stage_snapshot>::with<int64_t>,
    caf::replies_to<rebalance>::with<int64_t>,
    caf::replies_to<snapshot_atom, int32_t>::with<stage_snapshot>,
    caf::replies_to<move_atom, layer_holders>::with<int64_t>,
    caf::replies_to<script_update>::with<int64_t>, caf::reacts_to<slowed_atom, uint64_t>,
    caf::reacts_to<step_atom, int64_t>, caf::reacts_to<release_atom>,
    caf::reacts_to<lost_atom, int64_t>, caf::reacts_to<keep_atom, int64_t, caf::strong_actor_ptr>,
    caf::reacts_to<keep_atom, stage_snapshot, uint64_t>,
    caf::replies_to<snapshot_atom, int32_t, int64_t>::with<stage_snapshot>>;

/// One device of a stage (device_actor.hpp). It owns its backend and its share of the
/// stage's weights.
/// - `device_work` runs ops on rows where they lie (in its stage's process); `device_rows`
///   on rows in the message (from a stage on another node).
/// - `reduce` starts its group's ring all-reduce. It answers with the reduced gradients on
///   rank 0 when asked for them, with empty values otherwise.
/// - `ring_chunk` is a round from the previous device. `ring` names the next device, this
///   device's rank and the ring's size, and whether the next device holds a shaped chunk
///   until its modelled arrival.
/// - `release`, from itself, takes the held chunks that are due. With a number, it answers
///   the held op of that number where the device stands in for one on another node
///   (remote_device.hpp).
/// - `buffers` says where its gradients lie on its GPU (for the group's NCCL all-reduce),
///   `gradients` gives a host copy, `squares` their sum of squares, taken where they lie.
/// - The rest steps, snapshots and restores its weights. `digest` hashes its weights and
///   moments, to check it holds what the stage's first device does.
using device_actor = caf::typed_actor<
    caf::replies_to<device_work>::with<double>, caf::replies_to<device_rows>::with<device_output>,
    caf::reacts_to<ring_atom, caf::strong_actor_ptr, int32_t, int32_t, bool>,
    caf::reacts_to<release_atom>, caf::reacts_to<release_atom, uint64_t>,
    caf::replies_to<reduce_atom, int64_t, bool>::with<gradient_values>, caf::reacts_to<ring_chunk>,
    caf::replies_to<buffers_atom>::with<device_buffers>,
    caf::replies_to<gradients_atom>::with<std::vector<float>>,
    caf::replies_to<squares_atom>::with<double>, caf::replies_to<gradient_values>::with<int64_t>,
    caf::replies_to<optimize_order>::with<int64_t>,
    caf::replies_to<snapshot_atom>::with<std::vector<kernels::parameter_state>>,
    caf::replies_to<digest_atom>::with<uint64_t>,
    caf::replies_to<restore_atom, stage_snapshot>::with<int64_t>>;

/// The devices of one stage (group_actor.hpp).
/// - An op's micro-batch is split by samples among its device actors. The answer comes once
///   all are done (for a last stage's F: the loss summed over devices, in device order).
/// - `reduce` all-reduces its devices' gradients and answers with their sum. With `squares`
///   it answers with the sum of their squares and the sum stays on the devices: in a job of
///   one pipeline no other stage needs it.
/// - The rest goes to every device. A snapshot is checked to be the same on each.
/// - `devices` hands it the device actors it has on other nodes, by place in the stage
///   (empty where the group spawns its own), and each node's host boot
///   (stage_wiring::boot_ids). It waits for them when it has any.
using group_actor = caf::typed_actor<
    caf::reacts_to<devices_atom, std::vector<caf::strong_actor_ptr>, std::vector<std::string>>,
    caf::replies_to<rebalance>::with<int64_t>, caf::replies_to<device_work>::with<double>,
    caf::replies_to<reduce_atom, int64_t>::with<std::vector<float>>,
    caf::replies_to<squares_atom, int64_t>::with<double>,
    caf::replies_to<gradient_values>::with<int64_t>, caf::replies_to<optimize_order>::with<int64_t>,
    caf::replies_to<snapshot_atom>::with<std::vector<kernels::parameter_state>>,
    caf::replies_to<restore_atom, stage_snapshot>::with<int64_t>>;

/// One link that several stages send on in virtual time (a WAN pipe crossed by several
/// pipelines): it orders their transfers by send time with conservative synchronisation
/// and tells each receiver when its part arrives (pipe_actor.hpp).
using pipe_actor = caf::typed_actor<caf::reacts_to<pipe_request>, caf::reacts_to<send_horizon>,
                                    caf::reacts_to<rebalance>, caf::reacts_to<script_update>>;

/// Drives the job: starts steps, collects the stages' reports, decides the global norm and
/// learning rate and orders the optimizer step.
/// `restore` sets the virtual clock a resumed job starts from (its checkpoint's; ignored in
/// wall time). `timeout` (sent to itself) fails a step that outlives the step timeout,
/// naming the stages it still waits for. `stop` (from the heartbeat actor: a node fell
/// silent) fails the running step and every later one with the given reason. A failed step
/// fails every later one too: its stages may hold half-reduced gradients (no recovery yet).
/// A `script_update` injects its events (`deepcee inject`; its step is ignored): they take
/// effect at the next step boundary (runtime::take_injected), and the answer, once every
/// stage has them, is the step (from 1) they are in force from.
/// A `replan_order` (from the adapter) runs another plan from its step on: the new plan's
/// stages take their layers from the old ones before that step starts (coordinator_replan.hpp);
/// `plan` answers with the job in force and its stages. `kept` (from a keeper) says that
/// the snapshot of a stage (pipeline, stage) after a step is kept on another node.
using coordinator_actor = caf::typed_actor<
    caf::replies_to<step_atom, int64_t>::with<step_result>,
    caf::replies_to<restore_atom, double>::with<double>, caf::reacts_to<stage_report>,
    caf::reacts_to<timeout_atom, int64_t>, caf::reacts_to<stop_atom, std::string>,
    caf::reacts_to<lost_atom, std::string, std::string>,
    caf::reacts_to<peer_atom, int32_t, caf::strong_actor_ptr, std::string>,
    caf::replies_to<rebalance>::with<int64_t>, caf::reacts_to<wire_atom, caf::strong_actor_ptr>,
    caf::replies_to<script_update>::with<int64_t>, caf::replies_to<replan_order>::with<int64_t>,
    caf::replies_to<plan_atom>::with<job_in_force>,
    caf::reacts_to<kept_atom, int64_t, int32_t, int32_t>>;

/// The dynamic environment adapter (adapter_actor.hpp). It keeps its monitor's estimates
/// and, when the monitor reports drift, asks the policy and orders its decision from the
/// coordinator.
/// - `link_sample`: one transfer, as its sender saw it on the link model; a vector of them:
///   the parts of one message between node processes, as its receiver saw it (wall time).
/// - `step_result`: a step ended. The answer, once read, is the seconds its active probes
///   hold the next step's start (the coordinator ends the step then).
/// - `links`: each link the plan in force sends on, as the monitor sees it.
/// - `rebalance` is adapt_to: the given allocation from the given step on. The answer is the
///   step it takes effect at. `replan_order` is adapt_to of any plan (a rebalance when it
///   keeps the layout, else a re-plan).
/// - `decisions` answers with its recent decisions; `wire` names the coordinator.
/// - `(move, replan_order)`, from the coordinator: a re-plan is in force, follow its job.
using adapter_actor = caf::typed_actor<
    caf::reacts_to<link_sample>, caf::reacts_to<std::vector<link_sample>>,
    caf::replies_to<links_atom>::with<std::vector<runtime::link_report>>,
    caf::replies_to<samples_atom>::with<std::vector<link_sample>>,
    caf::replies_to<step_result>::with<double>, caf::replies_to<rebalance>::with<int64_t>,
    caf::replies_to<decisions_atom>::with<std::vector<adapt_record>>,
    caf::reacts_to<wire_atom, caf::strong_actor_ptr>, caf::replies_to<replan_order>::with<int64_t>,
    caf::reacts_to<move_atom, replan_order>>;

/// Published by the coordinator's node of a multi-process job: every other node first asks
/// it for the job's deployment (plan, training settings, time mode), then joins with its
/// stage actors; `await` answers with every stage once all nodes have joined, or an error
/// naming the missing nodes when the connect timeout passes, or at once naming a node that
/// sent an `error_report` (it cannot run the job). `stop` ends the job: the
/// registry quits with the reason (empty: success), which the other nodes watch for;
/// `(stop, interrupt, why)` ends it because the coordinator's node was interrupted
/// (node_registry.hpp: job_interrupted).
/// `(inject, source, text)` is `deepcee inject`: a script (TOML, read from `source`), or
/// `--event` lines when `source` is "--event". It is parsed against the job's cluster and
/// passed to the coordinator that `(wire, coordinator)` from this process names. The answer
/// is the coordinator's.
using node_registry_actor =
    caf::typed_actor<caf::replies_to<deployment_request>::with<job_deployment>,
                     caf::replies_to<joining_node>::with<int32_t>, caf::reacts_to<error_report>,
                     caf::replies_to<await_atom>::with<stage_wiring>, caf::reacts_to<timeout_atom>,
                     caf::reacts_to<stop_atom, std::string>,
                     caf::reacts_to<stop_atom, interrupt_atom, std::string>,
                     caf::reacts_to<wire_atom, caf::strong_actor_ptr>,
                     caf::replies_to<inject_atom, std::string, std::string>::with<int64_t>>;

/// One per node of a multi-process job (node_replanner.hpp): given the deployment of a re-plan
/// addressed to its node, spawns the node's stages (and devices apart) of the new plan and
/// answers with them: `stages` in the node's flat order, `devices` in its slot order.
/// `(probe, peer, n, bytes)`, from the adapter: sends `n` probe_msgs of `bytes` to the
/// replanner `peer` back to back, and answers with their sends and arrivals. A probe_msg
/// answers with its arrival on this node's clock.
using node_replanner_actor = caf::typed_actor<
    caf::replies_to<job_deployment>::with<stage_wiring>,
    caf::replies_to<probe_atom, caf::strong_actor_ptr, int32_t, int64_t>::with<probe_times>,
    caf::replies_to<probe_msg>::with<double>>;

/// One per node of a multi-process job (actors/heartbeat_actor.hpp): beats to its peers
/// every interval and reports a peer it has not heard from within the timeout.
/// `peer` names a peer to beat to (the coordinator's node learns each node at its join);
/// `stop` names the actor to tell (stop_atom, reason) when a peer falls silent;
/// `timeout` is its own tick. `progress` (step, steps, loss, samples/s, clock): from this
/// process, goes to every peer; from a peer, to the actor `stop` named.
using heartbeat_actor =
    caf::typed_actor<caf::reacts_to<heartbeat>,
                     caf::reacts_to<peer_atom, std::string, caf::strong_actor_ptr>,
                     caf::reacts_to<stop_atom, caf::actor>, caf::reacts_to<timeout_atom>,
                     caf::reacts_to<progress_atom, int64_t, int64_t, double, double, double>,
                     caf::reacts_to<lost_atom, std::string>, caf::reacts_to<move_atom, int64_t>>;

} // namespace deepcee::actors
