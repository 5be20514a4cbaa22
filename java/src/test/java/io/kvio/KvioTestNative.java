/*
 * A test-only JavaCPP binding of kvio.h and native/tests/kvio_test_hooks.h, compiled into its own
 * JNI library (libjniKvioTestNative.so under target/test-classes, by the pom's javacpp-test-jni
 * execution, linked against the test variant of libkvio.so that the test-natives execution puts
 * beside it) so the shipped bridge and library bind and export no test hook: fault injection (kvio_test_inject_fault, docs/reliability.md), and the values of
 * the header's enum constants and struct offsets as the C compiler sees them, which
 * NativeValuesTest compares with the values the Java API maps by (KvioNative).
 */
package io.kvio;

import org.bytedeco.javacpp.Loader;
import org.bytedeco.javacpp.annotation.Cast;
import org.bytedeco.javacpp.annotation.MemberGetter;
import org.bytedeco.javacpp.annotation.Name;
import org.bytedeco.javacpp.annotation.NoException;
import org.bytedeco.javacpp.annotation.Platform;

@Platform(
        include = {"stddef.h", "kvio/kvio.h", "kvio_test_hooks.h"},
        link = "kvio")
@NoException
final class KvioTestNative {
    static {
        NativeBridge.ensureLoaded(); // libkvio.so first, from the same place as the bridge's
        Loader.load(KvioTestNative.class);
    }

    private KvioTestNative() {}

    static final int KVIO_TEST_FAULT_HOST_ALLOCATION = 1;
    static final int KVIO_TEST_FAULT_CPU_COPY = 2;

    /**
     * The next cpu transfers over 8 MiB or submitted queue-only stop before copying until {@code
     * injectFault(this, 0)} releases them (kvio_test_hooks.h).
     */
    static final int KVIO_TEST_FAULT_CPU_HOLD = 3;

    /**
     * The next cpu executor created with 2 or more threads fails to start its second worker thread
     * (OUT_OF_MEMORY naming it; kvio_test_hooks.h).
     */
    static final int KVIO_TEST_FAULT_CPU_THREAD = 4;

    /**
     * The next {@code count} regions kvio_pool_prefault backs are treated as on a kernel without
     * madvise(MADV_POPULATE_WRITE): caller memory is refused (UNSUPPORTED; kvio_test_hooks.h).
     */
    static final int KVIO_TEST_FAULT_NO_POPULATE = 5;

    /** The next {@code count} occurrences of {@code fault} fail (KVIO_TEST_FAULT_*). */
    static void injectFault(int fault, long count) {
        NativeBridge.check(kvio_test_inject_fault(fault, count));
    }

    static native int kvio_test_inject_fault(int fault, @Cast("int64_t") long count);

    /**
     * Tasks of cpu transfers that KVIO_TEST_FAULT_CPU_HOLD holds, waiting for the release now:
     * above 0 once a held transfer is certainly parked before its first copy.
     */
    static long cpuHeldTasks() {
        long address = NativeBridge.malloc(8);
        try {
            NativeBridge.check(kvio_test_cpu_held_tasks(address));
            return NativeBridge.byteBuffer(address, 8).getLong(0);
        } finally {
            NativeBridge.free(address);
        }
    }

    static native int kvio_test_cpu_held_tasks(@Cast("int64_t*") long countOut);

    // ---- enum values, as kvio.h defines them ----
    @MemberGetter
    static native int KVIO_STATUS_OK();

    @MemberGetter
    static native int KVIO_STATUS_INVALID_ARGUMENT();

    @MemberGetter
    static native int KVIO_STATUS_OUT_OF_RANGE();

    @MemberGetter
    static native int KVIO_STATUS_UNSUPPORTED();

    @MemberGetter
    static native int KVIO_STATUS_UNAVAILABLE();

    @MemberGetter
    static native int KVIO_STATUS_CLOSED();

    @MemberGetter
    static native int KVIO_STATUS_OUT_OF_MEMORY();

    @MemberGetter
    static native int KVIO_STATUS_BACKEND_ERROR();

    @MemberGetter
    static native int KVIO_STATUS_TIMEOUT();

    @MemberGetter
    static native int KVIO_STATUS_INTERNAL();

    @MemberGetter
    static native int KVIO_KIND_MHA();

    @MemberGetter
    static native int KVIO_KIND_MLA();

    @MemberGetter
    static native int KVIO_KIND_COUNT();

    @MemberGetter
    static native int KVIO_LAYOUT_LAYER_FIRST();

    @MemberGetter
    static native int KVIO_LAYOUT_PAGE_FIRST();

    @MemberGetter
    static native int KVIO_LAYOUT_PAGE_FIRST_DIRECT();

    @MemberGetter
    static native int KVIO_LAYOUT_PAGE_HEAD();

    @MemberGetter
    static native int KVIO_LAYOUT_COUNT();

    @MemberGetter
    static native int KVIO_BACKEND_CPU();

