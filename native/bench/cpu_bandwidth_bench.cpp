// Bandwidth of kvio's CPU backend against a plain parallel memcpy, in one run (Google
// Benchmark). Gathers: an all-layer backup from a layer_first "device" pool (one buffer) to a
// page_first host pool, random device rows or random whole pages, host slots in order.
// Scatters: the load back (host in order, device rows/pages random). Row sizes 256 B to
// 256 KiB, 4 layers, one component (an MLA-style latent row), 32 MiB moved per transfer.
// Every iteration also times, right after the transfer, a memcpy of the same 32 MiB split
// over the same number of threads (contiguous buffers allocated by kvio like the pools, so with
// the same huge-page advice; a persistent thread team): x_memcpy is kvio's rate over it.
// x_memcpy64k compares with the same memcpy issued in 64 KiB calls (glibc moves one large block
// with non-temporal stores, which can lose to cache-sized calls when the working set fits the
// last-level cache). Source and destination bytes are the same every iteration, for kvio as for
// memcpy. A summary table is printed at the end.
//
// Build and run (Release):
//   cmake -S . -B build -DCMAKE_BUILD_TYPE=Release && cmake --build build --target kvio_cpu_bench
//   ./build/native/bench/kvio_cpu_bench                       # threads = online cores
//   KVIO_BENCH_THREADS=8 ./build/native/bench/kvio_cpu_bench  # another thread count
//   ./build/native/bench/kvio_cpu_bench --benchmark_filter='row:4096/'   # one row size
// Cases are BM_Transfer/row:<bytes>/scatter:<0 gather, 1 scatter>/pages:<0 rows, 1 pages>; each
// runs about 0.3 s of timed transfers (--benchmark_min_time changes that); ~35 s in all.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <numeric>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "kvio/kvio.hpp"

namespace {

constexpr int64_t kLayers = 4;
constexpr int64_t kPageTokens = 16;
constexpr uint64_t kTransferBytes = 32ull << 20;  // per transfer, all layers
constexpr uint64_t kPoolBytes = 128ull << 20;     // per pool

int32_t benchThreads() {
  if (const char* env = std::getenv("KVIO_BENCH_THREADS")) {
    const int v = std::atoi(env);
    if (v > 0) return v;
  }
  return static_cast<int32_t>(std::max(1u, std::thread::hardware_concurrency()));
}

// A persistent team of threads running one memcpy split into equal contiguous parts.
class MemcpyTeam {
 public:
  explicit MemcpyTeam(int32_t threads) : threads_(threads) {
    for (int32_t i = 1; i < threads; ++i) workers_.emplace_back([this, i] { loop(i); });
  }
  ~MemcpyTeam() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
      ++generation_;
    }
    start_.notify_all();
    for (auto& t : workers_) t.join();
  }
  // Each thread copies its contiguous part with one memcpy (piece 0) or in pieces of `piece`.
  void copy(char* dst, const char* src, uint64_t bytes, uint64_t piece = 0) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      dst_ = dst;
      src_ = src;
      bytes_ = bytes;
      piece_ = piece;
      pending_ = threads_ - 1;
      ++generation_;
    }
    start_.notify_all();
    part(0);
    std::unique_lock<std::mutex> lock(mutex_);
    done_.wait(lock, [this] { return pending_ == 0; });
  }

 private:
  void part(int32_t i) {
    const uint64_t chunk = (bytes_ + threads_ - 1) / threads_;
    const uint64_t begin = std::min<uint64_t>(bytes_, chunk * i);
    const uint64_t end = std::min<uint64_t>(bytes_, begin + chunk);
    if (piece_ == 0) {
      std::memcpy(dst_ + begin, src_ + begin, end - begin);
      return;
    }
    for (uint64_t at = begin; at < end; at += piece_) {
      std::memcpy(dst_ + at, src_ + at, std::min(piece_, end - at));
    }
  }
  void loop(int32_t i) {
    uint64_t seen = 0;
    for (;;) {
      {
        std::unique_lock<std::mutex> lock(mutex_);
        start_.wait(lock, [&] { return generation_ != seen; });
        seen = generation_;
        if (stop_) return;
      }
      part(i);
      std::lock_guard<std::mutex> lock(mutex_);
      if (--pending_ == 0) done_.notify_all();
    }
  }

  const int32_t threads_;
  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable start_, done_;
  uint64_t generation_ = 0;
  int32_t pending_ = 0;
  bool stop_ = false;
  char* dst_ = nullptr;
  const char* src_ = nullptr;
  uint64_t bytes_ = 0;
  uint64_t piece_ = 0;
};

