// Conformance of the 'direct' io backend's copy issuing against the oracle, on any machine: the
// whole matrix of conformance_matrix.hpp (pool kind x host layout x device pool form x
// direction; granularities, layer-sharded host pools, page and row sizes, index patterns),
// each transfer planned by kvio (kvio_plan), cut and issued as the direct executor does it,
// with the pools' own regions (kvio_pool_region), on a fake copy engine that refuses what a
// real one refuses (fake_copy_engine.hpp: a copy spanning two allocations, even adjacent ones;
// bad pitches; zero sizes). The device pools' per-component and per-layer buffers lie apart,
// back to back, or at equal distance with gaps: carved from one block, they line up like one
// strided buffer, so the planner merges across them and only the allocation boundaries stop a
// copy from spanning two of them (the H200 failure: "copy 0 of 74, 4 rows of 1024 bytes,
// pitches dst 16384 src 98304"). Back to back also runs without the batch call.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "conformance_matrix.hpp"
#include "cuda/direct_copies.hpp"
#include "fake_copy_engine.hpp"
#include "kvio/kvio.h"
#include "oracle.hpp"
#include "plan_support.hpp"

namespace kvio_test {
namespace {

// The direct executor's host logic on the fake engine, as DirectExecutor::enqueue runs it:
// the direct backend's engine table, one issuer for all the transfers of a case; withBatch
// false: a driver without cuMemcpyBatchAsync (1-D copies one by one).
struct DirectOnFakeEngine {
  FakeCopyEngine engine;
  kvio::engine::CopyIssuer issuer;
  bool withBatch = true;
  bool withBatch3d = false;

  kvio_status issue(const std::vector<kvio_copy2d>& plan, const std::vector<Buffer>& src,
                    const std::vector<Buffer>& dst) {
    const kvio::engine::EngineOps ops =
        engine.ops(kvio::cuda::directEngine(), withBatch, withBatch3d);
    return issuer.issue(ops, plan, memoryRegions(src), memoryRegions(dst), {});
  }
};

void runDirectMatrix(const Case& c, Placement placement, bool withBatch = true,
                     bool withBatch3d = false) {
  DirectOnFakeEngine direct;
  direct.withBatch = withBatch;
  direct.withBatch3d = withBatch3d;
  MatrixTarget target;
  target.devicePlacement = placement;
  target.runTransfer = [&direct](TestPool& src, TestPool& dst,
                                 const kvio_transfer_desc& desc) -> uint64_t {
    std::vector<Buffer> allocations = src.buffers();
    for (const Buffer& b : dst.buffers()) allocations.push_back(b);
    direct.engine.setAllocations(allocations);
    const uint64_t before = direct.engine.bytesCopied;
    const kvio_status status =
        direct.issue(planOf(desc), regionsOf(desc.src_pool), regionsOf(desc.dst_pool));
    EXPECT_EQ(status, KVIO_STATUS_OK) << kvio_last_error();
    EXPECT_EQ(direct.engine.refused, 0) << direct.engine.lastRefusal;
    return direct.engine.bytesCopied - before;
  };
  runConformanceCase(target, c);
}

class DirectCopyEngineConformance : public ::testing::TestWithParam<Case> {};

TEST_P(DirectCopyEngineConformance, BuffersApart) {
  runDirectMatrix(GetParam(), apart());
}

TEST_P(DirectCopyEngineConformance, BuffersBackToBack) {
  runDirectMatrix(GetParam(), carved(0));
}

TEST_P(DirectCopyEngineConformance, BuffersEquallySpaced) {
  runDirectMatrix(GetParam(), carved(kGuard));
}

TEST_P(DirectCopyEngineConformance, BuffersBackToBackWithoutBatchCopies) {
  runDirectMatrix(GetParam(), carved(0), false);
}

// With cudaMemcpy3DBatchAsync: 2-D copies nested into 3-D ones where their strides allow, all
// of them in 3-D batches, 1-D copies gathered; the 3-D footprints must stay in one allocation.
TEST_P(DirectCopyEngineConformance, BuffersBackToBackWith3dBatches) {
  runDirectMatrix(GetParam(), carved(0), true, true);
}

TEST_P(DirectCopyEngineConformance, BuffersEquallySpacedWith3dBatches) {
  runDirectMatrix(GetParam(), carved(kGuard), true, true);
}

INSTANTIATE_TEST_SUITE_P(AllLayouts, DirectCopyEngineConformance, ::testing::ValuesIn(allCases()),
                         caseName);

}  // namespace
}  // namespace kvio_test
