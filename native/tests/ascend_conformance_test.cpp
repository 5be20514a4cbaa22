// Conformance of the kernel_ascend executor against the oracle: the whole matrix of
// conformance_matrix.hpp (pool kind x host layout x device pool form x direction; every
// granularity, layer-sharded host pools, page and row sizes, index patterns), run through the
// ACL host emulation (acl_host_emulation.hpp) with device pools in emulated NPU memory and host
// pools in emulated pinned memory (aclrtMallocHost), the device pools' buffers apart, back to
// back, or at equal distance (each tagged as its own allocation, so the emulation refuses a
// copy that spans two). On top of the whole-buffer compares, the emulation must have copied
// exactly the transfer's bytes (nothing twice, nothing extra) and answered no call with an
// error.
#include <gtest/gtest.h>

#include <string>

#include "acl_host_emulation.hpp"
#include "conformance_matrix.hpp"
#include "kvio/kvio.hpp"

namespace kvio_test {
namespace {

class AscendConformanceTest : public ::testing::TestWithParam<Case> {
 protected:
  static void SetUpTestSuite() { AclHostEmulation::instance().install(); }
  static void TearDownTestSuite() { AclHostEmulation::instance().uninstall(); }
};

void runAscendMatrix(const Case& c, Placement placement) {
  AclHostEmulation& acl = AclHostEmulation::instance();
  acl.reset();
  // Work completes only when kvio waits or polls, as on a device: a result read, a buffer reused
  // or a registration ended before its copy ran shows (the faults and the compares below).
  acl.deferWork();
  kvio::Executor ascend(kvio::IoBackend::KernelAscend);
  MatrixTarget target;
  target.executor = &ascend;
  target.deviceMemory = KVIO_MEMORY_ASCEND_DEVICE;
  target.hostMemory = KVIO_MEMORY_ASCEND_HOST_PINNED;
  target.device = 0;
  // Each buffer tagged as NPU memory before the wrap, which asks where it lies.
  placement.tagRegion = [&acl](uint8_t* region, size_t bytes) {
    return acl.tagDevice(region, bytes, 0);
  };
  target.devicePlacement = placement;
  AclCallCounts before;
  target.afterTransfers = [&acl, &before](const TransferGroup& g) {
    const AclCallCounts counts = acl.counts();
    EXPECT_EQ(counts.rejected, 0) << acl.recentError();
    std::string fault;
    EXPECT_EQ(acl.faults(&fault), 0) << fault;  // e.g. host memory registered but not pinned
    EXPECT_EQ(counts.bytesCopied - before.bytesCopied, g.bytes);
    EXPECT_GT(counts.heldWorkRuns, before.heldWorkRuns) << "no work was deferred to kvio's waits";
    // Coalescing: whole pages cost at most one copy per (page, layer, component) - per head
    // for page_head, whose heads are apart - and the dim exchange (page_first_direct host,
    // one buffer per component on the device) at most one per (page, component): a run of r
    // pages over h layers is min(r, h) copies. Copies, not calls: batched copies count.
    if (g.pattern == Pattern::WholePages) {
      const int64_t issued = (counts.memcpyAsync - before.memcpyAsync) +
                             (counts.memcpy2dAsync - before.memcpy2dAsync) +
                             (counts.batchedCopies - before.batchedCopies);
      const int64_t components = g.device->C();
      const bool dimExchange = g.testCase->hostLayout == KVIO_LAYOUT_PAGE_FIRST_DIRECT &&
                               g.testCase->deviceForm != Form::PerLayer;
      const int64_t heads = g.testCase->hostLayout == KVIO_LAYOUT_PAGE_HEAD ? g.device->H : 1;
      // A wrapped host buffer (the sharded cases) that starts or ends inside a page has that
      // page registered apart from the rest (docs/memory-lifetime.md), and a copy over a
      // boundary between registrations is cut there: a 2-D copy into at most four (the rows
      // before, the row the boundary splits, in two, and the rows after). The copies of one
      // transfer whose footprints span one boundary are at most one per component, head and
      // layer (their rows interleave in a page_first or page_head page; whole pages otherwise
      // cover disjoint host bytes).
      const int64_t boundaries =
          g.host->form == Form::Allocated
              ? 0
              : registrationsFor(g.hostBuffers) - static_cast<int64_t>(g.hostBuffers.size());
      const int64_t bound =
          g.transfers * g.pages * components * (dimExchange ? 1 : g.layersPerTransfer * heads) +
          g.transfers * boundaries * components * heads * g.layersPerTransfer * 3;
      EXPECT_LE(issued, bound) << g.pages << " pages x " << g.layersPerTransfer << " layers";
    }
    before = counts;
  };
  runConformanceCase(target, c);
}

TEST_P(AscendConformanceTest, MatchesOracle) {
  runAscendMatrix(GetParam(), apart());
}

TEST_P(AscendConformanceTest, MatchesOracleWithBuffersBackToBack) {
  runAscendMatrix(GetParam(), carved(0));
}

TEST_P(AscendConformanceTest, MatchesOracleWithBuffersEquallySpaced) {
  runAscendMatrix(GetParam(), carved(kGuard));
}

INSTANTIATE_TEST_SUITE_P(AllLayouts, AscendConformanceTest, ::testing::ValuesIn(allCases()),
                         caseName);

}  // namespace
}  // namespace kvio_test
