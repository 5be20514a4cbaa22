/*
 * The command line itself: --help of every command, exit codes of bad arguments, errors that
 * say what to type instead, and `roundtrip` (what runs with no command) on a small cache.
 */
package io.kvio.cli;

import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertFalse;
import static org.testng.Assert.assertTrue;

import io.kvio.IoBackend;
import io.kvio.KvioExecutor;
import java.util.ArrayList;
import java.util.List;
import org.testng.SkipException;
import org.testng.annotations.DataProvider;
import org.testng.annotations.Test;
import picocli.CommandLine;

public class CliTest {
    @DataProvider(name = "commands")
    public static Object[][] commands() {
        return new Object[][] {{"matrix"}, {"bench"}, {"roundtrip"}};
    }

    @Test(dataProvider = "commands")
    public void everyCommandHasHelp(String command) {
        CliRunner r = CliRunner.run(command, "--help");
        assertEquals(r.exit, 0, r.toString());
        assertTrue(r.out.startsWith("Usage: java -jar kvio-cli.jar " + command), r.out);
        assertTrue(r.out.contains("Exit status:"), r.out);
        CliRunner viaHelp = CliRunner.run("help", command);
        assertEquals(viaHelp.exit, 0, viaHelp.toString());
        assertEquals(viaHelp.out, r.out);
    }

    /**
     * No list option's synopsis repeats its own list syntax (a hand-written "X[,X...]" label on a
     * split option rendered as "X[,X...][,X[,X...]...]"): every command's usage text, the top-level
     * one included.
     */
    @Test
    public void usageShowsEachListOptionOnce() {
        CommandLine top = Main.commandLine();
        List<CommandLine> all = new ArrayList<>(List.of(top));
        all.addAll(top.getSubcommands().values());
        for (CommandLine cl : all) {
            // picocli wraps long synopses after a comma; the checks read the text unwrapped
            String usage = cl.getUsageMessage(CommandLine.Help.Ansi.OFF).replaceAll("\\s+", "");
            assertFalse(usage.contains("...]...]"), cl.getCommandName() + ":\n" + usage);
            assertFalse(usage.contains("...][,"), cl.getCommandName() + ":\n" + usage);
        }
        String[][] expected = {
            {"roundtrip", "--layouts=LAYOUT[,LAYOUT...]"},
            {"bench", "--backend=NAME[,NAME...]"},
            {"bench", "--layouts=LAYOUT[,LAYOUT...]"},
            {"bench", "--rows=BYTES[,BYTES...]"},
            {"bench", "--tokens=N[,N...]"},
            {"bench", "--require=NAME[,NAME...]"},
            {"matrix", "--backend=NAME[,NAME...]"},
            {"matrix", "--device-forms=FORM[,FORM...]"},
            {"matrix", "--require=NAME[,NAME...]"},
        };
        for (String[] e : expected) {
            String usage =
                    top.getSubcommands()
                            .get(e[0])
                            .getUsageMessage(CommandLine.Help.Ansi.OFF)
                            .replaceAll("\\s+", "");
            // in the synopsis (optional, repeatable) and in the option list
            assertTrue(usage.contains("[" + e[1] + "]..."), e[0] + " synopsis: " + usage);
            assertEquals(usage.split(java.util.regex.Pattern.quote(e[1]), -1).length, 3, usage);
        }
    }

    /**
     * --threads takes 0 (one per core, the default) and 1 to 1024, for the backends with io
     * threads; its help says so.
     */
    @Test
    public void threadsHelpNamesEveryValueItTakes() {
        for (String command : new String[] {"matrix", "bench", "roundtrip"}) {
            String help = CliRunner.run(command, "--help").out.replaceAll("\\s+", " ");
            assertTrue(
                    help.contains(
                            "--threads=N io threads of cpu (and auto without a GPU): 1 to 1024, or"
                                    + " 0 for one per core (the default); the device backends have"
                                    + " none"),
                    command + ": " + help);
        }
        // 0 runs with the executor's own count (the range's ends: roundTripThreadsAreWithin...)
        CliRunner zero =
                smallRoundTrip("--threads", "0", "--backend", "cpu", "--layouts", "layer_first");
        assertEquals(zero.exit, 0, zero.toString());
        int perCore;
        try (KvioExecutor executor = KvioExecutor.create(IoBackend.CPU, 0)) {
            perCore = executor.threads();
        }
        assertTrue(perCore >= 1, "one per core: " + perCore);
        assertTrue(
                zero.out.contains(", io backend cpu, " + Main.count(perCore, "thread", "threads")),
                zero.out);
    }

