/*
 * `roundtrip` verifies every byte of both pools, not only the moved rows: a stray byte in the
 * part of the host pool's last page that no token is backed up into (--tokens not a multiple of
 * --page-size), or a change to a device page the load must not touch (a backup source), fails the
 * run; so does the host canary (the unused rest of the host's last page) copied onto a device
 * slot that is not a load target, which only canaries that are not zeros (nor one constant) and
 * differ by pool and position show. The stray bytes are written through RoundTrip's test seam
 * after the timed transfer, at the offsets the oracle's geometry gives (never kvio's layout code).
 */
package io.kvio.cli;

import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertTrue;

import io.kvio.IoBackend;
import io.kvio.KvLayout;
import io.kvio.PoolKind;
import io.kvio.oracle.Geometry;
import io.kvio.oracle.Shape;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import org.testng.annotations.Test;

public class RoundTripVerifyTest {
    private static final long TOKENS = 300; // 18 whole pages of 16 and a tail of 12
    private static final long PAGE_SIZE = 16;
    private static final long LAYERS = 3;
    private static final long HEADS = 2;
    private static final long HEAD_BYTES = 64; // 32 elements of 2 bytes

    private static RoundTripOptions options(KvLayout layout) {
        RoundTripOptions o = new RoundTripOptions();
        o.tokens = TOKENS;
        o.layers = LAYERS;
        o.pageSize = PAGE_SIZE;
        o.heads = HEADS;
        o.headDim = HEAD_BYTES / 2;
        o.dtypeBytes = 2;
        o.kind = PoolKind.MHA;
        o.backend = IoBackend.CPU;
        o.threads = 2;
        o.layouts = List.of(layout);
        return o;
    }

    /** Changes to the pools made after the timed transfer, as the run verifies them. */
    private interface Tamper {
        void change(PoolRegion host, PoolRegion device);
    }

    /** Every step runs; `tamper` changes the pools as the run verifies step `when`. */
    private static RoundTrip.Steps tamperingAt(RoundTrip.Step when, Tamper tamper) {
        return new RoundTrip.Steps() {
            @Override
            public boolean run(KvLayout l, RoundTrip.Step step) {
                return true;
            }

            @Override
            public void verifying(
                    KvLayout l, RoundTrip.Step step, PoolRegion host, PoolRegion device) {
                if (step == when) tamper.change(host, device);
            }
        };
    }

    private static String run(KvLayout layout, RoundTrip.Steps steps, int expectedExit) {
        StringWriter out = new StringWriter();
        int exit =
                new RoundTrip(
                                options(layout),
                                new PrintWriter(out, true),
                                new PrintWriter(new StringWriter(), true),
                                steps)
                        .run();
        assertEquals(exit, expectedExit, out.toString());
        return out.toString();
    }

    @Test
    public void aStrayByteInTheUnusedRestOfTheLastHostPageFails() {
        for (KvLayout layout : KvLayout.values()) {
            long hostPages = TOKENS / PAGE_SIZE + 1;
            Geometry host =
                    new Geometry(
                            2,
                            Shape.of(layout.userName()),
                            LAYERS,
                            hostPages,
                            PAGE_SIZE,
                            HEADS,
                            HEAD_BYTES);
            long lastSlot = hostPages * PAGE_SIZE - 1; // no token is backed up into it
            long head = host.offset(1, 2, lastSlot, 1);
            byte[] canaryHead = new byte[(int) HEAD_BYTES]; // the head as the backup left it
            String out =
                    run(
                            layout,
                            tamperingAt(
                                    RoundTrip.Step.BACKUP,
                                    (hostPool, device) -> {
                                        for (int b = 0; b < HEAD_BYTES; b++) {
                                            canaryHead[b] = hostPool.getByte(head + b);
                                        }
                                        hostPool.putByte(head + 5, (byte) ~canaryHead[5]);
                                    }),
                            Main.EXIT_FAILED);
            assertTrue(
                    out.contains(
                            "host token "
                                    + lastSlot
                                    + " (not a backup target) component 1 layer 2 head 1 byte 5"),
                    layout + ": " + out);
            assertTrue(
                    out.contains(
                            String.format(
                                    Locale.ROOT,
                                    "was written: 0x%02x, expected 0x%02x (canary)",
                                    ~canaryHead[5] & 0xff,
                                    canaryHead[5] & 0xff)),
                    layout + ": " + out);
            assertTrue(
                    Arrays.mismatch(canaryHead, new byte[(int) HEAD_BYTES]) >= 0,
                    layout + ": the host canary is zeros");
        }
    }

