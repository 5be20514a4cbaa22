// How fast can a page_head transfer be on this CPU? The access pattern's own ceiling next to kvio.
//
// A page_head host pool keeps each head's tokens with all their layers together ([P, H, ps, L, D]),
// so a per-layer load reads one head_bytes piece out of every layers x head_bytes, and a backup
// writes them that way; the layer_first device side keeps a token's heads side by side. This
// program times, on buffers allocated and filled the same way and in one run:
//   memcpy   one memcpy of the same bytes, one thread (the bench's baseline, best of its runs);
//   loop     the same copies as a plain single-thread loop of memcpy calls, written here from the
//            layout's shape (no kvio code), in the better of two orders (token-major: a device
//            row at a time; head-major: a host head strip at a time);
//   kvio     the kvio cpu backend on 1 thread and on the executor's default threads.
// The geometry is `kvio-cli bench --quick`'s: 4 layers, 16-token pages, 8 heads, K and V, a
// layer_first device pool of twice the pages, random whole pages on both sides; a load is one
// transfer per layer, submitted together and awaited together; a backup one all-layer transfer.
// Before timing, kvio's result is checked against the loop's (the same bytes must land).
//
//   cmake --build build --target kvio_page_head_bench && ./build/native/bench/kvio_page_head_bench
//   ./build/native/bench/kvio_page_head_bench 31     # best of 31 runs instead of 15
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <vector>

#include "kvio/kvio.hpp"

