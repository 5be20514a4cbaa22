/*
 * Transfer granularity as the host pool entry points use it: per_layer (load one layer at a time
 * while the model runs) or all_layer (back up every layer in one transfer). Each constant carries
 * its native KVIO_GRANULARITY_* value.
 */
package io.kvio;

public enum Granularity {
    PER_LAYER(KvioNative.KVIO_GRANULARITY_PER_LAYER, "per_layer"),
    ALL_LAYER(KvioNative.KVIO_GRANULARITY_ALL_LAYER, "all_layer");

    private final int nativeValue;
    private final String userName;

    Granularity(int nativeValue, String userName) {
        this.nativeValue = nativeValue;
        this.userName = userName;
    }

    public String userName() {
        return userName;
    }

    public static Granularity parse(String granularity) {
        return Names.parse(
                KvioNative.KVIO_NAME_GRANULARITY,
                granularity,
                values(),
                Granularity::ofNative,
                "granularity");
    }

    /** The native KVIO_* value (kvio.h); what crosses JNI, never the ordinal. */
    int nativeValue() {
        return nativeValue;
    }

    /** The constant with native value {@code value}, or null if there is none. */
    static Granularity ofNative(int value) {
        for (Granularity e : values()) {
            if (e.nativeValue == value) {
                return e;
            }
        }
        return null;
    }

    @Override
    public String toString() {
        return userName;
    }
}
