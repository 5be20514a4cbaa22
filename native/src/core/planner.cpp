// Planner (see planner.hpp). A transfer is enumerated as units: one 2-D copy per
// (index run, layer, component, head group), covering the run's tokens; layers adjacent on
// both sides (page_head, page_first pairs) fold into one wider unit. Units are emitted in two
// nestings and merged as they come; the shorter plan wins. Runs-inside-layers finds per-layer
// copies spanning many pages; layers-inside-runs finds per-page copies spanning all layers and
// heads (page_first_direct pages, the NPU "dim exchange"); when runs differ (long and short
// page runs in one transfer), each group of runs takes the better of the two. Token offsets
// are computed once per run, so a unit costs a few additions.
#include "planner.hpp"

#include <algorithm>
#include <cstdint>

#include "thread_object.hpp"
#include "transfer_scratch.hpp"

namespace kvio {

namespace {

// Calls emit(IndexRun) for each run of the request's pairs, in order.
template <class Emit>
void walkRuns(const PlanRequest& request, Emit emit) {
  const AffineLayout& src = *request.src;
  const AffineLayout& dst = *request.dst;
  const bool srcSeamless = src.pageSeamless();
  const bool dstSeamless = dst.pageSeamless();
  const int64_t* s = request.srcIndices;
  const int64_t* d = request.dstIndices;
  int64_t start = 0;
  for (int64_t i = 0; i < request.count; ++i) {
    const bool last = i + 1 == request.count;
    const bool continues = !last && s[i + 1] == s[i] + 1 && d[i + 1] == d[i] + 1 &&
                           (srcSeamless || (s[i] + 1) % src.pageSize != 0) &&
                           (dstSeamless || (d[i] + 1) % dst.pageSize != 0);
    if (!continues) {
      emit(IndexRun{s[start], d[start], i + 1 - start, start});
      start = i + 1;
    }
  }
}

}  // namespace

void splitRuns(const PlanRequest& request, std::vector<IndexRun>* runs) {
  runs->clear();
  // The runs' storage is reserved before the first is written: grown run by run, the runs of a
  // transfer of many scattered pairs were reallocated about twenty times, each time into fresh
  // pages (runs of more than 1 MiB are not kept between submits: transfer_scratch.hpp), which
  // made submit's checks of 65536 scattered pairs take 218 ns a pair on the 2-vCPU VM, against
  // 8 ns reserved (docs/benchmarks.md). Up to the storage a thread keeps, one run per pair is
  // reserved; beyond, the runs are counted first, so that a long contiguous transfer does not
  // reserve 32 bytes per pair for a few runs.
  const auto pairs = static_cast<size_t>(request.count);
  if (pairs <= kRetainedIndexRunBytes / sizeof(IndexRun)) {
    runs->reserve(pairs);
  } else {
    size_t count = 0;
    walkRuns(request, [&count](const IndexRun&) { ++count; });
    runs->reserve(count);
  }
  walkRuns(request, [runs](const IndexRun& run) { runs->push_back(run); });
}

namespace {

// Merges `u` into `c` when the two are contiguous on both sides or `u` continues c's rows at a
// constant pitch; returns false when `u` must start a new copy.
bool mergeInto(kvio_copy2d& c, const kvio_copy2d& u) {
  if (c.height == 1 && u.height == 1) {
    if (u.src == c.src + c.width && u.dst == c.dst + c.width) {  // contiguous on both sides
      c.width += u.width;
      c.src_pitch = c.width;  // a row's pitches are its width: a 2-D call takes it as it is
      c.dst_pitch = c.width;
      return true;
    }
    if (u.width == c.width && u.src >= c.src + c.width && u.dst >= c.dst + c.width) {
      c.height = 2;  // two rows at a constant pitch
      c.src_pitch = u.src - c.src;
      c.dst_pitch = u.dst - c.dst;
      return true;
    }
  } else if (u.width == c.width && c.height >= 2) {
    const bool samePitch =
        u.height == 1 || (u.src_pitch == c.src_pitch && u.dst_pitch == c.dst_pitch);
    if (samePitch && u.src == c.src + c.height * c.src_pitch &&
        u.dst == c.dst + c.height * c.dst_pitch) {
      c.height += u.height;
      return true;
    }
  } else if (u.width == c.width && c.height == 1 && u.height >= 2) {
    if (u.src == c.src + u.src_pitch && u.dst == c.dst + u.dst_pitch) {
      c.height = u.height + 1;
      c.src_pitch = u.src_pitch;
      c.dst_pitch = u.dst_pitch;
      return true;
    }
  }
  return false;
}

// Counts the copies a unit sequence coalesces into, keeping only the last one. With a limit,
// counting may stop once the count exceeds it (the nesting has lost; its exact count is moot).
class CopyCounter {
 public:
  explicit CopyCounter(size_t limit = SIZE_MAX) : limit_(limit) {}
  void add(const kvio_copy2d& u) {
    if (count_ == 0 || !mergeInto(last_, u)) {
      last_ = u;
      ++count_;
    }
  }
  bool full() const { return count_ > limit_; }
  size_t count() const { return count_; }