namespace {

constexpr int64_t kLayers = 4;
constexpr int64_t kPageTokens = 16;
constexpr int64_t kHeads = 8;

struct Geometry {
  int64_t pages;      // host pages; the device pool has twice as many
  int64_t headBytes;  // a row is kHeads x headBytes
  int64_t rowBytes() const { return kHeads * headBytes; }
  uint64_t bytesMoved() const {
    return static_cast<uint64_t>(pages * kPageTokens * kLayers * rowBytes() * 2);
  }
};

// Byte offsets within one component, written from the layouts' shapes (kvio.h), not from kvio.
int64_t hostOffset(const Geometry& g, int64_t page, int64_t head, int64_t token, int64_t layer) {
  return (((page * kHeads + head) * kPageTokens + token) * kLayers + layer) * g.headBytes;
}
int64_t deviceOffset(const Geometry& g, int64_t page, int64_t head, int64_t token, int64_t layer) {
  const int64_t devicePages = 2 * g.pages;
  return ((layer * devicePages + page) * kPageTokens + token) * g.rowBytes() + head * g.headBytes;
}

double secondsOf(const std::function<void()>& run, int repeats) {
  run();  // warm-up
  double best = 1e30;
  for (int i = 0; i < repeats; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    run();
    best = std::min(best,
                    std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return best;
}

struct Pools {
  kvio::Pool device;
  kvio::Pool host;
  std::vector<int64_t> devicePages, hostPages;  // pair i: device page <-> host page
};

kvio::PoolSpec specOf(const Geometry& g, kvio::Layout layout, int64_t pages) {
  kvio::PoolSpec s;
  s.kind = kvio::PoolKind::Mha;
  s.layout = layout;
  s.numLayers = kLayers;
  s.numPages = pages;
  s.pageSize = kPageTokens;
  s.headNum = kHeads;
  s.headBytes = g.headBytes;
  return s;
}

// The plain loop: one memcpy per head piece, in token-major or head-major order.
void plainLoop(const Geometry& g, Pools& p, bool load, bool headMajor) {
  const int64_t componentDevice = p.device.bytes() / 2, componentHost = p.host.bytes() / 2;
  uint8_t* device = p.device.data();
  uint8_t* host = p.host.data();
  const size_t n = static_cast<size_t>(g.headBytes);
  for (int64_t l = 0; l < kLayers; ++l) {
    for (int64_t c = 0; c < 2; ++c) {
      uint8_t* d = device + c * componentDevice;
      uint8_t* h = host + c * componentHost;
      for (size_t i = 0; i < p.hostPages.size(); ++i) {
        const int64_t dp = p.devicePages[i], hp = p.hostPages[i];
        for (int64_t a = 0; a < (headMajor ? kHeads : kPageTokens); ++a) {
          for (int64_t b = 0; b < (headMajor ? kPageTokens : kHeads); ++b) {
            const int64_t head = headMajor ? a : b, token = headMajor ? b : a;
            uint8_t* dev = d + deviceOffset(g, dp, head, token, l);
            uint8_t* hst = h + hostOffset(g, hp, head, token, l);
            if (load) {
              std::memcpy(dev, hst, n);
            } else {
              std::memcpy(hst, dev, n);
            }
          }
        }
      }
    }
  }
}

void kvioTransfer(const kvio::Executor& ex, Pools& p, const std::vector<int64_t>& deviceSlots,
                  const std::vector<int64_t>& hostSlots, bool load) {
  if (!load) {
    kvio::transferAllLayers(ex, p.device, p.host, kvio::Indices(deviceSlots),
                            kvio::Indices(hostSlots))
        .wait();
    return;
  }
  std::vector<kvio::Transfer> loads;
  for (int64_t l = 0; l < kLayers; ++l) {
    loads.push_back(kvio::transferPerLayer(ex, p.host, p.device, kvio::Indices(hostSlots),
                                           kvio::Indices(deviceSlots), l, l));
  }
  for (kvio::Transfer& t : loads) t.wait();
}

int runPoint(const Geometry& g, bool load, int repeats, const kvio::Executor& one,
             const kvio::Executor& all) {
  Pools p{kvio::Pool::allocate(specOf(g, kvio::Layout::LayerFirst, 2 * g.pages)),
          kvio::Pool::allocate(specOf(g, kvio::Layout::PageHead, g.pages)),
          {},
          {}};
  std::mt19937_64 rnd(42 ^ static_cast<uint64_t>(g.headBytes * 31 + g.pages));
  std::vector<int64_t> all2(2 * g.pages);
  for (int64_t i = 0; i < 2 * g.pages; ++i) all2[i] = i;
  std::shuffle(all2.begin(), all2.end(), rnd);
  p.devicePages.assign(all2.begin(), all2.begin() + g.pages);
  p.hostPages.resize(g.pages);
  for (int64_t i = 0; i < g.pages; ++i) p.hostPages[i] = i;
  std::shuffle(p.hostPages.begin(), p.hostPages.end(), rnd);
  const std::vector<int64_t> deviceSlots = kvio::pageSlots(p.devicePages, kPageTokens);
  const std::vector<int64_t> hostSlots = kvio::pageSlots(p.hostPages, kPageTokens);

  // The same bytes must land: fill the source, clear the destination, run the loop, keep it,
  // clear again, run kvio, compare the whole destination.
  kvio::Pool& src = load ? p.host : p.device;
  kvio::Pool& dst = load ? p.device : p.host;
  uint8_t* const srcBytes = src.data();  // one lookup: data() asks kvio for the region each time
  for (uint64_t i = 0; i < src.bytes(); ++i) srcBytes[i] = static_cast<uint8_t>(i * 131 + 7);
  std::memset(dst.data(), 0, dst.bytes());
  plainLoop(g, p, load, false);
  const std::vector<uint8_t> expected(dst.data(), dst.data() + dst.bytes());
  std::memset(dst.data(), 0, dst.bytes());
  kvioTransfer(all, p, deviceSlots, hostSlots, load);
  if (std::memcmp(expected.data(), dst.data(), dst.bytes()) != 0) {
    std::fprintf(stderr, "kvio and the plain loop wrote different bytes (row %lld, %lld pages)\n",
                 static_cast<long long>(g.rowBytes()), static_cast<long long>(g.pages));
    return 1;
  }

  const uint64_t bytes = g.bytesMoved();
  kvio::Pool a = kvio::Pool::allocate(specOf(g, kvio::Layout::LayerFirst, g.pages));
  kvio::Pool b = kvio::Pool::allocate(specOf(g, kvio::Layout::LayerFirst, g.pages));
  std::memset(a.data(), 1, a.bytes());
  std::memset(b.data(), 2, b.bytes());
  const double memcpyS = secondsOf([&] { std::memcpy(b.data(), a.data(), bytes); }, repeats);
  const double tokenMajor = secondsOf([&] { plainLoop(g, p, load, false); }, repeats);
  const double headMajor = secondsOf([&] { plainLoop(g, p, load, true); }, repeats);
  const double loop = std::min(tokenMajor, headMajor);
  const double kvio1 =
      secondsOf([&] { kvioTransfer(one, p, deviceSlots, hostSlots, load); }, repeats);
  const double kvioN =
      secondsOf([&] { kvioTransfer(all, p, deviceSlots, hostSlots, load); }, repeats);
  const auto gbps = [bytes](double s) { return bytes / s / 1e9; };
  std::printf(
      "| %s | %lld KiB | %lld | %.1f | %.1f | %.1f (%s) | %.2f | %.1f | %.2f | %.1f | %.2f |\n",
      load ? "load" : "backup", static_cast<long long>(g.rowBytes() / 1024),
      static_cast<long long>(g.pages * kPageTokens), bytes / 1048576.0, gbps(memcpyS), gbps(loop),
      tokenMajor <= headMajor ? "token-major" : "head-major", memcpyS / loop, gbps(kvio1),
      memcpyS / kvio1, gbps(kvioN), memcpyS / kvioN);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const int repeats = argc > 1 ? std::max(1, std::atoi(argv[1])) : 15;
  try {
    kvio::Executor one(kvio::IoBackend::Cpu, 1);
    kvio::Executor all(kvio::IoBackend::Cpu);
    std::printf(
        "page_head <-> layer_first, %lld layers, %lld-token pages, %lld heads, K and V; "
        "best of %d runs; x = memcpy time / time (1 thread memcpy)\n\n",
        static_cast<long long>(kLayers), static_cast<long long>(kPageTokens),
        static_cast<long long>(kHeads), repeats);
    std::printf(
        "| dir | row | tokens | MiB | memcpy GB/s | loop GB/s (order) | loop x | kvio 1 "
        "thread GB/s | x | kvio %d threads GB/s | x |\n",
        all.threads());
    std::printf("|---|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|\n");
    for (const bool load : {true, false}) {
      for (const int64_t headBytes : {512, 2048, 8192}) {
        for (const int64_t tokens : {64, 256}) {
          if (runPoint(Geometry{tokens / kPageTokens, headBytes}, load, repeats, one, all) != 0) {
            return 1;
          }
        }
      }
    }
  } catch (const kvio::Error& e) {
    std::fprintf(stderr, "kvio error: %s\n", e.what());
    return 3;
  }
  return 0;
}
