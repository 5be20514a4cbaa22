/*
 * A two-tier KV cache as a serving engine keeps it: a device pool (the accelerator's KV memory,
 * here a cpu-backend stand-in) in front of a larger host pool. Sequences own whole pages. When a
 * sequence needs device pages and too few are free, the least recently used resident sequences
 * are evicted: their pages are backed up to the host pool (all layers, one transfer) and freed.
 * A sequence whose KV is on the host is brought back layer by layer (one transfer per layer), so
 * the forward pass can start on layer 0 while later layers are still being copied.
 *
 * The two calls into kvio's transfer API are in backup() and submitLayerLoads() only.
 */
package io.kvio.examples.serving;

import io.kvio.DeviceKvPool;
import io.kvio.HostKvPool;
import io.kvio.IoBackend;
import io.kvio.KvLayout;
import io.kvio.PoolKind;
import io.kvio.PoolSpec;
import io.kvio.TokenIndices;
import io.kvio.Transfer;
import java.util.ArrayDeque;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.Map;

final class HierarchicalCache implements AutoCloseable {
    /** Where a sequence's KV lives. */
    enum Tier {
        DEVICE,
        HOST
    }

    /** One sequence (a conversation): its page count and the pages it holds in its tier. */
    static final class Sequence {
        final int id;
        final int pages;
        Tier tier;
        long[] devicePages; // while on the device
        long[] hostPages; // while on the host

        Sequence(int id, int pages) {
            this.id = id;
            this.pages = pages;
        }
    }

    final PoolSpec deviceSpec;
    final DeviceKvPool device;
    final HostKvPool host;
    private final ArrayDeque<Long> freeDevicePages = new ArrayDeque<>();
    private final ArrayDeque<Long> freeHostPages = new ArrayDeque<>();

    /** Resident sequences, least recently used first. */
    private final LinkedHashMap<Integer, Sequence> resident = new LinkedHashMap<>(16, 0.75f, true);

    long evictions;
    long bytesBackedUp;
    long backupNanos;

    /**
     * A device pool of {@code devicePages} pages and a host pool of {@code hostPages} in the
     * page_first_direct layout (one (page, layer) block contiguous: per-layer loads of whole pages
     * are a few large copies). {@code ioThreads}: the copy threads of the host pool's own executor.
     */
    HierarchicalCache(PoolSpec deviceSpec, long hostPages, int ioThreads) {
        this.deviceSpec = deviceSpec;
        this.device = DeviceKvPool.allocate(deviceSpec, IoBackend.CPU);
        this.host =
                HostKvPool.builder()
                        .forDevice(device)
                        .layout(KvLayout.PAGE_FIRST_DIRECT)
                        .pages(hostPages)
                        .threads(ioThreads)
                        .build();
        for (long p = 0; p < deviceSpec.numPages(); p++) freeDevicePages.add(p);
        for (long p = 0; p < hostPages; p++) freeHostPages.add(p);
    }

    static PoolSpec spec(long layers, long pages, long pageSize, long heads, long headBytes) {
        return PoolSpec.builder()
                .kind(PoolKind.MHA)
                .layout(KvLayout.LAYER_FIRST)
                .layers(layers)
                .pages(pages)
                .pageSize(pageSize)
                .heads(heads)
                .headBytes(headBytes)
                .build();
    }

    /**
     * Writes one byte of every 4 KiB page of the host pool. kvio maps host pools lazily (zeroed on
     * first touch), so without this the first backups into each page pay the page faults: in this
     * example, 40 to 180 ms for the first 16 MiB backups against 0.7 ms once faulted in.
     */
    void prefaultHostPool() {
        java.nio.ByteBuffer memory = host.buffer();
        for (int at = 0; at < memory.capacity(); at += 4096) {
            memory.put(at, (byte) 0);
        }
    }

    /** Marks a resident sequence as just used (it becomes the last to be evicted). */
    void touch(Sequence s) {
        resident.get(s.id);
    }

