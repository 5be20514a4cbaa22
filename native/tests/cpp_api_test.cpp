// The C++ layer (kvio.hpp) as a C++ serving engine meets it: braced index lists, empty batches,
// movable executors, the overlap mark and per-transfer launch shapes, device-resident indices,
// the support rules, transfer timing, the GPU and NPU entry points (where this machine has no
// device: their refusals). Byte checks use pools of one layer and one head
// in layer_first, whose token t's row is at t * headBytes: the oracle is that one product.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "kvio/kvio.h"
#include "kvio/kvio.hpp"
#include "oracle.hpp"
#include "rejection_assertions.hpp"

namespace {

using kvio_test::expectError;

constexpr int64_t kRow = 16;  // bytes of one token's row (MLA: one component)

// MLA layer_first, 1 layer, 2 pages of 4 tokens, 1 head of kRow bytes.
kvio::PoolSpec oneLayerSpec() {
  return kvio_test::Geometry{
      KVIO_KIND_MLA, KVIO_LAYOUT_LAYER_FIRST, kvio_test::Form::Single, 1, 2, 4, 1, kRow}
      .spec();
}

// Source byte i holds i % 251; the destination is a canary (0xA5).
void fill(kvio::Pool& src, kvio::Pool& dst) {
  for (uint64_t i = 0; i < src.bytes(); ++i) src.data()[i] = static_cast<uint8_t>(i % 251);
  std::memset(dst.data(), 0xA5, dst.bytes());
}

// The destination after moving source token s[i] to destination token d[i]: the canary except
// those rows.
std::vector<uint8_t> expected(const kvio::Pool& dst, const std::vector<int64_t>& s,
                              const std::vector<int64_t>& d) {
  std::vector<uint8_t> out(dst.bytes(), 0xA5);
  for (size_t i = 0; i < s.size(); ++i) {
    for (int64_t b = 0; b < kRow; ++b) {
      out[static_cast<size_t>(d[i] * kRow + b)] = static_cast<uint8_t>((s[i] * kRow + b) % 251);
    }
  }
  return out;
}

std::vector<uint8_t> contents(const kvio::Pool& pool) {
  return std::vector<uint8_t>(pool.data(), pool.data() + pool.bytes());
}

// Name<void, Args...>::value: whether kvio::Call(executor, src, dst, SRC, DST, Args...) compiles
// (a deleted overload takes a bool where a layer number goes).
#define KVIO_TEST_COMPILES(Name, Call, SRC, DST)                                            \
  template <class, class... Args>                                                           \
  struct Name : std::false_type {};                                                         \
  template <class... Args>                                                                  \
  struct Name<decltype((void)kvio::Call(                                                    \
                  std::declval<const kvio::Executor&>(), std::declval<const kvio::Pool&>(), \
                  std::declval<const kvio::Pool&>(), SRC, DST, std::declval<Args>()...)),   \
              Args...> : std::true_type {}
#define KVIO_TEST_SLOTS std::declval<std::vector<int64_t>&>()
#define KVIO_TEST_DEVICE_SLOTS std::declval<const kvio::DeviceIndices&>()
KVIO_TEST_COMPILES(PerLayerCompiles, transferPerLayer, KVIO_TEST_SLOTS, KVIO_TEST_SLOTS);
KVIO_TEST_COMPILES(AllLayersCompiles, transferAllLayers, KVIO_TEST_SLOTS, KVIO_TEST_SLOTS);
KVIO_TEST_COMPILES(TransferCompiles, transfer, KVIO_TEST_SLOTS, KVIO_TEST_SLOTS);
// Braced index lists are not deduced by a template: the deleted overloads take them as Indices.
KVIO_TEST_COMPILES(BracedPerLayerCompiles, transferPerLayer, {1}, {3});
KVIO_TEST_COMPILES(BracedAllLayersCompiles, transferAllLayers, {1}, {3});
KVIO_TEST_COMPILES(BracedTransferCompiles, transfer, {1}, {3});
KVIO_TEST_COMPILES(DevicePerLayerCompiles, transferPerLayer, KVIO_TEST_DEVICE_SLOTS,
                   KVIO_TEST_DEVICE_SLOTS);
KVIO_TEST_COMPILES(DeviceAllLayersCompiles, transferAllLayers, KVIO_TEST_DEVICE_SLOTS,
                   KVIO_TEST_DEVICE_SLOTS);
KVIO_TEST_COMPILES(DeviceTransferCompiles, transfer, KVIO_TEST_DEVICE_SLOTS,
                   KVIO_TEST_DEVICE_SLOTS);
#undef KVIO_TEST_DEVICE_SLOTS
#undef KVIO_TEST_SLOTS
#undef KVIO_TEST_COMPILES

// transferAllLayers(..., true) meant "overlaps compute" and backed up from src layer 1;
// transferPerLayer(..., 7, true) loaded layer 7 into layer 1. A bool where a layer goes is now
// refused when compiling; the intended calls still compile.
static_assert(!AllLayersCompiles<void, bool>::value, "bool as srcLayerStart");
static_assert(!AllLayersCompiles<void, bool, bool>::value, "bool as srcLayerStart");
static_assert(!PerLayerCompiles<void, int, bool>::value, "bool as dstLayer");
static_assert(!PerLayerCompiles<void, bool, int>::value, "bool as srcLayer");
static_assert(!PerLayerCompiles<void, int64_t, bool, bool>::value, "bool as dstLayer");
static_assert(AllLayersCompiles<void>::value, "all layers");
static_assert(AllLayersCompiles<void, int>::value, "all layers from a src layer");
static_assert(AllLayersCompiles<void, int64_t, bool>::value, "all layers, overlapping compute");
static_assert(AllLayersCompiles<void, int, kvio::TransferOptions>::value, "with options");
static_assert(PerLayerCompiles<void, int, int>::value, "one layer");
static_assert(PerLayerCompiles<void, int64_t, long long, bool>::value, "overlapping compute");
static_assert(PerLayerCompiles<void, int, int, kvio::TransferOptions>::value, "with options");
static_assert(!BracedAllLayersCompiles<void, bool>::value, "braced lists, bool as srcLayerStart");
static_assert(!BracedPerLayerCompiles<void, int, bool>::value, "braced lists, bool as dstLayer");
static_assert(BracedAllLayersCompiles<void, int64_t, bool>::value, "braced lists");
static_assert(BracedPerLayerCompiles<void, int, size_t, bool>::value, "braced lists");
// And a number where the overlap mark goes (a third layer number, say) would be taken as true.
static_assert(!PerLayerCompiles<void, int, int, int>::value, "a number as overlapsCompute");
static_assert(!PerLayerCompiles<void, int, int, int64_t>::value, "a number as overlapsCompute");
static_assert(!AllLayersCompiles<void, int, int>::value, "a number as overlapsCompute");
static_assert(!BracedPerLayerCompiles<void, int, int, int>::value, "braced lists, a number mark");
static_assert(!BracedAllLayersCompiles<void, int64_t, int>::value, "braced lists, a number mark");
// The general transfer too: transfer(..., LayerMap{0, 0, 1}, 5) marked the transfer as
// overlapping compute, and so did &options (a pointer converts to bool).
using Map = kvio::LayerMap;
static_assert(TransferCompiles<void, Map>::value, "no mark");
static_assert(TransferCompiles<void, Map, bool>::value, "the overlap mark");
static_assert(TransferCompiles<void, Map, kvio::TransferOptions>::value, "options");
static_assert(TransferCompiles<void, Map, kvio::TransferOptions&>::value, "options, an lvalue");
static_assert(!TransferCompiles<void, Map, int>::value, "a number as overlapsCompute");
static_assert(!TransferCompiles<void, Map, uint64_t>::value, "a number as overlapsCompute");
static_assert(!TransferCompiles<void, Map, kvio::TransferOptions*>::value, "&options");
static_assert(!TransferCompiles<void, Map, const char*>::value, "a pointer as overlapsCompute");
static_assert(BracedTransferCompiles<void, Map, bool>::value, "braced lists, the overlap mark");
static_assert(!BracedTransferCompiles<void, Map, int>::value, "braced lists, a number mark");
// Device indices take the same marks as host indices, with the same refusals.
static_assert(DeviceTransferCompiles<void, Map>::value, "device indices, no mark");
static_assert(DeviceTransferCompiles<void, Map, bool>::value, "device indices, the mark");
static_assert(DeviceTransferCompiles<void, Map, kvio::TransferOptions>::value, "options");
static_assert(!DeviceTransferCompiles<void, Map, int>::value, "device indices, a number mark");
static_assert(!DeviceTransferCompiles<void, Map, kvio::TransferOptions*>::value, "&options");
static_assert(DevicePerLayerCompiles<void, int, int>::value, "device indices, one layer");
static_assert(DevicePerLayerCompiles<void, int, int, bool>::value, "one layer, the mark");
static_assert(DevicePerLayerCompiles<void, int, int, kvio::TransferOptions>::value, "options");
static_assert(!DevicePerLayerCompiles<void, int, int, int>::value, "a number as the mark");
static_assert(!DevicePerLayerCompiles<void, int, bool>::value, "bool as dstLayer");
static_assert(DeviceAllLayersCompiles<void>::value, "device indices, all layers");
static_assert(DeviceAllLayersCompiles<void, int, bool>::value, "all layers, the mark");
static_assert(DeviceAllLayersCompiles<void, int, kvio::TransferOptions>::value, "options");
static_assert(!DeviceAllLayersCompiles<void, int, int>::value, "a number as the mark");
static_assert(!DeviceAllLayersCompiles<void, bool>::value, "bool as srcLayerStart");

// Executor::cuda(backend, device, stream, shape): the launch shape is a kvio::LaunchShape, so
// cuda(backend, 0, 8, 16) (meant: 8 CTAs of 16 warps?) does not compile rather than take 8 as
// the stream.
template <class, class... Args>
struct CudaExecutorCompiles : std::false_type {};
template <class... Args>
struct CudaExecutorCompiles<decltype((void)kvio::Executor::cuda(std::declval<Args>()...)), Args...>
    : std::true_type {};
static_assert(CudaExecutorCompiles<void, kvio::IoBackend, int>::value, "a backend and a device");
static_assert(CudaExecutorCompiles<void, kvio::IoBackend, int, uint64_t>::value, "a stream");
static_assert(CudaExecutorCompiles<void, kvio::IoBackend, int, uint64_t, kvio::LaunchShape>::value,
              "a stream and a launch shape");
static_assert(!CudaExecutorCompiles<void, kvio::IoBackend, int, int, int>::value,
              "a launch shape as bare integers after the stream");
static_assert(!CudaExecutorCompiles<void, kvio::IoBackend, int, uint64_t, int, int>::value,
              "the old (stream, ctaBudget, warpsPerCta) form");

// A const Pool gives read-only bytes (copyTo is const; copyFrom and prefault are not).
static_assert(
    std::is_same<decltype(std::declval<const kvio::Pool&>().data()), const uint8_t*>::value,
    "const data()");
static_assert(std::is_same<decltype(std::declval<kvio::Pool&>().data()), uint8_t*>::value,
              "data()");

// Indices' data and count are read through accessors: `indices.size = 100` compiled and made
// the next submit read past the indices' own copy.
template <class, class = void>
struct SizeAssignable : std::false_type {};
template <class T>
struct SizeAssignable<T, decltype((void)(std::declval<T&>().size = int64_t{100}))>
    : std::true_type {};
static_assert(!SizeAssignable<kvio::Indices>::value, "Indices::size is not a field");
// A count of any integral type but bool: a flag is no count.
static_assert(std::is_constructible<kvio::Indices, const int64_t*, size_t>::value, "size_t");
static_assert(std::is_constructible<kvio::Indices, const int64_t*, int>::value, "int");
static_assert(!std::is_constructible<kvio::Indices, const int64_t*, bool>::value, "bool");
static_assert(!std::is_constructible<kvio::Indices, const int64_t*, double>::value, "double");

// Pool::allocate(spec, kind, device) compiles for these argument types: the kind is a
// kvio::MemoryKind, so an int (a device ordinal, or a KVIO_MEMORY_* constant) in its place does
// not.
template <class, class Kind, class Device>
struct AllocateCompiles : std::false_type {};
template <class Kind, class Device>
struct AllocateCompiles<decltype((void)kvio::Pool::allocate(std::declval<const kvio::PoolSpec&>(),
                                                            std::declval<Kind>(),
                                                            std::declval<Device>())),
                        Kind, Device> : std::true_type {};
static_assert(AllocateCompiles<void, kvio::MemoryKind, int>::value, "a kind and a device");
static_assert(!AllocateCompiles<void, int, kvio::MemoryKind>::value, "device and kind swapped");
static_assert(!AllocateCompiles<void, int, int>::value, "an int as the kind");
static_assert(!AllocateCompiles<void, decltype(KVIO_MEMORY_CUDA_DEVICE), int>::value,
              "the C constant as the kind");

TEST(CppApi, BracedIndexListsAreIndicesNotAPointerAndACount) {
  kvio::Pool src = kvio::Pool::allocate(oneLayerSpec());
  kvio::Pool dst = kvio::Pool::allocate(oneLayerSpec());
  kvio::Executor cpu(kvio::IoBackend::Cpu, 1);
  fill(src, dst);
  // {0, 1} bound to (const int64_t*, int64_t) before: a null array of one index.
  kvio::transferPerLayer(cpu, src, dst, {0, 1}, {6, 7}, 0, 0).wait();
  EXPECT_EQ(contents(dst), expected(dst, {0, 1}, {6, 7}));
  // A braced list kept in a variable is a copy the Indices owns, valid after the statement.
  const kvio::Indices from = {3};
  const kvio::Indices to = {2};
  fill(src, dst);
  kvio::transferPerLayer(cpu, src, dst, from, to, 0, 0).wait();
  EXPECT_EQ(contents(dst), expected(dst, {3}, {2}));
}

TEST(CppApi, AnEnginesUint64TablesWrapAsTheVectorFormsDo) {
  // MHA layer_first, 2 layers, 2 pages of 4 tokens, one kRow-byte head: K and V of each layer in
  // a buffer of their own, given as an engine holds them (uint64 base addresses).
  const kvio::PoolSpec spec =
      kvio_test::Geometry{
          KVIO_KIND_MHA, KVIO_LAYOUT_LAYER_FIRST, kvio_test::Form::PerLayer, 2, 2, 4, 1, kRow}
          .spec();
  const uint64_t layerBytes = 8 * kRow;
  std::vector<std::vector<uint8_t>> buffers(4, std::vector<uint8_t>(layerBytes, 0xA5));
  std::vector<uint64_t> table;
  for (auto& b : buffers) {
    table.push_back(reinterpret_cast<uint64_t>(b.data()));
  }
  std::vector<uint8_t> whole(4 * layerBytes);
  const uint64_t components[2] = {reinterpret_cast<uint64_t>(whole.data()),
                                  reinterpret_cast<uint64_t>(whole.data() + 2 * layerBytes)};
  const kvio::Pool byTable =
      kvio::Pool::wrapLayerTable(spec, table.data(), table.size(), layerBytes);
  const kvio::Pool byComponents = kvio::Pool::wrapComponents(spec, components, 2, 2 * layerBytes);
  for (int64_t r = 0; r < 4; ++r) {
    uint64_t address = 0, bytes = 0;
    int64_t regions = 0;
    ASSERT_EQ(kvio_pool_region(byTable.handle(), r, &address, &bytes, &regions), KVIO_STATUS_OK);
    EXPECT_EQ(address, table[static_cast<size_t>(r)]);
    EXPECT_EQ(bytes, layerBytes);
    EXPECT_EQ(regions, 4);
  }
  // Every token of both layers, from the per-component pool to the per-layer one: buffer c*2 + l
  // is component c, layer l, token-major, as the source's component c holds it.
  for (size_t i = 0; i < whole.size(); ++i) whole[i] = static_cast<uint8_t>(i % 251);
  kvio::Executor cpu(kvio::IoBackend::Cpu, 1);
  const std::vector<int64_t> all = {0, 1, 2, 3, 4, 5, 6, 7};
  kvio::transferAllLayers(cpu, byComponents, byTable, all, all).wait();
  for (size_t k = 0; k < 4; ++k) {
    EXPECT_EQ(buffers[k], std::vector<uint8_t>(
                              whole.begin() + static_cast<std::ptrdiff_t>(k * layerBytes),
                              whole.begin() + static_cast<std::ptrdiff_t>((k + 1) * layerBytes)))
        << "buffer " << k;
  }
  expectError([&] { kvio::Pool::wrapLayerTable(spec, table.data(), 3, layerBytes); },
              KVIO_STATUS_INVALID_ARGUMENT, {"num_entries is 3", "2 components x 2 layers = 4"});
}

TEST(CppApi, APointerAndACountOfAnyIntegralTypeAreAView) {
  // Indices{pointer, v.size()} was narrowing (size_t to int64_t) in a braced list: an error with
  // clang or -pedantic-errors. The count may be a size_t now, checked against int64.
  kvio::Pool src = kvio::Pool::allocate(oneLayerSpec());
  kvio::Pool dst = kvio::Pool::allocate(oneLayerSpec());
  kvio::Executor cpu(kvio::IoBackend::Cpu, 1);
  fill(src, dst);
  const std::vector<int64_t> from = {5, 1, 7}, to = {0, 6, 3};
  const kvio::Indices s{from.data(), from.size()};
  const kvio::Indices d(to.data(), 3);
  EXPECT_EQ(s.data(), from.data());  // a view, not a copy
  EXPECT_EQ(s.size(), 3);
  EXPECT_EQ(d.size(), 3);
  kvio::transferPerLayer(cpu, src, dst, s, d, 0, 0).wait();
  EXPECT_EQ(contents(dst), expected(dst, from, to));
  // Braced in the call itself, as an engine writes it.
  fill(src, dst);
  kvio::transferPerLayer(cpu, src, dst, {from.data(), from.size()}, {to.data(), to.size()}, 0, 0)
      .wait();
  EXPECT_EQ(contents(dst), expected(dst, from, to));
  // A size_t that int64 cannot hold was cast to a negative count: refused, naming it.
  const size_t tooMany = static_cast<size_t>(INT64_MAX) + 1;
  expectError([&] { (void)kvio::Indices(from.data(), tooMany); }, KVIO_STATUS_INVALID_ARGUMENT,
              {"the index count is " + std::to_string(tooMany), "int64_t"});
  expectError([&] { (void)kvio::Indices(from.data(), SIZE_MAX); }, KVIO_STATUS_INVALID_ARGUMENT,
              {std::to_string(SIZE_MAX)});
  const kvio::Indices most(from.data(), static_cast<size_t>(INT64_MAX));  // fits: only a view
  EXPECT_EQ(most.size(), INT64_MAX);
  // A braced pair of numbers is still two indices, 0 (a null pointer constant) included.
  const kvio::Indices pair{0, 1};
  ASSERT_EQ(pair.size(), 2);
  EXPECT_EQ(std::vector<int64_t>(pair.data(), pair.data() + 2), (std::vector<int64_t>{0, 1}));
  const kvio::Indices sizes{int64_t{4}, int64_t{6}};
  EXPECT_EQ(sizes.size(), 2);
}

TEST(CppApi, AddressCountsTheCAbiCannotHoldAreRefusedByEveryWrapForm) {
  // wrapComponents(vector) cast the count to int32 unchecked, the pointer form clamped it to
  // INT32_MAX: now both refuse a count above INT32_MAX (num_components is an int32 in kvio.h)
  // before the C ABI reads an address.
  const kvio::PoolSpec spec =
      kvio_test::Geometry{
          KVIO_KIND_MHA, KVIO_LAYOUT_LAYER_FIRST, kvio_test::Form::PerLayer, 2, 2, 4, 1, kRow}
          .spec();
  const uint64_t componentBytes = 2 * 8 * kRow;  // 2 layers of 8 tokens
  const uint64_t addresses[2] = {0x1000, 0x2000};
  const size_t tooMany = static_cast<size_t>(INT32_MAX) + 1;
  expectError([&] { (void)kvio::Pool::wrapComponents(spec, addresses, tooMany, componentBytes); },
              KVIO_STATUS_INVALID_ARGUMENT,
              {"the component address count is 2147483648", "int32_t"});
  expectError(
      [&] {
        (void)kvio::Pool::wrapLayerTable(spec, addresses, static_cast<size_t>(INT64_MAX) + 1,
                                         componentBytes / 2);
      },
      KVIO_STATUS_INVALID_ARGUMENT, {"the layer table's entry count is", "int64_t"});
  // Counts that fit reach the C ABI, whose own check names them; both forms answer alike.
  expectError([&] { (void)kvio::Pool::wrapComponents(spec, addresses, 1, componentBytes); },
              KVIO_STATUS_INVALID_ARGUMENT, {"num_components is 1"});
  std::vector<std::vector<uint8_t>> buffers(2, std::vector<uint8_t>(componentBytes, 0));
  const std::vector<void*> one = {buffers[0].data()};
  expectError([&] { (void)kvio::Pool::wrapComponents(spec, one, componentBytes); },
              KVIO_STATUS_INVALID_ARGUMENT, {"num_components is 1"});
  const std::vector<void*> both = {buffers[0].data(), buffers[1].data()};
  const kvio::Pool pool = kvio::Pool::wrapComponents(spec, both, componentBytes);
  EXPECT_EQ(pool.regions(), 2);
  EXPECT_EQ(pool.data(1), buffers[1].data());
}

TEST(CppApi, APoolOfADeviceKindWithoutADeviceIsOnDeviceZero) {
  // Pool::allocate(spec, MemoryKind::CudaDevice) passed device -1 and was refused with "device
  // -1 is not a device ordinal", where Java's DeviceKvPool.allocate(spec, backend) and
  // kvio_executor_create mean device 0. Without a device argument the kind chooses: -1 (none)
  // for host memory, 0 for every other kind; a device given is passed as given.
  EXPECT_EQ(kvio::Pool::defaultDevice(kvio::MemoryKind::Host), -1);
  const kvio::PoolSpec spec = oneLayerSpec();
  const kvio_pool_spec c = spec.toC();
  std::vector<uint8_t> buf(spec.componentBytes());
  for (const kvio::MemoryKind kind :
       {kvio::MemoryKind::HostPinned, kvio::MemoryKind::CudaDevice, kvio::MemoryKind::AscendDevice,
        kvio::MemoryKind::AscendHostPinned}) {
    SCOPED_TRACE("memory kind " + std::to_string(static_cast<int>(kind)));
    EXPECT_EQ(kvio::Pool::defaultDevice(kind), 0);
    // What the C ABI answers for device 0, the answer expected of the call without a device.
    uint64_t handle = 0;
    const kvio_status onZero =
        kvio_pool_allocate_memory(&c, static_cast<int32_t>(kind), 0, &handle);
    const std::string whyNotZero = onZero == KVIO_STATUS_OK ? "" : kvio_last_error();
    if (onZero == KVIO_STATUS_OK) {  // a device here: the pool is on device 0
      ASSERT_EQ(kvio_pool_close_wait(handle, -1), KVIO_STATUS_OK);
      const kvio::Pool pool = kvio::Pool::allocate(spec, kind);
      EXPECT_EQ(pool.memory().kind, kind);
      EXPECT_EQ(pool.memory().device, 0);
    } else {  // none (UNAVAILABLE here): refused for that, not for a device -1
      expectError([&] { (void)kvio::Pool::allocate(spec, kind); }, onZero, {whyNotZero});
      try {
        (void)kvio::Pool::allocate(spec, kind);
      } catch (const kvio::Error& e) {
        EXPECT_EQ(std::string(e.what()).find("device -1"), std::string::npos) << e.what();
      }
      expectError([&] { (void)kvio::Pool::wrap(spec, buf.data(), buf.size(), kind); }, onZero, {});
      expectError([&] { (void)kvio::Pool::wrapComponents(spec, {buf.data()}, buf.size(), kind); },
                  onZero, {});
    }
    // An explicit -1 is passed on, and refused as the C ABI refuses it.
    expectError([&] { (void)kvio::Pool::allocate(spec, kind, -1); }, KVIO_STATUS_INVALID_ARGUMENT,
                {"device -1 is not a device ordinal"});
    expectError([&] { (void)kvio::Pool::wrap(spec, buf.data(), buf.size(), kind, -1); },
                KVIO_STATUS_INVALID_ARGUMENT, {"device -1 is not a device ordinal"});
  }
  // Host memory keeps device -1 whatever is asked (kvio.h ignores the device for it).
  const kvio::Pool host = kvio::Pool::wrap(spec, buf.data(), buf.size());
  EXPECT_EQ(host.memory().device, -1);
}

TEST(CppApi, AVectorGivenAsAnRvalueIsKeptNotViewed) {
  // Indices(const std::vector<int64_t>&) kept v.data() of the temporary pageSlots returned: the
  // vector was freed at the end of the statement, the next allocation of its size took its
  // memory, and the transfer moved the rows that allocation named.
  kvio::Pool src = kvio::Pool::allocate(oneLayerSpec());
  kvio::Pool dst = kvio::Pool::allocate(oneLayerSpec());
  kvio::Executor cpu(kvio::IoBackend::Cpu, 1);
  fill(src, dst);
  const kvio::Indices from = kvio::pageSlots({1}, 4);  // slots 4..7
  const kvio::Indices to = kvio::pageSlots({0}, 4);    // slots 0..3
  const std::vector<int64_t> later(4, 2);              // same size: would reuse a freed buffer
  ASSERT_EQ(from.size(), 4);
  EXPECT_EQ(std::vector<int64_t>(from.data(), from.data() + from.size()),
            (std::vector<int64_t>{4, 5, 6, 7}));
  kvio::transferPerLayer(cpu, src, dst, from, to, 0, 0).wait();
  EXPECT_EQ(contents(dst), expected(dst, {4, 5, 6, 7}, {0, 1, 2, 3}));
  EXPECT_EQ(later[0], 2);
  // A copy shares what the original owns; an lvalue vector stays a view (no copy).
  const kvio::Indices copy = from;
  EXPECT_EQ(copy.data(), from.data());
  const std::vector<int64_t> mine = {6, 7};
  const kvio::Indices view = mine;
  EXPECT_EQ(view.data(), mine.data());
  // A const rvalue cannot be moved from: it is copied, not viewed.
  const auto constSlots = []() -> const std::vector<int64_t> { return {4, 5, 6, 7}; };
  const kvio::Indices kept = constSlots();
  const std::vector<int64_t> reuse(4, 9);  // same size: would reuse the temporary's buffer
  EXPECT_EQ(std::vector<int64_t>(kept.data(), kept.data() + kept.size()),
            (std::vector<int64_t>{4, 5, 6, 7}));
  EXPECT_EQ(reuse[0], 9);
}

TEST(CppApi, PageSlotsRefusesPageSizesAndPagesOutsideInt64) {
  EXPECT_EQ(kvio::pageSlots({2, 0}, 3), (std::vector<int64_t>{6, 7, 8, 0, 1, 2}));
  for (const int64_t pageSize : {int64_t{-1}, int64_t{0}, INT64_MIN}) {
    // It was std::length_error (reserve of a huge count).
    expectError(
        [&] {
          (void)kvio::pageSlots({1, 2}, pageSize);
        },
        KVIO_STATUS_INVALID_ARGUMENT, {std::to_string(pageSize)},
        "pageSize " + std::to_string(pageSize));
  }
  // p * pageSize overflowed (undefined behaviour); the last slot of the page must fit too.
  const int64_t big = INT64_MAX / 4 + 1;
  for (const std::vector<int64_t>& pages :
       {std::vector<int64_t>{0, big}, std::vector<int64_t>{INT64_MIN / 4 - 1}}) {
    expectError([&] { (void)kvio::pageSlots(pages, 4); }, KVIO_STATUS_INVALID_ARGUMENT,
                {std::to_string(pages.back())},
                "page " + std::to_string(pages.back()) + " of 4 slots");
  }
  const int64_t last = (INT64_MAX - 3) / 4;  // its slots end at INT64_MAX - 3 + 3 at most
  EXPECT_EQ(kvio::pageSlots({last}, 4).back(), last * 4 + 3);
}

TEST(CppApi, TransferDirectCountsPagesInItsMessage) {
  kvio::Pool src = kvio::Pool::allocate(oneLayerSpec());
  kvio::Pool dst = kvio::Pool::allocate(oneLayerSpec());
  kvio::Executor cpu(kvio::IoBackend::Cpu, 1);
  fill(src, dst);
  const std::vector<uint8_t> source = contents(src);
  expectError(
      [&] {
        (void)kvio::transferDirect(cpu, src, dst, {0, 1}, {1}, kvio::LayerMap{0, 0, 1});
      },
      KVIO_STATUS_INVALID_ARGUMENT, {"srcPages has 2 pages but dstPages has 1"},
      "page lists of 2 and 1");
  EXPECT_EQ(contents(dst), expected(dst, {}, {}));
  EXPECT_EQ(contents(src), source);
}

// Every enumeration parses from the name users type and back (the names written out here, not
// taken from kvio); an unknown name or value is INVALID_ARGUMENT listing the valid ones.
TEST(CppApi, NamesParseAndPrintForEveryEnumeration) {
  EXPECT_EQ(kvio::parsePoolKind("mla"), kvio::PoolKind::Mla);
  EXPECT_EQ(kvio::parseGranularity("all_layer"), kvio::Granularity::AllLayer);
  EXPECT_EQ(kvio::parseMemoryKind("cuda_device"), kvio::MemoryKind::CudaDevice);
  EXPECT_EQ(kvio::parseIoBackend("kernel_ascend"), kvio::IoBackend::KernelAscend);
  EXPECT_STREQ(kvio::name(kvio::PoolKind::Mha), "mha");
  EXPECT_STREQ(kvio::name(kvio::Layout::PageFirstDirect), "page_first_direct");
  EXPECT_STREQ(kvio::name(kvio::IoBackend::Direct), "direct");
  EXPECT_STREQ(kvio::name(kvio::Granularity::PerLayer), "per_layer");
  EXPECT_STREQ(kvio::name(kvio::MemoryKind::HostPinned), "host_pinned");
  expectError([] { (void)kvio::parsePoolKind("gqa"); }, KVIO_STATUS_INVALID_ARGUMENT,
              {"mha", "mla"}, "an unknown pool kind");
  expectError([] { (void)kvio::parseGranularity("per_layers"); }, KVIO_STATUS_INVALID_ARGUMENT,
              {"per_layer", "all_layer"}, "a misspelt granularity");
  expectError([] { (void)kvio::parseMemoryKind("device"); }, KVIO_STATUS_INVALID_ARGUMENT,
              {"cuda_device"}, "an unknown memory kind");
  expectError([] { (void)kvio::name(static_cast<kvio::Layout>(9)); }, KVIO_STATUS_INVALID_ARGUMENT,
              {"9"}, "a layout value outside the enumeration");
  kvio::Executor cpu(kvio::IoBackend::Cpu, 1);
  EXPECT_EQ(cpu.backend(), kvio::IoBackend::Cpu);
  cpu.close();
  expectError([&] { (void)cpu.backend(); }, KVIO_STATUS_CLOSED, {"is closed"},
              "the backend of a closed executor");
}

// A string with a NUL byte inside would reach the C entry point cut short, the rest ignored:
// refused instead. A wait of duration::max() (of any unit) is "as long as it takes", not an
// overflow to a negative timeout that only checks.
TEST(CppApi, StringsWithANulAndUnboundedWaitsSayWhatTheyMean) {
  expectError([] { (void)kvio::parseLayout(std::string("page_first\0garbage", 18)); },
              KVIO_STATUS_INVALID_ARGUMENT, {"the layout name holds a NUL byte at 10 of its 18"},
              "a layout name with a NUL");
  expectError([] { (void)kvio::parseIoBackend(std::string("cpu\0x", 5)); },
              KVIO_STATUS_INVALID_ARGUMENT, {"the io backend name holds a NUL byte at 3"},
              "a backend name with a NUL");
  EXPECT_EQ(kvio::parseLayout("page_first"), kvio::Layout::PageFirst);
  kvio::Executor chooser(kvio::IoBackend::Auto, 1);
  EXPECT_EQ(chooser.backend(), kvio::IoBackend::Auto) << "auto stays auto";
  const std::string calibration = chooser.autoCalibration();
  expectError(
      [&] { chooser.setAutoCalibration(std::string("direct_row_bytes = 1K\0junk = 1\n", 31)); },
      KVIO_STATUS_INVALID_ARGUMENT, {"the calibration holds a NUL byte at 21"},
      "a calibration with a NUL");
  EXPECT_EQ(chooser.autoCalibration(), calibration) << "unchanged by the refusal";

  const kvio::Pool src = kvio::Pool::allocate(oneLayerSpec());
  const kvio::Pool dst = kvio::Pool::allocate(oneLayerSpec());
  kvio::Executor cpu(kvio::IoBackend::Cpu, 1);
  kvio::TransferOptions queued;
  queued.queueOnly = true;  // never done at submit: the waits below do wait
  kvio::Transfer t = kvio::transferPerLayer(cpu, src, dst, {0, 1}, {2, 3}, 0, 0, queued);
  EXPECT_TRUE(t.waitFor(std::chrono::milliseconds::max()));
  EXPECT_TRUE(t.waitFor(std::chrono::hours::max()));
  EXPECT_TRUE(t.waitFor(std::chrono::duration<double>(1e30)));
  std::vector<uint8_t> buf(dst.bytes());
  kvio::Pool wrapped = kvio::Pool::wrap(oneLayerSpec(), buf.data(), buf.size());
  kvio::Transfer u = kvio::transferPerLayer(cpu, src, wrapped, {0}, {1}, 0, 0, queued);
  EXPECT_TRUE(wrapped.closeAndWait(std::chrono::seconds::max()));
  EXPECT_TRUE(u.done());
}

TEST(CppApi, ClosedObjectsReportClosed) {
  // close() zeroed the handle: use after close answered INVALID_ARGUMENT "pool is 0" instead of
  // the CLOSED kvio.h promises.
  kvio::Pool src = kvio::Pool::allocate(oneLayerSpec());
  kvio::Pool dst = kvio::Pool::allocate(oneLayerSpec());
  kvio::Executor cpu(kvio::IoBackend::Cpu, 1);
  fill(src, dst);
  const uint64_t pool = src.handle();
  src.close();
  EXPECT_EQ(src.handle(), pool);
  src.close();  // once only: nothing to close again
  expectError([&] { (void)src.data(); }, KVIO_STATUS_CLOSED, {}, "data() of a closed pool");
  expectError([&] { (void)kvio::transferPerLayer(cpu, src, dst, {0}, {0}, 0, 0); },
              KVIO_STATUS_CLOSED, {}, "a transfer from a closed pool");
  EXPECT_TRUE(src.closeAndWait());
  EXPECT_TRUE(src.closeAndWait());
  // A wrapped pool closed by hand, then destroyed: the destructor waits on the kept handle.
  std::vector<uint8_t> buf(dst.bytes());
  {
    kvio::Pool wrapped = kvio::Pool::wrap(oneLayerSpec(), buf.data(), buf.size());
    wrapped.close();
    expectError([&] { (void)wrapped.bytes(); }, KVIO_STATUS_CLOSED, {},
                "bytes() of a closed wrapped pool");
  }
  const uint64_t executor = cpu.handle();
  cpu.close();
  EXPECT_EQ(cpu.handle(), executor);
  expectError([&] { (void)cpu.threads(); }, KVIO_STATUS_CLOSED, {},
              "threads() of a closed executor");
  expectError([&] { (void)kvio::transferPerLayer(cpu, dst, dst, {0}, {1}, 0, 0); },
              KVIO_STATUS_CLOSED, {}, "a transfer on a closed executor");
  EXPECT_EQ(contents(dst), expected(dst, {}, {})) << "a refused transfer changed the pool";
  // Moved-from objects have no handle: INVALID_ARGUMENT, as before.
  kvio::Pool taken = std::move(dst);
  EXPECT_EQ(dst.handle(), 0u);  // NOLINT(bugprone-use-after-move)
  EXPECT_TRUE(dst.closeAndWait());
}

TEST(CppApi, EmptyIndexListsCompleteAfterEveryOtherCheck) {
  kvio::Pool src = kvio::Pool::allocate(oneLayerSpec());
  kvio::Pool dst = kvio::Pool::allocate(oneLayerSpec());
  kvio::Executor cpu(kvio::IoBackend::Cpu, 1);
  fill(src, dst);
  const std::vector<int64_t> none;
  kvio::Transfer t = kvio::transferPerLayer(cpu, src, dst, none, none, 0, 0);
  EXPECT_TRUE(t.movesNothing());
  EXPECT_TRUE(t.done());
  EXPECT_EQ(t.bytes(), 0u);
  EXPECT_TRUE(t.waitFor(std::chrono::nanoseconds(0)));
  t.wait();
  EXPECT_EQ(t.cudaEvent(), 0u);  // nothing queued: nothing to wait on
  EXPECT_EQ(contents(dst), expected(dst, {}, {}));
  // The checks that need no index still run (the C ABI's submit refuses an empty transfer).
  expectError([&] { (void)kvio::transferPerLayer(cpu, src, dst, none, none, 0, 1); },
              KVIO_STATUS_OUT_OF_RANGE, {}, "layer 1 of a one-layer pool");
  const kvio::Pool alias = kvio::Pool::wrap(oneLayerSpec(), dst.data(), dst.bytes());
  expectError([&] { (void)kvio::transferPerLayer(cpu, dst, alias, none, none, 0, 0); },
              KVIO_STATUS_INVALID_ARGUMENT, {"share memory"}, "two pools over one buffer");
  EXPECT_EQ(contents(dst), expected(dst, {}, {})) << "a refusal changed the destination";
  // A moved-from transfer is not an empty one: it has no handle to answer with.
  kvio::Transfer moved = std::move(t);
  EXPECT_TRUE(moved.movesNothing());
  EXPECT_FALSE(t.movesNothing());  // NOLINT(bugprone-use-after-move): what a moved-from one says
  EXPECT_THROW(t.wait(), kvio::Error);
}

TEST(CppApi, ExecutorsMoveAndCloseWhatTheyReplace) {
  std::vector<kvio::Executor> executors;
  executors.push_back(kvio::Executor(kvio::IoBackend::Cpu, 1));
  executors.emplace_back(kvio::IoBackend::Cpu, 2);
  EXPECT_EQ(executors[1].threads(), 2);
  const uint64_t replaced = executors[0].handle();
  executors[0] = kvio::Executor(kvio::IoBackend::Cpu, 3);
  EXPECT_EQ(executors[0].threads(), 3);
  int32_t threads = 0;
  EXPECT_EQ(kvio_executor_threads(replaced, &threads), KVIO_STATUS_CLOSED)
      << "move-assignment left the replaced executor open";
  kvio::Executor taken = std::move(executors[1]);
  EXPECT_EQ(executors[1].handle(), 0u);
  EXPECT_EQ(taken.threads(), 2);
}

// An Error's message() is kvio_last_error's text without the status prefix what() carries, for
// logs that print the status apart.
TEST(CppApi, AnErrorsMessageIsTheTextWithoutItsStatus) {
  const kvio::Error made(KVIO_STATUS_CLOSED, "pool 0x1 is closed");
  EXPECT_STREQ(made.what(), "CLOSED: pool 0x1 is closed");
  EXPECT_STREQ(made.message(), "pool 0x1 is closed");
  EXPECT_STREQ(kvio::Error(static_cast<kvio_status>(99), "").message(), "");
  try {
    kvio::Executor(kvio::IoBackend::Cpu, 2000);
    ADD_FAILURE() << "2000 cpu threads were accepted";
  } catch (const kvio::Error& e) {
    EXPECT_EQ(e.status(), KVIO_STATUS_INVALID_ARGUMENT);
    EXPECT_EQ(std::string(e.message()), kvio_last_error());
    EXPECT_EQ(std::string(e.what()), std::string("INVALID_ARGUMENT: ") + e.message());
  }
}

// An engine keeps its pools, executor and the transfer in flight as members set up after its
// constructor: each type has an empty state (handle 0) to start from, tells it apart from a
// live object, and refuses use in it with INVALID_ARGUMENT, as a moved-from object does.
TEST(CppApi, DefaultConstructedObjectsAreEmptyUntilAssigned) {
  static_assert(std::is_nothrow_default_constructible<kvio::Pool>::value, "Pool()");
  static_assert(std::is_nothrow_default_constructible<kvio::Executor>::value, "Executor()");
  static_assert(std::is_nothrow_default_constructible<kvio::Transfer>::value, "Transfer()");
  static_assert(!std::is_convertible<kvio::Pool, bool>::value, "explicit operator bool");
  struct Engine {
    kvio::Pool host, device;
    kvio::Executor executor;
    kvio::Transfer inFlight;
  } engine;
  EXPECT_FALSE(engine.host);
  EXPECT_FALSE(engine.executor);
  EXPECT_FALSE(engine.inFlight);
  EXPECT_EQ(engine.host.handle(), 0u);
  expectError([&] { (void)engine.host.bytes(); }, KVIO_STATUS_INVALID_ARGUMENT, {"pool is 0"},
              "bytes() of an empty pool");
  expectError([&] { (void)engine.executor.threads(); }, KVIO_STATUS_INVALID_ARGUMENT,
              {"executor is 0"}, "threads() of an empty executor");
  expectError([&] { engine.inFlight.wait(); }, KVIO_STATUS_INVALID_ARGUMENT, {"transfer is 0"},
              "wait() on an empty transfer");
  EXPECT_TRUE(engine.host.closeAndWait());  // nothing of it to wait for
  engine.executor.close();                  // nothing to close

  engine.host = kvio::Pool::allocate(oneLayerSpec());
  engine.device = kvio::Pool::allocate(oneLayerSpec());
  engine.executor = kvio::Executor(kvio::IoBackend::Cpu, 1);
  EXPECT_TRUE(engine.host);
  EXPECT_TRUE(engine.executor);
  fill(engine.host, engine.device);
  engine.inFlight =
      kvio::transferPerLayer(engine.executor, engine.host, engine.device, {1, 2}, {3, 0}, 0, 0);
  EXPECT_TRUE(engine.inFlight);
  engine.inFlight.wait();
  EXPECT_EQ(contents(engine.device), expected(engine.device, {1, 2}, {3, 0}));
  EXPECT_TRUE(kvio::Transfer::completedEmpty());  // complete, and stands for a transfer
  kvio::Transfer taken = std::move(engine.inFlight);
  EXPECT_TRUE(taken);
  EXPECT_FALSE(engine.inFlight);  // NOLINT(bugprone-use-after-move): what a moved-from one says
  engine.host.close();
  EXPECT_FALSE(engine.host);  // closed: it keeps its handle, and says it is not open
  EXPECT_NE(engine.host.handle(), 0u);
  engine.executor.close();
  EXPECT_FALSE(engine.executor);
}

TEST(CppApi, PerLayerCallsCarryTheOverlapMark) {
  const kvio::Pool src = kvio::Pool::allocate(oneLayerSpec());
  const kvio::Pool dst = kvio::Pool::allocate(oneLayerSpec());
  kvio::Executor cpu(kvio::IoBackend::Cpu, 1);
  kvio::Transfer marked = kvio::transferPerLayer(cpu, src, dst, {1}, {1}, 0, 0, true);
  kvio::Transfer plain = kvio::transferAllLayers(cpu, src, dst, {2}, {2});
  kvio::Transfer backup = kvio::transferAllLayers(cpu, src, dst, {3}, {3}, 0, true);
  kvio::Transfer general = kvio::transfer(cpu, src, dst, {4}, {4}, kvio::LayerMap{0, 0, 1}, true);
  kvio::Transfer unmarked = kvio::transfer(cpu, src, dst, {5}, {5}, kvio::LayerMap{0, 0, 1});
  marked.wait();
  plain.wait();
  backup.wait();
  general.wait();
  unmarked.wait();
  EXPECT_EQ(marked.info().overlaps_compute, 1);
  EXPECT_EQ(plain.info().overlaps_compute, 0);
  EXPECT_EQ(backup.info().overlaps_compute, 1);
  EXPECT_EQ(general.info().overlaps_compute, 1);
  EXPECT_EQ(unmarked.info().overlaps_compute, 0);
}

TEST(CppApi, DeviceEntryPointsSayWhyWhereThereIsNoDevice) {
  if (kvio_backend_available(KVIO_BACKEND_KERNEL) != KVIO_STATUS_OK) {
    expectError([&] { (void)kvio::Executor::cuda(kvio::IoBackend::Kernel, 0); },
                KVIO_STATUS_UNAVAILABLE, {}, "a CUDA executor without CUDA");
  }
  if (kvio_backend_available(KVIO_BACKEND_KERNEL_ASCEND) != KVIO_STATUS_OK) {
    expectError([&] { (void)kvio::Executor::ascend(0); }, KVIO_STATUS_UNAVAILABLE, {},
                "an Ascend executor without ACL");
  }
  // A cpu executor has no stream, and its transfers no device event.
  kvio::Executor cpu(kvio::IoBackend::Cpu, 1);
  EXPECT_THROW((void)cpu.cudaStream(), kvio::Error);
  EXPECT_THROW(cpu.setLaunch(4, 16), kvio::Error);
  const kvio::Pool src = kvio::Pool::allocate(oneLayerSpec());
  const kvio::Pool dst = kvio::Pool::allocate(oneLayerSpec());
  kvio::Transfer t = kvio::transferPerLayer(cpu, src, dst, {0}, {0}, 0, 0);
  t.wait();
  expectError([&] { (void)t.cudaEvent(); }, KVIO_STATUS_UNSUPPORTED, {},
              "a cpu transfer's CUDA event");
}

TEST(CppApi, ATransferIsMadeByTheTransferFunctionsOnly) {
  // explicit Transfer(uint64_t) was public: any handle, even another owner's, became a Transfer
  // that closed it on destruction.
  EXPECT_FALSE((std::is_constructible<kvio::Transfer, uint64_t>::value));
  EXPECT_FALSE((std::is_convertible<uint64_t, kvio::Transfer>::value));
  EXPECT_TRUE((std::is_move_constructible<kvio::Transfer>::value));
}

TEST(CppApi, AHandleSubmittedInCIsAdoptedByName) {
  // Transfer::adopt: the one way a C handle becomes a Transfer, which waits on it and closes it.
  kvio::Pool src = kvio::Pool::allocate(oneLayerSpec());
  const kvio::Pool dst = kvio::Pool::allocate(oneLayerSpec());
  const kvio::Executor cpu(kvio::IoBackend::Cpu, 1);
  std::vector<uint8_t> row(kRow);
  for (size_t i = 0; i < row.size(); ++i) row[i] = static_cast<uint8_t>(i * 7 + 1);
  src.copyFrom(0, 3 * kRow, row.data(), kRow);  // token 3 of the MLA layer_first pool
  const int64_t s[1] = {3}, d[1] = {5};
  const kvio_transfer_desc desc{src.handle(), dst.handle(), s, d, 1, 0, 0, 1};
  uint64_t handle = 0;
  ASSERT_EQ(kvio_submit(cpu.handle(), &desc, &handle), KVIO_STATUS_OK) << kvio_last_error();
  {
    const kvio::Transfer t = kvio::Transfer::adopt(handle);
    EXPECT_EQ(t.handle(), handle);
    t.wait();
    EXPECT_EQ(t.bytes(), static_cast<uint64_t>(kRow));
  }
  EXPECT_EQ(kvio_transfer_is_done(handle), -KVIO_STATUS_CLOSED);  // closed by the Transfer
  std::vector<uint8_t> out(kRow, 0xEE);
  dst.copyTo(0, 5 * kRow, out.data(), kRow);
  EXPECT_EQ(out, row);
}

TEST(CppApi, DeviceIndicesAndHostIndicesNeverConvertIntoEachOther) {
  // Host indices given to the kernel as device memory fault the CUDA context; device indices
  // read on the host are a crash: a call site must say which it has.
  EXPECT_FALSE((std::is_convertible<kvio::Indices, kvio::DeviceIndices>::value));
  EXPECT_FALSE((std::is_constructible<kvio::DeviceIndices, kvio::Indices>::value));
  EXPECT_FALSE((std::is_constructible<kvio::DeviceIndices, const int64_t*, int64_t>::value));
  EXPECT_FALSE((std::is_constructible<kvio::DeviceIndices, std::vector<int64_t>>::value));
  EXPECT_FALSE((std::is_constructible<kvio::DeviceIndices, std::initializer_list<int64_t>>::value));
  EXPECT_FALSE((std::is_convertible<kvio::DeviceIndices, kvio::Indices>::value));
  EXPECT_FALSE((std::is_constructible<kvio::Indices, kvio::DeviceIndices>::value));
  const int64_t slots[2] = {3, 4};
  const kvio::DeviceIndices view = kvio::DeviceIndices::view(slots, 2);
  EXPECT_EQ(view.data(), slots);  // a view, not a copy
  EXPECT_EQ(view.size(), 2);
  // A braced pair with a 0 (a null pointer constant) still names host indices, not a device
  // (pointer, count): the call compiles, is unambiguous and moves rows 0 and 1.
  kvio::Pool src = kvio::Pool::allocate(oneLayerSpec());
  kvio::Pool dst = kvio::Pool::allocate(oneLayerSpec());
  kvio::Executor cpu(kvio::IoBackend::Cpu, 1);
  fill(src, dst);
  kvio::transferPerLayer(cpu, src, dst, {0, 1}, {0, 1}, 0, 0).wait();
  EXPECT_EQ(contents(dst), expected(dst, {0, 1}, {0, 1}));
}

TEST(CppApi, DeviceIndicesOnTheCpuBackendAreUnsupportedAndMoveNothing) {
  kvio::Pool src = kvio::Pool::allocate(oneLayerSpec());
  kvio::Pool dst = kvio::Pool::allocate(oneLayerSpec());
  kvio::Executor cpu(kvio::IoBackend::Cpu, 1);
  fill(src, dst);
  const std::vector<uint8_t> canary = contents(dst);
  // Host memory stands in for device memory: the cpu backend refuses before it reads either.
  const std::vector<int64_t> from = {1, 2};
  const std::vector<int64_t> to = {6, 7};
  const kvio::DeviceIndices s = kvio::DeviceIndices::view(from.data(), 2);
  const kvio::DeviceIndices d = kvio::DeviceIndices::view(to.data(), 2);
  const std::vector<std::string> why = {"device-resident indices", "'kernel'", "'cpu'"};
  expectError([&] { (void)kvio::transferPerLayer(cpu, src, dst, s, d, 0, 0); },
              KVIO_STATUS_UNSUPPORTED, why);
  expectError([&] { (void)kvio::transferAllLayers(cpu, src, dst, s, d); }, KVIO_STATUS_UNSUPPORTED,
              why);
  // The overlap mark as a bool, as with host indices.
  expectError([&] { (void)kvio::transferPerLayer(cpu, src, dst, s, d, 0, 0, true); },
              KVIO_STATUS_UNSUPPORTED, why);
  expectError([&] { (void)kvio::transferAllLayers(cpu, src, dst, s, d, 0, true); },
              KVIO_STATUS_UNSUPPORTED, why);
  expectError(
      [&] {
        (void)kvio::transfer(cpu, src, dst, s, d, kvio::LayerMap{0, 0, 1}, true);
      },
      KVIO_STATUS_UNSUPPORTED, why);
  expectError(
      [&] {
        (void)kvio::transfer(cpu, src, dst, s, d, kvio::LayerMap{0, 0, 1});
      },
      KVIO_STATUS_UNSUPPORTED, why);
  // An empty batch too: kvio_check_transfer alone would have said OK on cpu.
  const kvio::DeviceIndices none = kvio::DeviceIndices::view(nullptr, 0);
  expectError([&] { (void)kvio::transferPerLayer(cpu, src, dst, none, none, 0, 0); },
              KVIO_STATUS_UNSUPPORTED, why);
  expectError(
      [&] {
        (void)kvio::transferPerLayer(cpu, src, dst, s, kvio::DeviceIndices::view(to.data(), 1), 0,
                                     0);
      },
      KVIO_STATUS_INVALID_ARGUMENT, {"2 device entries but dstIndices has 1"});
  // The empty batch answers what a submit would (kvio_check_transfer_with): the backend's refusal
  // comes before the pools' checks, as in the submit; a bad handle comes before both.
  expectError([&] { (void)kvio::transferPerLayer(cpu, src, dst, none, none, 0, 1); },
              KVIO_STATUS_UNSUPPORTED, why);
  {
    kvio::Executor closed(kvio::IoBackend::Cpu, 1);
    closed.close();
    expectError([&] { (void)kvio::transferPerLayer(closed, src, dst, none, none, 0, 0); },
                KVIO_STATUS_CLOSED, {});
  }
  // TransferOptions reach the library with device indices too: a launch shape past the limits is
  // refused before the backend is asked; a valid one with the overlap mark is the cpu refusal.
  kvio::TransferOptions tooManyCtas;
  tooManyCtas.ctaBudget = 65536;
  for (const kvio::DeviceIndices& list : {s, none}) {
    expectError([&] { (void)kvio::transferPerLayer(cpu, src, dst, list, list, 0, 0, tooManyCtas); },
                KVIO_STATUS_INVALID_ARGUMENT, {"65536"});
  }
  kvio::TransferOptions both;
  both.overlapsCompute = true;
  both.ctaBudget = 2;
  both.warpsPerCta = 8;
  expectError([&] { (void)kvio::transferAllLayers(cpu, src, dst, s, d, 0, both); },
              KVIO_STATUS_UNSUPPORTED, why);
  expectError(
      [&] {
        (void)kvio::transfer(cpu, src, dst, none, none, kvio::LayerMap{0, 0, 1}, both);
      },
      KVIO_STATUS_UNSUPPORTED, why);
  EXPECT_EQ(contents(dst), canary);
  // 'auto' without a GPU is the cpu backend: the same refusal. With a GPU it takes them.
  if (!kvio::backendAvailable(kvio::IoBackend::Kernel)) {
    kvio::Executor automatic(kvio::IoBackend::Auto, 1);
    expectError([&] { (void)kvio::transferPerLayer(automatic, src, dst, s, d, 0, 0); },
                KVIO_STATUS_UNSUPPORTED, {"device-resident indices"});
    EXPECT_EQ(contents(dst), canary);
  }
}

TEST(CppApi, APerTransferLaunchShapeReachesTheLibraryAndCpuIgnoresIt) {
  kvio::Pool src = kvio::Pool::allocate(oneLayerSpec());
  kvio::Pool dst = kvio::Pool::allocate(oneLayerSpec());
  kvio::Executor cpu(kvio::IoBackend::Cpu, 1);
  fill(src, dst);
  kvio::TransferOptions shape;
  shape.ctaBudget = 8;
  shape.warpsPerCta = 4;
  EXPECT_TRUE(shape.hasLaunch());
  kvio::Transfer t = kvio::transferPerLayer(cpu, src, dst, {1, 2}, {5, 3}, 0, 0, shape);
  t.wait();
  EXPECT_EQ(contents(dst), expected(dst, {1, 2}, {5, 3}));
  EXPECT_EQ(t.info().overlaps_compute, 0);
  EXPECT_EQ(t.info().launches, 0);  // cpu launches no kernel: the shape is ignored
  fill(src, dst);
  kvio::transferAllLayers(cpu, src, dst, {4}, {0}, 0, shape).wait();
  EXPECT_EQ(contents(dst), expected(dst, {4}, {0}));
  // The shape goes to kvio_submit_launch, whose limits hold on every backend: a wrapper that
  // dropped it would have accepted these.
  fill(src, dst);
  const std::vector<uint8_t> canary = contents(dst);
  kvio::TransferOptions tooManyCtas;
  tooManyCtas.ctaBudget = 65536;
  expectError([&] { (void)kvio::transferPerLayer(cpu, src, dst, {1}, {1}, 0, 0, tooManyCtas); },
              KVIO_STATUS_INVALID_ARGUMENT, {"65536"});
  kvio::TransferOptions tooManyWarps;
  tooManyWarps.warpsPerCta = 33;
  expectError(
      [&] {
        (void)kvio::transfer(cpu, src, dst, {1}, {1}, kvio::LayerMap{0, 0, 1}, tooManyWarps);
      },
      KVIO_STATUS_INVALID_ARGUMENT, {"33"});
  EXPECT_EQ(contents(dst), canary);
  // 0 or less is the executor's setting: no shape, so the overlap mark may come with it.
  kvio::TransferOptions defaults;
  defaults.overlapsCompute = true;
  defaults.ctaBudget = -1;
  EXPECT_FALSE(defaults.hasLaunch());
  kvio::Transfer marked = kvio::transferPerLayer(cpu, src, dst, {2}, {2}, 0, 0, defaults);
  marked.wait();
  EXPECT_EQ(marked.info().overlaps_compute, 1);
}

TEST(CppApi, TheOverlapMarkWithALaunchShapeTravelTogether) {
  // Refused with UNSUPPORTED while kvio.h had a submit for each (kvio_submit_flags,
  // kvio_submit_launch) and none for both; kvio_submit_with takes both: the transfer is marked,
  // the shape's limits are checked, and cpu moves the rows.
  kvio::Pool src = kvio::Pool::allocate(oneLayerSpec());
  kvio::Pool dst = kvio::Pool::allocate(oneLayerSpec());
  kvio::Executor cpu(kvio::IoBackend::Cpu, 1);
  kvio::TransferOptions both;
  both.overlapsCompute = true;
  both.ctaBudget = 4;
  both.warpsPerCta = 16;
  fill(src, dst);
  kvio::Transfer perLayer = kvio::transferPerLayer(cpu, src, dst, {1, 6}, {2, 0}, 0, 0, both);
  perLayer.wait();
  EXPECT_EQ(perLayer.info().overlaps_compute, 1);
  EXPECT_EQ(perLayer.info().launches, 0);  // cpu launches no kernel
  EXPECT_EQ(contents(dst), expected(dst, {1, 6}, {2, 0}));
  fill(src, dst);
  kvio::Transfer allLayers = kvio::transferAllLayers(cpu, src, dst, {7}, {3}, 0, both);
  allLayers.wait();
  EXPECT_EQ(allLayers.info().overlaps_compute, 1);
  EXPECT_EQ(contents(dst), expected(dst, {7}, {3}));
  // The pair is checked as a whole: the mark does not hide a shape past the limits, with indices
  // or without (the empty batch's check takes the options too).
  fill(src, dst);
  const std::vector<uint8_t> canary = contents(dst);
  kvio::TransferOptions tooManyWarps = both;
  tooManyWarps.warpsPerCta = 33;
  const std::vector<int64_t> none;
  expectError([&] { (void)kvio::transferPerLayer(cpu, src, dst, {1}, {1}, 0, 0, tooManyWarps); },
              KVIO_STATUS_INVALID_ARGUMENT, {"33"});
  expectError([&] { (void)kvio::transferPerLayer(cpu, src, dst, none, none, 0, 0, tooManyWarps); },
              KVIO_STATUS_INVALID_ARGUMENT, {"33"});
  EXPECT_EQ(contents(dst), canary);
  // An empty batch with both: a completed Transfer of 0 bytes.
  kvio::Transfer empty = kvio::transferPerLayer(cpu, src, dst, none, none, 0, 0, both);
  EXPECT_TRUE(empty.movesNothing());
  empty.wait();
  EXPECT_EQ(contents(dst), canary);
  // What the wrapper hands kvio_submit_with.
  const kvio_submit_options c = both.toC();
  EXPECT_EQ(c.struct_size, sizeof(kvio_submit_options));
  EXPECT_EQ(c.flags, KVIO_SUBMIT_OVERLAPS_COMPUTE);
  EXPECT_EQ(c.cta_budget, 4);
  EXPECT_EQ(c.warps_per_cta, 16);
  EXPECT_EQ(c.indices_memory, KVIO_INDICES_HOST);
  EXPECT_EQ(c.reserved, 0);
  EXPECT_EQ(both.toC(KVIO_INDICES_DEVICE).indices_memory, KVIO_INDICES_DEVICE);
}

TEST(CppApi, SupportChecksSayWhyWithoutThrowing) {
  kvio::SupportQuery query;
  query.kind = kvio::PoolKind::Mha;
  query.layout = kvio::Layout::PageFirst;
  query.ioBackend = kvio::IoBackend::Cpu;
  query.granularity = kvio::Granularity::PerLayer;
  query.headNum = 8;
  query.headBytes = 256;
  query.pageSize = 16;
  query.hostNumLayers = 4;
  query.deviceNumLayers = 4;
  const kvio::Support fine = kvio::checkSupport(query);
  EXPECT_TRUE(fine.ok()) << fine.reason;
  EXPECT_TRUE(static_cast<bool>(fine));
  EXPECT_TRUE(fine.reason.empty());
  fine.require();
  // A bad field: not ok, the status and the message that names it, and no exception until
  // require().
  kvio::SupportQuery noHeads = query;
  noHeads.headNum = 0;
  const kvio::Support bad = kvio::checkSupport(noHeads);
  EXPECT_FALSE(bad.ok());
  EXPECT_EQ(bad.status, KVIO_STATUS_INVALID_ARGUMENT) << bad.reason;
  EXPECT_NE(bad.reason.find("head_num"), std::string::npos) << bad.reason;
  expectError([&] { bad.require(); }, KVIO_STATUS_INVALID_ARGUMENT, {"head_num"});
  // A layout that does not fit the kind: page_head needs heads, MLA has one latent.
  kvio::SupportQuery mlaPageHead = query;
  mlaPageHead.kind = kvio::PoolKind::Mla;
  mlaPageHead.layout = kvio::Layout::PageHead;
  mlaPageHead.headNum = 1;
  const kvio::Support unfit = kvio::checkSupport(mlaPageHead);
  EXPECT_FALSE(unfit.ok());
  EXPECT_NE(unfit.reason.find("page_head"), std::string::npos) << unfit.reason;
  // Host layers beyond the device's from deviceLayerStart.
  kvio::SupportQuery sharded = query;
  sharded.deviceLayerStart = 2;
  const kvio::Support outside = kvio::checkSupport(sharded);
  EXPECT_FALSE(outside.ok());
  EXPECT_EQ(outside.status, KVIO_STATUS_OUT_OF_RANGE) << outside.reason;
  EXPECT_NE(outside.reason.find("device layers [2, 6)"), std::string::npos) << outside.reason;
  // Each answer keeps its own message (copied from the thread-local one at once).
  EXPECT_NE(bad.reason, unfit.reason);
  // On a machine without a GPU the kernel backend is absent, and the rules say so.
  kvio::SupportQuery onKernel = query;
  onKernel.ioBackend = kvio::IoBackend::Kernel;
  if (!kvio::backendAvailable(kvio::IoBackend::Kernel)) {
    EXPECT_EQ(kvio::checkSupport(onKernel).status, KVIO_STATUS_UNAVAILABLE);
  }
}

TEST(CppApi, BackendsAndDevicesSayWhyTheyAreAbsent) {
  EXPECT_EQ(kvio::version(), KVIO_VERSION_STRING);
  const kvio::Support cpu = kvio::backendAvailable(kvio::IoBackend::Cpu);
  EXPECT_TRUE(cpu.ok()) << cpu.reason;
  const kvio::Support unknown = kvio::backendAvailable(static_cast<kvio::IoBackend>(99));
  EXPECT_EQ(unknown.status, KVIO_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(unknown.reason.find("io_backend"), std::string::npos) << unknown.reason;
  // kernel, cuda devices: absent here (a GPU-less machine; CUDA built or not), present on a GPU
  // machine. Either way the answers agree with each other and with the C ABI.
  const kvio::Support kernel = kvio::backendAvailable(kvio::IoBackend::Kernel);
  const kvio::DeviceCount gpus = kvio::cudaDeviceCount();
  EXPECT_EQ(kernel.status, kvio_backend_available(KVIO_BACKEND_KERNEL));
  if (kernel.ok()) {
    EXPECT_TRUE(gpus.ok()) << gpus.reason;
    EXPECT_GE(gpus.count, 1);
  } else {
    EXPECT_EQ(kernel.status, KVIO_STATUS_UNAVAILABLE);
    EXPECT_FALSE(kernel.reason.empty());
    EXPECT_FALSE(gpus.ok());
    EXPECT_EQ(gpus.status, KVIO_STATUS_UNAVAILABLE);
    EXPECT_EQ(gpus.count, 0);
    EXPECT_FALSE(gpus.reason.empty());
    expectError([&] { gpus.require(); }, KVIO_STATUS_UNAVAILABLE, {gpus.reason});
  }
  const kvio::Support ascend = kvio::backendAvailable(kvio::IoBackend::KernelAscend);
  const kvio::DeviceCount npus = kvio::ascendDeviceCount();
  if (ascend.ok()) {
    EXPECT_GE(npus.count, 1);
  } else {
    EXPECT_EQ(ascend.status, KVIO_STATUS_UNAVAILABLE);
    EXPECT_EQ(npus.status, KVIO_STATUS_UNAVAILABLE);
    EXPECT_EQ(npus.count, 0);
    EXPECT_FALSE(npus.reason.empty());
  }
}

// Turns transfer timing off again however the test ends (it is process-wide).
struct TimingOffAtExit {
  ~TimingOffAtExit() { kvio::setTransferTiming(false); }
};

TEST(CppApi, TransferTimingStampsTransfersSubmittedWhileOn) {
  const TimingOffAtExit off;
  const kvio::Pool src = kvio::Pool::allocate(oneLayerSpec());
  const kvio::Pool dst = kvio::Pool::allocate(oneLayerSpec());
  kvio::Executor cpu(kvio::IoBackend::Cpu, 1);
  kvio::setTransferTiming(false);
  kvio::Transfer untimed = kvio::transferPerLayer(cpu, src, dst, {0}, {1}, 0, 0);
  untimed.wait();
  EXPECT_EQ(untimed.info().submit_ns, 0);
  EXPECT_EQ(untimed.info().end_ns, 0);
  kvio::setTransferTiming(true);
  kvio::Transfer timed = kvio::transferPerLayer(cpu, src, dst, {2}, {3}, 0, 0);
  timed.wait();
  const kvio_transfer_info info = timed.info();
  EXPECT_GT(info.submit_ns, 0);
  EXPECT_GE(info.start_ns, info.submit_ns);
  EXPECT_GE(info.end_ns, info.start_ns);
  EXPECT_GT(info.end_ns, 0);
  // It is the submit that counts: off again, a new transfer is not stamped, the old one keeps
  // its times.
  kvio::setTransferTiming(false);
  kvio::Transfer after = kvio::transferPerLayer(cpu, src, dst, {4}, {5}, 0, 0);
  after.wait();
  EXPECT_EQ(after.info().submit_ns, 0);
  EXPECT_EQ(timed.info().submit_ns, info.submit_ns);
}

TEST(CppApi, PoolMemorySaysWhereItLies) {
  const kvio::Pool host = kvio::Pool::allocate(oneLayerSpec());
  EXPECT_EQ(host.memory().kind, kvio::MemoryKind::Host);
  EXPECT_EQ(host.memory().device, -1);
  // The device ordinal is ignored for host memory (kvio.h): kvio keeps -1, not what was asked.
  const kvio::Pool asked = kvio::Pool::allocate(oneLayerSpec(), kvio::MemoryKind::Host, 3);
  EXPECT_EQ(asked.memory().kind, kvio::MemoryKind::Host);
  EXPECT_EQ(asked.memory().device, -1);
  std::vector<uint8_t> buf(host.bytes());
  const kvio::Pool wrapped = kvio::Pool::wrap(oneLayerSpec(), buf.data(), buf.size());
  EXPECT_EQ(wrapped.memory().kind, kvio::MemoryKind::Host);
  if (kvio::backendAvailable(kvio::IoBackend::Kernel)) {  // a GPU: device and pinned memory
    const kvio::Pool device = kvio::Pool::allocate(oneLayerSpec(), kvio::MemoryKind::CudaDevice, 0);
    EXPECT_EQ(device.memory().kind, kvio::MemoryKind::CudaDevice);
    EXPECT_EQ(device.memory().device, 0);
    const kvio::Pool pinned = kvio::Pool::allocate(oneLayerSpec(), kvio::MemoryKind::HostPinned, 0);
    EXPECT_EQ(pinned.memory().kind, kvio::MemoryKind::HostPinned);
  }
  kvio::Pool closed = kvio::Pool::allocate(oneLayerSpec());
  closed.close();
  expectError([&] { (void)closed.memory(); }, KVIO_STATUS_CLOSED, {});
}

}  // namespace
