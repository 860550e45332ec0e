// Every op of the CUDA backend against the CPU backend, on the same random inputs, with a
// per-op tolerance on the max error relative to the largest reference value. Sizes are
// mostly not multiples of 32 (tails, scalar paths) with one large case per reduction.
#include <boost/test/unit_test.hpp>

#include "kernels/device/make_backend.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace dk = deepcee::kernels;

namespace {

std::vector<float> random_floats(size_t n, uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v)
    x = dist(gen);
  return v;
}

std::vector<int32_t> random_ids(size_t n, uint32_t seed, int32_t bound) {
  std::mt19937 gen(seed);
  std::uniform_int_distribution<int32_t> dist(0, bound - 1);
  std::vector<int32_t> v(n);
  for (auto& x : v)
    x = dist(gen);
  return v;
}

/// max |got - want| / max |want|; infinite when sizes differ or a value is not finite.
/// Each of `n` rows of `V` logits' softmax, computed in double.
std::vector<float> softmax_rows(const std::vector<float>& logits, int64_t n, int V) {
  std::vector<float> out(logits.size());
  for (int64_t r = 0; r < n; ++r) {
    const float* z = logits.data() + r * V;
    const double top = *std::max_element(z, z + V);
    double sum = 0;
    for (int j = 0; j < V; ++j)
      sum += std::exp(static_cast<double>(z[j]) - top);
    for (int j = 0; j < V; ++j)
      out[static_cast<size_t>(r * V + j)] =
          static_cast<float>(std::exp(static_cast<double>(z[j]) - top) / sum);
  }
  return out;
}

double relative_max_error(const std::vector<float>& got, const std::vector<float>& want) {
  if (got.size() != want.size())
    return std::numeric_limits<double>::infinity();
  double max_diff = 0, max_ref = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (!std::isfinite(got[i]) || !std::isfinite(want[i]))
      return std::numeric_limits<double>::infinity();
    max_diff = std::max(max_diff, std::abs(static_cast<double>(got[i]) - want[i]));
    max_ref = std::max(max_ref, std::abs(static_cast<double>(want[i])));
  }
  return max_ref == 0 ? max_diff : max_diff / max_ref;
}

/// The same array on the CPU backend and on the CUDA backend.
struct twin {
  dk::tensor cpu, gpu;
  float* at(bool on_gpu) { return (on_gpu ? gpu : cpu).f32(); }
  const int32_t* ids(bool on_gpu) const { return (on_gpu ? gpu : cpu).i32(); }
};

struct backends {
  std::unique_ptr<dk::backend> cpu =
      dk::make_backend({.kind = dk::backend_kind::cpu, .threads = 0});
  std::unique_ptr<dk::backend> gpu = dk::make_backend({.kind = dk::backend_kind::cuda});

  twin upload(const std::vector<float>& v) {
    std::vector<int64_t> shape{static_cast<int64_t>(v.size())};
    return {cpu->from_host(v, shape), gpu->from_host(v, shape)};
  }
  twin upload_ids(const std::vector<int32_t>& v) {
    std::vector<int64_t> shape{static_cast<int64_t>(v.size())};
    return {cpu->from_host(v, shape), gpu->from_host(v, shape)};
  }
  twin random(size_t n, uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
    return upload(random_floats(n, seed, lo, hi));
  }
  twin zeros(int64_t n) { return {cpu->zeros({n}), gpu->zeros({n})}; }

  /// Runs f(backend, on_gpu) on the CPU backend, then on the CUDA backend.
  template <class F>
  void run(F f) {
    f(*cpu, false);
    f(*gpu, true);
  }

  double error(const twin& t) {
    return relative_max_error(gpu->to_host<float>(t.gpu), cpu->to_host<float>(t.cpu));
  }
  void check(const twin& t, double tolerance, const std::string& what) {
    double e = error(t);
    BOOST_TEST(e <= tolerance, what << ": relative max error " << e << " > " << tolerance);
  }
};

// Per-op tolerances (relative max error).
constexpr double exact = 0.0;
constexpr double elementwise_tol = 1e-6;
constexpr double transcendental_tol = 1e-5;
constexpr double reduction_tol = 1e-4;
constexpr double gemm_fp32_tol = 2e-5;
constexpr double gemm_bf16_tol = 1e-2;

