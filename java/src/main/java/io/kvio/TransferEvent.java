/*
 * The JDK Flight Recorder event of one transfer, "io.kvio.Transfer" (docs/observability.md). Kvio
 * begins it when a transfer is submitted, and Transfer commits it when kvio first sees the transfer
 * complete (the submit call, for a cpu transfer done by then; else await, isDone, close, or the
 * kvio background thread of whenDone(), which commits it even after a close()), filled
 * from the native kvio_transfer_get_info. With no
 * recording that enables it, begin() costs one inlined check and allocates nothing: the probe
 * instance below is scalar-replaced by the JIT, and the natives read no clock.
 */
package io.kvio;

import io.kvio.KvioNative.TransferInfoStruct;
import jdk.jfr.Category;
import jdk.jfr.DataAmount;
import jdk.jfr.Description;
import jdk.jfr.Event;
import jdk.jfr.Label;
import jdk.jfr.Name;
import jdk.jfr.StackTrace;
import jdk.jfr.Timespan;

@Name("io.kvio.Transfer")
@Label("KV Transfer")
@Category({"kvio"})
@Description(
        "One kvio transfer, from its submission until kvio saw it complete (the submit call for"
                + " a cpu transfer done by then, else await, isDone, close or the background wait"
                + " of whenDone()); the thread is the one that saw it complete")
@StackTrace(false)
final class TransferEvent extends Event {
    static final String BACKUP = "backup";
    static final String LOAD = "load";
    static final String OTHER = "other";

    @Label("IO Backend")
    @Description("The executor's io backend (auto for an auto executor)")
    String backend;

    @Label("Chosen Backend")
    @Description(
            "The io backend that ran it: what auto chose (kernel, direct, staged; cpu without a"
                    + " GPU), else the executor's")
    String chosenBackend;

    @Label("Overlaps Compute")
    @Description("Submitted with the overlaps-compute mark (TransferRequest.overlapsCompute())")
    boolean overlapsCompute;

    @Label("CTA Budget")
    @Description(
            "The launch shape it was submitted with (TransferRequest.launch, Kvio.Request.launch):"
                    + " thread blocks at"
                    + " most; 0: the executor's setting. Used by kernel, and by auto when it gives"
                    + " the transfer to its kernel")
    int ctaBudget;

    @Label("Warps per CTA")
    @Description(
            "The launch shape it was submitted with (TransferRequest.launch, Kvio.Request.launch):"
                    + " warps per thread"
                    + " block; 0: the executor's setting")
    int warpsPerCta;

    @Label("Direction")
    @Description(
            "backup: device pool to host pool; load: host pool to device pool; other: between"
                    + " pools of one type (Kvio.transfer)")
    String direction;

    @Label("Source Layout")
    String srcLayout;

    @Label("Destination Layout")
    String dstLayout;

    @Label("Source Memory")
    String srcMemory;

    @Label("Destination Memory")
    String dstMemory;

    @Label("Bytes")
    @DataAmount(DataAmount.BYTES)
    long bytes;

    @Label("Rows")
    @Description("Index pairs x layers x components (K and V for mha, one latent for mla)")
    long rows;

    @Label("Index Pairs")
    long indexPairs;

    @Label("Layers")
    long layers;

    @Label("Copies")
    @Description("Plan copies (cpu, direct, kernel_ascend), staged's host-run copies; kernel: 0")
    long copies;

    @Label("Kernel Launches")
    @Description("Kernel launches (kernel: 1; staged: 1 per chunk); 0 for the other backends")
    long launches;

    @Label("Queue Time")
    @Description(
            "From the submit call to the start of execution: validation, planning and waiting"
                    + " behind earlier transfers of the executor (cpu); until the work was issued"
                    + " to the stream (kernel, direct, staged, kernel_ascend)")
    @Timespan(Timespan.NANOSECONDS)
    long queueTime = Long.MIN_VALUE;

    @Label("Transfer Time")
    @Description(
            "From the start of execution until kvio saw the transfer complete: the copies (cpu);"
                    + " stream time behind earlier work, the copy and polling latency (device"
                    + " backends)")
    @Timespan(Timespan.NANOSECONDS)
    long transferTime = Long.MIN_VALUE;

    @Label("Outcome")
    @Description(
            "ok, the failure status (e.g. BACKEND_ERROR), or running when the transfer was closed"
                    + " before it completed")
    String outcome;

    private TransferEvent() {}

