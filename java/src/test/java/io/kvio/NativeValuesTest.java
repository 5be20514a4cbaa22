/*
 * The values the Java API maps by (KvioNative's constants, each enum's nativeValue(), the struct
 * offsets NativeBridge marshals at) against kvio.h as the C compiler sees it, read through the
 * test-only binding KvioTestNative, against the native name tables, keyed by native value, and
 * against kvio_enums.def (the one definition kvio.h and the name tables are generated from), read
 * here as text: every value it lists must have its Java constant, with the same value and name.
 * Nothing here relies on declaration order: reordering an enum must not change what crosses JNI.
 */
package io.kvio;

import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertNull;
import static org.testng.Assert.assertSame;

import io.kvio.KvioNative.PoolSpecStruct;
import io.kvio.KvioNative.SubmitOptionsStruct;
import io.kvio.KvioNative.SupportQueryStruct;
import io.kvio.KvioNative.TransferDescStruct;
import io.kvio.KvioNative.TransferInfoStruct;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.ToIntFunction;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.testng.annotations.Test;

public class NativeValuesTest {

    @Test
    public void poolKindsMapByTheHeadersValues() {
        assertEquals(PoolKind.MHA.nativeValue(), KvioTestNative.KVIO_KIND_MHA());
        assertEquals(PoolKind.MLA.nativeValue(), KvioTestNative.KVIO_KIND_MLA());
        assertEquals(PoolKind.values().length, KvioTestNative.KVIO_KIND_COUNT());
        checkNames(KvioNative.KVIO_NAME_KIND, PoolKind.values(), PoolKind::nativeValue);
        for (PoolKind k : PoolKind.values()) {
            assertSame(PoolKind.ofNative(k.nativeValue()), k);
        }
        assertNull(PoolKind.ofNative(KvioTestNative.KVIO_KIND_COUNT()));
    }

    @Test
    public void layoutsMapByTheHeadersValues() {
        assertEquals(KvLayout.LAYER_FIRST.nativeValue(), KvioTestNative.KVIO_LAYOUT_LAYER_FIRST());
        assertEquals(KvLayout.PAGE_FIRST.nativeValue(), KvioTestNative.KVIO_LAYOUT_PAGE_FIRST());
        assertEquals(
                KvLayout.PAGE_FIRST_DIRECT.nativeValue(),
                KvioTestNative.KVIO_LAYOUT_PAGE_FIRST_DIRECT());
        assertEquals(KvLayout.PAGE_HEAD.nativeValue(), KvioTestNative.KVIO_LAYOUT_PAGE_HEAD());
        assertEquals(KvLayout.values().length, KvioTestNative.KVIO_LAYOUT_COUNT());
        checkNames(KvioNative.KVIO_NAME_LAYOUT, KvLayout.values(), KvLayout::nativeValue);
        for (KvLayout l : KvLayout.values()) {
            assertSame(KvLayout.ofNative(l.nativeValue()), l);
        }
        assertNull(KvLayout.ofNative(KvioTestNative.KVIO_LAYOUT_COUNT()));
    }

    @Test
    public void ioBackendsMapByTheHeadersValues() {
        assertEquals(IoBackend.CPU.nativeValue(), KvioTestNative.KVIO_BACKEND_CPU());
        assertEquals(IoBackend.KERNEL.nativeValue(), KvioTestNative.KVIO_BACKEND_KERNEL());
        assertEquals(IoBackend.DIRECT.nativeValue(), KvioTestNative.KVIO_BACKEND_DIRECT());
        assertEquals(
                IoBackend.KERNEL_ASCEND.nativeValue(), KvioTestNative.KVIO_BACKEND_KERNEL_ASCEND());
        assertEquals(IoBackend.AUTO.nativeValue(), KvioTestNative.KVIO_BACKEND_AUTO());
        assertEquals(IoBackend.STAGED.nativeValue(), KvioTestNative.KVIO_BACKEND_STAGED());
        assertEquals(IoBackend.values().length, KvioTestNative.KVIO_BACKEND_COUNT());
        assertEquals(
                KvioNative.KVIO_SUBMIT_OVERLAPS_COMPUTE,
                KvioTestNative.KVIO_SUBMIT_OVERLAPS_COMPUTE());
        assertEquals(KvioNative.KVIO_SUBMIT_QUEUE_ONLY, KvioTestNative.KVIO_SUBMIT_QUEUE_ONLY());
        checkNames(KvioNative.KVIO_NAME_BACKEND, IoBackend.values(), IoBackend::nativeValue);
        for (IoBackend b : IoBackend.values()) {
            assertSame(IoBackend.ofNative(b.nativeValue()), b);
        }
        assertNull(IoBackend.ofNative(KvioTestNative.KVIO_BACKEND_COUNT()));
    }

