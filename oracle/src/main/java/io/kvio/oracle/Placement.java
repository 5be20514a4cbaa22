/*
 * Where each head of a pool lives inside some backing byte array: one buffer (Geometry itself, or
 * at a base), per-component buffers, or per-(component, layer) buffers.
 */
package io.kvio.oracle;

import java.util.Locale;

/** Where (component, layer, token, head) lives inside some backing byte array. */
public interface Placement {
    Geometry geometry();

    /** Byte offset of head h of (component c, layer l, token t); headBytes bytes from there. */
    long offset(int c, long l, long t, long h);

    /**
     * The "component C, layer L, token T, head H, byte B" whose bytes hold {@code offset}, for
     * messages; null when the offset lies outside every head.
     */
    default String locate(long offset) {
        Geometry g = geometry();
        for (int c = 0; c < g.components; c++) {
            for (long l = 0; l < g.layers; l++) {
                for (long t = 0; t < g.tokens(); t++) {
                    for (long h = 0; h < g.heads; h++) {
                        long o = offset(c, l, t, h);
                        if (offset >= o && offset < o + g.headBytes) {
                            return String.format(
                                    Locale.ROOT,
                                    "component %d, layer %d, token %d, head %d, byte %d",
                                    c,
                                    l,
                                    t,
                                    h,
                                    offset - o);
                        }
                    }
                }
            }
        }
        return null;
    }

    /** A pool in one buffer, components one after another, starting at byte {@code base}. */
    static Placement standard(Geometry g, long base) {
        return of(g, (c, l, t, h) -> base + g.offset(c, l, t, h));
    }

    /** Byte offset of head h of (component c, layer l, token t), as {@link #offset}. */
    @FunctionalInterface
    interface Offsets {
        long offset(int c, long l, long t, long h);
    }

    /** The placement of geometry {@code g} whose offsets {@code offsets} computes. */
    private static Placement of(Geometry g, Offsets offsets) {
        return new Placement() {
            @Override
            public Geometry geometry() {
                return g;
            }

            @Override
            public long offset(int c, long l, long t, long h) {
                return offsets.offset(c, l, t, h);
            }
        };
    }

    /**
     * A layer_first pool whose (component, layer) buffers start at {@code layerBases[c * L + l]}
     * inside the backing array; each is [P*ps, H, D].
     */
    static Placement layerTable(Geometry g, long[] layerBases) {
        if (g.shape != Shape.LAYER_FIRST) {
            throw new IllegalArgumentException("oracle: layer tables are layer_first");
        }
        if (layerBases.length != g.components * g.layers) {
            throw new IllegalArgumentException("oracle: one layer base per (component, layer)");
        }
        return of(
                g,
                (c, l, t, h) ->
                        layerBases[(int) (c * g.layers + l)] + (t * g.heads + h) * g.headBytes);
    }

    /**
     * A layer_first pool whose components start at {@code componentBases[c]}; each [L, P*ps, H, D].
     */
    static Placement componentTable(Geometry g, long[] componentBases) {
        long[] layerBases = new long[(int) (g.components * g.layers)];
        for (int c = 0; c < g.components; c++) {
            for (long l = 0; l < g.layers; l++) {
                layerBases[(int) (c * g.layers + l)] =
                        componentBases[c] + l * g.tokens() * g.rowBytes();
            }
        }
        return layerTable(g, layerBases);
    }
}
