/*
 * The matrix must judge a wrapped device pool by the oracle's addressing, not by kvio's: a pool
 * built with its address table in the wrong order (per_component with K and V swapped,
 * layer_table with its table reversed, through DeviceForm's test seam) must give FAIL cells. The
 * same cells with the table in order must PASS (or be UNSUPPORTED by kvio's rule), so the FAILs
 * come from the wiring.
 */
package io.kvio.cli;

import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertTrue;

import io.kvio.IoBackend;
import io.kvio.PoolKind;
import java.util.ArrayList;
import java.util.List;
import org.testng.annotations.Test;

public class MisWiredPoolTest {
    /** Entry i of kvio's table gets the last but i carrier: K and V swapped, layers reversed. */
    private static final DeviceForm.TableOrder REVERSED = (entry, entries) -> entries - 1 - entry;

    private static List<Cell> run(DeviceForm form, DeviceForm.TableOrder order) {
        List<Cell> cells = new ArrayList<>();
        List<MatrixConfig> configs = MatrixConfig.list(false, List.of(form));
        try (MatrixRunner runner = new MatrixRunner(2, 0x5eedL, false, order)) {
            for (int i = 0; i < configs.size(); i++) {
                cells.add(runner.run(configs.get(i), IoBackend.CPU, i));
            }
        }
        return cells;
    }

    private static boolean rejected(Cell c) {
        return c.status() == Cell.Status.UNSUPPORTED
                && c.config().kind() == PoolKind.MLA
                && c.config().layout().userName().equals("page_head");
    }

    @Test
    public void perComponentPoolWithKAndVSwappedFails() {
        int failed = 0;
        for (Cell c : run(DeviceForm.PER_COMPONENT, REVERSED)) {
            String id = c.config().id() + ": " + c.detail();
            if (c.config().kind() == PoolKind.MHA) {
                // K's rows are read from or written to V's allocation: the oracle sees it
                assertEquals(c.status(), Cell.Status.FAIL, id);
                assertTrue(c.detail().contains("expected 0x"), id);
                failed++;
            } else {
                // mla has one component: reversing its table of one changes nothing
                assertTrue(c.status() == Cell.Status.PASS || rejected(c), id);
            }
        }
        assertEquals(failed, 32, "every mha row of the quick list");
    }

    @Test
    public void layerTablePoolWithItsTableReversedFails() {
        int failed = 0;
        for (Cell c : run(DeviceForm.LAYER_TABLE, REVERSED)) {
            String id = c.config().id() + ": " + c.detail();
            if (!rejected(c)) {
                assertEquals(c.status(), Cell.Status.FAIL, id);
                assertTrue(c.detail().contains("expected 0x"), id);
                failed++;
            }
        }
        assertEquals(failed, 64 - 8, "every quick row but the 8 rejected mla x page_head");
    }

    @Test
    public void theSameFormsInOrderPass() {
        for (DeviceForm form : DeviceForm.values()) {
            for (Cell c : run(form, DeviceForm.TableOrder.AS_IS)) {
                assertTrue(
                        c.status() == Cell.Status.PASS || rejected(c),
                        c.config().id() + ": " + c.status() + " " + c.detail());
            }
        }
    }
}
