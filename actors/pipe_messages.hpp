#pragma once

#include <caf/meta/type_name.hpp>

#include <cstdint>

/// The messages of conservative synchronisation on shared links (see pipe_actor.hpp): kept
/// apart from messages.hpp because only stages and pipe actors exchange them.
namespace deepcee::actors {

/// A stage puts one part of a transfer (index `part` into its act_parts or grad_parts,
/// by `role`) on a shared link at virtual time `send_s`. The payload goes straight to the
/// receiving stage; the pipe only decides when it arrives.
struct pipe_request {
  int64_t step = 0;
  int32_t role = 0; ///< tensor_role
  int32_t pipeline = 0;
  int32_t stage = 0; ///< the sender
  int32_t micro = 0;
  int32_t part = 0;
  double send_s = 0;
};

/// A promise ("null message"): the sender's next transfers of `step` leave at `time_s` or
/// later (infinity: none left in this step). To a pipe it covers every transfer the
/// stage puts on that link; to a neighbour stage, the transfers of `role` it receives.
struct send_horizon {
  int64_t step = 0;
  double time_s = 0;
  int32_t pipeline = 0;
  int32_t stage = 0; ///< the sender
  int32_t role = 0;  ///< tensor_role
};

/// A pipe committed a part of the transfer (step, role, sender, micro): it arrives at
/// `arrival_s`. The receiver waits for every such notice before it uses the payload.
struct pipe_arrival {
  int64_t step = 0;
  int32_t role = 0;
  int32_t pipeline = 0;
  int32_t stage = 0; ///< the sender
  int32_t micro = 0;
  double arrival_s = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, pipe_request& x) {
  return f(caf::meta::type_name("pipe_request"), x.step, x.role, x.pipeline, x.stage, x.micro,
           x.part, x.send_s);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, send_horizon& x) {
  return f(caf::meta::type_name("send_horizon"), x.step, x.time_s, x.pipeline, x.stage, x.role);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, pipe_arrival& x) {
  return f(caf::meta::type_name("pipe_arrival"), x.step, x.role, x.pipeline, x.stage, x.micro,
           x.arrival_s);
}

} // namespace deepcee::actors
