/*
 * Pool kinds: how many components a token row has. MHA pools hold K and V; MLA pools hold one
 * latent. The ordinal equals the native KVIO_KIND_* value; userName() is the string users type.
 */
package io.kvio;

import io.kvio.bridge.KvioNative;

public enum PoolKind {
    MHA("mha", 2),
    MLA("mla", 1);

    private final String userName;
    private final int components;

    PoolKind(String userName, int components) {
        this.userName = userName;
        this.components = components;
    }

    public String userName() {
        return userName;
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
        return values()[Names.parse(KvioNative.KVIO_NAME_KIND, kind, values(), "kind")];
    }

    @Override
    public String toString() {
        return userName;
    }
}
