// Example consumer of the installed kvio package: checks the configuration against the support
// rules, backs up three pages of a layer_first "device" pool into a page_first host pool on the
// CPU backend, loads them back layer by layer into other device pages, and checks every byte.
// Exits 0 on success.
#include <cstdio>
#include <cstring>
#include <kvio/kvio.hpp>
#include <vector>

int main() {
  try {
    kvio::Executor cpu(kvio::IoBackend::Cpu);
    kvio::PoolSpec deviceSpec;
    deviceSpec.layout = kvio::Layout::LayerFirst;
    deviceSpec.numLayers = 4;
    deviceSpec.numPages = 16;
    deviceSpec.pageSize = 16;
    deviceSpec.headNum = 2;
    deviceSpec.headBytes = 128;
    kvio::PoolSpec hostSpec = deviceSpec;
    hostSpec.layout = kvio::parseLayout("page_first");
    // Ask the support rules before configuring the pools: a bad combination says why here,
    // without an exception, rather than at the first transfer.
    kvio::SupportQuery query;
    query.kind = deviceSpec.kind;
    query.layout = hostSpec.layout;
    query.ioBackend = kvio::IoBackend::Cpu;
    query.granularity = kvio::Granularity::PerLayer;
    query.headNum = deviceSpec.headNum;
    query.headBytes = deviceSpec.headBytes;
    query.pageSize = deviceSpec.pageSize;
    query.hostNumLayers = hostSpec.numLayers;
    query.deviceNumLayers = deviceSpec.numLayers;
    const kvio::Support support = kvio::checkSupport(query);
    if (!support.ok()) {
      std::printf("kvio cannot run this configuration here: %s\n", support.reason.c_str());
      return 3;
    }
    kvio::Pool device = kvio::Pool::allocate(deviceSpec);
    kvio::Pool host = kvio::Pool::allocate(hostSpec);
    // data() and bytes() ask the library (a handle lookup each): read them once.
    uint8_t* const deviceBytes = device.data();
    const uint64_t deviceSize = device.bytes();
    for (uint64_t i = 0; i < deviceSize; ++i) deviceBytes[i] = static_cast<uint8_t>(i * 31 + 7);

    const std::vector<int64_t> from = kvio::pageSlots({1, 2, 3}, 16);
    const std::vector<int64_t> hostSlots = kvio::pageSlots({5, 6, 7}, 16);
    const std::vector<int64_t> to = kvio::pageSlots({9, 10, 11}, 16);
    kvio::transferAllLayers(cpu, device, host, from, hostSlots).wait();
    for (int64_t layer = 0; layer < deviceSpec.numLayers; ++layer) {
      kvio::transferPerLayer(cpu, host, device, hostSlots, to, layer, layer).wait();
    }
    // layer_first device: component c, layer l, token t at ((c * L + l) * tokens + t) * row.
    const uint64_t row = 2 * 128, tokens = 16 * 16;
    for (uint64_t c = 0; c < 2; ++c)
      for (uint64_t l = 0; l < 4; ++l)
        for (size_t i = 0; i < from.size(); ++i) {
          const uint8_t* a =
              deviceBytes + ((c * 4 + l) * tokens + static_cast<uint64_t>(from[i])) * row;
          const uint8_t* b =
              deviceBytes + ((c * 4 + l) * tokens + static_cast<uint64_t>(to[i])) * row;
          if (std::memcmp(a, b, row) != 0) {
            std::printf("mismatch: component %llu layer %llu token %lld\n",
                        static_cast<unsigned long long>(c), static_cast<unsigned long long>(l),
                        static_cast<long long>(to[i]));
            return 1;
          }
        }
    std::printf("kvio %s consumer: 3 pages x 4 layers backed up and reloaded, all bytes equal\n",
                kvio::version().c_str());
    return 0;
  } catch (const kvio::Error& e) {
    std::printf("kvio error: %s\n", e.what());
    return 2;
  }
}
