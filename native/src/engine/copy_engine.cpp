// The shared copy-engine issuer (see copy_engine.hpp): cutting plans at allocation boundaries,
// choosing 2-D or 1-D calls, batching runs of 1-D copies with the "not supported" fall-back,
// and the messages of failed calls.
#include "copy_engine.hpp"

#include <algorithm>
#include <atomic>
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

// Engine calls of every issuer of the process (kvio_debug_copy_engine_calls).
std::atomic<uint64_t> totalCalls[4];

// Whether `b` continues `a` (a 2-D or 3-D copy) as its next slice.
bool nextSlice(const EngineCopy& a, const EngineCopy& b) {
  if (b.depth != 1 || b.height < 2 || a.height != b.height || a.width != b.width ||
      a.dstPitch != b.dstPitch || a.srcPitch != b.srcPitch) {
    return false;
  }
  if (a.depth > 1) {
    return b.dst == a.dst + a.depth * a.dstSlice && b.src == a.src + a.depth * a.srcSlice;
  }
  if (b.dst <= a.dst || b.src <= a.src) return false;
  const uint64_t dstStep = b.dst - a.dst;
  const uint64_t srcStep = b.src - a.src;
  return dstStep % a.dstPitch == 0 && dstStep / a.dstPitch >= a.height &&
         srcStep % a.srcPitch == 0 && srcStep / a.srcPitch >= a.height;
}

}  // namespace

EngineCalls callTotals() {
  EngineCalls c;
  c.copy1d = totalCalls[0].load(std::memory_order_relaxed);
  c.copy2d = totalCalls[1].load(std::memory_order_relaxed);
  c.batch = totalCalls[2].load(std::memory_order_relaxed);
  c.batch3d = totalCalls[3].load(std::memory_order_relaxed);
  return c;
}

void nestCopies(const std::vector<Region>& src, const std::vector<Region>& dst,
                std::vector<EngineCopy>* copies) {
  std::vector<EngineCopy>& c = *copies;
  size_t out = 0;
  for (size_t i = 0; i < c.size(); ++i) {
    if (out > 0 && nextSlice(c[out - 1], c[i])) {
      EngineCopy merged = c[out - 1];
      if (merged.depth == 1) {
        merged.dstSlice = c[i].dst - merged.dst;
        merged.srcSlice = c[i].src - merged.src;
      }
      ++merged.depth;
      // The whole 3-D footprint inside the region of its first byte, on both sides.
      if (regionEnd(dst, merged.dst) - merged.dst >= footprint(merged, true) &&
          regionEnd(src, merged.src) - merged.src >= footprint(merged, false)) {
        c[out - 1] = merged;
        continue;
      }
    }
    c[out++] = c[i];
  }
  c.resize(out);
}