    @Test
    public void granularitiesMapByTheHeadersValues() {
        assertEquals(
                Granularity.PER_LAYER.nativeValue(), KvioTestNative.KVIO_GRANULARITY_PER_LAYER());
        assertEquals(
                Granularity.ALL_LAYER.nativeValue(), KvioTestNative.KVIO_GRANULARITY_ALL_LAYER());
        assertEquals(Granularity.values().length, KvioTestNative.KVIO_GRANULARITY_COUNT());
        checkNames(
                KvioNative.KVIO_NAME_GRANULARITY, Granularity.values(), Granularity::nativeValue);
        for (Granularity g : Granularity.values()) {
            assertSame(Granularity.ofNative(g.nativeValue()), g);
        }
        assertNull(Granularity.ofNative(KvioTestNative.KVIO_GRANULARITY_COUNT()));
    }

    @Test
    public void statusesMapByTheHeadersValues() {
        assertEquals(KvioNative.KVIO_STATUS_OK, KvioTestNative.KVIO_STATUS_OK());
        assertEquals(KvioNative.KVIO_STATUS_TIMEOUT, KvioTestNative.KVIO_STATUS_TIMEOUT());
        assertStatus(
                KvioException.Status.INVALID_ARGUMENT,
                KvioTestNative.KVIO_STATUS_INVALID_ARGUMENT());
        assertStatus(KvioException.Status.OUT_OF_RANGE, KvioTestNative.KVIO_STATUS_OUT_OF_RANGE());
        assertStatus(KvioException.Status.UNSUPPORTED, KvioTestNative.KVIO_STATUS_UNSUPPORTED());
        assertStatus(KvioException.Status.UNAVAILABLE, KvioTestNative.KVIO_STATUS_UNAVAILABLE());
        assertStatus(KvioException.Status.CLOSED, KvioTestNative.KVIO_STATUS_CLOSED());
        assertStatus(
                KvioException.Status.OUT_OF_MEMORY, KvioTestNative.KVIO_STATUS_OUT_OF_MEMORY());
        assertStatus(
                KvioException.Status.BACKEND_ERROR, KvioTestNative.KVIO_STATUS_BACKEND_ERROR());
        assertStatus(KvioException.Status.TIMEOUT, KvioTestNative.KVIO_STATUS_TIMEOUT());
        assertStatus(KvioException.Status.INTERNAL, KvioTestNative.KVIO_STATUS_INTERNAL());
        for (KvioException.Status s : KvioException.Status.values()) {
            assertEquals(KvioNative.kvio_status_name(s.code()), s.name(), "kvio_status_name");
        }
    }

