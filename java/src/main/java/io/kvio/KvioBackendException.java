/*
 * A backend call failed while a transfer executed (status BACKEND_ERROR).
 */
package io.kvio;

public class KvioBackendException extends KvioException {
    private static final long serialVersionUID = 1L;

    public KvioBackendException(String message) {
        super(Status.BACKEND_ERROR, message);
    }
}
