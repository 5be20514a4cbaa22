/*
 * The results of `bench` and their renderings: a Markdown table, CSV, JSON (Jackson) and an SVG
 * plot (SvgPlot). GB/s = bytes moved / the best of the timed runs (on a shared machine the best
 * run is the one least disturbed; the median is kept in CSV and JSON); the ratio is the
 * baseline's best time over the transfer's (above 1: faster than the baseline). Each backend's
 * submit cost (BenchSubmitCost) follows the table and is a top-level array of the JSON.
 */
package io.kvio.cli;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

final class BenchResult {
    /** One measured point. */
    record Point(
            String backend,
            String layout,
            Direction direction,
            String baseline,
            long rowBytes,
            long heads,
            long headBytes,
            long tokens,
            long layers,
            long bytes,
            double seconds,
            double bestSeconds,
            double baselineSeconds,
            double baselineBestSeconds,
            Integer threads) {
        double gbps() {
            return bytes / bestSeconds / 1e9;
        }

        double baselineGbps() {
            return bytes / baselineBestSeconds / 1e9;
        }

        double ratio() {
            return baselineBestSeconds / bestSeconds;
        }
    }

    /**
     * The host cost of a one-page per-layer load on a backend (BenchSubmitCost), microseconds per
     * transfer: the submit call alone, and submit then await.
     */
    record SubmitCost(String backend, double submitUs, double submitToCompletionUs) {}

    final String version;
    final String platform;
    final String mode;
    long layers;
    long pageSize;
    int repeats;

    /**
     * The io threads of each backend's kvio executor, by backend name, for the backends that ran:
     * the count for those with io threads (cpu, and auto without a GPU), null for the device
     * backends, whose transfers run on a device stream or queue.
     */
    final Map<String, Integer> threads = new LinkedHashMap<>();

    long maxMiB;

    /** Points not run: they would move more than --max-bytes. */
    long skipped;

    final List<MatrixReport.Backend> backends = new ArrayList<>();
    final Map<String, String> baselines = new LinkedHashMap<>();
    final List<Point> points = new ArrayList<>();

    /** Per backend that ran, unless --no-submit-cost; in the order the backends ran. */
    final List<SubmitCost> submitCosts = new ArrayList<>();

    BenchResult(String version, String platform, String mode) {
        this.version = version;
        this.platform = platform;
        this.mode = mode;
    }

    void printMarkdown(PrintWriter out) {
        out.printf(
                Locale.ROOT,
                "## kvio %s bench (%s, %s): %s, page %d, mha, %sbest of %s%n%n",
                version,
                platform,
                mode,
                Main.count(layers, "layer", "layers"),
                pageSize,
                threads.isEmpty() ? "no backend ran, " : "",
                Main.count(repeats, "run", "runs"));
        for (MatrixReport.Backend b : backends) {
            out.println(
                    "- "
                            + b.name()
                            + (b.unavailabilityCause() == null
                                    ? " ("
                                            + (b.name().equals("auto")
                                                    ? RoundTripReport.autoRunsOnText() + "; "
                                                    : "")
                                            + threadsText(b.name())
                                            + "): baseline = "
                                            + baselines.get(b.name())
                                    : ": UNAVAILABLE: " + b.unavailabilityCause()));
        }
        out.println();
        out.println(
                "| backend | layout | direction | row | tokens | MiB moved | GB/s | baseline GB/s |"
                        + " ratio |");
        out.println("|---|---|---|---|---|---|---|---|---|");
        for (Point p : points) {
            out.printf(
                    Locale.ROOT,
                    "| %s | %s | %s | %s | %d | %.2f | %.2f | %.2f | %.2f |%n",
                    p.backend(),
                    p.layout(),
                    p.direction().userName,
                    bytesText(p.rowBytes()),
                    p.tokens(),
                    p.bytes() / (double) (1 << 20),
                    p.gbps(),
                    p.baselineGbps(),
                    p.ratio());
        }
        out.println();
        out.println(
                points.size()
                        + " points"
                        + (skipped == 0
                                ? ""
                                : ", "
                                        + skipped
                                        + " skipped (they would move more than --max-bytes "
                                        + maxMiB
                                        + " MiB)"));
        printSubmitCosts(out);
    }

    /** The submit-cost lines, under a heading that says what they are; nothing when none ran. */
    void printSubmitCosts(PrintWriter out) {
        if (submitCosts.isEmpty()) {
            return;
        }
        out.println();
        out.println(
                "Submit cost through the Java API, us per transfer, mean ("
                        + BenchSubmitCost.SHAPE
                        + "; host page "
                        + BenchSubmitCost.HOST_PAGE
                        + " -> device page "
                        + BenchSubmitCost.DEVICE_PAGE
                        + ", layer l -> l). submit: the call alone, "
                        + BenchSubmitCost.STEP
                        + " queued per step; submit+await: one at a time. The C figure for the"
                        + " same shape is kvio_cuda_bench's `submit` / `submit_to_completion`"
                        + " lines:");
        for (SubmitCost c : submitCosts) {
            out.printf(
                    Locale.ROOT,
                    "- %s%s: submit %.2f, submit+await %.2f%n",
                    c.backend(),
                    c.backend().equals("auto")
                            ? " (runs on " + RoundTripReport.autoRunsOn() + ")"
                            : "",
                    c.submitUs(),
                    c.submitToCompletionUs());
        }
    }

