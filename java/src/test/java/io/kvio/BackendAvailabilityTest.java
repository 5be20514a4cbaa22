/*
 * Backend availability as this machine reports it (a build and host without CUDA or Ascend):
 * the CPU backend is available with no cause; the device backends are unavailable with a cause
 * that names what is missing, and ensureAvailability throws. Also checks that the Java enums'
 * user names are exactly the native name tables' strings (the reference's names).
 */
package io.kvio;

import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertFalse;
import static org.testng.Assert.assertNotNull;
import static org.testng.Assert.assertNull;
import static org.testng.Assert.assertSame;
import static org.testng.Assert.assertTrue;
import static org.testng.Assert.expectThrows;

import java.util.Arrays;
import java.util.List;
import java.util.function.Function;
import java.util.stream.Collectors;
import org.testng.annotations.Test;

public class BackendAvailabilityTest {

    /** True when this machine has a usable CUDA device (the gpu test group covers that case). */
    static boolean cudaPresent() {
        return IoBackend.KERNEL.isAvailable();
    }

    /**
     * The device counts agree with the backends' availability: devices where the backend is usable,
     * 0 (not an exception) where it is not.
     */
    @Test
    public void deviceCountsAgreeWithAvailability() {
        assertEquals(Kvio.cudaDeviceCount() > 0, IoBackend.KERNEL.isAvailable());
        assertEquals(Kvio.ascendDeviceCount() > 0, IoBackend.KERNEL_ASCEND.isAvailable());
    }

    @Test
    public void cpuIsAvailable() {
        assertTrue(IoBackend.CPU.isAvailable());
        assertNull(IoBackend.CPU.unavailabilityCause());
        IoBackend.CPU.ensureAvailability();
    }

    /** Which memory each concrete backend moves: the same on every machine. */
    @Test
    public void memoryDomainsOfTheConcreteBackends() {
        for (IoBackend b : new IoBackend[] {IoBackend.KERNEL, IoBackend.DIRECT, IoBackend.STAGED}) {
            assertTrue(b.isCuda(), b.userName());
            assertTrue(b.isDevice(), b.userName());
            assertEquals(b.deviceMemoryKind(), KvioNative.KVIO_MEMORY_CUDA_DEVICE, b.userName());
            assertEquals(b.hostMemoryKind(), KvioNative.KVIO_MEMORY_HOST_PINNED, b.userName());
        }
        assertTrue(IoBackend.KERNEL_ASCEND.isAscend());
        assertFalse(IoBackend.KERNEL_ASCEND.isCuda());
        assertEquals(
                IoBackend.KERNEL_ASCEND.deviceMemoryKind(), KvioNative.KVIO_MEMORY_ASCEND_DEVICE);
        assertFalse(IoBackend.CPU.isDevice());
        assertEquals(IoBackend.CPU.deviceMemoryKind(), KvioNative.KVIO_MEMORY_HOST);
        assertEquals(IoBackend.CPU.hostMemoryKind(), KvioNative.KVIO_MEMORY_HOST);
    }

    /**
     * What auto stands for: the CUDA backends where a CUDA device is usable, else kernel_ascend
     * where an Ascend NPU is, else cpu (the rule, for each machine; and what it is here).
     */
    @Test
    public void autoResolvesToTheHardwareThere() {
        assertEquals(IoBackend.resolveAuto(true, false), IoBackend.KERNEL);
        assertEquals(IoBackend.resolveAuto(true, true), IoBackend.KERNEL);
        assertEquals(IoBackend.resolveAuto(false, true), IoBackend.KERNEL_ASCEND);
        assertEquals(IoBackend.resolveAuto(false, false), IoBackend.CPU);
        IoBackend here =
                IoBackend.resolveAuto(
                        IoBackend.KERNEL.isAvailable(), IoBackend.KERNEL_ASCEND.isAvailable());
        assertEquals(IoBackend.AUTO.resolved(), here);
        assertEquals(IoBackend.AUTO.isCuda(), here == IoBackend.KERNEL);
        assertEquals(IoBackend.AUTO.isAscend(), here == IoBackend.KERNEL_ASCEND);
        assertEquals(IoBackend.AUTO.deviceMemoryKind(), here.deviceMemoryKind());
        assertEquals(IoBackend.AUTO.hostMemoryKind(), here.hostMemoryKind());
    }

    @Test
    public void cudaBackendsUnavailableWithCause() {
        if (cudaPresent()) {
            throw new org.testng.SkipException("CUDA is present on this machine");
        }
        for (IoBackend b : new IoBackend[] {IoBackend.KERNEL, IoBackend.DIRECT, IoBackend.STAGED}) {
            assertFalse(b.isAvailable(), b.userName());
            String cause = b.unavailabilityCause();
            assertNotNull(cause, b.userName());
            assertTrue(cause.contains("CUDA"), cause);
            KvioUnavailableException e =
                    expectThrows(KvioUnavailableException.class, b::ensureAvailability);
            assertTrue(e.getMessage().contains("CUDA"), e.getMessage());
            assertEquals(e.status(), KvioException.Status.UNAVAILABLE);
        }
    }