    /** Each command's help says when it exits 4; the top-level help gives the shared rule. */
    @Test
    public void helpSaysWhenEachCommandExitsFour() {
        String[][] expected = {
            {"matrix", "4 no FAIL, but a backend named by --require is unavailable, or no backend"},
            {"bench", "4 a backend named by --require is unavailable, or no backend selected"},
            {"roundtrip", "4 the io backend chosen with --backend is unavailable here"},
        };
        for (String[] e : expected) {
            String help = CliRunner.run(e[0], "--help").out.replaceAll("\\s+", " ");
            assertTrue(help.contains(e[1]), e[0] + ": " + help);
        }
        String top = CliRunner.run("--help").out.replaceAll("\\s+", " ");
        assertTrue(
                top.contains(
                        "4 an io backend is unavailable here: one named by --require (matrix,"
                                + " bench), or every one the command was to run, so that nothing"
                                + " ran (matrix, bench: all those of --backend; roundtrip: its"
                                + " --backend)."),
                top);
    }

    @Test
    public void topLevelHelpListsTheCommands() {
        CliRunner r = CliRunner.run("--help");
        assertEquals(r.exit, 0, r.toString());
        for (String c : new String[] {"matrix", "bench", "roundtrip", "help"}) {
            assertTrue(r.out.contains("\n  " + c), c + " missing:\n" + r.out);
        }
    }

    @Test
    public void versionNamesTheNativeLibrary() {
        CliRunner r = CliRunner.run("--version");
        assertEquals(r.exit, 0, r.toString());
        assertTrue(r.out.contains("native library " + io.kvio.Kvio.VERSION), r.out);
    }

    @Test
    public void misspelledCommandSuggestsTheRightOne() {
        CliRunner.run("matrx")
                .assertUsage(
                        "java -jar kvio-cli.jar matrix", "Run `java -jar kvio-cli.jar --help`");
    }

    @Test
    public void misspelledOptionSuggestsTheRightOne() {
        CliRunner.run("matrix", "--jsn", "x.json")
                .assertUsage("--json", "Run `java -jar kvio-cli.jar matrix --help`");
    }

    @Test
    public void unknownBackendNamesTheNearestMatch() {
        CliRunner.run("matrix", "--backend", "cpu,kernal")
                .assertUsage(
                        "did you mean 'kernel'",
                        "cpu, kernel, direct, kernel_ascend, auto, staged");
    }

    @Test
    public void unknownDeviceFormListsTheValidOnes() {
        CliRunner.run("matrix", "--device-forms", "allocated,per_layer")
                .assertUsage(
                        "unknown device form 'per_layer'", "allocated, per_component, layer_table");
    }

    @Test
    public void quickAndFullExcludeEachOther() {
        CliRunner.run("matrix", "--quick", "--full").assertUsage("mutually exclusive");
    }

    @Test
    public void commandOptionWithoutTheCommandSaysWhereItGoes() {
        CliRunner.run("--tokens", "512")
                .assertUsage(
                        "--tokens is an option of bench and roundtrip",
                        "put the command first: `java -jar kvio-cli.jar");
        CliRunner seed = CliRunner.run("--layouts", "page_first");
        assertTrue(
                seed.err.contains("java -jar kvio-cli.jar bench --layouts page_first"), seed.err);
    }

    @Test
    public void badNumberSaysWhatIsValid() {
        CliRunner.run("roundtrip", "--layers", "0")
                .assertUsage("--layers must be at least 1, got 0");
        CliRunner.run("roundtrip", "--layers", "x").assertUsage("'x' is not a long");
        CliRunner.run("roundtrip", "--layers", "2000000", "--tokens", "16")
                .assertUsage(
                        "--layers must be 1 to 1048576 (kvio's limit), got 2000000",
                        "roundtrip --help");
    }

