/*
 * `plot` over a TSV in kvio_cuda_bench's format (its header line as the bench writes it, rows of
 * every test it writes, and the beside-compute table gpu-check appends): the Markdown table holds
 * exactly the points at the largest index count per row size, written out here by hand, the SVG
 * has one polyline per line in each panel with the right points, and a file that is not such a
 * TSV is a usage error that says why.
 */
package io.kvio.cli;

import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertFalse;
import static org.testng.Assert.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.testng.annotations.BeforeClass;
import org.testng.annotations.Test;
import org.w3c.dom.Document;
import org.w3c.dom.Element;
import org.w3c.dom.NodeList;

public class PlotCommandTest extends OutputDirTest {
    /** The header line kvio_cuda_bench writes (native/bench/cuda_transfer_bench.cpp). */
    private static final String HEADER =
            "test\tbackend\tdirection\trow_bytes\tindices\tctas\tGBps\tengine_calls\tus\tchosen";

    private static final List<String> ROWS =
            List.of(
                    HEADER,
                    // 256 B rows: 64 and 4096 indices; only 4096 is plotted
                    "rows\tkernel\td2h\t256\t64\t1\t1.00\t-1.0\t-1.0\t-",
                    "rows\tkernel\td2h\t256\t64\t4\t2.00\t-1.0\t-1.0\t-",
                    "rows\tkernel\td2h\t256\t4096\t1\t11.50\t-1.0\t-1.0\t-",
                    "rows\tkernel\td2h\t256\t4096\t4\t31.25\t-1.0\t-1.0\t-",
                    "rows\tdirect\td2h\t256\t4096\t0\t0.90\t4096.0\t-1.0\t-",
                    "rows\tstaged\td2h\t256\t4096\t0\t20.00\t1.0\t-1.0\t-",
                    "rows\tauto\td2h\t256\t4096\t4\t30.00\t0.0\t-1.0\tkernel",
                    "rows\treference\td2h\t256\t4096\t2\t33.70\t-1.0\t-1.0\t-",
                    "rows\tcontiguous\td2h\t256\t4096\t0\t55.10\t-1.0\t-1.0\t-",
                    // 64 KiB rows: only 64 indices (the bench's 2 GiB cap is not reached here)
                    "rows\tkernel\td2h\t65536\t64\t1\t18.00\t-1.0\t-1.0\t-",
                    "rows\tkernel\td2h\t65536\t64\t4\t51.80\t-1.0\t-1.0\t-",
                    "rows\tdirect\td2h\t65536\t64\t0\t34.00\t64.0\t-1.0\t-",
                    "rows\tstaged\td2h\t65536\t64\t0\t50.00\t1.0\t-1.0\t-",
                    "rows\tauto\td2h\t65536\t64\t4\t51.00\t0.0\t-1.0\tkernel",
                    "rows\treference\td2h\t65536\t64\t2\t52.30\t-1.0\t-1.0\t-",
                    "rows\tcontiguous\td2h\t65536\t64\t0\t55.50\t-1.0\t-1.0\t-",
                    "rows\tkernel\th2d\t256\t4096\t1\t10.80\t-1.0\t-1.0\t-",
                    "rows\tkernel\th2d\t256\t4096\t4\t14.10\t-1.0\t-1.0\t-",
                    "rows\tdirect\th2d\t256\t4096\t0\t0.20\t4096.0\t-1.0\t-",
                    "rows\tstaged\th2d\t256\t4096\t0\t19.00\t1.0\t-1.0\t-",
                    "rows\tauto\th2d\t256\t4096\t4\t14.00\t0.0\t-1.0\tkernel",
                    "rows\treference\th2d\t256\t4096\t2\t10.80\t-1.0\t-1.0\t-",
                    "rows\tcontiguous\th2d\t256\t4096\t0\t55.20\t-1.0\t-1.0\t-",
                    "rows\tkernel\th2d\t65536\t64\t1\t17.00\t-1.0\t-1.0\t-",
                    "rows\tkernel\th2d\t65536\t64\t4\t50.00\t-1.0\t-1.0\t-",
                    "rows\tdirect\th2d\t65536\t64\t0\t33.00\t64.0\t-1.0\t-",
                    "rows\tstaged\th2d\t65536\t64\t0\t49.00\t1.0\t-1.0\t-",
                    "rows\tauto\th2d\t65536\t64\t4\t49.50\t0.0\t-1.0\tkernel",
                    "rows\treference\th2d\t65536\t64\t2\t40.00\t-1.0\t-1.0\t-",
                    "rows\tcontiguous\th2d\t65536\t64\t0\t55.30\t-1.0\t-1.0\t-",
                    // other tests of the bench: not plotted
                    "per_layer_page_first\tkernel\th2d\t4096\t8192\t4\t47.70\t-1.0\t-1.0\t-",
                    "submit\tkernel\th2d\t4096\t64\t4\t0.00\t-1.0\t12.8\t-",
                    "",
                    "# kvio_cuda_bench --beside-compute",
                    "executor\tcompute\tload_GBps\tlayers\tcompute_TFLOPs\tcompute_x\tchosen",
                    "kernel\tbeside\t13.70\t32\t657.00\t1.0000\t-");

