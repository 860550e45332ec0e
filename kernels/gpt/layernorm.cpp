#include "kernels/gpt/layernorm.hpp"

#include "kernels/gpt/linear.hpp"

namespace deepcee::kernels {

layernorm::layernorm(backend& be, const std::string& prefix, int64_t width, uint64_t seed)
    : weight(make_parameter(be, prefix + ".weight", {width}, init_kind::ones, 0, seed)),
      bias(make_parameter(be, prefix + ".bias", {width}, init_kind::zeros, 0, seed)) {}

tensor layernorm::forward(backend& be, const tensor& x, saved& s) const {
  int64_t rows = rows_of(x), cols = x.shape().back();
  tensor out = be.alloc(x.shape());
  s.x = x;
  s.mean = be.alloc({rows});
  s.rstd = be.alloc({rows});
  be.layernorm_forward(out.f32(), s.mean.f32(), s.rstd.f32(), x.f32(), weight.value.f32(),
                       bias.value.f32(), rows, cols, layernorm_eps);
  return out;
}

tensor layernorm::backward_input(backend& be, const tensor& dy, const saved& s) const {
  tensor dx = be.alloc(dy.shape());
  be.layernorm_backward_input(dx.f32(), dy.f32(), s.x.f32(), s.mean.f32(), s.rstd.f32(),
                              weight.value.f32(), rows_of(dy), dy.shape().back());
  return dx;
}

void layernorm::backward_weight(backend& be, const tensor& dy, const saved& s) {
  be.layernorm_backward_weight(weight.grad.f32(), bias.grad.f32(), dy.f32(), s.x.f32(),
                               s.mean.f32(), s.rstd.f32(), rows_of(dy), dy.shape().back());
}

} // namespace deepcee::kernels
