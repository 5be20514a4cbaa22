// kvio_first_touch_bench: what the first backup into a new host pool costs with and without
// kvio_pool_prefault. A host pool kvio allocates is mapped on first touch, so the first backup
// into it also pays a page fault per page; prefault pays them up front. For each size: a fresh
// page_first host pool backed up into from a device pool of host memory (page_first too, so the
// host pool equals it byte for byte afterwards: checked with memcmp), once without prefault
// (first backup, then a second one over the same pages) and once with it (the prefault, then
// the first backup). Medians of 3 fresh pools; the cpu backend on 2 threads.
//
//   ./build/native/bench/kvio_first_touch_bench
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <vector>

#include "kvio/kvio.hpp"

namespace {

using Clock = std::chrono::steady_clock;

double millisSince(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

kvio::PoolSpec specOf(int64_t pages) {
  kvio::PoolSpec s;
  s.kind = kvio::PoolKind::Mha;
  s.layout = kvio::Layout::PageFirst;
  s.numLayers = 8;
  s.numPages = pages;
  s.pageSize = 64;
  s.headNum = 8;
  s.headBytes = 256;  // 2 x 8 layers x 64 tokens x 2 KiB: 2 MiB per page
  return s;
}

// One backup of every page, timed; exits on a wrong byte.
double backup(const kvio::Executor& cpu, const kvio::Pool& device, const kvio::Pool& host,
              const std::vector<int64_t>& slots) {
  const Clock::time_point start = Clock::now();
  kvio::transferAllLayers(cpu, device, host, slots, slots).wait();
  const double ms = millisSince(start);
  if (std::memcmp(host.data(0), device.data(0), host.bytes(0)) != 0) {
    std::fprintf(stderr, "kvio_first_touch_bench: the backup's bytes differ from the source\n");
    std::exit(1);
  }
  return ms;
}

}  // namespace

int main() {
  const kvio::Executor cpu(kvio::IoBackend::Cpu, 2);
  std::printf(
      "| host pool | first backup, no prefault | second backup | prefault | first backup "
      "after it | prefault + backup vs first |\n|---:|---:|---:|---:|---:|---:|\n");
  for (int64_t mib : {64, 256, 512}) {
    const kvio::PoolSpec spec = specOf(mib / 2);
    kvio::Pool device = kvio::Pool::allocate(spec);
    for (uint64_t i = 0; i < device.bytes(0); i += 4096) {  // no byte zero, each 4 KiB its own
      std::memset(device.data(0) + i, static_cast<int>((i >> 12) % 255 + 1),
                  std::min<uint64_t>(4096, device.bytes(0) - i));
    }
    std::vector<int64_t> slots(static_cast<size_t>(spec.numPages * spec.pageSize));
    std::iota(slots.begin(), slots.end(), 0);
    std::vector<double> first, second, prefault, afterPrefault;
    for (int round = 0; round < 3; ++round) {
      {
        kvio::Pool host = kvio::Pool::allocate(spec);
        first.push_back(backup(cpu, device, host, slots));
        second.push_back(backup(cpu, device, host, slots));
      }
      {
        kvio::Pool host = kvio::Pool::allocate(spec);
        const Clock::time_point start = Clock::now();
        host.prefault();
        prefault.push_back(millisSince(start));
        afterPrefault.push_back(backup(cpu, device, host, slots));
      }
    }
    const double f = median(first), p = median(prefault), a = median(afterPrefault);
    std::printf("| %lld MiB | %.1f ms | %.1f ms | %.1f ms | %.1f ms | %.2fx |\n",
                static_cast<long long>(mib), f, median(second), p, a, (p + a) / f);
  }
  return 0;
}
