/*
 * The matrix must never free memory under a running copy (docs/memory-lifetime.md). A wrapped
 * device pool's memory belongs to its carrier pools, which no transfer references, so kvio frees
 * a carrier as soon as it is closed: DeviceForm.Carried.close() must wait for the wrapping pool's
 * transfers first. A cpu transfer is held before its first copy by the test library's hold
 * (KVIO_TEST_FAULT_CPU_HOLD); the carriers here wrap memory the test keeps until the end, so a
 * close that does not wait is reported by an assertion, not by a crash. And the per_layer loop
 * (MatrixRunner.eachLayer) must wait for every layer it submitted when one fails, at its submit or
 * at its await.
 */
package io.kvio.cli;

import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertFalse;
import static org.testng.Assert.assertTrue;
import static org.testng.Assert.expectThrows;

import io.kvio.CliTestHooks;
import io.kvio.DeviceKvPool;
import io.kvio.HostKvPool;
import io.kvio.IoBackend;
import io.kvio.KvLayout;
import io.kvio.KvioExecutor;
import io.kvio.PoolKind;
import io.kvio.PoolSpec;
import io.kvio.TokenIndices;
import io.kvio.Transfer;
import java.util.ArrayList;
import java.util.List;
import org.testng.annotations.AfterMethod;
import org.testng.annotations.Test;

public class MatrixLifetimeTest {
    /** MLA, one layer, 4096 slots of 4 KiB: 16 MiB, over the 8 MiB from which a hold applies. */
    private static final PoolSpec HOLDABLE =
            PoolSpec.builder()
                    .kind(PoolKind.MLA)
                    .layout(KvLayout.LAYER_FIRST)
                    .layers(1)
                    .pages(1024)
                    .pageSize(4)
                    .heads(1)
                    .headBytes(4096)
                    .build();

    @AfterMethod(alwaysRun = true)
    public void disarm() {
        CliTestHooks.release();
        CliTestHooks.failCpuCopies(0);
    }

    @Test(timeOut = 60_000)
    public void closingAWrappedPoolWaitsForItsTransfersBeforeItsCarriersGo() throws Exception {
        List<DeviceKvPool> backing = new ArrayList<>(); // the carriers' memory, kept to the end
        long[] slots = new long[4096];
        for (int i = 0; i < slots.length; i++) slots[i] = i;
        Transfer transfer = null;
        Thread closer = null;
        KvioExecutor executor = KvioExecutor.create(IoBackend.CPU, 2);
        TokenIndices all = TokenIndices.of(slots);
        HostKvPool host = null;
        try {
            DeviceForm.Carried carried =
                    DeviceForm.PER_COMPONENT.create(
                            HOLDABLE,
                            IoBackend.CPU,
                            DeviceForm.TableOrder.AS_IS,
                            (spec, backend) -> {
                                DeviceKvPool memory = DeviceKvPool.allocate(spec, backend);
                                backing.add(memory);
                                return DeviceKvPool.wrap(
                                        spec,
                                        memory.regionAddress(0),
                                        spec.componentBytes(),
                                        backend);
                            });
            assertEquals(carried.carriers.size(), 1);
            host =
                    HostKvPool.builder()
                            .forDevice(carried.pool)
                            .layout(KvLayout.LAYER_FIRST)
                            .executor(executor)
                            .build();
            CliTestHooks.holdCpuTransfers(1);
            transfer = host.backup(carried.pool).hostIndices(all).deviceIndices(all).submit();
            closer = new Thread(carried::close, "carried-close");
            closer.start();
            closer.join(500);
            assertFalse(transfer.isDone(), "held");
            assertTrue(
                    closer.isAlive(),
                    "Carried.close() returned (its carriers closed) while a transfer through the"
                            + " pool had not copied yet");
            CliTestHooks.release();
            closer.join();
            assertTrue(transfer.isDone(), "close returned before the transfer completed");
            assertTrue(carried.carriers.get(0).isClosed());
        } finally {
            // release first: closing the executor waits for its held transfer
            CliTestHooks.release();
            if (closer != null) {
                closer.join();
            }
            if (transfer != null) {
                transfer.await();
                transfer.close();
            }
            if (host != null) {
                host.close();
            }
            all.close();
            executor.close();
            for (DeviceKvPool memory : backing) {
                memory.close(); // only now: the transfer read this memory
            }
        }
    }

    /**
     * MatrixRunner.eachLayer (the per_layer loop) with three layers of HOLDABLE backups, all held
     * until a releaser lets them go a second later, and {@code failure} breaking the loop: it must
     * not return before every submitted layer is complete.
     */
    private static void runLayersThatFail(boolean failAtSubmit) throws InterruptedException {
        long[] slots = new long[4096];
        for (int i = 0; i < slots.length; i++) slots[i] = i;
        List<Transfer> submitted = new ArrayList<>();
        Thread releaser =
                new Thread(
                        () -> {
                            try {
                                Thread.sleep(1000);
                            } catch (InterruptedException e) {
                                Thread.currentThread().interrupt();
                            }
                            CliTestHooks.release();
                        },
                        "releaser");
        KvioExecutor executor = KvioExecutor.create(IoBackend.CPU, 2);
        TokenIndices all = TokenIndices.of(slots);
        DeviceKvPool device = DeviceKvPool.allocate(HOLDABLE, IoBackend.CPU);
        HostKvPool host =
                HostKvPool.builder()
                        .forDevice(device)
                        .layout(KvLayout.LAYER_FIRST)
                        .executor(executor)
                        .build();
        try {
            CliTestHooks.holdCpuTransfers(100);
            if (!failAtSubmit) {
                CliTestHooks.failCpuCopies(1); // layer 0's transfer fails: its await throws
            }
            releaser.start();
            RuntimeException thrown =
                    expectThrows(
                            RuntimeException.class,
                            () ->
                                    MatrixRunner.eachLayer(
                                            3,
                                            j -> {
                                                if (failAtSubmit && j == 2) {
                                                    throw new IllegalStateException("refused");
                                                }
                                                Transfer t =
                                                        host.backup(device)
                                                                .hostIndices(all)
                                                                .deviceIndices(all)
                                                                .submit();
                                                submitted.add(t);
                                                return t;
                                            }));
            assertTrue(
                    thrown.getMessage().contains(failAtSubmit ? "refused" : "fault injected"),
                    thrown.toString());
            assertEquals(submitted.size(), failAtSubmit ? 2 : 3);
            for (Transfer t : submitted) {
                // awaited (done), not merely closed (isDone would throw) or left running (false)
                assertTrue(t.isDone(), "a layer submitted was left running");
            }
        } finally {
            CliTestHooks.release();
            releaser.join();
            for (Transfer t : submitted) {
                try {
                    t.await();
                } catch (RuntimeException e) {
                    // the failed layer, or closed
                }
                t.close();
            }
            host.close();
            device.close();
            all.close();
            executor.close();
        }
    }

    @Test(timeOut = 60_000)
    public void aLayerWhoseTransferFailsLeavesNoLayerRunning() throws InterruptedException {
        runLayersThatFail(false);
    }

    @Test(timeOut = 60_000)
    public void aLayerWhoseSubmitFailsLeavesNoLayerRunning() throws InterruptedException {
        runLayersThatFail(true);
    }
}
