// The 'kernel_ascend' io backend's copy logic, free of CANN headers so that it builds and is
// tested on every machine: turning the planner's 2-D copies into ACL calls on one stream.
//   - A copy of several rows whose pitches are both at least its width, between host and
//     device, is one aclrtMemcpy2dAsync (the "dim exchange": the pitches do the layout
//     transpose), cut into pieces of at most kMax2dHeight rows (that call's documented limit).
//   - Every other copy (one row; device to device, which aclrtMemcpy2dAsync does not do; a
//     broadcast source of pitch 0) becomes 1-D copies. Runs of consecutive 1-D copies go to
//     aclrtMemcpyBatchAsync (at most kMaxBatch per call) when the runtime has it, else to
//     aclrtMemcpyAsync one by one. A batch answered ACL_ERROR_RT_FEATURE_NOT_SUPPORT turns
//     batching off for the executor and its copies are issued one by one.
// Every call's return code is checked; a failure names the call, the ACL error, the copy and
// its sizes.
#ifndef KVIO_ASCEND_ASCEND_COPIES_HPP_
#define KVIO_ASCEND_ASCEND_COPIES_HPP_

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "../core/error.hpp"
#include "../core/pool.hpp"
#include "acl_api.hpp"
#include "kvio/kvio.h"

namespace kvio {
namespace ascend {

/// Largest number of copies in one aclrtMemcpyBatchAsync call.
constexpr size_t kMaxBatch = 4096;

inline const char* memcpyKindName(aclrtMemcpyKind kind) {
  switch (kind) {
    case ACL_MEMCPY_HOST_TO_HOST: return "host to host";
    case ACL_MEMCPY_HOST_TO_DEVICE: return "host to device";
    case ACL_MEMCPY_DEVICE_TO_HOST: return "device to host";
    case ACL_MEMCPY_DEVICE_TO_DEVICE: return "device to device";
  }
  return "unknown kind";
}

/// "ACL_ERROR_RT_PARAM_INVALID (107000): <aclGetRecentErrMsg>".
inline std::string describeAclError(const AclApi& api, aclError error) {
  std::string text = std::string(aclErrorName(error)) + " (" + std::to_string(error) + ")";
  if (api.getRecentErrMsg != nullptr) {
    const char* recent = api.getRecentErrMsg();
    if (recent != nullptr && recent[0] != '\0') text += std::string(": ") + recent;
  }
  return text;
}

/// What one executor keeps between transfers: whether batching is still on, and reused arrays.
struct IssueState {
  bool batchEnabled = true;
  std::vector<void*> dsts, srcs;
  std::vector<size_t> sizes;
  std::vector<size_t> attrIndexes;
  struct Row {
    uint64_t dst, src, bytes;
    size_t copy;  // index of the plan copy it comes from, for messages
  };
  std::vector<Row> rows;  // pending 1-D copies
};

/// The executor's side of a transfer: the runtime, the stream, the direction and where each
/// side lies (for the batch attributes).
struct IssueTarget {
  const AclApi* api = nullptr;
  aclrtStream stream = nullptr;
  aclrtMemcpyKind kind = ACL_MEMCPY_HOST_TO_DEVICE;
  int32_t device = 0;
};

/// The memory regions (allocations) of one side, sorted by address.
using Regions = std::vector<MemoryRegion>;

inline void sortedRegions(const std::vector<MemoryRegion>& regions, Regions* out) {
  out->assign(regions.begin(), regions.end());
  std::sort(out->begin(), out->end(),
            [](const MemoryRegion& a, const MemoryRegion& b) { return a.address < b.address; });
}

namespace detail {

// End of the region holding `address`, or 0 when none does.
inline uint64_t regionEnd(const Regions& regions, uint64_t address) {
  auto it = std::upper_bound(regions.begin(), regions.end(), address,
                             [](uint64_t a, const MemoryRegion& r) { return a < r.address; });
  if (it == regions.begin()) return 0;
  --it;
  const uint64_t end = it->address + it->bytes;
  return address < end ? end : 0;
}

// Rows of a copy, from `start` at `pitch`, whose `width` bytes stay inside the region of the
// first one (at least 1).
inline uint64_t rowsInRegion(const Regions& regions, uint64_t start, uint64_t pitch, uint64_t width,
                             uint64_t rows) {
  const uint64_t end = regionEnd(regions, start);
  if (end == 0 || pitch == 0 || start + width > end) return rows;  // unknown memory: as is
  return std::max<uint64_t>(1, std::min(rows, (end - start - width) / pitch + 1));
}

}  // namespace detail

/// Cuts copies so that no ACL call spans two allocations on either side: the planner merges
/// rows of separate buffers (K and V, or two layers) whenever their addresses line up, which
/// the host can do but a copy engine that translates one allocation per call need not.
inline void splitAtRegions(const std::vector<kvio_copy2d>& plan, const Regions& src,
                           const Regions& dst, std::vector<kvio_copy2d>* out) {
  out->clear();
  for (const kvio_copy2d& c : plan) {
    if (c.height == 1) {
      uint64_t offset = 0;
      while (offset < c.width) {
        uint64_t piece = c.width - offset;
        const uint64_t srcEnd = detail::regionEnd(src, c.src + offset);
        const uint64_t dstEnd = detail::regionEnd(dst, c.dst + offset);
        if (srcEnd != 0) piece = std::min(piece, srcEnd - (c.src + offset));
        if (dstEnd != 0) piece = std::min(piece, dstEnd - (c.dst + offset));
        out->push_back({c.src + offset, c.dst + offset, piece, 1, piece, piece});
        offset += piece;
      }
      continue;
    }
    uint64_t row = 0;
    while (row < c.height) {
      const uint64_t s = c.src + row * c.src_pitch;
      const uint64_t d = c.dst + row * c.dst_pitch;
      const uint64_t left = c.height - row;
      const uint64_t rows = std::min(detail::rowsInRegion(src, s, c.src_pitch, c.width, left),
                                     detail::rowsInRegion(dst, d, c.dst_pitch, c.width, left));
      out->push_back({s, d, c.width, rows, c.src_pitch, c.dst_pitch});
      row += rows;
    }
  }
}

namespace detail {

inline kvio_status issueSingles(const IssueTarget& t, IssueState* s, size_t begin, size_t end,
                                size_t planSize) {
  for (size_t i = begin; i < end; ++i) {
    const IssueState::Row& r = s->rows[i];
    const aclError e =
        t.api->memcpyAsync(reinterpret_cast<void*>(r.dst), r.bytes,
                           reinterpret_cast<const void*>(r.src), r.bytes, t.kind, t.stream);
    if (e != ACL_SUCCESS) {
      return fail(KVIO_STATUS_BACKEND_ERROR,
                  "aclrtMemcpyAsync failed: %s: copy %zu of %zu, %s, %llu bytes from 0x%llx to "
                  "0x%llx",
                  describeAclError(*t.api, e).c_str(), r.copy, planSize, memcpyKindName(t.kind),
                  static_cast<unsigned long long>(r.bytes), static_cast<unsigned long long>(r.src),
                  static_cast<unsigned long long>(r.dst));
    }
  }
  return KVIO_STATUS_OK;
}

inline aclrtMemLocation location(bool device, int32_t ordinal) {
  aclrtMemLocation l{};
  l.type = device ? ACL_MEM_LOCATION_TYPE_DEVICE : ACL_MEM_LOCATION_TYPE_HOST;
  l.id = device ? static_cast<uint32_t>(ordinal) : 0u;
  return l;
}

// Issues the pending 1-D copies: batches of at most kMaxBatch, or one by one.
inline kvio_status flushRows(const IssueTarget& t, IssueState* s, size_t planSize) {
  size_t i = 0;
  const size_t n = s->rows.size();
  while (i < n) {
    const size_t end = std::min(n, i + kMaxBatch);
    if (t.api->memcpyBatchAsync != nullptr && s->batchEnabled && end - i > 1) {
      s->dsts.clear();
      s->srcs.clear();
      s->sizes.clear();
      for (size_t k = i; k < end; ++k) {
        s->dsts.push_back(reinterpret_cast<void*>(s->rows[k].dst));
        s->srcs.push_back(reinterpret_cast<void*>(s->rows[k].src));
        s->sizes.push_back(static_cast<size_t>(s->rows[k].bytes));
      }
      aclrtMemcpyBatchAttr attr{};
      attr.dstLoc = location(
          t.kind == ACL_MEMCPY_HOST_TO_DEVICE || t.kind == ACL_MEMCPY_DEVICE_TO_DEVICE, t.device);
      attr.srcLoc = location(
          t.kind == ACL_MEMCPY_DEVICE_TO_HOST || t.kind == ACL_MEMCPY_DEVICE_TO_DEVICE, t.device);
      size_t attrIndex = 0;
      size_t failIndex = SIZE_MAX;
      // destMax of each copy is its size: the sizes array serves as both.
      const aclError e =
          t.api->memcpyBatchAsync(s->dsts.data(), s->sizes.data(), s->srcs.data(), s->sizes.data(),
                                  end - i, &attr, &attrIndex, 1, &failIndex, t.stream);
      if (e == ACL_SUCCESS) {
        i = end;
        continue;
      }
      if (e != ACL_ERROR_RT_FEATURE_NOT_SUPPORT) {
        return fail(KVIO_STATUS_BACKEND_ERROR,
                    "aclrtMemcpyBatchAsync failed: %s: batch of %zu copies (%s) from copy %zu of "
                    "%zu, failIndex %lld",
                    describeAclError(*t.api, e).c_str(), end - i, memcpyKindName(t.kind),
                    s->rows[i].copy, planSize,
                    failIndex == SIZE_MAX ? -1LL : static_cast<long long>(failIndex));
      }
      s->batchEnabled = false;  // this runtime has no batch copies: one by one from now on
    }
    KVIO_RETURN_IF_ERROR(issueSingles(t, s, i, end, planSize));
    i = end;
  }
  s->rows.clear();
  return KVIO_STATUS_OK;
}

}  // namespace detail

/// Issues `plan` on the target's stream, in order. Returns OK, or BACKEND_ERROR naming the
/// failed call; copies issued before a failure stay queued.
inline kvio_status issuePlan(const IssueTarget& t, const std::vector<kvio_copy2d>& plan,
                             IssueState* s) {
  s->rows.clear();
  const bool twoD = t.kind == ACL_MEMCPY_HOST_TO_DEVICE || t.kind == ACL_MEMCPY_DEVICE_TO_HOST;
  for (size_t i = 0; i < plan.size(); ++i) {
    const kvio_copy2d& c = plan[i];
    if (c.height > 1 && twoD && c.src_pitch >= c.width && c.dst_pitch >= c.width) {
      KVIO_RETURN_IF_ERROR(detail::flushRows(t, s, plan.size()));  // keep the stream order
      for (uint64_t row = 0; row < c.height; row += kMax2dHeight) {
        const uint64_t rows = std::min<uint64_t>(kMax2dHeight, c.height - row);
        const uint64_t dst = c.dst + row * c.dst_pitch;
        const uint64_t src = c.src + row * c.src_pitch;
        const aclError e = t.api->memcpy2dAsync(reinterpret_cast<void*>(dst), c.dst_pitch,
                                                reinterpret_cast<const void*>(src), c.src_pitch,
                                                c.width, rows, t.kind, t.stream);
        if (e != ACL_SUCCESS) {
          return fail(
              KVIO_STATUS_BACKEND_ERROR,
              "aclrtMemcpy2dAsync failed: %s: copy %zu of %zu, %s, %llu rows of %llu "
              "bytes (rows %llu to %llu of %llu), pitches dst %llu src %llu, dst 0x%llx "
              "src 0x%llx",
              describeAclError(*t.api, e).c_str(), i, plan.size(), memcpyKindName(t.kind),
              static_cast<unsigned long long>(rows), static_cast<unsigned long long>(c.width),
              static_cast<unsigned long long>(row), static_cast<unsigned long long>(row + rows - 1),
              static_cast<unsigned long long>(c.height),
              static_cast<unsigned long long>(c.dst_pitch),
              static_cast<unsigned long long>(c.src_pitch), static_cast<unsigned long long>(dst),
              static_cast<unsigned long long>(src));
        }
      }
      continue;
    }
    if (c.height == 1) {
      s->rows.push_back({c.dst, c.src, c.width, i});
      continue;
    }
    for (uint64_t row = 0; row < c.height; ++row) {
      s->rows.push_back({c.dst + row * c.dst_pitch, c.src + row * c.src_pitch, c.width, i});
    }
  }
  return detail::flushRows(t, s, plan.size());
}

}  // namespace ascend
}  // namespace kvio

#endif  // KVIO_ASCEND_ASCEND_COPIES_HPP_
