// kvio_cuda_bench: bandwidth of the CUDA io backends on one GPU, for scripts/gpu-check.sh.
//  1. Row sweep: device->host and host->device GB/s for row sizes 256 B to 256 KiB x index
//     counts 64 to 64K (scattered, distinct slots: nothing coalesces), for 'kernel' at CTA
//     budgets 1 to 16, 'direct', 'staged' (its default 64 MiB staging buffer unless
//     KVIO_STAGED_BYTES is set), and one contiguous cudaMemcpyAsync of the same bytes (the
//     link's ceiling), and a plain warp-per-row kernel (reference_copy.cu, 2 CTAs x 1024
//     threads: the baseline kvio's kernel must beat), all measured in the same run; and 'auto'
//     (its defaults: kernel at 4 CTAs x 16 warps as 'kernel' at 4 CTAs, staged as 'staged'),
//     with the backend it chose and
//     its ratio to the best of kernel(4), direct and staged (issue 11: auto >= 0.9x of it);
//     and, for rows up to 4 KiB at the largest count, the kernel at other launch shapes
//     (8 x 8, 2 x 32, 4 x 8, 1 x 32 CTAs x warps: test 'shapes', backend kernel/<warps>w); for
//     rows from 16 KiB, one cudaMemcpyAsync per row on 1, 2 and 4 streams (test 'streams').
//  2. Per-layer load: all layers loaded one transfer per layer, page_first host pool vs
//     layer_first host pool, into a layer_first device pool with per-layer buffers.
//  3. Submit cost and submit-to-completion of a one-page, one-layer load for kernel, direct and
//     auto, next to the floor (one cudaMemcpyAsync of the same bytes; with
//     cudaStreamSynchronize), and the host cost of each call a submit makes, alone (call_cost
//     rows: kvio's checks, the CUDA calls, launches with a small and a 4 KiB parameter).
// 'direct', 'staged' and 'auto' results carry their copy-engine calls per transfer
// (kvio_debug_copy_engine_calls).
// Writes every measurement as TSV to --out (default cuda_bench.tsv) as it is measured, and prints
// a short summary table last. --quick runs a reduced sweep (for a smoke run: three row sizes,
// three counts, kernel at 1, 4 and 16 CTAs). --beside-compute runs
// only the beside-compute mode instead (beside_compute.cpp; --out default cuda_beside_compute.tsv).
#include <cuda_runtime.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <numeric>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "bench_check.hpp"
#include "beside_compute.hpp"
#include "call_costs.hpp"
#include "kvio/kvio.h"
#include "reference_copy.hpp"

