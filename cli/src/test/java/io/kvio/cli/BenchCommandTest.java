/*
 * `bench` run in-process: the CSV and JSON it writes parse and hold one point per row size x
 * index count x direction x layout of each available backend, with a baseline measured in the
 * same run, and the SVG plot is well-formed XML with one polyline per backend and layout plus
 * one per backend's baseline, in each of its two panels.
 */
package io.kvio.cli;

import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.kvio.IoBackend;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.stream.Collectors;
import org.testng.annotations.BeforeClass;
import org.testng.annotations.Test;
import org.w3c.dom.Document;
import org.w3c.dom.Element;
import org.w3c.dom.NodeList;

public class BenchCommandTest extends OutputDirTest {
    private CliRunner run;

    @BeforeClass
    public void runSmallSweep() throws Exception {
        run =
                CliRunner.run(
                        "bench",
                        "--rows",
                        "64,1024,4096",
                        "--tokens",
                        "16,64",
                        "--layouts",
                        "page_first,layer_first,page_head",
                        "--repeats",
                        "2",
                        "--csv",
                        out("b.csv"),
                        "--json",
                        out("b.json"),
                        "--svg",
                        out("b.svg"));
    }

    /** The sweep asked for above, written out: every point's key comes from these. */
    private static final List<String> ROWS = List.of("64", "1024", "4096");

    private static final List<String> TOKENS = List.of("16", "64");
    private static final List<String> LAYOUTS = List.of("page_first", "layer_first", "page_head");
    private static final List<String> DIRECTIONS = List.of("backup", "load");

    /** The names of the io backends that can run here, in the order a bench runs them. */
    private static List<String> availableNames() {
        return MatrixCommandTest.DEFAULT_BACKENDS.stream()
                .filter(IoBackend::isAvailable)
                .map(IoBackend::userName)
                .collect(Collectors.toList());
    }

    /** How many io backends can run here. */
    private static int available() {
        return availableNames().size();
    }

    /** A point's backend, layout, direction, row size and index count. */
    private static String key(
            String backend, String layout, String direction, String row, String tokens) {
        return String.join("/", backend, layout, direction, row, tokens);
    }

    @Test
    public void exitsZeroAndPrintsTheTable() {
        assertEquals(run.exit, 0, run.toString());
        assertTrue(run.out.contains("| backend | layout | direction | row | tokens |"), run.out);
        assertTrue(run.out.contains("- cpu: baseline = memcpy"), run.out);
        for (IoBackend b : IoBackend.values()) {
            if (!b.isAvailable()) {
                assertTrue(
                        run.out.contains(
                                "- " + b.userName() + ": UNAVAILABLE: " + b.unavailabilityCause()),
                        run.out);
            }
        }
    }

    @Test
    public void csvHasOnePointPerSweepStep() throws Exception {
        List<String> lines = Files.readAllLines(dir.resolve("b.csv"), StandardCharsets.UTF_8);
        assertEquals(lines.get(0), BenchResult.CSV_HEADER);
        int columns = BenchResult.CSV_HEADER.split(",").length;
        assertEquals(lines.size() - 1, available() * 3 * 2 * 2 * 3);
        Set<String> expected = new HashSet<>();
        for (String b : availableNames()) {
            for (String layout : LAYOUTS) {
                for (String direction : DIRECTIONS) {
                    for (String row : ROWS) {
                        for (String tokens : TOKENS) {
                            expected.add(key(b, layout, direction, row, tokens));
                        }
                    }
                }
            }
        }
        Set<String> keys = new HashSet<>();
        for (String line : lines.subList(1, lines.size())) {
            String[] f = line.split(",");
            assertEquals(f.length, columns, line);
            long row = Long.parseLong(f[3]);
            long heads = Long.parseLong(f[4]);
            long headBytes = Long.parseLong(f[5]);
            assertEquals(heads * headBytes, row, line);
            long bytes = Long.parseLong(f[8]);
            assertEquals(bytes, Long.parseLong(f[6]) * Long.parseLong(f[7]) * 2 * row, line);
            assertTrue(Double.parseDouble(f[11]) > 0, line);
            assertTrue(Double.parseDouble(f[15]) > 0, line);
            assertEquals(f[12], f[0].equals("cpu") ? "memcpy" : "contiguous", line);
            assertTrue(Double.parseDouble(f[10]) <= Double.parseDouble(f[9]), "best <= median");
            assertTrue(keys.add(key(f[0], f[1], f[2], f[3], f[6])), "duplicate " + line);
        }
        assertEquals(keys, expected, "the points are the sweep asked for, each once");
    }