    @Test
    public void memoryKindsNameTablesAndCopyDirectionsAreTheHeaders() {
        assertEquals(KvioNative.KVIO_MEMORY_HOST, KvioTestNative.KVIO_MEMORY_HOST());
        assertEquals(KvioNative.KVIO_MEMORY_HOST_PINNED, KvioTestNative.KVIO_MEMORY_HOST_PINNED());
        assertEquals(KvioNative.KVIO_MEMORY_CUDA_DEVICE, KvioTestNative.KVIO_MEMORY_CUDA_DEVICE());
        assertEquals(
                KvioNative.KVIO_MEMORY_ASCEND_DEVICE, KvioTestNative.KVIO_MEMORY_ASCEND_DEVICE());
        assertEquals(
                KvioNative.KVIO_MEMORY_ASCEND_HOST_PINNED,
                KvioTestNative.KVIO_MEMORY_ASCEND_HOST_PINNED());
        assertEquals(KvioTestNative.KVIO_MEMORY_COUNT(), 5, "a new memory kind needs a name");
        assertEquals(TransferEvent.memory(KvioTestNative.KVIO_MEMORY_HOST()), "host");
        assertEquals(TransferEvent.memory(KvioTestNative.KVIO_MEMORY_HOST_PINNED()), "host_pinned");
        assertEquals(TransferEvent.memory(KvioTestNative.KVIO_MEMORY_CUDA_DEVICE()), "cuda_device");
        assertEquals(
                TransferEvent.memory(KvioTestNative.KVIO_MEMORY_ASCEND_DEVICE()), "ascend_device");
        assertEquals(
                TransferEvent.memory(KvioTestNative.KVIO_MEMORY_ASCEND_HOST_PINNED()),
                "ascend_host_pinned");
        assertEquals(KvioNative.KVIO_NAME_KIND, KvioTestNative.KVIO_NAME_KIND());
        assertEquals(KvioNative.KVIO_NAME_LAYOUT, KvioTestNative.KVIO_NAME_LAYOUT());
        assertEquals(KvioNative.KVIO_NAME_BACKEND, KvioTestNative.KVIO_NAME_BACKEND());
        assertEquals(KvioNative.KVIO_NAME_GRANULARITY, KvioTestNative.KVIO_NAME_GRANULARITY());
        assertEquals(KvioNative.KVIO_NAME_MEMORY, KvioTestNative.KVIO_NAME_MEMORY());
        assertEquals(KvioNative.KVIO_COPY_POOL_TO_HOST, KvioTestNative.KVIO_COPY_POOL_TO_HOST());
        assertEquals(KvioNative.KVIO_COPY_HOST_TO_POOL, KvioTestNative.KVIO_COPY_HOST_TO_POOL());
        assertEquals(
                KvioTestNative.KVIO_TEST_FAULT_HOST_ALLOCATION,
                KvioTestNative.KVIO_TEST_FAULT_HOST_ALLOCATION());
        assertEquals(
                KvioTestNative.KVIO_TEST_FAULT_CPU_COPY, KvioTestNative.KVIO_TEST_FAULT_CPU_COPY());
        assertEquals(
                KvioTestNative.KVIO_TEST_FAULT_CPU_HOLD, KvioTestNative.KVIO_TEST_FAULT_CPU_HOLD());
        assertEquals(
                KvioTestNative.KVIO_TEST_FAULT_CPU_THREAD,
                KvioTestNative.KVIO_TEST_FAULT_CPU_THREAD());
        assertEquals(
                KvioTestNative.KVIO_TEST_FAULT_NO_POPULATE,
                KvioTestNative.KVIO_TEST_FAULT_NO_POPULATE());
    }

    @Test
    public void poolSpecOffsetsAreTheCompilers() {
        assertEquals(PoolSpecStruct.BYTES, KvioTestNative.sizeofPoolSpec());
        assertEquals(PoolSpecStruct.KIND, KvioTestNative.poolSpecKind());
        assertEquals(PoolSpecStruct.LAYOUT, KvioTestNative.poolSpecLayout());
        assertEquals(PoolSpecStruct.NUM_LAYERS, KvioTestNative.poolSpecNumLayers());
        assertEquals(PoolSpecStruct.NUM_PAGES, KvioTestNative.poolSpecNumPages());
        assertEquals(PoolSpecStruct.PAGE_SIZE, KvioTestNative.poolSpecPageSize());
        assertEquals(PoolSpecStruct.HEAD_NUM, KvioTestNative.poolSpecHeadNum());
        assertEquals(PoolSpecStruct.HEAD_BYTES, KvioTestNative.poolSpecHeadBytes());
    }