/// The storage a row-major matrix of `rows` rows and row stride `ld` needs per batch.
int64_t matrix_elems(int rows, int ld) {
  return static_cast<int64_t>(rows) * ld;
}

/// Checks one product against the CPU's; returns its relative max error.
double check_gemm(backends& be, dk::backend& gpu, const dk::gemm_desc& d, double tolerance,
                  uint32_t seed, const std::string& what) {
  int rows_a = d.trans_a ? d.k : d.m, rows_b = d.trans_b ? d.n : d.k;
  int64_t size_a = d.stride_a * (d.batch - 1) + matrix_elems(rows_a, d.lda);
  int64_t size_b = d.stride_b * (d.batch - 1) + matrix_elems(rows_b, d.ldb);
  int64_t size_c = d.stride_c * (d.batch - 1) + matrix_elems(d.m, d.ldc);
  auto a = random_floats(size_a, seed), b = random_floats(size_b, seed + 1),
       c = random_floats(size_c, seed + 2);
  auto shape = [](int64_t n) { return std::vector<int64_t>{n}; };
  dk::tensor ca = be.cpu->from_host(a, shape(size_a)), cb = be.cpu->from_host(b, shape(size_b)),
             cc = be.cpu->from_host(c, shape(size_c));
  dk::tensor ga = gpu.from_host(a, shape(size_a)), gb = gpu.from_host(b, shape(size_b)),
             gc = gpu.from_host(c, shape(size_c));
  be.cpu->gemm(d, ca.f32(), cb.f32(), cc.f32());
  gpu.gemm(d, ga.f32(), gb.f32(), gc.f32());
  double e = relative_max_error(gpu.to_host<float>(gc), be.cpu->to_host<float>(cc));
  BOOST_TEST(e <= tolerance, what << ": relative max error " << e << " > " << tolerance);
  return e;
}

/// A batched gemm with padded row strides and gaps between batch entries.
dk::gemm_desc padded_desc(bool ta, bool tb, int m, int n, int k, int batch, float alpha,
                          float beta) {
  dk::gemm_desc d;
  d.trans_a = ta, d.trans_b = tb, d.m = m, d.n = n, d.k = k, d.alpha = alpha, d.beta = beta;
  d.lda = (ta ? m : k) + 3;
  d.ldb = (tb ? k : n) + 5;
  d.ldc = n + 2;
  d.batch = batch;
  d.stride_a = matrix_elems(ta ? k : m, d.lda) + 7;
  d.stride_b = matrix_elems(tb ? n : k, d.ldb) + 1;
  d.stride_c = matrix_elems(m, d.ldc) + 3;
  return d;
}

} // namespace

BOOST_AUTO_TEST_SUITE(cuda_backend_ops)

BOOST_FIXTURE_TEST_CASE(memory_round_trip, backends) {
  BOOST_TEST((gpu->kind() == dk::backend_kind::cuda));
  BOOST_TEST(gpu->name().find("cuda:0") != std::string::npos);
  auto values = random_floats(1001, 1);
  dk::tensor t = gpu->from_host(values, {7, 11, 13});
  BOOST_TEST(gpu->to_host<float>(t) == values);
  auto ids = random_ids(333, 2, 50257);
  dk::tensor ti = gpu->from_host(ids, {333});
  BOOST_TEST(gpu->to_host<int32_t>(ti) == ids);
  dk::tensor empty = gpu->alloc({0, 5});
  BOOST_TEST(!empty.empty());
  BOOST_TEST(empty.numel() == 0);
  dk::tensor copy = gpu->alloc({7, 11, 13});
  gpu->copy(copy.f32(), t.f32(), t.numel());
  BOOST_TEST(gpu->to_host<float>(copy) == values);
}

