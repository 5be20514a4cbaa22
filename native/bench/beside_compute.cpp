// kvio_cuda_bench --beside-compute (docs/benchmarks.md, "Loads beside compute", issue 11 item 6):
// kvio's per-layer loads next to a compute load that keeps every SM busy, both sides measured in
// the same run.
//
//  - The compute load (compute_load.cu): back-to-back launches, on a stream of its own, of a bf16
//    tensor-core kernel sized to 4 waves of CTAs that fill every SM's threads, each launch about
//    2 ms (a stand-in for a bf16 matmul loop: the toolkit the bench is built with has no cuBLAS).
//    Its TFLOP/s alone is measured before and after the loads; beside a load, its throughput
//    over the load's whole window gives the ratio (beside / alone; 1.000: unaffected).
//  - The load: issue 11's per-layer load, 32 layers x 64 pages of 64 tokens, MHA 8 heads x 256 B
//    (16 MiB a layer), page_first pinned host pool -> layer_first device pool (shuffled pages),
//    one transfer per layer, 4 layers in flight, layer after layer round the 32 layers. Idle: for
//    a fixed time with the GPU otherwise idle; beside: for as long as the compute runs.
//  - Executors: kernel (its default launch), kernel-hp (the same on a caller stream of the
//    greatest priority, passed to kvio_executor_create_cuda), direct, auto without and with
//    KVIO_SUBMIT_OVERLAPS_COMPUTE (kvio_submit_args_flags), and auto with it on the
//    high-priority stream (auto-hp+mark); for each, which backend ran the
//    transfers (kvio_transfer_info.chosen_backend: what auto chose).
//  - Green contexts (CUDA 12.4+ driver, reached through cudaGetDriverEntryPointByVersion, so
//    nothing links libcuda): the compute runs in a green context holding all but N SMs (N = 8,
//    16: the smallest partitions sm_90 allows) while kvio's executors stay on their own streams
//    in the device's primary context, so only kvio can use the N SMs. kvio's executor is not put
//    into the N-SM green context: it records its events and uploads in the primary context, and a
//    stream of another context is not what kvio_executor_create_cuda's caller stream promises.
//    Where the driver refuses any step, the line says which and the rest of the mode still runs.
// Writes TSV to --out (default cuda_beside_compute.tsv), each row as it is measured, and prints a
// table.
#include "beside_compute.hpp"

#include <cuda.h>  // green-context types only; the functions come through the runtime
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "bench_check.hpp"
#include "compute_load.hpp"
#include "kvio/kvio.h"

namespace kvio_bench {
namespace {

[[noreturn]] void fail(const std::string& what) {
  std::fprintf(stderr, "kvio_cuda_bench --beside-compute: %s\n", what.c_str());
  std::exit(1);
}

double clockSeconds() {
  using Clock = std::chrono::steady_clock;
  return std::chrono::duration<double>(Clock::now().time_since_epoch()).count();
}

const char* backendName(int32_t backend) {
  switch (backend) {
    case KVIO_BACKEND_CPU: return "cpu";
    case KVIO_BACKEND_KERNEL: return "kernel";
    case KVIO_BACKEND_DIRECT: return "direct";
    case KVIO_BACKEND_AUTO: return "auto";
    default: return "other";
  }
}

// The compute load on one stream: `grid` CTAs x `iterations` per launch.
struct Compute {
  cudaStream_t stream = nullptr;
  float* sink = nullptr;
  int grid = 0;
  int iterations = 0;
  int sms = 0;  // SMs it may use

