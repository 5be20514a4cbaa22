/*
 * The io backends (the reference's --hicache-io-backend names): cpu (multithreaded memcpy, always
 * built), kernel (CUDA SM copy kernels), direct (CUDA copy engine), kernel_ascend (Ascend ACL),
 * auto (per transfer kernel, direct or staged on a CUDA device, chosen by the transfer's row sizes,
 * its size and the overlaps-compute mark, docs/cuda.md; where no CUDA device is usable, cpu, with
 * kernel_ascend for the transfers of NPU memory where an Ascend NPU is usable),
 * staged (CUDA: a device gather/scatter through a staging buffer, then large copy-engine copies;
 * host to device and device to host only).
 * Availability is answered natively (kvio_backend_available) with the cause when absent.
 * Each constant carries its native KVIO_BACKEND_* value.
 */
package io.kvio;

public enum IoBackend {
    CPU(KvioNative.KVIO_BACKEND_CPU, "cpu"),
    KERNEL(KvioNative.KVIO_BACKEND_KERNEL, "kernel"),
    DIRECT(KvioNative.KVIO_BACKEND_DIRECT, "direct"),
    KERNEL_ASCEND(KvioNative.KVIO_BACKEND_KERNEL_ASCEND, "kernel_ascend"),
    AUTO(KvioNative.KVIO_BACKEND_AUTO, "auto"),
    STAGED(KvioNative.KVIO_BACKEND_STAGED, "staged");

    private static final String AVAILABLE = "";

    private static final Names<IoBackend> NAMES =
            new Names<>(KvioNative.KVIO_NAME_BACKEND, "ioBackend", values(), e -> e.id);

    private final NativeName id;
    private volatile String cause; // AVAILABLE, the native cause, or null before the first query

    IoBackend(int nativeValue, String userName) {
        this.id = new NativeName(nativeValue, userName);
    }

    public String userName() {
        return id.userName;
    }

    @Override
    public String toString() {
        return id.userName;
    }

    public static IoBackend parse(String ioBackend) {
        return NAMES.parse(ioBackend);
    }

    /** The native KVIO_* value (kvio.h); what crosses JNI, never the ordinal. */
    int nativeValue() {
        return id.value;
    }

    /** The constant with native value {@code value}, or null if there is none. */
    static IoBackend ofNative(int value) {
        return NAMES.ofNative(value);
    }

    /** Whether this backend can run on this machine with this build. */
    public boolean isAvailable() {
        return cause() == AVAILABLE;
    }

    /** Why this backend cannot run here, or null when it is available. */
    public String unavailabilityCause() {
        String c = cause();
        return c == AVAILABLE ? null : c;
    }

    /** Throws KvioUnavailableException with the native cause when this backend cannot run here. */
    public void ensureAvailability() {
        String c = unavailabilityCause();
        if (c != null) {
            throw new KvioUnavailableException(
                    "io backend '" + id.userName + "' is not available: " + c);
        }
    }

    private String cause() {
        String c = cause;
        if (c == null) {
            c = NativeBridge.backendUnavailabilityCause(this);
            cause = c == null ? AVAILABLE : c;
            c = cause;
        }
        return c;
    }

    /**
     * The memory domain this backend runs in on this machine: itself, except AUTO, which is KERNEL
     * where a CUDA device is usable (standing for the CUDA backends: auto picks kernel, direct or
     * staged per transfer, see {@link Transfer#backend()}), else KERNEL_ASCEND where an Ascend NPU
     * is usable (its device pools are NPU memory and its host pools ACL-pinned memory; transfers
     * between host pools run on cpu), else CPU.
     */
    public IoBackend resolved() {
        if (this != AUTO) {
            return this;
        }
        return resolveAuto(KERNEL.isAvailable(), KERNEL_ASCEND.isAvailable());
    }

    /**
     * What AUTO resolves to where a CUDA device ({@code cuda}) or an NPU ({@code npu}) is usable.
     */
    static IoBackend resolveAuto(boolean cuda, boolean npu) {
        return cuda ? KERNEL : npu ? KERNEL_ASCEND : CPU;
    }

    /**
     * Whether this backend runs on a CUDA device (kernel, direct, staged; auto where one is
     * usable).
     */
    public boolean isCuda() {
        IoBackend r = resolved();
        return r == KERNEL || r == DIRECT || r == STAGED;
    }

    /**
     * Whether this backend runs on an Ascend NPU (kernel_ascend; auto where an NPU and no CUDA
     * device is usable).
     */
    public boolean isAscend() {
        return resolved() == KERNEL_ASCEND;
    }

    /**
     * Whether this backend runs its transfers on io threads of the host, and so takes a thread
     * count ({@link KvioExecutor#create(IoBackend, int)}, {@link HostKvPool.Builder#threads}): cpu,
     * and auto where it has a cpu candidate (no CUDA GPU here); not the device backends, whose
     * transfers run on a device stream or queue.
     */
    public boolean hasIoThreads() {
        return this == CPU || (this == AUTO && !isCuda());
    }

    /** Whether this backend runs on a device (CUDA or Ascend), i.e. is not cpu. */
    public boolean isDevice() {
        return isCuda() || isAscend();
    }

    /** Memory kind of device pools on this backend (KvioNative.KVIO_MEMORY_*). */
    int deviceMemoryKind() {
        if (isCuda()) return KvioNative.KVIO_MEMORY_CUDA_DEVICE;
        if (isAscend()) return KvioNative.KVIO_MEMORY_ASCEND_DEVICE;
        return KvioNative.KVIO_MEMORY_HOST;
    }

    /** Memory kind of host pools on this backend: pinned for the device backends. */
    int hostMemoryKind() {
        if (isCuda()) return KvioNative.KVIO_MEMORY_HOST_PINNED;
        if (isAscend()) return KvioNative.KVIO_MEMORY_ASCEND_HOST_PINNED;
        return KvioNative.KVIO_MEMORY_HOST;
    }
}
