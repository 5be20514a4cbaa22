/*
 * The matrix's device pool access (PoolAccess) puts each (component, layer) region of the oracle's
 * byte image into the allocation that holds it, whatever kvio's address table says: checked on
 * every device form, by reading the allocations themselves (their ByteBuffers, canary-filled
 * first and compared whole), both through ByteBuffers (cpu) and through KvPool.copyFrom / copyTo
 * (the path device memory takes, forced here on host memory).
 */
package io.kvio.cli;

import static org.testng.Assert.assertEquals;

import io.kvio.IoBackend;
import io.kvio.KvLayout;
import io.kvio.KvPool;
import io.kvio.PoolKind;
import io.kvio.PoolSpec;
import io.kvio.oracle.Geometry;
import io.kvio.oracle.Oracle;
import io.kvio.oracle.Shape;
import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.List;
import org.testng.annotations.DataProvider;
import org.testng.annotations.Test;

public class PoolAccessTest {
    private static final long LAYERS = 3;
    private static final long PAGES = 4;
    private static final long PAGE_SIZE = 2;
    private static final long HEADS = 2;
    private static final long HEAD_BYTES = 8;
    private static final int LAYER_BYTES = (int) (PAGES * PAGE_SIZE * HEADS * HEAD_BYTES);

    private static final PoolSpec SPEC =
            PoolSpec.builder()
                    .kind(PoolKind.MHA)
                    .layout(KvLayout.LAYER_FIRST)
                    .layers(LAYERS)
                    .pages(PAGES)
                    .pageSize(PAGE_SIZE)
                    .heads(HEADS)
                    .headBytes(HEAD_BYTES)
                    .build();

    private static final Geometry GEOMETRY =
            new Geometry(2, Shape.LAYER_FIRST, LAYERS, PAGES, PAGE_SIZE, HEADS, HEAD_BYTES);

    private static final DeviceForm.TableOrder REVERSED = (entry, entries) -> entries - 1 - entry;

    @DataProvider
    public Object[][] cases() {
        return new Object[][] {
            {DeviceForm.ALLOCATED, DeviceForm.TableOrder.AS_IS, false},
            {DeviceForm.ALLOCATED, DeviceForm.TableOrder.AS_IS, true},
            {DeviceForm.PER_COMPONENT, DeviceForm.TableOrder.AS_IS, false},
            {DeviceForm.PER_COMPONENT, DeviceForm.TableOrder.AS_IS, true},
            {DeviceForm.PER_COMPONENT, REVERSED, false},
            {DeviceForm.PER_COMPONENT, REVERSED, true},
            {DeviceForm.LAYER_TABLE, DeviceForm.TableOrder.AS_IS, false},
            {DeviceForm.LAYER_TABLE, DeviceForm.TableOrder.AS_IS, true},
            {DeviceForm.LAYER_TABLE, REVERSED, false},
            {DeviceForm.LAYER_TABLE, REVERSED, true},
        };
    }

    @Test(dataProvider = "cases")
    public void eachRegionLandsInItsOwnAllocation(
            DeviceForm form, DeviceForm.TableOrder order, boolean alwaysCopy) {
        byte[] image = Oracle.pattern((int) GEOMETRY.totalBytes(), 7);
        try (DeviceForm.Carried carried = form.create(SPEC, IoBackend.CPU, order)) {
            List<KvPool> holders =
                    form == DeviceForm.ALLOCATED
                            ? List.of(carried.pool)
                            : List.copyOf(carried.carriers);
            assertEquals(
                    holders.size(),
                    form == DeviceForm.LAYER_TABLE ? 6 : form == DeviceForm.ALLOCATED ? 1 : 2);
            for (KvPool h : holders) {
                fill(h, (byte) 0xa5);
            }
            PoolAccess access = new PoolAccess.PerRegion(carried, GEOMETRY, alwaysCopy);
            assertEquals(access.bytes(), GEOMETRY.totalBytes());
            access.write(image);
            // holder i holds bytes [i * size, (i + 1) * size) of the image: component i
            // (per_component) or component i / L, layer i % L (layer_table), written out here
            int size = (int) (GEOMETRY.totalBytes() / holders.size());
            if (form == DeviceForm.LAYER_TABLE) {
                assertEquals(size, LAYER_BYTES);
            }
            for (int i = 0; i < holders.size(); i++) {
                assertEquals(
                        contents(holders.get(i)),
                        Arrays.copyOfRange(image, i * size, (i + 1) * size),
                        form.userName + " allocation " + i);
            }
            assertEquals(access.read(), image);
            fill(holders.get(holders.size() - 1), (byte) 0x3c);
            byte[] changed = image.clone();
            Arrays.fill(changed, changed.length - size, changed.length, (byte) 0x3c);
            assertEquals(access.read(), changed, "read from the allocations, not from a copy");
        }
    }

    private static void fill(KvPool pool, byte value) {
        ByteBuffer b = pool.buffer();
        while (b.hasRemaining()) {
            b.put(value);
        }
    }

    private static byte[] contents(KvPool pool) {
        ByteBuffer b = pool.buffer();
        byte[] out = new byte[b.remaining()];
        b.get(out);
        return out;
    }

    @Test
    public void theSeamMisWiresKviosTable() {
        try (DeviceForm.Carried carried =
                DeviceForm.LAYER_TABLE.create(SPEC, IoBackend.CPU, REVERSED)) {
            // kvio's table entry 0 is the last carrier: the seam really mis-wires the pool
            assertEquals(
                    carried.pool.regionAddress(0),
                    carried.carriers.get(carried.carriers.size() - 1).regionAddress(0));
            assertEquals(
                    carried.pool.regionAddress(carried.pool.regionCount() - 1),
                    carried.carriers.get(0).regionAddress(0));
        }
    }
}
