// Transfer validation (see validate.hpp). Every message names the argument, the bad value
// and the valid range.
#include "validate.hpp"

#include <algorithm>
#include <cstdint>
#include <string>

#include "diagnostics.hpp"
#include "error.hpp"
#include "thread_object.hpp"
#include "transfer_scratch.hpp"

namespace kvio {
namespace {

const char* kindName(int32_t kind) {
  return kind == KVIO_KIND_MHA ? "mha" : "mla";
}

kvio_status checkLayers(const char* side, const PoolImpl& pool, int64_t start, int64_t count) {
  if (start < 0 || start > pool.spec.num_layers - count) {
    // The range's end as a number, or as a sum where it is past int64 (a capped end would
    // make the range read as empty). count >= 1 here, so only a positive start can overflow.
    const bool pastInt64 = start > 0 && count > INT64_MAX - start;
    const std::string range = "[" + std::to_string(start) + ", " +
                              (pastInt64 ? std::to_string(start) + " + " + std::to_string(count)
                                         : std::to_string(start + count)) +
                              ")";
    return fail(KVIO_STATUS_OUT_OF_RANGE,
                "%s layer range %s is outside the %s pool's %lld layers (valid: "
                "%s_layer_start >= 0 and %s_layer_start + num_layers <= %lld)",
                side, range.c_str(), side, static_cast<long long>(pool.spec.num_layers), side, side,
                static_cast<long long>(pool.spec.num_layers));
  }
  return KVIO_STATUS_OK;
}

kvio_status checkIndices(const char* side, const int64_t* indices, int64_t count, int64_t tokens) {
  for (int64_t i = 0; i < count; ++i) {
    if (indices[i] < 0 || indices[i] >= tokens) {
      return fail(KVIO_STATUS_OUT_OF_RANGE,
                  "%s_indices[%lld] = %lld is out of range: the %s pool has %lld token slots "
                  "(valid: 0 to %lld)",
                  side, static_cast<long long>(i), static_cast<long long>(indices[i]), side,
                  static_cast<long long>(tokens), static_cast<long long>(tokens - 1));
    }
  }
  return KVIO_STATUS_OK;
}

struct Interval {
  int64_t start;
  int64_t length;
  int64_t position;  // index of the interval's first pair
};

// Scratch reused by the calling thread's transfers (no allocation per transfer), each vector
// bounded when the check that used it returns (transfer_scratch.hpp); reached through
// ThreadScratch, which stays safe while the thread exits (thread_object.hpp).
struct ValidationScratch {
  std::vector<uint64_t> seenSlots;          // the duplicate check's bitmap of destination slots
  std::vector<MemoryRegion> sortedRegions;  // the overlap check's source regions
  std::vector<size_t> furthestRegion;
  std::vector<Interval> dstIntervals;  // the index runs as byte intervals
  std::vector<Interval> srcIntervals;
};
using Scratch = ThreadScratch<ValidationScratch, ValidationScratch>;

// Fills `out` (reused across calls) with the runs' slot intervals on one side, sorted.
void intervals(const std::vector<IndexRun>& runs, bool destination, std::vector<Interval>* out) {
  out->clear();
  out->reserve(runs.size());  // at once (splitRuns, planner.cpp, says why)
  for (const IndexRun& r : runs)
    out->push_back({destination ? r.dst : r.src, r.length, r.position});
  const auto before = [](const Interval& a, const Interval& b) { return a.start < b.start; };
  // Slots given in ascending order (as an allocator often hands them out) need no sort.
  if (!std::is_sorted(out->begin(), out->end(), before)) {
    std::sort(out->begin(), out->end(), before);
  }
}

kvio_status duplicateSlot(int64_t slot, int64_t first, int64_t second) {
  return fail(KVIO_STATUS_INVALID_ARGUMENT,
              "dst_indices has duplicate destination slot %lld (at dst_indices[%lld] and "
              "dst_indices[%lld]); each destination slot may be written once per transfer",
              static_cast<long long>(slot), static_cast<long long>(std::min(first, second)),
              static_cast<long long>(std::max(first, second)));
}

kvio_status checkDuplicates(const std::vector<Interval>& sorted) {
  const Interval* widest = nullptr;  // interval reaching furthest so far
  for (const Interval& cur : sorted) {
    if (widest != nullptr && widest->start + widest->length > cur.start) {
      return duplicateSlot(cur.start, widest->position + (cur.start - widest->start), cur.position);
    }
    if (widest == nullptr || cur.start + cur.length > widest->start + widest->length) widest = &cur;
  }
  return KVIO_STATUS_OK;
}

// The same check with one bit per destination slot, in index order: O(pairs + slots / 64)
// instead of sorting the runs, for pools not much larger than the transfer.
bool bitmapIsCheaper(int64_t slots, int64_t pairs) {
  return slots / 64 <= 4 * pairs + 1024;
}

kvio_status checkDuplicatesWithBitmap(const std::vector<IndexRun>& runs, int64_t slots) {
  const Scratch scratch;
  std::vector<uint64_t>& seen = scratch->seenSlots;
  const BoundOnExit<uint64_t> bound(&seen, kRetainedScratchBytes);
  seen.assign(static_cast<size_t>((slots + 63) / 64), 0);
  for (size_t k = 0; k < runs.size(); ++k) {
    const IndexRun& r = runs[k];
    for (int64_t i = 0; i < r.length; ++i) {
      const uint64_t slot = static_cast<uint64_t>(r.dst + i);
      uint64_t& word = seen[slot >> 6];
      const uint64_t bit = uint64_t{1} << (slot & 63);
      if ((word & bit) != 0) {
        for (size_t j = 0; j < k; ++j) {  // the earlier pair that wrote it (error path only)
          if (runs[j].dst <= r.dst + i && r.dst + i < runs[j].dst + runs[j].length) {
            return duplicateSlot(r.dst + i, runs[j].position + (r.dst + i - runs[j].dst),
                                 r.position + i);
          }
        }
      }
      word |= bit;
    }
  }
  return KVIO_STATUS_OK;
}

kvio_status checkOverlap(const std::vector<Interval>& src, const std::vector<Interval>& dst) {
  size_t i = 0, j = 0;
  while (i < src.size() && j < dst.size()) {
    const Interval& a = src[i];
    const Interval& b = dst[j];
    const int64_t lo = std::max(a.start, b.start);
    if (lo < a.start + a.length && lo < b.start + b.length) {
      return fail(KVIO_STATUS_INVALID_ARGUMENT,
                  "source and destination overlap: slot %lld is read (src_indices[%lld]) and "
                  "written (dst_indices[%lld]) in the same layers of the same pool",
                  static_cast<long long>(lo), static_cast<long long>(a.position + (lo - a.start)),
                  static_cast<long long>(b.position + (lo - b.start)));
    }
    if (a.start + a.length <= b.start + b.length)
      ++i;
    else
      ++j;
  }
  return KVIO_STATUS_OK;
}

// Two distinct pools may wrap the same memory (two views of one buffer). The slot overlap
// check above only knows one pool, so a transfer between aliasing pools is refused outright:
// its reads could see bytes it has already written. Every host kind (pageable, pinned by CUDA,
// pinned by ACL, whatever its device) is the process's one address space; device memory is
// compared only within the same kind and device.
bool sameAddressSpace(const PoolImpl& a, const PoolImpl& b) {
  const bool aHost = !isDeviceMemory(a.memoryKind);
  const bool bHost = !isDeviceMemory(b.memoryKind);
  if (aHost || bHost) return aHost && bHost;
  return a.memoryKind == b.memoryKind && a.device == b.device;
}

// Bounding [lo, hi) of a pool's regions; regions never wrap (checked when the pool is made).
void bounds(const PoolImpl& pool, uint64_t* lo, uint64_t* hi) {
  *lo = UINT64_MAX;
  *hi = 0;
  for (const MemoryRegion& r : pool.regions) {
    *lo = std::min(*lo, r.address);
    *hi = std::max(*hi, r.address + r.bytes);
  }
}

kvio_status checkAliasing(const PoolImpl& src, const PoolImpl& dst) {
  if (&src == &dst || !sameAddressSpace(src, dst)) return KVIO_STATUS_OK;
  uint64_t srcLo, srcHi, dstLo, dstHi;
  bounds(src, &srcLo, &srcHi);
  bounds(dst, &dstLo, &dstHi);
  if (srcHi <= dstLo || dstHi <= srcLo) return KVIO_STATUS_OK;  // the common case
  // Source regions sorted by start, with the region reaching furthest among each prefix: a
  // destination region [a, b) overlaps some source region iff, among the source regions that
  // start before b, the one reaching furthest ends after a.
  const Scratch scratch;
  std::vector<MemoryRegion>& sorted = scratch->sortedRegions;
  std::vector<size_t>& furthest = scratch->furthestRegion;
  const BoundOnExit<MemoryRegion> boundSorted(&sorted, kRetainedScratchBytes);
  const BoundOnExit<size_t> boundFurthest(&furthest, kRetainedScratchBytes);
  sorted.clear();
  for (const MemoryRegion& r : src.regions)
    if (r.bytes > 0) sorted.push_back(r);
  std::sort(sorted.begin(), sorted.end(),
            [](const MemoryRegion& a, const MemoryRegion& b) { return a.address < b.address; });
  furthest.resize(sorted.size());
  for (size_t i = 0; i < sorted.size(); ++i) {
    const bool longer =
        i == 0 || sorted[i].address + sorted[i].bytes >
                      sorted[furthest[i - 1]].address + sorted[furthest[i - 1]].bytes;
    furthest[i] = longer ? i : furthest[i - 1];
  }
  for (const MemoryRegion& d : dst.regions) {
    if (d.bytes == 0) continue;
    const uint64_t end = d.address + d.bytes;
    const size_t before = static_cast<size_t>(
        std::lower_bound(sorted.begin(), sorted.end(), end,
                         [](const MemoryRegion& r, uint64_t e) { return r.address < e; }) -
        sorted.begin());
    if (before == 0) continue;
    const MemoryRegion& s = sorted[furthest[before - 1]];
    if (s.address + s.bytes > d.address) {
      return fail(KVIO_STATUS_INVALID_ARGUMENT,
                  "the source and destination pools share memory (address 0x%llx is in both); a "
                  "transfer between two pools that wrap the same memory could read bytes it has "
                  "already written: use one pool for both sides (kvio then checks that the slots "
                  "do not overlap) or pools over disjoint memory",
                  static_cast<unsigned long long>(std::max(s.address, d.address)));
    }
  }
  return KVIO_STATUS_OK;
}

kvio_status validateTransferShape(const PoolImpl& src, const PoolImpl& dst,
                                  const kvio_transfer_desc& d) {
  if (d.num_indices < 1) {
    return fail(KVIO_STATUS_INVALID_ARGUMENT,
                "num_indices must be at least 1, got %lld (an empty transfer is a caller bug)",
                static_cast<long long>(d.num_indices));
  }
  if (d.src_indices == nullptr || d.dst_indices == nullptr) {
    return fail(KVIO_STATUS_INVALID_ARGUMENT, "%s is null",
                d.src_indices == nullptr ? "src_indices" : "dst_indices");
  }
  // Each destination slot is written once per transfer, so no valid transfer has more pairs
  // than the dst pool has slots: refused before the index arrays are read, since a count
  // longer than the caller's arrays would read past them.
  if (d.num_indices > dst.tokens()) {
    return fail(
        KVIO_STATUS_INVALID_ARGUMENT,
        "%lld index pairs are more than the %lld token slots of the dst pool: each destination "
        "slot may be written once per transfer, so a transfer has at most %lld pairs "
        "(num_indices, the length of src_indices and of dst_indices)",
        static_cast<long long>(d.num_indices), static_cast<long long>(dst.tokens()),
        static_cast<long long>(dst.tokens()));
  }
  return validateTransferPools(src, dst, d);
}

}  // namespace

kvio_status validateTransferPools(const PoolImpl& src, const PoolImpl& dst,
                                  const kvio_transfer_desc& d) {
  if (src.spec.kind != dst.spec.kind) {
    return fail(KVIO_STATUS_INVALID_ARGUMENT,
                "the src pool is %s and the dst pool is %s; both must be the same kind",
                kindName(src.spec.kind), kindName(dst.spec.kind));
  }
  if (src.spec.head_num != dst.spec.head_num || src.spec.head_bytes != dst.spec.head_bytes) {
    return fail(
        KVIO_STATUS_INVALID_ARGUMENT,
        "row geometry differs: the src pool's rows are %lld heads x %lld bytes, the dst pool's "
        "rows are %lld heads x %lld bytes; both pools must have the same head_num and "
        "head_bytes",
        static_cast<long long>(src.spec.head_num), static_cast<long long>(src.spec.head_bytes),
        static_cast<long long>(dst.spec.head_num), static_cast<long long>(dst.spec.head_bytes));
  }
  if (d.num_layers < 1) {
    return fail(KVIO_STATUS_INVALID_ARGUMENT, "num_layers must be at least 1, got %lld",
                static_cast<long long>(d.num_layers));
  }
  KVIO_RETURN_IF_ERROR(checkLayers("src", src, d.src_layer_start, d.num_layers));
  KVIO_RETURN_IF_ERROR(checkLayers("dst", dst, d.dst_layer_start, d.num_layers));
  return checkAliasing(src, dst);
}

kvio_status checkRunsInPools(const std::vector<IndexRun>& runs, int64_t srcTokens,
                             int64_t dstTokens) {
  for (const IndexRun& run : runs) {
    const int64_t ends[2] = {run.src, run.dst};
    const int64_t tokens[2] = {srcTokens, dstTokens};
    for (int side = 0; side < 2; ++side) {
      if (ends[side] < 0 || ends[side] >= tokens[side] || run.length > tokens[side] - ends[side]) {
        return fail(KVIO_STATUS_OUT_OF_RANGE,
                    "%s_indices[%lld] = %lld starts %lld consecutive slots, past the %s pool's "
                    "%lld token slots, though every index was in range when checked: the index "
                    "arrays changed during the submit (they must not change until it returns)",
                    side == 0 ? "src" : "dst", static_cast<long long>(run.position),
                    static_cast<long long>(ends[side]), static_cast<long long>(run.length),
                    side == 0 ? "source" : "destination", static_cast<long long>(tokens[side]));
      }
    }
  }
  return KVIO_STATUS_OK;
}

namespace {
// Whether a transfer's source and destination layer ranges share a layer.
bool layersOverlap(const kvio_transfer_desc& d) {
  return d.src_layer_start < d.dst_layer_start + d.num_layers &&
         d.dst_layer_start < d.src_layer_start + d.num_layers;
}
}  // namespace

kvio_status validateDeviceTransfer(const PoolImpl& src, const PoolImpl& dst,
                                   const kvio_transfer_desc& d) {
  return validateTransferShape(src, dst, d);
}

kvio_status validateTransfer(const PoolImpl& src, const PoolImpl& dst, const kvio_transfer_desc& d,
                             PlanRequest* request, std::vector<IndexRun>* runs) {
  KVIO_RETURN_IF_ERROR(validateTransferShape(src, dst, d));
  KVIO_RETURN_IF_ERROR(checkIndices("src", d.src_indices, d.num_indices, src.tokens()));
  KVIO_RETURN_IF_ERROR(checkIndices("dst", d.dst_indices, d.num_indices, dst.tokens()));
#if KVIO_TESTING
  rewriteAfterIndexCheck();  // test only: as if the caller changed its arrays just now
#endif

  request->src = &src.layout;
  request->dst = &dst.layout;
  request->srcIndices = d.src_indices;
  request->dstIndices = d.dst_indices;
  request->count = d.num_indices;
  request->srcLayerStart = d.src_layer_start;
  request->dstLayerStart = d.dst_layer_start;
  request->numLayers = d.num_layers;
  splitRuns(*request, runs);
  // The runs, not the arrays, are what the planner and the checks below use: the arrays are read
  // again to make them, and a caller changing them meanwhile (its own data race) must not get
  // rows outside the pools.
  KVIO_RETURN_IF_ERROR(checkRunsInPools(*runs, src.tokens(), dst.tokens()));

  const Scratch scratch;
  std::vector<Interval>& dstIntervals = scratch->dstIntervals;
  std::vector<Interval>& srcIntervals = scratch->srcIntervals;
  const BoundOnExit<Interval> boundDst(&dstIntervals, kRetainedScratchBytes);
  const BoundOnExit<Interval> boundSrc(&srcIntervals, kRetainedScratchBytes);
  const bool samePool = &src == &dst && layersOverlap(d);
  if (!samePool && bitmapIsCheaper(dst.tokens(), d.num_indices)) {
    return checkDuplicatesWithBitmap(*runs, dst.tokens());
  }
  intervals(*runs, true, &dstIntervals);
  KVIO_RETURN_IF_ERROR(checkDuplicates(dstIntervals));
  if (samePool) {
    intervals(*runs, false, &srcIntervals);
    KVIO_RETURN_IF_ERROR(checkOverlap(srcIntervals, dstIntervals));
  }
  return KVIO_STATUS_OK;
}

size_t retainedValidationScratchBytes() {
  const ValidationScratch* s = ThreadObject<ValidationScratch, ValidationScratch>::existing();
  if (s == nullptr) return 0;
  return s->seenSlots.capacity() * sizeof(uint64_t) +
         s->sortedRegions.capacity() * sizeof(MemoryRegion) +
         s->furthestRegion.capacity() * sizeof(size_t) +
         (s->dstIntervals.capacity() + s->srcIntervals.capacity()) * sizeof(Interval);
}

}  // namespace kvio