    @Test
    public void jsonMatchesTheCsv() throws Exception {
        JsonNode j = readJson("b.json");
        assertEquals(j.get("backends").size(), MatrixCommandTest.DEFAULT_BACKENDS.size());
        JsonNode points = j.get("points");
        List<String> csv = Files.readAllLines(dir.resolve("b.csv"), StandardCharsets.UTF_8);
        assertEquals(points.size(), csv.size() - 1);
        for (int i = 0; i < points.size(); i++) {
            // The same point as the CSV's line i: its key, sizes and times (the CSV prints
            // seconds to 9 decimals).
            JsonNode p = points.get(i);
            String[] f = csv.get(i + 1).split(",");
            assertEquals(
                    key(
                            p.get("backend").asText(),
                            p.get("layout").asText(),
                            p.get("direction").asText(),
                            p.get("rowBytes").asText(),
                            p.get("tokens").asText()),
                    key(f[0], f[1], f[2], f[3], f[6]));
            assertEquals(p.get("bytes").asLong(), Long.parseLong(f[8]), f[8]);
            assertEquals(p.get("seconds").asDouble(), Double.parseDouble(f[9]), 1e-9);
            assertEquals(p.get("bestSeconds").asDouble(), Double.parseDouble(f[10]), 1e-9);
            assertEquals(p.get("baselineBestSeconds").asDouble(), Double.parseDouble(f[14]), 1e-9);
        }
        for (JsonNode p : points) {
            double gbps = p.get("bytes").asLong() / p.get("bestSeconds").asDouble() / 1e9;
            assertEquals(p.get("gbps").asDouble(), gbps, gbps * 1e-9);
            assertEquals(
                    p.get("ratio").asDouble(),
                    p.get("baselineBestSeconds").asDouble() / p.get("bestSeconds").asDouble(),
                    1e-9);
        }
        List<String> names = new ArrayList<>();
        for (JsonNode b : j.get("backends")) {
            names.add(b.get("name").asText());
            if (b.get("available").asBoolean()) {
                assertTrue(b.get("baseline").asText().length() > 0, b.toString());
            } else {
                assertTrue(b.get("cause").asText().length() > 0, b.toString());
            }
        }
        assertEquals(
                names,
                MatrixCommandTest.DEFAULT_BACKENDS.stream()
                        .map(IoBackend::userName)
                        .collect(Collectors.toList()));
    }

    @Test
    public void svgIsWellFormedWithOnePolylinePerSeries() throws Exception {
        Document svg = readXml("b.svg");
        Element root = svg.getDocumentElement();
        assertEquals(root.getTagName(), "svg");
        NodeList lines = root.getElementsByTagName("polyline");
        // per panel: backends x 3 layouts + one baseline per backend; two panels
        assertEquals(lines.getLength(), 2 * (available() * 3 + available()));
        for (int i = 0; i < lines.getLength(); i++) {
            Element l = (Element) lines.item(i);
            // every series has a point per row size (3), at the plotted index count
            assertEquals(l.getAttribute("points").trim().split(" ").length, 3, l.toString());
        }
        assertTrue(root.getTextContent().contains("64 tokens"), "plots the largest index count");
    }

    @Test
    public void tokensMustBeWholePages() {
        CliRunner.run("bench", "--tokens", "20")
                .assertUsage("multiple of the page size 16; e.g. --tokens 64,256");
    }

    @Test
    public void niceAxisCeiling() {
        assertEquals(SvgPlot.niceCeiling(7.3), 10.0);
        assertEquals(SvgPlot.niceCeiling(11), 20.0);
        assertEquals(SvgPlot.niceCeiling(0.3), 0.5);
        assertEquals(SvgPlot.niceCeiling(0), 1.0);
    }
}
