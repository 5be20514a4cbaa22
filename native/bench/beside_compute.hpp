// kvio_cuda_bench --beside-compute (beside_compute.cpp): kvio's per-layer loads next to a
// compute load that keeps every SM busy, both sides measured in the same run.
#ifndef KVIO_BENCH_BESIDE_COMPUTE_HPP_
#define KVIO_BENCH_BESIDE_COMPUTE_HPP_

#include <string>

namespace kvio_bench {

/// Runs the mode on device 0 and writes its TSV to `out`; `quick` shortens each measurement
/// window. Returns the process exit status (0; skips with 0 where there is no GPU; exits 1 on a
/// CUDA or kvio error).
int runBesideCompute(bool quick, const std::string& out);

}  // namespace kvio_bench

#endif  // KVIO_BENCH_BESIDE_COMPUTE_HPP_
