/*
 * What a constructor that allocated a native resource does when a later step fails: it closes the
 * resource at once instead of leaving it to the Cleaner, keeping the first failure and adding a
 * failure to close to it as suppressed (as try-with-resources does).
 */
package io.kvio.cli;

final class Cleanup {
    private Cleanup() {}

    /**
     * Closes {@code resource} (null: nothing) after {@code failure}, which the caller then
     * rethrows; a failure to close is added to it as suppressed.
     */
    static void closeAfter(Throwable failure, AutoCloseable resource) {
        if (resource == null) {
            return;
        }
        try {
            resource.close();
        } catch (Throwable closeFailure) {
            failure.addSuppressed(closeFailure);
        }
    }
}