    @Test
    public void aJvmErrorIsExitThreeWithAMessageNotAStackTrace() {
        java.io.Writer outOfMemory =
                new java.io.Writer() {
                    @Override
                    public void write(char[] buf, int off, int len) {
                        throw new OutOfMemoryError("Java heap space");
                    }

                    @Override
                    public void flush() {}

                    @Override
                    public void close() {}
                };
        java.io.StringWriter err = new java.io.StringWriter();
        int exit =
                Main.run(
                        new String[] {"--version"},
                        new java.io.PrintWriter(outOfMemory),
                        new java.io.PrintWriter(err, true));
        CliRunner r = new CliRunner(exit, "", err.toString());
        r.assertExit(Main.EXIT_ERROR, "the JVM ran out of memory (Java heap space)", "-Xmx");
    }

    @Test
    public void roundTripRefusesNegativeHeadsAndHeadDimInsteadOfUsingTheDefaults() {
        String[] small = {"roundtrip", "--backend", "cpu", "--tokens", "64", "--layers", "2"};
        for (String option : new String[] {"--heads", "--head-dim"}) {
            for (String value : new String[] {"-5", "-1", "0"}) {
                String[] args = java.util.Arrays.copyOf(small, small.length + 2);
                args[small.length] = option;
                args[small.length + 1] = value;
                CliRunner.run(args).assertUsage(option + " must be at least 1, got " + value);
            }
        }
    }

    @Test
    public void roundTripRefusesSizesPastItsLimitsUpFront() {
        CliRunner.run("roundtrip", "--page-size", "1000000000000")
                .assertUsage(
                        "--page-size 1000000000000 is too large; use at most 1048576 tokens per"
                                + " page");
        CliRunner overflow =
                CliRunner.run(
                        "roundtrip", "--head-dim", "4611686018427387904", "--dtype-bytes", "2");
        overflow.assertUsage(
                "a token's row, --heads 8 x --head-dim 4611686018427387904 x --dtype-bytes 2"
                        + " bytes, is too large");
        assertFalse(overflow.err.contains("-9223372036854775808"), overflow.err);
        CliRunner.run(
                        "roundtrip",
                        "--tokens",
                        "268435456",
                        "--layers",
                        "1048576",
                        "--heads",
                        "1000000")
                .assertUsage("the device pool would be too large", "more than 2^62 bytes");
    }

    @Test
    public void roundTripThreadsAreWithinTheExecutorsRange() {
        CliRunner.run("roundtrip", "--threads", "2000")
                .assertUsage("--threads must be 0 (one per core) or 1 to 1024, got 2000");
        CliRunner.run("roundtrip", "--threads", "-3")
                .assertUsage("--threads must be 0 (one per core) or 1 to 1024, got -3");
    }

    @Test
    public void unknownLayoutNamesTheNearestMatch() {
        CliRunner.run("roundtrip", "--layouts", "page_heda")
                .assertUsage("did you mean 'page_head'");
    }

    @Test
    public void unsupportedCombinationIsAUsageError() {
        CliRunner.run("roundtrip", "--kind", "mla", "--layouts", "page_head")
                .assertUsage("page_head");
    }

    @Test
    public void roundTripVerifiesEveryLayout() {
        CliRunner r =
                CliRunner.run("roundtrip", "--tokens", "300", "--layers", "3", "--page-size", "16");
        assertEquals(r.exit, 0, r.toString());
        assertTrue(r.out.contains("all 4 layouts verified OK"), r.out);
        CliRunner mla = smallRoundTrip("--kind", "mla");
        assertEquals(mla.exit, 0, mla.toString());
        assertTrue(mla.out.contains("all 3 layouts verified OK"), mla.out);
    }