 private:
  kvio_copy2d last_{};
  size_t count_ = 0;
  size_t limit_;
};

// Appends coalesced copies to a plan.
class PlanWriter {
 public:
  explicit PlanWriter(std::vector<kvio_copy2d>* plan) : plan_(plan) {}
  void add(const kvio_copy2d& u) { appendCoalesced(plan_, u); }
  static constexpr bool full() { return false; }

 private:
  std::vector<kvio_copy2d>* plan_;
};

}  // namespace

void appendCoalesced(std::vector<kvio_copy2d>* plan, const kvio_copy2d& u) {
  if (plan->empty() || !mergeInto(plan->back(), u)) plan->push_back(u);
}

namespace {

// What one unit covers: `width` bytes per token; `headGroups` units per token (1 when heads
// are adjacent on both sides, else one per head); `layerGroups` units per token and head
// (1 when the layers of the map are adjacent on both sides and fold into one wider unit).
struct UnitShape {
  int64_t headGroups;
  int64_t layerGroups;
  uint64_t width;
};

// Token offsets of a run's first slot on both sides, computed once per run.
struct RunOffsets {
  uint64_t src;
  uint64_t dst;
  uint64_t tokens;
};

// Scratch reused by the calling thread's plans (no allocation per transfer), each vector bounded
// when the plan is made (transfer_scratch.hpp); reached through ThreadScratch, which stays safe
// while the thread exits (thread_object.hpp).
struct PlanScratch {
  std::vector<RunOffsets> runOffsets;
  std::vector<size_t> runGroups;       // start of each group, then all runs
  std::vector<uint8_t> groupPerLayer;  // per group: 1 = nesting 1
};

// True when, for every component, layer l+1 of the map starts `width` bytes after layer l.
bool layersAdjacent(const AffineLayout& a, int64_t start, int64_t count, uint64_t width) {
  for (int32_t c = 0; c < a.components; ++c) {
    const uint64_t* base = a.layerBase + a.layerIndex(c, start);
    for (int64_t l = 0; l + 1 < count; ++l) {
      if (base[l + 1] - base[l] != width) return false;
    }
  }
  return true;
}

// True when, for every component, the bases of the map's layers advance by a constant step.
bool layersAffine(const AffineLayout& a, int64_t start, int64_t count) {
  for (int32_t c = 0; c < a.components; ++c) {
    const uint64_t* base = a.layerBase + a.layerIndex(c, start);
    for (int64_t l = 1; l + 1 < count; ++l) {
      if (base[l + 1] - base[l] != base[1] - base[0]) return false;
    }
  }
  return true;
}

class UnitEmitter {
 public:
  UnitEmitter(const PlanRequest& r, const UnitShape& shape)
      : r_(r),
        shape_(shape),
        srcPitch_(static_cast<uint64_t>(r.src->strideS)),
        dstPitch_(static_cast<uint64_t>(r.dst->strideS)),
        contiguous_(srcPitch_ == shape.width && dstPitch_ == shape.width) {}

  kvio_copy2d unit(const RunOffsets& run, int32_t c, int64_t l, int64_t h) const {
    const AffineLayout& src = *r_.src;
    const AffineLayout& dst = *r_.dst;
    kvio_copy2d u;
    u.src = src.rowAddress(c, r_.srcLayerStart + l, run.src, h);
    u.dst = dst.rowAddress(c, r_.dstLayerStart + l, run.dst, h);
    if (run.tokens == 1 || contiguous_) {
      u.width = shape_.width * run.tokens;
      u.height = 1;
      u.src_pitch = u.width;
      u.dst_pitch = u.width;
    } else {
      u.width = shape_.width;
      u.height = run.tokens;
      u.src_pitch = srcPitch_;
      u.dst_pitch = dstPitch_;
    }
    return u;
  }

