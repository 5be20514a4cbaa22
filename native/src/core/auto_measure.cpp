// The 'auto' io backend's first-use measurement (KVIO_AUTO_CALIBRATION=measure): a short sweep
// that times kernel against direct on the executor's own device, host to device, at row sizes
// from 4 KiB to 256 KiB, and sets direct_row_bytes to the smallest row size from which direct is
// at least as fast at every larger size measured, and direct_copy_bytes_overlap to the smallest
// from which direct reaches kKernelShareBesideCompute of the kernel (the share the kernel keeps
// beside a compute load, which direct does not lose; measuring that needs a compute load, so the
// share is the H200's). direct_row_bytes_overlap and staged_min_bytes keep their values. The sweep
// goes through the C ABI on a temporary handle of the executor, with candidates forced by
// calibration (never / 0), so it exercises exactly what transfers run.
#include <algorithm>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include "auto_executor.hpp"
#include "error.hpp"
#include "handles.hpp"

namespace kvio {
namespace {

constexpr uint64_t kRowSizes[] = {4 << 10,  8 << 10,   16 << 10, 32 << 10,
                                  64 << 10, 128 << 10, 256 << 10};
constexpr int kRuns = 3;  // timed, after one untimed

/// Seconds of the best of kRuns host-to-device transfers of `count` scattered rows.
kvio_status timeRows(uint64_t executor, uint64_t host, uint64_t device,
                     const std::vector<int64_t>& slots, double* best) {
  *best = std::numeric_limits<double>::max();
  for (int run = 0; run <= kRuns; ++run) {
    const int64_t t0 = TransferState::monotonicNs();
    uint64_t transfer = 0;
    KVIO_RETURN_IF_ERROR(kvio_submit_args(executor, host, device, slots.data(), slots.data(),
                                          static_cast<int64_t>(slots.size()), 0, 0, 1, &transfer));
    const kvio_status waited = kvio_transfer_wait(transfer, -1);
    kvio_transfer_close(transfer);
    KVIO_RETURN_IF_ERROR(waited);
    if (run > 0) {
      *best = std::min(*best, static_cast<double>(TransferState::monotonicNs() - t0) * 1e-9);
    }
  }
  return KVIO_STATUS_OK;
}

int64_t rowsPerRun(const AutoMeasureTarget& target, uint64_t rowBytes) {
  return static_cast<int64_t>(std::clamp<uint64_t>(target.bytesPerRun / rowBytes, 8, 4096));
}

}  // namespace

std::vector<int64_t> autoSweepSlots(int64_t count) {
  std::vector<int64_t> slots(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) slots[static_cast<size_t>(i)] = 2 * (count - 1 - i);
  return slots;
}

namespace {

/// One row size: two pools of 2 * count rows, every other row moved, last first
/// (autoSweepSlots: one engine copy per row).
kvio_status measureRow(uint64_t executor, AutoExecutor* ex, const AutoMeasureTarget& target,
                       uint64_t rowBytes, AutoMeasurement* out) {
  const int64_t count = rowsPerRun(target, rowBytes);
  const kvio_pool_spec spec{
      KVIO_KIND_MLA, KVIO_LAYOUT_LAYER_FIRST, 1, 2 * count, 1, 1, static_cast<int64_t>(rowBytes)};
  uint64_t host = 0, device = 0;
  kvio_status status = kvio_pool_allocate_memory(&spec, target.hostKind, target.device, &host);
  if (status == KVIO_STATUS_OK) {
    status = kvio_pool_allocate_memory(&spec, target.deviceKind, target.device, &device);
  }
  const std::vector<int64_t> slots = autoSweepSlots(count);
  AutoCalibration force;
  force.stagedMinBytes = std::numeric_limits<uint64_t>::max();
  force.directRowBytes = std::numeric_limits<uint64_t>::max();  // the kernel
  if (status == KVIO_STATUS_OK) {
    ex->setCalibration(force);
    status = timeRows(executor, host, device, slots, &out->kernelSeconds);
  }
  force.directRowBytes = 0;  // direct
  if (status == KVIO_STATUS_OK) {
    ex->setCalibration(force);
    status = timeRows(executor, host, device, slots, &out->directSeconds);
  }
  out->rowBytes = rowBytes;
  const std::string cause = status == KVIO_STATUS_OK ? "" : lastError();
  if (device != 0) kvio_pool_close(device);
  if (host != 0) kvio_pool_close(host);
  if (status != KVIO_STATUS_OK) {
    return fail(status, "measuring the auto calibration (rows of %llu B): %s",
                static_cast<unsigned long long>(rowBytes), cause.c_str());
  }
  return KVIO_STATUS_OK;
}

}  // namespace

uint64_t autoCrossover(const std::vector<AutoMeasurement>& points, double kernelShare) {
  uint64_t crossover = std::numeric_limits<uint64_t>::max();
  for (size_t i = points.size(); i-- > 0;) {
    // direct's bandwidth >= kernelShare x the kernel's: its time <= the kernel's / kernelShare.
    if (points[i].directSeconds * kernelShare > points[i].kernelSeconds) break;
    crossover = points[i].rowBytes;
  }
  return crossover;
}

kvio_status measureAutoCalibration(std::unique_ptr<Executor>* executor,
                                   const AutoMeasureTarget& target) {
  auto impl = std::make_shared<ExecutorImpl>();
  impl->backend = KVIO_BACKEND_AUTO;
  impl->executor = std::move(*executor);
  auto* ex = static_cast<AutoExecutor*>(impl->executor.get());
  AutoCalibration calibration = ex->calibration();
  uint64_t handle = 0;
  const kvio_status added = executors().add(impl, &handle);
  if (added != KVIO_STATUS_OK) {  // no executor handle left: the caller keeps its executor
    *executor = std::move(impl->executor);
    return added;
  }
  std::vector<AutoMeasurement> points;
  kvio_status status = KVIO_STATUS_OK;
  for (uint64_t rowBytes : kRowSizes) {
    AutoMeasurement p{};
    status = measureRow(handle, ex, target, rowBytes, &p);
    if (status != KVIO_STATUS_OK) break;
    points.push_back(p);
  }
  std::shared_ptr<ExecutorImpl> removed;
  executors().remove(handle, "executor", &removed);
  *executor = std::move(impl->executor);
  if (status != KVIO_STATUS_OK) {
    ex->setCalibration(calibration);
    return status;
  }
  calibration.directRowBytes = autoCrossover(points);
  calibration.directCopyBytesOverlap = autoCrossover(points, kKernelShareBesideCompute);
  std::string source = "measured at first use on device " + std::to_string(target.device) +
                       ", host to device, GB/s kernel/direct:";
  for (const AutoMeasurement& p : points) {
    const double bytes = static_cast<double>(autoMeasuredBytes(target, p.rowBytes));
    char text[64];
    std::snprintf(text, sizeof(text), " %lluK %.1f/%.1f",
                  static_cast<unsigned long long>(p.rowBytes >> 10), bytes / p.kernelSeconds * 1e-9,
                  bytes / p.directSeconds * 1e-9);
    source += text;
  }
  calibration.source = source;
  ex->setCalibration(std::move(calibration));
  return KVIO_STATUS_OK;
}

uint64_t autoMeasuredBytes(const AutoMeasureTarget& target, uint64_t rowBytes) {
  return static_cast<uint64_t>(rowsPerRun(target, rowBytes)) * rowBytes;
}

}  // namespace kvio
