/*
 * The matrix's results and their three renderings: a Markdown table on stdout (rows are
 * configurations, columns are backends, long reasons as numbered notes under the table), JSON
 * (Jackson) and JUnit XML (one test case per cell: FAIL is a <failure>, UNSUPPORTED and
 * UNAVAILABLE are <skipped> with the reason, so CI systems show the matrix natively).
 */
package io.kvio.cli;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import javax.xml.parsers.DocumentBuilderFactory;
import javax.xml.parsers.ParserConfigurationException;
import javax.xml.transform.OutputKeys;
import javax.xml.transform.Transformer;
import javax.xml.transform.TransformerException;
import javax.xml.transform.TransformerFactory;
import javax.xml.transform.dom.DOMSource;
import javax.xml.transform.stream.StreamResult;
import org.w3c.dom.Document;
import org.w3c.dom.Element;

final class MatrixReport {
    /** One column: an io backend, whether it is available here, and why not. */
    record Backend(String name, String unavailabilityCause) {
        /** Adds {name, available, cause when unavailable} to a JSON array; returns it. */
        ObjectNode addTo(ArrayNode array) {
            ObjectNode o = array.addObject();
            o.put("name", name);
            o.put("available", unavailabilityCause == null);
            if (unavailabilityCause != null) {
                o.put("cause", unavailabilityCause);
            }
            return o;
        }
    }

    final String version;
    final String platform;
    final String mode;
    final List<MatrixConfig> configs;
    final List<Backend> backends;

    /** cells.get(row).get(column). */
    final List<List<Cell>> cells;

    final double seconds;

    MatrixReport(
            String version,
            String platform,
            String mode,
            List<MatrixConfig> configs,
            List<Backend> backends,
            List<List<Cell>> cells,
            double seconds) {
        this.version = version;
        this.platform = platform;
        this.mode = mode;
        this.configs = configs;
        this.backends = backends;
        this.cells = cells;
        this.seconds = seconds;
    }

    Map<Cell.Status, Integer> counts() {
        Map<Cell.Status, Integer> counts = new EnumMap<>(Cell.Status.class);
        for (Cell.Status s : Cell.Status.values()) {
            counts.put(s, 0);
        }
        for (List<Cell> row : cells) {
            for (Cell c : row) {
                counts.merge(c.status(), 1, Integer::sum);
            }
        }
        return counts;
    }

    boolean anyFail() {
        return counts().get(Cell.Status.FAIL) > 0;
    }

    String summary() {
        Map<Cell.Status, Integer> c = counts();
        return String.format(
                Locale.ROOT,
                "%d cells: %d PASS, %d FAIL, %d UNSUPPORTED, %d UNAVAILABLE",
                configs.size() * backends.size(),
                c.get(Cell.Status.PASS),
                c.get(Cell.Status.FAIL),
                c.get(Cell.Status.UNSUPPORTED),
                c.get(Cell.Status.UNAVAILABLE));
    }

    // ---- Markdown ----

