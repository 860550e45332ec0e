#pragma once

#include "actors/protocol/interfaces.hpp"
#include "actors/protocol/job_context.hpp"
#include "kernels/train/checkpoint.hpp"

#include <caf/actor_system.hpp>

#include <chrono>
#include <filesystem>
#include <stdexcept>
#include <vector>

/// Checkpoints of a job whose layers live in stage actors, possibly on other nodes: the
/// weights and AdamW moments travel as actor messages between the stages and the process
/// that reads or writes the file.
namespace deepcee::actors {

/// The snapshots of `stages` (the first ones of the flat order), in that order. Throws
/// std::runtime_error naming the stage that failed or did not answer within `timeout`.
/// A stage asked for its state went away (its node was lost). The job goes on without the
/// node where it can, so the caller may try again after the next step.
struct stage_gone : std::runtime_error {
  using std::runtime_error::runtime_error;
};

std::vector<stage_snapshot> snapshot_stages(caf::actor_system& sys, const job_context& job,
                                            const std::vector<stage_actor>& stages,
                                            std::chrono::milliseconds timeout);

/// The whole model in model order, from pipeline 0's stages (which hold every layer once;
/// every other holder of a layer holds the same values after each step).
std::vector<kernels::parameter_state> gather_parameters(caf::actor_system& sys,
                                                        const job_context& job,
                                                        const std::vector<stage_actor>& stages,
                                                        std::chrono::milliseconds timeout);

/// Sends every stage of every pipeline the tensors of its layers, to continue after `step`
/// steps. A tensor that no stage holds, or one that a stage lacks or holds in another shape,
/// is an input_error naming `source`.
void restore_stages(caf::actor_system& sys, const job_context& job,
                    const std::vector<stage_actor>& stages,
                    const std::vector<kernels::parameter_state>& params, int64_t step,
                    const std::filesystem::path& source, std::chrono::milliseconds timeout);

} // namespace deepcee::actors