    /** "2 io threads", or "no io threads, a device stream" for a device backend that ran. */
    String threadsText(String backend) {
        Integer n = threads.get(backend);
        return n == null
                ? "no io threads, a device stream"
                : Main.count(n, "io thread", "io threads");
    }

    static String bytesText(long bytes) {
        if (bytes >= 1024 && bytes % 1024 == 0) {
            return bytes / 1024 + " KiB";
        }
        return bytes + " B";
    }

    static final String CSV_HEADER =
            "backend,layout,direction,row_bytes,heads,head_bytes,tokens,layers,bytes,seconds,"
                    + "best_seconds,gbps,baseline,baseline_seconds,baseline_best_seconds,"
                    + "baseline_gbps,ratio,threads";

    String toCsv() {
        StringBuilder sb = new StringBuilder(CSV_HEADER).append('\n');
        for (Point p : points) {
            sb.append(
                    String.format(
                            Locale.ROOT,
                            "%s,%s,%s,%d,%d,%d,%d,%d,%d,%.9f,%.9f,%.4f,%s,%.9f,%.9f,%.4f,%.4f,%s%n",
                            p.backend(),
                            p.layout(),
                            p.direction().userName,
                            p.rowBytes(),
                            p.heads(),
                            p.headBytes(),
                            p.tokens(),
                            p.layers(),
                            p.bytes(),
                            p.seconds(),
                            p.bestSeconds(),
                            p.gbps(),
                            p.baseline(),
                            p.baselineSeconds(),
                            p.baselineBestSeconds(),
                            p.baselineGbps(),
                            p.ratio(),
                            p.threads() == null ? "" : p.threads().toString()));
        }
        return sb.toString();
    }

    void writeCsv(Path file) throws IOException {
        Files.writeString(file, toCsv(), StandardCharsets.UTF_8);
    }

    ObjectNode toJson() {
        ObjectNode root = ReportFiles.jsonRoot(version, platform, mode);
        root.put("kind", "mha");
        root.put("layers", layers);
        root.put("pageSize", pageSize);
        root.put("repeats", repeats);
        ArrayNode bs = root.putArray("backends");
        for (MatrixReport.Backend b : backends) {
            ObjectNode o = b.addTo(bs);
            if (b.unavailabilityCause() == null) {
                o.put("baseline", baselines.get(b.name()));
                o.put("threads", threads.get(b.name())); // null: a device backend
                if (b.name().equals("auto")) {
                    o.put("runsOn", RoundTripReport.autoRunsOn()); // cuda, kernel_ascend or cpu
                }
            }
        }
        ArrayNode ps = root.putArray("points");
        for (Point p : points) {
            ObjectNode o = ps.addObject();
            o.put("backend", p.backend());
            o.put("layout", p.layout());
            o.put("direction", p.direction().userName);
            o.put("rowBytes", p.rowBytes());
            o.put("heads", p.heads());
            o.put("headBytes", p.headBytes());
            o.put("tokens", p.tokens());
            o.put("layers", p.layers());
            o.put("bytes", p.bytes());
            o.put("seconds", p.seconds());
            o.put("bestSeconds", p.bestSeconds());
            o.put("gbps", p.gbps());
            o.put("baseline", p.baseline());
            o.put("baselineSeconds", p.baselineSeconds());
            o.put("baselineBestSeconds", p.baselineBestSeconds());
            o.put("baselineGbps", p.baselineGbps());
            o.put("ratio", p.ratio());
            o.put("threads", p.threads()); // null: a device backend
        }
        if (!submitCosts.isEmpty()) {
            ArrayNode cs = root.putArray("submitCost");
            for (SubmitCost c : submitCosts) {
                ObjectNode o = cs.addObject();
                o.put("backend", c.backend());
                if (c.backend().equals("auto")) {
                    o.put("runsOn", RoundTripReport.autoRunsOn()); // as in "backends"
                }
                o.put("submitUs", c.submitUs());
                o.put("submitToCompletionUs", c.submitToCompletionUs());
            }
        }
        return root;
    }

    void writeJson(Path file) throws IOException {
        ReportFiles.writeJson(file, toJson());
    }

    void writeSvg(Path file) throws IOException {
        Files.writeString(file, SvgPlot.render(this), StandardCharsets.UTF_8);
    }
}
