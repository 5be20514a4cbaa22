/*
 * The options of one `roundtrip` run (RoundTripCommand), range-checked, with the pool kind's
 * defaults filled in, and the support check of every layout they name.
 */
package io.kvio.cli;

import io.kvio.Granularity;
import io.kvio.IoBackend;
import io.kvio.KvLayout;
import io.kvio.Kvio;
import io.kvio.PoolKind;
import java.util.List;

final class RoundTripOptions {
    long tokens = 8192;
    long layers = 32;
    long heads = -1;
    long headDim = -1;
    long dtypeBytes = 2;
    long pageSize = 64;
    int threads = 0;
    long seed = 42;
    PoolKind kind = PoolKind.MHA;
    IoBackend backend = IoBackend.AUTO;
    List<KvLayout> layouts;

    long headBytes() {
        return headDim * dtypeBytes;
    }

    /** All heads of one token in one layer. */
    long rowBytes() {
        return heads * headBytes();
    }

    /** Fails with the native reason (and what to use instead) before anything is allocated. */
    void checkSupport() {
        for (KvLayout layout : layouts) {
            for (Granularity g : Granularity.values()) {
                Kvio.checkSupport(
                        kind, layout, backend, g, heads, headBytes(), pageSize, layers, layers, 0);
            }
        }
    }
}
