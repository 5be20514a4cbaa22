/*
 * What each constant of the public enums (PoolKind, KvLayout, IoBackend, Granularity) carries:
 * its native KVIO_* value (kvio.h; what crosses JNI, never the ordinal) and the name users type
 * (the enum's userName() and toString()). The enum's Names looks constants up by either.
 */
package io.kvio;

final class NativeName {
    final int value;
    final String userName;

    NativeName(int value, String userName) {
        this.value = value;
        this.userName = userName;
    }
}
