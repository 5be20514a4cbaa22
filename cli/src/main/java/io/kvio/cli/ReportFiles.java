/*
 * The files `matrix` and `bench` write besides their Markdown report on stdout (--json, --junit,
 * --csv, --svg): each only when asked for, followed by a line on stderr that names it. JSON
 * reports start with the same three fields (kvio version, platform, mode) and are indented.
 */
package io.kvio.cli;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Path;

final class ReportFiles {
    private ReportFiles() {}

    /** Writes one rendering of a report to a file. */
    interface Writer {
        void write(Path file) throws IOException;
    }

    /** Writes the file when one was given (file not null), then says so on err. */
    static void writeIfGiven(Path file, Writer writer, PrintWriter err) throws IOException {
        if (file != null) {
            writer.write(file);
            err.println("kvio: wrote " + file);
        }
    }

    /** A JSON report's root: the kvio version, the platform and the mode (quick or full). */
    static ObjectNode jsonRoot(String version, String platform, String mode) {
        ObjectNode root = new ObjectMapper().createObjectNode();
        root.put("kvio", version);
        root.put("platform", platform);
        root.put("mode", mode);
        return root;
    }

    static void writeJson(Path file, ObjectNode root) throws IOException {
        new ObjectMapper()
                .enable(SerializationFeature.INDENT_OUTPUT)
                .writeValue(file.toFile(), root);
    }
}
