#pragma once

#include "actors/stage/stage_tensors.hpp"

#include <caf/error.hpp>

#include <string>

/// The end of a stage's step (its phase `reducing`): the group's all-reduce, the exchange of
/// gradient shares with the other pipelines' holders of its layers, the report to the
/// coordinator; and how any failure of the step reaches the coordinator.
namespace deepcee::actors {

/// "pipeline P stage S", for messages.
std::string where(const stage_state& st);

/// A failed handler never kills the actor: the coordinator fails the step with the reason
/// and its `code`, and the stage returns to idle.
void report_error(stage_self self, const std::string& what,
                  messages::error_code code = messages::error_code::internal);

/// What a failed answer of the group does: fails the step it belongs to (unless that step
/// was abandoned since), naming the reason. The error's code (a device's timeout, a peer
/// down) reaches the coordinator as it is; an error of CAF's own is internal.
class group_failure {
public:
  explicit group_failure(stage_self self);
  void operator()(caf::error& e) const;

private:
  stage_self self_;
  uint64_t epoch_;
};

/// Why a gradient share cannot be one for this stage (runtime::share_refusal); empty when
/// it can.
std::string check_share(const stage_state& st, const gradient_share& share);

/// The op list is done: the group all-reduces its devices' gradients, then the stage
/// exchanges the sum with the other pipelines' holders of its layers.
void finish_compute(stage_self self);

/// Sums the gradient shares once they complete the stage's layers, and hands the total to
/// the group's devices; the stage then reports its step.
void try_reduce(stage_self self);

} // namespace deepcee::actors