    @Test
    public void roundTripHeaderSaysHowTheTokensMove() {
        CliRunner small = smallRoundTrip();
        assertEquals(small.exit, 0, small.toString());
        assertTrue(
                small.out.contains(
                        ", page 8, 100 tokens (12 whole pages, then 4 tokens slot by slot), io"
                                + " backend "),
                small.out);
        CliRunner onePage =
                CliRunner.run("roundtrip", "--tokens", "64", "--page-size", "64", "--layers", "2");
        assertEquals(onePage.exit, 0, onePage.toString());
        assertTrue(
                onePage.out.contains(", page 64, 64 tokens (1 whole page), io backend "),
                onePage.out);
        assertFalse(onePage.out.contains("tail"), onePage.out);
    }

    @Test
    public void roundTripUsesAutoByDefaultAndSaysWhatItIs() {
        CliRunner r = smallRoundTrip();
        assertEquals(r.exit, 0, r.toString());
        assertTrue(r.out.contains("all 4 layouts verified OK"), r.out);
        if (IoBackend.KERNEL.isAvailable()) {
            assertTrue(
                    r.out.contains("io backend auto (kernel, direct or staged per transfer"),
                    r.out);
            assertTrue(r.out.contains("the ceiling"), r.out);
        } else {
            assertTrue(
                    r.out.contains("io backend auto (cpu: no usable CUDA device or Ascend NPU),"),
                    r.out);
            assertFalse(r.out.contains("ceiling"), "no device, no ceiling: " + r.out);
        }
    }

    @Test
    public void roundTripBackendOptionChoosesExplicitly() {
        CliRunner cpu = smallRoundTrip("--backend", "cpu");
        assertEquals(cpu.exit, 0, cpu.toString());
        assertTrue(cpu.out.contains(", io backend cpu, "), cpu.out);
        assertTrue(cpu.out.contains("all 4 layouts verified OK"), cpu.out);
        CliRunner typo = CliRunner.run("roundtrip", "--backend", "auot");
        assertEquals(typo.exit, Main.EXIT_USAGE, typo.toString());
        assertTrue(typo.err.contains("did you mean 'auto'"), typo.err);
    }

    /**
     * An io backend chosen with --backend that cannot run here (kernel, direct and staged without a
     * GPU) is exit 4, as bench's sweep of only unavailable backends: nothing ran, the arguments
     * were fine. Bad arguments are still 2 first.
     */
    @Test
    public void roundTripOfAnUnavailableBackendExitsFourWithTheCause() {
        List<IoBackend> unavailable = new ArrayList<>();
        List<String> available = new ArrayList<>(); // cpu and auto at least
        for (IoBackend b : IoBackend.values()) {
            if (!b.isAvailable()) {
                unavailable.add(b);
            } else {
                available.add(b.userName());
            }
        }
        if (unavailable.isEmpty()) {
            throw new SkipException("every io backend is available here");
        }
        for (IoBackend b : unavailable) {
            CliRunner r = smallRoundTrip("--backend", b.userName());
            r.assertExit(
                    Main.EXIT_REQUIRED_UNAVAILABLE,
                    "kvio: io backend '" + b.userName() + "' (--backend) is unavailable here: ",
                    b.unavailabilityCause(),
                    "; available here: " + String.join(", ", available) + " (auto, the default");
            assertEquals(r.out, "", "nothing ran: " + r);
            assertFalse(r.err.contains("--help"), "not a usage error: " + r.err);
            smallRoundTrip("--backend", b.userName(), "--kind", "mla", "--layouts", "page_head")
                    .assertUsage("page_head", "roundtrip --help");
            CliRunner.run("roundtrip", "--backend", b.userName(), "--tokens", "0")
                    .assertUsage("--tokens");
        }
    }

    /**
     * bench of auto prints auto's GPU crossovers where auto runs on a CUDA device, and nothing of
     * them without one (auto is cpu there).
     */
    @Test
    public void benchOfAutoReportsItsCalibrationOnAGpuOnly() {
        CliRunner r =
                CliRunner.run(
                        "bench",
                        "--backend",
                        "auto",
                        "--rows",
                        "256",
                        "--tokens",
                        "128",
                        "--layers",
                        "2",
                        "--repeats",
                        "1",
                        "--quiet");
        assertEquals(r.exit, 0, r.toString());
        assertTrue(r.out.contains("| auto | layer_first | backup | 256 B | 128 |"), r.out);
        assertEquals(
                r.out.contains(
                        "auto calibration (defaults (H200 figures)): direct_row_bytes = 262144"
                                + " direct_row_bytes_overlap = 2048"
                                + " direct_copy_bytes_overlap = 32768"),
                IoBackend.AUTO.isCuda(),
                r.out);
        assertEquals(r.out.contains("auto calibration"), IoBackend.AUTO.isCuda(), r.out);
    }

