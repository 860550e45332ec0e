// Matrix products on cuBLAS. gemm_desc is row-major; cuBLAS is column-major. A row-major
// matrix with row stride ld is, read column-major, its transpose with the same ld. So
// C = op(A) op(B) is computed as C^T = op(B)^T op(A)^T. B and A swap places, m and n swap,
// and each operand keeps its own transpose flag.
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/cuda_check.hpp"
#include "kernels/cuda/launchers.hpp"

#include <algorithm>
#include <string>

namespace deepcee::kernels::cuda_ops {
namespace {

/// C = beta * C over a strided batch: what a product with k = 0 leaves. beta = 0 writes
/// zeros (BLAS does not read C then, so NaNs there do not survive).
__global__ void scale_matrices_kernel(float* c, float beta, int m, int n, int ldc, int64_t stride_c,
                                      int batch) {
  int64_t total = static_cast<int64_t>(batch) * m * n;
  int64_t stride = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += stride) {
    int64_t row = i / n;
    int64_t col = i - row * n;
    int64_t b = row / m;
    row -= b * m;
    float* p = c + b * stride_c + row * ldc + col;
    *p = beta == 0.0f ? 0.0f : beta * *p;
  }
}

std::string describe(const gemm_desc& d) {
  return "gemm(trans_a " + std::to_string(d.trans_a) + ", trans_b " + std::to_string(d.trans_b) +
         ", m " + std::to_string(d.m) + ", n " + std::to_string(d.n) + ", k " +
         std::to_string(d.k) + ", lda " + std::to_string(d.lda) + ", ldb " + std::to_string(d.ldb) +
         ", ldc " + std::to_string(d.ldc) + ", batch " + std::to_string(d.batch) + ")";
}

} // namespace

void gemm(cublasHandle_t handle, const gemm_desc& d, const float* a, const float* b, float* c,
          matmul_precision precision) {
  CUDA_REQUIRE(d.m >= 0 && d.n >= 0 && d.k >= 0 && d.batch >= 0, describe(d));
  // Row lengths of the matrices as stored: A is m x k (k x m when transposed), and so on.
  int a_cols = d.trans_a ? d.m : d.k;
  int b_cols = d.trans_b ? d.k : d.n;
  CUDA_REQUIRE(d.lda >= std::max(1, a_cols), describe(d));
  CUDA_REQUIRE(d.ldb >= std::max(1, b_cols), describe(d));
  CUDA_REQUIRE(d.ldc >= std::max(1, d.n), describe(d));
  // The batch's products run at once: their outputs must not overlap (the CPU's would
  // accumulate in turn).
  CUDA_REQUIRE(d.batch <= 1 || d.m == 0 || d.n == 0 ||
                   d.stride_c >= static_cast<int64_t>(d.m - 1) * d.ldc + d.n,
               describe(d) + ": the batch's outputs overlap (stride_c " +
                   std::to_string(d.stride_c) + ")");
  if (d.m == 0 || d.n == 0 || d.batch == 0)
    return;
  if (d.k == 0) { // cuBLAS does not promise to handle an empty inner dimension
    cudaStream_t stream;
    CUBLAS_CHECK(cublasGetStream(handle, &stream));
    int64_t total = static_cast<int64_t>(d.batch) * d.m * d.n;
    scale_matrices_kernel<<<grid_for(total, 256), 256, 0, stream>>>(c, d.beta, d.m, d.n, d.ldc,
                                                                    d.stride_c, d.batch);
    CUDA_CHECK_LAUNCH();
    return;
  }
  cublasComputeType_t compute =
      precision == matmul_precision::bf16 ? CUBLAS_COMPUTE_32F_FAST_16BF : CUBLAS_COMPUTE_32F;
  CUBLAS_CHECK(cublasGemmStridedBatchedEx(
      handle, d.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, d.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, d.n,
      d.m, d.k, &d.alpha, b, CUDA_R_32F, d.ldb, d.stride_b, a, CUDA_R_32F, d.lda, d.stride_a,
      &d.beta, c, CUDA_R_32F, d.ldc, d.stride_c, d.batch, compute, CUBLAS_GEMM_DEFAULT));
}

} // namespace deepcee::kernels::cuda_ops