    void printMarkdown(PrintWriter out) {
        out.printf(
                Locale.ROOT,
                "## kvio %s hardware matrix (%s, %s): %s x %s%n%n",
                version,
                platform,
                mode,
                Main.count(configs.size(), "configuration", "configurations"),
                Main.count(backends.size(), "io backend", "io backends"));
        StringBuilder header =
                new StringBuilder("| kind | host layout | device form | granularity | direction |")
                        .append(" page | row | host layers |");
        StringBuilder rule = new StringBuilder("|---|---|---|---|---|---|---|---|");
        for (Backend b : backends) {
            header.append(' ').append(b.name()).append(" |");
            rule.append("---|");
        }
        out.println(header);
        out.println(rule);
        // note text (without the backends) -> backends it applies to; numbered in order
        Map<String, Set<String>> notes = new LinkedHashMap<>();
        for (int r = 0; r < configs.size(); r++) {
            MatrixConfig cfg = configs.get(r);
            StringBuilder line =
                    new StringBuilder()
                            .append("| ")
                            .append(cfg.kind().userName())
                            .append(" | ")
                            .append(cfg.layout().userName())
                            .append(" | ")
                            .append(cfg.deviceForm().userName)
                            .append(" | ")
                            .append(cfg.granularity().userName())
                            .append(" | ")
                            .append(cfg.direction().userName)
                            .append(" | ")
                            .append(cfg.pageSize())
                            .append(" | ")
                            .append(cfg.row())
                            .append(" | ")
                            .append(cfg.hostLayersText())
                            .append(" |");
            for (Cell c : cells.get(r)) {
                line.append(' ').append(markdownCell(c, notes)).append(" |");
            }
            out.println(line);
        }
        out.println();
        if (!notes.isEmpty()) {
            int n = 0;
            for (Map.Entry<String, Set<String>> note : notes.entrySet()) {
                out.println(
                        "- ["
                                + ++n
                                + "] "
                                + String.join(", ", note.getValue())
                                + ": "
                                + note.getKey().replace("|", "\\|"));
            }
            out.println();
        }
        out.printf(Locale.ROOT, "%s (%.1f s)%n", summary(), seconds);
    }

    private static String markdownCell(Cell c, Map<String, Set<String>> notes) {
        if (c.status() == Cell.Status.PASS) {
            return String.format(Locale.ROOT, "PASS %.2f GB/s", c.gbps());
        }
        String key =
                c.status() == Cell.Status.FAIL ? c.config().id() + ": " + c.detail() : c.detail();
        notes.computeIfAbsent(key, k -> new LinkedHashSet<>()).add(c.backend());
        int n = 1;
        for (String k : notes.keySet()) {
            if (k.equals(key)) {
                break;
            }
            n++;
        }
        return c.status() + " [" + n + "]";
    }

    // ---- JSON ----

    ObjectNode toJson() {
        ObjectNode root = ReportFiles.jsonRoot(version, platform, mode);
        root.put("seconds", seconds);
        ObjectNode summary = root.putObject("summary");
        summary.put("configurations", configs.size());
        summary.put("cells", configs.size() * backends.size());
        for (Map.Entry<Cell.Status, Integer> e : counts().entrySet()) {
            summary.put(e.getKey().name(), e.getValue());
        }
        ArrayNode bs = root.putArray("backends");
        for (Backend b : backends) {
            b.addTo(bs);
        }
        ArrayNode rows = root.putArray("configurations");
        for (int r = 0; r < configs.size(); r++) {
            MatrixConfig cfg = configs.get(r);
            ObjectNode o = rows.addObject();
            o.put("id", cfg.id());
            o.put("kind", cfg.kind().userName());
            o.put("layout", cfg.layout().userName());
            o.put("deviceForm", cfg.deviceForm().userName);
            o.put("granularity", cfg.granularity().userName());
            o.put("direction", cfg.direction().userName);
            o.put("pageSize", cfg.pageSize());
            o.put("heads", cfg.heads());
            o.put("headBytes", cfg.headBytes());
            o.put("rowBytes", cfg.rowBytes());
            o.put("deviceLayers", cfg.deviceLayers());
            o.put("hostLayerStart", cfg.hostLayerStart());
            o.put("hostLayers", cfg.hostLayers());
            ObjectNode cellsNode = o.putObject("cells");
            for (Cell c : cells.get(r)) {
                ObjectNode cn = cellsNode.putObject(c.backend());
                cn.put("status", c.status().name());
                if (c.status() == Cell.Status.PASS) {
                    cn.put("bytes", c.bytes());
                    cn.put("seconds", c.nanos() / 1e9);
                    cn.put("gbps", Math.round(c.gbps() * 1000) / 1000.0);
                } else {
                    cn.put("detail", c.detail());
                }
            }
        }
        return root;
    }

    void writeJson(Path file) throws IOException {
        ReportFiles.writeJson(file, toJson());
    }

    // ---- JUnit XML ----