    @Test
    public void supportQueryOffsetsAreTheCompilers() {
        assertEquals(SupportQueryStruct.BYTES, KvioTestNative.sizeofSupportQuery());
        assertEquals(SupportQueryStruct.KIND, KvioTestNative.supportQueryKind());
        assertEquals(SupportQueryStruct.LAYOUT, KvioTestNative.supportQueryLayout());
        assertEquals(SupportQueryStruct.IO_BACKEND, KvioTestNative.supportQueryIoBackend());
        assertEquals(SupportQueryStruct.GRANULARITY, KvioTestNative.supportQueryGranularity());
        assertEquals(SupportQueryStruct.HEAD_NUM, KvioTestNative.supportQueryHeadNum());
        assertEquals(SupportQueryStruct.HEAD_BYTES, KvioTestNative.supportQueryHeadBytes());
        assertEquals(SupportQueryStruct.PAGE_SIZE, KvioTestNative.supportQueryPageSize());
        assertEquals(
                SupportQueryStruct.HOST_NUM_LAYERS, KvioTestNative.supportQueryHostNumLayers());
        assertEquals(
                SupportQueryStruct.DEVICE_NUM_LAYERS, KvioTestNative.supportQueryDeviceNumLayers());
        assertEquals(
                SupportQueryStruct.DEVICE_LAYER_START,
                KvioTestNative.supportQueryDeviceLayerStart());
    }

    @Test
    public void transferDescOffsetsAreTheCompilers() {
        assertEquals(TransferDescStruct.BYTES, KvioTestNative.sizeofTransferDesc());
        assertEquals(TransferDescStruct.SRC_POOL, KvioTestNative.transferDescSrcPool());
        assertEquals(TransferDescStruct.DST_POOL, KvioTestNative.transferDescDstPool());
        assertEquals(TransferDescStruct.SRC_INDICES, KvioTestNative.transferDescSrcIndices());
        assertEquals(TransferDescStruct.DST_INDICES, KvioTestNative.transferDescDstIndices());
        assertEquals(TransferDescStruct.NUM_INDICES, KvioTestNative.transferDescNumIndices());
        assertEquals(
                TransferDescStruct.SRC_LAYER_START, KvioTestNative.transferDescSrcLayerStart());
        assertEquals(
                TransferDescStruct.DST_LAYER_START, KvioTestNative.transferDescDstLayerStart());
        assertEquals(TransferDescStruct.NUM_LAYERS, KvioTestNative.transferDescNumLayers());
    }

    @Test
    public void submitOptionsOffsetsAreTheCompilers() {
        // Java fills every field of the version it maps and sets struct_size to BYTES: the first
        // version's size, which any kvio that has kvio_submit_with reads.
        assertEquals(SubmitOptionsStruct.BYTES, KvioTestNative.sizeofSubmitOptions());
        assertEquals(SubmitOptionsStruct.BYTES, KvioTestNative.KVIO_SUBMIT_OPTIONS_MIN_SIZE());
        assertEquals(KvioNative.KVIO_INDICES_HOST, KvioTestNative.KVIO_INDICES_HOST());
        assertEquals(SubmitOptionsStruct.STRUCT_SIZE, KvioTestNative.submitOptionsStructSize());
        assertEquals(SubmitOptionsStruct.FLAGS, KvioTestNative.submitOptionsFlags());
        assertEquals(SubmitOptionsStruct.CTA_BUDGET, KvioTestNative.submitOptionsCtaBudget());
        assertEquals(SubmitOptionsStruct.WARPS_PER_CTA, KvioTestNative.submitOptionsWarpsPerCta());
        assertEquals(
                SubmitOptionsStruct.INDICES_MEMORY, KvioTestNative.submitOptionsIndicesMemory());
        assertEquals(SubmitOptionsStruct.RESERVED, KvioTestNative.submitOptionsReserved());
    }

