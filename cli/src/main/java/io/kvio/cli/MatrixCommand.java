/*
 * `kvio-cli matrix`: the hardware-matrix run teams put in CI on each of their machines. Runs the
 * conformance suite (MatrixConfig: every pool kind x host layout x device pool form x granularity
 * x direction x page and row sizes, all layers and layer-sharded) on every io backend, checks each transfer
 * byte for byte against the oracle (MatrixRunner, io.kvio.oracle), and prints a Markdown table on
 * stdout; --json and --junit write the same results for machines. Progress goes to stderr.
 */
package io.kvio.cli;

import io.kvio.IoBackend;
import io.kvio.Kvio;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import org.bytedeco.javacpp.Loader;
import picocli.CommandLine.ArgGroup;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

@Command(
        name = "matrix",
        mixinStandardHelpOptions = true,
        sortOptions = false,
        description = {
            "Runs the conformance suite on every io backend and prints a table: rows are"
                    + " configurations (pool kind x host layout x device pool form x granularity"
                    + " x direction x page and row size, all layers and layer-sharded), columns"
                    + " are backends. Device pool forms: allocated (by kvio), per_component and"
                    + " layer_table (separate caller allocations per component or per layer). Each"
                    + " cell is PASS (GB/s), FAIL (first mismatch against an independent oracle),"
                    + " UNSUPPORTED (the support rule's reason) or UNAVAILABLE (the cause, e.g."
                    + " no CUDA driver).",
            ""
        },
        footer = {
            "",
            "Examples:",
            "  java -jar kvio-cli.jar matrix --quick",
            "  java -jar kvio-cli.jar matrix --full --require kernel,direct \\",
            "      --junit matrix.xml",
            "",
            "Exit status: 0 no FAIL, 1 a FAIL, 2 bad arguments (an output file that cannot be"
                    + " written is one, checked before the run), 3 kvio error or, in a run"
                    + " without FAIL, an output file that could not be written after all (the"
                    + " others are still written; a FAIL stays 1), 4 no FAIL, but a backend"
                    + " named by --require is unavailable, or no backend selected is (no cell"
                    + " ran)."
        })
public final class MatrixCommand implements Callable<Integer> {
    @Spec CommandSpec spec;

    @Option(
            names = "--backend",
            paramLabel = "NAME",
            split = ",",
            arity = "1",
            converter = Converters.Backend.class,
            description =
                    "io backends to run: cpu, kernel, direct, kernel_ascend, auto, staged [all but"
                            + " auto, which runs one of the others per transfer; unavailable ones are"
                            + " reported with the cause]")
    List<IoBackend> backends;

    static final class Mode {
        @Option(
                names = "--quick",
                description =
                        "page size 16, one row size per kind: 64 configurations per device form"
                                + " [default]")
        boolean quick;

        @Option(
                names = "--full",
                description =
                        "page sizes 1, 16, 64 and rows of 8 to 4096 bytes: 1056 configurations"
                                + " per device form")
        boolean full;
    }

    @ArgGroup(exclusive = true, multiplicity = "0..1")
    Mode mode;

    @Option(
            names = "--device-forms",
            paramLabel = "FORM",
            split = ",",
            arity = "1",
            converter = Converters.Form.class,
            description =
                    "device pool forms: allocated (kvio allocates one region), per_component (a"
                            + " separate allocation per component), layer_table (one per"
                            + " component and layer) [all three]")
    List<DeviceForm> deviceForms;

    @Option(
            names = "--json",
            converter = Converters.OutputFile.class,
            paramLabel = "FILE",
            description = "also write the results as JSON")
    Path json;

    @Option(
            names = "--junit",
            converter = Converters.OutputFile.class,
            paramLabel = "FILE",
            description = "also write JUnit XML: one test case per cell")
    Path junit;

    @Mixin RequiredBackends required;

    @Option(
            names = "--threads",
            paramLabel = "N",
            description =
                    "io threads of cpu (and auto without a GPU): 1 to 1024, or 0 for one per"
                            + " core (the default); the device backends have none")
    int threads;

    @Option(
            names = "--seed",
            paramLabel = "N",
            description = "seed of the data and slot choice [${DEFAULT-VALUE}]")
    long seed = 42;

    @Option(names = "--quiet", description = "no progress on stderr")
    boolean quiet;

    @Option(names = "--inject-fault", hidden = true)
    boolean injectFault;

    @Override
    public Integer call() {
        PrintWriter out = Main.out(spec);
        PrintWriter err = Main.err(spec);
        boolean full = mode != null && mode.full;
        List<IoBackend> selected =
                backends == null || backends.isEmpty()
                        ? Converters.concreteBackends()
                        : Converters.distinct(backends);
        List<MatrixConfig> configs =
                deviceForms == null || deviceForms.isEmpty()
                        ? MatrixConfig.list(full)
                        : MatrixConfig.list(full, deviceForms);
        List<MatrixReport.Backend> columns = new ArrayList<>();
        for (IoBackend b : selected) {
            columns.add(new MatrixReport.Backend(b.userName(), b.unavailabilityCause()));
        }
        int threadCount = Converters.threads(spec, "--threads", threads);
        Map<String, Path> files = new LinkedHashMap<>();
        files.put("--json", json);
        files.put("--junit", junit);
        ReportFiles.checkOutputs(spec, files);
        required.announce(err);
        Progress progress = new Progress(err, quiet);
        long t0 = System.nanoTime();
        List<List<Cell>> cells = new ArrayList<>();
        long done = 0;
        long total = (long) configs.size() * selected.size();
        try (MatrixRunner runner = new MatrixRunner(threadCount, seed, injectFault)) {
            for (int r = 0; r < configs.size(); r++) {
                List<Cell> row = new ArrayList<>();
                for (IoBackend b : selected) {
                    progress.update(
                            "matrix: " + b.userName() + " " + configs.get(r), ++done, total);
                    row.add(runner.run(configs.get(r), b, r));
                }
                cells.add(row);
            }
        } finally {
            progress.clear();
        }
        MatrixReport report =
                new MatrixReport(
                        Kvio.version(),
                        Loader.getPlatform(),
                        full ? "full" : "quick",
                        configs,
                        columns,
                        cells,
                        (System.nanoTime() - t0) / 1e9);
        report.printMarkdown(out);
        boolean written = ReportFiles.writeIfGiven("--json", json, report::writeJson, err);
        written &= ReportFiles.writeIfGiven("--junit", junit, report::writeJUnit, err);
        return ReportFiles.exitStatus(exitStatus(report, required.backends, err), written);
    }

    /**
     * 1 on any FAIL; else 4 when a required backend is unavailable, or when no cell ran because
     * every backend selected is unavailable (as bench: a matrix of nothing tested nothing); else 0.
     */
    static int exitStatus(MatrixReport report, List<IoBackend> required, PrintWriter err) {
        if (report.anyFail()) {
            err.println("kvio: matrix FAILED: " + report.summary());
            return Main.EXIT_FAILED;
        }
        int status = RequiredBackends.status(required, err);
        if (status != Main.EXIT_OK) {
            return status;
        }
        List<String> names = new ArrayList<>();
        for (MatrixReport.Backend b : report.backends) {
            if (b.unavailabilityCause() == null) {
                return Main.EXIT_OK;
            }
            names.add(b.name());
        }
        err.println(
                "kvio: matrix ran nothing: no backend of "
                        + String.join(", ", names)
                        + " is available here (the table lists the causes)");
        return Main.EXIT_REQUIRED_UNAVAILABLE;
    }
}
