// GPU tests of the 'kernel' and 'direct' io backends (ctest label `cuda`; built with the CUDA
// backend, skipped with the reason where no driver or device is present). The conformance
// matrix runs both backends, both directions, every host layout and every device pool form
// (kvio-allocated, per-component and per-layer cudaMalloc buffers) against the oracle, reading
// device memory back with cudaMemcpy and comparing whole buffers. Further: device-resident
// indices with bad entries, pageable host memory refused, caller-owned host memory registered,
// caller streams, transfer events, CTA budgets 1 to 16.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "kvio/kvio.h"
#include "oracle.hpp"

namespace kvio_test {
namespace {

#define CUDA_OK(call) ASSERT_EQ((call), cudaSuccess) << #call

std::string unavailableReason() {
  if (kvio_backend_available(KVIO_BACKEND_KERNEL) == KVIO_STATUS_OK) return {};
  return std::string("no CUDA device: ") + kvio_last_error();
}

#define REQUIRE_GPU()                               \
  do {                                              \
    const std::string reason = unavailableReason(); \
    if (!reason.empty()) GTEST_SKIP() << reason;    \
  } while (0)

kvio_pool_spec specOf(const Geometry& g) {
  return {g.kind, g.layout, g.L, g.P, g.ps, g.H, g.hb};
}

/// A pool in pinned host memory (kvio-allocated, or a registered vector) or device memory
/// (kvio-allocated, or caller cudaMalloc buffers per component / per layer).
class GpuPool {
 public:
  GpuPool(const Geometry& g, bool device, bool wrapHost = false) : g_(g), device_(device) {
    const kvio_pool_spec spec = specOf(g);
    const size_t bytes = static_cast<size_t>(g.regionBytes());
    if (!device) {
      if (wrapHost) {
        hostStorage_.assign(bytes + 64, 0);
        regions_.push_back(hostStorage_.data() + 8);  // deliberately not 16-byte aligned
        EXPECT_EQ(kvio_pool_wrap_memory(&spec, KVIO_MEMORY_HOST_PINNED, 0,
                                        reinterpret_cast<uint64_t>(regions_[0]), bytes, &handle_),
                  KVIO_STATUS_OK)
            << kvio_last_error();
      } else {
        EXPECT_EQ(kvio_pool_allocate_memory(&spec, KVIO_MEMORY_HOST_PINNED, 0, &handle_),
                  KVIO_STATUS_OK)
            << kvio_last_error();
        uint64_t address = 0;
        EXPECT_EQ(kvio_pool_region(handle_, 0, &address, nullptr, nullptr), KVIO_STATUS_OK);
        regions_.push_back(reinterpret_cast<uint8_t*>(address));
      }
      return;
    }
    if (g.form == Form::Single || g.form == Form::Allocated) {
      EXPECT_EQ(kvio_pool_allocate_memory(&spec, KVIO_MEMORY_CUDA_DEVICE, 0, &handle_),
                KVIO_STATUS_OK)
          << kvio_last_error();
      uint64_t address = 0;
      EXPECT_EQ(kvio_pool_region(handle_, 0, &address, nullptr, nullptr), KVIO_STATUS_OK);
      regions_.push_back(reinterpret_cast<uint8_t*>(address));
      return;
    }
    std::vector<uint64_t> addresses;
    for (int64_t r = 0; r < g.regions(); ++r) {
      void* p = nullptr;
      EXPECT_EQ(cudaMalloc(&p, bytes), cudaSuccess);
      owned_.push_back(p);
      regions_.push_back(static_cast<uint8_t*>(p));
      addresses.push_back(reinterpret_cast<uint64_t>(p));
    }
    if (g.form == Form::PerComponent) {
      EXPECT_EQ(
          kvio_pool_wrap_components_memory(&spec, KVIO_MEMORY_CUDA_DEVICE, 0, addresses.data(),
                                           static_cast<int32_t>(g.C()), bytes, &handle_),
          KVIO_STATUS_OK)
          << kvio_last_error();
    } else {
      EXPECT_EQ(kvio_pool_wrap_layer_table_memory(
                    &spec, KVIO_MEMORY_CUDA_DEVICE, 0, addresses.data(),
                    static_cast<int64_t>(addresses.size()), bytes, &handle_),
                KVIO_STATUS_OK)
          << kvio_last_error();
    }
  }
  ~GpuPool() {
    kvio_pool_close(handle_);
    for (void* p : owned_) cudaFree(p);
  }
  uint64_t handle() const { return handle_; }
  Image read() const {
    Image image;
    const size_t bytes = static_cast<size_t>(g_.regionBytes());
    for (uint8_t* r : regions_) {
      image.buffers.emplace_back(bytes);
      EXPECT_EQ(cudaMemcpy(image.buffers.back().data(), r, bytes, cudaMemcpyDefault), cudaSuccess);
    }
    return image;
  }
  void write(const Image& image) {
    const size_t bytes = static_cast<size_t>(g_.regionBytes());
    for (size_t r = 0; r < regions_.size(); ++r) {
      EXPECT_EQ(cudaMemcpy(regions_[r], image.buffers[r].data(), bytes, cudaMemcpyDefault),
                cudaSuccess);
    }
  }
  Image random(std::mt19937_64& rng) const {
    Image image;
    for (size_t r = 0; r < regions_.size(); ++r) {
      image.buffers.emplace_back(static_cast<size_t>(g_.regionBytes()));
      fillRandom(image.buffers.back().data(), image.buffers.back().size(), rng);
    }
    return image;
  }

