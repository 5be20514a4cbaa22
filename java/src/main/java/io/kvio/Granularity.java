/*
 * Transfer granularity as the host pool entry points use it: per_layer (load one layer at a time
 * while the model runs) or all_layer (back up every layer in one transfer). Each constant carries
 * its native KVIO_GRANULARITY_* value.
 */
package io.kvio;

public enum Granularity {
    PER_LAYER(KvioNative.KVIO_GRANULARITY_PER_LAYER, "per_layer"),
    ALL_LAYER(KvioNative.KVIO_GRANULARITY_ALL_LAYER, "all_layer");

    private static final Names<Granularity> NAMES =
            new Names<>(KvioNative.KVIO_NAME_GRANULARITY, "granularity", values(), e -> e.id);

    private final NativeName id;

    Granularity(int nativeValue, String userName) {
        this.id = new NativeName(nativeValue, userName);
    }

    public String userName() {
        return id.userName;
    }

    @Override
    public String toString() {
        return id.userName;
    }

    public static Granularity parse(String granularity) {
        return NAMES.parse(granularity);
    }

    /** The native KVIO_* value (kvio.h); what crosses JNI, never the ordinal. */
    int nativeValue() {
        return id.value;
    }

    /** The constant with native value {@code value}, or null if there is none. */
    static Granularity ofNative(int value) {
        return NAMES.ofNative(value);
    }
}
