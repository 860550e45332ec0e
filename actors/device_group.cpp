#include "actors/device_group.hpp"

#include "runtime/errors.hpp"

#include <algorithm>
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

device_group::device_group(const runtime::model_config& model, const runtime::stage_plan& stage,
                           uint64_t seed, const runtime::optimizer_config& optimizer)
    : model_(model), stage_(stage), first_layer_(stage.first_layer), last_layer_(stage.last_layer) {
  for (size_t j = 0; j < stage.devices.size(); ++j) {
    kernels::backend_options o; // CPU, one OpenBLAS thread: devices are emulated
    backends_.push_back(kernels::make_backend(o));
    workers_.push_back(std::make_unique<kernels::stage_worker>(
        *backends_.back(), model, first_layer_, last_layer_, seed, optimizer));
    std::vector<std::vector<kernels::parameter*>> layers(
        static_cast<size_t>(last_layer_ - first_layer_));
    for (auto* p : workers_.back()->model().parameters())
      layers.at(static_cast<size_t>(layer_of_parameter(p->name, model.n_layer) - first_layer_))
          .push_back(p);
    by_layer_.push_back(std::move(layers));
  }
}

bool device_group::last() const {
  return last_layer_ == model_.n_layer + 2;
}

const std::vector<kernels::parameter*>& device_group::params(size_t j, int layer) const {
  if (layer < first_layer_ || layer >= last_layer_)
    throw std::out_of_range("device_group: layer " + std::to_string(layer) + " not in [" +
                            std::to_string(first_layer_) + ", " + std::to_string(last_layer_) +
                            ")");
  return by_layer_[j][static_cast<size_t>(layer - first_layer_)];
}

size_t device_group::boundary_size() const {
  const int b = std::accumulate(stage_.samples.begin(), stage_.samples.end(), 0);
  return static_cast<size_t>(b * model_.context * model_.d_model);
}

namespace {

void require_size(const char* what, int micro, size_t have, size_t want) {
  if (have != want)
    throw std::invalid_argument(std::string(what) + " m" + std::to_string(micro) + ": " +
                                std::to_string(have) + " values, expected " + std::to_string(want));
}

} // namespace

void device_group::forward(int micro, std::span<const float> input,
                           const runtime::token_batch& batch, int offset, float loss_scale,
                           double& loss_sum, std::span<float> out) {
  const int64_t t = model_.context, c = model_.d_model;
  if (!first())
    require_size("forward input", micro, input.size(), boundary_size());
  require_size("forward output", micro, out.size(), last() ? 0 : boundary_size());
  for (size_t j = 0; j < workers_.size(); ++j) {
    auto [b0, b1] = kernels::sample_range(stage_, static_cast<int>(j));
    const int n = b1 - b0;
    if (n == 0)
      continue;
    auto& be = *backends_[j];
    const auto rows = [&](const std::vector<int32_t>& v) {
      kernels::tensor r = be.alloc({n, t}, kernels::dtype::i32);
      be.upload(r, v.data() + (offset + b0) * t, r.bytes());
      return r;
    };
    kernels::tensor x;
    if (first()) {
      x = rows(batch.tokens);
    } else {
      x = be.alloc({n, t, c});
      be.upload(x, input.data() + b0 * t * c, x.bytes());
    }
    if (last()) {
      kernels::tensor y = rows(batch.targets);
      auto losses = be.to_host<float>(workers_[j]->forward(micro, x, &y, loss_scale));
      loss_sum += std::accumulate(losses.begin(), losses.end(), 0.0);
    } else {
      kernels::tensor y = workers_[j]->forward(micro, x, nullptr, loss_scale);
      be.download(y, out.data() + b0 * t * c, y.bytes());
    }
  }
}

void device_group::backward_input(int micro, std::span<const float> grad_output,
                                  std::span<float> out) {
  const int64_t t = model_.context, c = model_.d_model;
  if (!last())
    require_size("backward input", micro, grad_output.size(), boundary_size());
  require_size("backward output", micro, out.size(), first() ? 0 : boundary_size());
  for (size_t j = 0; j < workers_.size(); ++j) {
    auto [b0, b1] = kernels::sample_range(stage_, static_cast<int>(j));
    if (b1 == b0)
      continue;
    auto& be = *backends_[j];
    kernels::tensor dy;
    if (!last()) {
      dy = be.alloc({b1 - b0, t, c});
      be.upload(dy, grad_output.data() + b0 * t * c, dy.bytes());
    }
    auto dx = workers_[j]->backward_input(micro, dy);
    if (!first())
      be.download(dx, out.data() + b0 * t * c, dx.bytes());
  }
}