    @Test
    public void transferInfoOffsetsAreTheCompilers() {
        assertEquals(TransferInfoStruct.BYTES, KvioTestNative.sizeofTransferInfo());
        assertEquals(TransferInfoStruct.RESERVED, KvioTestNative.transferInfoReserved());
        assertEquals(TransferInfoStruct.IO_BACKEND, KvioTestNative.transferInfoIoBackend());
        assertEquals(TransferInfoStruct.SRC_LAYOUT, KvioTestNative.transferInfoSrcLayout());
        assertEquals(TransferInfoStruct.DST_LAYOUT, KvioTestNative.transferInfoDstLayout());
        assertEquals(TransferInfoStruct.SRC_MEMORY, KvioTestNative.transferInfoSrcMemory());
        assertEquals(TransferInfoStruct.DST_MEMORY, KvioTestNative.transferInfoDstMemory());
        assertEquals(TransferInfoStruct.COMPONENTS, KvioTestNative.transferInfoComponents());
        assertEquals(TransferInfoStruct.NUM_INDICES, KvioTestNative.transferInfoNumIndices());
        assertEquals(TransferInfoStruct.NUM_LAYERS, KvioTestNative.transferInfoNumLayers());
        assertEquals(TransferInfoStruct.BYTES_MOVED, KvioTestNative.transferInfoBytes());
        assertEquals(TransferInfoStruct.COPIES, KvioTestNative.transferInfoCopies());
        assertEquals(TransferInfoStruct.LAUNCHES, KvioTestNative.transferInfoLaunches());
        assertEquals(TransferInfoStruct.SUBMIT_NS, KvioTestNative.transferInfoSubmitNs());
        assertEquals(TransferInfoStruct.START_NS, KvioTestNative.transferInfoStartNs());
        assertEquals(TransferInfoStruct.END_NS, KvioTestNative.transferInfoEndNs());
        assertEquals(TransferInfoStruct.DONE, KvioTestNative.transferInfoDone());
        assertEquals(TransferInfoStruct.STATUS, KvioTestNative.transferInfoStatus());
        assertEquals(TransferInfoStruct.CHOSEN_BACKEND, KvioTestNative.transferInfoChosenBackend());
        assertEquals(
                TransferInfoStruct.OVERLAPS_COMPUTE, KvioTestNative.transferInfoOverlapsCompute());
    }

    @Test
    public void javaEnumsAreTheDefinitionFile() throws Exception {
        Map<String, List<String[]>> def = definitions();
        assertEquals(
                def.keySet(),
                java.util.Set.of(
                        "STATUS",
                        "KIND",
                        "LAYOUT",
                        "BACKEND",
                        "GRANULARITY",
                        "MEMORY",
                        "NAME_TABLE"),
                "the tables of kvio_enums.def (a new one needs its check here)");
        checkEnum(def.get("KIND"), "KVIO_KIND_", PoolKind.class, PoolKind::nativeValue);
        checkEnum(def.get("LAYOUT"), "KVIO_LAYOUT_", KvLayout.class, KvLayout::nativeValue);
        checkEnum(def.get("BACKEND"), "KVIO_BACKEND_", IoBackend.class, IoBackend::nativeValue);
        checkEnum(
                def.get("GRANULARITY"),
                "KVIO_GRANULARITY_",
                Granularity.class,
                Granularity::nativeValue);
        // Statuses: OK and every KvioException.Status, by code.
        List<String[]> statuses = def.get("STATUS");
        assertEquals(statuses.size(), KvioException.Status.values().length + 1, "statuses");
        for (String[] row : statuses) {
            int value = Integer.parseInt(row[1]);
            if (row[0].equals("OK")) {
                assertEquals(KvioNative.KVIO_STATUS_OK, value, "OK");
            } else {
                assertEquals(KvioException.Status.valueOf(row[0]).code(), value, row[0]);
            }
        }
        // Memory kinds (ID, CppName, value, "name"): KvioNative's constant and the name
        // TransferEvent reports.
        for (String[] row : def.get("MEMORY")) {
            int value = Integer.parseInt(row[2]);
            assertEquals(constant("KVIO_MEMORY_" + row[0]), value, row[0]);
            assertEquals(TransferEvent.memory(value), unquote(row[3]), row[0]);
        }
        assertEquals(def.get("MEMORY").size(), KvioTestNative.KVIO_MEMORY_COUNT(), "memory kinds");
        for (String[] row : def.get("NAME_TABLE")) {
            assertEquals(constant("KVIO_NAME_" + row[0]), Integer.parseInt(row[1]), row[0]);
        }
    }

