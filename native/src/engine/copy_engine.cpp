// The shared copy-engine issuer (see copy_engine.hpp): cutting plans at allocation boundaries,
// choosing 2-D or 1-D calls, batching runs of 1-D copies with the "not supported" fall-back,
// and the messages of failed calls.
#include "copy_engine.hpp"

#include <algorithm>
#include <cstdint>

#include "../core/error.hpp"

namespace kvio {
namespace engine {
namespace {

using ull = unsigned long long;

// End of the region holding `address` (regions sorted by address), or 0 when none does.
uint64_t regionEnd(const std::vector<Region>& regions, uint64_t address) {
  auto it = std::upper_bound(regions.begin(), regions.end(), address,
                             [](uint64_t a, const Region& r) { return a < r.address; });
  if (it != regions.begin()) {
    const Region& r = *(it - 1);
    if (address - r.address < r.bytes) return r.address + r.bytes;
  }
  // Regions of one pool may overlap (a caller can wrap one buffer twice): an earlier, longer
  // region may hold the address. Rare, so a scan; the furthest end wins.
  uint64_t end = 0;
  for (auto r = regions.begin(); r != it; ++r) {
    if (address - r->address < r->bytes) end = std::max(end, r->address + r->bytes);
  }
  return end;
}

kvio_status outside(const char* side, uint64_t address, size_t copy, size_t planSize,
                    size_t regions) {
  return fail(KVIO_STATUS_INTERNAL,
              "plan copy %zu of %zu: %s address 0x%llx lies in none of the pool's %zu memory "
              "regions; nothing was issued",
              copy, planSize, side, static_cast<ull>(address), regions);
}

// Rows of `width` bytes from `start` at `pitch` that fit before `end` (start + width <= end).
uint64_t rowsBefore(uint64_t end, uint64_t start, uint64_t pitch, uint64_t width) {
  if (pitch == 0) return UINT64_MAX;
  return (end - start - width) / pitch + 1;
}

}  // namespace

kvio_status cutCopies(const std::vector<kvio_copy2d>& plan, const std::vector<Region>& src,
                      const std::vector<Region>& dst, const CutRules& rules,
                      std::vector<EngineCopy>* out) {
  for (size_t i = 0; i < plan.size(); ++i) {
    const kvio_copy2d& c = plan[i];
    if (c.width == 0) continue;
    const bool pitchesFit = c.src_pitch >= c.width && c.dst_pitch >= c.width &&
                            c.src_pitch <= rules.maxPitch && c.dst_pitch <= rules.maxPitch;
    uint64_t row = 0;
    while (row < c.height) {
      const uint64_t s = c.src + row * c.src_pitch;
      const uint64_t d = c.dst + row * c.dst_pitch;
      const uint64_t srcEnd = regionEnd(src, s);
      const uint64_t dstEnd = regionEnd(dst, d);
      if (srcEnd == 0) return outside("source", s, i, plan.size(), src.size());
      if (dstEnd == 0) return outside("destination", d, i, plan.size(), dst.size());
      if (c.width > srcEnd - s || c.width > dstEnd - d) {
        // This row crosses a boundary: 1-D pieces, each inside one region per side.
        uint64_t offset = 0;
        while (offset < c.width) {
          const uint64_t se = regionEnd(src, s + offset);
          const uint64_t de = regionEnd(dst, d + offset);
          if (se == 0) return outside("source", s + offset, i, plan.size(), src.size());
          if (de == 0) return outside("destination", d + offset, i, plan.size(), dst.size());
          const uint64_t piece = std::min({c.width - offset, se - (s + offset), de - (d + offset)});
          out->push_back({d + offset, s + offset, piece, 1, piece, piece, i});
          offset += piece;
        }
        ++row;
        continue;
      }
      // Rows from here on that stay inside the same region on both sides.
      const uint64_t rows = std::min({c.height - row, rowsBefore(srcEnd, s, c.src_pitch, c.width),
                                      rowsBefore(dstEnd, d, c.dst_pitch, c.width)});
      if (rows > 1 && rules.twoD && pitchesFit) {
        const uint64_t height = rules.max2dHeight == 0 ? rows : std::min(rows, rules.max2dHeight);
        out->push_back({d, s, c.width, height, c.dst_pitch, c.src_pitch, i});
        row += height;
        continue;
      }
      for (uint64_t r = 0; r < rows; ++r) {
        out->push_back({d + r * c.dst_pitch, s + r * c.src_pitch, c.width, 1, c.width, c.width, i});
      }
      row += rows;
    }
  }
  return KVIO_STATUS_OK;
}

kvio_status CopyIssuer::issueLoaded(const EngineOps& ops, const std::vector<kvio_copy2d>& plan,
                                    const IssueOptions& options) {
  copies_.clear();
  CutRules rules;
  rules.twoD = options.twoD && ops.copy2d != nullptr;
  rules.maxPitch = ops.maxPitch;
  rules.max2dHeight = ops.max2dHeight;
  KVIO_RETURN_IF_ERROR(cutCopies(plan, src_, dst_, rules, &copies_));
  return issueCopies(ops, options, plan.size());
}

kvio_status CopyIssuer::issueCopies(const EngineOps& ops, const IssueOptions& options,
                                    size_t planSize) {
  const std::vector<EngineCopy>& copies = copies_;
  const size_t n = copies.size();
  const char* direction = options.direction != nullptr ? options.direction : "";
  const char* comma = direction[0] != '\0' ? ", " : "";
  size_t i = 0;
  while (i < n) {
    const EngineCopy& c = copies[i];
    if (c.height > 1) {
      const int code = ops.copy2d(ops.context, c);
      if (code != kEngineOk) {
        return fail(KVIO_STATUS_BACKEND_ERROR,
                    "%s failed: %s: copy %zu of %zu (plan copy %zu of %zu)%s%s, %llu rows of %llu "
                    "bytes, pitches dst %llu src %llu, dst 0x%llx src 0x%llx",
                    ops.copy2dName, ops.errorText(ops.context, code).c_str(), i, n, c.planIndex,
                    planSize, comma, direction, static_cast<ull>(c.height),
                    static_cast<ull>(c.width), static_cast<ull>(c.dstPitch),
                    static_cast<ull>(c.srcPitch), static_cast<ull>(c.dst), static_cast<ull>(c.src));
      }
      ++i;
      continue;
    }
    size_t end = i;  // [i, end): consecutive 1-D copies, at most maxBatch
    while (end < n && copies[end].height == 1 && end - i < ops.maxBatch) ++end;
    if (ops.batch != nullptr && batchEnabled_ && end - i > 1) {
      dsts_.clear();
      srcs_.clear();
      sizes_.clear();
      for (size_t k = i; k < end; ++k) {
        dsts_.push_back(copies[k].dst);
        srcs_.push_back(copies[k].src);
        sizes_.push_back(static_cast<size_t>(copies[k].width));
      }
      size_t failIndex = SIZE_MAX;
      const int code =
          ops.batch(ops.context, dsts_.data(), srcs_.data(), sizes_.data(), end - i, &failIndex);
      if (code == kEngineOk) {
        i = end;
        continue;
      }
      if (code != kEngineNotSupported) {
        const bool known = failIndex < end - i;
        const EngineCopy& f = copies[known ? i + failIndex : i];
        return fail(KVIO_STATUS_BACKEND_ERROR,
                    "%s failed: %s: batch of %zu copies from copy %zu of %zu (plan copy %zu of "
                    "%zu)%s%s, failIndex %lld%s%llu bytes from 0x%llx to 0x%llx",
                    ops.batchName, ops.errorText(ops.context, code).c_str(), end - i, i, n,
                    copies[i].planIndex, planSize, comma, direction,
                    known ? static_cast<long long>(failIndex) : -1LL,
                    known ? ": that copy: " : "; first copy: ", static_cast<ull>(f.width),
                    static_cast<ull>(f.src), static_cast<ull>(f.dst));
      }
      batchEnabled_ = false;  // no batch copies here: these one by one, and from now on
    }
    for (; i < end; ++i) {
      const EngineCopy& x = copies[i];
      const int code = ops.copy1d(ops.context, x.dst, x.src, x.width);
      if (code != kEngineOk) {
        return fail(KVIO_STATUS_BACKEND_ERROR,
                    "%s failed: %s: copy %zu of %zu (plan copy %zu of %zu)%s%s, %llu bytes from "
                    "0x%llx to 0x%llx",
                    ops.copy1dName, ops.errorText(ops.context, code).c_str(), i, n, x.planIndex,
                    planSize, comma, direction, static_cast<ull>(x.width), static_cast<ull>(x.src),
                    static_cast<ull>(x.dst));
      }
    }
  }
  return KVIO_STATUS_OK;
}

}  // namespace engine
}  // namespace kvio