    Document toJUnit() {
        Document doc;
        try {
            doc = DocumentBuilderFactory.newInstance().newDocumentBuilder().newDocument();
        } catch (ParserConfigurationException e) {
            throw new IllegalStateException(e);
        }
        Map<Cell.Status, Integer> total = counts();
        Element suites = doc.createElement("testsuites");
        suites.setAttribute("name", "kvio matrix " + mode);
        suites.setAttribute("tests", String.valueOf(configs.size() * backends.size()));
        suites.setAttribute("failures", String.valueOf(total.get(Cell.Status.FAIL)));
        suites.setAttribute("errors", "0");
        suites.setAttribute(
                "skipped",
                String.valueOf(
                        total.get(Cell.Status.UNSUPPORTED) + total.get(Cell.Status.UNAVAILABLE)));
        suites.setAttribute("time", String.format(Locale.ROOT, "%.3f", seconds));
        doc.appendChild(suites);
        for (int b = 0; b < backends.size(); b++) {
            suites.appendChild(suite(doc, b));
        }
        return doc;
    }

    /** One backend's column as a testsuite. */
    private Element suite(Document doc, int b) {
        Backend backend = backends.get(b);
        List<Cell> column = new ArrayList<>();
        for (List<Cell> row : cells) {
            column.add(row.get(b));
        }
        int failures = 0;
        int skipped = 0;
        double time = 0;
        for (Cell c : column) {
            failures += c.status() == Cell.Status.FAIL ? 1 : 0;
            skipped +=
                    c.status() == Cell.Status.UNSUPPORTED || c.status() == Cell.Status.UNAVAILABLE
                            ? 1
                            : 0;
            time += c.nanos() / 1e9;
        }
        Element suite = doc.createElement("testsuite");
        suite.setAttribute("name", "kvio.matrix." + backend.name());
        suite.setAttribute("tests", String.valueOf(column.size()));
        suite.setAttribute("failures", String.valueOf(failures));
        suite.setAttribute("errors", "0");
        suite.setAttribute("skipped", String.valueOf(skipped));
        suite.setAttribute("time", String.format(Locale.ROOT, "%.3f", time));
        for (Cell c : column) {
            suite.appendChild(testCase(doc, backend, c));
        }
        return suite;
    }

    /** One cell as a testcase: PASS with its figures, FAIL a failure, the others skipped. */
    private static Element testCase(Document doc, Backend backend, Cell c) {
        Element tc = doc.createElement("testcase");
        tc.setAttribute("classname", "kvio.matrix." + backend.name());
        tc.setAttribute("name", c.config().id());
        tc.setAttribute("time", String.format(Locale.ROOT, "%.6f", c.nanos() / 1e9));
        switch (c.status()) {
            case PASS:
                {
                    Element so = doc.createElement("system-out");
                    so.setTextContent(
                            String.format(
                                    Locale.ROOT, "PASS: %d bytes, %.3f GB/s", c.bytes(), c.gbps()));
                    tc.appendChild(so);
                    break;
                }
            case FAIL:
                {
                    Element f = doc.createElement("failure");
                    f.setAttribute("type", "FAIL");
                    f.setAttribute("message", c.detail());
                    f.setTextContent(c.config().id() + " on " + c.backend() + ": " + c.detail());
                    tc.appendChild(f);
                    break;
                }
            default:
                {
                    Element s = doc.createElement("skipped");
                    s.setAttribute("message", c.status() + ": " + c.detail());
                    tc.appendChild(s);
                    break;
                }
        }
        return tc;
    }

    void writeJUnit(Path file) throws IOException {
        try {
            Transformer t = TransformerFactory.newInstance().newTransformer();
            t.setOutputProperty(OutputKeys.INDENT, "yes");
            t.setOutputProperty(OutputKeys.ENCODING, "UTF-8");
            t.setOutputProperty("{http://xml.apache.org/xslt}indent-amount", "2");
            try (var w = Files.newBufferedWriter(file)) {
                t.transform(new DOMSource(toJUnit()), new StreamResult(w));
            }
        } catch (TransformerException e) {
            throw new IOException("writing " + file + ": " + e.getMessage(), e);
        }
    }
}
