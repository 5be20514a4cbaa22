/*
 * One row of the hardware matrix: a pool kind, host layout, device pool form (DeviceForm),
 * granularity, direction, page size, row geometry and the device layers the host pool holds (all,
 * or a layer-sharded range). The quick and full lists are built here; the id is the row's name in
 * JSON and JUnit.
 */
package io.kvio.cli;

import io.kvio.Granularity;
import io.kvio.KvLayout;
import io.kvio.PoolKind;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

record MatrixConfig(
        PoolKind kind,
        KvLayout layout,
        DeviceForm deviceForm,
        Granularity granularity,
        Direction direction,
        long pageSize,
        long heads,
        long headBytes,
        long deviceLayers,
        long hostLayerStart,
        long hostLayers) {
    static final long DEVICE_LAYERS = 4;

    /** The layer-sharded host pool holds device layers [1, 3). */
    static final long SHARD_START = 1;

    static final long SHARD_LAYERS = 2;

    boolean sharded() {
        return hostLayers != deviceLayers;
    }

    long rowBytes() {
        return heads * headBytes;
    }

    long devicePages() {
        return pageSize == 1 ? 40 : pageSize <= 16 ? 6 : 3;
    }

    long hostPages() {
        return pageSize == 1 ? 32 : pageSize <= 16 ? 5 : 2;
    }

    /** "2x64 B" (heads x head bytes). */
    String row() {
        return heads + "x" + headBytes + " B";
    }

    /** "all 4" or "1-2 of 4": the device layers the host pool holds. */
    String hostLayersText() {
        return sharded()
                ? String.format(
                        Locale.ROOT,
                        "%d-%d of %d",
                        hostLayerStart,
                        hostLayerStart + hostLayers - 1,
                        deviceLayers)
                : "all " + deviceLayers;
    }

    /** e.g. "mha page_first layer_table all_layer backup page16 row2x64B layers1-2of4". */
    String id() {
        return String.format(
                Locale.ROOT,
                "%s %s %s %s %s page%d row%dx%dB layers%s",
                kind.userName(),
                layout.userName(),
                deviceForm.userName,
                granularity.userName(),
                direction.userName,
                pageSize,
                heads,
                headBytes,
                sharded()
                        ? (hostLayerStart + "-" + (hostLayerStart + hostLayers - 1))
                                + "of"
                                + deviceLayers
                        : "all" + deviceLayers);
    }

    @Override
    public String toString() {
        return id();
    }

    /**
     * The matrix: every kind x host layout (page_head with mla included: the support rule answers
     * it) x device form x all layers / layer-sharded x granularity x direction x row geometry x
     * page size. quick: page size 16, one row per kind; full: page sizes 1, 16, 64 and rows of 8 to
     * 4096 bytes, an odd head count and head size. Per device form: 64 (quick) or 1056 (full).
     */
    static List<MatrixConfig> list(boolean full) {
        return list(full, List.of(DeviceForm.values()));
    }

    /** The matrix over the device forms {@code forms} (in their declaration order). */
    static List<MatrixConfig> list(boolean full, List<DeviceForm> forms) {
        long[] pageSizes = full ? new long[] {1, 16, 64} : new long[] {16};
        List<MatrixConfig> out = new ArrayList<>();
        for (PoolKind kind : PoolKind.values()) {
            for (KvLayout layout : KvLayout.values()) {
                for (DeviceForm form : DeviceForm.values()) {
                    if (!forms.contains(form)) {
                        continue;
                    }
                    for (boolean sharded : new boolean[] {false, true}) {
                        for (Granularity g : Granularity.values()) {
                            for (Direction d : Direction.values()) {
                                for (long ps : pageSizes) {
                                    for (long[] hg : geometries(kind, full)) {
                                        out.add(
                                                new MatrixConfig(
                                                        kind,
                                                        layout,
                                                        form,
                                                        g,
                                                        d,
                                                        ps,
                                                        hg[0],
                                                        hg[1],
                                                        DEVICE_LAYERS,
                                                        sharded ? SHARD_START : 0,
                                                        sharded ? SHARD_LAYERS : DEVICE_LAYERS));
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
        return out;
    }

    /** (heads, head bytes): mha 2 heads (plus 3 x 22 B in full), mla one latent head. */
    private static List<long[]> geometries(PoolKind kind, boolean full) {
        List<long[]> out = new ArrayList<>();
        long[] rows = full ? new long[] {8, 64, 576, 656, 4096} : new long[] {128};
        if (kind == PoolKind.MLA && !full) {
            rows = new long[] {576};
        }
        for (long row : rows) {
            out.add(kind == PoolKind.MHA ? new long[] {2, row / 2} : new long[] {1, row});
        }
        if (kind == PoolKind.MHA && full) {
            out.add(new long[] {3, 22});
        }
        return out;
    }
}
