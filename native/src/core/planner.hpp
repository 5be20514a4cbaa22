// The planner: turns a validated transfer into a short list of 2-D copies by coalescing
// index runs that are contiguous on both sides, across tokens and across layers. Pure host
// code; every executor that works from a plan (the cpu executor, the copy engine, the NPU
// executor) takes its output, and kvio_plan() exposes it to tests and tools.
#ifndef KVIO_CORE_PLANNER_HPP_
#define KVIO_CORE_PLANNER_HPP_

#include <cstdint>
#include <vector>

#include "kvio/kvio.h"
#include "layout.hpp"

namespace kvio {

/// A maximal run of index pairs where source and destination slots both advance by one and
/// each side's addresses stay affine (the run does not cross a page boundary of a side whose
/// pages are not seamless). `position` is the index of the run's first pair.
struct IndexRun {
  int64_t src;
  int64_t dst;
  int64_t length;
  int64_t position;
};

struct PlanRequest {
  const AffineLayout* src = nullptr;
  const AffineLayout* dst = nullptr;
  const int64_t* srcIndices = nullptr;
  const int64_t* dstIndices = nullptr;
  int64_t count = 0;
  int64_t srcLayerStart = 0;
  int64_t dstLayerStart = 0;
  int64_t numLayers = 0;
};

/// Splits the index pairs of a request into runs (indices must already be in range).
void splitRuns(const PlanRequest& request, std::vector<IndexRun>* runs);

/// Plans a validated request from its runs. The result moves exactly the bytes of the
/// request: every (pair, layer, component) row once.
void planTransfer(const PlanRequest& request, const std::vector<IndexRun>& runs,
                  std::vector<kvio_copy2d>* plan);

/// An upper bound, in O(runs), on the bytes of any one row (contiguous piece) of the plan that
/// planTransfer makes from these runs: the most consecutive pairs whose slots go up by one on
/// both sides (a group of runs that continue each other, as splitRuns splits them at page ends)
/// times the bytes a token has in the request (row x layers x components). A plan row lies
/// within one such group's tokens, except where it continues from a group's end in one layer or
/// component into another group's start in the next on both sides; such a row is at most two
/// groups' pieces unless a group covers a whole layer, and then the bound covers the whole
/// request. What lets the 'auto' io backend rule out the copy engine without planning
/// (auto_executor.cpp).
uint64_t planRowBound(const PlanRequest& request, const std::vector<IndexRun>& runs);

/// The bytes one 2-D copy moves: width x height, written once (planBytes, auto's plan summary and
/// the cpu executor's task cutting use it).
inline uint64_t copyBytes(const kvio_copy2d& copy) {
  return copy.width * copy.height;
}

/// The bytes a plan moves: the sum of its copies' copyBytes (for planTransfer's plan, the
/// request's bytes). What the default Executor::prepare reports and the cpu executor sizes jobs
/// by.
uint64_t planBytes(const std::vector<kvio_copy2d>& plan);

/// Appends `copy` to `plan`, merging it into the last copy when the two are contiguous or
/// continue the last copy's rows at a constant pitch.
void appendCoalesced(std::vector<kvio_copy2d>* plan, const kvio_copy2d& copy);

}  // namespace kvio

#endif  // KVIO_CORE_PLANNER_HPP_
