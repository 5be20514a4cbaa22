/*
 * The io.kvio.Transfer JDK Flight Recorder event (docs/observability.md): a recording runs while
 * cpu transfers of each entry point run (all-layer backup, per-layer loads, Kvio.transfer, an
 * MLA pool, a transfer large enough for the worker threads, a failed one, one closed unawaited),
 * is dumped to a file and read back with jdk.jfr.consumer.RecordingFile; every field is checked
 * against what the transfer did. Only events committed by this test's thread are looked at.
 */
package io.kvio;

import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertFalse;
import static org.testng.Assert.assertTrue;
import static org.testng.Assert.expectThrows;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.function.BiConsumer;
import jdk.jfr.EventType;
import jdk.jfr.FlightRecorder;
import jdk.jfr.Recording;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordingFile;
import org.testng.annotations.Test;

public class FlightRecorderTest {
    private static final String EVENT = "io.kvio.Transfer";

    private static PoolSpec deviceSpec(PoolKind kind, long layers, long pageSize, long heads) {
        return PoolSpec.builder()
                .kind(kind)
                .layout(KvLayout.LAYER_FIRST)
                .layers(layers)
                .pages(16)
                .pageSize(pageSize)
                .heads(heads)
                .headBytes(64)
                .build();
    }

    /** Runs {@code body} inside a recording of the transfer event; this thread's events. */
    private static List<RecordedEvent> record(Runnable body) throws Exception {
        long me = Thread.currentThread().getId();
        return record(body, t -> t.getJavaThreadId() == me);
    }

    /**
     * Runs {@code body} inside a recording of the transfer event; the events of {@code threads}.
     */
    private static List<RecordedEvent> record(
            Runnable body, java.util.function.Predicate<jdk.jfr.consumer.RecordedThread> threads)
            throws Exception {
        Path file = Files.createTempFile("kvio-transfer", ".jfr");
        try (Recording recording = new Recording()) {
            recording.enable(EVENT).withoutThreshold();
            recording.start();
            body.run();
            recording.stop();
            recording.dump(file);
        }
        List<RecordedEvent> mine = new ArrayList<>();
        for (RecordedEvent e : RecordingFile.readAllEvents(file)) {
            if (e.getEventType().getName().equals(EVENT)
                    && e.getThread() != null
                    && threads.test(e.getThread())) {
                mine.add(e);
            }
        }
        Files.delete(file);
        return mine;
    }

    /**
     * Runs {@code body} inside a recording (as {@link #record}) with a cpu device pool (mha, 2
     * layers, 8-token pages, 2 heads) and a page_first host pool of 4 pages for it, both closed
     * after.
     */
    private static List<RecordedEvent> recordWithSmallPools(
            BiConsumer<DeviceKvPool, HostKvPool> body) throws Exception {
        try (DeviceKvPool device =
                        DeviceKvPool.allocate(deviceSpec(PoolKind.MHA, 2, 8, 2), IoBackend.CPU);
                HostKvPool host =
                        HostKvPool.builder()
                                .forDevice(device)
                                .layout(KvLayout.PAGE_FIRST)
                                .pages(4)
                                .build()) {
            return record(() -> body.accept(device, host));
        }
    }

    private static void assertTimes(RecordedEvent e) {
        assertTrue(e.getDuration("queueTime").compareTo(Duration.ZERO) >= 0, e.toString());
        assertTrue(e.getDuration("transferTime").compareTo(Duration.ZERO) >= 0, e.toString());
        assertTrue(e.getDuration().compareTo(Duration.ZERO) >= 0, e.toString());
    }

