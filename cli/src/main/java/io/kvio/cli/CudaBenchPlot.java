/*
 * kvio_cuda_bench's row sweep (its TSV, e.g. bench.tsv from scripts/gpu-check.sh) as a Figure and
 * a Markdown table: GB/s against row size per direction, at the largest index count measured at
 * each row size (as the bench's own summary), one solid line per kvio path (kernel at each CTA
 * budget, direct, staged, auto) and dashed lines for the baselines measured in the same run (the
 * reference warp-per-row kernel and the ceiling, one contiguous cudaMemcpyAsync of the same bytes).
 * Reads the columns by name from the first line; stops at the first blank or '#' line (gpu-check
 * appends the beside-compute table after one); only rows whose test is "rows" are drawn.
 */
package io.kvio.cli;

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
import java.util.TreeMap;
import java.util.TreeSet;

final class CudaBenchPlot {
    /** The columns the row sweep needs, as kvio_cuda_bench names them. */
    static final List<String> COLUMNS =
            List.of("test", "backend", "direction", "row_bytes", "indices", "ctas", "GBps");

    /** The directions as the bench writes them, and the panels they become. */
    private static final List<String> DIRECTIONS = List.of("d2h", "h2d");

    private static final List<String> PANEL_TITLES =
            List.of(
                    "backup: device to host (d2h), one transfer",
                    "load: host to device (h2d), one transfer");

    /** One measurement of the row sweep. */
    record Point(
            String backend,
            String direction,
            long rowBytes,
            long indices,
            long ctas,
            double gbps,
            String chosen) {
        /** The line it belongs to: "kernel 4 CTAs", "direct", "reference", ... */
        String line() {
            return backend.equals("kernel") ? "kernel " + ctas + " CTAs" : backend;
        }
    }

    private final List<Point> points;

    private CudaBenchPlot(List<Point> points) {
        this.points = points;
    }

    /** Reads the sweep; an IllegalArgumentException says what is wrong with the file. */
    static CudaBenchPlot read(Path tsv) throws IOException {
        return parse(Files.readAllLines(tsv, StandardCharsets.UTF_8), tsv.toString());
    }

    static CudaBenchPlot parse(List<String> lines, String source) {
        if (lines.isEmpty()) {
            throw new IllegalArgumentException(source + " is empty");
        }
        List<String> header = List.of(lines.get(0).split("\t", -1));
        int[] at = new int[COLUMNS.size()];
        for (int c = 0; c < COLUMNS.size(); c++) {
            at[c] = header.indexOf(COLUMNS.get(c));
            if (at[c] < 0) {
                throw new IllegalArgumentException(
                        source
                                + " has no column '"
                                + COLUMNS.get(c)
                                + "' in its first line: not a kvio_cuda_bench TSV (it needs "
                                + String.join(", ", COLUMNS)
                                + ")");
            }
        }
        int chosenAt = header.indexOf("chosen");
        List<Point> points = new ArrayList<>();
        for (int n = 1; n < lines.size(); n++) {
            String line = lines.get(n);
            if (line.isBlank() || line.startsWith("#")) {
                break;
            }
            String[] f = line.split("\t", -1);
            if (f.length < header.size()) {
                throw new IllegalArgumentException(
                        source
                                + " line "
                                + (n + 1)
                                + " has "
                                + f.length
                                + " fields, the header "
                                + header.size());
            }
            if (!f[at[0]].equals("rows")) {
                continue;
            }
            String where = source + " line " + (n + 1);
            if (!DIRECTIONS.contains(f[at[2]])) {
                throw new IllegalArgumentException(
                        where
                                + ": direction '"
                                + f[at[2]]
                                + "' is not one the bench writes ("
                                + String.join(", ", DIRECTIONS)
                                + ")");
            }
            try {
                points.add(
                        new Point(
                                f[at[1]],
                                f[at[2]],
                                positive(where, "row_bytes", Long.parseLong(f[at[3]])),
                                positive(where, "indices", Long.parseLong(f[at[4]])),
                                notNegative(where, "ctas", Long.parseLong(f[at[5]])),
                                gbps(where, Double.parseDouble(f[at[6]])),
                                chosenAt >= 0 ? f[chosenAt] : "-"));
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException(where + ": not a number: " + e.getMessage(), e);
            }
        }
        if (points.isEmpty()) {
            throw new IllegalArgumentException(
                    source + " holds no row-sweep results (no line whose test is 'rows')");
        }
        return new CudaBenchPlot(points);
    }

    /** A count that must be at least 0 (ctas: 0 for the paths without a kernel launch). */
    private static long notNegative(String where, String column, long value) {
        if (value < 0) {
            throw new IllegalArgumentException(
                    where + ": " + column + " must be at least 0, got " + value);
        }
        return value;
    }

    /** A size that must be at least 1 (row_bytes, indices); else what is wrong, and where. */
    private static long positive(String where, String column, long value) {
        if (value < 1) {
            throw new IllegalArgumentException(
                    where + ": " + column + " must be at least 1, got " + value);
        }
        return value;
    }

    /** GB/s: finite and not negative; else what is wrong, and where. */
    private static double gbps(String where, double value) {
        if (!Double.isFinite(value) || value < 0) {
            throw new IllegalArgumentException(
                    where + ": GBps must be a finite number, 0 or more, got " + value);
        }
        return value;
    }

