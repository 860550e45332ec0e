#include "kernels/gpt/attention.hpp"

#include <cmath>
#include <stdexcept>

namespace deepcee::kernels {
namespace {

struct dims {
  int B, T, H, D;
  int64_t C() const { return static_cast<int64_t>(H) * D; }
};

/// Batched product over the B*H heads: C[i] = op(A[i]) op(B[i]), every operand a packed
/// T x T or T x D block, one per head after the other.
void head_gemm(backend& be, const dims& d, bool ta, bool tb, int m, int n, int k, const float* a,
               const float* b, float* c) {
  gemm_desc g = packed_gemm(ta, tb, m, n, k);
  g.batch = d.B * d.H;
  g.stride_a = int64_t{m} * k;
  g.stride_b = int64_t{k} * n;
  g.stride_c = int64_t{m} * n;
  be.gemm(g, a, b, c);
}

} // namespace

tensor causal_attention::forward(backend& be, const tensor& qkv, saved& s) const {
  if (qkv.rank() != 3 || qkv.dim(2) % (3 * heads) != 0)
    throw std::invalid_argument("attention: qkv has shape " + shape_string(qkv.shape()));
  dims d{static_cast<int>(qkv.dim(0)), static_cast<int>(qkv.dim(1)), heads,
         static_cast<int>(qkv.dim(2) / (3 * heads))};
  s.q = be.alloc({d.B, d.H, d.T, d.D});
  s.k = be.alloc({d.B, d.H, d.T, d.D});
  s.v = be.alloc({d.B, d.H, d.T, d.D});
  be.split_qkv(s.q.f32(), s.k.f32(), s.v.f32(), qkv.f32(), d.B, d.T, d.H, d.D);

  tensor scores = be.alloc({d.B, d.H, d.T, d.T});
  head_gemm(be, d, false, true, d.T, d.T, d.D, s.q.f32(), s.k.f32(), scores.f32());
  s.probs = be.alloc({d.B, d.H, d.T, d.T});
  float scale = 1.0f / std::sqrt(static_cast<float>(d.D));
  be.softmax_causal_forward(s.probs.f32(), scores.f32(), scale, int64_t{d.B} * d.H, d.T);

  tensor yh = be.alloc({d.B, d.H, d.T, d.D});
  head_gemm(be, d, false, false, d.T, d.D, d.T, s.probs.f32(), s.v.f32(), yh.f32());
  tensor y = be.alloc({d.B, d.T, d.C()});
  be.merge_heads(y.f32(), yh.f32(), d.B, d.T, d.H, d.D);
  return y;
}

tensor causal_attention::backward(backend& be, const tensor& dy, const saved& s) const {
  dims d{static_cast<int>(s.q.dim(0)), static_cast<int>(s.q.dim(2)), heads,
         static_cast<int>(s.q.dim(3))};
  tensor dyh = be.alloc({d.B, d.H, d.T, d.D});
  be.split_heads(dyh.f32(), dy.f32(), d.B, d.T, d.H, d.D);

  tensor dprobs = be.alloc({d.B, d.H, d.T, d.T});
  head_gemm(be, d, false, true, d.T, d.T, d.D, dyh.f32(), s.v.f32(), dprobs.f32());
  tensor dv = be.alloc({d.B, d.H, d.T, d.D});
  head_gemm(be, d, true, false, d.T, d.D, d.T, s.probs.f32(), dyh.f32(), dv.f32());
  tensor dscores = be.alloc({d.B, d.H, d.T, d.T});
  float scale = 1.0f / std::sqrt(static_cast<float>(d.D));
  be.softmax_causal_backward(dscores.f32(), dprobs.f32(), s.probs.f32(), scale, int64_t{d.B} * d.H,
                             d.T);
  tensor dq = be.alloc({d.B, d.H, d.T, d.D});
  head_gemm(be, d, false, false, d.T, d.D, d.T, dscores.f32(), s.k.f32(), dq.f32());
  tensor dk = be.alloc({d.B, d.H, d.T, d.D});
  head_gemm(be, d, true, false, d.T, d.D, d.T, dscores.f32(), s.q.f32(), dk.f32());
  tensor dqkv = be.alloc({d.B, d.T, 3 * d.C()});
  be.merge_qkv(dqkv.f32(), dq.f32(), dk.f32(), dv.f32(), d.B, d.T, d.H, d.D);
  return dqkv;
}

} // namespace deepcee::kernels
