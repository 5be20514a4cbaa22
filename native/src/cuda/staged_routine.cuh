// The 'staged' io backend's data path, free of CUDA calls so that native/tests/
// cuda_staged_routine_test.cpp runs it on the host (the chunks built from a plan, every thread
// of every gather/scatter launch replayed, the host copies applied) against the oracle; nvcc
// compiles the per-thread routine into staged_kernel.cu.
//
// A host<->device transfer's plan (the planner's 2-D copies) is cut into chunks that fit the
// executor's device staging buffer. A chunk is a segment table and the data: the segments say
// which device rows go where in the chunk's data (rows of one segment lie dense there, segment
// after segment), and the host runs are the chunk's data as contiguous host byte runs (rows
// whose host addresses abut, in plan order, are one run). A backup (device -> host) gathers the
// device rows into the data with the kernel, then copies each host run from the data to the
// host on the copy engine; a load copies the runs host -> data, then the kernel scatters the
// data to the device rows. Staging buffer of a chunk: [segment table][pad to 256][data].
#ifndef KVIO_CUDA_STAGED_ROUTINE_CUH_
#define KVIO_CUDA_STAGED_ROUTINE_CUH_

#include <algorithm>
#include <cstdint>
#include <vector>

#include "copy_routine.cuh"
#include "kvio/kvio.h"