    private CliRunner run;

    @BeforeClass
    public void plot() throws Exception {
        Files.write(dir.resolve("bench.tsv"), ROWS, StandardCharsets.UTF_8);
        run =
                CliRunner.run(
                        "plot",
                        out("bench.tsv"),
                        "--svg",
                        out("bench.svg"),
                        "--title",
                        "H200 & driver <570>");
    }

    @Test
    public void printsThePlottedPointsAsATable() {
        assertEquals(run.exit, Main.EXIT_OK, run.toString());
        String head =
                "| direction | row | indices | kernel 1 CTAs | kernel 4 CTAs | direct | staged |"
                        + " auto | reference | ceiling | auto chose |";
        List<String> expected =
                List.of(
                        head,
                        "| d2h | 256 B | 4096 | 11.5 | 31.3 | 0.9 | 20.0 | 30.0 | 33.7 | 55.1 | kernel |",
                        "| d2h | 64 KiB | 64 | 18.0 | 51.8 | 34.0 | 50.0 | 51.0 | 52.3 | 55.5 | kernel |",
                        "| h2d | 256 B | 4096 | 10.8 | 14.1 | 0.2 | 19.0 | 14.0 | 10.8 | 55.2 | kernel |",
                        "| h2d | 64 KiB | 64 | 17.0 | 50.0 | 33.0 | 49.0 | 49.5 | 40.0 | 55.3 | kernel |");
        List<String> table = new ArrayList<>();
        for (String line : run.out.split("\n")) {
            if (line.startsWith("| ")) table.add(line);
        }
        assertEquals(table, expected, run.out);
        assertTrue(run.err.contains("wrote " + out("bench.svg")), run.err);
    }

    @Test
    public void drawsEachLineInBothPanelsAtThePlottedPoints() throws Exception {
        Document svg = readXml("bench.svg");
        NodeList lines = svg.getElementsByTagName("polyline");
        // 7 lines (kernel 1 and 4 CTAs, direct, staged, auto, reference, ceiling) x 2 panels
        assertEquals(lines.getLength(), 14);
        int dashed = 0;
        for (int i = 0; i < lines.getLength(); i++) {
            Element line = (Element) lines.item(i);
            // two row sizes plotted: two points per line, none from the 64-index 256 B rows
            assertEquals(line.getAttribute("points").split(" ").length, 2, line.getTextContent());
            if (!line.getAttribute("stroke-dasharray").isEmpty()) dashed++;
        }
        assertEquals(dashed, 4, "the reference and the ceiling are dashed in both panels");
        String text = svg.getDocumentElement().getTextContent();
        assertTrue(text.contains("(H200 & driver <570>)"), "the title is escaped and kept");
        assertTrue(text.contains("kvio kernel 4 CTAs"), text);
        assertFalse(text.contains("per_layer"), text);
    }

    @Test
    public void refusesAFileThatIsNotTheBenchsTsv() throws Exception {
        Files.write(
                dir.resolve("cpu.csv"),
                List.of("backend,layout,direction,row_bytes", "cpu,page_first,load,4096"),
                StandardCharsets.UTF_8);
        CliRunner.run("plot", out("cpu.csv"), "--svg", out("x.svg"))
                .assertUsage("has no column 'test'", "not a kvio_cuda_bench TSV");
        assertFalse(Files.exists(dir.resolve("x.svg")));
        Files.write(
                dir.resolve("nosweep.tsv"),
                List.of(HEADER, "submit\tkernel\th2d\t4096\t64\t4\t0.00\t-1.0\t12.8\t-"),
                StandardCharsets.UTF_8);
        CliRunner.run("plot", out("nosweep.tsv"), "--svg", out("x.svg"))
                .assertUsage("no row-sweep results");
        Files.write(
                dir.resolve("bad.tsv"),
                List.of(HEADER, "rows\tkernel\td2h\t256\tmany\t4\t1.0\t-1.0\t-1.0\t-"),
                StandardCharsets.UTF_8);
        CliRunner.run("plot", out("bad.tsv"), "--svg", out("x.svg"))
                .assertUsage("line 2: not a number");
        CliRunner.run("plot", out("missing.tsv"), "--svg", out("x.svg"))
                .assertUsage("no such file");
        CliRunner.run("plot", out("bench.tsv")).assertUsage("--svg");
    }