  void enqueue(int launches) const {
    for (int i = 0; i < launches; ++i) {
      BENCH_CUDA(launchComputeLoad(grid, iterations, sink, stream));
    }
  }
  bool done() const {
    const cudaError_t e = cudaStreamQuery(stream);
    if (e == cudaErrorNotReady) return false;
    BENCH_CUDA(e);
    return true;
  }
  // Seconds for `launches` launches with nothing else on the GPU.
  double timeAlone(int launches) const {
    const double start = clockSeconds();
    enqueue(launches);
    BENCH_CUDA(cudaStreamSynchronize(stream));
    return clockSeconds() - start;
  }
  double tflops(int launches, double seconds) const {
    return computeLoadFlops(grid, iterations) * launches / seconds / 1e12;
  }
};

// Sizes `compute` (grid: 4 waves of resident CTAs on its SMs; iterations: about `launchSeconds`
// a launch) and returns the launches that last about `windowSeconds`.
int calibrate(Compute* compute, double launchSeconds, double windowSeconds) {
  int perSm = 0;
  BENCH_CUDA(computeLoadBlocksPerSm(&perSm));
  compute->grid = 4 * std::max(perSm, 1) * compute->sms;
  compute->iterations = 1024;
  compute->timeAlone(2);  // warm-up
  const double trial = compute->timeAlone(4) / 4;
  const double scaled = compute->iterations * launchSeconds / std::max(trial, 1e-6);
  compute->iterations = static_cast<int>(std::clamp(scaled, 64.0, 1e7));
  const double launch = compute->timeAlone(4) / 4;
  return std::max(4, static_cast<int>(windowSeconds / std::max(launch, 1e-6)));
}

// The per-layer load of issue 11: pools, indices and bytes per layer.
struct Load {
  static constexpr int64_t kLayers = 32, kPageTokens = 64, kHeads = 8, kHeadBytes = 256;
  static constexpr int64_t kLoadPages = 64, kDevicePages = 128;
  uint64_t host = 0, device = 0;
  std::vector<int64_t> hostRows, deviceRows;
  uint64_t layerBytes = 0;

  Load() {
    const kvio_pool_spec hostSpec{
        KVIO_KIND_MHA, KVIO_LAYOUT_PAGE_FIRST, kLayers, kLoadPages, kPageTokens, kHeads,
        kHeadBytes};
    const kvio_pool_spec deviceSpec{
        KVIO_KIND_MHA, KVIO_LAYOUT_LAYER_FIRST, kLayers, kDevicePages, kPageTokens, kHeads,
        kHeadBytes};
    BENCH_KVIO(kvio_pool_allocate_memory(&hostSpec, KVIO_MEMORY_HOST_PINNED, 0, &host));
    BENCH_KVIO(kvio_pool_allocate_memory(&deviceSpec, KVIO_MEMORY_CUDA_DEVICE, 0, &device));
    std::vector<int64_t> pages(static_cast<size_t>(kDevicePages));
    std::iota(pages.begin(), pages.end(), 0);
    std::mt19937_64 rng(11);
    std::shuffle(pages.begin(), pages.end(), rng);
    for (int64_t p = 0; p < kLoadPages; ++p) {
      for (int64_t t = 0; t < kPageTokens; ++t) {
        hostRows.push_back(p * kPageTokens + t);
        deviceRows.push_back(pages[static_cast<size_t>(p)] * kPageTokens + t);
      }
    }
    layerBytes = static_cast<uint64_t>(hostRows.size()) * 2 * kHeads * kHeadBytes;
  }
  ~Load() {
    kvio_pool_close(host);
    kvio_pool_close(device);
  }
  Load(const Load&) = delete;
  Load& operator=(const Load&) = delete;