    /**
     * The lines in drawing order: kernel by CTA budget, then direct, staged, auto, any other kvio
     * path; the baselines (reference, contiguous) last.
     */
    List<String> lines() {
        TreeSet<Long> kernelCtas = new TreeSet<>();
        List<String> others = new ArrayList<>();
        for (Point p : points) {
            if (p.backend().equals("kernel")) {
                kernelCtas.add(p.ctas());
            } else if (!others.contains(p.backend())) {
                others.add(p.backend());
            }
        }
        List<String> order = new ArrayList<>();
        for (long c : kernelCtas) {
            order.add("kernel " + c + " CTAs");
        }
        for (String b : List.of("direct", "staged", "auto")) {
            if (others.remove(b)) {
                order.add(b);
            }
        }
        List<String> baselines = new ArrayList<>();
        for (String b : List.of("reference", "contiguous")) {
            if (others.remove(b)) {
                baselines.add(b);
            }
        }
        order.addAll(others);
        order.addAll(baselines);
        return order;
    }

    private static boolean isBaseline(String line) {
        return line.equals("reference") || line.equals("contiguous");
    }

    private static String label(String line) {
        return switch (line) {
            case "reference" -> "reference kernel (warp per row), dashed";
            case "contiguous" -> "ceiling: one contiguous copy, dashed";
            default -> "kvio " + line;
        };
    }

    /** direction -> row bytes -> the points at the largest index count measured there. */
    private Map<String, TreeMap<Long, List<Point>>> plotted() {
        Map<String, TreeMap<Long, List<Point>>> out = new LinkedHashMap<>();
        for (String d : DIRECTIONS) {
            TreeMap<Long, Long> largest = new TreeMap<>();
            for (Point p : points) {
                if (p.direction().equals(d)) {
                    largest.merge(p.rowBytes(), p.indices(), Math::max);
                }
            }
            TreeMap<Long, List<Point>> rows = new TreeMap<>();
            for (Point p : points) {
                if (p.direction().equals(d) && p.indices() == largest.get(p.rowBytes())) {
                    rows.computeIfAbsent(p.rowBytes(), k -> new ArrayList<>()).add(p);
                }
            }
            out.put(d, rows);
        }
        return out;
    }

    SvgPlot.Figure figure(String note) {
        List<String> order = lines();
        List<List<SvgPlot.Series>> panels = new ArrayList<>();
        for (TreeMap<Long, List<Point>> rows : plotted().values()) {
            Map<String, SvgPlot.Series> series = new LinkedHashMap<>();
            int solid = 0;
            for (String line : order) {
                boolean baseline = isBaseline(line);
                SvgPlot.Series s =
                        baseline
                                ? new SvgPlot.Series(
                                        label(line),
                                        line.equals("contiguous") ? "#000000" : "#888888",
                                        true)
                                : SvgPlot.series(label(line), solid++, false);
                series.put(line, s);
            }
            for (List<Point> atRow : rows.values()) {
                for (Point p : atRow) {
                    series.get(p.line()).points.put(p.rowBytes(), p.gbps());
                }
            }
            panels.add(new ArrayList<>(series.values()));
        }
        String title =
                "kvio_cuda_bench: GB/s by row size, largest index count per row size"
                        + (note == null || note.isBlank() ? "" : " (" + note + ")");
        return new SvgPlot.Figure(title, PANEL_TITLES, panels);
    }

    /**
     * The plotted points as a Markdown table: a row per direction and row size, a column per line,
     * and what auto chose.
     */
    void printMarkdown(PrintWriter out) {
        List<String> order = lines();
        boolean hasAuto = order.contains("auto");
        StringBuilder head = new StringBuilder("| direction | row | indices |");
        StringBuilder rule = new StringBuilder("|---|---:|---:|");
        for (String line : order) {
            head.append(' ').append(line.equals("contiguous") ? "ceiling" : line).append(" |");
            rule.append("---:|");
        }
        if (hasAuto) {
            head.append(" auto chose |");
            rule.append("---|");
        }
        out.println("GB/s at the largest index count measured per row size:");
        out.println();
        out.println(head);
        out.println(rule);
        for (Map.Entry<String, TreeMap<Long, List<Point>>> d : plotted().entrySet()) {
            for (Map.Entry<Long, List<Point>> row : d.getValue().entrySet()) {
                Map<String, Point> byLine = new LinkedHashMap<>();
                for (Point p : row.getValue()) {
                    byLine.put(p.line(), p);
                }
                StringBuilder r =
                        new StringBuilder(
                                String.format(
                                        Locale.ROOT,
                                        "| %s | %s | %d |",
                                        d.getKey(),
                                        BenchResult.bytesText(row.getKey()),
                                        row.getValue().get(0).indices()));
                for (String line : order) {
                    Point p = byLine.get(line);
                    r.append(p == null ? " - |" : String.format(Locale.ROOT, " %.1f |", p.gbps()));
                }
                if (hasAuto) {
                    Point a = byLine.get("auto");
                    r.append(' ').append(a == null ? "-" : a.chosen()).append(" |");
                }
                out.println(r);
            }
        }
    }
}
