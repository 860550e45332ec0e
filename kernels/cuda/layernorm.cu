// LayerNorm over the last dimension: forward (saving mean and rstd per row), backward to
// the input, and the accumulated gamma/beta gradients.
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/cuda_check.hpp"
#include "kernels/cuda/launchers.hpp"

#include <climits>
#include <string>

namespace deepcee::kernels::cuda_ops {
namespace {

constexpr int row_threads = 256; // 8 warps, one row each
constexpr int rows_per_block = row_threads / warp_size;
constexpr int column_tile = 32;
constexpr int column_lanes = 8;

/// One warp per row; cols % V == 0 and every pointer 16-byte aligned when V is 4.
template <int V>
__global__ void layernorm_forward_kernel(float* out, float* mean, float* rstd, const float* x,
                                         const float* gamma, const float* beta, int64_t rows,
                                         int cols, float eps) {
  int64_t row = static_cast<int64_t>(blockIdx.x) * rows_per_block + threadIdx.x / warp_size;
  int lane = threadIdx.x % warp_size;
  if (row >= rows)
    return; // the whole warp leaves together, so the shuffles below stay full
  const float* xr = x + row * cols;
  float sum = 0.0f;
  for (int j = lane * V; j < cols; j += warp_size * V) {
    auto xv = fvec<V>::load(xr + j);
    for (int k = 0; k < V; ++k)
      sum += xv.v[k];
  }
  float mu = warp_sum(sum) / static_cast<float>(cols);
  float var = 0.0f;
  for (int j = lane * V; j < cols; j += warp_size * V) {
    auto xv = fvec<V>::load(xr + j);
    for (int k = 0; k < V; ++k) {
      float d = xv.v[k] - mu;
      var += d * d;
    }
  }
  var = warp_sum(var);
  float rs = 1.0f / sqrtf(var / static_cast<float>(cols) + eps);
  float* o = out + row * cols;
  for (int j = lane * V; j < cols; j += warp_size * V) {
    auto xv = fvec<V>::load(xr + j);
    auto g = fvec<V>::load(gamma + j);
    auto b = fvec<V>::load(beta + j);
    fvec<V> y;
    for (int k = 0; k < V; ++k)
      y.v[k] = (xv.v[k] - mu) * rs * g.v[k] + b.v[k];
    y.store(o + j);
  }
  if (lane == 0) {
    mean[row] = mu;
    rstd[row] = rs;
  }
}

/// dx = rstd * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat)), dxhat = dy * gamma.
template <int V>
__global__ void layernorm_backward_input_kernel(float* dx, const float* dy, const float* x,
                                                const float* mean, const float* rstd,
                                                const float* gamma, int64_t rows, int cols) {
  int64_t row = static_cast<int64_t>(blockIdx.x) * rows_per_block + threadIdx.x / warp_size;
  int lane = threadIdx.x % warp_size;
  if (row >= rows)
    return;
  const float* xr = x + row * cols;
  const float* dyr = dy + row * cols;
  float mu = mean[row], rs = rstd[row];
  float sum_dxhat = 0.0f, sum_dxhat_xhat = 0.0f;
  for (int j = lane * V; j < cols; j += warp_size * V) {
    auto xv = fvec<V>::load(xr + j);
    auto dyv = fvec<V>::load(dyr + j);
    auto g = fvec<V>::load(gamma + j);
    for (int k = 0; k < V; ++k) {
      float dxhat = dyv.v[k] * g.v[k];
      sum_dxhat += dxhat;
      sum_dxhat_xhat += dxhat * (xv.v[k] - mu) * rs;
    }
  }
  sum_dxhat = warp_sum(sum_dxhat);
  sum_dxhat_xhat = warp_sum(sum_dxhat_xhat);
  float inv_n = 1.0f / static_cast<float>(cols);
  float* dxr = dx + row * cols;
  for (int j = lane * V; j < cols; j += warp_size * V) {
    auto xv = fvec<V>::load(xr + j);
    auto dyv = fvec<V>::load(dyr + j);
    auto g = fvec<V>::load(gamma + j);
    fvec<V> d;
    for (int k = 0; k < V; ++k) {
      float xhat = (xv.v[k] - mu) * rs;
      d.v[k] = rs * (dyv.v[k] * g.v[k] - sum_dxhat * inv_n - xhat * sum_dxhat_xhat * inv_n);
    }
    d.store(dxr + j);
  }
}

/// Column sums of dy * xhat and dy over the rows of split blockIdx.y, 32 columns a
/// block. One split adds into dgamma/dbeta; more write partials [2][splits][cols].
__global__ void layernorm_weight_kernel(float* dgamma, float* dbeta, const float* dy,
                                        const float* x, const float* mean, const float* rstd,
                                        int64_t rows, int64_t cols, bool accumulate) {
  __shared__ float part_g[column_lanes][column_tile + 1];
  __shared__ float part_b[column_lanes][column_tile + 1];
  int64_t col = static_cast<int64_t>(blockIdx.x) * column_tile + threadIdx.x;
  float sg = 0.0f, sb = 0.0f;
  if (col < cols)
    for (int64_t r = static_cast<int64_t>(blockIdx.y) * column_lanes + threadIdx.y; r < rows;
         r += static_cast<int64_t>(column_lanes) * gridDim.y) {
      float d = dy[r * cols + col];
      sg += d * (x[r * cols + col] - mean[r]) * rstd[r];
      sb += d;
    }
  part_g[threadIdx.y][threadIdx.x] = sg;
  part_b[threadIdx.y][threadIdx.x] = sb;
  __syncthreads();
  if (threadIdx.y != 0 || col >= cols)
    return;
  float tg = 0.0f, tb = 0.0f;
  for (int i = 0; i < column_lanes; ++i) {
    tg += part_g[i][threadIdx.x];
    tb += part_b[i][threadIdx.x];
  }
  if (accumulate) {
    dgamma[col] += tg;
    dbeta[col] += tb;
  } else {
    dgamma[blockIdx.y * cols + col] = tg;
    dbeta[blockIdx.y * cols + col] = tb;
  }
}

void require_shape(const char* op, int64_t rows, int64_t cols) {
  CUDA_REQUIRE(rows >= 0 && cols >= 0 && cols <= INT_MAX,
               std::string(op) + ": shape " + std::to_string(rows) + " x " + std::to_string(cols));
}

unsigned row_blocks(int64_t rows) {
  return static_cast<unsigned>(ceil_div(rows, rows_per_block));
}

} // namespace

void layernorm_forward(float* out, float* mean, float* rstd, const float* x, const float* gamma,
                       const float* beta, int64_t rows, int64_t cols, float eps,
                       cudaStream_t stream) {
  require_shape("layernorm_forward", rows, cols);
  if (rows == 0)
    return;
  int c = static_cast<int>(cols);
  if (cols % 4 == 0 && aligned16(out) && aligned16(x) && aligned16(gamma) && aligned16(beta))
    layernorm_forward_kernel<4><<<row_blocks(rows), row_threads, 0, stream>>>(
        out, mean, rstd, x, gamma, beta, rows, c, eps);
  else
    layernorm_forward_kernel<1><<<row_blocks(rows), row_threads, 0, stream>>>(
        out, mean, rstd, x, gamma, beta, rows, c, eps);
  CUDA_CHECK_LAUNCH();
}

void layernorm_backward_input(float* dx, const float* dy, const float* x, const float* mean,
                              const float* rstd, const float* gamma, int64_t rows, int64_t cols,
                              cudaStream_t stream) {
  require_shape("layernorm_backward_input", rows, cols);
  if (rows == 0)
    return;
  int c = static_cast<int>(cols);
  if (cols % 4 == 0 && aligned16(dx) && aligned16(dy) && aligned16(x) && aligned16(gamma))
    layernorm_backward_input_kernel<4>
        <<<row_blocks(rows), row_threads, 0, stream>>>(dx, dy, x, mean, rstd, gamma, rows, c);
  else
    layernorm_backward_input_kernel<1>
        <<<row_blocks(rows), row_threads, 0, stream>>>(dx, dy, x, mean, rstd, gamma, rows, c);
  CUDA_CHECK_LAUNCH();
}

void layernorm_backward_weight(float* dgamma, float* dbeta, const float* dy, const float* x,
                               const float* mean, const float* rstd, int64_t rows, int64_t cols,
                               scratch_arena& scratch, cudaStream_t stream) {
  require_shape("layernorm_backward_weight", rows, cols);
  if (rows == 0 || cols == 0)
    return;
  int64_t splits = column_reduce_splits(rows, cols);
  dim3 block(column_tile, column_lanes);
  dim3 grid(static_cast<unsigned>(ceil_div(cols, column_tile)), static_cast<unsigned>(splits));
  if (splits == 1) {
    layernorm_weight_kernel<<<grid, block, 0, stream>>>(dgamma, dbeta, dy, x, mean, rstd, rows,
                                                        cols, true);
    CUDA_CHECK_LAUNCH();
    return;
  }
  auto* partials =
      static_cast<float*>(scratch.get(static_cast<size_t>(2 * splits * cols) * sizeof(float)));
  float* partial_b = partials + splits * cols;
  layernorm_weight_kernel<<<grid, block, 0, stream>>>(partials, partial_b, dy, x, mean, rstd, rows,
                                                      cols, false);
  CUDA_CHECK_LAUNCH();
  add_partials(dgamma, partials, splits, cols, stream);
  add_partials(dbeta, partial_b, splits, cols, stream);
}

} // namespace deepcee::kernels::cuda_ops
