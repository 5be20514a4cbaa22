/*
 * The kvio command line (java -jar kvio-cli.jar COMMAND): `matrix` (the hardware conformance
 * matrix teams run in CI on each machine), `bench` (bandwidth sweeps against a baseline),
 * `roundtrip` (a realistic backup + per-layer reload, verified; what runs with no command) and
 * `plot` (kvio_cuda_bench's sweep as SVG and Markdown).
 * Argument parsing, --help for every command and errors that say what to type are picocli's;
 * kvio errors are caught here and mapped to exit codes, and so is anything else a command throws,
 * a JVM Error included (exit 3, never 1: 1 is a verification FAIL). Uses kvio's public API only.
 */
package io.kvio.cli;

import io.kvio.KvioException;
import java.io.OutputStreamWriter;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.util.List;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.IExecutionExceptionHandler;
import picocli.CommandLine.IParameterExceptionHandler;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.ParseResult;
import picocli.CommandLine.UnmatchedArgumentException;

@Command(
        name = "java -jar kvio-cli.jar",
        mixinStandardHelpOptions = true,
        versionProvider = Main.Version.class,
        subcommands = {
            MatrixCommand.class,
            BenchCommand.class,
            RoundTripCommand.class,
            PlotCommand.class,
            CommandLine.HelpCommand.class
        },
        description = {
            "kvio moves LLM KV-cache pages between accelerator memory and host memory.",
            "With no command, runs `roundtrip` with its defaults.",
            ""
        },
        footer = {
            "",
            "Run `java -jar kvio-cli.jar COMMAND --help` for a command's options.",
            "Exit status: 0 success, 1 a verification FAIL (matrix, roundtrip), 2 bad",
            "arguments, 3 kvio error (or the JVM out of memory, or another internal error),",
            "4 an io backend is unavailable here: one named by --require (matrix, bench), or",
            "every one the command was to run, so that nothing ran (matrix, bench: all those",
            "of --backend; roundtrip: its --backend). One unavailable backend among others",
            "that ran is reported, not an error. COMMAND --help says what each status means",
            "for that command."
        })
public final class Main implements Runnable {
    static final int EXIT_OK = 0;
    static final int EXIT_FAILED = 1;
    static final int EXIT_USAGE = 2;
    static final int EXIT_ERROR = 3;
    static final int EXIT_REQUIRED_UNAVAILABLE = 4;

    @Override
    public void run() {
        // never reached: run(String[], ...) runs `roundtrip` when no command is given, and picocli
        // answers --help and --version itself
    }

    public static void main(String[] args) {
        PrintStream out = System.out;
        PrintStream err = System.err;
        System.exit(run(args, out, err));
    }

    /** Runs the CLI in this JVM; returns the exit status. */
    public static int run(String[] args, PrintStream out, PrintStream err) {
        return run(
                args,
                new PrintWriter(new OutputStreamWriter(out, StandardCharsets.UTF_8), true),
                new PrintWriter(new OutputStreamWriter(err, StandardCharsets.UTF_8), true));
    }

    /** Runs the CLI in this JVM with the given streams; returns the exit status. */
    public static int run(String[] args, PrintWriter out, PrintWriter err) {
        CommandLine cl = commandLine();
        cl.setOut(out);
        cl.setErr(err);
        String[] effective = args.length == 0 ? new String[] {"roundtrip"} : args;
        try {
            return cl.execute(effective);
        } catch (OutOfMemoryError e) {
            // exit 1 means a verification FAIL; a JVM that ran out of memory is an error (3)
            err.println();
            err.println(
                    "kvio: error: the JVM ran out of memory ("
                            + e.getMessage()
                            + "); give it more (java -Xmx8g -jar kvio-cli.jar ...) or make the"
                            + " run smaller");
            return EXIT_ERROR;
        } catch (Throwable e) {
            err.println();
            err.println("kvio: internal error: " + e);
            return EXIT_ERROR;
        } finally {
            out.flush();
            err.flush();
        }
    }

    /** The command tree with kvio's exit codes and error handlers. */
    static CommandLine commandLine() {
        CommandLine cl = new CommandLine(new Main());
        cl.setExitCodeExceptionMapper(e -> EXIT_ERROR);
        cl.setParameterExceptionHandler(new UsageErrors());
        cl.setExecutionExceptionHandler(new KvioErrors());
        return cl;
    }

    /** "1 run", "2 runs": n and the noun in its number, for report headers. */
    static String count(long n, String one, String many) {
        return n + " " + (n == 1 ? one : many);
    }

    static PrintWriter out(CommandSpec spec) {
        return spec.commandLine().getOut();
    }

    static PrintWriter err(CommandSpec spec) {
        return spec.commandLine().getErr();
    }

    /** Bad arguments: the message, picocli's suggestions, and the command to get help (exit 2). */
    static final class UsageErrors implements IParameterExceptionHandler {
        @Override
        public int handleParseException(ParameterException e, String[] args) {
            CommandLine cl = e.getCommandLine();
            PrintWriter err = cl.getErr();
            err.println("kvio: " + e.getMessage());
            if (!UnmatchedArgumentException.printSuggestions(e, err)) {
                hintSubcommandOption(e, err);
            }
            String name = cl.getCommandSpec().qualifiedName();
            err.println("Run `" + name + " --help` for the options.");
            err.flush();
            return EXIT_USAGE;
        }

        /** "--tokens" given without a command: say which command takes it. */
        private static void hintSubcommandOption(ParameterException e, PrintWriter err) {
            if (!(e instanceof UnmatchedArgumentException)
                    || e.getCommandLine().getCommandSpec().parent() != null) {
                return;
            }
            List<String> unmatched = ((UnmatchedArgumentException) e).getUnmatched();
            if (unmatched.isEmpty()) {
                return;
            }
            String option = unmatched.get(0).split("=", 2)[0];
            List<String> commands = new java.util.ArrayList<>();
            for (CommandLine sub : e.getCommandLine().getSubcommands().values()) {
                if (sub.getCommandSpec().findOption(option) != null
                        && !commands.contains(sub.getCommandName())) {
                    commands.add(sub.getCommandName());
                }
            }
            if (!commands.isEmpty()) {
                err.println(
                        "'"
                                + option
                                + "' is an option of "
                                + String.join(", ", commands)
                                + "; put the command first, e.g. `java -jar kvio-cli.jar "
                                + commands.get(0)
                                + " "
                                + String.join(" ", unmatched)
                                + "`");
            }
        }
    }

    /** A KvioException escaping a command: its status and message (exit 3). */
    static final class KvioErrors implements IExecutionExceptionHandler {
        @Override
        public int handleExecutionException(Exception e, CommandLine cl, ParseResult parseResult)
                throws Exception {
            if (e instanceof KvioException) {
                PrintWriter err = cl.getErr();
                err.println();
                err.println(
                        "kvio: error (" + ((KvioException) e).status() + "): " + e.getMessage());
                err.flush();
                return EXIT_ERROR;
            }
            throw e;
        }
    }

    /** --version: the CLI's kvio version and the native library's. */
    static final class Version implements CommandLine.IVersionProvider {
        @Override
        public String[] getVersion() {
            return new String[] {
                "kvio-cli " + io.kvio.Kvio.VERSION, "native library " + io.kvio.Kvio.version()
            };
        }
    }
}
