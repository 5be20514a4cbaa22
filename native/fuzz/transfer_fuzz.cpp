// libFuzzer target over the C ABI's pool creation, validation, planner and CPU executor
// (docs/reliability.md). Each input is decoded into two pool geometries (kind, layout, memory
// form, sizes), a transfer (index lists that may hold negative, past-the-end or huge values,
// layer windows, same-pool requests; submitted with kvio_submit or kvio_submit_with and options,
// valid or with one bad field) and run two ways:
//  - small pools in real memory with guard zones around every buffer: the request must be
//    accepted exactly when an independent validity model says so; an accepted one must change
//    exactly the bytes the naive oracle (loops over logical coordinates, shapes of
//    native/tests/oracle.hpp, no library code) says, a rejected one no byte, guards included;
//  - pools of absurd geometry over fake addresses, planned only (kvio_plan never touches
//    memory): the spec must be accepted exactly when its size fits 2^62 bytes, and every copy
//    of an accepted plan must lie inside the pools' regions, with the request's byte count.
// A third mode checks kvio_check_support on arbitrary queries. A violated property aborts with
// a message. Built with clang as a libFuzzer binary
// (kvio_fuzz_transfer) and with any compiler as kvio_fuzz_replay, which replays
// native/fuzz/corpus under ctest.
#include <algorithm>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "kvio/kvio.h"

namespace {

constexpr uint8_t kCanary = 0xA5;
constexpr uint8_t kGuardByte = 0x5A;
constexpr size_t kGuard = 64;

[[noreturn]] void violated(const char* what, const char* detail = "") {
  std::fprintf(stderr, "kvio fuzz: property violated: %s %s\n(last error: %s)\n", what, detail,
               kvio_last_error());
  std::abort();
}

void require(bool ok, const char* what) {
  if (!ok) violated(what);
}

/// Reads the fuzz input as a stream; past its end every read is 0.
class Input {
 public:
  Input(const uint8_t* data, size_t size) : p_(data), n_(size) {}
  uint8_t byte() {
    if (n_ == 0) return 0;
    --n_;
    return *p_++;
  }
  uint64_t u64() {
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v = (v << 8) | byte();
    return v;
  }
  /// A value in [lo, hi] (hi - lo < 2^16).
  int64_t pick(int64_t lo, int64_t hi) {
    const uint64_t span = static_cast<uint64_t>(hi - lo) + 1;
    const uint64_t v = (static_cast<uint64_t>(byte()) << 8) | byte();
    return lo + static_cast<int64_t>(v % span);
  }
  /// Usually a value in [lo, hi]; sometimes one just outside it or an extreme.
  int64_t wild(int64_t lo, int64_t hi) {
    const uint8_t mode = byte();
    if (mode < 224) return pick(lo, hi);
    switch (mode % 8) {
      case 0: return lo - 1;
      case 1: return hi + 1;
      case 2: return -1;
      case 3: return INT64_MIN;
      case 4: return INT64_MAX;
      case 5: return int64_t{1} << 62;
      case 6: return -static_cast<int64_t>(int64_t{1} << 32);
      default: return static_cast<int64_t>(u64());
    }
  }

 private:
  const uint8_t* p_;
  size_t n_;
};

enum Form { kSingle = 0, kPerComponent = 1, kPerLayer = 2 };

struct Geometry {
  int32_t kind = KVIO_KIND_MHA;
  int32_t layout = KVIO_LAYOUT_LAYER_FIRST;
  int32_t form = kSingle;
  int64_t L = 1, P = 1, ps = 1, H = 1, hb = 1;

