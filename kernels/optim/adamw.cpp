#include "kernels/optim/adamw.hpp"

#include <cmath>
#include <vector>

namespace deepcee::kernels {

adamw::adamw(backend& be, std::vector<parameter*> params, const runtime::optimizer_config& config)
    : be_(be), params_(std::move(params)), config_(config) {
  for (parameter* p : params_) {
    m_.push_back(be.zeros(p->value.shape()));
    v_.push_back(be.zeros(p->value.shape()));
  }
}

double adamw::grad_sum_squares() const {
  std::vector<float_buffer> grads;
  for (parameter* p : params_)
    grads.push_back({p->grad.f32(), p->grad.numel()});
  return be_.sum_squares_of(grads);
}

float adamw::step(float lr, int step, double global_grad_norm) {
  float clip = 1.0f;
  if (config_.grad_clip > 0 && global_grad_norm > config_.grad_clip)
    clip = static_cast<float>(config_.grad_clip / global_grad_norm);
  adamw_step s;
  s.lr = lr;
  s.beta1 = static_cast<float>(config_.beta1);
  s.beta2 = static_cast<float>(config_.beta2);
  s.eps = static_cast<float>(config_.eps);
  s.grad_scale = clip;
  s.step = step;
  for (size_t i = 0; i < params_.size(); ++i) {
    parameter* p = params_[i];
    s.weight_decay = p->decays ? static_cast<float>(config_.weight_decay) : 0.0f;
    be_.adamw_update(p->value.f32(), p->grad.f32(), m_[i].f32(), v_[i].f32(), p->value.numel(), s);
  }
  return clip;
}

} // namespace deepcee::kernels