BOOST_FIXTURE_TEST_CASE(fill_values_and_offsets, backends) {
  const int64_t n = 100003;
  for (float value : {0.0f, -0.0f, 3.5f}) {
    twin t = random(n, 3);
    run([&](dk::backend& b, bool g) {
      b.fill(t.at(g), value, n / 2);
      b.fill(t.at(g) + n / 2 + 1, value, n - n / 2 - 1); // misaligned start
    });
    check(t, exact, "fill " + std::to_string(value));
    auto host = gpu->to_host<float>(t.gpu);
    BOOST_TEST(std::signbit(host[0]) == std::signbit(value));
  }
}

BOOST_FIXTURE_TEST_CASE(add_axpy_scale, backends) {
  for (int64_t n : {int64_t{5}, int64_t{1000003}}) {
    twin a = random(n, 4), b = random(n, 5), out = random(n, 6);
    run([&](dk::backend& be, bool g) { be.add(out.at(g), a.at(g), b.at(g), n); });
    check(out, elementwise_tol, "add");
    run([&](dk::backend& be, bool g) { be.add(a.at(g), a.at(g), b.at(g), n); }); // aliased
    check(a, elementwise_tol, "add aliased");
    run([&](dk::backend& be, bool g) { be.axpy(b.at(g), -0.37f, a.at(g), n); });
    check(b, elementwise_tol, "axpy");
    run([&](dk::backend& be, bool g) { be.axpy(b.at(g) + 1, 2.5f, a.at(g), n - 1); });
    check(b, elementwise_tol, "axpy misaligned");
    run([&](dk::backend& be, bool g) { be.scale(a.at(g), 1.7f, n); });
    check(a, elementwise_tol, "scale");
    run([&](dk::backend& be, bool g) { be.scale(a.at(g) + 3, -0.5f, n - 3); });
    check(a, elementwise_tol, "scale misaligned");
  }
}

BOOST_FIXTURE_TEST_CASE(add_bias_and_bias_backward, backends) {
  struct shape {
    int64_t rows, cols;
  };
  for (shape s : {shape{1, 1}, shape{37, 771}, shape{4096, 768}, shape{300, 50257}}) {
    std::string what = std::to_string(s.rows) + "x" + std::to_string(s.cols);
    twin y = random(s.rows * s.cols, 6), bias = random(s.cols, 7);
    run([&](dk::backend& b, bool g) { b.add_bias(y.at(g), bias.at(g), s.rows, s.cols); });
    check(y, elementwise_tol, "add_bias " + what);
    twin dbias = random(s.cols, 8);
    for (int pass = 0; pass < 2; ++pass) { // accumulates
      run([&](dk::backend& b, bool g) { b.bias_backward(dbias.at(g), y.at(g), s.rows, s.cols); });
      check(dbias, reduction_tol, "bias_backward " + what + " pass " + std::to_string(pass));
    }
  }
}

BOOST_FIXTURE_TEST_CASE(sum_squares_small_and_large, backends) {
  for (int64_t n : {int64_t{0}, int64_t{1}, int64_t{1000}, int64_t{50000017}}) {
    twin x = random(std::max<int64_t>(n, 1), 9, -3.0f, 3.0f);
    double want = cpu->sum_squares(x.cpu.f32(), n);
    double got = gpu->sum_squares(x.gpu.f32(), n);
    BOOST_TEST(std::abs(got - want) <= 1e-9 * std::max(1.0, std::abs(want)),
               "sum_squares n=" << n << ": " << got << " vs " << want);
  }
  twin x = random(1001, 10);
  BOOST_TEST(std::abs(gpu->sum_squares(x.gpu.f32() + 1, 999) -
                      cpu->sum_squares(x.cpu.f32() + 1, 999)) < 1e-9 * 1000);
  // Many buffers at once (the gradient norm): each one's sum, added in order, so the same
  // bits as one call per buffer; more buffers than the results held so far.
  twin big = random(3000017, 11);
  std::vector<dk::float_buffer> on_gpu, on_cpu;
  double one_by_one = 0;
  for (int64_t at = 0, len = 0; at + len <= 3000017; at += len, len = len * 3 + 1) {
    on_gpu.push_back({big.gpu.f32() + at, len});
    on_cpu.push_back({big.cpu.f32() + at, len});
    one_by_one += gpu->sum_squares(big.gpu.f32() + at, len);
  }
  BOOST_TEST(on_gpu.size() > 10u);
  const double all = gpu->sum_squares_of(on_gpu), want = cpu->sum_squares_of(on_cpu);
  BOOST_TEST(all == one_by_one);
  BOOST_TEST(std::abs(all - want) <= 1e-9 * want, all << " vs " << want);
  BOOST_TEST(gpu->sum_squares_of({}) == 0.0);
}