    /** roundtrip on 100 tokens of 2 layers, pages of 8, with the given extra options. */
    private static CliRunner smallRoundTrip(String... extra) {
        List<String> args =
                new ArrayList<>(
                        List.of(
                                "roundtrip",
                                "--tokens",
                                "100",
                                "--layers",
                                "2",
                                "--page-size",
                                "8"));
        args.addAll(List.of(extra));
        return CliRunner.run(args.toArray(new String[0]));
    }

    /** An unknown command names the valid ones. */
    @Test
    public void anUnknownCommandNamesTheCommands() {
        CliRunner.run("frobnicate")
                .assertUsage(
                        "'frobnicate' is not a command; the commands are matrix, bench, roundtrip,"
                                + " plot, help");
        CliRunner.run("benhc", "--quick")
                .assertUsage("'benhc' is not a command; the commands are", "bench");
    }

    /** Options without a command: the commands that take all of them, each with its example. */
    @Test
    public void optionsWithoutACommandNameEveryCommandThatTakesThem() {
        CliRunner.run("--tokens", "64")
                .assertUsage(
                        "--tokens is an option of bench and roundtrip; put the command first:"
                                + " `java -jar kvio-cli.jar bench --tokens 64` or `java -jar"
                                + " kvio-cli.jar roundtrip --tokens 64`");
        CliRunner.run("--junit", "m.xml", "--quick")
                .assertUsage(
                        "--junit, --quick are options of matrix; put the command first:"
                                + " `java -jar kvio-cli.jar matrix --junit m.xml --quick`");
    }

    /**
     * Options of different commands, or of none, are not sent to the first command that takes the
     * first of them.
     */
    @Test
    public void optionsOfDifferentCommandsOrNoneGetAHintThatFitsThem() {
        CliRunner mixed = CliRunner.run("--quick", "--kind", "mla");
        mixed.assertUsage(
                "no command takes all of these options: --quick (matrix, bench), --kind"
                        + " (roundtrip)");
        assertFalse(mixed.err.contains("put the command first"), mixed.err);
        CliRunner none = CliRunner.run("--frobnicate");
        none.assertUsage(
                "'--frobnicate' is not an option of any command (the commands are matrix, bench,"
                        + " roundtrip, plot, help");
        CliRunner oneUnknown = CliRunner.run("--tokens", "64", "--frobnicate");
        oneUnknown.assertUsage("'--frobnicate' is not an option of any command");
        assertFalse(oneUnknown.err.contains("put the command first"), oneUnknown.err);
        CliRunner number = CliRunner.run("-5"); // no option: picocli's message alone
        number.assertUsage("-5");
        assertFalse(number.err.contains("no command takes"), number.err);
    }

    /**
     * A report path that ends with '/' names a folder: refused before the run, for every report
     * option of every command (it was written as a file named after the folder).
     */
    @Test
    public void aReportPathEndingWithASlashIsRefused() throws Exception {
        java.nio.file.Path dir = java.nio.file.Files.createTempDirectory("kvio-slash");
        try {
            String folder = dir.resolve("new") + "/";
            String[][] runs = {
                {"matrix", "--backend", "cpu", "--quick", "--json", folder},
                {"matrix", "--backend", "cpu", "--quick", "--junit", folder},
                {"bench", "--rows", "64", "--tokens", "16", "--csv", folder},
                {"bench", "--rows", "64", "--tokens", "16", "--json", folder},
                {"bench", "--rows", "64", "--tokens", "16", "--svg", folder},
                {"plot", dir.resolve("in.tsv").toString(), "--svg", folder},
            };
            for (String[] args : runs) {
                String option = args[args.length - 2];
                CliRunner.run(args)
                        .assertUsage(
                                "Invalid value for option '" + option + "'",
                                "'"
                                        + folder
                                        + "' ends with '/' and so names a folder; name a file");
            }
            assertFalse(java.nio.file.Files.exists(dir.resolve("new")), "nothing written");
            // an existing folder without the slash: refused too
            CliRunner.run("bench", "--rows", "64", "--tokens", "16", "--json", dir.toString())
                    .assertUsage("--json " + dir + ": is a folder; name a file");
        } finally {
            java.nio.file.Files.deleteIfExists(dir.resolve("new")); // what a run wrote there
            java.nio.file.Files.deleteIfExists(dir);
        }
    }

