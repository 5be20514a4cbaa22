/*
 * Test fixtures: builds kvio pool specs, device pools and host pools from plain numbers, and the
 * matching oracle geometry (io.kvio.oracle) from the SAME numbers (never from kvio's own size
 * getters), so a test's expectations stay independent of the code under test. Used by the
 * transfer tests.
 */
package io.kvio;

import io.kvio.oracle.Geometry;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

final class PoolFixtures {
    private PoolFixtures() {}

    /**
     * MLA, one layer, 4096 slots of 4 KiB: 16 MiB per pool and per whole transfer, over the 8 MiB
     * from which KVIO_TEST_FAULT_CPU_HOLD can hold a cpu transfer (lifetime tests).
     */
    static final PoolSpec HOLDABLE =
            PoolSpec.builder()
                    .kind(PoolKind.MLA)
                    .layout(KvLayout.LAYER_FIRST)
                    .layers(1)
                    .pages(1024)
                    .pageSize(4)
                    .heads(1)
                    .headBytes(4096)
                    .build();

    /**
     * A small MHA pool: layer_first, 2 layers of 4 pages of {@code pageSize} tokens, 2 heads of
     * {@code headBytes} bytes.
     */
    static PoolSpec smallMha(long pageSize, long headBytes) {
        return PoolSpec.builder()
                .kind(PoolKind.MHA)
                .layout(KvLayout.LAYER_FIRST)
                .layers(2)
                .pages(4)
                .pageSize(pageSize)
                .heads(2)
                .headBytes(headBytes)
                .build();
    }

    /** A pool configuration in plain numbers. */
    static final class Config {
        final PoolKind kind;
        final long layers;
        final long pages;
        final long pageSize;
        final long heads;
        final long headBytes;

        Config(PoolKind kind, long layers, long pages, long pageSize, long heads, long headBytes) {
            this.kind = kind;
            this.layers = layers;
            this.pages = pages;
            this.pageSize = pageSize;
            this.heads = heads;
            this.headBytes = headBytes;
        }

        int components() {
            return kind == PoolKind.MHA ? 2 : 1;
        }

        PoolSpec spec(KvLayout layout) {
            return spec(layout, layers, pages);
        }

        PoolSpec spec(KvLayout layout, long numLayers, long numPages) {
            return PoolSpec.builder()
                    .kind(kind)
                    .layout(layout)
                    .layers(numLayers)
                    .pages(numPages)
                    .pageSize(pageSize)
                    .heads(heads)
                    .headBytes(headBytes)
                    .build();
        }

        Geometry geometry(KvLayout layout, long numLayers, long numPages) {
            return new Geometry(
                    components(),
                    LayoutOracle.shape(layout),
                    numLayers,
                    numPages,
                    pageSize,
                    heads,
                    headBytes);
        }

        /** The device pool's geometry: layer_first, this config's layers and pages. */
        Geometry deviceGeometry() {
            return geometry(KvLayout.LAYER_FIRST, layers, pages);
        }

        DeviceKvPool allocateDevice() {
            return DeviceKvPool.allocate(spec(KvLayout.LAYER_FIRST), IoBackend.CPU);
        }

        @Override
        public String toString() {
            return kind + "(L=" + layers + ",P=" + pages + ",ps=" + pageSize + ",H=" + heads
                    + ",hb=" + headBytes + ")";
        }
    }

    /**
     * A config of {@code kind}: mha with {@code mhaHeads} heads of {@code mhaHeadBytes}, or mla
     * with its one latent head of {@code mlaHeadBytes}.
     */
    static Config forKind(
            PoolKind kind,
            long layers,
            long pages,
            long pageSize,
            long mhaHeads,
            long mhaHeadBytes,
            long mlaHeadBytes) {
        return kind == PoolKind.MHA
                ? new Config(kind, layers, pages, pageSize, mhaHeads, mhaHeadBytes)
                : new Config(kind, layers, pages, pageSize, 1, mlaHeadBytes);
    }

    static HostKvPool host(DeviceKvPool device, KvLayout layout, long pages) {
        return HostKvPool.builder()
                .forDevice(device)
                .layout(layout)
                .ioBackend(IoBackend.CPU)
                .pages(pages)
                .threads(2)
                .build();
    }

    static HostKvPool host(
            DeviceKvPool device, KvLayout layout, long pages, long layerStart, long numLayers) {
        return HostKvPool.builder()
                .forDevice(device)
                .layout(layout)
                .ioBackend(IoBackend.CPU)
                .pages(pages)
                .layerRange(layerStart, numLayers)
                .threads(2)
                .build();
    }

    /** The rows of a data provider, each given the next seed (counting up) as its last value. */
    static final class Rows {
        private final List<Object[]> rows = new ArrayList<>();
        private long seed;

        Rows(long firstSeed) {
            this.seed = firstSeed;
        }

        /** Adds the row {@code values..., seed} and counts the seed up. */
        void add(Object... values) {
            Object[] row = Arrays.copyOf(values, values.length + 1);
            row[values.length] = seed++;
            rows.add(row);
        }

        /** The next seed, which the next row gets. */
        long seed() {
            return seed;
        }

        Object[][] toArray() {
            return rows.toArray(new Object[0][]);
        }
    }

    static KvLayout[] hostLayouts(PoolKind kind) {
        return kind == PoolKind.MHA
                ? new KvLayout[] {
                    KvLayout.LAYER_FIRST,
                    KvLayout.PAGE_FIRST,
                    KvLayout.PAGE_FIRST_DIRECT,
                    KvLayout.PAGE_HEAD
                }
                : new KvLayout[] {
                    KvLayout.LAYER_FIRST, KvLayout.PAGE_FIRST, KvLayout.PAGE_FIRST_DIRECT
                };
    }

    /** Bytes a transfer of n index pairs over numLayers layers moves. */
    static long movedBytes(Config c, long n, long numLayers) {
        return n * numLayers * c.components() * c.heads * c.headBytes;
    }
}