    @Test
    public void backupAndPerLayerLoadsAreRecorded() throws Exception {
        long layers = 4;
        long pageSize = 8;
        long heads = 2;
        long[] bytes = new long[layers == 4 ? 5 : 0];
        List<RecordedEvent> events;
        try (DeviceKvPool device =
                        DeviceKvPool.allocate(
                                deviceSpec(PoolKind.MHA, layers, pageSize, heads), IoBackend.CPU);
                HostKvPool host =
                        HostKvPool.builder()
                                .forDevice(device)
                                .layout(KvLayout.PAGE_FIRST_DIRECT)
                                .pages(16)
                                .build();
                TokenIndices deviceSlots = TokenIndices.pages(pageSize, 3, 4, 5);
                TokenIndices hostSlots = TokenIndices.pages(pageSize, 10, 11, 12)) {
            events =
                    record(
                            () -> {
                                Transfer backup =
                                        host.backup(device)
                                                .deviceIndices(deviceSlots)
                                                .hostIndices(hostSlots)
                                                .overlapsCompute()
                                                .submit();
                                backup.await();
                                bytes[0] = backup.bytes();
                                for (int layer = 0; layer < layers; layer++) {
                                    Transfer load =
                                            host.load(device, layer)
                                                    .hostIndices(hostSlots)
                                                    .deviceIndices(deviceSlots)
                                                    .overlapsCompute(layer % 2 == 1)
                                                    .submit();
                                    load.await();
                                    bytes[1 + layer] = load.bytes();
                                }
                            });
        }
        assertEquals(events.size(), 1 + layers, events.toString());
        long rowBytes = heads * 64;
        long indexPairs = 3 * pageSize;
        RecordedEvent backup = events.get(0);
        assertEquals(backup.getString("direction"), "backup");
        assertEquals(backup.getString("backend"), "cpu");
        assertEquals(backup.getString("chosenBackend"), "cpu");
        assertTrue(backup.getBoolean("overlapsCompute"), backup.toString());
        assertEquals(backup.getString("srcLayout"), "layer_first");
        assertEquals(backup.getString("dstLayout"), "page_first_direct");
        assertEquals(backup.getString("srcMemory"), "host");
        assertEquals(backup.getString("dstMemory"), "host");
        assertEquals(backup.getLong("indexPairs"), indexPairs);
        assertEquals(backup.getLong("layers"), layers);
        assertEquals(backup.getLong("rows"), indexPairs * layers * 2);
        assertEquals(backup.getLong("bytes"), indexPairs * layers * 2 * rowBytes);
        assertEquals(backup.getLong("bytes"), bytes[0]);
        // three consecutive whole pages into page_first_direct: 2 x min(pages, layers) copies
        assertEquals(backup.getLong("copies"), 2 * Math.min(3, layers));
        assertEquals(backup.getLong("launches"), 0);
        assertEquals(backup.getString("outcome"), "ok");
        assertTimes(backup);
        for (int layer = 0; layer < layers; layer++) {
            RecordedEvent load = events.get(1 + layer);
            assertEquals(load.getString("direction"), "load");
            assertEquals(load.getBoolean("overlapsCompute"), layer % 2 == 1, load.toString());
            assertEquals(load.getString("srcLayout"), "page_first_direct");
            assertEquals(load.getString("dstLayout"), "layer_first");
            assertEquals(load.getLong("layers"), 1);
            assertEquals(load.getLong("rows"), indexPairs * 2);
            assertEquals(load.getLong("bytes"), bytes[1 + layer]);
            assertEquals(load.getLong("bytes"), indexPairs * 2 * rowBytes);
            assertTrue(load.getLong("copies") > 0, load.toString());
            assertEquals(load.getString("outcome"), "ok");
            assertTimes(load);
        }
    }

    @Test
    public void theGeneralRequestCarriesTheOverlapMark() throws Exception {
        List<RecordedEvent> events =
                recordWithSmallPools(
                        (device, host) -> {
                            Kvio.request(host.executor(), device, host)
                                    .srcIndices(0, 1)
                                    .dstIndices(2, 3)
                                    .layers(1)
                                    .overlapsCompute()
                                    .submit()
                                    .await();
                            Kvio.request(host.executor(), device, host)
                                    .srcIndices(4)
                                    .dstIndices(5)
                                    .dstLayerStart(1)
                                    .layers(1)
                                    .submit()
                                    .await();
                        });
        assertEquals(events.size(), 2, events.toString());
        assertTrue(events.get(0).getBoolean("overlapsCompute"), events.get(0).toString());
        assertEquals(events.get(0).getLong("indexPairs"), 2);
        assertFalse(events.get(1).getBoolean("overlapsCompute"), events.get(1).toString());
        assertEquals(events.get(1).getLong("indexPairs"), 1);
    }