    /**
     * A begun event for a transfer about to be submitted with this launch shape (0: the
     * executor's), or null when no recording enables the event (the common case: no allocation, no
     * native call).
     */
    static TransferEvent begin(KvPool src, KvPool dst, int ctaBudget, int warpsPerCta) {
        if (!new TransferEvent().isEnabled()) {
            return null;
        }
        NativeBridge.enableTransferTiming();
        TransferEvent event = new TransferEvent();
        // The request's (kvio_transfer_info does not carry it); 0 or less reads as 0.
        event.ctaBudget = Math.max(ctaBudget, 0);
        event.warpsPerCta = Math.max(warpsPerCta, 0);
        event.direction =
                src instanceof DeviceKvPool && dst instanceof HostKvPool
                        ? BACKUP
                        : src instanceof HostKvPool && dst instanceof DeviceKvPool ? LOAD : OTHER;
        event.begin();
        return event;
    }

    /**
     * Ends {@code event} (a TransferEvent that {@link #begin} returned) and commits it, with what
     * kvio_transfer_info says of {@code transfer}, when a recording wants it. Typed Object, as
     * Transfer holds it: a class that names this type in a field or signature cannot even be
     * reflected on where the runtime has no jdk.jfr module.
     */
    static void finish(Object event, long transfer) {
        TransferEvent e = (TransferEvent) event;
        e.end();
        if (e.shouldCommit() && NativeBridge.transferInfo(transfer, e)) {
            e.commit();
        }
    }

    /** Fills the fields from a kvio_transfer_info at {@code b}'s {@code at}. */
    void fill(java.nio.ByteBuffer b, int at) {
        IoBackend io = IoBackend.ofNative(b.getInt(at + TransferInfoStruct.IO_BACKEND));
        backend =
                io != null
                        ? io.userName()
                        : String.valueOf(b.getInt(at + TransferInfoStruct.IO_BACKEND));
        IoBackend chosen = IoBackend.ofNative(b.getInt(at + TransferInfoStruct.CHOSEN_BACKEND));
        chosenBackend =
                chosen != null
                        ? chosen.userName()
                        : String.valueOf(b.getInt(at + TransferInfoStruct.CHOSEN_BACKEND));
        overlapsCompute = b.getInt(at + TransferInfoStruct.OVERLAPS_COMPUTE) != 0;
        srcLayout = layout(b.getInt(at + TransferInfoStruct.SRC_LAYOUT));
        dstLayout = layout(b.getInt(at + TransferInfoStruct.DST_LAYOUT));
        srcMemory = memory(b.getInt(at + TransferInfoStruct.SRC_MEMORY));
        dstMemory = memory(b.getInt(at + TransferInfoStruct.DST_MEMORY));
        long components = b.getInt(at + TransferInfoStruct.COMPONENTS);
        indexPairs = b.getLong(at + TransferInfoStruct.NUM_INDICES);
        layers = b.getLong(at + TransferInfoStruct.NUM_LAYERS);
        rows = indexPairs * layers * components;
        bytes = b.getLong(at + TransferInfoStruct.BYTES_MOVED);
        copies = b.getLong(at + TransferInfoStruct.COPIES);
        launches = b.getLong(at + TransferInfoStruct.LAUNCHES);
        long submitNs = b.getLong(at + TransferInfoStruct.SUBMIT_NS);
        long startNs = b.getLong(at + TransferInfoStruct.START_NS);
        long endNs = b.getLong(at + TransferInfoStruct.END_NS);
        boolean done = b.getInt(at + TransferInfoStruct.DONE) != 0;
        int status = b.getInt(at + TransferInfoStruct.STATUS);
        if (submitNs != 0 && startNs != 0) {
            queueTime = startNs - submitNs;
        }
        if (startNs != 0 && endNs != 0) {
            transferTime = endNs - startNs;
        }
        outcome =
                !done
                        ? "running"
                        : status == KvioNative.KVIO_STATUS_OK
                                ? "ok"
                                : KvioException.Status.of(status).name();
    }

    private static String layout(int value) {
        KvLayout layout = KvLayout.ofNative(value);
        return layout != null ? layout.userName() : String.valueOf(value);
    }

    /** The name of a KVIO_MEMORY_* value. */
    static String memory(int value) {
        switch (value) {
            case KvioNative.KVIO_MEMORY_HOST:
                return "host";
            case KvioNative.KVIO_MEMORY_HOST_PINNED:
                return "host_pinned";
            case KvioNative.KVIO_MEMORY_CUDA_DEVICE:
                return "cuda_device";
            case KvioNative.KVIO_MEMORY_ASCEND_DEVICE:
                return "ascend_device";
            case KvioNative.KVIO_MEMORY_ASCEND_HOST_PINNED:
                return "ascend_host_pinned";
            default:
                return String.valueOf(value);
        }
    }
}
