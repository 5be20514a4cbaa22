/*
 * Plain-number geometry of a pool and the naive offset formulas of every layout. Never built from
 * kvio's PoolSpec or size getters: callers pass the same numbers they gave kvio.
 */
package io.kvio.oracle;

import java.util.Objects;

/**
 * A pool's geometry; components = 2 for MHA (K, V), 1 for MLA. As a {@link Placement} it is the
 * pool in a buffer of its own, components one after another from byte 0.
 */
public final class Geometry implements Placement {
    public final int components;
    public final Shape shape;
    public final long layers;
    public final long pages;
    public final long pageSize;
    public final long heads;
    public final long headBytes;

    public Geometry(
            int components,
            Shape shape,
            long layers,
            long pages,
            long pageSize,
            long heads,
            long headBytes) {
        this.components = components;
        this.shape = Objects.requireNonNull(shape, "shape");
        this.layers = layers;
        this.pages = pages;
        this.pageSize = pageSize;
        this.heads = heads;
        this.headBytes = headBytes;
    }

    /** Token slots: P * ps. */
    public long tokens() {
        return pages * pageSize;
    }

    /** Bytes of one token's heads in one layer: H * D. */
    public long rowBytes() {
        return heads * headBytes;
    }

    /** Bytes of one component: L * P * ps * H * D in every layout. */
    public long componentBytes() {
        return layers * tokens() * rowBytes();
    }

    public long totalBytes() {
        return components * componentBytes();
    }

    @Override
    public Geometry geometry() {
        return this;
    }

    /**
     * Byte offset of (component c, layer l, token t, head h) from the start of a single-buffer pool
     * whose components lie one after another.
     */
    @Override
    public long offset(int c, long l, long t, long h) {
        final long L = layers;
        final long S = tokens();
        final long ps = pageSize;
        final long H = heads;
        final long D = headBytes;
        final long p = t / ps;
        final long s = t % ps;
        final long inComponent;
        switch (shape) {
            case LAYER_FIRST: // [L, P*ps, H, D]
                inComponent = ((l * S + t) * H + h) * D;
                break;
            case PAGE_FIRST: // [P*ps, L, H, D]
                inComponent = ((t * L + l) * H + h) * D;
                break;
            case PAGE_FIRST_DIRECT: // [P, L, ps, H, D]
                inComponent = (((p * L + l) * ps + s) * H + h) * D;
                break;
            case PAGE_HEAD: // [P, H, ps, L, D]
                inComponent = (((p * H + h) * ps + s) * L + l) * D;
                break;
            default:
                throw new IllegalStateException("oracle: no shape " + shape);
        }
        return c * (L * S * H * D) + inComponent;
    }

    @Override
    public String toString() {
        return components
                + "x"
                + shape
                + "(L="
                + layers
                + ",P="
                + pages
                + ",ps="
                + pageSize
                + ",H="
                + heads
                + ",hb="
                + headBytes
                + ")";
    }
}
