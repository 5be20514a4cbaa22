/*
 * A small hand-written SVG line chart: two panels (backup, load), GB/s against row size on a log2
 * axis, solid and dashed polylines (a Figure). For `bench` results: one polyline per backend and
 * layout plus one dashed polyline per backend for its baseline, at one index count (the largest
 * that every row size reached); `plot` draws kvio_cuda_bench's sweep with it (CudaBenchPlot).
 * Plain SVG 1.1, no scripts or fonts to fetch, so a browser, an image viewer or a README shows it.
 */
package io.kvio.cli;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;

final class SvgPlot {
    private SvgPlot() {}

    private static final String[] COLORS = {
        "#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b", "#e377c2",
        "#7f7f7f", "#bcbd22", "#393b79", "#637939"
    };
    private static final int WIDTH = 1000;
    private static final int PANEL_W = 400;
    private static final int PANEL_H = 300;
    private static final int TOP = 70;
    private static final int LEFT = 70;
    private static final int GAP = 100;

    /** One line: its label and (row bytes -> GB/s) points. */
    static final class Series {
        final String label;
        final String color;
        final boolean dashed;
        final TreeMap<Long, Double> points = new TreeMap<>();

        Series(String label, String color, boolean dashed) {
            this.label = label;
            this.color = color;
            this.dashed = dashed;
        }
    }

    /**
     * What to draw: a title, the two panels' titles and their series; the legend lists the first
     * panel's series (the panels draw the same series).
     */
    record Figure(String title, List<String> panelTitles, List<List<Series>> panels) {}

    /** A series with the next colour of the palette (wrapping), solid or dashed. */
    static Series series(String label, int colorIndex, boolean dashed) {
        return new Series(label, COLORS[colorIndex % COLORS.length], dashed);
    }

    /** The index count plotted: the largest one whose points cover the most row sizes. */
    static long plottedTokens(BenchResult r) {
        Map<Long, Set<Long>> rowsPerCount = new TreeMap<>();
        for (BenchResult.Point p : r.points) {
            rowsPerCount.computeIfAbsent(p.tokens(), k -> new TreeSet<>()).add(p.rowBytes());
        }
        long best = -1;
        int cover = -1;
        for (Map.Entry<Long, Set<Long>> e : rowsPerCount.entrySet()) {
            if (e.getValue().size() >= cover) {
                cover = e.getValue().size();
                best = e.getKey();
            }
        }
        return best;
    }

    /** The series of one direction at the plotted index count: backend x layout, then baselines. */
    static List<Series> series(BenchResult r, Direction dir, long tokens) {
        Map<String, Series> lines = new LinkedHashMap<>();
        Map<String, Series> baselines = new LinkedHashMap<>();
        Set<String> keys = new LinkedHashSet<>();
        for (BenchResult.Point p : r.points) {
            keys.add(p.backend() + " " + p.layout());
        }
        List<String> keyList = new ArrayList<>(keys);
        for (BenchResult.Point p : r.points) {
            if (p.direction() != dir || p.tokens() != tokens) {
                continue;
            }
            String key = p.backend() + " " + p.layout();
            lines.computeIfAbsent(
                            key,
                            k -> new Series(k, COLORS[keyList.indexOf(k) % COLORS.length], false))
                    .points
                    .put(p.rowBytes(), p.gbps());
            baselines
                    .computeIfAbsent(
                            p.backend(),
                            b ->
                                    new Series(
                                            b + " baseline (" + p.baseline() + ")",
                                            baselines.isEmpty() ? "#000000" : "#888888",
                                            true))
                    .points
                    .put(p.rowBytes(), p.baselineGbps());
        }
        List<Series> out = new ArrayList<>(lines.values());
        out.addAll(baselines.values());
        return out;
    }

    /** The scales of both panels: row sizes [minX, maxX] on a log2 axis, GB/s [0, yTop]. */
    private record Axes(long minX, long maxX, double yTop) {
        static Axes of(List<List<Series>> panels) {
            double maxY = 0;
            long minX = Long.MAX_VALUE;
            long maxX = 0;
            for (List<Series> panel : panels) {
                for (Series line : panel) {
                    for (Map.Entry<Long, Double> e : line.points.entrySet()) {
                        maxY = Math.max(maxY, e.getValue());
                        minX = Math.min(minX, e.getKey());
                        maxX = Math.max(maxX, e.getKey());
                    }
                }
            }
            if (maxX == 0) {
                minX = 64;
                maxX = 65536;
            }
            if (minX == maxX) {
                maxX = minX * 2;
            }
            return new Axes(minX, maxX, niceCeiling(maxY));
        }

