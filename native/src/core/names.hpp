// The names of kvio's enumerations (names.cpp, from kvio_enums.def), for messages, and the one
// range check of an enumeration value given at the C ABI (pool specs, support queries, io
// backends, memory kinds, name tables).
#ifndef KVIO_CORE_NAMES_HPP_
#define KVIO_CORE_NAMES_HPP_

#include <cstdint>

#include "kvio/kvio.h"

namespace kvio {

/// The enumerations of kvio_enums.def that an int32_t of the C ABI holds: the name tables'
/// (same numbers as KVIO_NAME_*, the memory kinds among them) and the name tables themselves.
enum class Enumeration : int32_t {
  kKind = KVIO_NAME_KIND,
  kLayout = KVIO_NAME_LAYOUT,
  kBackend = KVIO_NAME_BACKEND,
  kGranularity = KVIO_NAME_GRANULARITY,
  kMemoryKind = KVIO_NAME_MEMORY,
  kNameTable = KVIO_NAME_COUNT
};

/// True when `value` is a value of `enumeration`.
bool isEnumValue(Enumeration enumeration, int32_t value);

/// The name of memory kind `kind` (KVIO_MEMORY_*, as kvio_enums.def spells it), "?" for none.
const char* memoryKindName(int32_t kind);

/// INVALID_ARGUMENT unless `value` is a value of `enumeration`: "<argument>: <what> <value> is not
/// valid; valid values: <names> (0 to <last> in that order)", e.g. "spec.layout: layout 9 is not
/// valid; valid values: layer_first, page_first, page_first_direct, page_head (0 to 3 in that
/// order)".
kvio_status checkEnumValue(Enumeration enumeration, int32_t value, const char* argument);

}  // namespace kvio

#endif  // KVIO_CORE_NAMES_HPP_