BOOST_FIXTURE_TEST_CASE(gemm_transposes_batches_alpha_beta, backends) {
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      std::string what = std::string("gemm ") + (ta ? "T" : "N") + (tb ? "T" : "N");
      check_gemm(*this, *gpu, padded_desc(ta, tb, 37, 53, 71, 3, 0.7f, 0.3f), gemm_fp32_tol, 11,
                 what + " batched");
      check_gemm(*this, *gpu, padded_desc(ta, tb, 1, 129, 33, 1, 1.0f, 0.0f), gemm_fp32_tol, 12,
                 what + " one row");
    }
  // Dense GPT-2 shape: x [B*T, C] * W^T [C, 3C], as the attention projection does.
  dk::gemm_desc d;
  d.trans_b = true, d.m = 1031, d.n = 2304, d.k = 768, d.lda = 768, d.ldb = 768, d.ldc = 2304;
  check_gemm(*this, *gpu, d, gemm_fp32_tol, 13, "gemm large fp32");
  // Batched attention scores: q [T, D] * k^T, scaled, over batch * heads.
  dk::gemm_desc s;
  s.trans_b = true, s.m = 129, s.n = 129, s.k = 64, s.alpha = 0.125f, s.lda = 64, s.ldb = 64,
  s.ldc = 129, s.batch = 12, s.stride_a = 129 * 64, s.stride_b = 129 * 64, s.stride_c = 129 * 129;
  check_gemm(*this, *gpu, s, gemm_fp32_tol, 14, "gemm attention scores");
  // k = 0: C = beta * C.
  check_gemm(*this, *gpu, padded_desc(false, false, 5, 7, 0, 2, 1.0f, 0.5f), gemm_fp32_tol, 15,
             "gemm k=0");
}

BOOST_FIXTURE_TEST_CASE(gemm_bf16, backends) {
  auto bf16 =
      dk::make_backend({.kind = dk::backend_kind::cuda, .precision = dk::matmul_precision::bf16});
  BOOST_TEST(bf16->name().find("bf16") != std::string::npos);
  for (bool ta : {false, true})
    for (bool tb : {false, true})
      check_gemm(*this, *bf16, padded_desc(ta, tb, 67, 45, 129, 2, 0.9f, 0.5f), gemm_bf16_tol, 16,
                 std::string("gemm bf16 ") + (ta ? "T" : "N") + (tb ? "T" : "N"));
  dk::gemm_desc d;
  d.m = 1031, d.n = 3072, d.k = 768, d.lda = 768, d.ldb = 3072, d.ldc = 3072;
  const double e = check_gemm(*this, *bf16, d, gemm_bf16_tol, 17, "gemm bf16 large");
  // Inputs rounded to bf16 (8 bits of mantissa) leave about 1e-3; fp32 products about 1e-6.
  BOOST_TEST(e > 1e-4, "bf16 products as exact as fp32 ones (" << e << "): no bf16 was used");
}