    /** A command that throws an exception that is not kvio's: the seam of the next tests. */
    @CommandLine.Command(name = "boom")
    static final class Boom implements java.util.concurrent.Callable<Integer> {
        @Override
        public Integer call() {
            throw new IllegalStateException("the state is wrong");
        }
    }

    private static CliRunner runWithBoom(boolean stackTraces) {
        CommandLine cl = Main.commandLine(stackTraces);
        cl.addSubcommand("boom", new Boom());
        java.io.StringWriter out = new java.io.StringWriter();
        java.io.StringWriter err = new java.io.StringWriter();
        int exit =
                Main.run(
                        cl,
                        new String[] {"boom"},
                        new java.io.PrintWriter(out, true),
                        new java.io.PrintWriter(err, true));
        return new CliRunner(exit, out.toString(), err.toString());
    }

    /** An exception that is not kvio's is one line and exit 3, with how to get the trace. */
    @Test
    public void anInternalErrorIsOneLineNotAStackTrace() {
        CliRunner r = runWithBoom(false);
        assertEquals(r.exit, Main.EXIT_ERROR, r.toString());
        assertTrue(
                r.err.contains(
                        "kvio: internal error: java.lang.IllegalStateException: the state is"
                                + " wrong\n"),
                r.err);
        assertTrue(r.err.contains("KVIO_DEBUG=1"), r.err);
        assertFalse(r.err.contains("\tat "), r.err);
    }

    /** With KVIO_DEBUG the stack trace is printed, and the exit status stays 3. */
    @Test
    public void kvioDebugPrintsTheStackTrace() {
        CliRunner r = runWithBoom(true);
        assertEquals(r.exit, Main.EXIT_ERROR, r.toString());
        assertTrue(r.err.contains("\tat io.kvio.cli.CliTest$Boom.call"), r.err);
    }

    /**
     * --require auto asks that auto runs on an accelerator: auto is always available, so otherwise
     * it could never fail. Without a usable GPU or NPU it is exit 4 with the causes.
     */
    @Test
    public void requireAutoAsksForAnAccelerator() {
        String[] bench = {
            "bench",
            "--backend",
            "cpu",
            "--rows",
            "64",
            "--tokens",
            "16",
            "--layouts",
            "layer_first",
            "--repeats",
            "1",
            "--quiet",
            "--require",
            "auto"
        };
        String[] matrix = {
            "matrix",
            "--backend",
            "cpu",
            "--quick",
            "--device-forms",
            "allocated",
            "--quiet",
            "--require",
            "auto"
        };
        for (String[] args : new String[][] {bench, matrix}) {
            CliRunner r = CliRunner.run(args);
            if (IoBackend.AUTO.isDevice()) {
                assertEquals(r.exit, Main.EXIT_OK, r.toString());
            } else {
                r.assertExit(
                        Main.EXIT_REQUIRED_UNAVAILABLE,
                        "kvio: io backend 'auto' is required (--require) but runs on cpu here",
                        "CUDA: " + IoBackend.KERNEL.unavailabilityCause(),
                        "Ascend: " + IoBackend.KERNEL_ASCEND.unavailabilityCause());
            }
        }
        CliRunner help = CliRunner.run("bench", "--help");
        assertTrue(
                help.out
                        .replaceAll("\\s+", " ")
                        .contains("--require auto asks for a usable CUDA GPU or Ascend NPU"),
                help.out);
    }
}
