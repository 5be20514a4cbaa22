/*
 * The CLOSED status as an exception.
 */
package io.kvio;

/**
 * Use of a pool, index list, executor or transfer after it was closed (status CLOSED); also, on
 * Java 22+, use of an open pool or index list over caller memory whose arena was closed (the memory
 * is gone: kvio refuses it before touching it, and nothing moves).
 */
public class KvioClosedException extends KvioException {
    private static final long serialVersionUID = 1L;

    public KvioClosedException(String message) {
        super(Status.CLOSED, message);
    }
}