    /**
     * Gives {@code s} device pages (evicting least recently used sequences to the host until enough
     * are free) and makes it resident. Its KV is still on the host if it was: call submitLayerLoads
     * next.
     */
    void placeOnDevice(Sequence s) {
        while (freeDevicePages.size() < s.pages) {
            Iterator<Map.Entry<Integer, Sequence>> lru = resident.entrySet().iterator();
            if (!lru.hasNext()) {
                throw new IllegalStateException(
                        "sequence " + s.id + " needs more pages than the device pool has");
            }
            Sequence victim = lru.next().getValue();
            lru.remove();
            evict(victim);
        }
        s.devicePages = new long[s.pages];
        for (int i = 0; i < s.pages; i++) s.devicePages[i] = freeDevicePages.poll();
        resident.put(s.id, s);
        if (s.tier == null) {
            s.tier = Tier.DEVICE; // a new sequence; one on the host stays HOST until loaded
        }
    }

    /** Backs the victim's pages up to the host (all layers in one transfer) and frees them. */
    private void evict(Sequence victim) {
        if (freeHostPages.size() < victim.pages) {
            throw new IllegalStateException("the host pool is full; size it for the working set");
        }
        victim.hostPages = new long[victim.pages];
        for (int i = 0; i < victim.pages; i++) victim.hostPages[i] = freeHostPages.poll();
        long start = System.nanoTime();
        Transfer t = backup(victim.devicePages, victim.hostPages);
        // The freed pages may be rewritten by Java (a prefill) right away, which kvio's executor
        // does not order: wait. (A later transfer into them would be ordered after this backup
        // anyway: transfers of one executor run in submission order.)
        t.await();
        backupNanos += System.nanoTime() - start;
        bytesBackedUp += t.bytes();
        evictions++;
        for (long p : victim.devicePages) freeDevicePages.add(p);
        victim.devicePages = null;
        victim.tier = Tier.HOST;
    }

    /**
     * Submits the loads of a placed sequence's KV from the host, one transfer per layer, in layer
     * order; returns them without waiting. Its host pages are free once the last load completed
     * (releaseHostPages).
     */
    Transfer[] submitLayerLoads(Sequence s) {
        int layers = (int) deviceSpec.numLayers();
        Transfer[] loads = new Transfer[layers];
        // kvio reads index lists during the call only: one pair of lists serves every layer.
        try (TokenIndices hostSlots = TokenIndices.pages(deviceSpec.pageSize(), s.hostPages);
                TokenIndices deviceSlots =
                        TokenIndices.pages(deviceSpec.pageSize(), s.devicePages)) {
            for (int layer = 0; layer < layers; layer++) {
                // The forward pass computes while the layers land. With the auto io backend on a
                // GPU the mark keeps the bytes on the copy engine instead of competing with the
                // model for SMs; the cpu backend this example runs ignores it.
                loads[layer] =
                        host.load(device, layer)
                                .hostIndices(hostSlots)
                                .deviceIndices(deviceSlots)
                                .overlapsCompute()
                                .submit();
            }
        }
        return loads;
    }

    /** After the sequence's last layer load completed: its host copy is no longer needed. */
    void releaseHostPages(Sequence s) {
        for (long p : s.hostPages) freeHostPages.add(p);
        s.hostPages = null;
        s.tier = Tier.DEVICE;
    }

    /** Evicts every resident sequence to the host. */
    void evictAll() {
        for (Iterator<Sequence> it = resident.values().iterator(); it.hasNext(); ) {
            Sequence s = it.next();
            it.remove();
            evict(s);
        }
    }

    /** A finished sequence: its device pages are freed, its KV discarded. */
    void drop(Sequence s) {
        if (resident.remove(s.id) != null) {
            for (long p : s.devicePages) freeDevicePages.add(p);
            s.devicePages = null;
        }
        s.tier = null;
    }

    void resetCounters() {
        evictions = 0;
        bytesBackedUp = 0;
        backupNanos = 0;
    }

    private Transfer backup(long[] devicePages, long[] hostPages) {
        // Whole pages by id, each pool's page size applied by kvio; nothing to close.
        return host.backup(device).devicePages(devicePages).hostPages(hostPages).submit();
    }

    @Override
    public void close() {
        host.close();
        device.close();
    }
}
