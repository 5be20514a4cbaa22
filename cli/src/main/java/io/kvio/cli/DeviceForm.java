/*
 * How the matrix's device pool holds its memory, the forms a serving engine has: one region kvio
 * allocates (allocated), one caller buffer per component (per_component: separate K and V
 * tensors) or one per component and layer (layer_table: a tensor per layer). The caller buffers
 * are SEPARATE allocations: each comes from its own small kvio device pool (on kernel and direct
 * each DeviceKvPool.allocate is its own cudaMalloc; on cpu its own host mapping), and the matrix's
 * pool wraps their addresses with DeviceKvPool.wrapComponents / wrapLayers. The carriers are kept
 * in the oracle's order (component c, or component c and layer l at c * L + l) so that the matrix
 * fills and reads each (component, layer) region through its own carrier (PoolAccess), not through
 * kvio's address table. Used by MatrixRunner.
 */
package io.kvio.cli;

import io.kvio.DeviceKvPool;
import io.kvio.IoBackend;
import io.kvio.KvLayout;
import io.kvio.PoolKind;
import io.kvio.PoolSpec;
import java.util.ArrayList;
import java.util.List;
import java.util.function.BiFunction;

enum DeviceForm {
    ALLOCATED("allocated"),
    PER_COMPONENT("per_component"),
    LAYER_TABLE("layer_table");

    final String userName;

    DeviceForm(String userName) {
        this.userName = userName;
    }

    /** The form whose user name is {@code name}, or null. */
    static DeviceForm of(String name) {
        for (DeviceForm f : values()) {
            if (f.userName.equals(name)) {
                return f;
            }
        }
        return null;
    }

    /**
     * A device pool of {@code spec} (layer_first) on {@code backend} in this form, with the carrier
     * pools that own its memory; closing it closes the pool and waits for its transfers, then
     * closes the carriers.
     */
    Carried create(PoolSpec spec, IoBackend backend) {
        return create(spec, backend, TableOrder.AS_IS);
    }

    /**
     * Like {@link #create(PoolSpec, IoBackend)}, but kvio's address table gets, at entry i, the
     * address of carrier {@code tableOrder.carrierOf(i, count)}: a test seam that builds a
     * mis-wired pool (K and V swapped, a layer table reversed) the matrix must report as FAIL. The
     * carriers stay in the oracle's order. Ignored for allocated.
     */
    Carried create(PoolSpec spec, IoBackend backend, TableOrder tableOrder) {
        return create(spec, backend, tableOrder, DeviceKvPool::allocate);
    }

    /**
     * Like {@link #create(PoolSpec, IoBackend, TableOrder)}, with each carrier from {@code
     * carriers} (DeviceKvPool::allocate): a test seam that gives the carriers memory the test
     * keeps.
     */
    Carried create(
            PoolSpec spec,
            IoBackend backend,
            TableOrder tableOrder,
            BiFunction<PoolSpec, IoBackend, DeviceKvPool> carrierAllocator) {
        if (this == ALLOCATED) {
            return new Carried(this, DeviceKvPool.allocate(spec, backend), new ArrayList<>());
        }
        int components = spec.kind().components();
        long layers = spec.numLayers();
        long bytesEach =
                this == PER_COMPONENT ? spec.componentBytes() : spec.tokens() * spec.rowBytes();
        int count = this == PER_COMPONENT ? components : (int) (components * layers);
        // One region of bytesEach per carrier: mla, one layer, bytesEach / rowBytes one-token
        // pages of one row.
        PoolSpec carrierSpec =
                PoolSpec.builder()
                        .kind(PoolKind.MLA)
                        .layout(KvLayout.LAYER_FIRST)
                        .layers(1)
                        .pages(bytesEach / spec.rowBytes())
                        .pageSize(1)
                        .heads(1)
                        .headBytes(spec.rowBytes())
                        .build();
        List<DeviceKvPool> carriers = new ArrayList<>();
        try {
            long[] addresses = new long[count];
            for (int i = 0; i < count; i++) {
                carriers.add(carrierAllocator.apply(carrierSpec, backend));
            }
            for (int i = 0; i < count; i++) {
                addresses[i] = carriers.get(tableOrder.carrierOf(i, count)).regionAddress(0);
            }
            DeviceKvPool pool =
                    this == PER_COMPONENT
                            ? DeviceKvPool.wrapComponents(spec, addresses, bytesEach, backend)
                            : DeviceKvPool.wrapLayers(spec, addresses, bytesEach, backend);
            return new Carried(this, pool, carriers);
        } catch (RuntimeException e) {
            for (DeviceKvPool c : carriers) {
                c.close();
            }
            throw e;
        }
    }

    /** Which carrier's address goes into entry {@code entry} of {@code entries} of kvio's table. */
    @FunctionalInterface
    interface TableOrder {
        /** The matrix's order: entry i is carrier i. */
        TableOrder AS_IS = (entry, entries) -> entry;

        int carrierOf(int entry, int entries);
    }

    /**
     * A device pool and the pools whose memory it wraps: none for allocated, one per component
     * (per_component) or per component and layer, at c * L + l (layer_table), each one region.
     */
    static final class Carried implements AutoCloseable {
        final DeviceForm form;
        final DeviceKvPool pool;
        final List<DeviceKvPool> carriers;

        Carried(DeviceForm form, DeviceKvPool pool, List<DeviceKvPool> carriers) {
            this.form = form;
            this.pool = pool;
            this.carriers = carriers;
        }

        /**
         * Closes the pool and waits until kvio no longer uses it (its transfers are complete), then
         * closes the carriers. No transfer references a carrier, so kvio frees a carrier's memory
         * as soon as it is closed, running copies through the pool or not
         * (docs/memory-lifetime.md): the wait must come first. If the wait fails, the carriers are
         * left open (their memory is leaked rather than freed under a copy).
         */
        @Override
        public void close() {
            pool.closeAndWait();
            for (DeviceKvPool c : carriers) {
                c.close();
            }
        }
    }
}
