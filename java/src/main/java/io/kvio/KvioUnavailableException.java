/*
 * A backend that is absent on this machine or in this build (status UNAVAILABLE); the message gives the cause.
 */
package io.kvio;

public class KvioUnavailableException extends KvioException {
    private static final long serialVersionUID = 1L;

    public KvioUnavailableException(String message) {
        super(Status.UNAVAILABLE, message);
    }
}
