// The strings users type for kinds, layouts, io backends and granularities (the reference's
// names), their parsing with "did you mean" suggestions, status names, the lists of valid
// values in messages and the range check of an enumeration value given at the C ABI
// (checkEnumValue): all from kvio_enums.def, the one definition of the enumerations. The Java
// enums carry the same strings; NativeValuesTest checks them against that file.
#include "names.hpp"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "error.hpp"
#include "guard.hpp"
#include "kvio/kvio.h"

namespace kvio {
namespace {

struct Named {
  int32_t value;
  const char* name;
};

// One array per table of kvio_enums.def, named after the table's ID (kKIND, kLAYOUT, ...).
constexpr Named kSTATUS[] = {
#define KVIO_DEF_STATUS(id, value) {value, #id},
#include "kvio/kvio_enums.def"
};
constexpr Named kKIND[] = {
#define KVIO_DEF_KIND(id, cpp, value, name) {value, name},
#include "kvio/kvio_enums.def"
};
constexpr Named kLAYOUT[] = {
#define KVIO_DEF_LAYOUT(id, cpp, value, name) {value, name},
#include "kvio/kvio_enums.def"
};
constexpr Named kBACKEND[] = {
#define KVIO_DEF_BACKEND(id, cpp, value, name) {value, name},
#include "kvio/kvio_enums.def"
};
constexpr Named kGRANULARITY[] = {
#define KVIO_DEF_GRANULARITY(id, cpp, value, name) {value, name},
#include "kvio/kvio_enums.def"
};
constexpr Named kMEMORY[] = {
#define KVIO_DEF_MEMORY(id, cpp, value, name) {value, name},
#include "kvio/kvio_enums.def"
};
constexpr Named kNAME_TABLE[] = {
#define KVIO_DEF_NAME_TABLE(id, value, what) {value, what},
#include "kvio/kvio_enums.def"
};

// True when the table counts 0, 1, 2, ... in line order and `count` is one past its last value:
// then a value indexes its table.
template <size_t N>
constexpr bool dense(const Named (&table)[N], int32_t count) {
  for (size_t i = 0; i < N; ++i) {
    if (table[i].value != static_cast<int32_t>(i)) return false;
  }
  return static_cast<int32_t>(N) == count;
}
static_assert(dense(kSTATUS, static_cast<int32_t>(sizeof kSTATUS / sizeof kSTATUS[0])),
              "kvio_enums.def: statuses count 0, 1, 2, ...");
static_assert(dense(kKIND, KVIO_KIND_COUNT), "kvio_enums.def: kinds count 0, 1, 2, ...");
static_assert(dense(kLAYOUT, KVIO_LAYOUT_COUNT), "kvio_enums.def: layouts count 0, 1, 2, ...");
static_assert(dense(kBACKEND, KVIO_BACKEND_COUNT), "kvio_enums.def: backends count 0, 1, 2, ...");
static_assert(dense(kGRANULARITY, KVIO_GRANULARITY_COUNT),
              "kvio_enums.def: granularities count 0, 1, 2, ...");
static_assert(dense(kMEMORY, KVIO_MEMORY_COUNT), "kvio_enums.def: memory kinds count 0, 1, 2, ...");
static_assert(dense(kNAME_TABLE, KVIO_NAME_COUNT),
              "kvio_enums.def: name tables count 0, 1, 2, ...");

struct NameTable {
  int32_t id;        // KVIO_NAME_*
  const char* what;  // what the table names, for messages
  const Named* names;
  size_t count;
};

constexpr NameTable kTables[] = {
#define KVIO_DEF_NAME_TABLE(id, value, what) {value, what, k##id, sizeof k##id / sizeof k##id[0]},
#include "kvio/kvio_enums.def"
};
// kTables is dense as kNAME_TABLE is (the same lines of kvio_enums.def): an id indexes it.

const NameTable& table(int32_t id) {
  return kTables[id];
}

// An enumeration's values: what it names, and its names in value order (0, 1, 2, ...: the tables
// are dense, see the static_asserts above).
struct Values {
  const char* what;
  const Named* names;
  size_t count;
};

Values valuesOf(Enumeration enumeration) {
  switch (enumeration) {
    case Enumeration::kNameTable:
      return {"name table", kNAME_TABLE, sizeof kNAME_TABLE / sizeof kNAME_TABLE[0]};
    default: {
      const NameTable& t = table(static_cast<int32_t>(enumeration));
      return {t.what, t.names, t.count};
    }
  }
}

// "a, b, c".
std::string list(const Named* names, size_t count) {
  std::string out;
  for (size_t i = 0; i < count; ++i) {
    if (!out.empty()) out += ", ";
    out += names[i].name;
  }
  return out;
}

// The names of name table `id`: "layer_first, page_first, ...".
std::string validNames(int32_t id) {
  return list(table(id).names, table(id).count);
}

// Optimal string alignment distance (Levenshtein plus adjacent transpositions), keeping the
// three rows the recurrence reads (the transposition reaches back two).
size_t editDistance(const std::string& a, const std::string& b) {
  std::vector<size_t> before(b.size() + 1), previous(b.size() + 1), current(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) previous[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    current[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      current[j] = std::min({previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        current[j] = std::min(current[j], before[j - 2] + 1);
      }
    }
    before.swap(previous);
    previous.swap(current);
  }
  return previous[b.size()];
}

// Longer inputs are quoted in part and get no suggestion: no name is that long, and a huge
// input (a file read by mistake) must not cost its length squared or fill the message.
constexpr size_t kMaxQuotedChars = 64;

// The input as the message quotes it: printable ASCII as it is, any other byte (a newline, a
// control character, a byte of UTF-8 or of no encoding) as \xNN, so the message stays one line
// of text whatever was passed, and a backslash as \\ (so that a typed "\x0a" and a newline read
// differently). No valid name has such a byte.
std::string printable(const std::string& s) {
  std::string out;
  for (const char c : s) {
    const unsigned char b = static_cast<unsigned char>(c);
    if (c == '\\') {
      out += "\\\\";
    } else if (b >= 0x20 && b < 0x7f) {
      out += c;
    } else {
      char escaped[5];
      std::snprintf(escaped, sizeof escaped, "\\x%02x", b);
      out += escaped;
    }
  }
  return out;
}

std::string lowerCase(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// Names users bring from the reference (or type for a device) that kvio spells otherwise: the
// message says what kvio uses instead, in place of a nearest match that would mislead ("npu" is
// one letter from "cpu").
struct Hint {
  int32_t table;
  const char* given;  // compared case-insensitively
  const char* hint;
};

constexpr const char kCudaBackendsHint[] =
    "for an NVIDIA GPU the io backends are 'kernel' (a copy kernel), 'direct' (the copy engine), "
    "'staged' (gathered on the device, one copy-engine copy), or 'auto', which picks among them "
    "per transfer (docs/cuda.md)";

constexpr Hint kHints[] = {
    {KVIO_NAME_LAYOUT, "page_first_kv_split",
     "'page_first_kv_split' is the reference's MLA layout on Ascend, separate buffers in one host "
     "pool; kvio makes each of its buffers (latent, rope, and the optional index-K and its fp32 "
     "scales) an mla pool of its own, 'page_first_direct' on the host (each buffer is (P, L, ps, "
     "1, W): heads 1, head_bytes W times the element size) and 'layer_first' on the device, all "
     "moved on one kernel_ascend executor (docs/ascend.md)"},
    {KVIO_NAME_BACKEND, "npu", "for an Ascend NPU the io backend is 'kernel_ascend'"},
    {KVIO_NAME_BACKEND, "ascend", "for an Ascend NPU the io backend is 'kernel_ascend'"},
    // 'gpu' is one edit from 'cpu', the opposite of what is meant.
    {KVIO_NAME_BACKEND, "gpu", kCudaBackendsHint},
    {KVIO_NAME_BACKEND, "cuda", kCudaBackendsHint},
    {KVIO_NAME_BACKEND, "nvidia", kCudaBackendsHint},
};

}  // namespace

bool isEnumValue(Enumeration enumeration, int32_t value) {
  return value >= 0 && static_cast<size_t>(value) < valuesOf(enumeration).count;
}

const char* memoryKindName(int32_t kind) {
  return isEnumValue(Enumeration::kMemoryKind, kind) ? kMEMORY[kind].name : "?";
}

kvio_status checkEnumValue(Enumeration enumeration, int32_t value, const char* argument) {
  if (isEnumValue(enumeration, value)) return KVIO_STATUS_OK;
  const Values values = valuesOf(enumeration);
  return fail(KVIO_STATUS_INVALID_ARGUMENT,
              "%s: %s %d is not valid; valid values: %s (0 to %d in that order)", argument,
              values.what, value, list(values.names, values.count).c_str(),
              static_cast<int>(values.count) - 1);
}

}  // namespace kvio

using namespace kvio;

extern "C" {

const char* kvio_version(void) {
  return guardedValue<const char*>(KVIO_VERSION_STRING, [] { return KVIO_VERSION_STRING; });
}

const char* kvio_last_error(void) {
  return lastErrorText();
}

kvio_status kvio_last_status(void) {
  return lastStatus();
}

const char* kvio_status_name(kvio_status status) {
  return guardedValue<const char*>("UNKNOWN_STATUS", [&]() -> const char* {
    const size_t count = sizeof kSTATUS / sizeof kSTATUS[0];
    if (status < 0 || static_cast<size_t>(status) >= count) return "UNKNOWN_STATUS";
    return kSTATUS[status].name;
  });
}

const char* kvio_name(int32_t table_id, int32_t value) {
  return guardedValue<const char*>(nullptr, [&]() -> const char* {
    // NULL, and kvio_last_status / kvio_last_error say which argument is out of range.
    if (checkEnumValue(Enumeration::kNameTable, table_id, "table") != KVIO_STATUS_OK ||
        checkEnumValue(static_cast<Enumeration>(table_id), value, "value") != KVIO_STATUS_OK) {
      return nullptr;
    }
    return table(table_id).names[value].name;
  });
}

kvio_status kvio_parse_name(int32_t table_id, const char* text, int32_t* value_out) {
  return guarded([&]() -> kvio_status {
    KVIO_RETURN_IF_ERROR(checkEnumValue(Enumeration::kNameTable, table_id, "table"));
    if (value_out == nullptr) return fail(KVIO_STATUS_INVALID_ARGUMENT, "value_out is null");
    const NameTable& t = table(table_id);
    if (text == nullptr) {
      return fail(KVIO_STATUS_INVALID_ARGUMENT, "%s is missing (null); valid values: %s", t.what,
                  validNames(table_id).c_str());
    }
    for (size_t i = 0; i < t.count; ++i) {
      if (std::strcmp(text, t.names[i].name) == 0) {
        *value_out = t.names[i].value;
        return KVIO_STATUS_OK;
      }
    }
    const size_t length = std::strlen(text);
    if (length > kMaxQuotedChars) {
      return fail(KVIO_STATUS_INVALID_ARGUMENT,
                  "unknown %s '%s...' (%zu characters); valid values: %s", t.what,
                  printable(std::string(text, kMaxQuotedChars)).c_str(), length,
                  validNames(table_id).c_str());
    }
    const std::string given(text);
    const std::string lowered = lowerCase(given);
    for (const Hint& h : kHints) {
      if (h.table == table_id && lowered == h.given) {
        return fail(KVIO_STATUS_INVALID_ARGUMENT, "unknown %s '%s'; valid values: %s; %s", t.what,
                    printable(given).c_str(), validNames(table_id).c_str(), h.hint);
      }
    }
    // Nearest match: case-insensitive edit distance, accepted when it is small next to the name.
    size_t best = 0;
    size_t bestDistance = SIZE_MAX;
    for (size_t i = 0; i < t.count; ++i) {
      const size_t d = editDistance(lowered, t.names[i].name);
      if (d < bestDistance) {
        bestDistance = d;
        best = i;
      }
    }
    const size_t threshold = std::max<size_t>(2, std::strlen(t.names[best].name) / 3);
    std::string suggestion;
    if (!given.empty() && bestDistance <= threshold) {
      suggestion = std::string("; did you mean '") + t.names[best].name + "'?";
    }
    return fail(KVIO_STATUS_INVALID_ARGUMENT, "unknown %s '%s'; valid values: %s%s", t.what,
                printable(given).c_str(), validNames(table_id).c_str(), suggestion.c_str());
  });
}

}  // extern "C"
