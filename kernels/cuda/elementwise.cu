// Elementwise ops and the column/global reductions over plain arrays: fill, add, axpy,
// scale, add_bias, bias_backward, sum_squares.
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/cuda_check.hpp"
#include "kernels/cuda/launchers.hpp"

#include <algorithm>
#include <cstring>
#include <string>

namespace deepcee::kernels::cuda_ops {
namespace {

// Column reductions use blocks of 32 columns x 8 row lanes: a warp reads 32 consecutive
// floats of one row (one 128-byte transaction).
constexpr int column_tile = 32;
constexpr int column_lanes = 8;

struct add_f {
  __device__ float operator()(float a, float b) const { return a + b; }
};
struct axpy_f {
  float alpha;
  __device__ float operator()(float y, float x) const { return y + alpha * x; }
};
struct scale_f {
  float alpha;
  __device__ float operator()(float x) const { return x * alpha; }
};

__global__ void fill_kernel(float* x, float value, int64_t n) {
  int64_t stride = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    x[i] = value;
}

/// One thread per column, rows strided over gridDim.y, so bias[col] is read once.
__global__ void add_bias_kernel(float* y, const float* bias, int64_t rows, int64_t cols) {
  int64_t col = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (col >= cols)
    return;
  float b = bias[col];
  for (int64_t r = blockIdx.y; r < rows; r += gridDim.y)
    y[r * cols + col] += b;
}

/// Sums dy over the rows of split blockIdx.y for 32 columns. With one split the result
/// is added into `out[col]`; otherwise written to `out[split * cols + col]`.
__global__ void column_sum_kernel(float* out, const float* dy, int64_t rows, int64_t cols,
                                  bool accumulate) {
  __shared__ float part[column_lanes][column_tile + 1];
  int64_t col = static_cast<int64_t>(blockIdx.x) * column_tile + threadIdx.x;
  float sum = 0.0f;
  if (col < cols)
    for (int64_t r = static_cast<int64_t>(blockIdx.y) * column_lanes + threadIdx.y; r < rows;
         r += static_cast<int64_t>(column_lanes) * gridDim.y)
      sum += dy[r * cols + col];
  part[threadIdx.y][threadIdx.x] = sum;
  __syncthreads();
  if (threadIdx.y != 0 || col >= cols)
    return;
  float total = 0.0f;
  for (int i = 0; i < column_lanes; ++i)
    total += part[i][threadIdx.x];
  if (accumulate)
    out[col] += total;
  else
    out[blockIdx.y * cols + col] = total;
}

__global__ void add_partials_kernel(float* dst, const float* partials, int64_t splits,
                                    int64_t cols) {
  int64_t col = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (col >= cols)
    return;
  float sum = 0.0f;
  for (int64_t s = 0; s < splits; ++s)
    sum += partials[s * cols + col];
  dst[col] += sum;
}

__global__ void sum_squares_kernel(double* partials, const float* x, int64_t n) {
  __shared__ double shared[warp_size];
  int64_t stride = static_cast<int64_t>(blockDim.x) * gridDim.x;
  double sum = 0.0;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    double v = x[i];
    sum += v * v;
  }
  sum = block_sum(sum, shared);
  if (threadIdx.x == 0)
    partials[blockIdx.x] = sum;
}

__global__ void sum_doubles_kernel(double* result, const double* partials, int count) {
  __shared__ double shared[warp_size];
  double sum = 0.0;
  for (int i = threadIdx.x; i < count; i += blockDim.x)
    sum += partials[i];
  sum = block_sum(sum, shared);
  if (threadIdx.x == 0)
    *result = sum;
}

} // namespace

void fill(float* x, float value, int64_t n, cudaStream_t stream) {
  CUDA_REQUIRE(n >= 0, "fill: negative element count " + std::to_string(n));
  if (n == 0)
    return;
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  if (bits == 0) { // +0.0f only: -0.0f has its sign bit set
    CUDA_CHECK(cudaMemsetAsync(x, 0, static_cast<size_t>(n) * sizeof(float), stream));
    return;
  }
  fill_kernel<<<grid_for(n, map_threads), map_threads, 0, stream>>>(x, value, n);
  CUDA_CHECK_LAUNCH();
}

