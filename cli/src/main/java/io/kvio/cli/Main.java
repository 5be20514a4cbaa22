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
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
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
            "arguments, 3 kvio error (or the JVM out of memory, or another internal error:",
            "one line; KVIO_DEBUG=1 in the environment prints its stack trace),",
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
        return run(commandLine(), args, out, err);
    }

    /** Runs this command tree (commandLine(), or a test's) with the given streams. */
    static int run(CommandLine cl, String[] args, PrintWriter out, PrintWriter err) {
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
            internalError(e, err, ((KvioErrors) cl.getExecutionExceptionHandler()).stackTraces);
            return EXIT_ERROR;
        } finally {
            out.flush();
            err.flush();
        }
    }

    /**
     * The environment variable that turns on stack traces of internal errors (any value but empty
     * and 0); without it an internal error is one line that names it.
     */
    static final String DEBUG_ENV = "KVIO_DEBUG";

    /** The command tree with kvio's exit codes and error handlers. */
    static CommandLine commandLine() {
        String debug = System.getenv(DEBUG_ENV);
        return commandLine(debug != null && !debug.isEmpty() && !debug.equals("0"));
    }

    /** The command tree; {@code stackTraces}: internal errors print their stack trace. */
    static CommandLine commandLine(boolean stackTraces) {
        CommandLine cl = new CommandLine(new Main());
        cl.setExitCodeExceptionMapper(e -> EXIT_ERROR);
        cl.setParameterExceptionHandler(new UsageErrors());
        cl.setExecutionExceptionHandler(new KvioErrors(stackTraces));
        return cl;
    }

    /**
     * An error that is not kvio's (a bug, or the JVM's): one line with its class and message and
     * how to get the stack trace, or, with KVIO_DEBUG set, the stack trace.
     */
    static void internalError(Throwable e, PrintWriter err, boolean stackTraces) {
        err.println();
        err.println("kvio: internal error: " + e);
        if (stackTraces) {
            e.printStackTrace(err);
        } else {
            err.println("(run with " + DEBUG_ENV + "=1 in the environment for its stack trace)");
        }
        err.flush();
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

    /**
     * Bad arguments: the message, a hint (at the top level: for an unknown command, the valid
     * commands; for options given without a command, the commands that take them; else picocli's
     * suggestions), and the command to get help (exit 2).
     */
    static final class UsageErrors implements IParameterExceptionHandler {
        @Override
        public int handleParseException(ParameterException e, String[] args) {
            CommandLine cl = e.getCommandLine();
            PrintWriter err = cl.getErr();
            err.println("kvio: " + e.getMessage());
            if (!topLevelHint(e, err)) {
                UnmatchedArgumentException.printSuggestions(e, err);
            }
            String name = cl.getCommandSpec().qualifiedName();
            err.println("Run `" + name + " --help` for the options.");
            err.flush();
            return EXIT_USAGE;
        }

        /**
         * Arguments the top level does not take: an unknown command ("frob": the valid commands,
         * and picocli's nearest ones), or options without a command ("--tokens 64": the commands
         * that take every one of them; options of different commands or of none: which command
         * takes each). False when the error is another.
         */
        private static boolean topLevelHint(ParameterException e, PrintWriter err) {
            CommandLine top = e.getCommandLine();
            if (!(e instanceof UnmatchedArgumentException)
                    || top.getCommandSpec().parent() != null) {
                return false;
            }
            List<String> unmatched = ((UnmatchedArgumentException) e).getUnmatched();
            if (unmatched.isEmpty()) {
                return false;
            }
            String first = unmatched.get(0);
            if (!first.startsWith("-")) {
                err.println(
                        "'"
                                + first
                                + "' is not a command; the commands are "
                                + String.join(", ", commandNames(top)));
                UnmatchedArgumentException.printSuggestions(e, err);
                return true;
            }
            Map<String, List<String>> takers = new LinkedHashMap<>();
            for (String arg : unmatched) {
                if (arg.startsWith("-") && !isNumber(arg)) {
                    String option = arg.split("=", 2)[0];
                    List<String> commands = new ArrayList<>();
                    for (CommandLine sub : top.getSubcommands().values()) {
                        if (sub.getCommandSpec().findOption(option) != null
                                && !commands.contains(sub.getCommandName())) {
                            commands.add(sub.getCommandName());
                        }
                    }
                    takers.putIfAbsent(option, commands);
                }
            }
            if (takers.isEmpty()) { // only values such as "-5": picocli's message says it all
                return false;
            }
            List<String> none = new ArrayList<>();
            List<String> all = null; // the commands that take every option
            for (Map.Entry<String, List<String>> t : takers.entrySet()) {
                if (t.getValue().isEmpty()) {
                    none.add("'" + t.getKey() + "'");
                }
                if (all == null) {
                    all = new ArrayList<>(t.getValue());
                } else {
                    all.retainAll(t.getValue());
                }
            }
            String commands = String.join(", ", commandNames(top));
            if (!none.isEmpty()) {
                err.println(
                        String.join(", ", none)
                                + (none.size() == 1 ? " is" : " are")
                                + " not an option of any command (the commands are "
                                + commands
                                + "; `java -jar kvio-cli.jar COMMAND --help` lists a command's"
                                + " options)");
                return true;
            }
            String given = String.join(" ", unmatched);
            if (all != null && !all.isEmpty()) {
                List<String> examples = new ArrayList<>();
                for (String c : all) {
                    examples.add("`java -jar kvio-cli.jar " + c + " " + given + "`");
                }
                err.println(
                        String.join(", ", takers.keySet())
                                + (takers.size() == 1 ? " is an option of " : " are options of ")
                                + String.join(" and ", all)
                                + "; put the command first: "
                                + String.join(" or ", examples));
                return true;
            }
            List<String> each = new ArrayList<>();
            for (Map.Entry<String, List<String>> t : takers.entrySet()) {
                each.add(t.getKey() + " (" + String.join(", ", t.getValue()) + ")");
            }
            err.println(
                    "no command takes all of these options: "
                            + String.join(", ", each)
                            + "; put a command first and give it only its own options");
            return true;
        }

        /** The commands in the order --help lists them (help last). */
        private static List<String> commandNames(CommandLine top) {
            return new ArrayList<>(top.getSubcommands().keySet());
        }

        /** "-5", "-1.5": a negative number (an option's value), not an option. */
        private static boolean isNumber(String arg) {
            return arg.matches("-[0-9][0-9.]*");
        }
    }

    /**
     * An exception escaping a command (exit 3): a KvioException's status and message; any other as
     * one line (internalError), not picocli's stack trace.
     */
    static final class KvioErrors implements IExecutionExceptionHandler {
        final boolean stackTraces;

        KvioErrors(boolean stackTraces) {
            this.stackTraces = stackTraces;
        }

        @Override
        public int handleExecutionException(Exception e, CommandLine cl, ParseResult parseResult) {
            if (e instanceof KvioException) {
                PrintWriter err = cl.getErr();
                err.println();
                err.println(
                        "kvio: error (" + ((KvioException) e).status() + "): " + e.getMessage());
                err.flush();
                return EXIT_ERROR;
            }
            internalError(e, cl.getErr(), stackTraces);
            return EXIT_ERROR;
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
