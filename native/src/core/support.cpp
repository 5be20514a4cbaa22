// The support rules: one function answering "does this configuration work here, and if not,
// why and what instead". Only real constraints are rules (DESIGN.md, consequence 3): every
// layout works with every granularity and layer range on every backend that is present.
// 'auto' is always present: it accepts every layout, and the memory kinds its candidates accept
// (the union: host kinds where it is cpu, pinned host and device memory on a GPU), which
// its executor's acceptMemory answers per transfer with the candidate's reason when none does.
#include <string>

#include "backends.hpp"
#include "error.hpp"
#include "executor.hpp"
#include "guard.hpp"
#include "kvio/kvio.h"
#include "layout.hpp"
#include "names.hpp"

namespace kvio {
namespace {

std::string availableBackends() {
  std::string out;
  for (int32_t b = 0; b < KVIO_BACKEND_COUNT; ++b) {
    if (backendOps(b)->available() == KVIO_STATUS_OK) {
      if (!out.empty()) out += ", ";
      out += kvio_name(KVIO_NAME_BACKEND, b);
    }
  }
  return out;
}

}  // namespace
}  // namespace kvio

using namespace kvio;

extern "C" {

kvio_status kvio_backend_available(int32_t io_backend) {
  return guarded([&]() -> kvio_status {
    KVIO_RETURN_IF_ERROR(checkEnumValue(Enumeration::kBackend, io_backend, "io_backend"));
    const BackendOps* ops = backendOps(io_backend);
    if (ops == nullptr) {  // kvio_enums.def lists a backend that backends.cpp does not
      return fail(KVIO_STATUS_INTERNAL, "io backend %s has no backend table",
                  kvio_name(KVIO_NAME_BACKEND, io_backend));
    }
    return ops->available();
  });
}

kvio_status kvio_check_support(const kvio_support_query* q) {
  return guarded([&]() -> kvio_status {
    if (q == nullptr) return fail(KVIO_STATUS_INVALID_ARGUMENT, "query is null");
    KVIO_RETURN_IF_ERROR(checkEnumValue(Enumeration::kKind, q->kind, "query.kind"));
    KVIO_RETURN_IF_ERROR(checkEnumValue(Enumeration::kLayout, q->layout, "query.layout"));
    KVIO_RETURN_IF_ERROR(checkEnumValue(Enumeration::kBackend, q->io_backend, "query.io_backend"));
    KVIO_RETURN_IF_ERROR(
        checkEnumValue(Enumeration::kGranularity, q->granularity, "query.granularity"));
    // Geometry: the same checks a pool spec gets (sizes, overflow, layout fits the kind).
    kvio_pool_spec spec{q->kind,      q->layout,   q->host_num_layers, 1,
                        q->page_size, q->head_num, q->head_bytes};
    SpecFieldNames names;
    names.kind = "query.kind";
    names.layout = "query.layout";
    names.numLayers = "host_num_layers";
    names.numPages = nullptr;
    LayoutStrides strides;
    KVIO_RETURN_IF_ERROR(layoutStrides(spec, names, &strides));
    if (q->device_num_layers < 1) {
      return fail(KVIO_STATUS_INVALID_ARGUMENT, "device_num_layers must be at least 1, got %lld",
                  static_cast<long long>(q->device_num_layers));
    }
    // The device pool is a pool too: the same bound as host_num_layers (layoutStrides).
    if (q->device_num_layers > kMaxLayers) {
      return fail(KVIO_STATUS_INVALID_ARGUMENT,
                  "device_num_layers %lld is more than kvio supports (valid: 1 to %lld; a pool "
                  "keeps a table of per-layer addresses)",
                  static_cast<long long>(q->device_num_layers), static_cast<long long>(kMaxLayers));
    }
    // A layer-sharded host pool holds device layers [device_layer_start, + host_num_layers).
    if (q->host_num_layers > q->device_num_layers) {
      return fail(KVIO_STATUS_OUT_OF_RANGE,
                  "host_num_layers %lld > device_num_layers %lld: a host pool holds a contiguous "
                  "range of the device pool's layers; valid host_num_layers: 1 to %lld",
                  static_cast<long long>(q->host_num_layers),
                  static_cast<long long>(q->device_num_layers),
                  static_cast<long long>(q->device_num_layers));
    }
    const int64_t lastStart = q->device_num_layers - q->host_num_layers;
    if (q->device_layer_start < 0) {
      return fail(KVIO_STATUS_OUT_OF_RANGE,
                  "device_layer_start %lld is negative; valid device_layer_start: 0 to %lld "
                  "(host_num_layers %lld of device_num_layers %lld)",
                  static_cast<long long>(q->device_layer_start), static_cast<long long>(lastStart),
                  static_cast<long long>(q->host_num_layers),
                  static_cast<long long>(q->device_num_layers));
    }
    if (q->device_layer_start > lastStart) {
      // The range's end as a number, or as a sum where it is past int64 (a capped end would
      // make the range read as empty).
      const int64_t start = q->device_layer_start, count = q->host_num_layers;
      const std::string end = count > INT64_MAX - start
                                  ? std::to_string(start) + " + " + std::to_string(count)
                                  : std::to_string(start + count);
      return fail(
          KVIO_STATUS_OUT_OF_RANGE,
          "the host pool would hold device layers [%lld, %s), past the device pool's "
          "%lld layers: device_layer_start %lld + host_num_layers %lld > "
          "device_num_layers %lld; valid device_layer_start: 0 to %lld",
          static_cast<long long>(start), end.c_str(), static_cast<long long>(q->device_num_layers),
          static_cast<long long>(q->device_layer_start), static_cast<long long>(q->host_num_layers),
          static_cast<long long>(q->device_num_layers), static_cast<long long>(lastStart));
    }
    const kvio_status available = backendOps(q->io_backend)->available();
    if (available != KVIO_STATUS_OK) {
      // Copy the cause first: availableBackends() asks every backend and overwrites it.
      const std::string cause = lastError();
      const std::string alternatives = availableBackends();
      return fail(available, "io backend '%s' is not available here: %s. Available here: %s",
                  kvio_name(KVIO_NAME_BACKEND, q->io_backend), cause.c_str(), alternatives.c_str());
    }
    return KVIO_STATUS_OK;
  });
}

}  // extern "C"
