// The 'kernel_ascend' io backend's copy engine, free of CANN headers so that it builds and is
// tested on every machine: the ACL calls of the engine table the shared copy-engine issuer
// drives (native/src/engine/copy_engine.hpp cuts copies at allocation boundaries and chooses
// 2-D, 1-D and batch calls). aclrtMemcpy2dAsync does the "dim exchange" (the pitches do the
// layout transpose) between host and device only, at most kMax2dHeight rows per call; runs of
// 1-D copies go to aclrtMemcpyBatchAsync where it was resolved (CANN >= 8.3.RC1, and only when
// KVIO_ASCEND_BATCH=1 asks for it: acl_api.hpp; "not supported" or a refused argument turns
// batching off for the executor and those copies go one by one), else aclrtMemcpyAsync. The batch
// call's attributes say where each side lies. Used by AscendExecutor::submit (ascend_executor.cpp)
// and ascend_copies_test.
#ifndef KVIO_ASCEND_ASCEND_COPIES_HPP_
#define KVIO_ASCEND_ASCEND_COPIES_HPP_

#include <cstdint>
#include <string>
#include <vector>

#include "../engine/copy_engine.hpp"
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

/// The executor's side of a transfer: the runtime, the stream, the direction and the device.
struct IssueTarget {
  const AclApi* api = nullptr;
  aclrtStream stream = nullptr;
  aclrtMemcpyKind kind = ACL_MEMCPY_HOST_TO_DEVICE;
  int32_t device = 0;
};

/// What one executor keeps between transfers: the issuer (whether batching is still on) and
/// the arrays of the batch call.
struct IssueState {
  engine::CopyIssuer issuer;
  std::vector<void*> dsts, srcs;
};

namespace detail {

struct EngineContext {
  const IssueTarget* target;
  IssueState* state;
};

inline aclrtMemLocation location(bool device, int32_t ordinal) {
  aclrtMemLocation l{};
  l.type = device ? ACL_MEM_LOCATION_TYPE_DEVICE : ACL_MEM_LOCATION_TYPE_HOST;
  l.id = device ? static_cast<uint32_t>(ordinal) : 0u;
  return l;
}

inline int copy1d(void* context, uint64_t dst, uint64_t src, uint64_t bytes) {
  const IssueTarget& t = *static_cast<EngineContext*>(context)->target;
  return t.api->memcpyAsync(reinterpret_cast<void*>(dst), bytes, reinterpret_cast<const void*>(src),
                            bytes, t.kind, t.stream);
}

inline int copy2d(void* context, const engine::EngineCopy& c) {
  const IssueTarget& t = *static_cast<EngineContext*>(context)->target;
  return t.api->memcpy2dAsync(reinterpret_cast<void*>(c.dst), c.dstPitch,
                              reinterpret_cast<const void*>(c.src), c.srcPitch, c.width, c.height,
                              t.kind, t.stream);
}

inline int batch(void* context, const uint64_t* dsts, const uint64_t* srcs, const size_t* sizes,
                 size_t count, size_t* failIndex) {
  auto* c = static_cast<EngineContext*>(context);
  const IssueTarget& t = *c->target;
  IssueState& s = *c->state;
  // Within the capacity issuePlan reserved before the first copy: no allocation here, where
  // copies of the plan may be queued already.
  s.dsts.resize(count);
  s.srcs.resize(count);
  for (size_t i = 0; i < count; ++i) {
    s.dsts[i] = reinterpret_cast<void*>(dsts[i]);
    s.srcs[i] = reinterpret_cast<void*>(srcs[i]);
  }
  aclrtMemcpyBatchAttr attr{};
  attr.dstLoc = location(
      t.kind == ACL_MEMCPY_HOST_TO_DEVICE || t.kind == ACL_MEMCPY_DEVICE_TO_DEVICE, t.device);
  attr.srcLoc = location(
      t.kind == ACL_MEMCPY_DEVICE_TO_HOST || t.kind == ACL_MEMCPY_DEVICE_TO_DEVICE, t.device);
  size_t attrIndex = 0;
  // destMax of each copy is its size: the sizes array serves as both. ACL does not write it.
  auto* n = const_cast<size_t*>(sizes);
  const aclError e = t.api->memcpyBatchAsync(s.dsts.data(), n, s.srcs.data(), n, count, &attr,
                                             &attrIndex, 1, failIndex, t.stream);
  // "Not supported", or an argument the runtime refused: it checks each entry's location against
  // the driver's view of the pointer, whose device id need not be kvio's ordinal (under
  // ASCEND_RT_VISIBLE_DEVICES, in a container). The copies then go one by one (and batching
  // stays off for the executor); entries the runtime queued before the one it refused are
  // copied again, in stream order, the same bytes. A refusal that is the copies' own comes back
  // from those calls, with the copy named.
  if (e == ACL_ERROR_RT_FEATURE_NOT_SUPPORT || e == ACL_ERROR_RT_PARAM_INVALID ||
      e == ACL_ERROR_INVALID_PARAM) {
    if (t.api->getRecentErrMsg != nullptr) t.api->getRecentErrMsg();  // not a later call's text
    return engine::kEngineNotSupported;
  }
  return e;
}

inline std::string errorText(void* context, int code) {
  return describeAclError(*static_cast<EngineContext*>(context)->target->api, code);
}

}  // namespace detail

/// Issues `plan` on the target's stream, in order, cut at the regions of the source and
/// destination pools (their MemoryRegions, or engine::Regions). Returns OK; INTERNAL (nothing
/// issued) for a copy outside the regions; BACKEND_ERROR naming the failed call (copies issued
/// before it stay queued).
template <class SrcRegions, class DstRegions>
kvio_status issuePlan(const IssueTarget& t, const std::vector<kvio_copy2d>& plan,
                      const SrcRegions& srcRegions, const DstRegions& dstRegions, IssueState* s) {
  detail::EngineContext context{&t, s};
  engine::EngineOps ops;
  ops.context = &context;
  ops.copy1dName = "aclrtMemcpyAsync";
  ops.copy2dName = "aclrtMemcpy2dAsync";
  ops.batchName = "aclrtMemcpyBatchAsync";
  ops.maxPitch = UINT64_MAX;  // no documented limit below size_t
  ops.max2dHeight = kMax2dHeight;
  ops.max2dWidth = kMax2dWidth;  // wider rows go as 1-D copies
  ops.maxBatch = kMaxBatch;
  ops.copy1d = detail::copy1d;
  ops.copy2d = detail::copy2d;
  // aclrtMemcpyBatchAsync copies host to device or device to host only (the API reference:
  // one of those two directions per batch); device to device goes one copy at a time.
  const bool hostDevice =
      t.kind == ACL_MEMCPY_HOST_TO_DEVICE || t.kind == ACL_MEMCPY_DEVICE_TO_HOST;
  ops.batch = t.api->memcpyBatchAsync != nullptr && hostDevice ? detail::batch : nullptr;
  ops.errorText = detail::errorText;
  if (ops.batch != nullptr) {  // allocated before anything is queued (see detail::batch)
    s->dsts.reserve(kMaxBatch);
    s->srcs.reserve(kMaxBatch);
  }
  engine::IssueOptions options;
  options.twoD = hostDevice;
  options.direction = memcpyKindName(t.kind);
  return s->issuer.issue(ops, plan, srcRegions, dstRegions, options);
}

}  // namespace ascend
}  // namespace kvio

#endif  // KVIO_ASCEND_ASCEND_COPIES_HPP_