    @Test
    public void theLaunchShapeIsRecordedAsRequested() throws Exception {
        List<RecordedEvent> events =
                recordWithSmallPools(
                        (device, host) -> {
                            host.backup(device)
                                    .deviceIndices(0, 1)
                                    .hostIndices(2, 3)
                                    .launch(2, 8)
                                    .overlapsCompute()
                                    .submit()
                                    .await();
                            host.load(device, 1)
                                    .hostIndices(2)
                                    .deviceIndices(5)
                                    .launch(-1, 4) // 0 or less: the executor's setting
                                    .submit()
                                    .await();
                            Kvio.request(host.executor(), device, host)
                                    .srcIndices(4)
                                    .dstIndices(5)
                                    .layers(1)
                                    .submit()
                                    .await();
                            Kvio.request(host.executor(), device, host)
                                    .srcIndices(6)
                                    .dstIndices(7)
                                    .layers(1)
                                    .launch(3, 16)
                                    .submit()
                                    .await();
                        });
        assertEquals(events.size(), 4, events.toString());
        RecordedEvent backup = events.get(0);
        assertEquals(backup.getInt("ctaBudget"), 2, backup.toString());
        assertEquals(backup.getInt("warpsPerCta"), 8, backup.toString());
        assertTrue(backup.getBoolean("overlapsCompute"), backup.toString());
        assertEquals(backup.getString("chosenBackend"), "cpu"); // which ignores the shape
        assertEquals(backup.getString("outcome"), "ok");
        RecordedEvent load = events.get(1);
        assertEquals(load.getInt("ctaBudget"), 0, load.toString());
        assertEquals(load.getInt("warpsPerCta"), 4, load.toString());
        assertFalse(load.getBoolean("overlapsCompute"), load.toString());
        RecordedEvent general = events.get(2);
        assertEquals(general.getInt("ctaBudget"), 0, general.toString());
        assertEquals(general.getInt("warpsPerCta"), 0, general.toString());
        RecordedEvent shaped = events.get(3);
        assertEquals(shaped.getInt("ctaBudget"), 3, shaped.toString());
        assertEquals(shaped.getInt("warpsPerCta"), 16, shaped.toString());
    }

