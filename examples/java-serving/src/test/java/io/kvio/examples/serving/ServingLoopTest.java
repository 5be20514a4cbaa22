/*
 * Runs the example serving loop as CI's check that it builds against the kvio-platform artifact,
 * runs, and moves every byte right (its output, with the overlap it achieved, goes to the build
 * log). No timing is asserted: the overlap depends on the machine.
 */
package io.kvio.examples.serving;

import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertTrue;
import static org.testng.Assert.expectThrows;

import org.testng.annotations.Test;

public class ServingLoopTest {
    @Test
    public void servingLoopRunsAndVerifiesEveryByte() {
        assertEquals(ServingLoop.run(), 0);
    }

    /** Bad arguments are refused by name before anything runs (main prints them with the usage). */
    @Test
    public void badArgumentsAreNamed() {
        String[][] cases = {
            {"--turns=x", "--turns= takes a whole number, not 'x'"},
            {"--turns=-1", "--turns=-1 is out of range"},
            {"--compute-us=", "--compute-us= takes a whole number, not ''"},
            {"--speed=3", "unknown argument '--speed=3'"},
        };
        for (String[] c : cases) {
            IllegalArgumentException e =
                    expectThrows(IllegalArgumentException.class, () -> ServingLoop.run(c[0]));
            assertTrue(e.getMessage().contains(c[1]), e.getMessage());
        }
        // main exits 2 and prints the message with the usage.
        java.io.ByteArrayOutputStream err = new java.io.ByteArrayOutputStream();
        assertEquals(
                ServingLoop.exitStatus(
                        new java.io.PrintStream(err, true, java.nio.charset.StandardCharsets.UTF_8),
                        "--seed=1",
                        "--turns=x"),
                2);
        String printed = err.toString(java.nio.charset.StandardCharsets.UTF_8);
        assertTrue(printed.contains("ServingLoop: --turns= takes a whole number"), printed);
        assertTrue(printed.contains(ServingLoop.USAGE), printed);
    }
}
