/*
 * A report file is written all or nothing (ReportFiles.writeIfGiven, which every --json, --junit,
 * --csv and --svg goes through): a write that fails part way (a full disk, a file size limit)
 * leaves the previous file as it was and no temporary file beside it, and one that succeeds
 * replaces the file whole.
 */
package io.kvio.cli;

import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertFalse;
import static org.testng.Assert.assertTrue;

import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.testng.annotations.Test;

public class ReportFilesTest extends OutputDirTest {
    private List<String> namesIn(Path folder) throws IOException {
        try (Stream<Path> s = Files.list(folder)) {
            return s.map(p -> p.getFileName().toString()).sorted().collect(Collectors.toList());
        }
    }

    @Test
    public void aWriteThatFailsPartWayLeavesThePreviousFileAsItWas() throws IOException {
        Path folder = Files.createDirectory(dir.resolve("failing"));
        Path file = folder.resolve("m.json");
        Files.writeString(file, "{\"previous\": true}\n");
        StringWriter err = new StringWriter();
        boolean written =
                ReportFiles.writeIfGiven(
                        "--json",
                        file,
                        f -> {
                            Files.writeString(f, "{\"trunc", StandardCharsets.UTF_8);
                            throw new IOException("File too large");
                        },
                        new PrintWriter(err, true));
        assertFalse(written);
        assertTrue(err.toString().contains("could not write --json " + file), err.toString());
        assertEquals(Files.readString(file), "{\"previous\": true}\n");
        assertEquals(namesIn(folder), List.of("m.json"), "a temporary file was left behind");
    }

    @Test
    public void aWriterThatThrowsUncheckedLeavesNoFileBehind() throws IOException {
        Path folder = Files.createDirectory(dir.resolve("unchecked"));
        Path file = folder.resolve("b.csv");
        boolean written =
                ReportFiles.writeIfGiven(
                        "--csv",
                        file,
                        f -> {
                            Files.writeString(f, "backend,lay", StandardCharsets.UTF_8);
                            throw new java.io.UncheckedIOException(new IOException("No space"));
                        },
                        new PrintWriter(new StringWriter(), true));
        assertFalse(written);
        assertEquals(namesIn(folder), List.of(), "a partial file or a temporary file was left");
    }

    @Test
    public void aWriteThatSucceedsReplacesTheFileWhole() throws IOException {
        Path folder = Files.createDirectory(dir.resolve("succeeding"));
        Path file = folder.resolve("m.xml");
        Files.writeString(file, "a much longer previous report than the new one\n");
        boolean written =
                ReportFiles.writeIfGiven(
                        "--junit",
                        file,
                        f -> Files.writeString(f, "<new/>\n", StandardCharsets.UTF_8),
                        new PrintWriter(new StringWriter(), true));
        assertTrue(written);
        assertEquals(Files.readString(file), "<new/>\n");
        assertEquals(namesIn(folder), List.of("m.xml"));
    }

    /**
     * A path that is not a regular file (a device such as /dev/full, a pipe) is written in place: a
     * rename would replace it with a regular file (as root even /dev/full). A named pipe in the
     * test's folder stands for it, with a reader on a daemon thread.
     */
    @Test(timeOut = 30_000)
    public void aPipeIsWrittenInPlaceNeverReplaced() throws Exception {
        Path folder = Files.createDirectory(dir.resolve("pipe"));
        Path fifo = folder.resolve("report.fifo");
        Process mkfifo = new ProcessBuilder("mkfifo", fifo.toString()).start();
        if (mkfifo.waitFor() != 0) {
            throw new org.testng.SkipException("no mkfifo here");
        }
        java.util.concurrent.CompletableFuture<String> read =
                new java.util.concurrent.CompletableFuture<>();
        Thread reader =
                new Thread(
                        () -> {
                            try {
                                read.complete(Files.readString(fifo));
                            } catch (IOException e) {
                                read.completeExceptionally(e);
                            }
                        },
                        "fifo-reader");
        reader.setDaemon(true); // never joined: without a writer it would wait forever
        reader.start();
        boolean written =
                ReportFiles.writeIfGiven(
                        "--csv",
                        fifo,
                        f -> Files.writeString(f, "a,b\n", StandardCharsets.UTF_8),
                        new PrintWriter(new StringWriter(), true));
        assertTrue(written);
        assertFalse(Files.isRegularFile(fifo), "the pipe was replaced by a regular file");
        assertEquals(read.get(10, java.util.concurrent.TimeUnit.SECONDS), "a,b\n");
    }
}