 private:
  const PlanRequest& r_;
  const UnitShape shape_;
  const uint64_t srcPitch_;
  const uint64_t dstPitch_;
  const bool contiguous_;
};

}  // namespace

void planTransfer(const PlanRequest& r, const std::vector<IndexRun>& runs,
                  std::vector<kvio_copy2d>* plan) {
  plan->clear();
  const AffineLayout& src = *r.src;
  const AffineLayout& dst = *r.dst;
  const CopyUnit unit = copyUnit(src, dst);
  UnitShape shape{unit.heads, r.numLayers, static_cast<uint64_t>(unit.bytes)};
  if (r.numLayers > 1 && layersAdjacent(src, r.srcLayerStart, r.numLayers, shape.width) &&
      layersAdjacent(dst, r.dstLayerStart, r.numLayers, shape.width)) {
    shape.width *= static_cast<uint64_t>(r.numLayers);  // e.g. page_head or page_first pairs
    shape.layerGroups = 1;
  }
  const ThreadScratch<PlanScratch, PlanScratch> scratch;
  std::vector<RunOffsets>& offsets = scratch->runOffsets;
  const BoundOnExit<RunOffsets> boundOffsets(&offsets, kRetainedScratchBytes);
  const BoundOnExit<size_t> boundGroups(&scratch->runGroups, kRetainedScratchBytes);
  const BoundOnExit<uint8_t> boundPerLayer(&scratch->groupPerLayer, kRetainedScratchBytes);
  offsets.clear();
  offsets.reserve(runs.size());  // at once (splitRuns says why)
  for (const IndexRun& run : runs) {
    offsets.push_back(RunOffsets{static_cast<uint64_t>(src.tokenOffset(run.src)),
                                 static_cast<uint64_t>(dst.tokenOffset(run.dst)),
                                 static_cast<uint64_t>(run.length)});
  }
  const UnitEmitter emit(r, shape);
  const int32_t components = src.components;

  // Nesting 1: component, head group, layer, run: per-layer copies spanning many runs.
  const auto runsInsideLayers = [&](auto& sink, size_t first, size_t last) {
    for (int32_t c = 0; c < components; ++c)
      for (int64_t h = 0; h < shape.headGroups; ++h)
        for (int64_t l = 0; l < shape.layerGroups; ++l)
          for (size_t k = first; k < last; ++k) {
            sink.add(emit.unit(offsets[k], c, l, h));
            if (sink.full()) return;
          }
  };
  // Nesting 2: component, run, head group, layer: per-run copies spanning layers and heads.
  const auto layersInsideRuns = [&](auto& sink, size_t first, size_t last) {
    for (int32_t c = 0; c < components; ++c)
      for (size_t k = first; k < last; ++k)
        for (int64_t h = 0; h < shape.headGroups; ++h)
          for (int64_t l = 0; l < shape.layerGroups; ++l) sink.add(emit.unit(offsets[k], c, l, h));
  };
  // Layers-inside-runs can only merge across layers whose bases advance by a constant step on
  // both sides (one buffer per component), or across heads when layers are folded. Otherwise
  // (per-layer pointer tables) it cannot beat runs-inside-layers: write that one directly.
  const bool layersMayMerge = shape.layerGroups > 1 &&
                              layersAffine(src, r.srcLayerStart, r.numLayers) &&
                              layersAffine(dst, r.dstLayerStart, r.numLayers);
  const bool headsMayMerge = shape.layerGroups == 1 && shape.headGroups > 1;
  PlanWriter writer(plan);
  const size_t all = offsets.size();
  if (!layersMayMerge && !headsMayMerge) {
    // At most one copy per unit. When the plan's storage may be too small, the copies are
    // counted first and reserved: grown copy by copy, a plan larger than the storage kept
    // between transfers (executor.cpp) regrew on every submit (65536 scattered pairs over 16
    // per-layer tensors: 4.6 us a pair).
    const uint64_t units = static_cast<uint64_t>(all) * static_cast<uint64_t>(components) *
                           static_cast<uint64_t>(shape.headGroups) *
                           static_cast<uint64_t>(shape.layerGroups);
    if (units > plan->capacity()) {
      CopyCounter count;
      runsInsideLayers(count, 0, all);
      plan->reserve(count.count());
    }
    runsInsideLayers(writer, 0, all);
    return;
  }
  // Count both (cheap: no allocation), then write the shorter one once, at its exact size.
  // Runs-inside-layers is counted second and stops once it has lost (scattered rows: it would
  // count one copy per row and layer where layers-inside-runs folds the layers).
  CopyCounter second;
  layersInsideRuns(second, 0, all);
  CopyCounter first(second.count());
  runsInsideLayers(first, 0, all);
  // Nesting 3, per group of runs: runs that continue each other slot by slot on both sides
  // (consecutive pages of a side whose pages are not seamless, e.g. page_first_direct) form a
  // group, and each group takes the shorter nesting of its own. Several page runs of a dim
  // exchange then cost the sum over runs of min(pages, layers) copies per component, where
  // either nesting alone costs more.
  std::vector<size_t>& groups = scratch->runGroups;               // start of each group, then `all`
  std::vector<uint8_t>& perLayerCopies = scratch->groupPerLayer;  // per group: 1 = nesting 1
  groups.clear();
  groups.reserve(all + 1);
  perLayerCopies.clear();
  for (size_t k = 0; k < all; ++k) {
    const bool continues = k > 0 && runs[k].src == runs[k - 1].src + runs[k - 1].length &&
                           runs[k].dst == runs[k - 1].dst + runs[k - 1].length;
    if (!continues) groups.push_back(k);
  }
  groups.push_back(all);
  size_t third = 0;
  // Only when some group joins several runs: otherwise a group is a run, and the two nestings
  // above already saw every run (and counting again would double the planning cost).
  if (groups.size() > 2 && groups.size() - 1 < all) {
    for (size_t g = 0; g + 1 < groups.size(); ++g) {
      CopyCounter a, b;
      runsInsideLayers(a, groups[g], groups[g + 1]);
      layersInsideRuns(b, groups[g], groups[g + 1]);
      perLayerCopies.push_back(a.count() <= b.count() ? 1 : 0);
      third += std::min(a.count(), b.count());
    }
  }
  if (!perLayerCopies.empty() && third < first.count() && third < second.count()) {
    plan->reserve(third);
    for (size_t g = 0; g + 1 < groups.size(); ++g) {
      if (perLayerCopies[g] != 0) {
        runsInsideLayers(writer, groups[g], groups[g + 1]);
      } else {
        layersInsideRuns(writer, groups[g], groups[g + 1]);
      }
    }
  } else if (first.count() <= second.count()) {
    plan->reserve(first.count());
    runsInsideLayers(writer, 0, all);
  } else {
    plan->reserve(second.count());
    layersInsideRuns(writer, 0, all);
  }
}

size_t retainedPlanScratchBytes() {
  const PlanScratch* s = ThreadObject<PlanScratch, PlanScratch>::existing();
  if (s == nullptr) return 0;
  return s->runOffsets.capacity() * sizeof(RunOffsets) + s->runGroups.capacity() * sizeof(size_t) +
         s->groupPerLayer.capacity() * sizeof(uint8_t);
}

uint64_t planBytes(const std::vector<kvio_copy2d>& plan) {
  uint64_t total = 0;
  for (const kvio_copy2d& c : plan) total += copyBytes(c);
  return total;
}

uint64_t planRowBound(const PlanRequest& request, const std::vector<IndexRun>& runs) {
  // Runs that continue each other slot by slot on both sides (split at page ends where a side
  // is not page-seamless) can merge back into one row: count them as one, as nesting 3 groups
  // them.
  int64_t longest = 0, group = 0;
  for (size_t k = 0; k < runs.size(); ++k) {
    const bool continues = k > 0 && runs[k].src == runs[k - 1].src + runs[k - 1].length &&
                           runs[k].dst == runs[k - 1].dst + runs[k - 1].length;
    group = continues ? group + runs[k].length : runs[k].length;
    longest = std::max(longest, group);
  }
  // At most the whole request's bytes, which a valid pool holds: no overflow.
  return request.src->transferBytes(longest, request.numLayers);
}

}  // namespace kvio
