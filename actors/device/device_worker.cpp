#include "actors/device/device_worker.hpp"

#include "kernels/device/make_backend.hpp"
#include "runtime/step/gradient_exchange.hpp"

#include "runtime/base/errors.hpp"
#include "runtime/base/model_spec.hpp"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <stdexcept>
#include <string>

namespace deepcee::actors {

int layer_of_parameter(const std::string& name, int n_layer) {
  if (name.rfind("transformer.wte", 0) == 0 || name.rfind("transformer.wpe", 0) == 0)
    return 0;
  const std::string block = "transformer.h.";
  if (name.rfind(block, 0) == 0)
    return std::stoi(name.substr(block.size())) + 1;
  return n_layer + 1;
}

uint64_t state_digest(const std::vector<kernels::parameter_state>& states) {
  uint64_t h = 14695981039346656037ull;
  const auto mix = [&](const void* data, size_t bytes) { // 8 bytes a round, then the rest
    const auto* p = static_cast<const unsigned char*>(data);
    size_t i = 0;
    for (uint64_t word; i + 8 <= bytes; i += 8) {
      std::memcpy(&word, p + i, 8);
      h = (h ^ word) * 1099511628211ull;
    }
    for (; i < bytes; ++i)
      h = (h ^ p[i]) * 1099511628211ull;
  };
  const auto mix_floats = [&](const std::vector<float>& v) {
    const uint64_t n = v.size();
    mix(&n, sizeof n);
    mix(v.data(), v.size() * sizeof(float));
  };
  for (const auto& s : states) {
    mix(s.name.data(), s.name.size() + 1);
    for (int64_t d : s.shape)
      mix(&d, sizeof d);
    mix_floats(s.value);
    mix_floats(s.exp_avg);
    mix_floats(s.exp_avg_sq);
  }
  return h;
}

kernels::backend_options device_backend(const runtime::train_config& train, int local_index,
                                        int visible_gpus) {
  kernels::backend_options o;
  o.threads = train.threads;
  if (train.device == "cuda") {
    o.kind = kernels::backend_kind::cuda;
    o.device = visible_gpus > 0 ? local_index % visible_gpus : 0;
    if (train.bf16)
      o.precision = kernels::matmul_precision::bf16;
  }
  return o;
}

device_worker::device_worker(const runtime::model_config& model, int first_layer, int last_layer,
                             uint64_t seed, const runtime::optimizer_config& optimizer,
                             const kernels::backend_options& backend)
    : model_(model), first_layer_(first_layer), last_layer_(last_layer),
      backend_(kernels::make_backend(backend)),
      worker_(std::make_unique<kernels::stage_worker>(*backend_, model, first_layer, last_layer,
                                                      seed, optimizer)) {
  by_layer_ = worker_->model().parameters();
  std::stable_sort(by_layer_.begin(), by_layer_.end(), [&](auto* a, auto* b) {
    return layer_of_parameter(a->name, model.n_layer) < layer_of_parameter(b->name, model.n_layer);
  });
  if (gradient_size() != runtime::gradient_size(model, first_layer, last_layer))
    throw std::logic_error("device_worker: layers [" + std::to_string(first_layer) + ", " +
                           std::to_string(last_layer) + ") hold " +
                           std::to_string(gradient_size()) +
                           " parameters, the model spec says otherwise");
}

namespace {

void require_size(const char* what, int micro, size_t have, size_t want) {
  if (have != want)
    throw std::invalid_argument(std::string(what) + " m" + std::to_string(micro) + ": " +
                                std::to_string(have) + " values, expected " + std::to_string(want));
}

} // namespace

double device_worker::forward(int micro, std::span<const float> input,
                              const runtime::token_batch* batch, int first_sample, int samples,
                              float loss_scale, std::span<float> out) {
  const int64_t t = model_.context, c = model_.d_model;
  const auto rows = static_cast<size_t>(samples * t * c);
  if (!first())
    require_size("forward input", micro, input.size(), rows);
  require_size("forward output", micro, out.size(), last() ? 0 : rows);
  if ((first() || last()) && batch == nullptr)
    throw std::invalid_argument("forward m" + std::to_string(micro) + ": no batch");
  auto& be = *backend_;
  const auto token_rows = [&](const std::vector<int32_t>& v) {
    kernels::tensor r = be.alloc({samples, t}, kernels::dtype::i32);
    be.upload(r, v.data() + first_sample * t, r.bytes());
    return r;
  };
  kernels::tensor x;
  if (first()) {
    x = token_rows(batch->tokens);
  } else {
    x = be.alloc({samples, t, c});
    be.upload(x, input.data(), x.bytes());
  }
  if (last()) {
    kernels::tensor y = token_rows(batch->targets);
    auto losses = be.to_host<float>(worker_->forward(micro, x, &y, loss_scale));
    return std::accumulate(losses.begin(), losses.end(), 0.0);
  }
  kernels::tensor y = worker_->forward(micro, x, nullptr, loss_scale);
  be.download(y, out.data(), y.bytes());
  return 0;
}

void device_worker::backward_input(int micro, std::span<const float> grad_output, int samples,
                                   std::span<float> out) {
  const int64_t t = model_.context, c = model_.d_model;
  const auto rows = static_cast<size_t>(samples * t * c);
  if (!last())
    require_size("backward input", micro, grad_output.size(), rows);
  require_size("backward output", micro, out.size(), first() ? 0 : rows);
  auto& be = *backend_;
  kernels::tensor dy;
  if (!last()) {
    dy = be.alloc({samples, t, c});
    be.upload(dy, grad_output.data(), dy.bytes());
  }
  auto dx = worker_->backward_input(micro, dy);
  if (!first())
    be.download(dx, out.data(), dx.bytes());
}

void device_worker::backward_weight(int micro) {
  worker_->backward_weight(micro);
}

void device_worker::set_recompute(bool on) {
  worker_->set_recompute(on);
}

size_t device_worker::gradient_size() const {
  size_t n = 0;
  for (auto* p : by_layer_)
    n += static_cast<size_t>(p->grad.numel());
  return n;
}

double device_worker::gradient_sum_squares() {
  std::vector<kernels::float_buffer> grads;
  for (auto* p : by_layer_)
    grads.push_back({p->grad.f32(), p->grad.numel()});
  return backend_->sum_squares_of(grads);
}

std::vector<float> device_worker::gradients() {
  std::vector<float> out(gradient_size());
  size_t at = 0;
  for (auto* p : by_layer_) {
    const auto n = static_cast<size_t>(p->grad.numel());
    backend_->download(p->grad, out.data() + at, n * sizeof(float));
    at += n;
  }
  return out;
}

void device_worker::set_gradients(std::span<const float> values) {
  if (values.size() != gradient_size())
    throw std::invalid_argument("set_gradients: " + std::to_string(values.size()) +
                                " values for layers [" + std::to_string(first_layer_) + ", " +
                                std::to_string(last_layer_) + "), expected " +
                                std::to_string(gradient_size()));
  size_t at = 0;
  for (auto* p : by_layer_) {
    const auto n = static_cast<size_t>(p->grad.numel());
    backend_->upload(p->grad, values.data() + at, n * sizeof(float));
    at += n;
  }
}

std::vector<kernels::tensor*> device_worker::gradient_tensors() {
  std::vector<kernels::tensor*> out;
  for (auto* p : by_layer_)
    out.push_back(&p->grad);
  return out;
}

void device_worker::optimizer_step(double lr, int step, double grad_norm) {
  worker_->optimizer().step(static_cast<float>(lr), step, grad_norm);
  worker_->model().zero_grad();
}

std::vector<kernels::parameter_state> device_worker::parameter_states() {
  std::vector<kernels::parameter_state> out;
  auto& opt = worker_->optimizer();
  const auto& params = opt.parameters();
  for (size_t i = 0; i < params.size(); ++i)
    out.push_back({params[i]->name, params[i]->value.shape(),
                   backend_->to_host<float>(params[i]->value),
                   backend_->to_host<float>(opt.first_moments()[i]),
                   backend_->to_host<float>(opt.second_moments()[i])});
  return out;
}

void device_worker::load_parameter_states(const std::vector<kernels::parameter_state>& states,
                                          const std::filesystem::path& source) {
  for (const auto& s : states) {
    int layer = -1;
    try {
      layer = layer_of_parameter(s.name, model_.n_layer);
    } catch (const std::exception&) { // "transformer.h.x...": not a block number
    }
    const bool known =
        layer >= first_layer_ && layer < last_layer_ &&
        std::any_of(by_layer_.begin(), by_layer_.end(), [&](auto* p) { return p->name == s.name; });
    if (!known)
      runtime::fail_input(source, 0,
                          "tensor '" + s.name + "' is not a parameter of layers [" +
                              std::to_string(first_layer_) + ", " + std::to_string(last_layer_) +
                              ") of the job's model");
  }
  kernels::load_parameter_states(states, *backend_, worker_->model(), &worker_->optimizer(),
                                 source);
}

} // namespace deepcee::actors
