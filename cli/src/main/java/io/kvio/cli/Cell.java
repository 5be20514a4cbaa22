/*
 * The result of one matrix configuration on one io backend: PASS (with the bytes moved and
 * GB/s), FAIL (with the first mismatch or the error), UNSUPPORTED (with the support rule's
 * reason) or UNAVAILABLE (with the backend's cause).
 */
package io.kvio.cli;

record Cell(
        MatrixConfig config,
        String backend,
        Cell.Status status,
        long bytes,
        long nanos,
        String detail) {
    enum Status {
        PASS,
        FAIL,
        UNSUPPORTED,
        UNAVAILABLE
    }

    static Cell pass(MatrixConfig config, String backend, long bytes, long nanos) {
        return new Cell(config, backend, Status.PASS, bytes, nanos, null);
    }

    static Cell of(MatrixConfig config, String backend, Status status, String detail) {
        return new Cell(config, backend, status, 0, 0, detail);
    }

    /** Bandwidth of the timed transfers (bytes per nanosecond = GB/s), 0 when not run. */
    double gbps() {
        return nanos <= 0 ? 0 : bytes / (double) nanos;
    }
}
