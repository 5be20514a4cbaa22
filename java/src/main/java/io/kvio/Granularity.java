/*
 * Transfer granularity as the host pool entry points use it: per_layer (load one layer at a time
 * while the model runs) or all_layer (back up every layer in one transfer). The ordinal equals
 * the native KVIO_GRANULARITY_* value.
 */
package io.kvio;

import io.kvio.bridge.KvioNative;

public enum Granularity {
    PER_LAYER("per_layer"),
    ALL_LAYER("all_layer");

    private final String userName;

    Granularity(String userName) {
        this.userName = userName;
    }

    public String userName() {
        return userName;
    }

    public static Granularity parse(String granularity) {
        return values()[
                Names.parse(
                        KvioNative.KVIO_NAME_GRANULARITY, granularity, values(), "granularity")];
    }

    @Override
    public String toString() {
        return userName;
    }
}