kvio_status cutCopies(const std::vector<kvio_copy2d>& plan, const std::vector<Region>& src,
                      const std::vector<Region>& dst, const CutRules& rules,
                      std::vector<EngineCopy>* out) {
  out->reserve(out->size() + plan.size());  // about one copy per plan entry, reserved at once
  for (size_t i = 0; i < plan.size(); ++i) {
    const kvio_copy2d& c = plan[i];
    if (c.width == 0) continue;
    const bool pitchesFit = c.src_pitch >= c.width && c.dst_pitch >= c.width &&
                            c.src_pitch <= rules.maxPitch && c.dst_pitch <= rules.maxPitch &&
                            (rules.max2dWidth == 0 || c.width <= rules.max2dWidth);
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
  calls_ = EngineCalls{};
  mayHaveQueued_ = false;
  CutRules rules;
  rules.twoD = options.twoD && ops.copy2d != nullptr;
  rules.maxPitch = ops.maxPitch;
  rules.max2dHeight = ops.max2dHeight;
  rules.max2dWidth = ops.max2dWidth;
  KVIO_RETURN_IF_ERROR(cutCopies(plan, src_, dst_, rules, &copies_));
  if (rules.twoD && ops.batch3d != nullptr && batch3dEnabled_) nestCopies(src_, dst_, &copies_);
  const kvio_status status = issueCopies(ops, options, plan.size());
  totalCalls[0].fetch_add(calls_.copy1d, std::memory_order_relaxed);
  totalCalls[1].fetch_add(calls_.copy2d, std::memory_order_relaxed);
  totalCalls[2].fetch_add(calls_.batch, std::memory_order_relaxed);
  totalCalls[3].fetch_add(calls_.batch3d, std::memory_order_relaxed);
  return status;
}

kvio_status CopyIssuer::issueCopies(const EngineOps& ops, const IssueOptions& options,
                                    size_t planSize) {
  rows_.clear();
  blocks_.clear();
  for (size_t i = 0; i < copies_.size(); ++i) {
    (copies_[i].height == 1 && copies_[i].depth == 1 ? rows_ : blocks_).push_back(i);
  }
  // The batch arrays are allocated before the first call: once copies are queued, running out
  // of memory would leave them queued with nobody waiting for them.
  if (ops.batch != nullptr) {
    const size_t entries = std::min(rows_.size(), std::max<size_t>(ops.maxBatch, 1));
    dsts_.reserve(entries);
    srcs_.reserve(entries);
    sizes_.reserve(entries);
  }
  if (ops.batch3d != nullptr) {
    staged_.reserve(std::min(blocks_.size(), std::max<size_t>(ops.maxBatch3d, 1)));
  }
  KVIO_RETURN_IF_ERROR(issueRows(ops, options, planSize));
  return issueBlocks(ops, options, planSize);
}

// The 1-D copies: batches of at most maxBatch, else one by one.
kvio_status CopyIssuer::issueRows(const EngineOps& ops, const IssueOptions& options,
                                  size_t planSize) {
  const std::vector<EngineCopy>& copies = copies_;
  const size_t n = copies.size();
  const char* direction = options.direction != nullptr ? options.direction : "";
  const char* comma = direction[0] != '\0' ? ", " : "";
  size_t k = 0;
  while (k < rows_.size()) {
    const size_t end = std::min(rows_.size(), k + std::max<size_t>(ops.maxBatch, 1));
    if (ops.batch != nullptr && batchEnabled_ && end - k > 1) {
      dsts_.clear();
      srcs_.clear();
      sizes_.clear();
      for (size_t r = k; r < end; ++r) {
        const EngineCopy& c = copies[rows_[r]];
        dsts_.push_back(c.dst);
        srcs_.push_back(c.src);
        sizes_.push_back(static_cast<size_t>(c.width));
      }
      size_t failIndex = SIZE_MAX;
      ++calls_.batch;
      const bool queuedBefore = mayHaveQueued_;
      mayHaveQueued_ = true;  // until the call says otherwise (it may throw having queued)
      const int code =
          ops.batch(ops.context, dsts_.data(), srcs_.data(), sizes_.data(), end - k, &failIndex);
      if (code != kEngineOk && failIndex == 0) mayHaveQueued_ = queuedBefore;  // none of these
      if (code == kEngineOk) {
        k = end;
        continue;
      }
      if (code != kEngineNotSupported) {
        const bool known = failIndex < end - k;
        const EngineCopy& f = copies[rows_[known ? k + failIndex : k]];
        return fail(KVIO_STATUS_BACKEND_ERROR,
                    "%s failed: %s: batch of %zu copies from copy %zu of %zu (plan copy %zu of "
                    "%zu)%s%s, failIndex %lld%s%llu bytes from 0x%llx to 0x%llx",
                    ops.batchName, ops.errorText(ops.context, code).c_str(), end - k, rows_[k], n,
                    copies[rows_[k]].planIndex, planSize, comma, direction,
                    known ? static_cast<long long>(failIndex) : -1LL,
                    known ? ": that copy: " : "; first copy: ", static_cast<ull>(f.width),
                    static_cast<ull>(f.src), static_cast<ull>(f.dst));
      }
      batchEnabled_ = false;  // no batch copies here: these one by one, and from now on
    }
    for (; k < end; ++k) {
      const EngineCopy& x = copies[rows_[k]];
      ++calls_.copy1d;
      const bool queuedBefore = mayHaveQueued_;
      mayHaveQueued_ = true;  // until the call says otherwise (it may throw having queued)
      const int code = ops.copy1d(ops.context, x.dst, x.src, x.width);
      if (code != kEngineOk) {
        mayHaveQueued_ = queuedBefore;
        return fail(KVIO_STATUS_BACKEND_ERROR,
                    "%s failed: %s: copy %zu of %zu (plan copy %zu of %zu)%s%s, %llu bytes from "
                    "0x%llx to 0x%llx",
                    ops.copy1dName, ops.errorText(ops.context, code).c_str(), rows_[k], n,
                    x.planIndex, planSize, comma, direction, static_cast<ull>(x.width),
                    static_cast<ull>(x.src), static_cast<ull>(x.dst));
      }
    }
  }
  return KVIO_STATUS_OK;
}

kvio_status CopyIssuer::issue2d(const EngineOps& ops, const IssueOptions& options, size_t planSize,
                                size_t index, const EngineCopy& c) {
  ++calls_.copy2d;
  const bool queuedBefore = mayHaveQueued_;
  mayHaveQueued_ = true;  // until the call says otherwise (it may throw having queued)
  const int code = ops.copy2d(ops.context, c);
  if (code == kEngineOk) return KVIO_STATUS_OK;
  mayHaveQueued_ = queuedBefore;
  const char* direction = options.direction != nullptr ? options.direction : "";
  return fail(KVIO_STATUS_BACKEND_ERROR,
              "%s failed: %s: copy %zu of %zu (plan copy %zu of %zu)%s%s, %llu rows of %llu "
              "bytes, pitches dst %llu src %llu, dst 0x%llx src 0x%llx",
              ops.copy2dName, ops.errorText(ops.context, code).c_str(), index, copies_.size(),
              c.planIndex, planSize, direction[0] != '\0' ? ", " : "", direction,
              static_cast<ull>(c.height), static_cast<ull>(c.width), static_cast<ull>(c.dstPitch),
              static_cast<ull>(c.srcPitch), static_cast<ull>(c.dst), static_cast<ull>(c.src));
}

// The 2-D and 3-D copies: batch3d calls of at most maxBatch3d, else one 2-D call per slice.
kvio_status CopyIssuer::issueBlocks(const EngineOps& ops, const IssueOptions& options,
                                    size_t planSize) {
  size_t k = 0;
  while (k < blocks_.size()) {
    const size_t end = std::min(blocks_.size(), k + std::max<size_t>(ops.maxBatch3d, 1));
    if (ops.batch3d != nullptr && batch3dEnabled_) {
      staged_.clear();
      for (size_t b = k; b < end; ++b) staged_.push_back(copies_[blocks_[b]]);
      size_t failIndex = SIZE_MAX;
      ++calls_.batch3d;
      const bool queuedBefore = mayHaveQueued_;
      mayHaveQueued_ = true;  // until the call says otherwise (it may throw having queued)
      const int code = ops.batch3d(ops.context, staged_.data(), staged_.size(), &failIndex);
      if (code != kEngineOk && failIndex == 0) mayHaveQueued_ = queuedBefore;  // none of these
      if (code == kEngineOk) {
        k = end;
        continue;
      }
      if (code != kEngineNotSupported) {
        const bool known = failIndex < end - k;
        const EngineCopy& f = staged_[known ? failIndex : 0];
        const char* direction = options.direction != nullptr ? options.direction : "";
        return fail(
            KVIO_STATUS_BACKEND_ERROR,
            "%s failed: %s: batch of %zu copies from copy %zu of %zu (plan copy %zu of "
            "%zu)%s%s, failIndex %lld%s%llu x %llu rows of %llu bytes, pitches dst %llu "
            "src %llu, dst 0x%llx src 0x%llx",
            ops.batch3dName, ops.errorText(ops.context, code).c_str(), end - k, blocks_[k],
            copies_.size(), staged_[0].planIndex, planSize, direction[0] != '\0' ? ", " : "",
            direction, known ? static_cast<long long>(failIndex) : -1LL,
            known ? ": that copy: " : "; first copy: ", static_cast<ull>(f.depth),
            static_cast<ull>(f.height), static_cast<ull>(f.width), static_cast<ull>(f.dstPitch),
            static_cast<ull>(f.srcPitch), static_cast<ull>(f.dst), static_cast<ull>(f.src));
      }
      batch3dEnabled_ = false;  // these as 2-D copies, and from now on
    }
    for (; k < end; ++k) {
      EngineCopy slice = copies_[blocks_[k]];
      const uint64_t depth = slice.depth;
      slice.depth = 1;
      for (uint64_t z = 0; z < depth; ++z) {
        KVIO_RETURN_IF_ERROR(issue2d(ops, options, planSize, blocks_[k], slice));
        slice.dst += copies_[blocks_[k]].dstSlice;
        slice.src += copies_[blocks_[k]].srcSlice;
      }
    }
  }
  return KVIO_STATUS_OK;
}

}  // namespace engine
}  // namespace kvio