    @Test
    public void anUnreadableTsvIsAUsageErrorNamingIt() throws Exception {
        CliRunner.run("plot", dir.toString(), "--svg", out("x.svg"))
                .assertUsage(dir + " is a folder, not a TSV file");
        Files.write(
                dir.resolve("latin1.tsv"),
                (HEADER + "\nrows\tkernel\td2h\t256\t64\t1\t1.0\t-1.0\t-1.0\t\u00e9\n")
                        .getBytes(StandardCharsets.ISO_8859_1));
        CliRunner.run("plot", out("latin1.tsv"), "--svg", out("x.svg"))
                .assertUsage("cannot read " + out("latin1.tsv") + ": not UTF-8 text");
        assertFalse(Files.exists(dir.resolve("x.svg")));
    }

    @Test
    public void refusesImpossibleNumbersWithTheLine() throws Exception {
        String[][] cases = {
            {"NaN", "256", "64", "line 3: GBps must be a finite number, 0 or more, got NaN"},
            {
                "Infinity",
                "256",
                "64",
                "line 3: GBps must be a finite number, 0 or more, got Infinity"
            },
            {"-1.5", "256", "64", "line 3: GBps must be a finite number, 0 or more, got -1.5"},
            {"1.0", "0", "64", "line 3: row_bytes must be at least 1, got 0"},
            {"1.0", "256", "-64", "line 3: indices must be at least 1, got -64"},
        };
        for (String[] c : cases) {
            Files.write(
                    dir.resolve("impossible.tsv"),
                    List.of(
                            HEADER,
                            "rows\tkernel\td2h\t256\t64\t1\t1.00\t-1.0\t-1.0\t-",
                            "rows\tkernel\td2h\t"
                                    + c[1]
                                    + "\t"
                                    + c[2]
                                    + "\t4\t"
                                    + c[0]
                                    + "\t-1.0\t-1.0\t-"),
                    StandardCharsets.UTF_8);
            CliRunner.run("plot", out("impossible.tsv"), "--svg", out("x.svg")).assertUsage(c[3]);
        }
        // A direction the bench never writes, and a negative CTA count: refused, not dropped.
        String[][] lines = {
            {
                "rows\tkernel\tsideways\t256\t64\t4\t1.00\t-1.0\t-1.0\t-",
                "line 3: direction 'sideways' is not one the bench writes (d2h, h2d)"
            },
            {
                "rows\tkernel\td2h\t256\t64\t-4\t1.00\t-1.0\t-1.0\t-",
                "line 3: ctas must be at least 0, got -4"
            },
        };
        for (String[] c : lines) {
            Files.write(
                    dir.resolve("impossible.tsv"),
                    List.of(HEADER, "rows\tkernel\td2h\t256\t64\t1\t1.00\t-1.0\t-1.0\t-", c[0]),
                    StandardCharsets.UTF_8);
            CliRunner.run("plot", out("impossible.tsv"), "--svg", out("x.svg")).assertUsage(c[1]);
        }
        assertFalse(Files.exists(dir.resolve("x.svg")));
    }

    @Test
    public void theSvgCannotBeTheTsvItReads() throws Exception {
        Path copy = dir.resolve("own.tsv");
        Files.write(copy, ROWS, StandardCharsets.UTF_8);
        Path link = dir.resolve("own-link.svg");
        Files.createSymbolicLink(link, copy);
        for (String svg : new String[] {copy.toString(), link.toString()}) {
            CliRunner r = CliRunner.run("plot", copy.toString(), "--svg", svg);
            r.assertUsage("--svg " + svg + ": is the TSV file, which this command reads");
            assertEquals(r.out, "", "refused before reading the TSV");
        }
        assertEquals(Files.readAllLines(copy, StandardCharsets.UTF_8), ROWS, "the TSV unchanged");
    }

    @Test
    public void anSvgPathThatCannotBeWrittenIsAUsageErrorFirst() {
        String missing = dir.resolve("no-such-folder").resolve("p.svg").toString();
        CliRunner r = CliRunner.run("plot", out("bench.tsv"), "--svg", missing);
        r.assertUsage("--svg " + missing + ": no folder");
        assertEquals(r.out, "", "refused before reading the TSV");
    }

    @Test
    public void anSvgThatCannotBeWrittenAfterAllIsOneLineAndExitThree() {
        if (!Files.isWritable(java.nio.file.Path.of("/dev/full"))) {
            throw new org.testng.SkipException("no /dev/full here");
        }
        CliRunner r = CliRunner.run("plot", out("bench.tsv"), "--svg", "/dev/full");
        r.assertExit(Main.EXIT_ERROR, "kvio: could not write --svg /dev/full");
        assertTrue(r.out.contains("| d2h | 256 B | 4096 |"), "the table is printed: " + r.out);
    }
}
