#include "actors/job/checkpoint_transfer.hpp"

#include "actors/device/device_worker.hpp"
#include "actors/protocol/errors.hpp"
#include "actors/protocol/wire_format.hpp"
#include "runtime/base/errors.hpp"

#include <caf/event_based_actor.hpp>
#include <caf/scoped_actor.hpp>
#include <caf/sec.hpp>

#include <optional>
#include <stdexcept>
#include <string>

namespace deepcee::actors {

namespace {

/// Asks `stage` and waits for its answer, its end or the timeout, whichever comes first.
/// A lost proxy does not answer pending requests, so a request to a stage whose node went
/// away would otherwise wait out its whole timeout. An error that the stage marks as the
/// input's (bad_input) is an input_error; any other a runtime_error naming `who`.
template <class Reply, class... Ts>
Reply ask(caf::actor_system& sys, const stage_actor& stage, std::chrono::milliseconds timeout,
          const std::string& who, Ts... xs) {
  caf::scoped_actor self{sys};
  auto waiter = caf::actor_cast<caf::actor>(self);
  sys.spawn([waiter, stage, timeout, xs...](caf::event_based_actor* a) {
    a->monitor(stage);
    a->set_down_handler([a, waiter](caf::down_msg& d) {
      a->send(waiter, make_error(messages::error_code::peer_down,
                                 "it went away (" + a->system().render(d.reason) + ")"));
      a->quit();
    });
    a->request(stage, timeout, xs...)
        .then(
            [a, waiter](Reply& r) {
              a->send(waiter, std::move(r));
              a->quit();
            },
            [a, waiter](caf::error& e) {
              a->send(waiter, std::move(e));
              a->quit();
            });
  });
  std::optional<Reply> reply;
  caf::error error;
  self->receive([&](Reply& r) { reply = std::move(r); },
                [&](caf::error& e) { error = std::move(e); },
                caf::after(timeout + std::chrono::seconds(1)) >>
                    [&] { error = caf::make_error(caf::sec::request_timeout); });
  if (reply)
    return std::move(*reply);
  if (code_of(error) == messages::error_code::bad_input)
    throw runtime::input_error(sys.render(error));
  if (code_of(error) == messages::error_code::peer_down)
    throw stage_gone(who + ": " + sys.render(error));
  throw std::runtime_error(who + ": " + sys.render(error));
}

} // namespace

std::vector<stage_snapshot> snapshot_stages(caf::actor_system& sys, const job_context& job,
                                            const std::vector<stage_actor>& stages,
                                            std::chrono::milliseconds timeout) {
  std::vector<stage_snapshot> out;
  for (size_t k = 0; k < stages.size(); ++k)
    out.push_back(ask<stage_snapshot>(sys, stages[k], timeout, "checkpoint: " + job.stage_name(k),
                                      snapshot_atom_v));
  return out;
}

std::vector<kernels::parameter_state> gather_parameters(caf::actor_system& sys,
                                                        const job_context& job,
                                                        const std::vector<stage_actor>& stages,
                                                        std::chrono::milliseconds timeout) {
  const std::vector<stage_actor> first(stages.begin(), stages.begin() + job.stage_count(0));
  std::vector<kernels::parameter_state> out;
  for (auto& s : snapshot_stages(sys, job, first, timeout))
    for (auto& p : s.params)
      out.push_back(std::move(p));
  return out;
}

void restore_stages(caf::actor_system& sys, const job_context& job,
                    const std::vector<stage_actor>& stages,
                    const std::vector<kernels::parameter_state>& params, int64_t step,
                    const std::filesystem::path& source, std::chrono::milliseconds timeout) {
  const int n_layer = job.plan.model.n_layer;
  for (const auto& p : params) {
    int layer = -1;
    try {
      layer = layer_of_parameter(p.name, n_layer);
    } catch (const std::exception&) {
    }
    if (layer < 0 || layer >= n_layer + 2)
      runtime::fail_input(source, 0,
                          "tensor '" + p.name + "' is not a parameter of the job's model (" +
                              std::to_string(n_layer) + " blocks)");
  }
  size_t k = 0;
  for (size_t q = 0; q < job.plan.pipelines.size(); ++q)
    for (size_t t = 0; t < job.plan.pipelines[q].stages.size(); ++t) {
      const auto& sp = job.plan.pipelines[q].stages[t];
      stage_snapshot s;
      s.step = step;
      s.pipeline = static_cast<int32_t>(q);
      s.stage = static_cast<int32_t>(t);
      s.source = source.string();
      for (const auto& p : params) {
        const int layer = layer_of_parameter(p.name, n_layer);
        if (layer >= sp.first_layer && layer < sp.last_layer)
          s.params.push_back(p);
      }
      if (stages.at(k)->node() != sys.node())
        if (auto why = too_large_to_send(s); !why.empty())
          throw std::runtime_error("resume: " + job.stage_name(k) + ": " + why);
      ask<int64_t>(sys, stages.at(k), timeout, "resume: " + job.stage_name(k), restore_atom_v,
                   std::move(s));
      ++k;
    }
}

} // namespace deepcee::actors
