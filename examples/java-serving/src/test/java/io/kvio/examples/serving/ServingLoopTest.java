/*
 * Runs the example serving loop as CI's check that it builds against the kvio-platform artifact,
 * runs, and moves every byte right (its output, with the overlap it achieved, goes to the build
 * log). No timing is asserted: the overlap depends on the machine.
 */
package io.kvio.examples.serving;

import static org.testng.Assert.assertEquals;

import org.testng.annotations.Test;

public class ServingLoopTest {
    @Test
    public void servingLoopRunsAndVerifiesEveryByte() {
        assertEquals(ServingLoop.run(), 0);
    }
}
