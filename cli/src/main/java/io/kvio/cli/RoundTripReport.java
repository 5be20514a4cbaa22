/*
 * What `roundtrip` prints on stdout: the run's settings, one line per host layout (bytes moved,
 * backup and load GB/s, verify OK or FAIL with the first mismatches), and the verdict.
 */
package io.kvio.cli;

import io.kvio.IoBackend;
import io.kvio.KvLayout;
import io.kvio.Kvio;
import io.kvio.oracle.Geometry;
import io.kvio.oracle.Shape;
import java.io.PrintWriter;
import java.util.List;
import java.util.Locale;

final class RoundTripReport {
    /**
     * Bytes moved by one direction's transfers, how long they took, and the io backend that ran
     * them (what auto chose; for the loads, the first layer's).
     */
    record Timed(long bytes, long nanos, IoBackend backend) {
        Timed(long bytes, long nanos) {
            this(bytes, nanos, null);
        }

        double gbps() {
            return nanos <= 0 ? 0 : bytes / (double) nanos;
        }
    }

    /** One contiguous copy of the same bytes each way: what the transfers are measured against. */
    record Ceiling(Timed toHost, Timed toDevice) {}

    /**
     * One layout's outcome: both directions, the bytes each should move, the mismatches, and the
     * ceiling measured beside them (null without a device).
     */
    record LayoutResult(
            KvLayout layout,
            Timed backup,
            Timed load,
            long expectedBytes,
            Mismatches mismatches,
            Ceiling ceiling) {
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
                "kvio %s: %s, %s, %d heads x %d dims x %d bytes (row %d B), page %d, "
                        + "%s, io backend %s, %s%n",
                Kvio.version(),
                o.kind.userName(),
                Main.count(o.layers, "layer", "layers"),
                o.heads,
                o.headDim,
                o.dtypeBytes,
                o.rowBytes(),
                o.pageSize,
                tokensLabel(o.tokens, plan.fullPages, plan.tail),
                backendLabel(o.backend),
                Main.count(threads, "thread", "threads"));
    }

    /**
     * The tokens and how RoundTripPlan moves them: "8192 tokens (127 whole pages, then 64 tokens
     * slot by slot)", "64 tokens (1 whole page)", "5 tokens (slot by slot)".
     */
    static String tokensLabel(long tokens, long fullPages, long tail) {
        String pages = Main.count(fullPages, "whole page", "whole pages");
        String slots = Main.count(tail, "token", "tokens") + " slot by slot";
        String how =
                tail == 0 ? pages : fullPages == 0 ? "slot by slot" : pages + ", then " + slots;
        return Main.count(tokens, "token", "tokens") + " (" + how + ")";
    }

    /** The io backend, and for auto what it is on this machine. */
    private static String backendLabel(IoBackend backend) {
        return backend != IoBackend.AUTO ? backend.userName() : "auto (" + autoRunsOnText() + ")";
    }

    /** What auto runs on this machine: "cuda", "kernel_ascend" or "cpu". */
    static String autoRunsOn() {
        return IoBackend.AUTO.isCuda()
                ? "cuda"
                : IoBackend.AUTO.isAscend() ? "kernel_ascend" : "cpu";
    }

    /** What auto runs on this machine, in words ("cpu: no usable CUDA device or Ascend NPU"). */
    static String autoRunsOnText() {
        return switch (autoRunsOn()) {
            case "cuda" -> "kernel, direct or staged per transfer, CUDA device 0";
            case "kernel_ascend" -> "kernel_ascend on NPU 0 for NPU memory: no usable CUDA device";
            default -> "cpu: no usable CUDA device or Ascend NPU";
        };
    }

    /** The crossovers auto chooses by (the first line says where they come from). */
    void autoCalibration(String text) {
        out.println(autoCalibrationLine(text));
    }

    /** An auto calibration (the calibration file format) on one line, its source first. */
    static String autoCalibrationLine(String text) {
        StringBuilder line = new StringBuilder("auto calibration");
        String prefix = "# kvio auto calibration: ";
        for (String l : text.split("\n")) {
            if (l.startsWith(prefix)) {
                line.append(" (").append(l.substring(prefix.length())).append("):");
            } else if (!l.isBlank()) {
                line.append(' ').append(l);
            }
        }
        return line.toString();
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
        if (r.ceiling != null) {
            out.printf(
                    Locale.ROOT,
                    "  %s: backup %.2f GB/s (%s) = %.2fx the ceiling %.2f GB/s; load %.2f GB/s"
                            + " (%s) = %.2fx the ceiling %.2f GB/s (one contiguous copy of %,d B"
                            + " each way)%n",
                    name,
                    r.backup.gbps(),
                    r.backup.backend(),
                    ratio(r.backup, r.ceiling.toHost()),
                    r.ceiling.toHost().gbps(),
                    r.load.gbps(),
                    r.load.backend(),
                    ratio(r.load, r.ceiling.toDevice()),
                    r.ceiling.toDevice().gbps(),
                    r.ceiling.toHost().bytes());
        }
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

    private static double ratio(Timed measured, Timed ceiling) {
        return ceiling.gbps() <= 0 ? 0 : measured.gbps() / ceiling.gbps();
    }

    /** The last line; the exit status. */
    int verdict(List<String> failed, int layouts) {
        if (failed.isEmpty()) {
            out.println(
                    layouts == 1
                            ? "the layout verified OK"
                            : "all " + layouts + " layouts verified OK");
            return Main.EXIT_OK;
        }
        out.println("verify FAILED for: " + String.join(", ", failed));
        return Main.EXIT_FAILED;
    }
}
