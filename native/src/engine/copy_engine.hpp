// The copy-engine issuer shared by the CUDA 'direct' and 'staged' executors
// (cuda/direct_executor.cpp, cuda/staged_executor.cpp) and the Ascend 'kernel_ascend' executor
// (ascend/ascend_executor.cpp), vendor-neutral so that it
// builds and is tested on every machine (copy_engine_conformance_test, cuda_direct_copies_test,
// ascend_copies_test). It turns the planner's 2-D copies into engine calls:
//   - Cutting: a copy engine translates one allocation per call, so no copy, 2-D footprint or
//     batch entry may span two allocations, even adjacent ones (the planner merges rows of
//     separate buffers whenever their addresses line up). Copies are cut at the boundaries of
//     the pools' memory regions on both sides; an address in no region is a kvio bug, reported
//     as INTERNAL before anything is issued.
//   - A copy of several rows stays one 2-D call when the engine has one for this direction and
//     both pitches are at least the width and at most the engine's largest pitch; it is cut at
//     the engine's largest height. Other copies become one 1-D copy per row.
//   - With a batch call for 2-D/3-D copies (batch3d), consecutive 2-D copies of one shape whose
//     starts advance by a constant step on both sides, a whole number of rows at least their
//     height, become one 3-D copy when its footprint stays inside one region per side.
//   - Every 1-D copy of a transfer goes to the engine's batch call (at most maxBatch each, so
//     ceil(n / maxBatch) calls) when it has one, and every 2-D/3-D copy to batch3d (at most
//     maxBatch3d each), else one 2-D call each. A transfer's copies write disjoint bytes and
//     read none the transfer writes (validate.cpp), so the order between them does not matter:
//     1-D copies are issued first, gathered across the 2-D copies between them. A batch answered
//     "not supported" turns that batch call off for the issuer (the executor) and its copies
//     go one by one, as they do without it (3-D copies slice by slice).
// Vendor calls come through EngineOps; failures name the call (from the table), the vendor's
// error text, the copy and its sizes.
#ifndef KVIO_ENGINE_COPY_ENGINE_HPP_
#define KVIO_ENGINE_COPY_ENGINE_HPP_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "kvio/kvio.h"