 private:
  Geometry g_;
  bool device_;
  uint64_t handle_ = 0;
  std::vector<uint8_t*> regions_;
  std::vector<void*> owned_;
  std::vector<uint8_t> hostStorage_;
};

Geometry make(int32_t kind, int32_t layout, Form form, int64_t L, int64_t P, int64_t ps, int64_t H,
              int64_t hb) {
  Geometry g;
  g.kind = kind;
  g.layout = layout;
  g.form = form;
  g.L = L;
  g.P = P;
  g.ps = ps;
  g.H = H;
  g.hb = hb;
  return g;
}

// One transfer src -> dst on `executor`, checked against the oracle (whole destination).
void checkTransfer(uint64_t executor, const Geometry& sg, GpuPool& src, const Geometry& dg,
                   GpuPool& dst, std::mt19937_64& rng, int64_t layers, int64_t srcLayer,
                   int64_t dstLayer) {
  const Image srcImage = src.random(rng);
  src.write(srcImage);
  Image expected = dst.random(rng);
  dst.write(expected);
  const int64_t n =
      1 + static_cast<int64_t>(rng() % static_cast<uint64_t>(std::min(sg.S(), dg.S())));
  std::vector<int64_t> srcIdx = distinct(rng, sg.S(), n);
  std::vector<int64_t> dstIdx = distinct(rng, dg.S(), n);
  if (rng() % 2 == 0) {  // page-aligned runs, the common case
    std::sort(srcIdx.begin(), srcIdx.end());
    std::sort(dstIdx.begin(), dstIdx.end());
  }
  uint64_t transfer = 0;
  ASSERT_EQ(kvio_submit_args(executor, src.handle(), dst.handle(), srcIdx.data(), dstIdx.data(), n,
                             srcLayer, dstLayer, layers, &transfer),
            KVIO_STATUS_OK)
      << kvio_last_error();
  ASSERT_EQ(kvio_transfer_wait(transfer, -1), KVIO_STATUS_OK) << kvio_last_error();
  EXPECT_EQ(kvio_transfer_is_done(transfer), 1);
  EXPECT_EQ(kvio_transfer_close(transfer), KVIO_STATUS_OK);
  applyTransfer(sg, srcImage, dg, &expected, srcIdx, dstIdx, srcLayer, dstLayer, layers);
  EXPECT_TRUE(sameImage(expected, dst.read(), "destination"));
}

class CudaConformance : public ::testing::TestWithParam<int32_t> {};

TEST_P(CudaConformance, EveryLayoutFormAndDirectionMatchesOracle) {
  REQUIRE_GPU();
  const int32_t backend = GetParam();
  uint64_t executor = 0;
  ASSERT_EQ(kvio_executor_create_cuda(backend, 0, KVIO_CUDA_OWN_STREAM, 0, 0, &executor),
            KVIO_STATUS_OK)
      << kvio_last_error();
  std::mt19937_64 rng(42 + backend);
  struct Row {
    int32_t kind;
    int64_t H, hb;
  } rows[] = {{KVIO_KIND_MHA, 8, 128}, {KVIO_KIND_MHA, 2, 8},  {KVIO_KIND_MLA, 1, 576},
              {KVIO_KIND_MLA, 1, 656}, {KVIO_KIND_MHA, 3, 20}, {KVIO_KIND_MHA, 1, 4096}};
  for (const Row& r : rows) {
    for (int32_t layout = 0; layout < KVIO_LAYOUT_COUNT; ++layout) {
      if (layout == KVIO_LAYOUT_PAGE_HEAD && r.kind != KVIO_KIND_MHA) continue;
      for (Form form : {Form::Allocated, Form::PerComponent, Form::PerLayer}) {
        if (form == Form::PerComponent && r.kind == KVIO_KIND_MLA) continue;
        const Geometry dg = make(r.kind, KVIO_LAYOUT_LAYER_FIRST, form, 4, 6, 16, r.H, r.hb);
        const Geometry hg = make(r.kind, layout, Form::Allocated, 4, 8, 16, r.H, r.hb);
        SCOPED_TRACE(std::string(kvio_name(KVIO_NAME_BACKEND, backend)) + " " + dg.describe() +
                     " <-> " + hg.describe());
        GpuPool device(dg, true);
        GpuPool host(hg, false, layout == KVIO_LAYOUT_PAGE_FIRST);
        checkTransfer(executor, dg, device, hg, host, rng, 4, 0, 0);  // all-layer backup
        checkTransfer(executor, hg, host, dg, device, rng, 1, 2, 2);  // per-layer load
        checkTransfer(executor, hg, host, dg, device, rng, 2, 1, 0);  // shifted layer map
      }
    }
  }
  EXPECT_EQ(kvio_executor_close(executor), KVIO_STATUS_OK);
}

INSTANTIATE_TEST_SUITE_P(Backends, CudaConformance,
                         ::testing::Values(KVIO_BACKEND_KERNEL, KVIO_BACKEND_DIRECT),
                         [](const ::testing::TestParamInfo<int32_t>& info) {
                           return std::string(kvio_name(KVIO_NAME_BACKEND, info.param));
                         });

TEST(CudaKernel, CtaBudgetsAndWarpsGiveTheSameBytes) {
  REQUIRE_GPU();
  uint64_t executor = 0;
  ASSERT_EQ(kvio_executor_create(KVIO_BACKEND_KERNEL, 0, &executor), KVIO_STATUS_OK);
  std::mt19937_64 rng(5);
  const Geometry dg =
      make(KVIO_KIND_MHA, KVIO_LAYOUT_LAYER_FIRST, Form::PerLayer, 2, 64, 16, 4, 64);
  const Geometry hg =
      make(KVIO_KIND_MHA, KVIO_LAYOUT_PAGE_FIRST, Form::Allocated, 2, 64, 16, 4, 64);
  GpuPool device(dg, true), host(hg, false);
  for (int32_t budget : {1, 2, 3, 4, 8, 16}) {
    for (int32_t warps : {1, 4, 32}) {
      ASSERT_EQ(kvio_executor_set_launch(executor, budget, warps), KVIO_STATUS_OK);
      checkTransfer(executor, dg, device, hg, host, rng, 2, 0, 0);
    }
  }
  EXPECT_EQ(kvio_executor_set_launch(executor, 1, 33), KVIO_STATUS_INVALID_ARGUMENT);
  // Per-transfer shapes, the executor's setting untouched.
  const std::vector<int64_t> idx = expandPages({0, 9, 33}, 16);
  for (int32_t budget : {1, 5, 16}) {
    uint64_t t = 0;
    const kvio_transfer_desc desc{host.handle(),
                                  device.handle(),
                                  idx.data(),
                                  idx.data(),
                                  static_cast<int64_t>(idx.size()),
                                  0,
                                  0,
                                  2};
    ASSERT_EQ(kvio_submit_launch(executor, &desc, budget, 2, &t), KVIO_STATUS_OK);
    EXPECT_EQ(kvio_transfer_wait(t, -1), KVIO_STATUS_OK);
    EXPECT_EQ(kvio_transfer_close(t), KVIO_STATUS_OK);
  }
  checkTransfer(executor, hg, host, dg, device, rng, 2, 0, 0);
  EXPECT_EQ(kvio_executor_close(executor), KVIO_STATUS_OK);
}

TEST(CudaKernel, DeviceIndicesOutOfRangeAreSkippedAndReported) {
  REQUIRE_GPU();
  uint64_t executor = 0;
  ASSERT_EQ(kvio_executor_create(KVIO_BACKEND_KERNEL, 0, &executor), KVIO_STATUS_OK);
  const Geometry g = make(KVIO_KIND_MHA, KVIO_LAYOUT_LAYER_FIRST, Form::Allocated, 2, 4, 4, 1, 64);
  GpuPool src(g, true), dst(g, false);
  std::mt19937_64 rng(9);
  const Image srcImage = src.random(rng);
  src.write(srcImage);
  Image expected = dst.random(rng);
  dst.write(expected);
  const std::vector<int64_t> s = {0, 1, 1000, 3, -5, 5}, d = {7, 6, 5, 16, 3, 2};
  applyTransfer(g, srcImage, g, &expected, {0, 1, 5}, {7, 6, 2}, 0, 0, 2);
  int64_t* deviceIndices = nullptr;
  CUDA_OK(cudaMalloc(&deviceIndices, 2 * s.size() * sizeof(int64_t)));
  CUDA_OK(cudaMemcpy(deviceIndices, s.data(), s.size() * 8, cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemcpy(deviceIndices + s.size(), d.data(), d.size() * 8, cudaMemcpyHostToDevice));
  const kvio_transfer_desc desc{src.handle(),
                                dst.handle(),
                                deviceIndices,
                                deviceIndices + s.size(),
                                static_cast<int64_t>(s.size()),
                                0,
                                0,
                                2};
  uint64_t transfer = 0;
  ASSERT_EQ(kvio_submit_device_indices(executor, &desc, &transfer), KVIO_STATUS_OK)
      << kvio_last_error();
  EXPECT_EQ(kvio_transfer_wait(transfer, -1), KVIO_STATUS_OUT_OF_RANGE);
  const std::string message = kvio_last_error();
  EXPECT_NE(message.find("skipped 3 index pairs"), std::string::npos) << message;
  EXPECT_NE(message.find("pair 2"), std::string::npos) << message;
  EXPECT_TRUE(sameImage(expected, dst.read(), "destination"));
  EXPECT_EQ(kvio_transfer_close(transfer), KVIO_STATUS_OK);
  // Host arrays passed as device indices are refused before anything is launched.
  const kvio_transfer_desc hostDesc{
      src.handle(), dst.handle(), s.data(), d.data(), static_cast<int64_t>(s.size()), 0, 0, 2};
  EXPECT_EQ(kvio_submit_device_indices(executor, &hostDesc, &transfer),
            KVIO_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(std::string(kvio_last_error()).find("not memory of CUDA device"), std::string::npos)
      << kvio_last_error();
  CUDA_OK(cudaFree(deviceIndices));
  EXPECT_EQ(kvio_executor_close(executor), KVIO_STATUS_OK);
}

TEST(CudaBackends, PageableHostMemoryIsRefused) {
  REQUIRE_GPU();
  const Geometry g = make(KVIO_KIND_MLA, KVIO_LAYOUT_LAYER_FIRST, Form::Allocated, 1, 2, 4, 1, 64);
  const kvio_pool_spec spec = specOf(g);
  uint64_t pageable = 0;
  ASSERT_EQ(kvio_pool_allocate(&spec, &pageable), KVIO_STATUS_OK);
  GpuPool device(g, true);
  for (int32_t backend : {KVIO_BACKEND_KERNEL, KVIO_BACKEND_DIRECT}) {
    uint64_t executor = 0, transfer = 0;
    ASSERT_EQ(kvio_executor_create(backend, 0, &executor), KVIO_STATUS_OK);
    const int64_t s[1] = {0}, d[1] = {1};
    EXPECT_EQ(kvio_submit_args(executor, device.handle(), pageable, s, d, 1, 0, 0, 1, &transfer),
              KVIO_STATUS_UNSUPPORTED);
    EXPECT_NE(std::string(kvio_last_error()).find("pinned"), std::string::npos);
    EXPECT_EQ(kvio_executor_close(executor), KVIO_STATUS_OK);
  }
  uint64_t cpu = 0, transfer = 0;
  ASSERT_EQ(kvio_executor_create(KVIO_BACKEND_CPU, 1, &cpu), KVIO_STATUS_OK);
  const int64_t s[1] = {0}, d[1] = {1};
  EXPECT_EQ(kvio_submit_args(cpu, device.handle(), pageable, s, d, 1, 0, 0, 1, &transfer),
            KVIO_STATUS_UNSUPPORTED);
  EXPECT_EQ(kvio_executor_close(cpu), KVIO_STATUS_OK);
  EXPECT_EQ(kvio_pool_close(pageable), KVIO_STATUS_OK);
}

TEST(CudaBackends, CallerStreamAndTransferEvents) {
  REQUIRE_GPU();
  cudaStream_t stream = nullptr, consumer = nullptr;
  CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  CUDA_OK(cudaStreamCreateWithFlags(&consumer, cudaStreamNonBlocking));
  const Geometry dg =
      make(KVIO_KIND_MHA, KVIO_LAYOUT_LAYER_FIRST, Form::PerLayer, 4, 8, 16, 2, 128);
  const Geometry hg =
      make(KVIO_KIND_MHA, KVIO_LAYOUT_PAGE_FIRST, Form::Allocated, 4, 8, 16, 2, 128);
  for (int32_t backend : {KVIO_BACKEND_KERNEL, KVIO_BACKEND_DIRECT}) {
    uint64_t executor = 0, reported = 0;
    ASSERT_EQ(
        kvio_executor_create_cuda(backend, 0, reinterpret_cast<uint64_t>(stream), 2, 8, &executor),
        KVIO_STATUS_OK);
    ASSERT_EQ(kvio_executor_cuda_stream(executor, &reported), KVIO_STATUS_OK);
    EXPECT_EQ(reported, reinterpret_cast<uint64_t>(stream));
    GpuPool device(dg, true), host(hg, false);
    std::mt19937_64 rng(11);
    // Per-layer loads, each signalling its own event; the consumer stream waits on layer 2's.
    std::vector<uint64_t> transfers;
    const std::vector<int64_t> idx = expandPages({0, 3, 5}, 16);
    for (int64_t layer = 0; layer < 4; ++layer) {
      uint64_t t = 0;
      ASSERT_EQ(kvio_submit_args(executor, host.handle(), device.handle(), idx.data(), idx.data(),
                                 static_cast<int64_t>(idx.size()), layer, layer, 1, &t),
                KVIO_STATUS_OK);
      transfers.push_back(t);
    }
    uint64_t event = 0;
    ASSERT_EQ(kvio_transfer_cuda_event(transfers[2], &event), KVIO_STATUS_OK);
    ASSERT_NE(event, 0u);
    CUDA_OK(cudaStreamWaitEvent(consumer, reinterpret_cast<cudaEvent_t>(event), 0));
    CUDA_OK(cudaStreamSynchronize(consumer));
    EXPECT_EQ(kvio_transfer_is_done(transfers[2]), 1);
    for (uint64_t t : transfers) {
      EXPECT_EQ(kvio_transfer_wait(t, -1), KVIO_STATUS_OK);
      EXPECT_EQ(kvio_transfer_close(t), KVIO_STATUS_OK);
    }
    checkTransfer(executor, hg, host, dg, device, rng, 4, 0, 0);
    EXPECT_EQ(kvio_executor_close(executor), KVIO_STATUS_OK);
  }
  CUDA_OK(cudaStreamDestroy(stream));
  CUDA_OK(cudaStreamDestroy(consumer));
}

TEST(CudaBackends, ClosingPoolsAndTransfersEarlyIsSafe) {
  REQUIRE_GPU();
  const Geometry g =
      make(KVIO_KIND_MHA, KVIO_LAYOUT_LAYER_FIRST, Form::Allocated, 8, 256, 16, 8, 128);
  const kvio_pool_spec spec = specOf(g);
  for (int32_t backend : {KVIO_BACKEND_KERNEL, KVIO_BACKEND_DIRECT}) {
    uint64_t executor = 0;
    ASSERT_EQ(kvio_executor_create(backend, 0, &executor), KVIO_STATUS_OK);
    for (int i = 0; i < 20; ++i) {
      uint64_t a = 0, b = 0, t = 0;
      ASSERT_EQ(kvio_pool_allocate_memory(&spec, KVIO_MEMORY_CUDA_DEVICE, 0, &a), KVIO_STATUS_OK);
      ASSERT_EQ(kvio_pool_allocate_memory(&spec, KVIO_MEMORY_HOST_PINNED, 0, &b), KVIO_STATUS_OK);
      const std::vector<int64_t> idx = expandPages({1, 7, 100, 255}, 16);
      ASSERT_EQ(kvio_submit_args(executor, a, b, idx.data(), idx.data(),
                                 static_cast<int64_t>(idx.size()), 0, 0, 8, &t),
                KVIO_STATUS_OK);
      EXPECT_EQ(kvio_pool_close(a), KVIO_STATUS_OK);
      EXPECT_EQ(kvio_pool_close(b), KVIO_STATUS_OK);
      EXPECT_EQ(kvio_transfer_close(t), KVIO_STATUS_OK);  // never waited for
    }
    EXPECT_EQ(kvio_executor_close(executor), KVIO_STATUS_OK);
  }
}

}  // namespace
}  // namespace kvio_test
