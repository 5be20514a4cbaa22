/*
 * Run in a JVM without the jdk.jfr module (--limit-modules) by FlightRecorderTest: transfers run
 * (submitted, awaited, closed before and after completion) and the classes that hold a transfer's
 * Flight Recorder event can be reflected on, as serialisers and debuggers do. Prints "OK"; any
 * NoClassDefFoundError ends it with a stack trace.
 */
package io.kvio;

public final class NoFlightRecorderMain {
    private NoFlightRecorderMain() {}

    public static void main(String[] args) throws Exception {
        PoolSpec spec =
                PoolSpec.builder()
                        .kind(PoolKind.MHA)
                        .layout(KvLayout.LAYER_FIRST)
                        .layers(2)
                        .pages(4)
                        .pageSize(16)
                        .heads(2)
                        .headBytes(64)
                        .build();
        try (DeviceKvPool device = DeviceKvPool.allocate(spec, IoBackend.CPU);
                HostKvPool host = HostKvPool.builder().forDevice(device).pages(4).build();
                TokenIndices slots = TokenIndices.pages(16, 1, 2)) {
            Transfer backup = host.backup(device).deviceIndices(slots).hostIndices(slots).submit();
            backup.await();
            Transfer load = host.load(device, 1).hostIndices(slots).deviceIndices(slots).submit();
            load.close(); // closed without await: the path that commits an event early
            backup.close();
        }
        for (Class<?> c : new Class<?>[] {Transfer.class, NativeBridge.class, Kvio.class}) {
            c.getDeclaredFields();
            c.getDeclaredMethods();
            c.getDeclaredConstructors();
        }
        System.out.println("OK");
    }
}
