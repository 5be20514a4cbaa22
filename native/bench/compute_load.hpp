// The compute load of kvio_cuda_bench --beside-compute (compute_load.cu, beside_compute.cpp): a
// stand-in for a bf16 matmul loop, because the CUDA toolkit the bench is built with carries no
// cuBLAS. Not part of kvio.
#ifndef KVIO_BENCH_COMPUTE_LOAD_HPP_
#define KVIO_BENCH_COMPUTE_LOAD_HPP_

#include <cuda_runtime.h>

#include <cstdint>

namespace kvio_bench {

constexpr int kComputeThreads = 512;  // per CTA; 4 CTAs fill an SM's 2048 threads

/// Thread blocks of the compute kernel resident on one SM at once
/// (cudaOccupancyMaxActiveBlocksPerMultiprocessor; 4 where the kernel fits its bounds).
cudaError_t computeLoadBlocksPerSm(int* blocks);

/// Floating-point operations of one launch: grid x 16 warps x iterations x 2 bf16 tensor-core
/// 16x16x16 multiply-adds (2 x 4096 operations each).
double computeLoadFlops(int grid, int iterations);

/// Launches the compute kernel on `stream`: `grid` CTAs of kComputeThreads threads, each warp
/// doing `iterations` x 2 dependent-chain bf16 16x16x16 tensor-core multiply-adds (wmma, fp32
/// accumulators) on operands held in registers. `sink` (device memory, `grid` floats, or null)
/// is written only when a result equals an impossible value, so the work is not optimized out.
/// Returns cudaGetLastError. Needs sm_80 or later (elsewhere the kernel does nothing).
cudaError_t launchComputeLoad(int grid, int iterations, float* sink, cudaStream_t stream);

}  // namespace kvio_bench

#endif  // KVIO_BENCH_COMPUTE_LOAD_HPP_