    @Test
    public void generalTransfersMlaLargeFailedAndClosed() throws Exception {
        List<RecordedEvent> events;
        long[] large = new long[1];
        try (DeviceKvPool mla =
                        DeviceKvPool.allocate(deviceSpec(PoolKind.MLA, 2, 4, 1), IoBackend.CPU);
                HostKvPool mlaHost =
                        HostKvPool.builder().forDevice(mla).layout(KvLayout.PAGE_FIRST).build();
                DeviceKvPool big =
                        DeviceKvPool.allocate(deviceSpec(PoolKind.MHA, 8, 64, 16), IoBackend.CPU);
                HostKvPool bigHost =
                        HostKvPool.builder()
                                .forDevice(big)
                                .layout(KvLayout.LAYER_FIRST)
                                .threads(2)
                                .build();
                HostKvPool otherHost =
                        HostKvPool.builder()
                                .forDevice(mla)
                                .layout(KvLayout.PAGE_FIRST_DIRECT)
                                .build();
                TokenIndices a = TokenIndices.pages(4, 1, 2);
                TokenIndices b = TokenIndices.pages(4, 5, 6);
                TokenIndices all = TokenIndices.pages(64, 0, 1, 2, 3, 4, 5, 6, 7)) {
            events =
                    record(
                            () -> {
                                // Kvio.transfer: device to host is a backup, host to host other
                                KvioExecutor cpu = KvioExecutor.shared(IoBackend.CPU);
                                Kvio.transfer(cpu, mla, mlaHost, a, b, 0, 0, 2).await();
                                Kvio.transfer(cpu, mlaHost, otherHost, b, a, 1, 1, 1).await();
                                // 8 pages x 64 tokens x 8 layers x 2 x 1 KiB = 8 MiB: the workers
                                // and the submitting thread
                                Transfer t =
                                        bigHost.backup(big)
                                                .deviceIndices(all)
                                                .hostIndices(all)
                                                .submit();
                                t.await();
                                large[0] = t.bytes();
                                // a failed copy: the event carries the status
                                KvioTestNative.injectFault(
                                        KvioTestNative.KVIO_TEST_FAULT_CPU_COPY, 1);
                                try {
                                    Transfer failed =
                                            mlaHost.load(mla, 0)
                                                    .hostIndices(b)
                                                    .deviceIndices(a)
                                                    .submit();
                                    expectThrows(KvioBackendException.class, failed::await);
                                } finally {
                                    KvioTestNative.injectFault(
                                            KvioTestNative.KVIO_TEST_FAULT_CPU_COPY, 0);
                                }
                                // closed without await: still one event
                                mlaHost.load(mla, 1)
                                        .hostIndices(b)
                                        .deviceIndices(a)
                                        .submit()
                                        .close();
                            });
        }
        assertEquals(events.size(), 5, events.toString());
        RecordedEvent mlaBackup = events.get(0);
        assertEquals(mlaBackup.getString("direction"), "backup");
        assertEquals(mlaBackup.getString("dstLayout"), "page_first");
        assertEquals(mlaBackup.getLong("rows"), 8 * 2 * 1); // 8 tokens x 2 layers x 1 latent
        assertEquals(mlaBackup.getLong("bytes"), 8 * 2 * 64);
        assertTrue(mlaBackup.getLong("copies") > 0);
        assertTimes(mlaBackup);
        RecordedEvent hostToHost = events.get(1);
        assertEquals(hostToHost.getString("direction"), "other");
        assertEquals(hostToHost.getString("srcLayout"), "page_first");
        assertEquals(hostToHost.getString("dstLayout"), "page_first_direct");
        assertEquals(hostToHost.getLong("layers"), 1);
        assertTimes(hostToHost);
        RecordedEvent big8 = events.get(2);
        assertEquals(big8.getLong("bytes"), large[0]);
        assertEquals(big8.getLong("bytes"), 8L * 64 * 8 * 2 * 16 * 64);
        assertEquals(big8.getLong("rows"), 8L * 64 * 8 * 2);
        assertTrue(big8.getLong("copies") > 0);
        assertEquals(big8.getString("outcome"), "ok");
        assertTimes(big8);
        RecordedEvent failed = events.get(3);
        assertEquals(failed.getString("direction"), "load");
        assertEquals(failed.getString("outcome"), "BACKEND_ERROR");
        assertTimes(failed);
        RecordedEvent closed = events.get(4);
        assertEquals(closed.getString("direction"), "load");
        assertTrue(
                closed.getString("outcome").equals("ok")
                        || closed.getString("outcome").equals("running"),
                closed.toString());
        if (closed.getString("outcome").equals("ok")) {
            assertTimes(closed); // else N/A: not started or not finished when it was closed
        }
    }