BOOST_FIXTURE_TEST_CASE(layernorm_forward_and_backward, backends) {
  struct shape {
    int64_t rows, cols;
  };
  for (shape s : {shape{37, 771}, shape{1030, 768}, shape{3, 5}, shape{4096, 768}}) {
    std::string what = " " + std::to_string(s.rows) + "x" + std::to_string(s.cols);
    int64_t n = s.rows * s.cols;
    twin x = random(n, 20, -2.0f, 3.0f), gamma = random(s.cols, 21, 0.5f, 1.5f),
         beta = random(s.cols, 22), out = random(n, 27), mean = random(s.rows, 28),
         rstd = random(s.rows, 29);
    run([&](dk::backend& b, bool g) {
      b.layernorm_forward(out.at(g), mean.at(g), rstd.at(g), x.at(g), gamma.at(g), beta.at(g),
                          s.rows, s.cols, 1e-5f);
    });
    check(out, transcendental_tol, "layernorm_forward out" + what);
    check(mean, transcendental_tol, "layernorm_forward mean" + what);
    check(rstd, transcendental_tol, "layernorm_forward rstd" + what);

    twin dy = random(n, 23), dx = random(n, 24);
    run([&](dk::backend& b, bool g) {
      b.layernorm_backward_input(dx.at(g), dy.at(g), x.at(g), mean.at(g), rstd.at(g), gamma.at(g),
                                 s.rows, s.cols);
    });
    check(dx, reduction_tol, "layernorm_backward_input" + what);

    twin dgamma = random(s.cols, 25), dbeta = random(s.cols, 26);
    for (int pass = 0; pass < 2; ++pass) {
      run([&](dk::backend& b, bool g) {
        b.layernorm_backward_weight(dgamma.at(g), dbeta.at(g), dy.at(g), x.at(g), mean.at(g),
                                    rstd.at(g), s.rows, s.cols);
      });
      check(dgamma, reduction_tol, "layernorm dgamma" + what + " pass " + std::to_string(pass));
      check(dbeta, reduction_tol, "layernorm dbeta" + what + " pass " + std::to_string(pass));
    }
  }
}

BOOST_FIXTURE_TEST_CASE(gelu_forward_and_backward, backends) {
  for (int64_t n : {int64_t{7}, int64_t{100003}}) {
    // Outputs start as garbage: an op that adds where it must overwrite differs.
    twin x = random(n, 30, -5.0f, 5.0f), out = random(n, 32), dy = random(n, 31),
         dx = random(n, 33);
    run([&](dk::backend& b, bool g) { b.gelu_forward(out.at(g), x.at(g), n); });
    check(out, transcendental_tol, "gelu_forward");
    run([&](dk::backend& b, bool g) { b.gelu_backward(dx.at(g), dy.at(g), x.at(g), n); });
    check(dx, transcendental_tol, "gelu_backward");
    run([&](dk::backend& b, bool g) { b.gelu_forward(out.at(g) + 1, x.at(g), n - 1); });
    check(out, transcendental_tol, "gelu_forward misaligned");
  }
}

BOOST_FIXTURE_TEST_CASE(attention_layouts, backends) {
  struct shape {
    int B, T, H, D;
  };
  for (shape s : {shape{3, 37, 5, 13}, shape{2, 64, 12, 64}, shape{1, 1, 1, 1}}) {
    std::string what = " " + std::to_string(s.B) + "," + std::to_string(s.T) + "," +
                       std::to_string(s.H) + "," + std::to_string(s.D);
    int64_t n = static_cast<int64_t>(s.B) * s.T * s.H * s.D;
    twin qkv = random(3 * n, 40), q = random(n, 45), k = random(n, 46), v = random(n, 47);
    run([&](dk::backend& b, bool g) {
      b.split_qkv(q.at(g), k.at(g), v.at(g), qkv.at(g), s.B, s.T, s.H, s.D);
    });
    check(q, exact, "split_qkv q" + what);
    check(k, exact, "split_qkv k" + what);
    check(v, exact, "split_qkv v" + what);
    twin dq = random(n, 41), dk_ = random(n, 42), dv = random(n, 43), dqkv = random(3 * n, 48);
    run([&](dk::backend& b, bool g) {
      b.merge_qkv(dqkv.at(g), dq.at(g), dk_.at(g), dv.at(g), s.B, s.T, s.H, s.D);
    });
    check(dqkv, exact, "merge_qkv" + what);
    twin yh = random(n, 44), y = random(n, 49), back = random(n, 39);
    run([&](dk::backend& b, bool g) { b.merge_heads(y.at(g), yh.at(g), s.B, s.T, s.H, s.D); });
    check(y, exact, "merge_heads" + what);
    run([&](dk::backend& b, bool g) { b.split_heads(back.at(g), y.at(g), s.B, s.T, s.H, s.D); });
    check(back, exact, "split_heads" + what);
    BOOST_TEST(gpu->to_host<float>(back.gpu) == gpu->to_host<float>(yh.gpu));
  }
}

