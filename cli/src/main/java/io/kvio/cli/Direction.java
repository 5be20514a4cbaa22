/*
 * The two directions a transfer runs in, for `matrix` and `bench`: backup (device pool to host
 * pool) and load (host pool to device pool).
 */
package io.kvio.cli;

enum Direction {
    BACKUP("backup"),
    LOAD("load");

    final String userName;

    Direction(String userName) {
        this.userName = userName;
    }
}
