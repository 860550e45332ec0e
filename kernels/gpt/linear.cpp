#include "kernels/gpt/linear.hpp"

#include <stdexcept>

namespace deepcee::kernels {
namespace {

void require_width(const tensor& t, int64_t width, const char* what) {
  if (t.shape().back() != width)
    throw std::invalid_argument(std::string("linear: ") + what + " has shape " +
                                shape_string(t.shape()) + ", expected last dimension " +
                                std::to_string(width));
}

std::vector<int64_t> with_last(std::vector<int64_t> shape, int64_t last) {
  shape.back() = last;
  return shape;
}

} // namespace

tensor linear_forward(backend& be, const tensor& x, const parameter& w, const parameter& b) {
  int64_t in = w.value.dim(0), out = w.value.dim(1);
  require_width(x, in, "input");
  tensor y = be.alloc(with_last(x.shape(), out));
  be.gemm(packed_gemm(false, false, static_cast<int>(rows_of(x)), static_cast<int>(out),
                      static_cast<int>(in)),
          x.f32(), w.value.f32(), y.f32());
  be.add_bias(y.f32(), b.value.f32(), rows_of(y), out);
  return y;
}

tensor linear_backward_input(backend& be, const tensor& dy, const parameter& w) {
  int64_t in = w.value.dim(0), out = w.value.dim(1);
  require_width(dy, out, "output gradient");
  tensor dx = be.alloc(with_last(dy.shape(), in));
  be.gemm(packed_gemm(false, true, static_cast<int>(rows_of(dy)), static_cast<int>(in),
                      static_cast<int>(out)),
          dy.f32(), w.value.f32(), dx.f32());
  return dx;
}

void linear_backward_weight(backend& be, const tensor& x, const tensor& dy, parameter& w,
                            parameter& b) {
  int64_t in = w.value.dim(0), out = w.value.dim(1);
  require_width(x, in, "input");
  require_width(dy, out, "output gradient");
  be.gemm(packed_gemm(true, false, static_cast<int>(in), static_cast<int>(out),
                      static_cast<int>(rows_of(x)), 1.0f),
          x.f32(), dy.f32(), w.grad.f32());
  be.bias_backward(b.grad.f32(), dy.f32(), rows_of(dy), out);
}

} // namespace deepcee::kernels
