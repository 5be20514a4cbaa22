/*
 * Host (and device) KV layouts, with the shape of one component: L layers, P pages of ps token
 * slots, H heads, D = head bytes. Each constant carries its native KVIO_LAYOUT_* value; userName()
 * is the string users type (the reference's names).
 */
package io.kvio;

public enum KvLayout {
    /** Token rows of one layer contiguous. */
    LAYER_FIRST(KvioNative.KVIO_LAYOUT_LAYER_FIRST, "layer_first", "[L, P*ps, H, D]"),
    /** Token-major: all layers of one token contiguous. */
    PAGE_FIRST(KvioNative.KVIO_LAYOUT_PAGE_FIRST, "page_first", "[P*ps, L, H, D]"),
    /** One (page, layer) block contiguous. */
    PAGE_FIRST_DIRECT(
            KvioNative.KVIO_LAYOUT_PAGE_FIRST_DIRECT, "page_first_direct", "[P, L, ps, H, D]"),
    /** One (page, head) block contiguous; mha only. */
    PAGE_HEAD(KvioNative.KVIO_LAYOUT_PAGE_HEAD, "page_head", "[P, H, ps, L, D]");

    private static final Names<KvLayout> NAMES =
            new Names<>(KvioNative.KVIO_NAME_LAYOUT, "layout", values(), e -> e.id);

    private final NativeName id;
    private final String shape;

    KvLayout(int nativeValue, String userName, String shape) {
        this.id = new NativeName(nativeValue, userName);
        this.shape = shape;
    }

    public String userName() {
        return id.userName;
    }

    @Override
    public String toString() {
        return id.userName;
    }

    /** The shape of one component, e.g. "[P*ps, L, H, D]". */
    public String shape() {
        return shape;
    }

    /** Whether a pool of {@code kind} can use this layout (page_head needs heads: mha only). */
    public boolean fits(PoolKind kind) {
        return this != PAGE_HEAD || kind == PoolKind.MHA;
    }

    public static KvLayout parse(String layout) {
        return NAMES.parse(layout);
    }

    /** The native KVIO_* value (kvio.h); what crosses JNI, never the ordinal. */
    int nativeValue() {
        return id.value;
    }

    /** The constant with native value {@code value}, or null if there is none. */
    static KvLayout ofNative(int value) {
        return NAMES.ofNative(value);
    }
}