  int64_t C() const { return kind == KVIO_KIND_MHA ? 2 : 1; }
  int64_t S() const { return P * ps; }
  int64_t row() const { return H * hb; }
  int64_t componentBytes() const { return L * S() * row(); }
  int64_t regions() const { return form == kPerComponent ? C() : form == kPerLayer ? C() * L : 1; }
  int64_t regionBytes() const {
    return form == kPerComponent ? componentBytes()
           : form == kPerLayer   ? S() * row()
                                 : C() * componentBytes();
  }
  kvio_pool_spec spec() const { return kvio_pool_spec{kind, layout, L, P, ps, H, hb}; }
};

// ---- the independent models ----

/// The status a spec must get: the checks of kvio.h's pool spec, in their documented order.
kvio_status expectedSpecStatus(const kvio_pool_spec& s) {
  if (s.kind < 0 || s.kind >= KVIO_KIND_COUNT) return KVIO_STATUS_INVALID_ARGUMENT;
  if (s.layout < 0 || s.layout >= KVIO_LAYOUT_COUNT) return KVIO_STATUS_INVALID_ARGUMENT;
  const int64_t sizes[] = {s.num_layers, s.num_pages, s.page_size, s.head_num, s.head_bytes};
  for (int64_t v : sizes)
    if (v < 1) return KVIO_STATUS_INVALID_ARGUMENT;
  if (s.num_layers > (int64_t{1} << 20)) return KVIO_STATUS_INVALID_ARGUMENT;  // layer tables
  if (s.layout == KVIO_LAYOUT_PAGE_HEAD && s.kind != KVIO_KIND_MHA) return KVIO_STATUS_UNSUPPORTED;
  // All factors are >= 1, so the product only grows: stop once it passes 2^62.
  unsigned __int128 total = s.kind == KVIO_KIND_MHA ? 2 : 1;
  for (int64_t v : sizes) {
    total *= static_cast<uint64_t>(v);
    if (total > (static_cast<unsigned __int128>(1) << 62)) return KVIO_STATUS_INVALID_ARGUMENT;
  }
  return KVIO_STATUS_OK;
}

struct Request {
  std::vector<int64_t> src, dst;
  int64_t srcLayer = 0, dstLayer = 0, layers = 1;
  bool samePool = false;
};

bool inRange(int64_t v, int64_t n) {
  return v >= 0 && v < n;
}

bool layerWindowFits(int64_t start, int64_t count, int64_t L) {
  const __int128 end = static_cast<__int128>(start) + count;
  return start >= 0 && end <= L;
}

/// The status a transfer must get, checks in the order kvio.h's validation documents: shape
/// (count, more pairs than destination slots, kind, row geometry, layer count) INVALID_ARGUMENT;
/// layer windows then indices OUT_OF_RANGE; duplicate destinations, then same-pool overlap,
/// INVALID_ARGUMENT.
kvio_status expectedTransferStatus(const Geometry& sg, const Geometry& dg, const Request& r) {
  const int64_t n = static_cast<int64_t>(r.src.size());
  if (n < 1) return KVIO_STATUS_INVALID_ARGUMENT;
  if (n > dg.S()) return KVIO_STATUS_INVALID_ARGUMENT;  // more pairs than destination slots
  if (sg.kind != dg.kind || sg.H != dg.H || sg.hb != dg.hb) return KVIO_STATUS_INVALID_ARGUMENT;
  if (r.layers < 1) return KVIO_STATUS_INVALID_ARGUMENT;
  if (!layerWindowFits(r.srcLayer, r.layers, sg.L) || !layerWindowFits(r.dstLayer, r.layers, dg.L))
    return KVIO_STATUS_OUT_OF_RANGE;
  for (int64_t v : r.src)
    if (!inRange(v, sg.S())) return KVIO_STATUS_OUT_OF_RANGE;
  for (int64_t v : r.dst)
    if (!inRange(v, dg.S())) return KVIO_STATUS_OUT_OF_RANGE;
  std::vector<uint8_t> written(static_cast<size_t>(dg.S()), 0);
  for (int64_t v : r.dst) {
    if (written[static_cast<size_t>(v)]) return KVIO_STATUS_INVALID_ARGUMENT;
    written[static_cast<size_t>(v)] = 1;
  }
  const bool windowsMeet = r.srcLayer < r.dstLayer + r.layers && r.dstLayer < r.srcLayer + r.layers;
  if (r.samePool && windowsMeet) {
    for (int64_t v : r.src)
      if (written[static_cast<size_t>(v)]) return KVIO_STATUS_INVALID_ARGUMENT;
  }
  return KVIO_STATUS_OK;
}

/// Row-major offset of index `idx` in an array of shape `dims` (5 or 6 dimensions).
int64_t flatten(std::initializer_list<int64_t> dims, std::initializer_list<int64_t> idx) {
  int64_t offset = 0;
  auto d = dims.begin();
  for (auto i = idx.begin(); i != idx.end(); ++i, ++d) offset = offset * *d + *i;
  return offset;
}

struct Location {
  int64_t region;
  int64_t offset;
};

/// Where byte 0 of head h of token t, layer l, component c lies (the shapes of kvio.h).
Location locate(const Geometry& g, int64_t c, int64_t l, int64_t t, int64_t h) {
  const int64_t p = t / g.ps, s = t % g.ps, S = g.S();
  if (g.form == kPerLayer) return {c * g.L + l, flatten({S, g.H, g.hb}, {t, h, 0})};
  const bool single = g.form == kSingle;
  const int64_t C = single ? g.C() : 1, cc = single ? c : 0, region = single ? 0 : c;
  switch (g.layout) {
    case KVIO_LAYOUT_LAYER_FIRST:
      return {region, flatten({C, g.L, S, g.H, g.hb}, {cc, l, t, h, 0})};
    case KVIO_LAYOUT_PAGE_FIRST: return {region, flatten({C, S, g.L, g.H, g.hb}, {cc, t, l, h, 0})};
    case KVIO_LAYOUT_PAGE_FIRST_DIRECT:
      return {region, flatten({C, g.P, g.L, g.ps, g.H, g.hb}, {cc, p, l, s, h, 0})};
    default: return {region, flatten({C, g.P, g.H, g.ps, g.L, g.hb}, {cc, p, h, s, l, 0})};
  }
}

/// A pool's buffers, each with kGuard guard bytes on both sides.
struct Memory {
  std::vector<std::vector<uint8_t>> buffers;
  uint8_t* at(Location where) {
    return buffers[static_cast<size_t>(where.region)].data() + kGuard + where.offset;
  }
  const uint8_t* at(Location where) const {
    return buffers[static_cast<size_t>(where.region)].data() + kGuard + where.offset;
  }
};

Memory makeMemory(const Geometry& g, bool random, uint64_t seed) {
  Memory m;
  m.buffers.resize(static_cast<size_t>(g.regions()));
  for (auto& b : m.buffers) {
    b.assign(static_cast<size_t>(g.regionBytes()) + 2 * kGuard, kGuardByte);
    for (size_t i = kGuard; i + kGuard < b.size(); i += 8) {
      seed = seed * 6364136223846793005ull + 1442695040888963407ull;
      const uint64_t value = random ? seed : 0x0101010101010101ull * kCanary;
      std::memcpy(b.data() + i, &value, std::min<size_t>(8, b.size() - kGuard - i));
    }
  }
  return m;
}

/// Wraps `m` as a kvio pool in g's form; returns the status.
kvio_status wrap(const Geometry& g, Memory& m, uint64_t* pool) {
  const kvio_pool_spec spec = g.spec();
  const uint64_t bytes = static_cast<uint64_t>(g.regionBytes());
  std::vector<uint64_t> addresses;
  for (auto& b : m.buffers) addresses.push_back(reinterpret_cast<uint64_t>(b.data() + kGuard));
  switch (g.form) {
    case kSingle: return kvio_pool_wrap(&spec, addresses[0], bytes, pool);
    case kPerComponent:
      return kvio_pool_wrap_components(&spec, addresses.data(), static_cast<int32_t>(g.C()), bytes,
                                       pool);
    default:
      return kvio_pool_wrap_layer_table(&spec, addresses.data(),
                                        static_cast<int64_t>(addresses.size()), bytes, pool);
  }
}

uint64_t executor() {
  static uint64_t handle = [] {
    uint64_t h = 0;
    if (kvio_executor_create(KVIO_BACKEND_CPU, 2, &h) != KVIO_STATUS_OK) violated("executor");
    return h;
  }();
  return handle;
}

Geometry smallGeometry(Input& in) {
  Geometry g;
  g.kind = in.byte() & 1;
  g.layout = in.byte() % KVIO_LAYOUT_COUNT;
  if (g.kind == KVIO_KIND_MLA && g.layout == KVIO_LAYOUT_PAGE_HEAD) g.layout = in.byte() % 3;
  g.form = in.byte() % 3;
  g.L = in.pick(1, 4);
  g.P = in.pick(1, 6);
  g.ps = in.pick(1, 5);
  g.H = in.pick(1, 3);
  // Mostly short rows; sometimes rows long enough that the executor's workers, chunking and
  // streaming stores run.
  const uint8_t scale = in.byte();
  g.hb = scale < 240 ? in.pick(1, 9) : in.pick(1, 2) * 1024 + in.pick(0, 63);
  return g;
}

std::vector<int64_t> indices(Input& in, int64_t count, int64_t tokens) {
  std::vector<int64_t> out(static_cast<size_t>(count));
  const uint8_t mode = in.byte() % 4;
  const int64_t start = in.pick(0, tokens - 1);
  for (int64_t i = 0; i < count; ++i) {
    if (mode == 0) {
      out[static_cast<size_t>(i)] = (start + i) % tokens;  // runs, distinct while count <= tokens
    } else if (mode == 1) {
      out[static_cast<size_t>(i)] = (start + i * 7) % tokens;
    } else {
      out[static_cast<size_t>(i)] = in.wild(0, tokens - 1);
    }
  }
  if (mode < 2 && count > 0 && in.byte() >= 200) {  // one stray value in an orderly list
    out[static_cast<size_t>(in.pick(0, count - 1))] = in.wild(-2, tokens + 1);
  }
  return out;
}

/// How a request is submitted: kvio_submit, or kvio_submit_with with options as a caller lays them
/// out (struct_size bytes), and what the options alone make of it by kvio.h's rules (OK: the
/// request's own status decides). Drawn from the top bits of the request's seed, so every input
/// keeps the rest of its decoding: half kvio_submit; then valid options (some in a later caller's
/// larger struct with zero new fields); an eighth with one bad field.
struct SubmitForm {
  bool with = false;
  std::vector<uint8_t> bytes;  // the options struct, at least sizeof(kvio_submit_options)
  kvio_status expected = KVIO_STATUS_OK;
  bool overlaps = false;
  const kvio_submit_options* options() const {
    return reinterpret_cast<const kvio_submit_options*>(bytes.data());
  }
};

SubmitForm submitForm(uint64_t seed) {
  SubmitForm f;
  const unsigned form = static_cast<unsigned>(seed >> 56);
  if (form < 128) return f;
  f.with = true;
  kvio_submit_options o{};
  o.struct_size = sizeof o;
  o.flags = static_cast<uint32_t>((seed >> 8) & 3);  // the overlap mark, queue-only, both
  o.cta_budget = static_cast<int32_t>((seed >> 16) & 0xffff) - 8;  // -8 to 65527
  o.warps_per_cta = static_cast<int32_t>((seed >> 32) % 35) - 2;   // -2 to 32
  o.indices_memory = KVIO_INDICES_HOST;
  size_t size = sizeof o;
  const uint64_t r = seed >> 40;
  size_t badTailByte = 0;
  if (form >= 224) {
    f.expected = KVIO_STATUS_INVALID_ARGUMENT;
    switch (form % 8) {
      case 0: o.flags |= 4u << (r % 30); break;  // a bit past the known flags
      case 1: o.cta_budget = 65536 + static_cast<int32_t>(r % 1000); break;
      case 2: o.warps_per_cta = 33 + static_cast<int32_t>(r % 100); break;
      case 3: o.indices_memory = r % 2 ? -1 - static_cast<int32_t>(r % 7) : 2; break;
      case 4: o.reserved = 1 + static_cast<int32_t>(r % 100); break;
      case 5:  // below the first version's size, or above the bound (refused unread)
        o.struct_size =
            r % 2 ? static_cast<uint32_t>(r % 24) : 4097u + static_cast<uint32_t>(r % 1000);
        break;
      case 6:
        size = sizeof o + 8;
        o.struct_size = static_cast<uint32_t>(size);
        badTailByte = sizeof o + r % 8;
        break;
      default:  // device indices: the cpu executor takes none
        o.indices_memory = KVIO_INDICES_DEVICE;
        f.expected = KVIO_STATUS_UNSUPPORTED;
        break;
    }
  } else if (form >= 192) {
    size = sizeof o + 8 * (1 + r % 4);
    o.struct_size = static_cast<uint32_t>(size);
  }
  f.bytes.assign(size, 0);
  std::memcpy(f.bytes.data(), &o, sizeof o);
  if (badTailByte != 0) f.bytes[badTailByte] = static_cast<uint8_t>(1 + r % 255);
  f.overlaps = (o.flags & KVIO_SUBMIT_OVERLAPS_COMPUTE) != 0;
  return f;
}

/// Small pools in real memory, executed and compared with the oracle.
void runSmall(Input& in) {
  const Geometry sg = smallGeometry(in);
  Geometry dg = in.byte() < 64 ? smallGeometry(in) : sg;
  if (in.byte() < 224) {  // mostly the same row geometry, so that most requests are valid
    dg.kind = sg.kind;
    dg.H = sg.H;
    dg.hb = sg.hb;
    if (dg.kind == KVIO_KIND_MLA && dg.layout == KVIO_LAYOUT_PAGE_HEAD) dg.layout = sg.layout;
  }
  const uint64_t seed = in.u64();
  Memory src = makeMemory(sg, true, seed);
  Memory dst = makeMemory(dg, false, 0);
  const Memory srcBefore = src, dstBefore = dst;

  uint64_t srcPool = 0, dstPool = 0;
  const kvio_status ws = wrap(sg, src, &srcPool);
  const bool tableLayout = sg.form != kPerLayer || sg.layout == KVIO_LAYOUT_LAYER_FIRST;
  require((ws == KVIO_STATUS_OK) == tableLayout, "wrap status (layer tables need layer_first)");
  if (ws != KVIO_STATUS_OK) return;
  Request r;
  r.samePool = in.byte() < 48;
  const Geometry& target = r.samePool ? sg : dg;
  Memory& targetMemory = r.samePool ? src : dst;
  if (r.samePool) {
    dstPool = srcPool;
  } else {
    const kvio_status wd = wrap(dg, dst, &dstPool);
    require(
        (wd == KVIO_STATUS_OK) == (dg.form != kPerLayer || dg.layout == KVIO_LAYOUT_LAYER_FIRST),
        "wrap status (layer tables need layer_first)");
    if (wd != KVIO_STATUS_OK) {
      kvio_pool_close(srcPool);
      return;
    }
  }
  const int64_t count = in.byte() < 8 ? 0 : in.pick(1, 24);
  r.src = indices(in, count, sg.S());
  r.dst = indices(in, count, target.S());
  const int64_t maxLayers = sg.L < target.L ? sg.L : target.L;
  r.layers = in.wild(1, maxLayers);
  r.srcLayer = in.wild(0, sg.L - 1);
  r.dstLayer = in.wild(0, target.L - 1);

  const SubmitForm form = submitForm(seed);
  const kvio_status expected =
      form.expected != KVIO_STATUS_OK ? form.expected : expectedTransferStatus(sg, target, r);
  const kvio_transfer_desc desc{srcPool, dstPool,    r.src.data(), r.dst.data(),
                                count,   r.srcLayer, r.dstLayer,   r.layers};
  int64_t copies = -1;
  const kvio_status planned = kvio_plan(&desc, nullptr, 0, &copies);
  const uint64_t untouched = 0x5a5a5a5a5a5a5a5aull;  // a refusal leaves *transfer_out as it was
  uint64_t transfer = untouched;
  const kvio_status submitted = form.with
                                    ? kvio_submit_with(executor(), &desc, form.options(), &transfer)
                                    : kvio_submit(executor(), &desc, &transfer);
  if (submitted != expected) {
    char detail[96];
    std::snprintf(detail, sizeof detail, "(got %s, expected %s)", kvio_status_name(submitted),
                  kvio_status_name(expected));
    violated("submit status", detail);
  }
  require(form.expected != KVIO_STATUS_OK || planned == submitted,
          "kvio_plan and kvio_submit agree");
  if (form.with && count > 0) {
    require(kvio_check_transfer_with(executor(), &desc, form.options()) == submitted,
            "kvio_check_transfer_with and kvio_submit_with agree");
  }
  require(submitted == KVIO_STATUS_OK || std::strlen(kvio_last_error()) > 0, "rejection message");
  require(submitted == KVIO_STATUS_OK || transfer == untouched, "a refusal leaves transfer_out");
  if (submitted == KVIO_STATUS_OK) {
    require(kvio_transfer_wait(transfer, -1) == KVIO_STATUS_OK, "transfer completes");
    uint64_t bytes = 0;
    require(kvio_transfer_bytes(transfer, &bytes) == KVIO_STATUS_OK, "transfer bytes");
    require(bytes == static_cast<uint64_t>(count * r.layers * sg.C() * sg.row()),
            "transfer moves count x layers x components x row bytes");
    kvio_transfer_info info{};
    require(kvio_transfer_get_info(transfer, &info) == KVIO_STATUS_OK, "transfer info");
    require(info.overlaps_compute == (form.overlaps ? 1 : 0), "the overlap mark is recorded");
    require(kvio_transfer_close(transfer) == KVIO_STATUS_OK, "transfer close");
  }
  kvio_pool_close(srcPool);
  if (!r.samePool) kvio_pool_close(dstPool);

  // Expected state: the oracle's copies on the before-image (all reads see the state before
  // the transfer: validation excludes a slot read and written in the same layers of one pool).
  Memory expect = r.samePool ? srcBefore : dstBefore;
  if (submitted == KVIO_STATUS_OK) {
    for (size_t i = 0; i < r.src.size(); ++i)
      for (int64_t j = 0; j < r.layers; ++j)
        for (int64_t c = 0; c < sg.C(); ++c)
          for (int64_t h = 0; h < sg.H; ++h)
            std::memcpy(expect.at(locate(target, c, r.dstLayer + j, r.dst[i], h)),
                        srcBefore.at(locate(sg, c, r.srcLayer + j, r.src[i], h)),
                        static_cast<size_t>(sg.hb));
  }
  require(expect.buffers == targetMemory.buffers,
          submitted == KVIO_STATUS_OK
              ? "accepted transfer wrote exactly the oracle's destination rows"
              : "rejected transfer changed no byte");
  if (!r.samePool) require(src.buffers == srcBefore.buffers, "source pool unchanged");
}

/// Fake-address regions of a plan-only pool.
struct FakePool {
  uint64_t handle = 0;
  std::vector<kvio_copy2d> regions;  // only src (address) and width (bytes) used
};

kvio_status fakeWrap(const kvio_pool_spec& spec, int32_t form, uint64_t base, FakePool* out) {
  uint64_t componentBytes = 0;
  const kvio_status s = kvio_pool_component_bytes(&spec, &componentBytes);
  if (s != KVIO_STATUS_OK) return s;
  const int32_t C = spec.kind == KVIO_KIND_MHA ? 2 : 1;
  if (form == kPerLayer && spec.layout == KVIO_LAYOUT_LAYER_FIRST && spec.num_layers <= 64) {
    const uint64_t each = componentBytes / static_cast<uint64_t>(spec.num_layers);
    std::vector<uint64_t> table;
    for (int64_t i = 0; i < C * spec.num_layers; ++i) {
      // Layer buffers in reverse address order, 4 KiB apart.
      const uint64_t address =
          base + static_cast<uint64_t>(C * spec.num_layers - 1 - i) * (each + 4096);
      table.push_back(address);
      out->regions.push_back(kvio_copy2d{address, 0, each, 0, 0, 0});
    }
    return kvio_pool_wrap_layer_table(&spec, table.data(), static_cast<int64_t>(table.size()), each,
                                      &out->handle);
  }
  out->regions.push_back(kvio_copy2d{base, 0, componentBytes * C, 0, 0, 0});
  return kvio_pool_wrap(&spec, base, componentBytes * C, &out->handle);
}

bool inside(const std::vector<kvio_copy2d>& regions, unsigned __int128 first,
            unsigned __int128 last) {
  for (const kvio_copy2d& r : regions)
    if (first >= r.src && last <= static_cast<unsigned __int128>(r.src) + r.width) return true;
  return false;
}

/// Absurd geometry over fake addresses: spec checks and plan bounds, no memory touched.
void runHuge(Input& in) {
  kvio_pool_spec spec[2];
  for (auto& s : spec) {
    s.kind = static_cast<int32_t>(in.wild(0, 1));
    s.layout = static_cast<int32_t>(in.wild(0, 3));
    s.num_layers = in.wild(1, 80);
    s.num_pages = in.wild(1, 1 << 15);
    s.page_size = in.wild(1, 256);
    s.head_num = in.wild(1, 64);
    s.head_bytes = in.wild(1, 1 << 12);
    if (in.byte() >= 128) {  // second pool of the same row geometry
      s.kind = spec[0].kind;
      s.head_num = spec[0].head_num;
      s.head_bytes = spec[0].head_bytes;
    }
  }
  FakePool pools[2];
  const uint64_t bases[2] = {uint64_t{1} << 44, uint64_t{1} << 63};  // disjoint, no wrap
  for (int i = 0; i < 2; ++i) {
    const kvio_status expected = expectedSpecStatus(spec[i]);
    const kvio_status got = fakeWrap(spec[i], in.byte() % 3, bases[i], &pools[i]);
    if (got != expected) {
      // The layer table path: too many layers for the fake table is only skipped, not tested.
      violated("spec status", kvio_status_name(got));
    }
    if (expected == KVIO_STATUS_OK) {
      uint64_t bytes = 0;
      kvio_pool_component_bytes(&spec[i], &bytes);
      const unsigned __int128 product =
          static_cast<unsigned __int128>(spec[i].num_layers) *
          static_cast<uint64_t>(spec[i].num_pages) * static_cast<uint64_t>(spec[i].page_size) *
          static_cast<uint64_t>(spec[i].head_num) * static_cast<uint64_t>(spec[i].head_bytes);
      require(product == bytes, "component bytes = L x P x ps x H x hb");
    }
  }
  if (pools[0].handle != 0 && pools[1].handle != 0) {
    Geometry g[2];
    for (int i = 0; i < 2; ++i) {
      g[i].kind = spec[i].kind;
      g[i].L = spec[i].num_layers;
      g[i].P = spec[i].num_pages;
      g[i].ps = spec[i].page_size;
      g[i].H = spec[i].head_num;
      g[i].hb = spec[i].head_bytes;
    }
    Request r;
    const int64_t count = in.pick(0, 8);
    const int64_t srcTokens = g[0].S(), dstTokens = g[1].S();
    for (int64_t i = 0; i < count; ++i) {
      const int64_t ends[] = {0, srcTokens - 1, dstTokens - 1, srcTokens / 2 + i, i};
      r.src.push_back(in.byte() < 200 ? ends[in.byte() % 5] : in.wild(0, srcTokens - 1));
      r.dst.push_back(in.byte() < 200 ? ends[in.byte() % 5] : in.wild(0, dstTokens - 1));
    }
    r.layers = in.wild(1, 80);
    r.srcLayer = in.wild(0, g[0].L - 1);
    r.dstLayer = in.wild(0, g[1].L - 1);
    // Bound the plan's size: at most count x layers x components x heads units.
    const bool small = r.layers >= 1 && r.layers <= 4096 &&
                       static_cast<__int128>(count) * r.layers * 2 * g[0].H <= 65536;
    // The independent model needs a slot table for duplicates: only for modest pools.
    if (small && dstTokens <= (int64_t{1} << 20)) {
      const kvio_status expected = expectedTransferStatus(g[0], g[1], r);
      const kvio_transfer_desc desc{pools[0].handle, pools[1].handle, r.src.data(), r.dst.data(),
                                    count,           r.srcLayer,      r.dstLayer,   r.layers};
      int64_t n = 0;
      const kvio_status planned = kvio_plan(&desc, nullptr, 0, &n);
      require(planned == expected, "plan status (huge pools)");
      if (planned == KVIO_STATUS_OK) {
        std::vector<kvio_copy2d> plan(static_cast<size_t>(n));
        require(kvio_plan(&desc, plan.data(), n, &n) == KVIO_STATUS_OK, "plan again");
        unsigned __int128 total = 0;
        for (const kvio_copy2d& c : plan) {
          require(c.width > 0 && c.height > 0, "copy is not empty");
          // Row by row: rows at a constant pitch may lie in different layer buffers.
          for (uint64_t row = 0; row < c.height; ++row) {
            const unsigned __int128 s = static_cast<unsigned __int128>(c.src) +
                                        static_cast<unsigned __int128>(row) * c.src_pitch;
            const unsigned __int128 d = static_cast<unsigned __int128>(c.dst) +
                                        static_cast<unsigned __int128>(row) * c.dst_pitch;
            require(inside(pools[0].regions, s, s + c.width), "copy reads inside source");
            require(inside(pools[1].regions, d, d + c.width), "copy writes inside destination");
          }
          total += static_cast<unsigned __int128>(c.width) * c.height;
        }
        require(total == static_cast<unsigned __int128>(count) * static_cast<uint64_t>(r.layers) *
                             static_cast<uint64_t>(g[0].C()) * static_cast<uint64_t>(g[0].row()),
                "plan moves count x layers x components x row bytes");
      }
    }
  }
  for (FakePool& p : pools)
    if (p.handle != 0) kvio_pool_close(p.handle);
}

/// The support rules (kvio_check_support) on arbitrary queries, against the same spec model plus
/// the device-layer and backend rules of kvio.h; availability per backend from
/// kvio_backend_available (it depends on the build and the machine).
void runSupport(Input& in) {
  kvio_support_query q;
  q.kind = static_cast<int32_t>(in.wild(0, 1));
  q.layout = static_cast<int32_t>(in.wild(0, 3));
  q.io_backend = static_cast<int32_t>(in.wild(0, 3));
  q.granularity = static_cast<int32_t>(in.wild(0, 1));
  q.head_num = in.wild(1, 64);
  q.head_bytes = in.wild(1, 1024);
  q.page_size = in.wild(1, 256);
  q.host_num_layers = in.wild(1, 128);
  q.device_num_layers = in.wild(1, 128);
  q.device_layer_start = in.wild(0, 127);
  const auto validEnum = [](int32_t v, int32_t count) { return v >= 0 && v < count; };
  kvio_status expected = KVIO_STATUS_OK;
  if (!validEnum(q.kind, KVIO_KIND_COUNT) || !validEnum(q.layout, KVIO_LAYOUT_COUNT) ||
      !validEnum(q.io_backend, KVIO_BACKEND_COUNT) ||
      !validEnum(q.granularity, KVIO_GRANULARITY_COUNT)) {
    expected = KVIO_STATUS_INVALID_ARGUMENT;
  } else {
    const kvio_pool_spec spec{q.kind,      q.layout,   q.host_num_layers, 1,
                              q.page_size, q.head_num, q.head_bytes};
    expected = expectedSpecStatus(spec);
    if (expected == KVIO_STATUS_OK &&
        (q.device_num_layers < 1 || q.device_num_layers > (int64_t{1} << 20))) {
      expected = KVIO_STATUS_INVALID_ARGUMENT;  // the device pool's layers: as a spec's
    } else if (expected == KVIO_STATUS_OK &&
               !layerWindowFits(q.device_layer_start, q.host_num_layers, q.device_num_layers)) {
      expected = KVIO_STATUS_OUT_OF_RANGE;
    } else if (expected == KVIO_STATUS_OK) {
      expected = kvio_backend_available(q.io_backend);
    }
  }
  const kvio_status got = kvio_check_support(&q);
  if (got != expected) violated("check_support status", kvio_status_name(got));
  if (got == KVIO_STATUS_UNAVAILABLE) {
    // The cause of the requested backend, then the alternatives (the cpu backend at least).
    require(std::strstr(kvio_last_error(), "is not available here: ") != nullptr &&
                std::strstr(kvio_last_error(), "Available here: cpu") != nullptr,
            "unavailable message names the cause and the available backends");
  }
  require(got == KVIO_STATUS_OK || std::strlen(kvio_last_error()) > 0, "rejection message");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Input in(data, size);
  const uint8_t mode = in.byte();
  if (mode >= 195 && mode < 200) {
    runSupport(in);
  } else if (mode < 200) {
    runSmall(in);
  } else {
    runHuge(in);
  }
  return 0;
}
