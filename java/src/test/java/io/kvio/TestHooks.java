package io.kvio;

import io.kvio.bridge.KvioTestHooks;

/** Test only: fault injection through the test variant of libkvio (KvioTestHooks). */
final class TestHooks {
    private TestHooks() {}

    /** The next {@code count} occurrences of {@code fault} fail (KVIO_TEST_FAULT_*). */
    static void injectFault(int fault, long count) {
        Dispatcher.check(KvioTestHooks.kvio_test_inject_fault(fault, count));
    }
}
