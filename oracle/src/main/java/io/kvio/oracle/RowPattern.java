/*
 * A data pattern computed per (component, layer, token, word) instead of stored: pools too large
 * to snapshot (kvio-cli roundtrip moves gigabytes) are filled with it and checked against it
 * wherever a row landed.
 */
package io.kvio.oracle;

/** A seeded pattern: 8-byte little-endian words per row, each from a 64-bit mixer. */
public final class RowPattern {
    private final long key;

    public RowPattern(long seed) {
        this.key = mix(seed ^ 0x6b76696fL);
    }

    /** A 64-bit mixer (the splitmix64 finalizer). */
    public static long mix(long z) {
        z = (z ^ (z >>> 30)) * 0xbf58476d1ce4e5b9L;
        z = (z ^ (z >>> 27)) * 0x94d049bb133111ebL;
        return z ^ (z >>> 31);
    }

    /** Word {@code word} (bytes 8*word .. 8*word+7) of the row (c, layer, token). */
    public long word(int c, long layer, long token, long word) {
        return mix(
                key
                        + ((((long) c * 0x10001L + layer) * 0x100000001L + token) << 20)
                        + word * 0x9e3779b97f4a7c15L);
    }

    /** Byte {@code byteInRow} of the row (c, layer, token): the words read little-endian. */
    public byte byteAt(int c, long layer, long token, long byteInRow) {
        return (byte) (word(c, layer, token, byteInRow >>> 3) >>> (8 * (byteInRow & 7)));
    }
}
