#include "actors/net/pipe_sync.hpp"

#include "runtime/step/link_sharing.hpp"

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <string>

namespace deepcee::actors {

namespace {

/// Index into `links` of the shared link `link`, or -1.
int pipe_index(const std::vector<runtime::shared_link>& links, int link) {
  for (size_t k = 0; k < links.size(); ++k)
    if (links[k].link == link)
      return static_cast<int>(k);
  return -1;
}

int count_shared(const std::vector<runtime::shared_link>& links,
                 const std::vector<runtime::transfer_part>& parts) {
  return static_cast<int>(std::count_if(
      parts.begin(), parts.end(), [&](const auto& p) { return pipe_index(links, p.link) >= 0; }));
}

} // namespace

void pipe_sync::init(const job_context& job, const runtime::virtual_cluster& cluster, int pipeline,
                     int stage) {
  const auto links = job.piped_links();
  routes_[0] = {};
  routes_[1] = {};
  my_pipes_.clear();
  active_ = !links.empty();
  pipeline_ = pipeline;
  stage_ = stage;
  const int stages = job.stage_count(pipeline);
  prev_flat_ = stage > 0 ? job.flat_index(pipeline, stage - 1) : -1;
  next_flat_ = stage + 1 < stages ? job.flat_index(pipeline, stage + 1) : -1;
  const auto& mine = cluster.stage(pipeline, stage);
  for (const auto role : {tensor_role::activation, tensor_role::gradient}) {
    const bool forward = role == tensor_role::activation;
    const auto& parts = forward ? mine.act_parts : mine.grad_parts;
    auto& r = routes_[static_cast<size_t>(role)];
    std::vector<runtime::transfer_part> shared;
    for (size_t k = 0; k < parts.size(); ++k) {
      const int pipe = pipe_index(links, parts[k].link);
      if (pipe < 0) {
        r.local.push_back(parts[k]);
        continue;
      }
      r.shared.emplace_back(static_cast<int32_t>(k), pipe);
      shared.push_back(parts[k]);
      auto it = std::find_if(my_pipes_.begin(), my_pipes_.end(),
                             [&](const my_pipe& p) { return p.pipe == pipe; });
      if (it == my_pipes_.end())
        it = my_pipes_.insert(my_pipes_.end(), my_pipe{pipe, false, false, {}});
      (forward ? it->activations : it->gradients) = true;
    }
    r.shared_transit = runtime::min_transit(shared);
    // What this stage receives in this role comes from the neighbour that sends it.
    const int from = forward ? stage - 1 : stage + 1;
    if (from >= 0 && from < stages) {
      const auto& sender = cluster.stage(pipeline, from);
      const auto& in = forward ? sender.act_parts : sender.grad_parts;
      expected_[static_cast<size_t>(role)] = count_shared(links, in);
      in_transit_[static_cast<size_t>(role)] = runtime::min_transit(in);
    }
  }
}

void pipe_sync::wire(const std::vector<caf::strong_actor_ptr>& pipes) {
  pipes_.clear();
  for (const auto& p : pipes)
    pipes_.push_back(caf::actor_cast<pipe_actor>(p));
  size_t needed = 0;
  for (const auto& p : my_pipes_)
    needed = std::max(needed, static_cast<size_t>(p.pipe) + 1);
  if (pipes_.size() < needed)
    throw std::invalid_argument("wiring carries " + std::to_string(pipes_.size()) +
                                " pipes, this stage sends on shared link " +
                                std::to_string(needed - 1));
}

bool pipe_sync::settle(tensor_role role, int64_t step, int micro, double& arrival_s) {
  const int expected = expected_[static_cast<size_t>(role)];
  if (!active_ || expected == 0)
    return true;
  arrivals_.erase(arrivals_.begin(),
                  arrivals_.lower_bound({step, std::numeric_limits<int>::min(), 0}));
  auto it = arrivals_.find({step, static_cast<int>(role), micro});
  if (it == arrivals_.end() || it->second.count < expected)
    return false;
  arrival_s = std::max(arrival_s, it->second.arrival_s);
  arrivals_.erase(it);
  return true;
}

void pipe_sync::on_arrival(const pipe_arrival& a) {
  const bool forward = a.role == static_cast<int32_t>(tensor_role::activation);
  if ((!forward && a.role != static_cast<int32_t>(tensor_role::gradient)) ||
      a.pipeline != pipeline_ || a.stage != (forward ? stage_ - 1 : stage_ + 1))
    throw std::invalid_argument("arrival notice from a pipe about pipeline " +
                                std::to_string(a.pipeline) + " stage " + std::to_string(a.stage) +
                                ", not a neighbour that sends to this stage");
  auto& n = arrivals_[{a.step, a.role, a.micro_batch}];
  ++n.count;
  n.arrival_s = std::max(n.arrival_s, a.arrival_time);
}

void pipe_sync::on_horizon(const send_horizon& h) {
  const runtime::step_time t{h.step, h.time};
  if (h.pipeline == pipeline_ && h.stage == stage_ - 1 &&
      h.role == static_cast<int32_t>(tensor_role::activation))
    from_prev_ = std::max(from_prev_, t);
  else if (h.pipeline == pipeline_ && h.stage == stage_ + 1 &&
           h.role == static_cast<int32_t>(tensor_role::gradient))
    from_next_ = std::max(from_next_, t);
  else
    throw std::invalid_argument("send horizon from pipeline " + std::to_string(h.pipeline) +
                                " stage " + std::to_string(h.stage) +
                                ", not a neighbour that sends to this stage");
}

double pipe_sync::unreceived_bound(tensor_role role, int64_t step) const {
  const auto& promise = role == tensor_role::activation ? from_prev_ : from_next_;
  if (promise.step < step)
    return runtime::unknown_s; // the sender has not started this step yet
  if (promise.step > step)
    return runtime::never_s;
  return runtime::arrival_bound(promise.time_s, in_transit_[static_cast<size_t>(role)]);
}

} // namespace deepcee::actors
