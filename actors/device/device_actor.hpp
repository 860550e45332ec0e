#pragma once

#include "actors/device/device_worker.hpp"
#include "actors/protocol/interfaces.hpp"
#include "actors/protocol/job_context.hpp"

#include "runtime/step/gradient_pieces.hpp"
#include "runtime/step/ring_allreduce.hpp"
#include "runtime/step/shaped_delivery.hpp"
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include <caf/typed_response_promise.hpp>

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace deepcee::actors {

/// One device of a stage: its worker, and its part of the group's ring all-reduce.
struct device_state {
  static inline const char* name = "device";

  std::string where; ///< "pipeline p stage s device j", for errors
  std::shared_ptr<const job_context> job;
  std::unique_ptr<device_worker> worker; ///< none when its backend failed at start:
  std::string broken;                    ///< then why, the answer to every request
  caf::actor next;                       ///< the next device of the ring
  int rank = 0, size = 1;
  /// The ring of the running reduce, the step it reduces, and who waits for its result.
  std::optional<runtime::ring_allreduce> ring;
  int64_t ring_step = -1;
  bool sent_round = false;      ///< this round's chunk has gone to `next`
  bool answer_sums = false;     ///< the reduce answers with the sums (rank 0)
  size_t ring_chunk_values = 1; ///< job_context's
  /// Shaped wall time: this device's hop of the ring (virtual_stage::ring_parts), on
  /// which each round's chunk waits in the process's link FIFOs before it leaves.
  std::optional<runtime::transfer_part> hop;
  /// Shaped wall time: whether the next device holds a chunk until its modelled arrival
  /// (the group's `ring` says), so that it leaves at once; chunks from the previous device
  /// held here until theirs; the longest hold the job's link model allows.
  bool hold_at_next = false;
  runtime::hold_lines<ring_chunk> held;
  double max_hold_s = -1;
  caf::typed_response_promise<gradient_values> reduced;
  /// Rounds that came from the previous device before this one could apply them: the
  /// rounds of at most two steps (runtime::early_chunk_refusal).
  std::vector<ring_chunk> early;
  std::string refused; ///< a chunk refused between reduces: the next one fails with it
  /// The pieces of gradients so far (device_messages.hpp's gradient_values).
  runtime::gradient_pieces pieces;
};

/// The backend of cluster device `device` in this job (device_worker.hpp's device_backend).
kernels::backend_options device_backend(const job_context& job, int device);

/// Spawns device `index` of stage `stage` of pipeline `pipeline`, linked to `parent` (its
/// group): its weights are built before it handles a message.
template <class Parent>
device_actor spawn_device(Parent* parent, std::shared_ptr<job_context> job, int pipeline, int stage,
                          int index);

device_actor::behavior_type device_behavior(device_actor::stateful_pointer<device_state> self,
                                            std::shared_ptr<job_context> job, int pipeline,
                                            int stage, int index);

/// The device actors node `node` runs for stages on other nodes (job_context::layout's
/// apart_on), in slot order; invalid handles in dry mode (no weights, nothing to compute).
std::vector<device_actor> spawn_devices_apart(caf::actor_system& sys,
                                              const std::shared_ptr<job_context>& job, int node);

template <class Parent>
device_actor spawn_device(Parent* parent, std::shared_ptr<job_context> job, int pipeline, int stage,
                          int index) {
  return parent->template spawn<caf::linked>(device_behavior, std::move(job), pipeline, stage,
                                             index);
}

} // namespace deepcee::actors