    @MemberGetter
    static native int KVIO_BACKEND_KERNEL();

    @MemberGetter
    static native int KVIO_BACKEND_DIRECT();

    @MemberGetter
    static native int KVIO_BACKEND_KERNEL_ASCEND();

    @MemberGetter
    static native int KVIO_BACKEND_AUTO();

    @MemberGetter
    static native int KVIO_BACKEND_STAGED();

    @MemberGetter
    static native int KVIO_BACKEND_COUNT();

    @MemberGetter
    static native int KVIO_SUBMIT_OVERLAPS_COMPUTE();

    @MemberGetter
    static native int KVIO_SUBMIT_QUEUE_ONLY();

    @MemberGetter
    static native int KVIO_INDICES_HOST();

    @MemberGetter
    static native int KVIO_SUBMIT_OPTIONS_MIN_SIZE();

    @MemberGetter
    static native int KVIO_GRANULARITY_PER_LAYER();

    @MemberGetter
    static native int KVIO_GRANULARITY_ALL_LAYER();

    @MemberGetter
    static native int KVIO_GRANULARITY_COUNT();

    @MemberGetter
    static native int KVIO_NAME_KIND();

    @MemberGetter
    static native int KVIO_NAME_LAYOUT();

    @MemberGetter
    static native int KVIO_NAME_BACKEND();

    @MemberGetter
    static native int KVIO_NAME_GRANULARITY();

    @MemberGetter
    static native int KVIO_NAME_MEMORY();

    @MemberGetter
    static native int KVIO_MEMORY_HOST();

    @MemberGetter
    static native int KVIO_MEMORY_HOST_PINNED();

    @MemberGetter
    static native int KVIO_MEMORY_CUDA_DEVICE();

    @MemberGetter
    static native int KVIO_MEMORY_ASCEND_DEVICE();

    @MemberGetter
    static native int KVIO_MEMORY_ASCEND_HOST_PINNED();

    @MemberGetter
    static native int KVIO_MEMORY_COUNT();

    @MemberGetter
    static native int KVIO_COPY_POOL_TO_HOST();

    @MemberGetter
    static native int KVIO_COPY_HOST_TO_POOL();

    @MemberGetter
    static native int KVIO_TEST_FAULT_HOST_ALLOCATION();

    @MemberGetter
    static native int KVIO_TEST_FAULT_CPU_COPY();

    @MemberGetter
    static native int KVIO_TEST_FAULT_CPU_HOLD();

    @MemberGetter
    static native int KVIO_TEST_FAULT_CPU_THREAD();

    @MemberGetter
    static native int KVIO_TEST_FAULT_NO_POPULATE();

    // ---- struct layouts, as the C compiler lays them out ----
    @MemberGetter
    @Name("sizeof(kvio_pool_spec)")
    static native long sizeofPoolSpec();

    @MemberGetter
    @Name("offsetof(kvio_pool_spec, kind)")
    static native long poolSpecKind();

    @MemberGetter
    @Name("offsetof(kvio_pool_spec, layout)")
    static native long poolSpecLayout();

    @MemberGetter
    @Name("offsetof(kvio_pool_spec, num_layers)")
    static native long poolSpecNumLayers();

    @MemberGetter
    @Name("offsetof(kvio_pool_spec, num_pages)")
    static native long poolSpecNumPages();

    @MemberGetter
    @Name("offsetof(kvio_pool_spec, page_size)")
    static native long poolSpecPageSize();

    @MemberGetter
    @Name("offsetof(kvio_pool_spec, head_num)")
    static native long poolSpecHeadNum();

    @MemberGetter
    @Name("offsetof(kvio_pool_spec, head_bytes)")
    static native long poolSpecHeadBytes();

    @MemberGetter
    @Name("sizeof(kvio_support_query)")
    static native long sizeofSupportQuery();

    @MemberGetter
    @Name("offsetof(kvio_support_query, kind)")
    static native long supportQueryKind();

    @MemberGetter
    @Name("offsetof(kvio_support_query, layout)")
    static native long supportQueryLayout();

    @MemberGetter
    @Name("offsetof(kvio_support_query, io_backend)")
    static native long supportQueryIoBackend();

    @MemberGetter
    @Name("offsetof(kvio_support_query, granularity)")
    static native long supportQueryGranularity();

    @MemberGetter
    @Name("offsetof(kvio_support_query, head_num)")
    static native long supportQueryHeadNum();

    @MemberGetter
    @Name("offsetof(kvio_support_query, head_bytes)")
    static native long supportQueryHeadBytes();

    @MemberGetter
    @Name("offsetof(kvio_support_query, page_size)")
    static native long supportQueryPageSize();

    @MemberGetter
    @Name("offsetof(kvio_support_query, host_num_layers)")
    static native long supportQueryHostNumLayers();