    /**
     * A transfer closed after whenDone() (try-with-resources around the submit) is recorded with
     * its outcome once whenDone()'s background wait sees it complete, not as "running" at the
     * close: one held transfer that completes, one that fails.
     */
    @Test(timeOut = 60_000)
    public void closedAfterWhenDoneIsRecordedWithItsOutcome() throws Exception {
        PoolSpec spec = PoolFixtures.HOLDABLE; // 16 MiB: a transfer held whole
        long[] all = new long[Math.toIntExact(spec.tokens())];
        for (int i = 0; i < all.length; i++) all[i] = i;
        List<RecordedEvent> events;
        try (KvioExecutor executor = KvioExecutor.create(IoBackend.CPU, 2);
                DeviceKvPool src = DeviceKvPool.allocate(spec, IoBackend.CPU);
                DeviceKvPool dst = DeviceKvPool.allocate(spec, IoBackend.CPU)) {
            events =
                    record(
                            () -> {
                                try {
                                    KvioTestNative.injectFault(
                                            KvioTestNative.KVIO_TEST_FAULT_CPU_HOLD, 1);
                                    java.util.concurrent.CompletableFuture<Void> ok;
                                    try (Transfer t =
                                            Kvio.transfer(executor, src, dst, all, all, 0, 0, 1)) {
                                        ok = t.whenDone();
                                    }
                                    Thread.sleep(20);
                                    assertFalse(ok.isDone(), "held: still running when closed");
                                    KvioTestNative.injectFault(
                                            KvioTestNative.KVIO_TEST_FAULT_CPU_HOLD, 0);
                                    ok.get(30, java.util.concurrent.TimeUnit.SECONDS);
                                    KvioTestNative.injectFault(
                                            KvioTestNative.KVIO_TEST_FAULT_CPU_COPY, 1);
                                    java.util.concurrent.CompletableFuture<Void> failed;
                                    try (Transfer t =
                                            Kvio.transfer(executor, src, dst, all, all, 0, 0, 1)) {
                                        failed = t.whenDone();
                                    }
                                    expectThrows(
                                            java.util.concurrent.ExecutionException.class,
                                            () ->
                                                    failed.get(
                                                            30,
                                                            java.util.concurrent.TimeUnit.SECONDS));
                                } catch (Exception e) {
                                    throw new AssertionError(e);
                                } finally {
                                    KvioTestNative.injectFault(
                                            KvioTestNative.KVIO_TEST_FAULT_CPU_HOLD, 0);
                                    KvioTestNative.injectFault(
                                            KvioTestNative.KVIO_TEST_FAULT_CPU_COPY, 0);
                                }
                            },
                            t -> true);
        }
        assertEquals(events.size(), 2, events.toString());
        // Two background threads commit them: the recording's order need not be the commits'.
        boolean okFirst = events.get(0).getString("outcome").equals("ok");
        RecordedEvent ok = events.get(okFirst ? 0 : 1);
        assertEquals(ok.getString("outcome"), "ok", ok.toString());
        assertEquals(ok.getLong("bytes"), spec.tokens() * 4096);
        assertTrue(ok.getDuration().compareTo(Duration.ofMillis(20)) >= 0, ok.toString());
        assertTimes(ok);
        RecordedEvent failed = events.get(okFirst ? 1 : 0);
        assertEquals(failed.getString("outcome"), "BACKEND_ERROR", failed.toString());
        // The held one was seen complete by whenDone()'s wait only (the failed one may be done
        // when its submit returns, and recorded there).
        assertTrue(
                ok.getThread().getJavaName().startsWith("kvio-background-"),
                "committed by whenDone()'s wait: " + ok.getThread().getJavaName());
    }

    @Test
    public void eventTypeIsRegisteredWithItsMetadata() throws Exception {
        // a transfer with no recording running commits nothing and needs no JFR
        try (DeviceKvPool device =
                        DeviceKvPool.allocate(deviceSpec(PoolKind.MHA, 1, 4, 1), IoBackend.CPU);
                HostKvPool host = HostKvPool.builder().forDevice(device).build();
                TokenIndices slots = TokenIndices.pages(4, 0)) {
            host.backup(device).deviceIndices(slots).hostIndices(slots).submit().await();
        }
        record(() -> {}); // registers the class with a recorder, as any recording would
        EventType type =
                FlightRecorder.getFlightRecorder().getEventTypes().stream()
                        .filter(t -> t.getName().equals(EVENT))
                        .findFirst()
                        .orElseThrow();
        assertEquals(type.getLabel(), "KV Transfer");
        assertEquals(type.getCategoryNames(), List.of("kvio"));
        assertEquals(type.getField("bytes").getContentType(), "jdk.jfr.DataAmount");
        assertEquals(type.getField("queueTime").getContentType(), "jdk.jfr.Timespan");
        assertEquals(type.getField("transferTime").getContentType(), "jdk.jfr.Timespan");
    }

    /**
     * A runtime without the jdk.jfr module (what jlink makes without it): transfers work and the
     * classes holding a transfer's event can be reflected on. The first transfer used to fail with
     * NoClassDefFoundError: jdk/jfr/FlightRecorder, and reflection on Transfer with jdk/jfr/Event.
     */
    @Test
    public void aRuntimeWithoutFlightRecorderMovesAndReflects() throws Exception {
        String output =
                FreshJvm.run(
                        List.of(
                                "--limit-modules",
                                "java.base,java.desktop,java.management,java.sql,jdk.unsupported,"
                                        + "java.xml,java.logging"),
                        NoFlightRecorderMain.class);
        assertTrue(output.contains("OK"), output);
    }
}
