// The names of kvio's enumerations (names.cpp, from kvio_enums.def), for messages.
#ifndef KVIO_CORE_NAMES_HPP_
#define KVIO_CORE_NAMES_HPP_

#include <cstdint>
#include <string>

namespace kvio {

/// The names of name table `table` (KVIO_NAME_*): "layer_first, page_first, ...".
std::string validNames(int32_t table);
/// The same, numbered by value: "0 = layer_first, 1 = page_first, ...".
std::string numberedNames(int32_t table);
/// What the table names, for messages: "pool kind", "layout", "io backend", "granularity".
const char* tableWhat(int32_t table);

}  // namespace kvio

#endif  // KVIO_CORE_NAMES_HPP_
