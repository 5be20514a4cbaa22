/*
 * `roundtrip` times each direction after an untimed warm-up of the same transfer (the first
 * transfer of a run is slower, whichever layout it belongs to), and the warm-up cannot hide a
 * wrong result: the destination gets its canary back before the timed run, so a timed run that
 * writes nothing (left out through RoundTrip's test seam) fails the verification even though the
 * warm-up wrote the right bytes.
 */
package io.kvio.cli;

import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertFalse;
import static org.testng.Assert.assertTrue;

import io.kvio.IoBackend;
import io.kvio.KvLayout;
import io.kvio.PoolKind;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.ArrayList;
import java.util.List;
import org.testng.annotations.Test;

public class RoundTripWarmUpTest {
    private static final List<KvLayout> LAYOUTS =
            List.of(KvLayout.PAGE_FIRST_DIRECT, KvLayout.LAYER_FIRST);

    /** What a run printed and returned. */
    private record Run(int exit, String out) {}

    private static RoundTripOptions options() {
        RoundTripOptions o = new RoundTripOptions();
        o.tokens = 300;
        o.layers = 3;
        o.pageSize = 16;
        o.heads = 2;
        o.headDim = 32;
        o.kind = PoolKind.MHA;
        o.backend = IoBackend.CPU;
        o.threads = 2;
        o.layouts = LAYOUTS;
        return o;
    }

    private static Run run(RoundTrip.Steps steps) {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        int exit =
                new RoundTrip(
                                options(),
                                new PrintWriter(out, true),
                                new PrintWriter(err, true),
                                steps)
                        .run();
        return new Run(exit, out.toString());
    }

    @Test
    public void eachDirectionRunsOnceUntimedBeforeItsTimedRun() {
        List<String> seen = new ArrayList<>();
        Run r =
                run(
                        (layout, step) -> {
                            seen.add(layout.userName() + " " + step);
                            return true;
                        });
        assertEquals(r.exit, Main.EXIT_OK, r.out);
        assertTrue(r.out.contains("all 2 layouts verified OK"), r.out);
        List<String> expected = new ArrayList<>();
        for (KvLayout layout : LAYOUTS) {
            for (String step : List.of("BACKUP_WARM_UP", "BACKUP", "LOAD_WARM_UP", "LOAD")) {
                expected.add(layout.userName() + " " + step);
            }
        }
        assertEquals(seen, expected);
    }

    @Test
    public void aTimedBackupThatWritesNothingFailsDespiteTheWarmUp() {
        Run r = run((layout, step) -> step != RoundTrip.Step.BACKUP);
        assertEquals(r.exit, Main.EXIT_FAILED, r.out);
        assertFalse(
                r.out.contains("byte counts differ"), "only the verification noticed: " + r.out);
        assertTrue(
                r.out.matches(
                        "(?s).*page_first_direct: \\d+ mismatching rows or heads; first:\\n"
                                + "    host token \\d+ .*expected 0x.*"),
                r.out);
        assertTrue(r.out.contains("verify FAILED for: page_first_direct, layer_first"), r.out);
    }

    @Test
    public void aTimedLoadThatWritesNothingFailsDespiteTheWarmUp() {
        Run r = run((layout, step) -> step != RoundTrip.Step.LOAD);
        assertEquals(r.exit, Main.EXIT_FAILED, r.out);
        assertFalse(
                r.out.contains("byte counts differ"), "only the verification noticed: " + r.out);
        assertTrue(
                r.out.matches(
                        "(?s).*page_first_direct: \\d+ mismatching rows or heads; first:\\n"
                                + "    device token \\d+ .*expected 0x.*"),
                r.out);
        assertFalse(r.out.contains("host token"), "the backups were right: " + r.out);
        assertTrue(r.out.contains("verify FAILED for: page_first_direct, layer_first"), r.out);
    }

    @Test
    public void withoutItsWarmUpsTheRunStillVerifies() {
        // the warm-ups write nothing the verification depends on
        Run r =
                run(
                        (layout, step) ->
                                step != RoundTrip.Step.BACKUP_WARM_UP
                                        && step != RoundTrip.Step.LOAD_WARM_UP);
        assertEquals(r.exit, Main.EXIT_OK, r.out);
        assertTrue(r.out.contains("all 2 layouts verified OK"), r.out);
    }
}
