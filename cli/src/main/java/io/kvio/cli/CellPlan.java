/*
 * The workload of one matrix cell (MatrixRunner): the oracle's geometries of the layer_first
 * device pool and of the host pool in the row's layout, the token slots moved on each side
 * (seeded: a third of the host pages whole, plus up to 24 scattered slots), and the destination
 * bytes the oracle expects after the transfer.
 */
package io.kvio.cli;

import io.kvio.KvLayout;
import io.kvio.PoolSpec;
import io.kvio.oracle.Geometry;
import io.kvio.oracle.Indices;
import io.kvio.oracle.Oracle;
import io.kvio.oracle.Shape;
import java.util.Random;

final class CellPlan {
    final MatrixConfig cfg;
    final long seed;
    final Geometry devGeom;
    final Geometry hostGeom;
    final long[] hostIdx;
    final long[] devIdx;

    CellPlan(MatrixConfig cfg, long seed) {
        this.cfg = cfg;
        this.seed = seed;
        this.devGeom = geometry(Shape.LAYER_FIRST, cfg.deviceLayers(), cfg.devicePages());
        this.hostGeom =
                geometry(Shape.of(cfg.layout().userName()), cfg.hostLayers(), cfg.hostPages());
        Random rnd = new Random(seed);
        int wholePages = (int) Math.max(1, cfg.hostPages() / 3);
        int scattered = (int) Math.min(cfg.pageSize() * (cfg.hostPages() - wholePages) / 2, 24);
        this.hostIdx = Indices.slots(rnd, cfg.hostPages(), cfg.pageSize(), wholePages, scattered);
        this.devIdx = Indices.slots(rnd, cfg.devicePages(), cfg.pageSize(), wholePages, scattered);
    }

    private Geometry geometry(Shape shape, long layers, long pages) {
        return new Geometry(
                cfg.kind().components(),
                shape,
                layers,
                pages,
                cfg.pageSize(),
                cfg.heads(),
                cfg.headBytes());
    }

    /** The device pool: layer_first, all device layers. */
    PoolSpec deviceSpec() {
        return PoolSpec.builder()
                .kind(cfg.kind())
                .layout(KvLayout.LAYER_FIRST)
                .layers(cfg.deviceLayers())
                .pages(cfg.devicePages())
                .pageSize(cfg.pageSize())
                .heads(cfg.heads())
                .headBytes(cfg.headBytes())
                .build();
    }

    boolean backup() {
        return cfg.direction() == Direction.BACKUP;
    }

    Geometry srcGeom() {
        return backup() ? devGeom : hostGeom;
    }

    Geometry dstGeom() {
        return backup() ? hostGeom : devGeom;
    }

    /** The first device layer of the source side (host pools start at hostLayerStart). */
    long srcStart() {
        return backup() ? cfg.hostLayerStart() : 0;
    }

    long dstStart() {
        return backup() ? 0 : cfg.hostLayerStart();
    }

    long[] dstIdx() {
        return backup() ? hostIdx : devIdx;
    }

    /** The bytes the transfer moves: every slot, host layer, component and row. */
    long expectedBytes() {
        return hostIdx.length * cfg.hostLayers() * cfg.kind().components() * cfg.rowBytes();
    }

    /** The seeded content of the source pool. */
    byte[] source() {
        return Oracle.pattern((int) srcGeom().totalBytes(), seed);
    }

    /** The seeded content of the destination pool before the transfer. */
    byte[] canary() {
        return Oracle.pattern((int) dstGeom().totalBytes(), ~seed);
    }

    /** The destination after the transfer, by the oracle: the canary with the rows copied in. */
    byte[] expected(byte[] source, byte[] canary) {
        byte[] expected = canary.clone();
        Oracle.applyTransfer(
                source,
                srcGeom(),
                expected,
                dstGeom(),
                backup() ? devIdx : hostIdx,
                dstIdx(),
                srcStart(),
                dstStart(),
                cfg.hostLayers());
        return expected;
    }

    /** Why pools of these sizes do not match the shapes, or null when they do. */
    String sizeMismatch(long srcBytes, long dstBytes) {
        if (srcBytes == srcGeom().totalBytes() && dstBytes == dstGeom().totalBytes()) {
            return null;
        }
        return "pool sizes differ from the shapes: source "
                + srcBytes
                + " B (expected "
                + srcGeom().totalBytes()
                + "), destination "
                + dstBytes
                + " B (expected "
                + dstGeom().totalBytes()
                + ")";
    }
}
