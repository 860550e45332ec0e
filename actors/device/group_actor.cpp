#include "actors/device/group_actor.hpp"

#include "actors/device/device_actor.hpp"
#include "actors/device/gpu_all_reduce.hpp"
#include "actors/device/remote_device.hpp"
#include "actors/protocol/errors.hpp"
#include "actors/protocol/fan_out.hpp"
#include "actors/protocol/wire_format.hpp"
#include "kernels/train/stage_worker.hpp"
#include "runtime/step/device_places.hpp"

#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <spdlog/spdlog.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>

namespace deepcee::actors {

namespace {

using self_ptr = group_actor::stateful_pointer<group_state>;

/// Asks each device in `asked` (indices into the group) the request `request_of(k)` for the
/// k-th of them (a tuple of the message's elements) and, once all have answered, calls
/// `on_all(answers)` (in the order of `asked`), which answers `promise`. The first error (a
/// device's, or what `on_all` throws) answers it instead, and later answers are ignored.
template <class Answer, class Result, class RequestOf, class OnAll>
void ask_devices(self_ptr self, const std::vector<size_t>& asked,
                 caf::typed_response_promise<Result> promise, RequestOf request_of, OnAll on_all) {
  if (!self->state.unready.empty()) {
    promise.deliver(
        make_error(messages::error_code::internal, self->state.where + ": " + self->state.unready));
    return;
  }
  auto all = make_fan_in<Answer>(
      asked.size(),
      [self, promise, on_all](std::vector<Answer>& answers) mutable {
        try {
          on_all(answers);
        } catch (const std::exception& e) {
          promise.deliver(
              make_error(messages::error_code::internal, self->state.where + ": " + e.what()));
        }
      },
      [promise](caf::error& e) mutable { promise.deliver(std::move(e)); });
  for (size_t k : runtime::apart_first(self->state.apart, asked)) {
    const auto& device = self->state.devices.at(asked[k]);
    std::apply(
        [&](auto&&... xs) {
          self->request(device, caf::infinite, std::forward<decltype(xs)>(xs)...)
              .then(all->answer(k), all->failure());
        },
        request_of(k));
  }
  all->finish_if_empty();
}

/// ask_devices whose promise gets `finish(answers)`.
template <class Answer, class Result, class RequestOf, class Finish>
void gather_devices(self_ptr self, const std::vector<size_t>& asked,
                    caf::typed_response_promise<Result> promise, Finish finish,
                    RequestOf request_of) {
  ask_devices<Answer>(self, asked, promise, request_of,
                      [promise, finish](std::vector<Answer>& answers) mutable {
                        promise.deliver(finish(answers));
                      });
}

/// Tells every device its rank and the next device of the ring; from then on the group
/// takes work.
/// `boots`: each place's host boot ("" unknown). In shaped wall time a device holds what the
/// previous one sends it until its modelled arrival when both run in this process or on one
/// host boot (runtime::shaping_side_of); elsewhere the sender waits for it.
void wire_ring(self_ptr self, const std::vector<std::string>& boots = {}) {
  auto& st = self->state;
  const auto size = static_cast<int32_t>(st.devices.size());
  for (int32_t j = 0; j < size; ++j) {
    const auto here = static_cast<size_t>(j), next = static_cast<size_t>((j + 1) % size);
    const auto boot = [&](size_t j) { return j < boots.size() ? boots[j] : std::string(); };
    const bool held =
        runtime::shaping_side_of(st.ring[here]->node() == st.ring[next]->node(), boot(here),
                                 boot(next)) == runtime::shaping_side::hold_at_receiver;
    self->send(st.devices[here], ring_atom_v, st.ring[next], j, size, held);
  }
  st.unready.clear();
}

/// "device j (node n)" of device `j` of the group's stage, which runs apart from it.
std::string device_apart(const group_state& st, const job_context& job, size_t j) {
  return "device " + std::to_string(j) + " (node " +
         job.slot_node_name(job.layout.slot(st.flat, static_cast<int>(j))) + ")";
}

/// Shaped wall time: the emulated link from the stage's node to its device `j` on another
/// node, whose op answers wait for their round trip on it; null otherwise.
std::shared_ptr<const shaped_round_trip>
shaped_trip(const group_state& st, const std::shared_ptr<job_context>& job, size_t j) {
  if (!job->shaping())
    return nullptr;
  const auto [pipeline, stage] = job->stage_at(static_cast<size_t>(st.flat));
  return std::make_shared<const shaped_round_trip>(
      shaped_round_trip{.job = job, .link = job->cluster->stage(pipeline, stage).apart.at(j)});
}

/// Takes the device actors of the devices apart from this stage (by place) and wires the ring.
void take_devices_apart(self_ptr self, const std::shared_ptr<job_context>& job,
                        const std::vector<caf::strong_actor_ptr>& handed,
                        const std::vector<std::string>& node_boots) {
  auto& st = self->state;
  if (st.unready.empty())
    return; // a second wiring (a restarted coordinator's) changes nothing here
  const auto& model = job->plan.model;
  for (size_t j = 0; j < st.devices.size(); ++j) {
    if (st.devices[j])
      continue;
    if (j >= handed.size() || !handed[j]) {
      st.unready = device_apart(st, *job, j) + " was not handed over by its node";
      return;
    }
    st.devices[j] = spawn_remote_device(
        self, caf::actor_cast<device_actor>(handed[j]), st.where + " " + device_apart(st, *job, j),
        st.plan.first_layer == 0, st.plan.last_layer == model.n_layer + 2, model.context,
        shaped_trip(st, job, j));
    st.ring[j] = handed[j];
  }
  // The group's own devices run on its stage's node.
  wire_ring(self, runtime::device_boots(job->layout, st.flat, st.devices.size(), node_boots));
}

std::vector<size_t> all_devices(const group_state& st) {
  std::vector<size_t> out(st.devices.size());
  for (size_t j = 0; j < out.size(); ++j)
    out[j] = j;
  return out;
}

/// Sends `xs` to every device and answers `step` once all have done it (the first error
/// instead).
template <class... Ts>
caf::typed_response_promise<int64_t> to_every_device(self_ptr self, int64_t step, const Ts&... xs) {
  auto promise = self->make_response_promise<int64_t>();
  gather_devices<int64_t>(
      self, all_devices(self->state), promise, [step](std::vector<int64_t>&) { return step; },
      [xs...](size_t) { return std::make_tuple(xs...); });
  return promise;
}

/// All-reduces the devices' gradients of `step`, every device ending with the sums, then
/// calls `then(sums)`: the ring's sums when `on_host` asks for them (else null), null after
/// NCCL (GPUs of this process), which sums the gradients where they lie. The first error
/// answers `promise` instead.
template <class Result, class Then>
void all_reduce(self_ptr self, int64_t step, bool on_host,
                caf::typed_response_promise<Result> promise, Then then) {
  const auto all = all_devices(self->state);
  if (!self->state.gpu_all_reduce) { // the ring of actor messages
    ask_devices<gradient_values>(
        self, all, promise,
        [step, on_host](size_t) { return std::make_tuple(reduce_atom_v, step, on_host); },
        [then, on_host](std::vector<gradient_values>& reduced) mutable {
          then(on_host ? &reduced.at(0).values : nullptr);
        });
    return;
  }
  ask_devices<device_buffers>(
      self, all, promise, [](size_t) { return std::make_tuple(buffers_atom_v); },
      [self, then](std::vector<device_buffers>& by_device) mutable {
        std::vector<std::vector<std::span<float>>> per_rank;
        for (auto& d : by_device)
          per_rank.push_back(std::move(d.buffers));
        try {
          self->state.gpu_all_reduce(per_rank);
        } catch (...) { // NCCL aborted its communicators: later steps use the ring
          self->state.gpu_all_reduce = nullptr;
          throw;
        }
        then(nullptr);
      });
}

/// The stage's new split of its micro-batches among the devices (the adapter's rebalance),
/// from the stage as its step starts: the work that follows uses it.
caf::result<int64_t> take_split(self_ptr self, const messages::rebalance& r) {
  auto& s = self->state;
  const auto flat = static_cast<size_t>(s.flat);
  if (r.samples.empty())
    return r.effective_step;
  if (flat >= r.samples.size() || r.samples[flat].size() != s.plan.devices.size())
    return make_error(messages::error_code::bad_input,
                      s.where + ": a rebalance without a split for its devices");
  s.plan.samples = r.samples[flat];
  return r.effective_step;
}

/// The devices that take part in `work` and each one's part: its contiguous rows of the
/// micro-batch (kernels::sample_range). A device with no samples sits the op out.
std::pair<std::vector<size_t>, std::vector<device_work>> split_work(const group_state& s,
                                                                    const device_work& work) {
  std::vector<size_t> asked;
  std::vector<device_work> parts;
  for (size_t j = 0; j < s.devices.size(); ++j) {
    const auto [b0, b1] = kernels::sample_range(s.plan, static_cast<int>(j));
    if (b1 == b0)
      continue;
    device_work part = work;
    part.first_sample = work.first_sample + b0;
    part.samples = b1 - b0;
    const auto at = static_cast<size_t>(b0 * s.row_values);
    const auto n = static_cast<size_t>((b1 - b0) * s.row_values);
    if (!work.input.empty())
      part.input = work.input.subspan(at, n);
    if (!work.output.empty())
      part.output = work.output.subspan(at, n);
    asked.push_back(j);
    parts.push_back(std::move(part));
  }
  return {std::move(asked), std::move(parts)};
}

/// Runs `work` on the devices, each on its rows; answers the sum of their losses.
caf::result<double> run_work(self_ptr self, const device_work& work) {
  auto promise = self->make_response_promise<double>();
  auto [asked, parts] = split_work(self->state, work);
  auto shared_parts = std::make_shared<std::vector<device_work>>(std::move(parts));
  gather_devices<double, double>(
      self, asked, promise,
      [](std::vector<double>& losses) {
        double sum = 0; // in device order: the same sum whatever answers first
        for (double l : losses)
          sum += l;
        return sum;
      },
      [shared_parts](size_t k) { return std::make_tuple(shared_parts->at(k)); });
  return promise;
}

/// All-reduces `step`'s gradients and answers the sums, from the ring or, after NCCL, from
/// the first device.
caf::result<std::vector<float>> reduce_to_host(self_ptr self, int64_t step) {
  auto promise = self->make_response_promise<std::vector<float>>();
  all_reduce(self, step, true, promise, [self, promise](std::vector<float>* sums) mutable {
    if (sums) {
      promise.deliver(std::move(*sums));
      return;
    }
    gather_devices<std::vector<float>>( // the first device's, where NCCL left them
        self, {0}, promise,
        [](std::vector<std::vector<float>>& first) { return std::move(first.at(0)); },
        [](size_t) { return std::make_tuple(gradients_atom_v); });
  });
  return promise;
}

/// All-reduces `step`'s gradients where they lie and answers the squares of the sums.
caf::result<double> reduce_squares(self_ptr self, int64_t step) {
  auto promise = self->make_response_promise<double>();
  all_reduce(self, step, false, promise, [self, promise](std::vector<float>*) mutable {
    gather_devices<double>(
        self, {0}, promise, [](std::vector<double>& first) { return first.at(0); },
        [](size_t) { return std::make_tuple(squares_atom_v); });
  });
  return promise;
}

/// The first device's weights and moments. Every other device steps on the same reduced
/// gradients, so one whose digest differs (wherever it runs) is a bug.
caf::result<std::vector<kernels::parameter_state>> snapshot_checked(self_ptr self) {
  using states = std::vector<kernels::parameter_state>;
  auto promise = self->make_response_promise<states>();
  ask_devices<states>(
      self, {0}, promise, [](size_t) { return std::make_tuple(snapshot_atom_v); },
      [self, promise](std::vector<states>& first) mutable {
        auto snapshot = std::make_shared<states>(std::move(first.at(0)));
        std::vector<size_t> others;
        for (size_t j = 1; j < self->state.devices.size(); ++j)
          others.push_back(j);
        ask_devices<uint64_t>(
            self, others, promise, [](size_t) { return std::make_tuple(digest_atom_v); },
            [promise, snapshot, others](std::vector<uint64_t>& digests) mutable {
              const auto want = state_digest(*snapshot);
              for (size_t k = 0; k < digests.size(); ++k)
                if (digests[k] != want)
                  throw std::logic_error("device " + std::to_string(others[k]) +
                                         " of the stage holds other weights or moments "
                                         "than device 0");
              promise.deliver(std::move(*snapshot));
            });
      });
  return promise;
}

/// Spawns the devices that run on the stage's node and notes those on other nodes, which
/// the stage hands over later. With all of them here, the ring is wired at once, and NCCL
/// sums their gradients where it can.
void init_group(self_ptr self, const std::shared_ptr<job_context>& job, int pipeline, int stage) {
  auto& st = self->state;
  st.where = "pipeline " + std::to_string(pipeline) + " stage " + std::to_string(stage);
  st.flat = job->flat_index(pipeline, stage);
  st.plan =
      job->plan.pipelines.at(static_cast<size_t>(pipeline)).stages.at(static_cast<size_t>(stage));
  st.row_values = int64_t{job->plan.model.context} * job->plan.model.d_model;
  std::vector<kernels::backend_options> backends;
  for (size_t j = 0; j < st.plan.devices.size(); ++j) {
    st.apart.push_back(job->layout.apart(st.flat, static_cast<int>(j)));
    if (st.apart.back()) { // handed over by the stage
      st.unready += (st.unready.empty() ? "waits for its " : ", ") + device_apart(st, *job, j);
      st.devices.emplace_back();
      st.ring.emplace_back();
      continue;
    }
    st.devices.push_back(spawn_device(self, job, pipeline, stage, static_cast<int>(j)));
    st.ring.push_back(caf::actor_cast<caf::strong_actor_ptr>(st.devices.back()));
    backends.push_back(device_backend(*job, st.plan.devices[j]));
  }
  const bool apart = !st.unready.empty();
  try {
    if (!apart) // NCCL sums the GPUs of one process only
      st.gpu_all_reduce = make_gpu_all_reduce(backends);
  } catch (const std::exception& e) { // the ring of actor messages does it then
    spdlog::warn("{}: NCCL unavailable ({}), the devices all-reduce by a ring of messages",
                 st.where, e.what());
  }
  if (!apart)
    wire_ring(self);
}

} // namespace

group_actor::behavior_type group_behavior(self_ptr self, std::shared_ptr<job_context> job,
                                          int pipeline, int stage) {
  init_group(self, job, pipeline, stage);
  return {
      [self, job](devices_atom, const std::vector<caf::strong_actor_ptr>& handed,
                  const std::vector<std::string>& node_boots) {
        take_devices_apart(self, job, handed, node_boots);
      },
      [self](const messages::rebalance& r) -> caf::result<int64_t> { return take_split(self, r); },
      [self](const device_work& work) -> caf::result<double> { return run_work(self, work); },
      [self](reduce_atom, int64_t step) -> caf::result<std::vector<float>> {
        return reduce_to_host(self, step);
      },
      [self](squares_atom, int64_t step) -> caf::result<double> {
        return reduce_squares(self, step);
      },
      [self](const gradient_values& g) -> caf::result<int64_t> {
        return to_every_device(self, g.step, g);
      },
      [self](const optimize_order& order) -> caf::result<int64_t> {
        return to_every_device(self, order.step, order);
      },
      [self](snapshot_atom) -> caf::result<std::vector<kernels::parameter_state>> {
        return snapshot_checked(self);
      },
      [self](restore_atom, const stage_snapshot& snapshot) -> caf::result<int64_t> {
        return to_every_device(self, snapshot.step, restore_atom_v, snapshot);
      },
  };
}

} // namespace deepcee::actors
