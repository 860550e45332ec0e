#include "kernels/train/stage_worker.hpp"

#include "kernels/gpt/micro_state.hpp"

namespace deepcee::kernels {

stage_worker::stage_worker(backend& be, const runtime::model_config& model, int first_layer,
                           int last_layer, uint64_t seed,
                           const runtime::optimizer_config& optimizer)
    : model_(be, model, first_layer, last_layer, seed),
      optimizer_(be, model_.parameters(), optimizer) {}

tensor stage_worker::forward(int micro, const tensor& input, const tensor* targets,
                             float loss_scale) {
  tensor out = model_.forward(micro, input, targets, loss_scale);
  if (recompute_) {
    // Callers never modify a tensor after passing it (layer.hpp), so sharing is keeping.
    model_.forget(micro);
    kept_[micro] = {input, targets ? *targets : tensor{}, loss_scale};
  }
  return out;
}

tensor stage_worker::backward_input(int micro, const tensor& grad_output) {
  if (auto it = kept_.find(micro); it != kept_.end()) {
    const kept_input k = std::move(it->second);
    kept_.erase(it);
    model_.forward(micro, k.input, k.targets.empty() ? nullptr : &k.targets, k.loss_scale);
  }
  return model_.backward_input(micro, grad_output);
}

size_t stage_worker::held_bytes() const {
  size_t n = model_.saved_bytes();
  for (const auto& [micro, k] : kept_)
    n += tensor_bytes({&k.input, &k.targets});
  return n;
}

void stage_worker::backward_weight(int micro) {
  model_.backward_weight(micro);
}

std::pair<int, int> sample_range(const runtime::stage_plan& stage, int j) {
  int begin = 0;
  for (int k = 0; k < j; ++k)
    begin += stage.samples[static_cast<size_t>(k)];
  return {begin, begin + stage.samples[static_cast<size_t>(j)]};
}

int micro_batch_offset(const runtime::plan& plan, int p, int micro) {
  int offset = 0;
  for (int q = 0; q < p; ++q)
    offset += plan.pipelines[static_cast<size_t>(q)].micro_batches * plan.micro_batch_size;
  return offset + micro * plan.micro_batch_size;
}

} // namespace deepcee::kernels
