#pragma once

// Device helpers shared by the kernels: warp and block reductions, launch sizing and
// alignment tests. Header-only; everything here is inline or a template, so each .cu
// file can include it without duplicate symbols.

#include "kernels/cuda/cuda_check.hpp"

#include <cuda_runtime.h>

#include <cstdint>
#include <string>

namespace deepcee::kernels::cuda_ops {

constexpr int warp_size = 32;

inline int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

/// Blocks for a grid-stride loop over `items`: enough to fill an H100 several times,
/// few enough that each thread does a handful of items.
inline unsigned grid_for(int64_t items, int threads, int64_t max_blocks = 4096) {
  int64_t blocks = ceil_div(items, threads);
  if (blocks < 1)
    blocks = 1;
  return static_cast<unsigned>(blocks < max_blocks ? blocks : max_blocks);
}

inline bool aligned16(const void* p) {
  return reinterpret_cast<uintptr_t>(p) % 16 == 0;
}

template <class T>
__device__ inline T warp_sum(T v) {
  for (int offset = warp_size / 2; offset > 0; offset /= 2)
    v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

__device__ inline float warp_max(float v) {
  for (int offset = warp_size / 2; offset > 0; offset /= 2)
    v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}

/// Merges two partial online-softmax states (max m, sum s of exp(scale * (x - m))).
/// A state with no elements has m = -inf and s = 0 and must not produce NaN.
__device__ inline void online_merge(float& m, float& s, float m_other, float s_other, float scale) {
  float m_new = fmaxf(m, m_other);
  if (m_new == -INFINITY)
    return; // both empty
  float a = m == -INFINITY ? 0.0f : s * expf(scale * (m - m_new));
  float b = m_other == -INFINITY ? 0.0f : s_other * expf(scale * (m_other - m_new));
  m = m_new;
  s = a + b;
}

/// Adds one element x to an online-softmax state: one expf unless the max moves.
__device__ inline void online_add(float& m, float& s, float x, float scale) {
  if (x > m) {
    s = m == -INFINITY ? 0.0f : s * expf(scale * (m - x));
    m = x;
  }
  s += expf(scale * (x - m));
}

__device__ inline void warp_online_merge(float& m, float& s, float scale) {
  for (int offset = warp_size / 2; offset > 0; offset /= 2) {
    float m_other = __shfl_xor_sync(0xffffffffu, m, offset);
    float s_other = __shfl_xor_sync(0xffffffffu, s, offset);
    online_merge(m, s, m_other, s_other, scale);
  }
}

/// Sum over the block, returned to every thread. `shared` holds one T per warp; the
/// block size must be a multiple of 32 and at most 1024. Safe to call repeatedly.
template <class T>
__device__ inline T block_sum(T v, T* shared) {
  int lane = threadIdx.x % warp_size, warp = threadIdx.x / warp_size;
  int warps = blockDim.x / warp_size;
  v = warp_sum(v);
  __syncthreads(); // a previous call may still be reading `shared`
  if (lane == 0)
    shared[warp] = v;
  __syncthreads();
  T total = lane < warps ? shared[lane] : T(0);
  return warp_sum(total);
}

/// V consecutive floats, loaded and stored in one 16-byte access when V is 4 (the
/// address must then be 16-byte aligned).
template <int V>
struct fvec {
  static_assert(V == 1 || V == 4, "fvec holds 1 or 4 floats");
  float v[V];

  __device__ static fvec load(const float* p) {
    fvec r;
    if constexpr (V == 4) {
      float4 t = *reinterpret_cast<const float4*>(p);
      r.v[0] = t.x, r.v[1] = t.y, r.v[2] = t.z, r.v[3] = t.w;
    } else {
      r.v[0] = *p;
    }
    return r;
  }
  __device__ void store(float* p) const {
    if constexpr (V == 4)
      *reinterpret_cast<float4*>(p) = make_float4(v[0], v[1], v[2], v[3]);
    else
      *p = v[0];
  }
};

/// out[i] = f(a[i]) over n elements, in float4 steps when `Vec` (16-byte aligned
/// pointers). `out` may alias `a`: each element is read before it is written, by the
/// same thread.
template <bool Vec, class F>
__global__ void map_unary_kernel(float* out, const float* a, int64_t n, F f) {
  int64_t stride = static_cast<int64_t>(blockDim.x) * gridDim.x;
  int64_t first = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  int64_t tail = 0;
  if constexpr (Vec) {
    int64_t n4 = n / 4;
    for (int64_t i = first; i < n4; i += stride) {
      float4 x = reinterpret_cast<const float4*>(a)[i];
      reinterpret_cast<float4*>(out)[i] = make_float4(f(x.x), f(x.y), f(x.z), f(x.w));
    }
    tail = n4 * 4;
  }
  for (int64_t i = tail + first; i < n; i += stride)
    out[i] = f(a[i]);
}

/// out[i] = f(a[i], b[i]); the same aliasing rule as map_unary_kernel.
template <bool Vec, class F>
__global__ void map_binary_kernel(float* out, const float* a, const float* b, int64_t n, F f) {
  int64_t stride = static_cast<int64_t>(blockDim.x) * gridDim.x;
  int64_t first = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  int64_t tail = 0;
  if constexpr (Vec) {
    int64_t n4 = n / 4;
    for (int64_t i = first; i < n4; i += stride) {
      float4 x = reinterpret_cast<const float4*>(a)[i];
      float4 y = reinterpret_cast<const float4*>(b)[i];
      reinterpret_cast<float4*>(out)[i] =
          make_float4(f(x.x, y.x), f(x.y, y.y), f(x.z, y.z), f(x.w, y.w));
    }
    tail = n4 * 4;
  }
  for (int64_t i = tail + first; i < n; i += stride)
    out[i] = f(a[i], b[i]);
}

constexpr int map_threads = 256;

template <class F>
void map_unary(float* out, const float* a, int64_t n, F f, cudaStream_t stream) {
  CUDA_REQUIRE(n >= 0, "negative element count " + std::to_string(n));
  if (n == 0)
    return;
  if (aligned16(out) && aligned16(a))
    map_unary_kernel<true>
        <<<grid_for(ceil_div(n, 4), map_threads), map_threads, 0, stream>>>(out, a, n, f);
  else
    map_unary_kernel<false><<<grid_for(n, map_threads), map_threads, 0, stream>>>(out, a, n, f);
  CUDA_CHECK_LAUNCH();
}

template <class F>
void map_binary(float* out, const float* a, const float* b, int64_t n, F f, cudaStream_t stream) {
  CUDA_REQUIRE(n >= 0, "negative element count " + std::to_string(n));
  if (n == 0)
    return;
  if (aligned16(out) && aligned16(a) && aligned16(b))
    map_binary_kernel<true>
        <<<grid_for(ceil_div(n, 4), map_threads), map_threads, 0, stream>>>(out, a, b, n, f);
  else
    map_binary_kernel<false><<<grid_for(n, map_threads), map_threads, 0, stream>>>(out, a, b, n, f);
  CUDA_CHECK_LAUNCH();
}

} // namespace deepcee::kernels::cuda_ops
