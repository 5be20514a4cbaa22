// planOf(): the plan kvio_plan returns for a transfer (asserting that planning succeeds and
// that a second call with room for the copies returns the same count); regionsOf(): the memory
// regions kvio keeps for a pool (kvio_pool_region), where copy engines cut. Shared by the
// planner and copy-engine tests; kept apart from oracle.hpp, which must not call the code it
// checks.
#ifndef KVIO_TESTS_PLAN_SUPPORT_HPP_
#define KVIO_TESTS_PLAN_SUPPORT_HPP_

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include "kvio/kvio.h"
#include "oracle.hpp"
#include "pool_fixtures.hpp"

namespace kvio_test {

inline std::vector<kvio_copy2d> planOf(const kvio_transfer_desc& desc) {
  int64_t count = -1;
  EXPECT_EQ(kvio_plan(&desc, nullptr, 0, &count), KVIO_STATUS_OK) << kvio_last_error();
  std::vector<kvio_copy2d> plan(static_cast<size_t>(std::max<int64_t>(count, 0)));
  int64_t again = -1;
  EXPECT_EQ(kvio_plan(&desc, plan.data(), count, &again), KVIO_STATUS_OK);
  EXPECT_EQ(again, count);
  return plan;
}

inline std::vector<kvio_copy2d> planOf(const TestPool& src, const TestPool& dst,
                                       const std::vector<int64_t>& srcIdx,
                                       const std::vector<int64_t>& dstIdx, int64_t srcLayer,
                                       int64_t dstLayer, int64_t layers) {
  return planOf(descOf(src, dst, srcIdx, dstIdx, srcLayer, dstLayer, layers));
}

/// The memory regions kvio knows for a pool (kvio_pool_region): what an executor cuts at.
inline std::vector<Buffer> regionsOf(uint64_t pool) {
  int64_t count = 0;
  EXPECT_EQ(kvio_pool_region(pool, 0, nullptr, nullptr, &count), KVIO_STATUS_OK)
      << kvio_last_error();
  std::vector<Buffer> regions(static_cast<size_t>(std::max<int64_t>(count, 0)));
  for (int64_t r = 0; r < count; ++r) {
    Buffer& b = regions[static_cast<size_t>(r)];
    EXPECT_EQ(kvio_pool_region(pool, r, &b.address, &b.bytes, nullptr), KVIO_STATUS_OK);
  }
  return regions;
}

/// A pool geometry of `layout` (-1: a random one of the kind's layouts), six pages; layer_first
/// pools take a random buffer form (one buffer, per component for MHA, per layer).
inline Geometry randomPoolGeometry(std::mt19937_64& rng, int32_t kind, int64_t L, int64_t ps,
                                   int64_t H, int64_t hb, int32_t layout = -1) {
  Geometry g;
  g.kind = kind;
  const int32_t layouts = kind == KVIO_KIND_MHA ? 4 : 3;
  g.layout = layout >= 0 ? layout : static_cast<int32_t>(rng() % layouts);
  g.form = Form::Single;
  if (g.layout == KVIO_LAYOUT_LAYER_FIRST) {
    const Form forms[] = {Form::Single, Form::PerComponent, Form::PerLayer};
    g.form = forms[rng() % 3];
    if (g.form == Form::PerComponent && kind == KVIO_KIND_MLA) g.form = Form::Single;
  }
  g.L = L;
  g.P = 6;
  g.ps = ps;
  g.H = H;
  g.hb = hb;
  return g;
}

}  // namespace kvio_test

#endif  // KVIO_TESTS_PLAN_SUPPORT_HPP_
