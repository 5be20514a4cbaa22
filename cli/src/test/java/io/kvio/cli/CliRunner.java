/*
 * Runs the CLI in this JVM (Main.run with captured streams) for the CLI tests; also holds the
 * result of a run in another JVM (CliJarIT, whose stdout and stderr come merged in out).
 */
package io.kvio.cli;

import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertTrue;

import java.io.PrintWriter;
import java.io.StringWriter;

final class CliRunner {
    final int exit;
    final String out;
    final String err;

    /** A finished run: its exit status and what it wrote to stdout and stderr. */
    CliRunner(int exit, String out, String err) {
        this.exit = exit;
        this.out = out;
        this.err = err;
    }

    static CliRunner run(String... args) {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        int exit = Main.run(args, new PrintWriter(out, true), new PrintWriter(err, true));
        return new CliRunner(exit, out.toString(), err.toString());
    }

    /** Asserts a usage error (exit 2) whose stderr holds every fragment; returns this run. */
    CliRunner assertUsage(String... fragments) {
        assertEquals(exit, Main.EXIT_USAGE, toString());
        for (String f : fragments) assertTrue(err.contains(f), err);
        assertNoStackTrace();
        return this;
    }

    /** Asserts this exit status and that stderr holds every fragment and no stack trace. */
    CliRunner assertExit(int status, String... fragments) {
        assertEquals(exit, status, toString());
        for (String f : fragments) assertTrue(err.contains(f), err);
        assertNoStackTrace();
        return this;
    }

    /** Asserts that neither stream holds a Java stack trace. */
    CliRunner assertNoStackTrace() {
        for (String s : new String[] {out, err}) {
            assertTrue(!s.contains("\tat ") && !s.contains("Exception"), "stack trace: " + this);
        }
        return this;
    }

    @Override
    public String toString() {
        return "exit " + exit + "\n--- stdout\n" + out + "\n--- stderr\n" + err;
    }
}