    /** Rows of a named table: ID, CppName, value, "name"; each is a Java constant ID. */
    private static <E extends Enum<E>> void checkEnum(
            List<String[]> rows, String prefix, Class<E> type, ToIntFunction<E> nativeValue)
            throws ReflectiveOperationException {
        assertEquals(rows.size(), type.getEnumConstants().length, type.getSimpleName());
        for (String[] row : rows) {
            E e = Enum.valueOf(type, row[0]);
            int value = Integer.parseInt(row[2]);
            assertEquals(nativeValue.applyAsInt(e), value, type.getSimpleName() + "." + row[0]);
            assertEquals(e.toString(), unquote(row[3]), type.getSimpleName() + "." + row[0]);
            assertEquals(constant(prefix + row[0]), value, prefix + row[0]);
        }
    }

    private static final Pattern DEF_LINE = Pattern.compile("^KVIO_DEF_(\\w+)\\(([^)]*)\\)");

    /** kvio_enums.def's value lines by table, in file order, each split into its arguments. */
    static Map<String, List<String[]>> definitions() throws IOException {
        // -Dkvio.enums.def names it; else it is found from the working directory (the module's
        // folder under Maven, the repository root for scripts/jni-sanitize-check.sh).
        String named = System.getProperty("kvio.enums.def");
        Path file =
                named != null
                        ? Paths.get(named)
                        : Paths.get("../native/include/kvio/kvio_enums.def");
        if (named == null && !Files.exists(file)) {
            file = Paths.get("native/include/kvio/kvio_enums.def");
        }
        Map<String, List<String[]>> tables = new LinkedHashMap<>();
        for (String line : Files.readAllLines(file)) {
            Matcher m = DEF_LINE.matcher(line);
            if (m.find()) {
                String[] args = m.group(2).split(",");
                for (int i = 0; i < args.length; i++) {
                    args[i] = args[i].trim();
                }
                tables.computeIfAbsent(m.group(1), k -> new ArrayList<>()).add(args);
            }
        }
        return tables;
    }

    private static String unquote(String s) {
        assertEquals(s.charAt(0), '"', s);
        assertEquals(s.charAt(s.length() - 1), '"', s);
        return s.substring(1, s.length() - 1);
    }

    private static int constant(String name) throws ReflectiveOperationException {
        return KvioNative.class.getDeclaredField(name).getInt(null);
    }

    /** Each constant's native value names it in the native table; one past the last names none. */
    private static <E extends Enum<E>> void checkNames(
            int table, E[] values, java.util.function.ToIntFunction<E> nativeValue) {
        for (E e : values) {
            assertEquals(
                    NativeBridge.name(table, nativeValue.applyAsInt(e)),
                    e.toString(),
                    "kvio_name(" + table + ", " + nativeValue.applyAsInt(e) + ")");
        }
        assertNull(NativeBridge.name(table, values.length));
    }

    private static void assertStatus(KvioException.Status status, int headerValue) {
        assertEquals(status.code(), headerValue, status.name());
        assertSame(KvioException.Status.of(headerValue), status);
    }
}
