// The affine layout model (DESIGN.md, "The one idea"): every pool layout is
//   addr(c, l, t, h) = layerBase(c, l) + p*strideP + s*strideS + h*strideH,   t = p*ps + s
// This header derives the strides of each named layout from a pool spec and binds them to
// memory. It is the single place where layout formulas live; the planner, executors and
// device kernels evaluate AffineLayout and nothing else. Host and device callable. Internal to
// the library (not installed: libkvio exports only the C ABI, so layoutStrides is not linkable
// from outside); white-box tests reach it through kvio_core_for_tests.
#ifndef KVIO_CORE_LAYOUT_HPP_
#define KVIO_CORE_LAYOUT_HPP_

#include <cstdint>

#include "kvio/kvio.h"

#if defined(__CUDACC__)
#define KVIO_HOST_DEVICE __host__ __device__
#else
#define KVIO_HOST_DEVICE
#endif

namespace kvio {

/// a / b for b > 0: on a device a 32-bit division when both fit, since a 64-bit one is a long
/// instruction sequence there; plain 64-bit division on the host.
KVIO_HOST_DEVICE inline uint64_t divideU64(uint64_t a, uint64_t b) {
#if defined(__CUDA_ARCH__)
  if (((a | b) >> 32) == 0) return static_cast<uint32_t>(a) / static_cast<uint32_t>(b);
#endif
  return a / b;
}

/// Components per token row: K and V for MHA, the latent for MLA.
constexpr int32_t componentCount(int32_t kind) {
  return kind == KVIO_KIND_MHA ? 2 : 1;
}

/// Where component c's layer l sits in a pool's layer table of numLayers layers per component,
/// written once: components one after another, layers in order (kvio.h's table[c * num_layers
/// + l]). The pool builds its table by it before any AffineLayout exists;
/// AffineLayout::layerIndex reads by it.
KVIO_HOST_DEVICE constexpr int64_t layerTableIndex(int64_t numLayers, int32_t c, int64_t l) {
  return c * numLayers + l;
}

/// Byte strides of one component of a pool. strideL is the distance between layers inside
/// one component buffer (not used when layers come from a pointer table).
struct LayoutStrides {
  int64_t strideL = 0;
  int64_t strideP = 0;
  int64_t strideS = 0;
  int64_t strideH = 0;
  int64_t componentBytes = 0;  // size of one component buffer
};

/// The most layers a pool (and a device pool a support query names) may have: a pool keeps one
/// base address per (component, layer).
constexpr int64_t kMaxLayers = int64_t{1} << 20;

/// Derives the strides of spec.layout. Returns KVIO_STATUS_OK, or INVALID_ARGUMENT when the
/// spec is malformed or its byte size overflows 63 bits (message in kvio_last_error()).
kvio_status layoutStrides(const kvio_pool_spec& spec, LayoutStrides* out);

/// What the messages of layoutStrides call the spec's fields: the pool spec's names by default;
/// kvio_check_support's query names its own (host_num_layers; no num_pages, which it leaves 1).
struct SpecFieldNames {
  const char* kind = "spec.kind";
  const char* layout = "spec.layout";
  const char* numLayers = "num_layers";
  const char* numPages = "num_pages";  // nullptr: not the caller's (1), left out of messages
  const char* pageSize = "page_size";
  const char* headNum = "head_num";
  const char* headBytes = "head_bytes";
};
kvio_status layoutStrides(const kvio_pool_spec& spec, const SpecFieldNames& names,
                          LayoutStrides* out);

/// A layout bound to memory: strides plus the base address of every (component, layer).
/// Evaluated on the host by the planner and on devices by copy kernels.
struct AffineLayout {
  static constexpr int kMaxComponents = 2;
  int32_t components = 0;
  int64_t numLayers = 0;
  int64_t pageSize = 0;
  int64_t tokens = 0;  // numPages * pageSize
  int64_t headNum = 0;
  int64_t headBytes = 0;
  int64_t strideP = 0;
  int64_t strideS = 0;
  int64_t strideH = 0;
  const uint64_t* layerBase = nullptr;  // [layerIndex(c, l)]

  /// Byte offset of token t (0 <= t < tokens) from its layer's base: p*strideP + s*strideS.
  KVIO_HOST_DEVICE int64_t tokenOffset(int64_t t) const {
    const auto p =
        static_cast<int64_t>(divideU64(static_cast<uint64_t>(t), static_cast<uint64_t>(pageSize)));
    return p * strideP + (t - p * pageSize) * strideS;
  }
  /// Where component c's layer l sits in a layer table of this layout (layerBase, or a host
  /// copy of the device table): layerTableIndex.
  KVIO_HOST_DEVICE int64_t layerIndex(int32_t c, int64_t l) const {
    return layerTableIndex(numLayers, c, l);
  }
  /// The row address, written once: head h of component c in layer l of the token whose
  /// tokenOffset is `offset` (callers that visit many layers compute the offset once).
  KVIO_HOST_DEVICE uint64_t rowAddress(int32_t c, int64_t l, uint64_t offset, int64_t h) const {
    return layerBase[layerIndex(c, l)] + offset + static_cast<uint64_t>(h * strideH);
  }
  KVIO_HOST_DEVICE uint64_t address(int32_t c, int64_t l, int64_t t, int64_t h) const {
    return rowAddress(c, l, static_cast<uint64_t>(tokenOffset(t)), h);
  }
  KVIO_HOST_DEVICE int64_t rowBytes() const { return headNum * headBytes; }
  /// The bytes a transfer of `pairs` index pairs over `layers` layers moves (every row of every
  /// component once), the same on both sides of a valid transfer.
  KVIO_HOST_DEVICE uint64_t transferBytes(int64_t pairs, int64_t layers) const {
    return static_cast<uint64_t>(pairs) * static_cast<uint64_t>(layers) *
           static_cast<uint64_t>(components) * static_cast<uint64_t>(rowBytes());
  }
  /// Heads of a token row are adjacent, so one (c, l, t) is one contiguous row.
  KVIO_HOST_DEVICE bool headsAdjacent() const { return headNum == 1 || strideH == headBytes; }
  /// Token t+1 follows token t at strideS even across a page boundary.
  KVIO_HOST_DEVICE bool pageSeamless() const { return strideP == pageSize * strideS; }
};

/// The copy unit of a layout pair, written once: the bytes of one (token, layer, component)
/// that are contiguous on both sides. A whole row when both sides keep its heads adjacent,
/// else one head, `heads` units per row (head h at h * strideH on each side).
struct CopyUnit {
  int64_t bytes = 0;
  int64_t heads = 1;
};

KVIO_HOST_DEVICE inline CopyUnit copyUnit(const AffineLayout& src, const AffineLayout& dst) {
  CopyUnit u;
  if (src.headsAdjacent() && dst.headsAdjacent()) {
    u.bytes = src.rowBytes();
    u.heads = 1;
  } else {
    u.bytes = src.headBytes;
    u.heads = src.headNum;
  }
  return u;
}

}  // namespace kvio

#endif  // KVIO_CORE_LAYOUT_HPP_
