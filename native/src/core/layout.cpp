// Strides of the named layouts (see kvio.h for the shapes). The formulas here are the only
// place a layout's geometry is written down in the library.
#include "layout.hpp"

#include <cstdint>

#include "error.hpp"
#include "names.hpp"

namespace kvio {
namespace {

bool mulOverflows(int64_t a, int64_t b, int64_t* out) {
  return __builtin_mul_overflow(a, b, out);
}

}  // namespace

kvio_status layoutStrides(const kvio_pool_spec& spec, LayoutStrides* out) {
  return layoutStrides(spec, SpecFieldNames(), out);
}

kvio_status layoutStrides(const kvio_pool_spec& spec, const SpecFieldNames& names,
                          LayoutStrides* out) {
  KVIO_RETURN_IF_ERROR(checkEnumValue(Enumeration::kKind, spec.kind, names.kind));
  KVIO_RETURN_IF_ERROR(checkEnumValue(Enumeration::kLayout, spec.layout, names.layout));
  const struct {
    const char* name;
    int64_t value;
  } positive[] = {{names.numLayers, spec.num_layers},
                  {names.numPages, spec.num_pages},
                  {names.pageSize, spec.page_size},
                  {names.headNum, spec.head_num},
                  {names.headBytes, spec.head_bytes}};
  for (const auto& field : positive) {
    if (field.name != nullptr && field.value < 1) {
      return fail(KVIO_STATUS_INVALID_ARGUMENT, "%s must be at least 1, got %lld", field.name,
                  static_cast<long long>(field.value));
    }
  }
  // A pool keeps one base address per (component, layer): bound the table (models have
  // hundreds of layers), or a tiny-row spec of 2^40 layers passes the byte limit below and
  // then exhausts host memory in the table (found by the fuzzer, docs/reliability.md).
  if (spec.num_layers > kMaxLayers) {
    return fail(KVIO_STATUS_INVALID_ARGUMENT,
                "%s %lld is more than kvio supports (valid: 1 to %lld; a pool keeps a "
                "table of per-layer addresses)",
                names.numLayers, static_cast<long long>(spec.num_layers),
                static_cast<long long>(kMaxLayers));
  }
  if (spec.layout == KVIO_LAYOUT_PAGE_HEAD && spec.kind != KVIO_KIND_MHA) {
    return fail(KVIO_STATUS_UNSUPPORTED,
                "layout page_head splits token rows by KV head and needs an mha pool; an mla "
                "pool has one latent row per token. Valid layouts for mla: layer_first, "
                "page_first, page_first_direct");
  }
  // Sizes: row T = H*hb, tokens S = P*ps, component = L*S*T; all components within 2^62.
  int64_t row = 0, tokens = 0, layerBytes = 0, component = 0, total = 0;
  if (mulOverflows(spec.head_num, spec.head_bytes, &row) ||
      mulOverflows(spec.num_pages, spec.page_size, &tokens) ||
      mulOverflows(tokens, row, &layerBytes) ||
      mulOverflows(layerBytes, spec.num_layers, &component) ||
      mulOverflows(component, componentCount(spec.kind), &total) || total > (int64_t{1} << 62)) {
    if (names.numPages == nullptr) {
      return fail(KVIO_STATUS_INVALID_ARGUMENT,
                  "pool too large: one page of %s %lld x %s %lld x %s %lld x %s %lld does not "
                  "fit in 2^62 bytes",
                  names.numLayers, static_cast<long long>(spec.num_layers), names.pageSize,
                  static_cast<long long>(spec.page_size), names.headNum,
                  static_cast<long long>(spec.head_num), names.headBytes,
                  static_cast<long long>(spec.head_bytes));
    }
    return fail(KVIO_STATUS_INVALID_ARGUMENT,
                "pool too large: %lld layers x %lld pages x %lld tokens x %lld heads x %lld bytes "
                "does not fit in 2^62 bytes",
                static_cast<long long>(spec.num_layers), static_cast<long long>(spec.num_pages),
                static_cast<long long>(spec.page_size), static_cast<long long>(spec.head_num),
                static_cast<long long>(spec.head_bytes));
  }
  const int64_t L = spec.num_layers, ps = spec.page_size, H = spec.head_num;
  const int64_t hb = spec.head_bytes;
  LayoutStrides s;
  s.componentBytes = component;
  switch (spec.layout) {
    case KVIO_LAYOUT_LAYER_FIRST:  // [L, P*ps, H, D]
      s.strideL = tokens * row;
      s.strideP = ps * row;
      s.strideS = row;
      s.strideH = hb;
      break;
    case KVIO_LAYOUT_PAGE_FIRST:  // [P*ps, L, H, D]
      s.strideL = row;
      s.strideS = L * row;
      s.strideP = ps * L * row;
      s.strideH = hb;
      break;
    case KVIO_LAYOUT_PAGE_FIRST_DIRECT:  // [P, L, ps, H, D]
      s.strideL = ps * row;
      s.strideS = row;
      s.strideP = L * ps * row;
      s.strideH = hb;
      break;
    case KVIO_LAYOUT_PAGE_HEAD:  // [P, H, ps, L, D]
      s.strideL = hb;
      s.strideS = L * hb;
      s.strideH = ps * L * hb;
      s.strideP = H * ps * L * hb;
      break;
  }
  *out = s;
  return KVIO_STATUS_OK;
}

}  // namespace kvio
