/*
 * Pool kinds: how many components a token row has. MHA pools hold K and V; MLA pools hold one
 * latent. Each constant carries its native KVIO_KIND_* value; userName() is the string users type.
 */
package io.kvio;

public enum PoolKind {
    MHA(KvioNative.KVIO_KIND_MHA, "mha", 2),
    MLA(KvioNative.KVIO_KIND_MLA, "mla", 1);

    private static final Names<PoolKind> NAMES =
            new Names<>(KvioNative.KVIO_NAME_KIND, "kind", values(), e -> e.id);

    private final NativeName id;
    private final int components;

    PoolKind(int nativeValue, String userName, int components) {
        this.id = new NativeName(nativeValue, userName);
        this.components = components;
    }

    public String userName() {
        return id.userName;
    }

    @Override
    public String toString() {
        return id.userName;
    }

    /** Components per token row: 2 (K, V) for mha, 1 (the latent) for mla. */
    public int components() {
        return components;
    }

    /**
     * Parses the string users type ("mha", "mla"); otherwise KvioInvalidArgumentException listing
     * the valid names.
     */
    public static PoolKind parse(String kind) {
        return NAMES.parse(kind);
    }

    /** The native KVIO_* value (kvio.h); what crosses JNI, never the ordinal. */
    int nativeValue() {
        return id.value;
    }

    /** The constant with native value {@code value}, or null if there is none. */
    static PoolKind ofNative(int value) {
        return NAMES.ofNative(value);
    }
}
