// What submit's checks of its index arrays cost the host (kvio_check_transfer_args: the checks
// every kvio_submit runs before it plans or moves a byte: index ranges, the index runs,
// duplicate destination slots), per pair, against the least any such check costs: one pass
// reading both arrays (their minimum and maximum) in the same run (x_scan: the scan's time over
// the checks'). Every backend's submit runs these checks, so a transfer of many scattered
// pairs is bound by them when the device moves its rows faster (kvio_cuda_bench prints the
// host's submit time beside each row for that reason).
//
// Cases: BM_Checks/pairs:<n>/slots:<destination pool's token slots>/scattered:<0 or 1>;
// scattered pairs are distinct random slots on both sides, the others consecutive slots (one
// run). The pool of 2^25 slots has more than 256 slots per pair, so duplicates are found by
// sorting (validate.cpp) instead of the slot bitmap.
//
// Build and run (Release):
//   cmake --build build --target kvio_check_bench && ./build/native/bench/kvio_check_bench
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <random>
#include <vector>

#include "kvio/kvio.h"

namespace {

void mustSucceed(kvio_status status, const char* what) {
  if (status != KVIO_STATUS_OK) {
    std::fprintf(stderr, "%s: %s\n", what, kvio_last_error());
    std::abort();
  }
}

// A host pool of `slots` token slots, one 16-byte latent row each (MLA), one layer. kvio
// allocates it; the checks never touch its bytes.
uint64_t pool(int64_t slots) {
  const kvio_pool_spec spec{KVIO_KIND_MLA, KVIO_LAYOUT_LAYER_FIRST, 1, slots, 1, 1, 16};
  uint64_t handle = 0;
  mustSucceed(kvio_pool_allocate(&spec, &handle), "kvio_pool_allocate");
  return handle;
}

std::vector<int64_t> indices(int64_t pairs, int64_t slots, bool scattered, std::mt19937_64& rng) {
  std::vector<int64_t> out(static_cast<size_t>(pairs));
  if (!scattered) {
    std::iota(out.begin(), out.end(), 0);
    return out;
  }
  // Distinct random slots: a partial Fisher-Yates over the slot numbers.
  std::vector<int64_t> all(static_cast<size_t>(slots));
  std::iota(all.begin(), all.end(), 0);
  for (int64_t i = 0; i < pairs; ++i) {
    std::uniform_int_distribution<int64_t> pick(i, slots - 1);
    std::swap(all[static_cast<size_t>(i)], all[static_cast<size_t>(pick(rng))]);
  }
  std::copy(all.begin(), all.begin() + pairs, out.begin());
  return out;
}

void BM_Checks(benchmark::State& state) {
  const int64_t pairs = state.range(0);
  const int64_t slots = state.range(1);
  const bool scattered = state.range(2) != 0;
  std::mt19937_64 rng(7);
  const std::vector<int64_t> src = indices(pairs, slots, scattered, rng);
  const std::vector<int64_t> dst = indices(pairs, slots, scattered, rng);
  uint64_t executor = 0;
  mustSucceed(kvio_executor_create(KVIO_BACKEND_CPU, 1, &executor), "kvio_executor_create");
  const uint64_t a = pool(slots);
  const uint64_t b = pool(slots);
  double checkSeconds = 0;
  double scanSeconds = 0;
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    mustSucceed(kvio_check_transfer_args(executor, a, b, src.data(), dst.data(), pairs, 0, 0, 1, 0),
                "kvio_check_transfer_args");
    const auto t1 = std::chrono::steady_clock::now();
    // The baseline: one pass over both arrays (their extremes), as a range check needs at least.
    const auto [srcMin, srcMax] = std::minmax_element(src.begin(), src.end());
    const auto [dstMin, dstMax] = std::minmax_element(dst.begin(), dst.end());
    int64_t extremes = *srcMin + *srcMax + *dstMin + *dstMax;
    benchmark::DoNotOptimize(extremes);
    const auto t2 = std::chrono::steady_clock::now();
    checkSeconds += std::chrono::duration<double>(t1 - t0).count();
    scanSeconds += std::chrono::duration<double>(t2 - t1).count();
    state.SetIterationTime(std::chrono::duration<double>(t1 - t0).count());
  }
  const double n = static_cast<double>(state.iterations()) * static_cast<double>(pairs);
  state.counters["ns_per_pair"] = checkSeconds * 1e9 / n;
  state.counters["scan_ns_per_pair"] = scanSeconds * 1e9 / n;
  state.counters["x_scan"] = checkSeconds > 0 ? scanSeconds / checkSeconds : 0;
  kvio_pool_close(a);
  kvio_pool_close(b);
  kvio_executor_close(executor);
}

void Args(benchmark::internal::Benchmark* b) {
  b->ArgNames({"pairs", "slots", "scattered"});
  for (int64_t pairs : {4096, 32768, 65536, 262144}) {
    b->Args({pairs, 2 * pairs, 1});
    b->Args({pairs, 2 * pairs, 0});
  }
  b->Args({65536, int64_t{1} << 25, 1});
}

BENCHMARK(BM_Checks)->Apply(Args)->UseManualTime()->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
