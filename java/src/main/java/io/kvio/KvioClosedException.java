/*
 * Use of a pool, index list, executor or transfer after close (status CLOSED).
 */
package io.kvio;

public class KvioClosedException extends KvioException {
    private static final long serialVersionUID = 1L;

    public KvioClosedException(String message) {
        super(Status.CLOSED, message);
    }
}