namespace {

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

struct Pool {
  uint64_t handle = 0;
  uint64_t address = 0;
  uint64_t bytes = 0;
  Pool(const kvio_pool_spec& spec, int32_t kind) {
    BENCH_KVIO(kvio_pool_allocate_memory(&spec, kind, 0, &handle));
    BENCH_KVIO(kvio_pool_region(handle, 0, &address, &bytes, nullptr));
  }
  ~Pool() { kvio_pool_close(handle); }
};

// Copy-engine calls kvio has issued so far (kvio_debug_copy_engine_calls, all four kinds).
int64_t engineCalls() {
  int64_t counts[4] = {};
  BENCH_KVIO(kvio_debug_copy_engine_calls(counts));
  return counts[0] + counts[1] + counts[2] + counts[3];
}

// Submits whose host time is reported: the kernel and staged executors keep up to 8 staging
// slots, and a submit that finds them all in use waits for the oldest job on the device, so
// later submits would time the device too.
constexpr size_t kTimedSubmits = 6;

// Runs one warm-up transfer, then `reps` transfers back to back (submitted, then all waited),
// each submitted by submit(&handle); returns seconds per rep. *chosen (optional): the backend
// that ran the warm-up transfer (what 'auto' chose; its choice is a function of the plan, so the
// timed transfers ran the same one); *submitSeconds (optional): the host's time in submit per
// transfer (kvio's checks, staging and issue), the mean of the first kTimedSubmits. When that is
// near the whole time per rep, the host bounds the figure, not the device.
template <class Submit>
double timeSubmitted(int reps, Submit submit, std::string* chosen, double* submitSeconds) {
  std::vector<uint64_t> transfers(static_cast<size_t>(reps));
  uint64_t warm = 0;
  BENCH_KVIO(submit(&warm));
  BENCH_KVIO(kvio_transfer_wait(warm, -1));
  if (chosen != nullptr) {
    kvio_transfer_info info{};
    BENCH_KVIO(kvio_transfer_get_info(warm, &info));
    const char* name = kvio_name(KVIO_NAME_BACKEND, info.chosen_backend);
    *chosen = name != nullptr ? name : "?";
  }
  kvio_transfer_close(warm);
  const double start = now();
  double submitted = start;  // when the first kTimedSubmits submits had returned
  for (size_t i = 0; i < transfers.size(); ++i) {
    BENCH_KVIO(submit(&transfers[i]));
    if (i + 1 == std::min<size_t>(transfers.size(), kTimedSubmits)) submitted = now();
  }
  if (submitSeconds != nullptr) {
    *submitSeconds = (submitted - start) / std::min<double>(reps, kTimedSubmits);
  }
  for (uint64_t t : transfers) {
    BENCH_KVIO(kvio_transfer_wait(t, -1));
    kvio_transfer_close(t);
  }
  return (now() - start) / reps;
}

// timeSubmitted over kvio_submit_args (host index arrays); *calls (optional): copy-engine calls
// per transfer (0 for the kernel backend).
double timeTransfers(uint64_t executor, uint64_t src, uint64_t dst, const std::vector<int64_t>& s,
                     const std::vector<int64_t>& d, int64_t srcLayer, int64_t dstLayer,
                     int64_t layers, int reps, double* calls = nullptr,
                     std::string* chosen = nullptr, double* submitSeconds = nullptr) {
  const int64_t callsBefore = engineCalls();
  const double seconds = timeSubmitted(
      reps,
      [&](uint64_t* out) {
        return kvio_submit_args(executor, src, dst, s.data(), d.data(),
                                static_cast<int64_t>(s.size()), srcLayer, dstLayer, layers, out);
      },
      chosen, submitSeconds);
  if (calls != nullptr) *calls = static_cast<double>(engineCalls() - callsBefore) / (reps + 1);
  return seconds;
}

// timeSubmitted with the index arrays uploaded to the device once before timing and passed as
// device-resident indices (kvio_submit_device_indices): the kernel checks them itself, so the
// host neither checks nor stages them, and the GB/s are the kernel's as the reference kernel's
// are (its indices are on the device too).
double timeTransfersDeviceIndices(uint64_t executor, uint64_t src, uint64_t dst,
                                  const std::vector<int64_t>& s, const std::vector<int64_t>& d,
                                  int reps, double* submitSeconds) {
  const size_t bytes = s.size() * sizeof(int64_t);
  int64_t* indices = nullptr;
  BENCH_CUDA(cudaMalloc(&indices, 2 * bytes));
  BENCH_CUDA(cudaMemcpy(indices, s.data(), bytes, cudaMemcpyHostToDevice));
  BENCH_CUDA(cudaMemcpy(indices + s.size(), d.data(), bytes, cudaMemcpyHostToDevice));
  const kvio_transfer_desc desc{
      src, dst, indices, indices + s.size(), static_cast<int64_t>(s.size()), 0, 0, 1};
  const double seconds = timeSubmitted(
      reps, [&](uint64_t* out) { return kvio_submit_device_indices(executor, &desc, out); },
      nullptr, submitSeconds);
  BENCH_CUDA(cudaFree(indices));
  return seconds;
}

// Seconds per round of one cudaMemcpyAsync per row (row s[i] of the source region at `src` to
// row d[i] at `dst`, `rowBytes` each), the rows dealt round-robin to `streams` non-blocking
// streams, all waited for: what spreading a transfer's copies over more streams (and so, where
// the device has several, over more copy engines) would give 'direct'. The mean of `reps` rounds
// after an untimed one (as timeTransfers times 'direct').
double timeRowsOnStreams(uint64_t dst, uint64_t src, const std::vector<int64_t>& d,
                         const std::vector<int64_t>& s, int64_t rowBytes, int streams, int reps) {
  std::vector<cudaStream_t> on(static_cast<size_t>(streams));
  for (cudaStream_t& stream : on) {
    BENCH_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  }
  double total = 0;
  for (int r = 0; r <= reps; ++r) {
    const double start = now();
    for (size_t i = 0; i < s.size(); ++i) {
      BENCH_CUDA(cudaMemcpyAsync(reinterpret_cast<void*>(dst + d[i] * rowBytes),
                                 reinterpret_cast<const void*>(src + s[i] * rowBytes),
                                 static_cast<size_t>(rowBytes), cudaMemcpyDefault,
                                 on[i % on.size()]));
    }
    for (cudaStream_t stream : on) BENCH_CUDA(cudaStreamSynchronize(stream));
    if (r > 0) total += now() - start;
  }
  for (cudaStream_t stream : on) BENCH_CUDA(cudaStreamDestroy(stream));
  return total / reps;
}

double timeContiguous(uint64_t dst, uint64_t src, uint64_t bytes, int reps) {
  cudaStream_t stream;
  BENCH_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  BENCH_CUDA(cudaMemcpyAsync(reinterpret_cast<void*>(dst), reinterpret_cast<void*>(src), bytes,
                             cudaMemcpyDefault, stream));
  BENCH_CUDA(cudaStreamSynchronize(stream));
  const double start = now();
  for (int r = 0; r < reps; ++r) {
    BENCH_CUDA(cudaMemcpyAsync(reinterpret_cast<void*>(dst), reinterpret_cast<void*>(src), bytes,
                               cudaMemcpyDefault, stream));
  }
  BENCH_CUDA(cudaStreamSynchronize(stream));
  const double seconds = (now() - start) / reps;
  BENCH_CUDA(cudaStreamDestroy(stream));
  return seconds;
}

// The baseline kernel (reference_copy.cu, warp per row, 2 CTAs x 1024 threads) over the same
// rows as the transfers: seconds per rep. Index arrays are uploaded before timing.
double timeReference(uint64_t dst, uint64_t src, const std::vector<int64_t>& d,
                     const std::vector<int64_t>& s, int64_t rowBytes, int reps) {
  cudaStream_t stream;
  BENCH_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  const size_t bytes = s.size() * sizeof(int64_t);
  int64_t* indices = nullptr;
  BENCH_CUDA(cudaMalloc(&indices, 2 * bytes));
  BENCH_CUDA(cudaMemcpyAsync(indices, s.data(), bytes, cudaMemcpyHostToDevice, stream));
  BENCH_CUDA(cudaMemcpyAsync(indices + s.size(), d.data(), bytes, cudaMemcpyHostToDevice, stream));
  const auto count = static_cast<int64_t>(s.size());
  BENCH_CUDA(kvio_bench::launchReferenceCopy(dst, src, indices + s.size(), indices, count, rowBytes,
                                             stream));
  BENCH_CUDA(cudaStreamSynchronize(stream));
  const double start = now();
  for (int r = 0; r < reps; ++r) {
    BENCH_CUDA(kvio_bench::launchReferenceCopy(dst, src, indices + s.size(), indices, count,
                                               rowBytes, stream));
  }
  BENCH_CUDA(cudaStreamSynchronize(stream));
  const double seconds = (now() - start) / reps;
  BENCH_CUDA(cudaFree(indices));
  BENCH_CUDA(cudaStreamDestroy(stream));
  return seconds;
}

int repsFor(uint64_t bytes) {  // about 256 MiB per measurement, 3 to 20 reps
  const uint64_t reps = (256ull << 20) / std::max<uint64_t>(bytes, 1);
  return static_cast<int>(std::clamp<uint64_t>(reps, 3, 20));
}

struct Result {
  std::string test, backend, direction;
  int64_t rowBytes, count, ctas;
  double gbps;
  double calls = -1;         // copy-engine calls per transfer (direct); -1: not counted
  double us = -1;            // latency tests: microseconds per transfer; rows: the host's time in
                             // submit per transfer (kvio backends); -1 where not measured
  std::string chosen = "-";  // auto: the backend it chose
};

// The measurements so far, each also written to the TSV file (and flushed) as it is added, so a
// run cut short (a failed call exits, a timeout kills) leaves every figure measured before.
class Results {
 public:
  explicit Results(FILE* file) : file_(file) {
    std::fprintf(file_,
                 "test\tbackend\tdirection\trow_bytes\tindices\tctas\tGBps\tengine_calls\tus\t"
                 "chosen\n");
    std::fflush(file_);
  }
  Results(const Results&) = delete;
  Results& operator=(const Results&) = delete;
  ~Results() { std::fclose(file_); }

