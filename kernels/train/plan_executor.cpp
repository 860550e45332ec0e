#include "kernels/train/plan_executor.hpp"

#include "runtime/base/loss_scale.hpp"
#include "runtime/base/lr_schedule.hpp"
#include "runtime/schedule/op_readiness.hpp"

#include <cmath>
#include <map>
#include <numeric>
#include <stdexcept>

namespace deepcee::kernels {
namespace {

int64_t row_elements(const tensor& t) {
  return t.numel() / t.dim(0);
}

/// Rows [begin, end) of t's first dimension, as a tensor of their own.
tensor rows(backend& be, const tensor& t, int begin, int end) {
  std::vector<int64_t> shape = t.shape();
  shape[0] = end - begin;
  tensor out = be.alloc(shape);
  be.copy(out.f32(), t.f32() + begin * row_elements(t), out.numel());
  return out;
}

void put_rows(backend& be, tensor& dst, int begin, const tensor& src) {
  be.copy(dst.f32() + begin * row_elements(dst), src.f32(), src.numel());
}

tensor host_rows(backend& be, const std::vector<int32_t>& v, int context, int begin, int end) {
  std::vector<int32_t> part(v.begin() + int64_t{begin} * context,
                            v.begin() + int64_t{end} * context);
  return be.from_host(part, {end - begin, context});
}

} // namespace

plan_executor::plan_executor(backend& be, const runtime::plan& plan,
                             const runtime::train_config& config,
                             const runtime::text_corpus& corpus)
    : be_(be), plan_(plan), config_(config), corpus_(corpus) {
  if (plan.global_batch() != config.batch)
    throw std::invalid_argument("plan_executor: the plan's global batch " +
                                std::to_string(plan.global_batch()) + " is not the config's " +
                                std::to_string(config.batch));
  corpus_.require_context(config.model.context);
  for (const auto& pipe : plan.pipelines) {
    auto& stages = stages_.emplace_back();
    for (const auto& stage : pipe.stages) {
      auto& st = stages.emplace_back();
      for (size_t j = 0; j < stage.devices.size(); ++j) {
        st.devices.push_back(std::make_unique<stage_worker>(
            be, config.model, stage.first_layer, stage.last_layer, config.seed, config.optimizer));
        st.devices.back()->set_recompute(stage.recompute);
      }
    }
    int p = static_cast<int>(pipe.stages.size());
    schedules_.push_back(
        pipe.schedule == runtime::schedule_kind::greedy
            ? runtime::make_greedy_schedule(runtime::uniform_costs(p), pipe.micro_batches)
            : runtime::make_schedule(pipe.schedule, p, pipe.micro_batches));
  }
}

std::vector<stage_worker*> plan_executor::all_workers() {
  std::vector<stage_worker*> out;
  for (auto& pipe : stages_)
    for (auto& stage : pipe)
      for (auto& w : stage.devices)
        out.push_back(w.get());
  return out;
}

void plan_executor::run_op(int p, int s, const runtime::schedule_op& op,
                           const runtime::token_batch& batch, double& loss_sum) {
  const auto& stage_plan = plan_.pipelines[p].stages[s];
  auto& stage = stages_[p][s];
  const int last = static_cast<int>(stages_[p].size()) - 1;
  const int i = op.micro, b = plan_.micro_batch_size, T = config_.model.context;
  const int first_sample = micro_batch_offset(plan_, p, i);
  const float loss_scale = runtime::loss_scale(config_.batch, T);

  switch (op.kind) {
  case runtime::op_kind::forward: {
    tensor out = s < last ? be_.alloc({b, T, config_.model.d_model}) : tensor{};
    for (size_t j = 0; j < stage.devices.size(); ++j) {
      auto [lo, hi] = sample_range(stage_plan, static_cast<int>(j));
      if (lo == hi)
        continue;
      tensor input = s == 0 ? host_rows(be_, batch.tokens, T, first_sample + lo, first_sample + hi)
                            : rows(be_, activations_[p][s - 1][i], lo, hi);
      if (s == last) {
        tensor targets = host_rows(be_, batch.targets, T, first_sample + lo, first_sample + hi);
        auto losses = be_.to_host<float>(stage.devices[j]->forward(i, input, &targets, loss_scale));
        loss_sum += std::accumulate(losses.begin(), losses.end(), 0.0);
      } else {
        put_rows(be_, out, lo, stage.devices[j]->forward(i, input, nullptr, 1.0f));
      }
    }
    if (s < last)
      activations_[p][s][i] = out;
    return;
  }
  case runtime::op_kind::backward_input: {
    tensor dx = s > 0 ? be_.alloc({b, T, config_.model.d_model}) : tensor{};
    for (size_t j = 0; j < stage.devices.size(); ++j) {
      auto [lo, hi] = sample_range(stage_plan, static_cast<int>(j));
      if (lo == hi)
        continue;
      tensor grad = s < last ? rows(be_, gradients_[p][s][i], lo, hi) : tensor{};
      tensor part = stage.devices[j]->backward_input(i, grad);
      if (s > 0)
        put_rows(be_, dx, lo, part);
    }
    if (s > 0)
      gradients_[p][s - 1][i] = dx;
    return;
  }
  case runtime::op_kind::backward_weight:
    for (size_t j = 0; j < stage.devices.size(); ++j)
      if (stage_plan.samples[j] > 0)
        stage.devices[j]->backward_weight(i);
    return;
  }
}

void plan_executor::run_pipeline(int p, const runtime::token_batch& batch, double& loss_sum) {
  const auto& schedule = schedules_[p];
  const size_t n_stages = stages_[p].size();
  const int m = plan_.pipelines[p].micro_batches;
  activations_[p].assign(n_stages, std::vector<tensor>(static_cast<size_t>(m)));
  gradients_[p].assign(n_stages, std::vector<tensor>(static_cast<size_t>(m)));
  // Each stage runs its list in order, an op as soon as op_readiness says its input is
  // there; the tensors themselves wait in activations_ and gradients_.
  std::vector<runtime::op_list_run> runs;
  for (size_t s = 0; s < n_stages; ++s)
    runs.emplace_back(schedule.stages[s], runtime::place_in(schedule, static_cast<int>(s)), m, 0.0);
  for (bool progress = true; progress;) {
    progress = false;
    for (size_t s = 0; s < n_stages; ++s) {
      auto& run = runs[s];
      while (!run.done() && run.readiness().ready(run.next())) {
        const auto op = run.next();
        run_op(p, static_cast<int>(s), op, batch, loss_sum);
        const auto flow = run.complete_next(0.0);
        if (flow == runtime::tensor_flow::activation_to_next)
          runs[s + 1].readiness().input_arrived(runtime::op_input::activation, op.micro, 0.0);
        else if (flow == runtime::tensor_flow::gradient_to_previous)
          runs[s - 1].readiness().input_arrived(runtime::op_input::gradient, op.micro, 0.0);
        progress = true;
      }
    }
  }
  for (size_t s = 0; s < n_stages; ++s)
    if (!runs[s].done())
      throw std::logic_error("plan_executor: pipeline " + std::to_string(p) + " stage " +
                             std::to_string(s) + " is stuck at op " +
                             runtime::to_string(runs[s].next()));
}

void plan_executor::all_reduce_gradients() {
  // Every holder of a layer computed the gradient of its own samples, each already scaled
  // by 1 / (global tokens): the sum over holders is the global-batch gradient.
  std::map<std::string, std::vector<parameter*>> holders;
  for (stage_worker* w : all_workers())
    for (parameter* prm : w->model().parameters())
      holders[prm->name].push_back(prm);
  for (auto& [_, list] : holders) {
    for (size_t k = 1; k < list.size(); ++k)
      be_.axpy(list[0]->grad.f32(), 1.0f, list[k]->grad.f32(), list[0]->grad.numel());
    for (size_t k = 1; k < list.size(); ++k)
      be_.copy(list[k]->grad.f32(), list[0]->grad.f32(), list[0]->grad.numel());
  }
}

trainer::step_result plan_executor::train_step() {
  trainer::step_result r;
  r.step = steps_done_ + 1;
  auto batch =
      corpus_.sample_batch(runtime::corpus_split::train, config_.batch, config_.model.context,
                           config_.seed, static_cast<uint64_t>(r.step));
  for (stage_worker* w : all_workers())
    w->model().zero_grad();
  const size_t pipes = stages_.size();
  activations_.resize(pipes);
  gradients_.resize(pipes);
  double loss_sum = 0;
  for (size_t p = 0; p < pipes; ++p)
    run_pipeline(static_cast<int>(p), batch, loss_sum);
  all_reduce_gradients();

  // The norm counts each parameter once, whatever the number of its replicas.
  std::map<std::string, double> squares;
  for (stage_worker* w : all_workers())
    for (parameter* prm : w->model().parameters())
      if (!squares.count(prm->name))
        squares[prm->name] = be_.sum_squares(prm->grad.f32(), prm->grad.numel());
  double sum = 0;
  for (auto& [_, v] : squares)
    sum += v;
  r.grad_norm = std::sqrt(sum);
  r.lr = runtime::learning_rate(config_.optimizer, r.step, config_.steps);
  for (stage_worker* w : all_workers())
    w->optimizer().step(static_cast<float>(r.lr), r.step, r.grad_norm);
  r.loss = runtime::mean_loss(loss_sum, config_.batch, config_.model.context);
  steps_done_ = r.step;
  return r;
}

} // namespace deepcee::kernels
