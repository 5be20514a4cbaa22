/*
 * A valid request this configuration cannot carry out (status UNSUPPORTED); the message says what to use instead.
 */
package io.kvio;

public class KvioUnsupportedException extends KvioException {
    private static final long serialVersionUID = 1L;

    public KvioUnsupportedException(String message) {
        super(Status.UNSUPPORTED, message);
    }
}
