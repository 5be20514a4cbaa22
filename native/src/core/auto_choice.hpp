// The 'auto' io backend's choice: a pure function from a transfer's shape, the calibration and
// the caller's overlaps-compute mark to the candidate that runs it (kernel, direct or staged),
// and the calibration itself (defaults from the H200 figures, the file format, its parser).
// No device is asked anything here: auto_test (AutoChoice.*) covers every branch on the host.
#ifndef KVIO_CORE_AUTO_CHOICE_HPP_
#define KVIO_CORE_AUTO_CHOICE_HPP_

#include <cstdint>
#include <string>
#include <vector>

#include "kvio/kvio.h"

namespace kvio {

/// What auto can pick: with a GPU kernel, direct or staged (chooseAuto); without one cpu, and
/// kernel_ascend where an NPU is present (chooseWithoutGpu).
enum class AutoPick : int32_t { kKernel = 0, kDirect = 1, kStaged = 2, kCpu = 3, kAscend = 4 };
constexpr int32_t kAutoPicks = 5;

enum class AutoDirection : int32_t { kHostToDevice, kDeviceToHost, kDeviceToDevice, kHostToHost };

/// A transfer's shape as the choice sees it (from the plan the copy engine would run).
struct AutoShape {
  uint64_t bytes = 0;  // total bytes moved
  uint64_t rows = 0;   // contiguous pieces (rows of the plan's 2-D copies)
  int64_t copies = 0;  // 2-D copies of the plan
  /// Copies the copy engine would be given (direct), counted as it is known to handle them: a
  /// plan copy of at least kMinRowsOfOneEngineCopy rows whose pitches hold its width as one 2-D
  /// copy, any other as one copy per row (a 2-D copy of a few rows, which the planner makes of
  /// any rows that advance on both sides, has not been measured to cost less than its rows). An
  /// estimate: direct's issuer also cuts copies at allocation boundaries (more) and nests 2-D
  /// copies into 3-D ones (fewer).
  uint64_t engineCopies = 0;
  AutoDirection direction = AutoDirection::kHostToDevice;
  bool deviceIndices = false;    // index arrays in device memory: only the kernel reads them
  bool overlapsCompute = false;  // the caller marked it as running beside compute
};

/// The fewest rows of a plan copy that AutoShape::engineCopies counts as one engine copy: the
/// 2-D copies measured fast on the H200 were pages of 64 rows; 8 is the smallest page of tokens
/// seen in serving engines' configurations.
constexpr uint64_t kMinRowsOfOneEngineCopy = 8;

/// Summarises a plan (rows, bytes, copies, engine copies); direction and marks are set by the
/// caller.
AutoShape summarisePlan(const std::vector<kvio_copy2d>& plan);

/// The crossovers (what chooseAuto reads). A row is a contiguous piece of the plan; an engine
/// copy is what direct hands the copy engine (AutoShape::engineCopies).
struct AutoThresholds {
  /// Mean row bytes from which direct (copy engine) beats the kernel on an idle GPU. H200:
  /// kernel 40-52 GB/s on rows >= 2 KiB; direct 6.7-24 GB/s at 4-8 KiB, 0.61x the 55 GB/s
  /// ceiling (34 GB/s) at 64 KiB, 0.87x (48 GB/s) at 256 KiB: direct matches the kernel, without
  /// taking SMs, from 256 KiB.
  uint64_t directRowBytes = 256 * 1024;
  /// While the transfer overlaps compute, direct takes it when its mean row reaches this AND its
  /// mean bytes per engine copy reach directCopyBytesOverlap. H200 beside a compute load
  /// (docs/benchmarks.md, first H200 run): the kernel drops to 8.1 GB/s, direct keeps its idle
  /// 30 GB/s on 2 KiB rows carried as 2-D copies of 64 rows (a page of one layer); narrower rows
  /// in 2-D copies have not been measured, so they stay on the kernel.
  uint64_t directRowBytesOverlap = 2 * 1024;
  /// See directRowBytesOverlap. Each engine copy costs the engine about 1.3 us whatever its size
  /// (H200: scattered 4 KiB rows, one 1-D copy each, 2.5-3.6 GB/s; 64 KiB, 31-33 GB/s): at
  /// 16 KiB a copy direct would move about 10 GB/s, barely above the kernel's 8.1 beside
  /// compute, at 32 KiB about 16 GB/s, twice it (a margin for the estimate, and for a kernel
  /// that keeps more than 0.17x of its idle bandwidth). A caller whose compute leaves kvio's
  /// kernel SMs of its own (a green context) or that runs it on a high-priority stream keeps
  /// much more of the kernel's bandwidth (0.98x and 0.55x on the H200): set `never` there.
  uint64_t directCopyBytesOverlap = 32 * 1024;
  /// Total bytes from which a host<->device transfer of rows below the direct crossover goes
  /// to staged (a device gather/scatter, then large copy-engine copies), when staged exists.
  /// Never by default: staged has not run on a GPU, so auto chooses it only where a
  /// calibration sets a size (e.g. 4 MiB) after measuring it.
  uint64_t stagedMinBytes = UINT64_MAX;
};

/// The crossovers and where they come from.
struct AutoCalibration : AutoThresholds {
  /// Where these numbers come from ("defaults (H200 figures)", "file PATH", "set").
  std::string source = "defaults (H200 figures)";
};

/// The choice. stagedAvailable: the staged executor exists (it is a candidate only then).
/// Rules, in order: device-resident indices -> kernel; no rows -> direct (nothing to issue);
/// mean row >= directRowBytes -> direct; overlapsCompute, mean row >= directRowBytesOverlap and
/// mean bytes per engine copy >= directCopyBytesOverlap -> direct; staged available,
/// host<->device and bytes >= stagedMinBytes -> staged; else kernel. The mark never moves a
/// transfer away from direct.
AutoPick chooseAuto(const AutoShape& shape, const AutoThresholds& calibration,
                    bool stagedAvailable);

/// The smallest mean row with which chooseAuto may send a transfer to direct: directRowBytes, or
/// the smaller of it and directRowBytesOverlap when the transfer overlaps compute. A transfer
/// whose rows are all shorter is decided by chooseBelowCrossover, without a plan.
uint64_t directCrossover(bool overlapsCompute, const AutoThresholds& calibration);

/// chooseAuto's choice for a transfer whose mean row is below directCrossover (known without a
/// plan when no row can reach it): staged when available, host<->device and shape.bytes >=
/// stagedMinBytes, else kernel. Only shape.bytes and shape.direction are read.
AutoPick chooseBelowCrossover(const AutoShape& shape, const AutoThresholds& calibration,
                              bool stagedAvailable);

/// The choice without a GPU, from the pools' memory kinds (KVIO_MEMORY_*): kernel_ascend when a
/// side is Ascend device memory and an NPU executor is a candidate (ascendAvailable), else cpu
/// (host memory of every kind, Ascend pinned host memory included, is the cpu backend's; Ascend
/// device memory without an NPU executor goes to cpu, whose acceptMemory says why it cannot).
AutoPick chooseWithoutGpu(int32_t srcMemory, int32_t dstMemory, bool ascendAvailable);

/// The name of a pick ("kernel", "direct", "staged", "cpu", "kernel_ascend").
const char* autoPickName(AutoPick pick);

/// Parses the calibration file format into *out (starting from the defaults):
///   # comment
///   direct_row_bytes = 256K
///   direct_row_bytes_overlap = 2K
///   direct_copy_bytes_overlap = 32K
///   staged_min_bytes = never
/// One `key = value` per line; values are bytes, an integer with an optional K, M or G suffix
/// (binary), or `never`; keys may be left out (their default stays). INVALID_ARGUMENT naming
/// the line for an unknown key, a repeated key or a bad value. `source` is kept as given.
kvio_status parseAutoCalibration(const std::string& text, const std::string& source,
                                 AutoCalibration* out);

/// Bytes as the calibration file and KVIO_STAGED_BYTES write them: an integer with an optional
/// K, M or G suffix (binary), or `never` (UINT64_MAX). False for anything else.
bool parseBytes(const std::string& text, uint64_t* out);

/// The calibration in the file format (with its source as a comment), for reports.
std::string formatAutoCalibration(const AutoCalibration& calibration);

/// The calibration an auto executor starts with: the file named by KVIO_AUTO_CALIBRATION when
/// set (an unreadable or malformed file is an error), else the defaults. KVIO_AUTO_CALIBRATION
/// =measure gives the defaults and sets *measure (when given): measure on the device first.
kvio_status initialAutoCalibration(AutoCalibration* out, bool* measure = nullptr);

}  // namespace kvio

#endif  // KVIO_CORE_AUTO_CHOICE_HPP_
