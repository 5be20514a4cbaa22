/*
 * What `roundtrip` prints on stdout: the run's settings, one line per host layout (bytes moved,
 * backup and load GB/s, verify OK or FAIL with the first mismatches), and the verdict.
 */
package io.kvio.cli;

import io.kvio.KvLayout;
import io.kvio.Kvio;
import io.kvio.oracle.Geometry;
import io.kvio.oracle.Shape;
import java.io.PrintWriter;
import java.util.List;
import java.util.Locale;

final class RoundTripReport {
    /** Bytes moved by one direction's transfers, and how long they took. */
    record Timed(long bytes, long nanos) {
        double gbps() {
            return nanos <= 0 ? 0 : bytes / (double) nanos;
        }
    }

    /** One layout's outcome: both directions, the bytes each should move, and the mismatches. */
    record LayoutResult(
            KvLayout layout, Timed backup, Timed load, long expectedBytes, Mismatches mismatches) {
        boolean bytesOk() {
            return load.bytes == backup.bytes && backup.bytes == expectedBytes;
        }

        boolean ok() {
            return mismatches.count == 0 && bytesOk();
        }
    }

    private final PrintWriter out;

    RoundTripReport(PrintWriter out) {
        this.out = out;
    }

    void header(RoundTripOptions o, RoundTripPlan plan, int threads) {
        out.printf(
                Locale.ROOT,
                "kvio %s: %s, %d layers, %d heads x %d dims x %d bytes (row %d B), page %d, "
                        + "%d tokens (%d pages + %d-token tail), io backend cpu, %d threads%n",
                Kvio.version(),
                o.kind.userName(),
                o.layers,
                o.heads,
                o.headDim,
                o.dtypeBytes,
                o.rowBytes(),
                o.pageSize,
                o.tokens,
                plan.fullPages,
                plan.tail,
                threads);
    }

    void deviceSizeDiffers(long bytes, Geometry devGeom) {
        out.printf(
                Locale.ROOT,
                "device pool is %d B, its shape %s gives %d B%n",
                bytes,
                Shape.LAYER_FIRST.dims(),
                devGeom.totalBytes());
    }

    void layout(LayoutResult r) {
        String name = r.layout.userName();
        out.printf(
                Locale.ROOT,
                "%-18s %-18s moved %,d B per direction  backup %7.2f GB/s  load %7.2f GB/s"
                        + "  verify %s%n",
                name,
                r.layout.shape(),
                r.backup.bytes,
                r.backup.gbps(),
                r.load.gbps(),
                r.ok() ? "OK" : "FAIL");
        if (!r.ok()) {
            if (!r.bytesOk()) {
                out.printf(
                        Locale.ROOT,
                        "  %s: byte counts differ: backup %d, load %d, expected %d%n",
                        name,
                        r.backup.bytes,
                        r.load.bytes,
                        r.expectedBytes);
            }
            r.mismatches.print(out);
        }
    }

    /** The last line; the exit status. */
    int verdict(List<String> failed, int layouts) {
        if (failed.isEmpty()) {
            out.println("all " + layouts + " layouts verified OK");
            return Main.EXIT_OK;
        }
        out.println("verify FAILED for: " + String.join(", ", failed));
        return Main.EXIT_FAILED;
    }
}
