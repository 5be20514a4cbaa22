// Planner (see planner.hpp). A transfer is enumerated as units: one 2-D copy per
// (index run, layer pair, component, head group), each unit covering the run's tokens. Units
// are emitted in two nestings, layers-inside-runs and runs-inside-layers, and merged as they
// come; the shorter plan wins. Layers-inside-runs finds per-page copies spanning all layers
// (page_first_direct pages, the Ascend "dim exchange"); runs-inside-layers finds per-layer
// copies spanning many pages.
#include "planner.hpp"

namespace kvio {

void splitRuns(const PlanRequest& request, std::vector<IndexRun>* runs) {
  runs->clear();
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
      runs->push_back(IndexRun{s[start], d[start], i + 1 - start, start});
      start = i + 1;
    }
  }
}

void appendCoalesced(std::vector<kvio_copy2d>* plan, const kvio_copy2d& u) {
  if (!plan->empty()) {
    kvio_copy2d& c = plan->back();
    if (c.height == 1 && u.height == 1) {
      if (u.src == c.src + c.width && u.dst == c.dst + c.width) {  // contiguous on both sides
        c.width += u.width;
        return;
      }
      if (u.width == c.width && u.src >= c.src + c.width && u.dst >= c.dst + c.width) {
        c.height = 2;  // two rows at a constant pitch
        c.src_pitch = u.src - c.src;
        c.dst_pitch = u.dst - c.dst;
        return;
      }
    } else if (u.width == c.width && c.height >= 2) {
      const bool samePitch =
          u.height == 1 || (u.src_pitch == c.src_pitch && u.dst_pitch == c.dst_pitch);
      if (samePitch && u.src == c.src + c.height * c.src_pitch &&
          u.dst == c.dst + c.height * c.dst_pitch) {
        c.height += u.height;
        return;
      }
    } else if (u.width == c.width && c.height == 1 && u.height >= 2) {
      if (u.src == c.src + u.src_pitch && u.dst == c.dst + u.dst_pitch) {
        c.height = u.height + 1;
        c.src_pitch = u.src_pitch;
        c.dst_pitch = u.dst_pitch;
        return;
      }
    }
  }
  plan->push_back(u);
}

namespace {

struct UnitShape {
  int64_t headGroups;  // 1 when heads are adjacent on both sides, else head_num
  uint64_t width;      // bytes per token of one unit
};

kvio_copy2d unitCopy(const PlanRequest& r, const UnitShape& shape, const IndexRun& run,
                     int32_t component, int64_t layer, int64_t head) {
  const AffineLayout& src = *r.src;
  const AffineLayout& dst = *r.dst;
  kvio_copy2d u;
  u.src = src.address(component, r.srcLayerStart + layer, run.src, head);
  u.dst = dst.address(component, r.dstLayerStart + layer, run.dst, head);
  const uint64_t srcPitch = static_cast<uint64_t>(src.strideS);
  const uint64_t dstPitch = static_cast<uint64_t>(dst.strideS);
  const uint64_t tokens = static_cast<uint64_t>(run.length);
  if (tokens == 1 || (srcPitch == shape.width && dstPitch == shape.width)) {
    u.width = shape.width * tokens;
    u.height = 1;
    u.src_pitch = u.width;
    u.dst_pitch = u.width;
  } else {
    u.width = shape.width;
    u.height = tokens;
    u.src_pitch = srcPitch;
    u.dst_pitch = dstPitch;
  }
  return u;
}

}  // namespace

void planTransfer(const PlanRequest& r, const std::vector<IndexRun>& runs,
                  std::vector<kvio_copy2d>* plan) {
  plan->clear();
  const AffineLayout& src = *r.src;
  const bool adjacent = src.headsAdjacent() && r.dst->headsAdjacent();
  const UnitShape shape{adjacent ? 1 : src.headNum,
                        static_cast<uint64_t>(adjacent ? src.rowBytes() : src.headBytes)};
  const int32_t components = src.components;

  // Nesting 1: component, head group, layer, run.
  for (int32_t c = 0; c < components; ++c)
    for (int64_t h = 0; h < shape.headGroups; ++h)
      for (int64_t l = 0; l < r.numLayers; ++l)
        for (const IndexRun& run : runs) appendCoalesced(plan, unitCopy(r, shape, run, c, l, h));
  if (plan->size() <= static_cast<size_t>(components) || r.numLayers == 1) return;

  // Nesting 2: component, head group, run, layer.
  std::vector<kvio_copy2d> alternative;
  alternative.reserve(plan->size());
  for (int32_t c = 0; c < components; ++c)
    for (int64_t h = 0; h < shape.headGroups; ++h)
      for (const IndexRun& run : runs)
        for (int64_t l = 0; l < r.numLayers; ++l)
          appendCoalesced(&alternative, unitCopy(r, shape, run, c, l, h));
  if (alternative.size() < plan->size()) plan->swap(alternative);
}

}  // namespace kvio