  void add(const Result& r) {
    rows_.push_back(r);
    std::fprintf(file_, "%s\t%s\t%s\t%lld\t%lld\t%lld\t%.2f\t%.1f\t%.1f\t%s\n", r.test.c_str(),
                 r.backend.c_str(), r.direction.c_str(), static_cast<long long>(r.rowBytes),
                 static_cast<long long>(r.count), static_cast<long long>(r.ctas), r.gbps, r.calls,
                 r.us, r.chosen.c_str());
    std::fflush(file_);
  }
  const Result& back() const { return rows_.back(); }
  const Result& operator[](size_t i) const { return rows_[i]; }
  size_t size() const { return rows_.size(); }
  std::vector<Result>::const_iterator begin() const { return rows_.begin(); }
  std::vector<Result>::const_iterator end() const { return rows_.end(); }

 private:
  FILE* file_;
  std::vector<Result> rows_;
};

// Submit cost and submit-to-completion of one small transfer (one 64-token page of one layer,
// 8 heads x 256 B, page_first pinned host pool -> layer_first device pool), for each executor,
// next to the floor measured in the same run: one cudaMemcpyAsync of the same bytes (its issue
// time, and issue + cudaStreamSynchronize). Microseconds, the mean of `reps` rounds; the submit
// cost in steps of kStepLayers queued transfers after an untimed first step (until 0.2.0 one
// queue of `reps` after three transfers, so most submits also created their event).
constexpr int kStepLayers = 32;
void measureSubmitCost(uint64_t kernel, uint64_t direct, uint64_t autoExecutor, int reps,
                       Results* results) {
  const int64_t ps = 64, H = 8, hb = 256, pages = 64;
  const kvio_pool_spec dspec{KVIO_KIND_MHA, KVIO_LAYOUT_LAYER_FIRST, 4, pages, ps, H, hb};
  const kvio_pool_spec hspec{KVIO_KIND_MHA, KVIO_LAYOUT_PAGE_FIRST, 4, pages, ps, H, hb};
  Pool device(dspec, KVIO_MEMORY_CUDA_DEVICE), host(hspec, KVIO_MEMORY_HOST_PINNED);
  std::vector<int64_t> hostIdx, devIdx;
  for (int64_t s = 0; s < ps; ++s) {
    hostIdx.push_back(3 * ps + s);
    devIdx.push_back(17 * ps + s);
  }
  const int64_t bytes = 2 * ps * H * hb;
  const auto n = static_cast<int64_t>(hostIdx.size());
  BENCH_KVIO(kvio_executor_set_launch(kernel, 4, 16));
  const std::pair<uint64_t, const char*> executors[] = {
      {kernel, "kernel"}, {direct, "direct"}, {autoExecutor, "auto"}};
  for (const auto& [executor, name] : executors) {
    const bool isKernel = executor == kernel;
    double calls = 0;
    std::string chosen = "-";
    timeTransfers(executor, host.handle, device.handle, hostIdx, devIdx, 1, 1, 1, 2, &calls,
                  executor == autoExecutor ? &chosen : nullptr);
    // Submit cost: the call alone, in steps of kStepLayers transfers queued behind each other (a
    // model's layers), each step waited for before the next; the first step untimed, so the
    // executor's spare events (kept from step to step) are there, as in a serving loop.
    const int steps = std::max(1, reps / kStepLayers);
    std::vector<uint64_t> transfers(kStepLayers);
    double submit = 0;
    for (int step = 0; step <= steps; ++step) {
      for (auto& t : transfers) {
        const double start = now();
        BENCH_KVIO(kvio_submit_args(executor, host.handle, device.handle, hostIdx.data(),
                                    devIdx.data(), n, 1, 1, 1, &t));
        if (step > 0) submit += now() - start;
      }
      for (uint64_t t : transfers) {
        BENCH_KVIO(kvio_transfer_wait(t, -1));
        kvio_transfer_close(t);
      }
    }
    submit = submit * reps / (static_cast<double>(steps) * kStepLayers);  // per `reps` calls
    double complete = 0;
    for (int r = 0; r < reps; ++r) {  // submit to completion, one at a time
      uint64_t t = 0;
      const double start = now();
      BENCH_KVIO(kvio_submit_args(executor, host.handle, device.handle, hostIdx.data(),
                                  devIdx.data(), n, 1, 1, 1, &t));
      BENCH_KVIO(kvio_transfer_wait(t, -1));
      complete += now() - start;
      kvio_transfer_close(t);
    }
    results->add({"submit", name, "h2d", 2 * H * hb, n, executor == direct ? 0 : 4, 0,
                  isKernel ? -1 : calls, submit / reps * 1e6, chosen});
    results->add({"submit_to_completion", name, "h2d", 2 * H * hb, n, executor == direct ? 0 : 4, 0,
                  isKernel ? -1 : calls, complete / reps * 1e6, chosen});
  }
  cudaStream_t stream;
  BENCH_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  void* dst = reinterpret_cast<void*>(device.address);
  const void* src = reinterpret_cast<const void*>(host.address);
  BENCH_CUDA(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream));
  BENCH_CUDA(cudaStreamSynchronize(stream));
  double submit = 0, complete = 0;
  for (int r = 0; r < reps; ++r) {
    double start = now();
    BENCH_CUDA(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream));
    submit += now() - start;
    BENCH_CUDA(cudaStreamSynchronize(stream));
    start = now();
    BENCH_CUDA(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream));
    BENCH_CUDA(cudaStreamSynchronize(stream));
    complete += now() - start;
  }
  BENCH_CUDA(cudaStreamDestroy(stream));
  results->add({"submit", "floor", "h2d", 2 * H * hb, n, 0, 0, 1, submit / reps * 1e6});
  results->add(
      {"submit_to_completion", "floor", "h2d", 2 * H * hb, n, 0, 0, 1, complete / reps * 1e6});
}