// Pools, executor and memcpy buffers of the current row size (one row size at a time).
struct Fixture {
  int64_t row = 0;
  int32_t threads = 0;
  std::unique_ptr<kvio::Executor> executor;
  std::unique_ptr<kvio::Pool> device, host;
  std::unique_ptr<MemcpyTeam> team;
  std::unique_ptr<kvio::Pool> memcpySrc, memcpyDst;  // kvio-allocated: same pages as pools
};

kvio::PoolSpec spec(kvio::Layout layout, int64_t row) {
  kvio::PoolSpec s;
  s.kind = kvio::PoolKind::Mla;
  s.layout = layout;
  s.numLayers = kLayers;
  s.pageSize = kPageTokens;
  s.numPages = static_cast<int64_t>(kPoolBytes) / (kLayers * kPageTokens * row);
  s.headNum = 1;
  s.headBytes = row;
  return s;
}

Fixture& fixture(int64_t row) {
  static Fixture f;
  if (f.row == row) return f;
  f.device.reset();
  f.host.reset();
  f.row = row;
  f.threads = benchThreads();
  if (!f.executor) f.executor = std::make_unique<kvio::Executor>(kvio::IoBackend::Cpu, f.threads);
  if (!f.team) f.team = std::make_unique<MemcpyTeam>(f.threads);
  f.device =
      std::make_unique<kvio::Pool>(kvio::Pool::allocate(spec(kvio::Layout::LayerFirst, row)));
  f.host = std::make_unique<kvio::Pool>(kvio::Pool::allocate(spec(kvio::Layout::PageFirst, row)));
  std::memset(f.device->data(), 1, f.device->bytes());  // fault the pages in
  std::memset(f.host->data(), 2, f.host->bytes());
  if (!f.memcpySrc) {
    kvio::PoolSpec flat = spec(kvio::Layout::LayerFirst, 4096);
    flat.numLayers = 1;
    flat.pageSize = 1;
    flat.numPages = static_cast<int64_t>(kTransferBytes) / 4096;
    f.memcpySrc = std::make_unique<kvio::Pool>(kvio::Pool::allocate(flat));
    f.memcpyDst = std::make_unique<kvio::Pool>(kvio::Pool::allocate(flat));
    std::memset(f.memcpySrc->data(), 3, kTransferBytes);
    std::memset(f.memcpyDst->data(), 4, kTransferBytes);
  }
  return f;
}

struct Result {
  double kvio = 0, memcpy = 0, memcpy64k = 0;
  int64_t copiesPerTransfer = 0;
};
std::map<std::string, Result>& results() {
  static std::map<std::string, Result> r;
  return r;
}