namespace kvio {
namespace cuda {

/// height rows of width bytes: row r at device + r * devicePitch and at data + staging +
/// r * width. 32 bytes (the table is uploaded as it is).
struct StagedSegment {
  uint64_t device;
  uint64_t devicePitch;
  uint64_t staging;  // offset in the chunk's data
  uint32_t width;
  uint32_t height;
};
static_assert(sizeof(StagedSegment) == 32, "the segment table is uploaded as raw bytes");

/// A contiguous host byte run and where it lies in the chunk's data.
struct StagedHostRun {
  uint64_t host;
  uint64_t staging;
  uint64_t bytes;
};

/// One chunk: its segments and host runs (ranges of StagedPlan's vectors) and data bytes.
struct StagedChunk {
  size_t firstSegment = 0, segments = 0;
  size_t firstRun = 0, runs = 0;
  uint64_t bytes = 0;
};

struct StagedPlan {
  std::vector<StagedSegment> segments;
  std::vector<StagedHostRun> runs;
  std::vector<StagedChunk> chunks;
  uint64_t bytes = 0;
  /// buildStagedPlan's work list: height rows of width bytes, contiguous on the host.
  struct Piece {
    uint64_t device, devicePitch, host, width, height;
  };
  std::vector<Piece> pieces;
};

/// The most bytes one segment moves (longer rows are cut into pieces of a row), so that the
/// segments of a chunk spread over the launch's CTAs.
constexpr uint64_t kStagedSegmentBytes = 64 * 1024;
/// The segment table is followed by the data at this alignment.
constexpr uint64_t kStagedDataAlign = 256;
/// The smallest staging buffer (a segment table entry, the alignment and some data).
constexpr uint64_t kStagedMinBytes = 4 * 1024;

/// Offset of a chunk's data in the staging buffer: after its segment table.
inline uint64_t stagedDataOffset(size_t segments) {
  const uint64_t table = static_cast<uint64_t>(segments) * sizeof(StagedSegment);
  return (table + kStagedDataAlign - 1) / kStagedDataAlign * kStagedDataAlign;
}

/// Cuts a plan into chunks of a staging buffer of stagingBytes (>= kStagedMinBytes): each
/// chunk's table, padding and data fit in it. backup: the plan copies device -> host (the
/// host is the copies' dst), else host -> device. The copies' pieces that are contiguous on the
/// host (a copy whose host rows abut, else each row) are taken in host address order (a
/// transfer's copies write disjoint bytes, so any order gives the same result), so that the host
/// blocks of one page (a page_first_direct page holds all its layers in one block per component)
/// and of consecutive pages become one run whatever order the planner gave them in.
inline void buildStagedPlan(const std::vector<kvio_copy2d>& plan, bool backup,
                            uint64_t stagingBytes, StagedPlan* out) {
  std::vector<StagedPlan::Piece>& pieces = out->pieces;
  pieces.clear();
  // Each copy's pieces contiguous on the host: the whole copy when its host rows abut, else
  // each row.
  const auto forEachPiece = [&plan, backup](auto emit) {
    for (const kvio_copy2d& c : plan) {
      if (c.width == 0 || c.height == 0) continue;
      const uint64_t device = backup ? c.src : c.dst;
      const uint64_t devicePitch = backup ? c.src_pitch : c.dst_pitch;
      const uint64_t host = backup ? c.dst : c.src;
      const uint64_t hostPitch = backup ? c.dst_pitch : c.src_pitch;
      if (hostPitch == c.width || c.height == 1) {
        emit(StagedPlan::Piece{device, devicePitch, host, c.width, c.height});
      } else {
        for (uint64_t r = 0; r < c.height; ++r) {
          emit(StagedPlan::Piece{device + r * devicePitch, 0, host + r * hostPitch, c.width, 1});
        }
      }
    }
  };
  // The pieces, and at least as many segments, counted and reserved first: a plan larger than
  // the storage the executor keeps (recycleStagedPlan) is built from empty vectors, which grown
  // element by element regrew on every submit. (Host runs merge: fewer than the pieces.)
  size_t pieceCount = 0;
  forEachPiece([&pieceCount](const StagedPlan::Piece&) { ++pieceCount; });
  pieces.reserve(pieceCount);
  out->segments.clear();
  out->segments.reserve(pieceCount);
  forEachPiece([&pieces](const StagedPlan::Piece& piece) { pieces.push_back(piece); });
  const auto before = [](const StagedPlan::Piece& a, const StagedPlan::Piece& b) {
    return a.host < b.host;
  };
  if (!std::is_sorted(pieces.begin(), pieces.end(), before)) {  // host order given: no sort
    std::stable_sort(pieces.begin(), pieces.end(), before);
  }
  out->segments.clear();
  out->runs.clear();
  out->chunks.clear();
  out->bytes = 0;
  StagedChunk chunk;
  auto close = [&] {
    if (chunk.bytes > 0) out->chunks.push_back(chunk);
    chunk = StagedChunk();
    chunk.firstSegment = out->segments.size();
    chunk.firstRun = out->runs.size();
  };
  // Data bytes a new segment may still take in this chunk (its table entry counted).
  auto room = [&]() -> uint64_t {
    const uint64_t used = stagedDataOffset(chunk.segments + 1) + chunk.bytes;
    return used >= stagingBytes ? 0 : stagingBytes - used;
  };
  auto addRun = [&](uint64_t host, uint64_t staging, uint64_t bytes) {
    if (chunk.runs > 0) {
      StagedHostRun& last = out->runs.back();
      if (last.host + last.bytes == host && last.staging + last.bytes == staging) {
        last.bytes += bytes;
        return;
      }
    }
    out->runs.push_back({host, staging, bytes});
    ++chunk.runs;
  };
  auto add = [&](uint64_t device, uint64_t devicePitch, uint64_t host, uint64_t hostPitch,
                 uint64_t width, uint64_t height) {
    out->segments.push_back({device, devicePitch, chunk.bytes, static_cast<uint32_t>(width),
                             static_cast<uint32_t>(height)});
    ++chunk.segments;
    for (uint64_t r = 0; r < height; ++r)
      addRun(host + r * hostPitch, chunk.bytes + r * width, width);
    chunk.bytes += width * height;
    out->bytes += width * height;
  };
  for (const StagedPlan::Piece& c : pieces) {
    const uint64_t device = c.device;
    const uint64_t devicePitch = c.devicePitch;
    const uint64_t host = c.host;
    const uint64_t hostPitch = c.width;
    uint64_t r = 0;       // row
    uint64_t offset = 0;  // bytes of row r already taken
    while (r < c.height) {
      const uint64_t space = std::min(room(), kStagedSegmentBytes);
      if (space == 0) {
        close();
        continue;
      }
      if (offset == 0 && c.width <= space) {  // whole rows
        const uint64_t rows = std::min<uint64_t>(c.height - r, space / c.width);
        add(device + r * devicePitch, devicePitch, host + r * hostPitch, hostPitch, c.width, rows);
        r += rows;
      } else {  // a piece of row r
        const uint64_t bytes = std::min(c.width - offset, space);
        add(device + r * devicePitch + offset, 0, host + r * hostPitch + offset, 0, bytes, 1);
        offset += bytes;
        if (offset == c.width) {
          offset = 0;
          ++r;
        }
      }
    }
  }
  close();
}

/// The bytes of all segment tables of a plan, as the executor writes them into pinned memory
/// (StagedPlan::segments as they are); chunk c's table starts stagedTableOffset(c) bytes in.
inline uint64_t stagedTableBytes(const StagedPlan& p) {
  return static_cast<uint64_t>(p.segments.size()) * sizeof(StagedSegment);
}
inline uint64_t stagedTableOffset(const StagedChunk& c) {
  return static_cast<uint64_t>(c.firstSegment) * sizeof(StagedSegment);
}

/// Bytes of storage a plan holds (its vectors' capacities), kept when it is reused.
inline uint64_t stagedPlanStorageBytes(const StagedPlan& p) {
  return p.segments.capacity() * sizeof(StagedSegment) + p.runs.capacity() * sizeof(StagedHostRun) +
         p.chunks.capacity() * sizeof(StagedChunk) +
         p.pieces.capacity() * sizeof(StagedPlan::Piece);
}

/// Makes a used plan ready for reuse: its storage is kept when it holds at most keepBytes,
/// else given up (the plan of one huge transfer is not kept for the small ones after it).
inline void recycleStagedPlan(StagedPlan* p, uint64_t keepBytes) {
  if (stagedPlanStorageBytes(*p) > keepBytes) *p = StagedPlan();
}

/// What one gather or scatter launch reads (the kernel parameter).
struct StagedLaunch {
  const StagedSegment* segments = nullptr;  // device-accessible table
  uint64_t count = 0;
  uint8_t* data = nullptr;  // the chunk's data
  int32_t gather = 1;       // 1: device rows -> data (backup); 0: data -> device rows (load)
};

/// The launch of chunk `c` on a staging buffer at `staging` (device-accessible) whose head holds
/// the chunk's segment table.
inline StagedLaunch stagedChunkLaunch(const StagedChunk& c, uint8_t* staging, bool backup) {
  StagedLaunch launch;
  launch.segments = reinterpret_cast<const StagedSegment*>(staging);
  launch.count = c.segments;
  launch.data = staging + stagedDataOffset(c.segments);
  launch.gather = backup ? 1 : 0;
  return launch;
}

/// The copy-engine copies of chunk `c` (1-D, one per host run) between its data at `data` and
/// the host: data -> host for a backup, host -> data for a load. Replaces *out.
inline void stagedChunkCopies(const StagedPlan& p, const StagedChunk& c, const uint8_t* data,
                              bool backup, std::vector<kvio_copy2d>* out) {
  out->clear();
  out->reserve(c.runs);
  for (size_t r = c.firstRun; r < c.firstRun + c.runs; ++r) {
    const StagedHostRun& run = p.runs[r];
    const uint64_t at = reinterpret_cast<uint64_t>(data) + run.staging;
    out->push_back(backup ? kvio_copy2d{at, run.host, run.bytes, 1, run.bytes, run.bytes}
                          : kvio_copy2d{run.host, at, run.bytes, 1, run.bytes, run.bytes});
  }
}

/// Rows at least this wide are copied by a whole CTA, narrower ones by one warp each.
constexpr uint32_t kStagedBlockRowBytes = 4096;

/// Thread `thread` of CTA `block` (of `blocks`, `threads` threads each, a multiple of 32):
/// segments block, block + blocks, ...; in each, rows of kStagedBlockRowBytes or more are copied
/// by the whole CTA one after another, narrower rows one per warp. Threads write disjoint bytes.
KVIO_HOST_DEVICE inline void runStagedThread(const StagedLaunch& p, int64_t block, int64_t blocks,
                                             int32_t thread, int32_t threads) {
  const int32_t warp = thread / kTileLanes;
  const int32_t warps = threads / kTileLanes;
  const int32_t lane = thread % kTileLanes;
  for (uint64_t s = static_cast<uint64_t>(block); s < p.count; s += static_cast<uint64_t>(blocks)) {
    const StagedSegment g = p.segments[s];
    const bool wide = g.width >= kStagedBlockRowBytes;
    for (uint32_t r = wide ? 0u : static_cast<uint32_t>(warp); r < g.height;
         r += wide ? 1u : static_cast<uint32_t>(warps)) {
      uint8_t* device = reinterpret_cast<uint8_t*>(g.device + r * g.devicePitch);
      uint8_t* staged = p.data + g.staging + static_cast<uint64_t>(r) * g.width;
      uint8_t* to = p.gather != 0 ? staged : device;
      const uint8_t* from = p.gather != 0 ? device : staged;
      if (wide) {
        copySpan(thread, threads, to, from, g.width);
      } else {
        copySpan(lane, kTileLanes, to, from, g.width);
      }
    }
  }
}

}  // namespace cuda
}  // namespace kvio

#endif  // KVIO_CUDA_STAGED_ROUTINE_CUH_