  uint64_t submit(uint64_t executor, uint32_t flags, int64_t layer) const {
    uint64_t transfer = 0;
    BENCH_KVIO(kvio_submit_args_flags(executor, host, device, hostRows.data(), deviceRows.data(),
                                      static_cast<int64_t>(hostRows.size()), layer % kLayers,
                                      layer % kLayers, 1, flags, &transfer));
    return transfer;
  }
};

struct LoadRun {
  double gbps = 0;            // layers completed in the window
  double computeSeconds = 0;  // beside: from the compute's enqueue to its end (0 when idle)
  double queueSeconds = 0;    // beside: queuing the compute's launches (the loads wait for it)
  int64_t layers = 0;
  std::vector<int64_t> chosen = std::vector<int64_t>(KVIO_BACKEND_COUNT, 0);
  std::string chosenText() const {
    std::string text;
    for (int32_t b = 0; b < KVIO_BACKEND_COUNT; ++b) {
      if (chosen[static_cast<size_t>(b)] == 0) continue;
      if (!text.empty()) text += "+";
      text += std::string(backendName(b)) + ":" + std::to_string(chosen[static_cast<size_t>(b)]);
    }
    return text.empty() ? "-" : text;
  }
};

// Loads layer after layer, 4 in flight, for `idleSeconds` (compute null) or while `launches`
// compute launches run. Counts the layers that completed inside the window (their transfer's
// chosen backend too); the ones still in flight at its end are waited for, not counted.
LoadRun runLoads(const Load& load, uint64_t executor, uint32_t flags, const Compute* compute,
                 int launches, double idleSeconds) {
  constexpr size_t kInFlight = 4;
  for (int64_t l = 0; l < 4; ++l) {  // warm-up
    const uint64_t t = load.submit(executor, flags, l);
    BENCH_KVIO(kvio_transfer_wait(t, -1));
    BENCH_KVIO(kvio_transfer_close(t));
  }
  LoadRun run;
  std::deque<uint64_t> inFlight;
  int64_t next = 0;
  const double start = clockSeconds();
  if (compute != nullptr) compute->enqueue(launches);
  run.queueSeconds = clockSeconds() - start;  // the loads start after this
  while (inFlight.size() < kInFlight) inFlight.push_back(load.submit(executor, flags, next++));
  double lastDone = start;
  for (;;) {
    const int32_t done = kvio_transfer_is_done(inFlight.front());
    if (done < 0) fail("kvio_transfer_is_done: " + std::string(kvio_last_error()));
    if (done == 1) {
      BENCH_KVIO(kvio_transfer_wait(inFlight.front(), -1));
      kvio_transfer_info info{};
      BENCH_KVIO(kvio_transfer_get_info(inFlight.front(), &info));
      if (info.chosen_backend >= 0 && info.chosen_backend < KVIO_BACKEND_COUNT) {
        ++run.chosen[static_cast<size_t>(info.chosen_backend)];
      }
      BENCH_KVIO(kvio_transfer_close(inFlight.front()));
      inFlight.pop_front();
      ++run.layers;
      lastDone = clockSeconds();
    }
    const bool over = compute != nullptr ? compute->done() : clockSeconds() - start >= idleSeconds;
    if (over) break;
    if (done == 1) inFlight.push_back(load.submit(executor, flags, next++));
  }
  if (compute != nullptr) {
    run.computeSeconds = clockSeconds() - start;
    if (run.queueSeconds > 0.02 * run.computeSeconds) {  // a full launch queue blocked the host
      std::printf("note: queuing the compute took %.1f ms of its %.1f ms; the loads began after\n",
                  run.queueSeconds * 1e3, run.computeSeconds * 1e3);
    }
  }
  for (uint64_t t : inFlight) {
    BENCH_KVIO(kvio_transfer_wait(t, -1));
    BENCH_KVIO(kvio_transfer_close(t));
  }
  const double window = lastDone - start;
  run.gbps = window > 0 ? static_cast<double>(load.layerBytes) * run.layers / window / 1e9 : 0.0;
  return run;
}

// One line of the mode's results.
struct Row {
  std::string executor;  // kernel, kernel-hp, direct, auto, auto+mark, auto-hp+mark
  std::string setting;   // idle, beside, green<N> (compute on all but N SMs)
  LoadRun run;
  double computeTflops = 0;  // beside: the compute's TFLOP/s during the load
  double computeRatio =
      0;  // beside: that over the compute's alone TFLOP/s (all SMs, measured alone)
};

// Driver functions through the runtime (no libcuda link); false and *why when unavailable.
template <typename F>
bool driverFunction(const char* name, F** function, std::string* why) {
  void* address = nullptr;
  cudaDriverEntryPointQueryResult query = cudaDriverEntryPointSymbolNotFound;
  const cudaError_t e =
      cudaGetDriverEntryPointByVersion(name, &address, CUDA_VERSION, cudaEnableDefault, &query);
  if (e != cudaSuccess || query != cudaDriverEntryPointSuccess || address == nullptr) {
    *why = std::string(name) + " not available from the driver (" + cudaGetErrorString(e) + ")";
    return false;
  }
  *function = reinterpret_cast<F*>(address);
  return true;
}

// A green context holding all of the device's SMs but `reserved` (the split's first group of at
// least `reserved` SMs stays unused by it), with a non-blocking stream.
struct GreenCompute {
  decltype(&cuGreenCtxDestroy) destroyContext = nullptr;
  decltype(&cuStreamDestroy) destroyStream = nullptr;
  CUgreenCtx context = nullptr;
  CUstream stream = nullptr;
  unsigned computeSms = 0, reservedSms = 0;
  std::string why;  // empty when created