void add(float* out, const float* a, const float* b, int64_t n, cudaStream_t stream) {
  map_binary(out, a, b, n, add_f{}, stream);
}

void axpy(float* y, float alpha, const float* x, int64_t n, cudaStream_t stream) {
  map_binary(y, y, x, n, axpy_f{alpha}, stream);
}

void scale(float* x, float alpha, int64_t n, cudaStream_t stream) {
  map_unary(x, x, n, scale_f{alpha}, stream);
}

void add_bias(float* y, const float* bias, int64_t rows, int64_t cols, cudaStream_t stream) {
  CUDA_REQUIRE(rows >= 0 && cols >= 0,
               "add_bias: shape " + std::to_string(rows) + " x " + std::to_string(cols));
  if (rows == 0 || cols == 0)
    return;
  constexpr int threads = 256;
  int64_t col_blocks = ceil_div(cols, threads);
  int64_t row_blocks = std::min<int64_t>({rows, 65535, std::max<int64_t>(1, 8192 / col_blocks)});
  dim3 grid(static_cast<unsigned>(col_blocks), static_cast<unsigned>(row_blocks));
  add_bias_kernel<<<grid, threads, 0, stream>>>(y, bias, rows, cols);
  CUDA_CHECK_LAUNCH();
}

int64_t column_reduce_splits(int64_t rows, int64_t cols) {
  int64_t col_blocks = ceil_div(cols, column_tile);
  int64_t wanted = ceil_div(1024, col_blocks);                           // about 1024 blocks in all
  int64_t most = std::max<int64_t>(1, ceil_div(rows, 8 * column_lanes)); // >= 8 rows a lane
  return std::max<int64_t>(1, std::min<int64_t>({wanted, most, 65535}));
}

void bias_backward(float* dbias, const float* dy, int64_t rows, int64_t cols,
                   scratch_arena& scratch, cudaStream_t stream) {
  CUDA_REQUIRE(rows >= 0 && cols >= 0,
               "bias_backward: shape " + std::to_string(rows) + " x " + std::to_string(cols));
  if (rows == 0 || cols == 0)
    return;
  int64_t splits = column_reduce_splits(rows, cols);
  dim3 block(column_tile, column_lanes);
  dim3 grid(static_cast<unsigned>(ceil_div(cols, column_tile)), static_cast<unsigned>(splits));
  if (splits == 1) {
    column_sum_kernel<<<grid, block, 0, stream>>>(dbias, dy, rows, cols, true);
    CUDA_CHECK_LAUNCH();
    return;
  }
  auto* partials =
      static_cast<float*>(scratch.get(static_cast<size_t>(splits * cols) * sizeof(float)));
  column_sum_kernel<<<grid, block, 0, stream>>>(partials, dy, rows, cols, false);
  CUDA_CHECK_LAUNCH();
  add_partials(dbias, partials, splits, cols, stream);
}

void add_partials(float* dst, const float* partials, int64_t splits, int64_t cols,
                  cudaStream_t stream) {
  constexpr int threads = 256;
  add_partials_kernel<<<static_cast<unsigned>(ceil_div(cols, threads)), threads, 0, stream>>>(
      dst, partials, splits, cols);
  CUDA_CHECK_LAUNCH();
}

void sum_squares(double* result, const float* x, int64_t n, scratch_arena& scratch,
                 cudaStream_t stream) {
  CUDA_REQUIRE(n >= 0, "sum_squares: negative element count " + std::to_string(n));
  constexpr int threads = 256;
  unsigned blocks = grid_for(n, threads, 1024);
  auto* partials = static_cast<double*>(scratch.get(blocks * sizeof(double)));
  sum_squares_kernel<<<blocks, threads, 0, stream>>>(partials, x, n);
  CUDA_CHECK_LAUNCH();
  sum_doubles_kernel<<<1, 1024, 0, stream>>>(result, partials, static_cast<int>(blocks));
  CUDA_CHECK_LAUNCH();
}

} // namespace deepcee::kernels::cuda_ops
