/*
 * The CLI's pool readers close the pool they allocated when their constructor fails after it,
 * instead of leaving it open for the Cleaner: DeviceMirror (its host shadow of a device pool).
 * Counted with the native live-object counters. (The matrix's PoolAccess allocates no pool.)
 */
package io.kvio.cli;

import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertFalse;
import static org.testng.Assert.assertSame;
import static org.testng.Assert.assertTrue;
import static org.testng.Assert.expectThrows;

import io.kvio.DeviceKvPool;
import io.kvio.IoBackend;
import io.kvio.NativeCounts;
import io.kvio.PoolSpec;
import java.io.IOException;
import org.testng.annotations.Test;

public class FailedConstructorTest {
    /** An mha, layer_first pool (the defaults) of 64 token slots. */
    private static final PoolSpec SPEC =
            PoolSpec.builder().layers(2).pages(4).pageSize(16).heads(1).headBytes(64).build();

    @Test
    public void deviceMirrorClosesItsShadowWhenItsRegionFails() {
        try (DeviceKvPool device = DeviceKvPool.allocate(SPEC, IoBackend.CPU)) {
            long before = NativeCounts.settledPools();
            DeviceKvPool shadow = DeviceKvPool.allocate(SPEC, IoBackend.CPU);
            IllegalStateException e =
                    expectThrows(
                            IllegalStateException.class,
                            () ->
                                    new DeviceMirror(
                                            device,
                                            shadow,
                                            pool -> {
                                                assertSame(pool, shadow, "seen through the shadow");
                                                throw new IllegalStateException("no region");
                                            }));
            assertEquals(e.getMessage(), "no region");
            assertTrue(shadow.isClosed(), "the shadow is closed at once");
            assertFalse(device.isClosed(), "the caller's pool stays open");
            // At most as many as before: the shadow's handle is closed. (Settled above, so only
            // an earlier test's pool the Cleaner closed meanwhile could take it below.)
            long after = NativeCounts.pools();
            assertTrue(after <= before, after + " pools open, " + before + " before the shadow");
        }
    }

    @Test
    public void aFailureToCloseIsAddedAsSuppressed() {
        IllegalStateException failure = new IllegalStateException("constructor failed");
        IOException closeFailure = new IOException("close failed");
        Cleanup.closeAfter(
                failure,
                () -> {
                    throw closeFailure;
                });
        assertEquals(failure.getSuppressed().length, 1);
        assertSame(failure.getSuppressed()[0], closeFailure);
        Cleanup.closeAfter(failure, null); // nothing to close
        assertEquals(failure.getSuppressed().length, 1);
    }
}