  explicit GreenCompute(unsigned reserved) {
    decltype(&cuDeviceGet) deviceGet = nullptr;
    decltype(&cuDeviceGetDevResource) getResource = nullptr;
    decltype(&cuDevSmResourceSplitByCount) split = nullptr;
    decltype(&cuDevResourceGenerateDesc) describe = nullptr;
    decltype(&cuGreenCtxCreate) create = nullptr;
    decltype(&cuGreenCtxStreamCreate) createStream = nullptr;
    if (!driverFunction("cuDeviceGet", &deviceGet, &why) ||
        !driverFunction("cuDeviceGetDevResource", &getResource, &why) ||
        !driverFunction("cuDevSmResourceSplitByCount", &split, &why) ||
        !driverFunction("cuDevResourceGenerateDesc", &describe, &why) ||
        !driverFunction("cuGreenCtxCreate", &create, &why) ||
        !driverFunction("cuGreenCtxStreamCreate", &createStream, &why) ||
        !driverFunction("cuGreenCtxDestroy", &destroyContext, &why) ||
        !driverFunction("cuStreamDestroy", &destroyStream, &why)) {
      return;
    }
    CUdevice device = 0;
    CUdevResource all{}, kvioPart{}, rest{};
    unsigned groups = 1;
    CUdevResourceDesc desc = nullptr;
    if (!driverOk(deviceGet(&device, 0), "cuDeviceGet") ||
        !driverOk(getResource(device, &all, CU_DEV_RESOURCE_TYPE_SM), "cuDeviceGetDevResource") ||
        !driverOk(split(&kvioPart, &groups, &all, &rest, 0, reserved),
                  "cuDevSmResourceSplitByCount") ||
        !driverOk(describe(&desc, &rest, 1), "cuDevResourceGenerateDesc") ||
        !driverOk(create(&context, desc, device, CU_GREEN_CTX_DEFAULT_STREAM),
                  "cuGreenCtxCreate") ||
        !driverOk(createStream(&stream, context, CU_STREAM_NON_BLOCKING, 0),
                  "cuGreenCtxStreamCreate")) {
      return;
    }
    computeSms = rest.sm.smCount;
    reservedSms = kvioPart.sm.smCount;
    if (groups != 1 || computeSms == 0) why = "the SM split left no compute partition";
  }
  ~GreenCompute() {
    if (stream != nullptr) destroyStream(stream);
    if (context != nullptr) destroyContext(context);
  }
  GreenCompute(const GreenCompute&) = delete;
  GreenCompute& operator=(const GreenCompute&) = delete;