namespace kvio {
namespace engine {

/// One allocation: [address, address + bytes). The issuer takes any list of such (a pool's
/// MemoryRegions; core/pool.hpp is not included here, so tests that use the public C++ API
/// can include this header).
struct Region {
  uint64_t address;
  uint64_t bytes;
};

/// One copy for the engine: depth slices of height rows of width bytes (height 1: a 1-D copy,
/// pitches = width; depth 1: a 2-D copy). Slice k starts k * dstSlice / srcSlice bytes after
/// the first, a whole number of pitches, at least height pitches.
struct EngineCopy {
  uint64_t dst;
  uint64_t src;
  uint64_t width;
  uint64_t height;
  uint64_t dstPitch;
  uint64_t srcPitch;
  size_t planIndex;  // the plan copy it comes from, for messages
  uint64_t depth = 1;
  uint64_t dstSlice = 0;
  uint64_t srcSlice = 0;
};

/// Bytes from a copy's first byte on one side to its last byte + 1.
inline uint64_t footprint(const EngineCopy& c, bool dstSide) {
  const uint64_t pitch = dstSide ? c.dstPitch : c.srcPitch;
  const uint64_t slice = dstSide ? c.dstSlice : c.srcSlice;
  return (c.depth - 1) * slice + (c.height - 1) * pitch + c.width;
}

/// Engine calls of one transfer (CopyIssuer::lastCalls) or of the process (callTotals).
struct EngineCalls {
  uint64_t copy1d = 0;
  uint64_t copy2d = 0;
  uint64_t batch = 0;
  uint64_t batch3d = 0;
  uint64_t total() const { return copy1d + copy2d + batch + batch3d; }
};

/// Engine calls issued by every issuer of this process so far (kvio_debug_copy_engine_calls).
EngineCalls callTotals();

constexpr int kEngineOk = 0;
/// What a batch call returns for "not supported here" (the ops map the vendor's codes to it).
constexpr int kEngineNotSupported = -1;

/// A copy engine: its limits, the names of its calls (for messages) and the calls, which
/// return kEngineOk, kEngineNotSupported (batch only) or a vendor code errorText describes.
struct EngineOps {
  void* context = nullptr;
  const char* copy1dName = "copy1d";
  const char* copy2dName = "copy2d";
  const char* batchName = "batch";
  uint64_t maxPitch = 0;     // largest pitch of a 2-D copy
  uint64_t max2dHeight = 0;  // largest height of one 2-D call; 0: no limit
  uint64_t max2dWidth = 0;   // largest width of a 2-D copy (wider: rows of 1-D copies); 0: none
  size_t maxBatch = 1;       // largest number of copies in one batch call
  int (*copy1d)(void* context, uint64_t dst, uint64_t src, uint64_t bytes) = nullptr;
  /// nullptr: the engine has no 2-D copies.
  int (*copy2d)(void* context, const EngineCopy& copy) = nullptr;
  /// nullptr: no batch call. failIndex: the failing entry, or SIZE_MAX.
  int (*batch)(void* context, const uint64_t* dsts, const uint64_t* srcs, const size_t* sizes,
               size_t count, size_t* failIndex) = nullptr;
  /// nullptr: no batch of 2-D/3-D copies. failIndex: the failing entry, or SIZE_MAX.
  const char* batch3dName = "batch3d";
  size_t maxBatch3d = 1;  // largest number of copies in one batch3d call
  int (*batch3d)(void* context, const EngineCopy* copies, size_t count,
                 size_t* failIndex) = nullptr;
  std::string (*errorText)(void* context, int code) = nullptr;
};

/// What one transfer allows: 2-D calls in its direction (aclrtMemcpy2dAsync does host<->device
/// only), and the direction's name for messages ("host to device"; may be empty).
struct IssueOptions {
  bool twoD = true;
  const char* direction = "";
};

/// The limits cutCopies applies.
struct CutRules {
  bool twoD = true;          // 2-D copies allowed
  uint64_t maxPitch = 0;     // largest pitch of a 2-D copy
  uint64_t max2dHeight = 0;  // 0: no limit
  uint64_t max2dWidth = 0;   // 0: no limit
};

/// Cuts `plan` into engine copies, appended to `out`, none spanning two regions of `src` or of
/// `dst` (each sorted by address). Returns OK, or INTERNAL naming the copy when one touches
/// memory in no region.
kvio_status cutCopies(const std::vector<kvio_copy2d>& plan, const std::vector<Region>& src,
                      const std::vector<Region>& dst, const CutRules& rules,
                      std::vector<EngineCopy>* out);

/// Merges runs of consecutive 2-D copies of `copies` (cut already) into 3-D copies where their
/// starts advance by a constant step on both sides that is a whole number of pitches, at least
/// the height, and the 3-D footprint stays inside one region per side (regions sorted).
void nestCopies(const std::vector<Region>& src, const std::vector<Region>& dst,
                std::vector<EngineCopy>* copies);

/// One executor's issuer: the batch switches and the arrays it reuses from transfer to transfer.
class CopyIssuer {
 public:
  /// Cuts `plan` at the regions of the source and destination pools (vectors of anything with
  /// `address` and `bytes`, in any order) and issues it on `ops` (1-D copies first, then 2-D/3-D).
  /// Returns OK; INTERNAL with nothing issued when a copy touches memory in no region;
  /// BACKEND_ERROR naming the failed call (copies issued before it stay queued).
  template <class SrcRegions, class DstRegions>
  kvio_status issue(const EngineOps& ops, const std::vector<kvio_copy2d>& plan,
                    const SrcRegions& srcRegions, const DstRegions& dstRegions,
                    const IssueOptions& options) {
    load(srcRegions, &src_);
    load(dstRegions, &dst_);
    return issueLoaded(ops, plan, options);
  }
  /// False once a batch call answered "not supported".
  bool batchEnabled() const { return batchEnabled_; }
  void setBatchEnabled(bool enabled) { batchEnabled_ = enabled; }
  /// False once a batch3d call answered "not supported".
  bool batch3dEnabled() const { return batch3dEnabled_; }
  void setBatch3dEnabled(bool enabled) { batch3dEnabled_ = enabled; }
  /// The engine calls of the last issue().
  const EngineCalls& lastCalls() const { return calls_; }
  /// Whether the last issue() may have queued a copy: a call was accepted or threw, or a batch
  /// call failed or was refused after entries it may have queued (anything but a failIndex of 0).
  /// False after forgetQueued() until such a call: a failed issue() that queued nothing
  /// (refused at the first call, or before it) can be failed at once, with nothing to wait for.
  bool mayHaveQueued() const { return mayHaveQueued_; }
  /// Before a transfer's first step that may fail (an allocation before issue(), say).
  void forgetQueued() { mayHaveQueued_ = false; }

 private:
  // Copies `regions` into `out`, sorted by address (a few per pool; `out` keeps its capacity).
  template <class Regions>
  static void load(const Regions& regions, std::vector<Region>* out) {
    out->clear();
    for (const auto& r : regions) out->push_back(Region{r.address, r.bytes});
    std::sort(out->begin(), out->end(),
              [](const Region& a, const Region& b) { return a.address < b.address; });
  }
  kvio_status issueLoaded(const EngineOps& ops, const std::vector<kvio_copy2d>& plan,
                          const IssueOptions& options);
  kvio_status issueCopies(const EngineOps& ops, const IssueOptions& options, size_t planSize);
  kvio_status issueRows(const EngineOps& ops, const IssueOptions& options, size_t planSize);
  kvio_status issueBlocks(const EngineOps& ops, const IssueOptions& options, size_t planSize);
  kvio_status issue2d(const EngineOps& ops, const IssueOptions& options, size_t planSize,
                      size_t index, const EngineCopy& c);

  bool batchEnabled_ = true;
  bool batch3dEnabled_ = true;
  EngineCalls calls_;
  bool mayHaveQueued_ = false;
  std::vector<Region> src_, dst_;  // the pools' regions, sorted
  std::vector<EngineCopy> copies_;
  std::vector<size_t> rows_, blocks_;  // indices into copies_: 1-D copies, 2-D/3-D copies
  std::vector<EngineCopy> staged_;     // a batch3d call's entries
  std::vector<uint64_t> dsts_, srcs_;
  std::vector<size_t> sizes_;
};

}  // namespace engine
}  // namespace kvio

#endif  // KVIO_ENGINE_COPY_ENGINE_HPP_