    @MemberGetter
    @Name("offsetof(kvio_support_query, device_num_layers)")
    static native long supportQueryDeviceNumLayers();

    @MemberGetter
    @Name("offsetof(kvio_support_query, device_layer_start)")
    static native long supportQueryDeviceLayerStart();

    @MemberGetter
    @Name("sizeof(kvio_transfer_info)")
    static native long sizeofTransferInfo();

    @MemberGetter
    @Name("offsetof(kvio_transfer_info, reserved)")
    static native long transferInfoReserved();

    @MemberGetter
    @Name("offsetof(kvio_transfer_info, io_backend)")
    static native long transferInfoIoBackend();

    @MemberGetter
    @Name("offsetof(kvio_transfer_info, src_layout)")
    static native long transferInfoSrcLayout();

    @MemberGetter
    @Name("offsetof(kvio_transfer_info, dst_layout)")
    static native long transferInfoDstLayout();

    @MemberGetter
    @Name("offsetof(kvio_transfer_info, src_memory)")
    static native long transferInfoSrcMemory();

    @MemberGetter
    @Name("offsetof(kvio_transfer_info, dst_memory)")
    static native long transferInfoDstMemory();

    @MemberGetter
    @Name("offsetof(kvio_transfer_info, components)")
    static native long transferInfoComponents();

    @MemberGetter
    @Name("offsetof(kvio_transfer_info, num_indices)")
    static native long transferInfoNumIndices();

    @MemberGetter
    @Name("offsetof(kvio_transfer_info, num_layers)")
    static native long transferInfoNumLayers();

    @MemberGetter
    @Name("offsetof(kvio_transfer_info, bytes)")
    static native long transferInfoBytes();

    @MemberGetter
    @Name("offsetof(kvio_transfer_info, copies)")
    static native long transferInfoCopies();

    @MemberGetter
    @Name("offsetof(kvio_transfer_info, launches)")
    static native long transferInfoLaunches();

    @MemberGetter
    @Name("offsetof(kvio_transfer_info, submit_ns)")
    static native long transferInfoSubmitNs();

    @MemberGetter
    @Name("offsetof(kvio_transfer_info, start_ns)")
    static native long transferInfoStartNs();

    @MemberGetter
    @Name("offsetof(kvio_transfer_info, end_ns)")
    static native long transferInfoEndNs();

    @MemberGetter
    @Name("offsetof(kvio_transfer_info, done)")
    static native long transferInfoDone();

    @MemberGetter
    @Name("offsetof(kvio_transfer_info, status)")
    static native long transferInfoStatus();

    @MemberGetter
    @Name("offsetof(kvio_transfer_info, chosen_backend)")
    static native long transferInfoChosenBackend();

    @MemberGetter
    @Name("offsetof(kvio_transfer_info, overlaps_compute)")
    static native long transferInfoOverlapsCompute();

    @MemberGetter
    @Name("sizeof(kvio_transfer_desc)")
    static native long sizeofTransferDesc();

    @MemberGetter
    @Name("offsetof(kvio_transfer_desc, src_pool)")
    static native long transferDescSrcPool();

    @MemberGetter
    @Name("offsetof(kvio_transfer_desc, dst_pool)")
    static native long transferDescDstPool();

    @MemberGetter
    @Name("offsetof(kvio_transfer_desc, src_indices)")
    static native long transferDescSrcIndices();

    @MemberGetter
    @Name("offsetof(kvio_transfer_desc, dst_indices)")
    static native long transferDescDstIndices();

    @MemberGetter
    @Name("offsetof(kvio_transfer_desc, num_indices)")
    static native long transferDescNumIndices();

    @MemberGetter
    @Name("offsetof(kvio_transfer_desc, src_layer_start)")
    static native long transferDescSrcLayerStart();

    @MemberGetter
    @Name("offsetof(kvio_transfer_desc, dst_layer_start)")
    static native long transferDescDstLayerStart();

    @MemberGetter
    @Name("offsetof(kvio_transfer_desc, num_layers)")
    static native long transferDescNumLayers();

    @MemberGetter
    @Name("sizeof(kvio_submit_options)")
    static native long sizeofSubmitOptions();

    @MemberGetter
    @Name("offsetof(kvio_submit_options, struct_size)")
    static native long submitOptionsStructSize();

    @MemberGetter
    @Name("offsetof(kvio_submit_options, flags)")
    static native long submitOptionsFlags();

    @MemberGetter
    @Name("offsetof(kvio_submit_options, cta_budget)")
    static native long submitOptionsCtaBudget();

    @MemberGetter
    @Name("offsetof(kvio_submit_options, warps_per_cta)")
    static native long submitOptionsWarpsPerCta();

    @MemberGetter
    @Name("offsetof(kvio_submit_options, indices_memory)")
    static native long submitOptionsIndicesMemory();

    @MemberGetter
    @Name("offsetof(kvio_submit_options, reserved)")
    static native long submitOptionsReserved();
}