  bool driverOk(CUresult r, const char* call) {
    if (r == CUDA_SUCCESS) return true;
    why = std::string(call) + " failed: CUresult " + std::to_string(static_cast<int>(r));
    return false;
  }
};

// Prints rows[first...]; load/idle divides by the same executor's idle row.
void printRows(const std::vector<Row>& rows, size_t first) {
  auto idleOf = [&](const std::string& executor) {
    for (const Row& r : rows) {
      if (r.executor == executor && r.setting == "idle") return r.run.gbps;
    }
    return 0.0;
  };
  std::printf("%-12s %-8s %9s %9s %9s %9s  %s\n", "executor", "compute", "load GB/s", "load/idle",
              "TFLOP/s", "compute x", "backend that ran the layers (count)");
  for (size_t i = first; i < rows.size(); ++i) {
    const Row& r = rows[i];
    const double idle = idleOf(r.executor);
    if (r.setting == "idle") {
      std::printf("%-12s %-8s %9.1f %9s %9s %9s  %s\n", r.executor.c_str(), "none", r.run.gbps, "-",
                  "-", "-", r.run.chosenText().c_str());
    } else {
      std::printf("%-12s %-8s %9.1f %9.2f %9.1f %9.3f  %s\n", r.executor.c_str(), r.setting.c_str(),
                  r.run.gbps, idle > 0 ? r.run.gbps / idle : 0.0, r.computeTflops, r.computeRatio,
                  r.run.chosenText().c_str());
    }
  }
}

// One TSV line, flushed: a run cut short (the GPU check's timeout) keeps every row measured.
void writeRow(FILE* file, const Row& r) {
  std::fprintf(file, "%s\t%s\t%.2f\t%lld\t%.2f\t%.4f\t%s\n", r.executor.c_str(), r.setting.c_str(),
               r.run.gbps, static_cast<long long>(r.run.layers), r.computeTflops, r.computeRatio,
               r.run.chosenText().c_str());
  std::fflush(file);
}

}  // namespace

int runBesideCompute(bool quick, const std::string& out) {
  int32_t devices = 0;
  if (kvio_cuda_device_count(&devices) != KVIO_STATUS_OK || devices == 0) {
    std::printf("kvio_cuda_bench --beside-compute: skipped: %s\n", kvio_last_error());
    return 0;
  }
  BENCH_CUDA(cudaSetDevice(0));
  cudaDeviceProp prop{};
  BENCH_CUDA(cudaGetDeviceProperties(&prop, 0));
  if (prop.major < 8) {  // the load's bf16 tensor-core kernel is empty below sm_80
    std::printf(
        "kvio_cuda_bench --beside-compute: skipped: %s is sm_%d%d; the compute load needs "
        "bf16 tensor cores (sm_80 or newer)\n",
        prop.name, prop.major, prop.minor);
    return 0;
  }
  const double window = quick ? 0.4 : 1.0;  // seconds each beside measurement lasts
  const double idleWindow = quick ? 0.25 : 0.5;

  Compute compute;
  compute.sms = prop.multiProcessorCount;
  BENCH_CUDA(cudaStreamCreateWithFlags(&compute.stream, cudaStreamNonBlocking));
  BENCH_CUDA(cudaMalloc(&compute.sink, 1 << 20));
  const int launches = calibrate(&compute, 2e-3, window);
  const double aloneBefore = compute.tflops(launches, compute.timeAlone(launches));
  FILE* file = std::fopen(out.c_str(), "w");
  if (file == nullptr) fail("cannot write " + out);
  std::fprintf(file, "executor\tcompute\tload_GBps\tlayers\tcompute_TFLOPs\tcompute_x\tchosen\n");
  std::fprintf(file, "compute_alone\tbefore\t0\t0\t%.2f\t1\t-\n", aloneBefore);
  std::fflush(file);
  std::printf(
      "kvio_cuda_bench --beside-compute on %s (%d SMs)\ncompute: bf16 wmma kernel, %d CTAs x %d "
      "threads (4 waves), %d iterations a launch, %d launches a window; alone %.1f TFLOP/s\n",
      prop.name, prop.multiProcessorCount, compute.grid, kComputeThreads, compute.iterations,
      launches, aloneBefore);

  Load load;
  std::printf(
      "load: %lld layers x %lld pages of %lld tokens, MHA %lld x %lld B (%.1f MiB a layer), "
      "page_first pinned host -> layer_first device, one transfer per layer, 4 in flight\n",
      static_cast<long long>(Load::kLayers), static_cast<long long>(Load::kLoadPages),
      static_cast<long long>(Load::kPageTokens), static_cast<long long>(Load::kHeads),
      static_cast<long long>(Load::kHeadBytes), static_cast<double>(load.layerBytes) / (1 << 20));
  std::fflush(stdout);

  struct Executor {
    std::string name;
    uint64_t handle;
    uint32_t flags;
  };
  std::vector<Executor> executors;
  uint64_t kernel = 0, direct = 0, autoExec = 0;
  BENCH_KVIO(
      kvio_executor_create_cuda(KVIO_BACKEND_KERNEL, 0, KVIO_CUDA_OWN_STREAM, 0, 0, &kernel));
  BENCH_KVIO(
      kvio_executor_create_cuda(KVIO_BACKEND_DIRECT, 0, KVIO_CUDA_OWN_STREAM, 0, 0, &direct));
  BENCH_KVIO(
      kvio_executor_create_cuda(KVIO_BACKEND_AUTO, 0, KVIO_CUDA_OWN_STREAM, 0, 0, &autoExec));
  // The kernel executor on a caller stream of the greatest priority: when an SM frees, the block
  // scheduler starts its CTAs before the compute's waiting ones.
  int leastPriority = 0, greatestPriority = 0;
  BENCH_CUDA(cudaDeviceGetStreamPriorityRange(&leastPriority, &greatestPriority));
  cudaStream_t urgent = nullptr;
  BENCH_CUDA(cudaStreamCreateWithPriority(&urgent, cudaStreamNonBlocking, greatestPriority));
  uint64_t kernelUrgent = 0, autoUrgent = 0;
  BENCH_KVIO(kvio_executor_create_cuda(KVIO_BACKEND_KERNEL, 0, reinterpret_cast<uint64_t>(urgent),
                                       0, 0, &kernelUrgent));
  BENCH_KVIO(kvio_executor_create_cuda(KVIO_BACKEND_AUTO, 0, reinterpret_cast<uint64_t>(urgent), 0,
                                       0, &autoUrgent));
  const char* text = kvio_executor_auto_calibration(autoExec);
  std::string calibration = text != nullptr ? text : kvio_last_error();
  std::replace(calibration.begin(), calibration.end(), '\n', ';');
  std::printf("auto calibration: %s\n", calibration.c_str());
  executors.push_back({"kernel", kernel, 0});
  executors.push_back({"kernel-hp", kernelUrgent, 0});
  executors.push_back({"direct", direct, 0});
  executors.push_back({"auto", autoExec, 0});
  executors.push_back({"auto+mark", autoExec, KVIO_SUBMIT_OVERLAPS_COMPUTE});
  // auto with the mark on the high-priority stream: its kernel keeps more of its bandwidth
  // there, which auto's default calibration does not assume (docs/cuda.md, "Defaults").
  executors.push_back({"auto-hp+mark", autoUrgent, KVIO_SUBMIT_OVERLAPS_COMPUTE});

  std::vector<Row> rows;
  for (const Executor& e : executors) {
    rows.push_back({e.name, "idle", runLoads(load, e.handle, e.flags, nullptr, 0, idleWindow)});
    writeRow(file, rows.back());
    Row beside{e.name, "beside", runLoads(load, e.handle, e.flags, &compute, launches, 0)};
    beside.computeTflops = compute.tflops(launches, beside.run.computeSeconds);
    beside.computeRatio = beside.computeTflops / aloneBefore;
    rows.push_back(beside);
    writeRow(file, beside);
    std::fprintf(stderr, "beside-compute %s: idle %.1f, beside %.1f GB/s, compute x %.3f\n",
                 e.name.c_str(), rows[rows.size() - 2].run.gbps, beside.run.gbps,
                 beside.computeRatio);
  }
  const double aloneAfter = compute.tflops(launches, compute.timeAlone(launches));
  std::printf(
      "\ncompute alone: %.1f TFLOP/s before the loads, %.1f after; compute x: its TFLOP/s beside "
      "the load over the before figure\n",
      aloneBefore, aloneAfter);
  printRows(rows, 0);
  std::printf("targets (issue 11): load/idle >= 0.80 beside compute; compute x >= 0.970\n");
  std::fprintf(file, "compute_alone\tafter\t0\t0\t%.2f\t%.4f\t-\n", aloneAfter,
               aloneAfter / aloneBefore);
  std::fflush(stdout);
  std::fflush(file);

  // Green contexts: the compute on all but N SMs, kvio on its own streams (all SMs). Printed
  // after the main table, so a driver that refuses part of it loses nothing measured above.
  std::printf(
      "\ngreen contexts: the compute in a green context without N SMs, kvio's executors as above "
      "(primary context, all SMs); compute x over the all-SM compute alone\n");
  const size_t firstGreen = rows.size();
  for (unsigned reserved : {8u, 16u}) {
    GreenCompute green(reserved);
    if (!green.why.empty()) {
      std::printf("green context reserving %u SMs: not run: %s\n", reserved, green.why.c_str());
      continue;
    }
    Compute partial = compute;
    partial.stream = reinterpret_cast<cudaStream_t>(green.stream);
    partial.sms = static_cast<int>(green.computeSms);
    partial.sink = nullptr;  // an allocation of the primary context: not written from the green one
    cudaError_t probe = launchComputeLoad(1, 1, nullptr, partial.stream);
    if (probe == cudaSuccess) probe = cudaStreamSynchronize(partial.stream);
    if (probe == cudaSuccess) probe = cudaStreamQuery(partial.stream);
    if (probe != cudaSuccess) {
      std::printf("green context reserving %u SMs: not run: a launch on its stream failed: %s\n",
                  reserved, cudaGetErrorString(probe));
      continue;
    }
    const int greenLaunches = calibrate(&partial, 2e-3, window);
    const double greenAlone = partial.tflops(greenLaunches, partial.timeAlone(greenLaunches));
    std::printf(
        "green%u: compute on %u SMs (%u left to kvio only): alone %.1f TFLOP/s = %.3fx the "
        "all-SM compute\n",
        green.reservedSms, green.computeSms, green.reservedSms, greenAlone,
        greenAlone / aloneBefore);
    std::fprintf(file, "compute_alone\tgreen%u\t0\t0\t%.2f\t%.4f\t-\n", green.reservedSms,
                 greenAlone, greenAlone / aloneBefore);
    std::fflush(file);
    const std::string setting = "green" + std::to_string(green.reservedSms);
    for (const Executor& e : executors) {
      if (e.name == "auto") continue;  // auto+mark is the one meant for this case
      Row row{e.name, setting, runLoads(load, e.handle, e.flags, &partial, greenLaunches, 0)};
      row.computeTflops = partial.tflops(greenLaunches, row.run.computeSeconds);
      row.computeRatio = row.computeTflops / aloneBefore;  // against the whole GPU's compute
      rows.push_back(row);
      writeRow(file, row);
    }
  }
  if (rows.size() > firstGreen) printRows(rows, firstGreen);
  std::fclose(file);
  std::printf("full results: %s\n", out.c_str());
  BENCH_KVIO(kvio_executor_close(kernel));
  BENCH_KVIO(kvio_executor_close(direct));
  BENCH_KVIO(kvio_executor_close(autoExec));
  BENCH_KVIO(kvio_executor_close(kernelUrgent));
  BENCH_KVIO(kvio_executor_close(autoUrgent));
  BENCH_CUDA(cudaStreamDestroy(urgent));
  BENCH_CUDA(cudaFree(compute.sink));
  BENCH_CUDA(cudaStreamDestroy(compute.stream));
  return 0;
}

}  // namespace kvio_bench