        double x(long v, int x0) {
            return x0 + PANEL_W * (log2(v) - log2(minX)) / (log2(maxX) - log2(minX));
        }

        double y(double gbps) {
            return TOP + PANEL_H - PANEL_H * Math.min(1, gbps / yTop);
        }
    }

    static String render(BenchResult r) {
        long tokens = plottedTokens(r);
        List<List<Series>> panels = new ArrayList<>();
        for (Direction d : Direction.values()) {
            panels.add(series(r, d, tokens));
        }
        String title =
                String.format(
                        Locale.ROOT,
                        "kvio %s bench on %s (%s): GB/s by row size, %s x %d layers, mha",
                        r.version,
                        r.platform,
                        r.mode,
                        tokens < 0 ? "no points" : tokens + " tokens", // nothing ran: none
                        r.layers);
        return render(
                new Figure(
                        title + "\n" + threadsTitle(r),
                        List.of(
                                "backup: device to host, all layers in one call",
                                "load: host to device, one call per layer"),
                        panels));
    }

    /**
     * Each backend that ran with the io threads it was measured with ("cpu 2 io threads, kernel no
     * io threads"), or "no backend ran".
     */
    static String threadsTitle(BenchResult r) {
        if (r.threads.isEmpty()) {
            return "no backend ran";
        }
        List<String> parts = new ArrayList<>();
        for (Map.Entry<String, Integer> e : r.threads.entrySet()) {
            parts.add(
                    e.getKey()
                            + " "
                            + (e.getValue() == null
                                    ? "no io threads"
                                    : Main.count(e.getValue(), "io thread", "io threads")));
        }
        return String.join(", ", parts);
    }

    static String render(Figure figure) {
        List<List<Series>> panels = figure.panels();
        Axes axes = Axes.of(panels);
        List<Series> legend = panels.isEmpty() ? List.of() : panels.get(0);
        int legendRows = (legend.size() + 2) / 3;
        int height = TOP + PANEL_H + 60 + legendRows * 20 + 20;

        StringBuilder svg = new StringBuilder();
        header(svg, figure.title(), height);
        for (int i = 0; i < panels.size(); i++) {
            int x0 = LEFT + i * (PANEL_W + GAP);
            panel(svg, x0, figure.panelTitles().get(i), panels.get(i), axes);
        }
        legend(svg, legend);
        svg.append("</svg>\n");
        return svg.toString();
    }

    /**
     * The XML declaration, the svg element, a white background and the title (a second line, after
     * a newline in it, smaller under the first).
     */
    private static void header(StringBuilder svg, String title, int height) {
        svg.append(
                String.format(
                        Locale.ROOT,
                        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>%n"
                                + "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\""
                                + " viewBox=\"0 0 %d %d\" font-family=\"sans-serif\" font-size=\"12\">%n",
                        WIDTH,
                        height,
                        WIDTH,
                        height));
        svg.append("<rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n");
        String[] lines = title.split("\n", 2);
        svg.append(text(WIDTH / 2, 24, "middle", 15, lines[0]));
        if (lines.length > 1) {
            svg.append(text(WIDTH / 2, 42, "middle", 12, lines[1]));
        }
    }

    /** Under the panels, three entries a row: a line sample and the label. */
    private static void legend(StringBuilder svg, List<Series> legend) {
        int ly = TOP + PANEL_H + 60;
        for (int i = 0; i < legend.size(); i++) {
            Series s = legend.get(i);
            int lx = LEFT + (i % 3) * 300;
            int y = ly + (i / 3) * 20;
            svg.append(
                    String.format(
                            Locale.ROOT,
                            "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"%s\""
                                    + " stroke-width=\"2\"%s/>%n",
                            lx,
                            y - 4,
                            lx + 28,
                            y - 4,
                            s.color,
                            s.dashed ? " stroke-dasharray=\"6,4\"" : ""));
            svg.append(text(lx + 34, y, "start", 12, s.label));
        }
    }