    @Test
    public void ascendBackendUnavailableWithCause() {
        IoBackend b = IoBackend.KERNEL_ASCEND;
        if (b.isAvailable())
            throw new org.testng.SkipException("Ascend is present on this machine");
        String cause = b.unavailabilityCause();
        assertNotNull(cause);
        assertTrue(cause.contains("Ascend"), cause);
        // The backend is built everywhere; here it says which part of the ACL runtime is missing.
        assertTrue(cause.contains("libascendcl"), cause);
        KvioUnavailableException e =
                expectThrows(KvioUnavailableException.class, b::ensureAvailability);
        assertTrue(e.getMessage().contains("Ascend"), e.getMessage());
    }

    @Test
    public void checkSupportReportsUnavailableBackend() {
        if (cudaPresent()) throw new org.testng.SkipException("CUDA is present on this machine");
        KvioUnavailableException e =
                expectThrows(
                        KvioUnavailableException.class, () -> checkMhaPageFirst(IoBackend.KERNEL));
        assertTrue(e.getMessage().contains("kernel"), e.getMessage());
        assertTrue(e.getMessage().contains("cpu"), "names what is available: " + e.getMessage());
    }

    /** The UNAVAILABLE message of checkSupport carries the requested backend's own cause. */
    @Test
    public void checkSupportGivesTheRequestedBackendsCause() {
        for (IoBackend b : IoBackend.values()) {
            if (b.isAvailable()) continue;
            KvioUnavailableException e =
                    expectThrows(KvioUnavailableException.class, () -> checkMhaPageFirst(b));
            assertTrue(
                    e.getMessage().contains(b.unavailabilityCause()),
                    b.userName()
                            + ": message should carry the backend's own cause '"
                            + b.unavailabilityCause()
                            + "': "
                            + e.getMessage());
        }
    }

    @Test
    public void checkSupportAcceptsEveryCpuConfiguration() {
        for (PoolKind kind : PoolKind.values()) {
            for (KvLayout layout : PoolFixtures.hostLayouts(kind)) {
                for (Granularity g : Granularity.values()) {
                    long heads = kind == PoolKind.MHA ? 8 : 1;
                    // all layers, and a layer-sharded host pool holding device layers [3, 5)
                    Kvio.checkSupport(kind, layout, IoBackend.CPU, g, heads, 576, 64, 8, 8, 0);
                    Kvio.checkSupport(kind, layout, IoBackend.CPU, g, heads, 656, 1, 2, 8, 3);
                }
            }
        }
    }

    @Test
    public void backendNamesMatchNativeTable() {
        assertEquals(
                names(IoBackend.values(), IoBackend::userName),
                List.of("cpu", "kernel", "direct", "kernel_ascend", "auto", "staged"));
        for (IoBackend b : IoBackend.values()) assertSame(IoBackend.parse(b.userName()), b);
    }

    @Test
    public void layoutNamesMatchNativeTable() {
        assertEquals(
                names(KvLayout.values(), KvLayout::userName),
                List.of("layer_first", "page_first", "page_first_direct", "page_head"));
        for (KvLayout l : KvLayout.values()) {
            assertSame(KvLayout.parse(l.userName()), l);
            assertNotNull(l.shape());
            assertFalse(l.shape().isEmpty());
        }
    }

    @Test
    public void kindNamesMatchNativeTable() {
        assertEquals(names(PoolKind.values(), PoolKind::userName), List.of("mha", "mla"));
        assertEquals(PoolKind.MHA.components(), 2);
        assertEquals(PoolKind.MLA.components(), 1);
        for (PoolKind k : PoolKind.values()) assertSame(PoolKind.parse(k.userName()), k);
    }

    @Test
    public void parsingIsCaseSensitiveLikeTheReference() {
        KvioInvalidArgumentException e =
                expectThrows(KvioInvalidArgumentException.class, () -> IoBackend.parse("CPU"));
        assertTrue(e.getMessage().contains("did you mean 'cpu'?"), e.getMessage());
    }

    @Test
    public void aNameWithANulCharacterIsRefused() {
        // The native parser reads a C string: "cpu\0garbage" would be read as "cpu".
        KvioInvalidArgumentException e =
                expectThrows(
                        KvioInvalidArgumentException.class, () -> IoBackend.parse("cpu\0garbage"));
        assertTrue(e.getMessage().contains("NUL character at index 3"), e.getMessage());
        assertTrue(e.getMessage().contains("ioBackend"), e.getMessage());
        expectThrows(KvioInvalidArgumentException.class, () -> KvLayout.parse("page_first\0"));
        expectThrows(KvioInvalidArgumentException.class, () -> PoolKind.parse("mha\0"));
        expectThrows(KvioInvalidArgumentException.class, () -> Granularity.parse("\0per_layer"));
    }

    @Test
    public void versionIsTheNativeVersion() {
        String v = Kvio.version();
        assertNotNull(v);
        assertTrue(v.matches("\\d+\\.\\d+\\.\\d+.*"), v);
    }

    private static <E> List<String> names(E[] values, Function<E, String> userName) {
        return Arrays.stream(values).map(userName).collect(Collectors.toList());
    }

    /** The support check of an mha page_first host pool on backend {@code b}, per layer. */
    private static void checkMhaPageFirst(IoBackend b) {
        Kvio.checkSupport(
                PoolKind.MHA, KvLayout.PAGE_FIRST, b, Granularity.PER_LAYER, 8, 256, 64, 32, 32, 0);
    }
}
