/*
 * Test fixture shared by the tests of the host-pool entry points on the cpu backend: before each
 * test a device pool (MHA, 4 layers, 16 pages of 4 = 64 token slots) and a page_first host pool
 * of 8 pages (32 slots) over it; everything opened through open() or idx() is closed after the
 * test, last first. assertRejected canary-fills the given buffers, expects the exception and
 * checks the message and that no byte changed.
 */
package io.kvio;

import static org.testng.Assert.assertNotNull;
import static org.testng.Assert.assertTrue;
import static org.testng.Assert.expectThrows;

import io.kvio.PoolFixtures.Config;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import org.testng.Assert.ThrowingRunnable;
import org.testng.annotations.AfterMethod;
import org.testng.annotations.BeforeMethod;

abstract class CpuPoolsFixture {

    /** Device: MHA, 4 layers, 16 pages of 4 = 64 token slots. Host: 8 pages = 32 slots. */
    static final Config DEVICE = new Config(PoolKind.MHA, 4, 16, 4, 2, 8);

    static final long HOST_PAGES = 8;

    private final List<AutoCloseable> resources = new ArrayList<>();
    DeviceKvPool device;
    HostKvPool host;

    @BeforeMethod
    public void setUp() {
        device = open(DEVICE.allocateDevice());
        host = open(PoolFixtures.host(device, KvLayout.PAGE_FIRST, HOST_PAGES));
    }

    @AfterMethod(alwaysRun = true)
    public void tearDown() throws Exception {
        for (int i = resources.size() - 1; i >= 0; i--) resources.get(i).close();
        resources.clear();
    }

    /** Closes {@code resource} after the test. */
    <T extends AutoCloseable> T open(T resource) {
        resources.add(resource);
        return resource;
    }

    TokenIndices idx(long... slots) {
        return open(TokenIndices.of(slots));
    }

    /** The buffers of the fixture's pools that are still open. */
    List<ByteBuffer> openBuffers() {
        List<ByteBuffer> buffers = new ArrayList<>();
        if (!device.isClosed()) buffers.add(device.buffer());
        if (!host.isClosed()) buffers.add(host.buffer());
        return buffers;
    }

    /**
     * Canary-fills the given buffers, runs the call expecting {@code type}, checks every message
     * fragment and that no buffer changed.
     */
    static <T extends Throwable> T assertRejected(
            Class<T> type, ThrowingRunnable call, List<ByteBuffer> buffers, String... fragments) {
        List<byte[]> before = new ArrayList<>();
        long seed = 77;
        for (ByteBuffer b : buffers) before.add(LayoutOracle.canary(b, seed++));
        T e = expectThrows(type, call);
        assertMessage(e, fragments);
        for (int i = 0; i < buffers.size(); i++) {
            LayoutOracle.assertBytesEqual(
                    LayoutOracle.snapshot(buffers.get(i)),
                    before.get(i),
                    "buffer " + i + " after rejected call (" + e.getMessage() + ")");
        }
        return e;
    }

    static void assertMessage(Throwable e, String... fragments) {
        String m = e.getMessage();
        assertNotNull(m, "exception message");
        for (String f : fragments) {
            assertTrue(m.contains(f), "message should contain '" + f + "': " + m);
        }
    }
}