// Mean host microseconds of `calls` calls of `call` (after one untimed).
template <class Call>
double perCall(int calls, Call call) {
  call();
  const double start = now();
  for (int i = 0; i < calls; ++i) call();
  return (now() - start) / calls * 1e6;
}

// What the calls a submit makes cost on this machine's host, each alone (mean of `calls`), for
// reading the submit cost above: kvio's checks of the transfer (kvio_check_transfer_args: the
// handles, the pools and every index), and the CUDA calls of a kernel or direct submit (a
// DeviceScope's capture-mode exchange pair, the capture check, the event record and query, the
// error reset, the launch with a small and with a 4 KiB parameter, a 1 KiB index upload, and
// the event creation a submit pays when no spare event is left).
void measureCallCosts(uint64_t kernel, int calls, Results* results) {
  const int64_t ps = 64, H = 8, hb = 256, pages = 64;
  const kvio_pool_spec dspec{KVIO_KIND_MHA, KVIO_LAYOUT_LAYER_FIRST, 4, pages, ps, H, hb};
  const kvio_pool_spec hspec{KVIO_KIND_MHA, KVIO_LAYOUT_PAGE_FIRST, 4, pages, ps, H, hb};
  Pool device(dspec, KVIO_MEMORY_CUDA_DEVICE), host(hspec, KVIO_MEMORY_HOST_PINNED);
  std::vector<int64_t> hostIdx, devIdx;
  for (int64_t s = 0; s < ps; ++s) {
    hostIdx.push_back(3 * ps + s);
    devIdx.push_back(17 * ps + s);
  }
  cudaStream_t stream;
  BENCH_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cudaEvent_t event;
  BENCH_CUDA(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
  void* pinned = nullptr;
  void* onDevice = nullptr;
  BENCH_CUDA(cudaMallocHost(&pinned, 1024));
  BENCH_CUDA(cudaMalloc(&onDevice, 1024));
  std::vector<std::pair<const char*, double>> costs;
  costs.emplace_back(
      "kvio_check_transfer_args", perCall(calls, [&] {
        BENCH_KVIO(kvio_check_transfer_args(kernel, host.handle, device.handle, hostIdx.data(),
                                            devIdx.data(), ps, 1, 1, 1, 0));
      }));
  costs.emplace_back("cudaThreadExchangeStreamCaptureMode x2", perCall(calls, [&] {
                       cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
                       BENCH_CUDA(cudaThreadExchangeStreamCaptureMode(&mode));
                       BENCH_CUDA(cudaThreadExchangeStreamCaptureMode(&mode));
                     }));
  costs.emplace_back("cudaStreamIsCapturing", perCall(calls, [&] {
                       cudaStreamCaptureStatus status;
                       BENCH_CUDA(cudaStreamIsCapturing(stream, &status));
                     }));
  costs.emplace_back("cudaGetLastError", perCall(calls, [&] { (void)cudaGetLastError(); }));
  costs.emplace_back("cudaEventRecord",
                     perCall(calls, [&] { BENCH_CUDA(cudaEventRecord(event, stream)); }));
  BENCH_CUDA(cudaStreamSynchronize(stream));
  costs.emplace_back("cudaEventQuery (complete)",
                     perCall(calls, [&] { BENCH_CUDA(cudaEventQuery(event)); }));
  costs.emplace_back("launch, 16 B parameter", perCall(calls, [&] {
                       BENCH_CUDA(kvio_bench::launchEmptyKernel(false, stream));
                     }));
  BENCH_CUDA(cudaStreamSynchronize(stream));
  costs.emplace_back("launch, 4 KiB parameter", perCall(calls, [&] {
                       BENCH_CUDA(kvio_bench::launchEmptyKernel(true, stream));
                     }));
  BENCH_CUDA(cudaStreamSynchronize(stream));
  costs.emplace_back(
      "cudaMemcpyAsync 1 KiB pinned to device", perCall(calls, [&] {
        BENCH_CUDA(cudaMemcpyAsync(onDevice, pinned, 1024, cudaMemcpyHostToDevice, stream));
      }));
  BENCH_CUDA(cudaStreamSynchronize(stream));
  costs.emplace_back("cudaEventCreateWithFlags + cudaEventDestroy", perCall(calls, [&] {
                       cudaEvent_t e;
                       BENCH_CUDA(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
                       BENCH_CUDA(cudaEventDestroy(e));
                     }));
  for (const auto& [name, us] : costs) {
    results->add({"call_cost", name, "-", 0, calls, 0, 0, -1, us});
  }
  BENCH_CUDA(cudaFree(onDevice));
  BENCH_CUDA(cudaFreeHost(pinned));
  BENCH_CUDA(cudaEventDestroy(event));
  BENCH_CUDA(cudaStreamDestroy(stream));
}

}  // namespace

int main(int argc, char** argv) {
  // Line by line, so a run killed at a timeout still shows every line printed before.
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  bool quick = false, besideCompute = false;
  std::string out;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--quick") == 0) quick = true;
    if (std::strcmp(argv[i], "--beside-compute") == 0) besideCompute = true;
    if (std::strcmp(argv[i], "--out") == 0 && i + 1 < argc) out = argv[++i];
  }
  if (besideCompute) {
    return kvio_bench::runBesideCompute(quick, out.empty() ? "cuda_beside_compute.tsv" : out);
  }
  if (out.empty()) out = "cuda_bench.tsv";
  int32_t devices = 0;
  if (kvio_cuda_device_count(&devices) != KVIO_STATUS_OK || devices == 0) {
    std::printf("kvio_cuda_bench: skipped: %s\n", kvio_last_error());
    return 0;
  }
  cudaDeviceProp prop{};
  BENCH_CUDA(cudaGetDeviceProperties(&prop, 0));
  std::printf("kvio_cuda_bench on %s (%d SMs)\n", prop.name, prop.multiProcessorCount);

  const std::vector<int64_t> rowSizes =
      quick ? std::vector<int64_t>{256, 4096, 65536}
            : std::vector<int64_t>{256, 1024, 4096, 16384, 65536, 262144};
  const std::vector<int64_t> counts = quick ? std::vector<int64_t>{64, 4096, 65536}
                                            : std::vector<int64_t>{64, 1024, 4096, 16384, 65536};
  const std::vector<int32_t> budgets =
      quick ? std::vector<int32_t>{1, 4, 16} : std::vector<int32_t>{1, 2, 4, 8, 16};
  const uint64_t maxCaseBytes = 2ull << 30;

  uint64_t kernel = 0, direct = 0, staged = 0, autoExecutor = 0;
  // direct and auto on one stream (KVIO_DIRECT_STREAMS, read at creation, unset here and put
  // back after the direct/<n>s executors below).
  const char* userStreams = std::getenv("KVIO_DIRECT_STREAMS");
  const std::string savedStreams = userStreams != nullptr ? userStreams : "";
  unsetenv("KVIO_DIRECT_STREAMS");
  BENCH_KVIO(
      kvio_executor_create_cuda(KVIO_BACKEND_KERNEL, 0, KVIO_CUDA_OWN_STREAM, 4, 16, &kernel));
  BENCH_KVIO(
      kvio_executor_create_cuda(KVIO_BACKEND_DIRECT, 0, KVIO_CUDA_OWN_STREAM, 0, 0, &direct));
  BENCH_KVIO(
      kvio_executor_create_cuda(KVIO_BACKEND_STAGED, 0, KVIO_CUDA_OWN_STREAM, 0, 0, &staged));
  // direct dealing large transfers to 2 and 4 streams (KVIO_DIRECT_STREAMS, read at creation).
  uint64_t directOn[2] = {0, 0};
  for (int k = 0; k < 2; ++k) {
    setenv("KVIO_DIRECT_STREAMS", k == 0 ? "2" : "4", 1);
    BENCH_KVIO(kvio_executor_create_cuda(KVIO_BACKEND_DIRECT, 0, KVIO_CUDA_OWN_STREAM, 0, 0,
                                         &directOn[k]));
  }
  unsetenv("KVIO_DIRECT_STREAMS");
  // auto with its defaults, as kvio_executor_create gives it: its kernel at 4 CTAs x 16 warps
  // (kernel(4) here), its staged path at staged's defaults (the staged column).
  BENCH_KVIO(
      kvio_executor_create_cuda(KVIO_BACKEND_AUTO, 0, KVIO_CUDA_OWN_STREAM, 0, 0, &autoExecutor));
  if (userStreams != nullptr) {
    setenv("KVIO_DIRECT_STREAMS", savedStreams.c_str(), 1);
  } else {
    unsetenv("KVIO_DIRECT_STREAMS");
  }
  FILE* file = std::fopen(out.c_str(), "w");
  if (file == nullptr) {
    std::fprintf(stderr, "kvio_cuda_bench: cannot write %s: %s\n", out.c_str(),
                 std::strerror(errno));
    return 1;
  }
  Results results(file);
  std::mt19937_64 rng(1);

  for (int64_t row : rowSizes) {
    int64_t maxCount = 0;  // the largest count measured at this row size
    for (int64_t n : counts) {
      if (static_cast<uint64_t>(n * row) <= maxCaseBytes) maxCount = std::max(maxCount, n);
    }
    int64_t slots = std::min<int64_t>(2 * maxCount, static_cast<int64_t>(2 * maxCaseBytes / row));
    const kvio_pool_spec spec{KVIO_KIND_MLA, KVIO_LAYOUT_LAYER_FIRST, 1, slots, 1, 1, row};
    Pool device(spec, KVIO_MEMORY_CUDA_DEVICE), host(spec, KVIO_MEMORY_HOST_PINNED);
    for (int64_t n : counts) {
      if (static_cast<uint64_t>(n * row) > maxCaseBytes || n > slots) continue;
      std::vector<int64_t> all(static_cast<size_t>(slots));
      std::iota(all.begin(), all.end(), 0);
      std::shuffle(all.begin(), all.end(), rng);
      const std::vector<int64_t> devIdx(all.begin(), all.begin() + n);
      std::shuffle(all.begin(), all.end(), rng);
      const std::vector<int64_t> hostIdx(all.begin(), all.begin() + n);
      const uint64_t bytes = static_cast<uint64_t>(n * row);
      const int reps = repsFor(bytes);
      for (int dir = 0; dir < 2; ++dir) {
        const bool d2h = dir == 0;
        const char* direction = d2h ? "d2h" : "h2d";
        const uint64_t src = d2h ? device.handle : host.handle;
        const uint64_t dst = d2h ? host.handle : device.handle;
        const auto& s = d2h ? devIdx : hostIdx;
        const auto& d = d2h ? hostIdx : devIdx;
        double k4 = 0;
        for (int32_t ctas : budgets) {
          BENCH_KVIO(kvio_executor_set_launch(kernel, ctas, 16));
          double submit = 0;
          const double t =
              timeTransfers(kernel, src, dst, s, d, 0, 0, 1, reps, nullptr, nullptr, &submit);
          results.add(
              {"rows", "kernel", direction, row, n, ctas, bytes / t / 1e9, -1, submit * 1e6});
          if (ctas == 4) k4 = results.back().gbps;
        }
        if (n == maxCount) {
          // The kernel at 4 CTAs with the indices on the device (backend kernel/devidx): its
          // speed without the host's checks and staging, as the reference's.
          double submit = 0;
          BENCH_KVIO(kvio_executor_set_launch(kernel, 4, 16));
          const double t = timeTransfersDeviceIndices(kernel, src, dst, s, d, reps, &submit);
          results.add(
              {"rows", "kernel/devidx", direction, row, n, 4, bytes / t / 1e9, -1, submit * 1e6});
        }
        if (n == maxCount && row <= 4096) {
          // Launch shapes at the same thread count as 4 CTAs x 16 warps and the reference's
          // (64 warps), and at half: which of CTAs, warps per CTA and words in flight per lane
          // (8 at <= 16 warps, 4 at 32: tileChunksFor) the small rows are bound by.
          const std::pair<int32_t, int32_t> shapes[] = {{8, 8}, {2, 32}, {4, 8}, {1, 32}};
          for (const auto& [ctas, warps] : shapes) {
            BENCH_KVIO(kvio_executor_set_launch(kernel, ctas, warps));
            const double t = timeTransfers(kernel, src, dst, s, d, 0, 0, 1, reps);
            results.add({"shapes", "kernel/" + std::to_string(warps) + "w", direction, row, n, ctas,
                         bytes / t / 1e9});
          }
          BENCH_KVIO(kvio_executor_set_launch(kernel, 4, 16));
          // The same rows with the host side in address order (the device side still
          // scattered), for kvio's kernel at 4 x 16 and for the reference (test 'locality'): if
          // small rows gain here, the scatter of host addresses (pages, the host's address
          // translation for the device) bounds them, not the kernel's work per row.
          std::vector<int64_t> hostSorted = d2h ? d : s;
          std::sort(hostSorted.begin(), hostSorted.end());
          const std::vector<int64_t>& ls = d2h ? s : hostSorted;
          const std::vector<int64_t>& ld = d2h ? hostSorted : d;
          const double tk = timeTransfers(kernel, src, dst, ls, ld, 0, 0, 1, reps);
          results.add({"locality", "kernel/host-sorted", direction, row, n, 4, bytes / tk / 1e9});
          const double tr = timeReference(d2h ? host.address : device.address,
                                          d2h ? device.address : host.address, ld, ls, row, reps);
          results.add({"locality", "reference/host-sorted", direction, row, n,
                       kvio_bench::kReferenceBlocks, bytes / tr / 1e9});
        }
        if (n == maxCount && row >= 16384) {
          // One cudaMemcpyAsync per row on 1, 2 and 4 streams (test 'streams', backend
          // memcpy/<streams>s, ctas: the stream count): does a second copy engine help 'direct'
          // with scattered whole pages (issue 11: >= 0.9x the link at >= 64 KiB a copy)?
          const uint64_t srcBase = d2h ? device.address : host.address;
          const uint64_t dstBase = d2h ? host.address : device.address;
          for (int streams : {1, 2, 4}) {
            const double t =
                timeRowsOnStreams(dstBase, srcBase, d, s, row, streams, std::min(reps, 5));
            results.add({"streams", "memcpy/" + std::to_string(streams) + "s", direction, row, n,
                         streams, bytes / t / 1e9});
          }
          // kvio's direct with its copies dealt to 2 and 4 streams (KVIO_DIRECT_STREAMS).
          for (int k = 0; k < 2; ++k) {
            double streamCalls = 0;
            const double t =
                timeTransfers(directOn[k], src, dst, s, d, 0, 0, 1, reps, &streamCalls);
            results.add({"streams", "direct/" + std::to_string(2 << k) + "s", direction, row, n,
                         2 << k, bytes / t / 1e9, streamCalls});
          }
        }
        double calls = 0, submit = 0;
        const double td =
            timeTransfers(direct, src, dst, s, d, 0, 0, 1, reps, &calls, nullptr, &submit);
        results.add(
            {"rows", "direct", direction, row, n, 0, bytes / td / 1e9, calls, submit * 1e6});
        const double gd = results.back().gbps;
        double stagedCalls = 0;
        const double ts =
            timeTransfers(staged, src, dst, s, d, 0, 0, 1, reps, &stagedCalls, nullptr, &submit);
        results.add(
            {"rows", "staged", direction, row, n, 0, bytes / ts / 1e9, stagedCalls, submit * 1e6});
        double autoCalls = 0;
        std::string chosen;
        const double ta = timeTransfers(autoExecutor, src, dst, s, d, 0, 0, 1, reps, &autoCalls,
                                        &chosen, &submit);
        results.add({"rows", "auto", direction, row, n, 4, bytes / ta / 1e9, autoCalls,
                     submit * 1e6, chosen});
        const uint64_t dstAddress = d2h ? host.address : device.address;
        const uint64_t srcAddress = d2h ? device.address : host.address;
        const double tr = timeReference(dstAddress, srcAddress, d, s, row, reps);
        results.add({"rows", "reference", direction, row, n, kvio_bench::kReferenceBlocks,
                     bytes / tr / 1e9});
        const double tc = timeContiguous(dstAddress, srcAddress, bytes, reps);
        results.add({"rows", "contiguous", direction, row, n, 0, bytes / tc / 1e9});
        std::fprintf(stderr,
                     "rows %7lld B x %6lld %s: kernel(4) %.1f reference %.1f direct %.1f staged "
                     "%.1f auto %.1f (%s) ceiling %.1f GB/s\n",
                     static_cast<long long>(row), static_cast<long long>(n), direction, k4,
                     results[results.size() - 2].gbps, gd, bytes / ts / 1e9, bytes / ta / 1e9,
                     chosen.c_str(), results.back().gbps);
      }
    }
  }

  // Per-layer load: 32 layers, 8 KV heads x 256 B (bf16, head_dim 128), pages of 64 tokens;
  // 128 pages (8192 tokens) loaded into a device pool of 256 pages, one transfer per layer.
  {
    const int64_t L = quick ? 8 : 32, ps = 64, H = 8, hb = 256, pages = 256, loadPages = 128;
    const kvio_pool_spec dspec{KVIO_KIND_MHA, KVIO_LAYOUT_LAYER_FIRST, L, pages, ps, H, hb};
    Pool device(dspec, KVIO_MEMORY_CUDA_DEVICE);
    std::vector<int64_t> pageIds(static_cast<size_t>(pages));
    std::iota(pageIds.begin(), pageIds.end(), 0);
    std::shuffle(pageIds.begin(), pageIds.end(), rng);
    std::vector<int64_t> hostIdx, devIdx;
    for (int64_t k = 0; k < loadPages; ++k) {
      for (int64_t s = 0; s < ps; ++s) {
        hostIdx.push_back(k * ps + s);
        devIdx.push_back(pageIds[static_cast<size_t>(k)] * ps + s);
      }
    }
    const uint64_t bytesPerLayer = static_cast<uint64_t>(loadPages * ps * 2 * H * hb);
    for (int32_t layout : {KVIO_LAYOUT_PAGE_FIRST, KVIO_LAYOUT_LAYER_FIRST}) {
      const kvio_pool_spec hspec{KVIO_KIND_MHA, layout, L, pages, ps, H, hb};
      Pool host(hspec, KVIO_MEMORY_HOST_PINNED);
      const char* name = layout == KVIO_LAYOUT_PAGE_FIRST ? "page_first" : "layer_first";
      // kernel at 4 and 16 CTAs, direct, direct with its copies dealt to 4 streams.
      for (int b = 0; b < 4; ++b) {
        const uint64_t executor = b == 3 ? directOn[1] : b == 2 ? direct : kernel;
        const int32_t ctas = b == 0 ? 4 : b == 1 ? 16 : 0;
        if (b < 2) BENCH_KVIO(kvio_executor_set_launch(kernel, ctas, 16));
        // Warm-up, then all layers one transfer each, timed together (reps rounds).
        const int reps = quick ? 2 : 5;
        double calls = 0;
        timeTransfers(executor, host.handle, device.handle, hostIdx, devIdx, 0, 0, 1, 1, &calls);
        const double start = now();
        std::vector<uint64_t> transfers;
        for (int r = 0; r < reps; ++r) {
          for (int64_t l = 0; l < L; ++l) {
            uint64_t t = 0;
            BENCH_KVIO(kvio_submit_args(executor, host.handle, device.handle, hostIdx.data(),
                                        devIdx.data(), static_cast<int64_t>(hostIdx.size()), l, l,
                                        1, &t));
            transfers.push_back(t);
          }
        }
        for (uint64_t t : transfers) {
          BENCH_KVIO(kvio_transfer_wait(t, -1));
          kvio_transfer_close(t);
        }
        const double seconds = now() - start;
        results.add({std::string("per_layer_") + name,
                     b == 3   ? "direct/4s"
                     : b == 2 ? "direct"
                              : "kernel",
                     "h2d", 2 * H * hb, static_cast<int64_t>(hostIdx.size()), ctas,
                     bytesPerLayer * L * reps / seconds / 1e9, b >= 2 ? calls : -1});
      }
    }
  }
  measureSubmitCost(kernel, direct, autoExecutor, quick ? 64 : 256, &results);
  measureCallCosts(kernel, quick ? 500 : 2000, &results);
  BENCH_KVIO(kvio_executor_close(kernel));
  BENCH_KVIO(kvio_executor_close(direct));
  BENCH_KVIO(kvio_executor_close(staged));
  BENCH_KVIO(kvio_executor_close(autoExecutor));
  for (uint64_t executor : directOn) BENCH_KVIO(kvio_executor_close(executor));

  // Summary: at the largest index count measured for each row size, GB/s per direction.
  auto findResult = [&](const std::string& test, const std::string& backend, const std::string& dir,
                        int64_t row, int64_t ctas) {
    const Result* best = nullptr;
    for (const Result& r : results) {
      if (r.test == test && r.backend == backend && r.direction == dir && r.rowBytes == row &&
          r.ctas == ctas && (best == nullptr || r.count > best->count)) {
        best = &r;
      }
    }
    return best;
  };
  auto find = [&](const std::string& test, const std::string& backend, const std::string& dir,
                  int64_t row, int64_t ctas) {
    const Result* r = findResult(test, backend, dir, row, ctas);
    return r != nullptr ? r->gbps : -1.0;
  };
  std::printf("\nfull results: %s\n", out.c_str());
  std::printf(
      "summary (GB/s at the largest index count per row size; kernel at 1 / 4 / 16 CTAs; "
      "reference: warp-per-row kernel, %d CTAs x %d threads)\n",
      kvio_bench::kReferenceBlocks, kvio_bench::kReferenceThreads);
  std::printf("%-4s %7s %7s %8s %8s %9s %9s %9s %9s %9s %7s %7s %7s %9s\n", "dir", "row", "indices",
              "kernel1", "kernel4", "kernel16", "reference", "direct", "staged", "ceiling",
              "k4/ceil", "dir/ceil", "stg/ceil", "dir calls");
  for (const char* dir : {"d2h", "h2d"}) {
    for (int64_t row : rowSizes) {
      const double ceiling = find("rows", "contiguous", dir, row, 0);
      const Result* d = findResult("rows", "direct", dir, row, 0);
      const double k4 = find("rows", "kernel", dir, row, 4);
      const double st = find("rows", "staged", dir, row, 0);
      if (d == nullptr) continue;
      std::printf(
          "%-4s %7lld %7lld %8.1f %8.1f %9.1f %9.1f %9.1f %9.1f %9.1f %7.2f %7.2f %7.2f %9.1f\n",
          dir, static_cast<long long>(row), static_cast<long long>(d->count),
          find("rows", "kernel", dir, row, 1), k4, find("rows", "kernel", dir, row, 16),
          find("rows", "reference", dir, row, kvio_bench::kReferenceBlocks), d->gbps, st, ceiling,
          ceiling > 0 ? k4 / ceiling : 0.0, ceiling > 0 ? d->gbps / ceiling : 0.0,
          ceiling > 0 ? st / ceiling : 0.0, d->calls);
    }
  }
  std::printf(
      "auto against the paths it chooses from (same index count; best: the fastest of kernel(4), "
      "direct and staged; issue 11: auto/best >= 0.90)\n");
  std::printf("%-4s %7s %7s %8s %8s %8s %8s %-8s %-8s %9s\n", "dir", "row", "indices", "kernel4",
              "direct", "staged", "auto", "chose", "best", "auto/best");
  for (const char* dir : {"d2h", "h2d"}) {
    for (int64_t row : rowSizes) {
      const Result* a = findResult("rows", "auto", dir, row, 4);
      if (a == nullptr) continue;
      const std::pair<const char*, double> paths[] = {
          {"kernel", find("rows", "kernel", dir, row, 4)},
          {"direct", find("rows", "direct", dir, row, 0)},
          {"staged", find("rows", "staged", dir, row, 0)}};
      const auto& best =
          *std::max_element(std::begin(paths), std::end(paths),
                            [](const auto& x, const auto& y) { return x.second < y.second; });
      std::printf("%-4s %7lld %7lld %8.1f %8.1f %8.1f %8.1f %-8s %-8s %9.2f\n", dir,
                  static_cast<long long>(row), static_cast<long long>(a->count), paths[0].second,
                  paths[1].second, paths[2].second, a->gbps, a->chosen.c_str(), best.first,
                  best.second > 0 ? a->gbps / best.second : 0.0);
    }
  }
  std::printf(
      "host time per transfer at the largest index count (us): in kvio_submit_args or, for "
      "kernel/devidx, kvio_submit_device_indices (checks, staging, issue; the mean of the first 6 "
      "submits, before any waits for a staging slot) against the whole time per transfer; "
      "host-bound: submit >= 0.8 x whole, so "
      "the GB/s measure the host, not the device; kernel/devidx: the kernel at 4 CTAs with its "
      "indices on the device (no host checks or staging, as the reference's)\n");
  std::printf("%-4s %7s %7s %-13s %10s %10s %8s %s\n", "dir", "row", "indices", "backend", "submit",
              "whole", "GB/s", "");
  for (const char* dir : {"d2h", "h2d"}) {
    for (int64_t row : rowSizes) {
      for (const char* backend : {"kernel", "kernel/devidx", "direct", "staged"}) {
        const Result* r =
            findResult("rows", backend, dir, row, std::strncmp(backend, "kernel", 6) == 0 ? 4 : 0);
        if (r == nullptr || r->us < 0 || r->gbps <= 0) continue;
        const double whole = static_cast<double>(r->rowBytes * r->count) / (r->gbps * 1e3);
        std::printf("%-4s %7lld %7lld %-13s %10.1f %10.1f %8.1f %s\n", dir,
                    static_cast<long long>(row), static_cast<long long>(r->count), backend, r->us,
                    whole, r->gbps, r->us >= 0.8 * whole ? "host-bound" : "");
      }
    }
  }
  std::printf(
      "rows on several streams (GB/s; memcpy: one cudaMemcpyAsync per row, rows dealt to 1 / 2 / "
      "4 streams; direct/<n>s: kvio's direct with KVIO_DIRECT_STREAMS=n, its engine calls per "
      "transfer; against 'direct' and the ceiling in the summary)\n");
  for (const Result& r : results) {
    if (r.test != "streams") continue;
    std::printf("  %s %6lld B x %lld: %-10s %6.1f", r.direction.c_str(),
                static_cast<long long>(r.rowBytes), static_cast<long long>(r.count),
                r.backend.c_str(), r.gbps);
    if (r.calls > 0) std::printf(", %.1f engine calls", r.calls);
    std::printf("\n");
  }
  std::printf(
      "host rows in address order, device rows scattered (GB/s; against kernel4 and reference in "
      "the summary)\n");
  for (const Result& r : results) {
    if (r.test != "locality") continue;
    std::printf("  %s %6lld B x %lld: %-22s %6.1f\n", r.direction.c_str(),
                static_cast<long long>(r.rowBytes), static_cast<long long>(r.count),
                r.backend.c_str(), r.gbps);
  }
  std::printf(
      "kernel launch shapes at the largest index count (GB/s; CTAs x warps; words in flight per "
      "lane: 8 up to 16 warps, 4 at 32; kernel4 is 4 x 16)\n");
  for (const Result& r : results) {
    if (r.test != "shapes") continue;
    std::printf("  %s %6lld B  %2lld x %-4s %6.1f\n", r.direction.c_str(),
                static_cast<long long>(r.rowBytes), static_cast<long long>(r.ctas),
                r.backend.substr(r.backend.find('/') + 1).c_str(), r.gbps);
  }
  for (const Result& r : results) {
    if (r.test.rfind("per_layer_", 0) != 0) continue;
    std::printf("%-22s %-7s ctas %2lld: %6.1f GB/s", r.test.c_str(), r.backend.c_str(),
                static_cast<long long>(r.ctas), r.gbps);
    if (r.calls >= 0) std::printf(", %.1f engine calls per layer", r.calls);
    std::printf("\n");
  }
  std::printf(
      "one-page load (8 x 256 B, 64 tokens, one layer), us per transfer; floor: one "
      "cudaMemcpyAsync of the same bytes\n");
  for (const char* test : {"submit", "submit_to_completion"}) {
    std::printf("  %-21s", test);
    for (const Result& r : results) {
      if (r.test != test) continue;
      std::printf(" %s %.1f", r.backend.c_str(), r.us);
      if (r.chosen != "-") std::printf(" (chose %s)", r.chosen.c_str());
    }
    std::printf("\n");
  }
  std::printf("host cost of what a submit does, each alone (us per call, mean):\n");
  for (const Result& r : results) {
    if (r.test == "call_cost") std::printf("  %-46s %6.2f\n", r.backend.c_str(), r.us);
  }
  return 0;
}