BOOST_FIXTURE_TEST_CASE(softmax_causal, backends) {
  struct shape {
    int64_t rows;
    int T;
  };
  for (shape s : {shape{7, 37}, shape{3, 1024}, shape{2, 1}, shape{5, 64}, shape{1, 1023}}) {
    std::string what = " " + std::to_string(s.rows) + "x" + std::to_string(s.T);
    int64_t n = s.rows * s.T * s.T;
    twin scores = random(n, 50, -8.0f, 8.0f), probs = random(n, 51);
    run([&](dk::backend& b, bool g) {
      b.softmax_causal_forward(probs.at(g), scores.at(g), 0.125f, s.rows, s.T);
    });
    check(probs, transcendental_tol, "softmax_causal_forward" + what);
    twin dprobs = random(n, 52), dscores = random(n, 53);
    run([&](dk::backend& b, bool g) {
      b.softmax_causal_backward(dscores.at(g), dprobs.at(g), probs.at(g), 0.125f, s.rows, s.T);
    });
    check(dscores, reduction_tol, "softmax_causal_backward" + what);
  }
}

BOOST_FIXTURE_TEST_CASE(embedding_forward_and_backward, backends) {
  struct shape {
    int B, T, C, V;
  };
  for (shape s : {shape{3, 37, 771, 50}, shape{4, 64, 768, 1000}, shape{8, 1024, 768, 50257}}) {
    std::string what =
        " " + std::to_string(s.B) + "," + std::to_string(s.T) + "," + std::to_string(s.C);
    int64_t n = static_cast<int64_t>(s.B) * s.T * s.C;
    twin tokens = upload_ids(random_ids(static_cast<size_t>(s.B) * s.T, 60, s.V));
    twin wte = random(static_cast<int64_t>(s.V) * s.C, 61), wpe = random(s.T * s.C, 62),
         out = random(n, 66);
    run([&](dk::backend& b, bool g) {
      b.embedding_forward(out.at(g), tokens.ids(g), wte.at(g), wpe.at(g), s.B, s.T, s.C);
    });
    check(out, elementwise_tol, "embedding_forward" + what);
    twin dout = random(n, 63), dwte = random(static_cast<int64_t>(s.V) * s.C, 64),
         dwpe = random(s.T * s.C, 65);
    for (int pass = 0; pass < 2; ++pass) {
      run([&](dk::backend& b, bool g) {
        b.embedding_backward(dwte.at(g), dwpe.at(g), dout.at(g), tokens.ids(g), s.B, s.T, s.C);
      });
      check(dwte, reduction_tol, "embedding dwte" + what + " pass " + std::to_string(pass));
      check(dwpe, reduction_tol, "embedding dwpe" + what + " pass " + std::to_string(pass));
    }
  }
}

BOOST_FIXTURE_TEST_CASE(cross_entropy, backends) {
  struct shape {
    int64_t n;
    int V;
  };
  for (shape s : {shape{5, 7}, shape{37, 50257}, shape{1024, 50257}, shape{3, 1}}) {
    std::string what = " " + std::to_string(s.n) + "x" + std::to_string(s.V);
    int64_t total = s.n * s.V;
    twin logits = random(total, 70, -6.0f, 6.0f), probs = random(total, 73),
         losses = random(s.n, 74);
    twin targets = upload_ids(random_ids(s.n, 71, s.V));
    run([&](dk::backend& b, bool g) {
      b.cross_entropy_forward(losses.at(g), probs.at(g), logits.at(g), targets.ids(g), s.n, s.V);
    });
    check(losses, transcendental_tol, "cross_entropy losses" + what);
    // Each row's probabilities divide by a float sum of V terms, which the CPU adds in order
    // and the GPU as a tree: a reduction's rounding. The GPU must match exact (double)
    // probabilities at the transcendental tolerance, and the CPU within the reduction's.
    check(probs, reduction_tol, "cross_entropy probs" + what);
    const auto exact_probs = softmax_rows(cpu->to_host<float>(logits.cpu), s.n, s.V);
    const double e = relative_max_error(gpu->to_host<float>(probs.gpu), exact_probs);
    BOOST_TEST(e <= transcendental_tol,
               "cross_entropy GPU probs" << what << " against double: " << e);
    twin dlogits = random(total, 72);
    float scale = 1.0f / static_cast<float>(s.n);
    run([&](dk::backend& b, bool g) {
      b.cross_entropy_backward(dlogits.at(g), probs.at(g), targets.ids(g), scale, s.n, s.V);
    });
    check(dlogits, transcendental_tol, "cross_entropy dlogits" + what);
  }
}

