#pragma once

#include "actors/net/link_layer.hpp"
#include "actors/protocol/interfaces.hpp"
#include "actors/protocol/job_context.hpp"
#include "runtime/step/pipe_order.hpp"
#include "runtime/step/send_bounds.hpp"

#include <caf/actor_cast.hpp>

#include <algorithm>
#include <map>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

namespace deepcee::actors {

/// A stage's side of conservative synchronisation on shared links (pipe_actor.hpp). Parts
/// on links that only this stage sends on go through its link_layer as before; parts on a
/// shared link go to that link's pipe, and the receiver waits for the pipe's arrival
/// notices. After every change the stage promises lower bounds on its next send times to
/// its pipes and neighbours (publish), so that pipes commit in send-time order without
/// ever waiting on a cycle: each promise adds op durations and link latencies, so bounds
/// grow around every cycle. A job without shared links sends none of these messages.
class pipe_sync {
public:
  /// Reads which of the stage's links are shared (runtime::shared_links) and its parts on
  /// them in `cluster` (the job's, or an allocation's).
  void init(const job_context& job, const runtime::virtual_cluster& cluster, int pipeline,
            int stage);
  /// Takes the parts of a new allocation (`cluster`, which `r` ordered) from its step on,
  /// and forwards `r` to the pipes this stage sends on, before its first request of that
  /// step. Throws std::invalid_argument when the stage would send on other shared links
  /// than before (a device split that moves transfers to other links): the pipes' order
  /// of senders is fixed when the job starts.
  template <class Self>
  void rebase(Self* self, const job_context& job, const runtime::virtual_cluster& cluster,
              const rebalance& r) {
    if (!active_)
      return;
    const auto before = my_pipes_;
    init(job, cluster, pipeline_, stage_);
    const auto same = [](const my_pipe& a, const my_pipe& b) {
      return a.pipe == b.pipe && a.activations == b.activations && a.gradients == b.gradients;
    };
    if (!std::equal(before.begin(), before.end(), my_pipes_.begin(), my_pipes_.end(), same))
      throw std::invalid_argument("the allocation of step " + std::to_string(r.effective_step) +
                                  " moves this stage's transfers to other shared links");
    my_pipes_ = before; // with the promises sent so far
    for (const auto& p : my_pipes_)
      self->send(pipes_.at(static_cast<size_t>(p.pipe)), r);
  }
  /// Takes the parts of `cluster`, which the script `u` (injected events) set from its step
  /// on, and forwards `u` to the pipes this stage sends on, before its first request of
  /// that step. A script changes link times, never which links a stage sends on.
  template <class Self>
  void rescript(Self* self, const job_context& job, const runtime::virtual_cluster& cluster,
                const script_update& u) {
    if (!active_)
      return;
    const auto before = my_pipes_;
    init(job, cluster, pipeline_, stage_);
    my_pipes_ = before; // with the promises sent so far
    for (const auto& p : my_pipes_)
      self->send(pipes_.at(static_cast<size_t>(p.pipe)), u);
  }
  /// The pipes of the job, in runtime::shared_links order (stage_wiring::pipes).
  void wire(const std::vector<caf::strong_actor_ptr>& pipes);
  bool active() const { return active_; }

  /// Sends one transfer of `role` at `send_s`; returns when its last part arrives, or a
  /// lower bound while pipes still decide some part.
  template <class Self>
  double send(Self* self, link_layer& links, tensor_role role,
              const std::vector<runtime::transfer_part>& parts, double send_s, link_sample meta) {
    if (!active_)
      return links.send(self, parts, send_s, meta);
    const auto& route = routes_[static_cast<size_t>(role)];
    double arrival = links.send(self, route.local, send_s, meta);
    for (const auto& [part, pipe] : route.shared)
      self->send(pipes_.at(static_cast<size_t>(pipe)),
                 pipe_request{meta.step, static_cast<int32_t>(role), meta.pipeline, meta.stage,
                              meta.micro_batch, part, send_s});
    if (!route.shared.empty())
      arrival = std::max(arrival, runtime::arrival_bound(send_s, route.shared_transit));
    return arrival;
  }

  /// A received transfer of `role` from the neighbour that sends it: true once every pipe
  /// has told its part's arrival, which is then folded into `arrival_s`. Call it right
  /// before the transfer is used: it forgets the notices.
  bool settle(tensor_role role, int64_t step, int micro, double& arrival_s);
  void on_arrival(const pipe_arrival& a);
  void on_horizon(const send_horizon& h);

  /// A lower bound on when the transfer of `role` that has not reached this stage yet will
  /// arrive, from its sender's latest promise.
  double unreceived_bound(tensor_role role, int64_t step) const;

  /// Promises the stage's next send times of `step`: to its neighbours (what they receive
  /// from it) and to the pipe of every shared link it sends on. Only raised promises go out.
  template <class Self>
  void publish(Self* self, const std::vector<stage_actor>& peers, int64_t step,
               const runtime::send_bounds& b) {
    if (!active_ || step <= 0)
      return;
    const auto act = runtime::finite_promise({step, b.activation});
    const auto grad = runtime::finite_promise({step, b.gradient});
    const auto promise = [&](runtime::step_time& sent, runtime::step_time now, int to,
                             tensor_role role) {
      if (to < 0 || !(sent < now))
        return;
      sent = now;
      self->send(peers.at(static_cast<size_t>(to)),
                 send_horizon{now.step, now.time_s, pipeline_, stage_, static_cast<int32_t>(role)});
    };
    promise(sent_act_, act, next_flat_, tensor_role::activation);
    promise(sent_grad_, grad, prev_flat_, tensor_role::gradient);
    for (auto& p : my_pipes_) {
      auto bound = runtime::finite_promise({step, runtime::never_s});
      if (p.activations && act < bound)
        bound = act;
      if (p.gradients && grad < bound)
        bound = grad;
      if (!(p.sent < bound))
        continue;
      p.sent = bound;
      self->send(pipes_.at(static_cast<size_t>(p.pipe)),
                 send_horizon{bound.step, bound.time_s, pipeline_, stage_, -1});
    }
  }

private:
  struct route {
    std::vector<runtime::transfer_part> local;
    std::vector<std::pair<int32_t, int>> shared; ///< part index, pipe index
    double shared_transit = 0;
  };
  struct my_pipe {
    int pipe = 0;
    bool activations = false, gradients = false;
    runtime::step_time sent;
  };
  struct notices {
    int count = 0;
    double arrival_s = runtime::unknown_s;
  };

  bool active_ = false;
  int pipeline_ = 0, stage_ = 0;
  int prev_flat_ = -1, next_flat_ = -1;
  route routes_[2];               ///< by tensor_role
  int expected_[2] = {0, 0};      ///< by role: pipe notices per received transfer
  double in_transit_[2] = {0, 0}; ///< by role: least transit of a received transfer
  std::vector<my_pipe> my_pipes_;
  std::vector<pipe_actor> pipes_;
  runtime::step_time sent_act_, sent_grad_;
  runtime::step_time from_prev_, from_next_; ///< neighbours' promises to this stage
  std::map<std::tuple<int64_t, int, int>, notices> arrivals_; ///< (step, role, micro)
};

} // namespace deepcee::actors
