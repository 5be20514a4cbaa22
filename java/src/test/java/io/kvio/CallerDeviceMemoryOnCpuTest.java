/*
 * CallerDeviceMemoryTest's check on the cpu backend (host memory in the same forms: separate
 * kvio-allocated carriers wrapped with wrapComponents / wrapLayers), so the GPU test's own pools,
 * indices and oracle use are checked on every machine; the GPU group runs it on kernel and direct.
 */
package io.kvio;

import org.testng.annotations.DataProvider;
import org.testng.annotations.Test;

public class CallerDeviceMemoryOnCpuTest {
    @DataProvider
    public Object[][] forms() {
        return new Object[][] {
            {CallerDeviceMemoryTest.Form.PER_COMPONENT}, {CallerDeviceMemoryTest.Form.LAYER_TABLE}
        };
    }

    @Test(dataProvider = "forms")
    public void wrappedSeparateAllocationsMatchOracleOnCpu(CallerDeviceMemoryTest.Form form) {
        CallerDeviceMemoryTest.check(IoBackend.CPU, form);
    }
}