BOOST_FIXTURE_TEST_CASE(adamw_several_steps, backends) {
  for (int64_t n : {int64_t{13}, int64_t{100003}}) {
    twin param = random(n, 80), m = zeros(n), v = zeros(n);
    for (int step = 1; step <= 5; ++step) {
      twin grad = random(n, 81 + step);
      dk::adamw_step s;
      s.lr = 1e-3f, s.weight_decay = 0.1f, s.grad_scale = 0.5f, s.step = step;
      run([&](dk::backend& b, bool g) {
        b.adamw_update(param.at(g), grad.at(g), m.at(g), v.at(g), n, s);
      });
      std::string what = " n=" + std::to_string(n) + " step " + std::to_string(step);
      check(param, transcendental_tol, "adamw param" + what);
      check(m, transcendental_tol, "adamw m" + what);
      check(v, transcendental_tol, "adamw v" + what);
    }
    // Misaligned views take the scalar path.
    twin grad = random(n, 90);
    dk::adamw_step s;
    s.lr = 1e-2f, s.step = 6;
    run([&](dk::backend& b, bool g) {
      b.adamw_update(param.at(g) + 1, grad.at(g) + 1, m.at(g) + 1, v.at(g) + 1, n - 1, s);
    });
    check(param, transcendental_tol, "adamw misaligned");
  }
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(cuda_backend_errors)

BOOST_AUTO_TEST_CASE(device_out_of_range) {
  int count = dk::visible_cuda_devices();
  for (int device : {count, count + 5, -1}) {
    try {
      dk::make_backend({.kind = dk::backend_kind::cuda, .device = device});
      BOOST_ERROR("make_backend accepted device " << device);
    } catch (const std::runtime_error& e) {
      std::string message = e.what();
      BOOST_TEST(message.find("device " + std::to_string(device)) != std::string::npos, message);
      BOOST_TEST(message.find(std::to_string(count) + " visible") != std::string::npos, message);
    }
  }
}

BOOST_AUTO_TEST_CASE(bad_shapes_throw) {
  auto gpu = dk::make_backend({.kind = dk::backend_kind::cuda});
  dk::tensor t = gpu->alloc({16});
  std::vector<float> wrong(15);
  BOOST_CHECK_THROW(gpu->upload(t, wrong.data(), wrong.size() * sizeof(float)),
                    std::invalid_argument);
  BOOST_CHECK_THROW(gpu->download(t, wrong.data(), wrong.size() * sizeof(float)),
                    std::invalid_argument);
  BOOST_CHECK_THROW(gpu->alloc({3, -1}), std::invalid_argument);
  dk::gemm_desc d;
  d.m = 4, d.n = 4, d.k = 4, d.lda = 3, d.ldb = 4, d.ldc = 4; // lda < k
  try {
    gpu->gemm(d, t.f32(), t.f32(), t.f32());
    BOOST_ERROR("gemm accepted lda < k");
  } catch (const std::invalid_argument& e) {
    BOOST_TEST(std::string(e.what()).find("lda 3") != std::string::npos, e.what());
  }
  d.lda = 4, d.batch = 2, d.stride_c = 8; // the two 4 x 4 outputs would share rows
  try {
    gpu->gemm(d, t.f32(), t.f32(), t.f32());
    BOOST_ERROR("gemm accepted overlapping batch outputs");
  } catch (const std::invalid_argument& e) {
    BOOST_TEST(std::string(e.what()).find("outputs overlap") != std::string::npos, e.what());
  }
  BOOST_CHECK_THROW(gpu->add(t.f32(), t.f32(), t.f32(), -1), std::invalid_argument);
  gpu->synchronize(); // nothing bad was enqueued
}

BOOST_AUTO_TEST_SUITE_END()