    private static void panel(
            StringBuilder svg, int x0, String title, List<Series> series, Axes axes) {
        svg.append(text(x0 + PANEL_W / 2, TOP - 12, "middle", 13, title));
        yGrid(svg, x0, axes.yTop);
        xTicks(svg, x0, axes);
        frame(svg, x0);
        for (Series s : series) {
            polyline(svg, x0, s, axes);
        }
    }

    /** Horizontal grid lines and GB/s labels at every fifth of yTop. */
    private static void yGrid(StringBuilder svg, int x0, double yTop) {
        int y0 = TOP + PANEL_H;
        for (int k = 0; k <= 5; k++) {
            double v = yTop * k / 5;
            double y = y0 - PANEL_H * k / 5.0;
            svg.append(
                    String.format(
                            Locale.ROOT,
                            "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#dddddd\"/>%n",
                            x0,
                            y,
                            x0 + PANEL_W,
                            y));
            svg.append(text(x0 - 6, (int) y + 4, "end", 11, trim(v)));
        }
    }

    /** x ticks at powers of two between minX and maxX (every other one when crowded). */
    private static void xTicks(StringBuilder svg, int x0, Axes axes) {
        int y0 = TOP + PANEL_H;
        int steps = (int) Math.round(log2(axes.maxX) - log2(axes.minX));
        int every = steps > 8 ? 2 : 1;
        for (int k = 0; k <= steps; k += every) {
            long v = axes.minX << k;
            double x = axes.x(v, x0);
            svg.append(
                    String.format(
                            Locale.ROOT,
                            "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#eeeeee\"/>%n",
                            x,
                            TOP,
                            x,
                            y0));
            svg.append(text((int) x, y0 + 16, "middle", 11, BenchResult.bytesText(v)));
        }
    }

    /** The panel's border and both axis titles. */
    private static void frame(StringBuilder svg, int x0) {
        int y0 = TOP + PANEL_H;
        svg.append(
                String.format(
                        Locale.ROOT,
                        "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\""
                                + " stroke=\"#444444\"/>%n",
                        x0,
                        TOP,
                        PANEL_W,
                        PANEL_H));
        svg.append(text(x0 + PANEL_W / 2, y0 + 36, "middle", 12, "row size (bytes, log scale)"));
        svg.append(
                String.format(
                        Locale.ROOT,
                        "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\" font-size=\"12\""
                                + " transform=\"rotate(-90 %d %d)\">GB/s</text>%n",
                        x0 - 45,
                        TOP + PANEL_H / 2,
                        x0 - 45,
                        TOP + PANEL_H / 2));
    }

    /** One series as a polyline, with its label as a tooltip. */
    private static void polyline(StringBuilder svg, int x0, Series s, Axes axes) {
        StringBuilder pts = new StringBuilder();
        for (Map.Entry<Long, Double> e : s.points.entrySet()) {
            if (pts.length() > 0) {
                pts.append(' ');
            }
            pts.append(
                    String.format(
                            Locale.ROOT,
                            "%.1f,%.1f",
                            axes.x(e.getKey(), x0),
                            axes.y(e.getValue())));
        }
        svg.append(
                String.format(
                        Locale.ROOT,
                        "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\"%s"
                                + " points=\"%s\"><title>%s</title></polyline>%n",
                        s.color,
                        s.dashed ? " stroke-dasharray=\"6,4\"" : "",
                        pts,
                        escape(s.label)));
    }

    private static double log2(double v) {
        return Math.log(v) / Math.log(2);
    }

    static double niceCeiling(double v) {
        if (v <= 0) {
            return 1;
        }
        double p = Math.pow(10, Math.floor(Math.log10(v)));
        for (double m : new double[] {1, 2, 2.5, 5, 10}) {
            if (m * p >= v) {
                return m * p;
            }
        }
        return 10 * p;
    }

    private static String trim(double v) {
        return v == Math.rint(v) ? String.valueOf((long) v) : String.format(Locale.ROOT, "%.1f", v);
    }

    private static String text(int x, int y, String anchor, int size, String s) {
        return String.format(
                Locale.ROOT,
                "<text x=\"%d\" y=\"%d\" text-anchor=\"%s\" font-size=\"%d\">%s</text>%n",
                x,
                y,
                anchor,
                size,
                escape(s));
    }

    static String escape(String s) {
        return s.replace("&", "&amp;")
                .replace("<", "&lt;")
                .replace(">", "&gt;")
                .replace("\"", "&quot;");
    }
}
