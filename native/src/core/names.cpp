// The strings users type for kinds, layouts, io backends and granularities (the reference's
// names), their parsing with "did you mean" suggestions, and status names. The Java enums
// carry the same strings; a test checks that both agree.
#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "backends.hpp"
#include "error.hpp"
#include "guard.hpp"
#include "kvio/kvio.h"

namespace kvio {
namespace {

struct NameTable {
  const char* what;  // what the table names, for messages
  std::vector<const char*> names;
};

const NameTable& table(int32_t id) {
  static const NameTable kTables[] = {
      {"pool kind", {"mha", "mla"}},
      {"layout", {"layer_first", "page_first", "page_first_direct", "page_head"}},
      {"io backend", ioBackendNames()},
      {"granularity", {"per_layer", "all_layer"}},
  };
  return kTables[id];
}

bool validTable(int32_t id) {
  return id >= KVIO_NAME_KIND && id <= KVIO_NAME_GRANULARITY;
}

// Optimal string alignment distance (Levenshtein plus adjacent transpositions).
size_t editDistance(const std::string& a, const std::string& b) {
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
      }
    }
  }
  return d[a.size()][b.size()];
}

std::string lowerCase(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

std::string validNames(int32_t id) {
  std::string out;
  for (const char* name : table(id).names) {
    if (!out.empty()) out += ", ";
    out += name;
  }
  return out;
}

}  // namespace kvio

using namespace kvio;

extern "C" {

const char* kvio_version(void) {
  return guardedValue<const char*>(KVIO_VERSION_STRING, [] { return KVIO_VERSION_STRING; });
}

const char* kvio_last_error(void) {
  return guardedValue<const char*>("", [] { return lastError().c_str(); });
}

const char* kvio_status_name(kvio_status status) {
  return guardedValue<const char*>("UNKNOWN_STATUS", [&]() -> const char* {
    switch (status) {
      case KVIO_STATUS_OK: return "OK";
      case KVIO_STATUS_INVALID_ARGUMENT: return "INVALID_ARGUMENT";
      case KVIO_STATUS_OUT_OF_RANGE: return "OUT_OF_RANGE";
      case KVIO_STATUS_UNSUPPORTED: return "UNSUPPORTED";
      case KVIO_STATUS_UNAVAILABLE: return "UNAVAILABLE";
      case KVIO_STATUS_CLOSED: return "CLOSED";
      case KVIO_STATUS_OUT_OF_MEMORY: return "OUT_OF_MEMORY";
      case KVIO_STATUS_BACKEND_ERROR: return "BACKEND_ERROR";
      case KVIO_STATUS_TIMEOUT: return "TIMEOUT";
      case KVIO_STATUS_INTERNAL: return "INTERNAL";
      default: return "UNKNOWN_STATUS";
    }
  });
}

const char* kvio_name(int32_t table_id, int32_t value) {
  return guardedValue<const char*>(nullptr, [&]() -> const char* {
    if (!validTable(table_id)) return nullptr;
    const auto& names = table(table_id).names;
    if (value < 0 || static_cast<size_t>(value) >= names.size()) return nullptr;
    return names[static_cast<size_t>(value)];
  });
}

kvio_status kvio_parse_name(int32_t table_id, const char* text, int32_t* value_out) {
  return guarded([&]() -> kvio_status {
    if (!validTable(table_id)) {
      return fail(KVIO_STATUS_INVALID_ARGUMENT, "unknown name table %d (valid: 0 to 3)", table_id);
    }
    if (value_out == nullptr) return fail(KVIO_STATUS_INVALID_ARGUMENT, "value_out is null");
    const NameTable& t = table(table_id);
    if (text == nullptr) {
      return fail(KVIO_STATUS_INVALID_ARGUMENT, "%s is missing (null); valid values: %s", t.what,
                  validNames(table_id).c_str());
    }
    const std::string given(text);
    for (size_t i = 0; i < t.names.size(); ++i) {
      if (given == t.names[i]) {
        *value_out = static_cast<int32_t>(i);
        return KVIO_STATUS_OK;
      }
    }
    // Nearest match: case-insensitive edit distance, accepted when it is small next to the name.
    const std::string lowered = lowerCase(given);
    size_t best = 0;
    size_t bestDistance = SIZE_MAX;
    for (size_t i = 0; i < t.names.size(); ++i) {
      const size_t d = editDistance(lowered, t.names[i]);
      if (d < bestDistance) {
        bestDistance = d;
        best = i;
      }
    }
    const size_t threshold = std::max<size_t>(2, std::strlen(t.names[best]) / 3);
    std::string suggestion;
    if (!given.empty() && bestDistance <= threshold) {
      suggestion = std::string("; did you mean '") + t.names[best] + "'?";
    }
    return fail(KVIO_STATUS_INVALID_ARGUMENT, "unknown %s '%s'; valid values: %s%s", t.what,
                given.c_str(), validNames(table_id).c_str(), suggestion.c_str());
  });
}

}  // extern "C"
