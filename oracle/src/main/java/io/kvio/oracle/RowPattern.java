/*
 * A data pattern computed per (component, layer, token, word) instead of stored: pools too large
 * to snapshot (kvio-cli roundtrip moves gigabytes) are filled with it and checked against it
 * wherever a row landed.
 */
package io.kvio.oracle;

/**
 * A seeded pattern: 8-byte little-endian words per row. The word at (c, layer, token, word) of a
 * pool of {@code components} x {@code layers} x {@code tokens} rows of {@code rowBytes} bytes is
 * {@code mix(key + i * GAMMA)} where i = ((c * layers + layer) * tokens + token) * words + word is
 * the word's index in the pool (words = rowBytes / 8 rounded up). i is distinct for distinct
 * coordinates and below 2^63 (the constructor checks it; kvio's pools are at most 2^62 bytes, and a
 * pool has no more words than bytes), multiplying by an odd GAMMA and adding the key are bijections
 * modulo 2^64, and so is {@link #mix}: every word of a pool differs from every other, whatever its
 * size, so a row read from the wrong place never matches by construction.
 */
public final class RowPattern {
    /** The golden-ratio gamma of splitmix64 (odd). */
    private static final long GAMMA = 0x9e3779b97f4a7c15L;

    private final long key;
    private final int components;
    private final long layers;
    private final long tokens;
    private final long rowBytes;
    private final long words;

    /**
     * The pattern of a pool of {@code components} (2 for mha, 1 for mla), {@code layers} and {@code
     * tokens} token slots per layer, rows of {@code rowBytes} bytes; the seed chooses it.
     */
    public RowPattern(long seed, int components, long layers, long tokens, long rowBytes) {
        if (components < 1 || layers < 1 || tokens < 1 || rowBytes < 1) {
            throw new IllegalArgumentException(
                    "oracle: a row pattern needs at least one component, layer, token and byte");
        }
        this.key = mix(seed ^ 0x6b76696fL);
        this.components = components;
        this.layers = layers;
        this.tokens = tokens;
        this.rowBytes = rowBytes;
        this.words = (rowBytes + 7) >>> 3;
        try {
            Math.multiplyExact(
                    Math.multiplyExact(Math.multiplyExact((long) components, layers), tokens),
                    words);
        } catch (ArithmeticException e) {
            throw new IllegalArgumentException(
                    "oracle: " + shape() + " cannot all be told apart in 64 bits", e);
        }
    }

    /** "C x L x T rows of W words": the pool the pattern covers, for messages. */
    private String shape() {
        return components + " x " + layers + " x " + tokens + " rows of " + words + " words";
    }

    /** A 64-bit mixer (the splitmix64 finalizer), a bijection on 64-bit values. */
    public static long mix(long z) {
        z = (z ^ (z >>> 30)) * 0xbf58476d1ce4e5b9L;
        z = (z ^ (z >>> 27)) * 0x94d049bb133111ebL;
        return z ^ (z >>> 31);
    }

    /** Word {@code word} (bytes 8*word .. 8*word+7) of the row (c, layer, token). */
    public long word(int c, long layer, long token, long word) {
        if (c < 0
                || c >= components
                || layer < 0
                || layer >= layers
                || token < 0
                || token >= tokens
                || word < 0
                || word >= words) {
            throw new IllegalArgumentException(
                    "oracle: (component "
                            + c
                            + ", layer "
                            + layer
                            + ", token "
                            + token
                            + ", word "
                            + word
                            + ") is outside the pattern's "
                            + shape());
        }
        long index = ((c * layers + layer) * tokens + token) * words + word;
        return mix(key + index * GAMMA);
    }

    /** Byte {@code byteInRow} of the row (c, layer, token): the words read little-endian. */
    public byte byteAt(int c, long layer, long token, long byteInRow) {
        if (byteInRow < 0 || byteInRow >= rowBytes) {
            throw new IllegalArgumentException(
                    "oracle: byte " + byteInRow + " is outside a row of " + rowBytes + " bytes");
        }
        return (byte) (word(c, layer, token, byteInRow >>> 3) >>> (8 * (byteInRow & 7)));
    }
}