    /**
     * A load that also copied the unused rest of the host's last page (the host canary) onto a
     * device slot of a cleared page that is not a load target fails the run: the canaries are
     * seeded per pool and laid out by position, so the host's canary bytes are not the device
     * canary of that slot (with zeros on both sides, or one constant, it went unseen).
     */
    @Test
    public void theHostCanaryOnADeviceSlotThatIsNotALoadTargetFails() {
        RoundTripPlan plan =
                new RoundTripPlan(TOKENS, PAGE_SIZE, options(KvLayout.LAYER_FIRST).seed);
        long hostPages = TOKENS / PAGE_SIZE + 1;
        long unusedHostSlot = hostPages * PAGE_SIZE - 1; // no token is backed up into it
        Geometry host =
                new Geometry(2, Shape.LAYER_FIRST, LAYERS, hostPages, PAGE_SIZE, HEADS, HEAD_BYTES);
        Geometry device =
                new Geometry(
                        2,
                        Shape.LAYER_FIRST,
                        LAYERS,
                        plan.devicePages,
                        PAGE_SIZE,
                        HEADS,
                        HEAD_BYTES);
        // a slot of the last cleared page (a page of the scattered tail) that no load writes
        long cleared = plan.clearedPages[plan.clearedPages.length - 1];
        long notTarget = -1;
        for (long t = cleared * PAGE_SIZE; t < (cleared + 1) * PAGE_SIZE && notTarget < 0; t++) {
            long slot = t;
            if (Arrays.stream(plan.devDst).noneMatch(d -> d == slot)) notTarget = t;
        }
        assertTrue(notTarget >= 0, "every slot of the last cleared page is a load target");
        long target = notTarget;
        long rowBytes = HEADS * HEAD_BYTES; // a row of layer_first [L, P*ps, H, D] is contiguous
        String out =
                run(
                        KvLayout.LAYER_FIRST,
                        tamperingAt(
                                RoundTrip.Step.LOAD,
                                (hostPool, devicePool) -> {
                                    long from = host.offset(0, 1, unusedHostSlot, 0);
                                    long to = device.offset(0, 1, target, 0);
                                    for (long b = 0; b < rowBytes; b++) {
                                        devicePool.putByte(to + b, hostPool.getByte(from + b));
                                    }
                                }),
                        Main.EXIT_FAILED);
        assertTrue(
                out.contains(
                        "device token "
                                + target
                                + " (not a load target) component 0 layer 1 byte "),
                out);
    }

    @Test
    public void aChangedBackupSourcePageOnTheDeviceFails() {
        RoundTripPlan plan =
                new RoundTripPlan(TOKENS, PAGE_SIZE, options(KvLayout.LAYER_FIRST).seed);
        Geometry device =
                new Geometry(
                        2,
                        Shape.LAYER_FIRST,
                        LAYERS,
                        plan.devicePages,
                        PAGE_SIZE,
                        HEADS,
                        HEAD_BYTES);
        long source = plan.devSrc[0];
        String out =
                run(
                        KvLayout.LAYER_FIRST,
                        tamperingAt(
                                RoundTrip.Step.LOAD,
                                (hostPool, devicePool) -> {
                                    long at = device.offset(0, 1, source, 0) + 3;
                                    devicePool.putByte(at, (byte) ~devicePool.getByte(at));
                                }),
                        Main.EXIT_FAILED);
        assertTrue(
                out.contains(
                        "device (not a load target: unchanged) token "
                                + source
                                + " component 0 layer 1 row byte 3"),
                out);
    }

    @Test
    public void untouchedPoolsVerify() {
        String out = run(KvLayout.PAGE_HEAD, RoundTrip.Steps.ALL, Main.EXIT_OK);
        assertTrue(out.contains("the layout verified OK"), out);
    }
}