// direction 0 = gather (device -> host backup), 1 = scatter (host -> device load);
// pattern 0 = random single rows, 1 = random whole pages.
void BM_Transfer(benchmark::State& state) {
  const int64_t row = state.range(0);
  const bool scatter = state.range(1) == 1;
  const bool pages = state.range(2) == 1;
  Fixture& f = fixture(row);
  const int64_t tokens = static_cast<int64_t>(kTransferBytes) / (kLayers * row);
  const int64_t deviceTokens = f.device->spec().tokens();
  std::mt19937_64 rng(static_cast<uint64_t>(row));
  std::vector<int64_t> deviceSlots, hostSlots(static_cast<size_t>(tokens));
  std::iota(hostSlots.begin(), hostSlots.end(), 0);
  if (pages) {
    std::vector<int64_t> all(static_cast<size_t>(deviceTokens / kPageTokens));
    std::iota(all.begin(), all.end(), 0);
    std::shuffle(all.begin(), all.end(), rng);
    all.resize(static_cast<size_t>(tokens / kPageTokens));
    deviceSlots = kvio::pageSlots(all, kPageTokens);
  } else {
    std::vector<int64_t> all(static_cast<size_t>(deviceTokens));
    std::iota(all.begin(), all.end(), 0);
    std::shuffle(all.begin(), all.end(), rng);
    all.resize(static_cast<size_t>(tokens));
    deviceSlots = all;
  }
  const kvio::Pool& src = scatter ? *f.host : *f.device;
  const kvio::Pool& dst = scatter ? *f.device : *f.host;
  const std::vector<int64_t>& srcSlots = scatter ? hostSlots : deviceSlots;
  const std::vector<int64_t>& dstSlots = scatter ? deviceSlots : hostSlots;
  const kvio::LayerMap layers{0, 0, kLayers};
  const kvio_transfer_desc desc{
      src.handle(), dst.handle(), srcSlots.data(), dstSlots.data(), tokens, 0, 0, kLayers};
  int64_t copies = 0;
  kvio::check(kvio_plan(&desc, nullptr, 0, &copies));

  char* memcpyDst = reinterpret_cast<char*>(f.memcpyDst->data());
  const char* memcpySrc = reinterpret_cast<const char*>(f.memcpySrc->data());
  kvio::transfer(*f.executor, src, dst, srcSlots, dstSlots, layers).wait();  // warm up
  f.team->copy(memcpyDst, memcpySrc, kTransferBytes);
  // Each iteration times one transfer, then (outside the benchmark's timing) the two memcpy
  // baselines, so that all three see the same moment of a noisy machine.
  using Clock = std::chrono::steady_clock;
  auto since = [](Clock::time_point t0) {
    return std::chrono::duration<double>(Clock::now() - t0).count();
  };
  double kvioSeconds = 0, memcpySeconds = 0, memcpy64kSeconds = 0;
  for (auto _ : state) {
    const auto t0 = Clock::now();
    kvio::transfer(*f.executor, src, dst, srcSlots, dstSlots, layers).wait();
    kvioSeconds += since(t0);
    state.PauseTiming();
    const auto t1 = Clock::now();
    f.team->copy(memcpyDst, memcpySrc, kTransferBytes);
    memcpySeconds += since(t1);
    const auto t2 = Clock::now();
    f.team->copy(memcpyDst, memcpySrc, kTransferBytes, 64 * 1024);
    memcpy64kSeconds += since(t2);
    state.ResumeTiming();
  }
  const double bytes =
      static_cast<double>(kTransferBytes) * static_cast<double>(state.iterations());
  state.SetBytesProcessed(static_cast<int64_t>(bytes));
  const double rate = bytes / kvioSeconds;
  const double memcpyRate = bytes / memcpySeconds;
  const double memcpy64kRate = bytes / memcpy64kSeconds;
  state.counters["memcpy_GBps"] = memcpyRate / 1e9;
  state.counters["x_memcpy"] = rate / memcpyRate;
  state.counters["x_memcpy64k"] = rate / memcpy64kRate;
  state.counters["copies"] = static_cast<double>(copies);
  state.counters["threads"] = f.threads;
  results()[std::string(scatter ? "scatter" : "gather") + (pages ? " pages " : " rows  ") +
            std::to_string(row)] = Result{rate, memcpyRate, memcpy64kRate, copies};
}

void Args(benchmark::internal::Benchmark* b) {
  for (int64_t row : {256, 1024, 4096, 16384, 65536, 262144})
    for (int64_t scatter : {0, 1})
      for (int64_t pages : {0, 1}) b->Args({row, scatter, pages});
  b->ArgNames({"row", "scatter", "pages"});
  b->UseRealTime();
  b->MinTime(0.3);
  b->Unit(benchmark::kMillisecond);
}
BENCHMARK(BM_Transfer)->Apply(Args);

void printSummary() {
  if (results().empty()) return;
  std::printf(
      "\nkvio CPU backend vs parallel memcpy (%d threads, %llu MiB per transfer, %lld layers, page "
      "= %lld tokens)\n",
      benchThreads(), static_cast<unsigned long long>(kTransferBytes >> 20),
      static_cast<long long>(kLayers), static_cast<long long>(kPageTokens));
  std::printf("%-9s %-6s %9s %7s %10s %12s %9s %15s %12s\n", "direction", "index", "row_bytes",
              "copies", "kvio_GB/s", "memcpy_GB/s", "x_memcpy", "memcpy64k_GB/s", "x_memcpy64k");
  for (const char* direction : {"gather", "scatter"})
    for (const char* pattern : {"rows  ", "pages "})
      for (int64_t row : {256, 1024, 4096, 16384, 65536, 262144}) {
        const auto it =
            results().find(std::string(direction) + " " + pattern + std::to_string(row));
        if (it == results().end()) continue;
        const Result& r = it->second;
        std::printf("%-9s %-6s %9lld %7lld %10.2f %12.2f %9.2f %15.2f %12.2f\n", direction, pattern,
                    static_cast<long long>(row), static_cast<long long>(r.copiesPerTransfer),
                    r.kvio / 1e9, r.memcpy / 1e9, r.kvio / r.memcpy, r.memcpy64k / 1e9,
                    r.kvio / r.memcpy64k);
      }
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  printSummary();
  benchmark::Shutdown();
  return 0;
}