void device_group::backward_weight(int micro) {
  for (size_t j = 0; j < workers_.size(); ++j) {
    auto [b0, b1] = kernels::sample_range(stage_, static_cast<int>(j));
    if (b1 > b0)
      workers_[j]->backward_weight(micro);
  }
}

size_t device_group::gradient_size(int first, int last) const {
  size_t n = 0;
  for (int l = first; l < last; ++l)
    for (auto* p : params(0, l))
      n += static_cast<size_t>(p->grad.numel());
  return n;
}

std::vector<float> device_group::gradient_sum(int first, int last) {
  std::vector<float> out(gradient_size(first, last), 0.0f);
  for (size_t j = 0; j < workers_.size(); ++j) {
    size_t at = 0;
    for (int l = first; l < last; ++l)
      for (auto* p : params(j, l)) {
        auto g = backends_[j]->to_host<float>(p->grad);
        for (size_t i = 0; i < g.size(); ++i)
          out[at + i] += g[i];
        at += g.size();
      }
  }
  return out;
}

void device_group::set_gradients(int first, int last, const std::vector<float>& values) {
  if (values.size() != gradient_size(first, last))
    throw std::invalid_argument("set_gradients: " + std::to_string(values.size()) +
                                " values for layers [" + std::to_string(first) + ", " +
                                std::to_string(last) + "), expected " +
                                std::to_string(gradient_size(first, last)));
  for (size_t j = 0; j < workers_.size(); ++j) {
    size_t at = 0;
    for (int l = first; l < last; ++l)
      for (auto* p : params(j, l)) {
        const auto n = static_cast<size_t>(p->grad.numel());
        backends_[j]->upload(p->grad, values.data() + at, n * sizeof(float));
        at += n;
      }
  }
}

void device_group::optimizer_step(double lr, int step, double grad_norm) {
  for (auto& w : workers_) {
    w->optimizer().step(static_cast<float>(lr), step, grad_norm);
    w->model().zero_grad();
  }
}

std::vector<kernels::parameter_state> device_group::parameter_states() {
  std::vector<kernels::parameter_state> out;
  for (size_t j = 0; j < workers_.size(); ++j) {
    auto& be = *backends_[j];
    auto& opt = workers_[j]->optimizer();
    const auto& params = opt.parameters();
    for (size_t i = 0; i < params.size(); ++i) {
      kernels::parameter_state s{
          params[i]->name, params[i]->value.shape(), be.to_host<float>(params[i]->value),
          be.to_host<float>(opt.first_moments()[i]), be.to_host<float>(opt.second_moments()[i])};
      if (j == 0) {
        out.push_back(std::move(s));
        continue;
      }
      const auto& first = out.at(i);
      if (s.name != first.name || s.value != first.value || s.exp_avg != first.exp_avg ||
          s.exp_avg_sq != first.exp_avg_sq)
        throw std::logic_error("device " + std::to_string(j) + " of the stage holds another '" +
                               s.name + "' than device 0");
    }
  }
  return out;
}

void device_group::load_parameter_states(const std::vector<kernels::parameter_state>& states,
                                         const std::filesystem::path& source) {
  for (const auto& s : states) {
    int layer = -1;
    try {
      layer = layer_of_parameter(s.name, model_.n_layer);
    } catch (const std::exception&) { // "transformer.h.x...": not a block number
    }
    bool known = layer >= first_layer_ && layer < last_layer_;
    if (known) {
      const auto& ps = params(0, layer);
      known = std::any_of(ps.begin(), ps.end(), [&](auto* p) { return p->name == s.name; });
    }
    if (!known)
      runtime::fail_input(source, 0,
                          "tensor '" + s.name + "' is not a parameter of layers [" +
                              std::to_string(first_layer_) + ", " + std::to_string(last_layer_) +
                              ") of the job's model");
  }
  // The first device checks every tensor before any is copied; the others match alike.
  for (size_t j = 0; j < workers_.size(); ++j)
    kernels::load_parameter_states(states, *backends_[j], workers_[j]->model(),
                                   &workers_[j]->optimizer(), source);
}

} // namespace deepcee::actors
