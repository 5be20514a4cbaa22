/*
 * A report file is written all or nothing (ReportFiles.writeIfGiven, which every --json, --junit,
 * --csv and --svg goes through): a write that fails part way (a full disk, a file size limit)
 * leaves the previous file as it was and no temporary file beside it, and one that succeeds
 * replaces the file whole, keeping its permissions. /dev/ and /proc/ paths (a redirected stdout),
 * pipes and files in a folder that is not writable are written in place.
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
import java.nio.file.attribute.BasicFileAttributes;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import java.util.Set;
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

    /**
     * A redirected stdout (`--json=/dev/stdout > out.txt`) is a /proc/self/fd/N link to a regular
     * file: the report is appended to that open file, which is neither replaced (a rename would
     * unlink the file the process's descriptor writes to) nor truncated (opening the link as a
     * writer does would), so the Markdown already written there stays. A descriptor of this process
     * open on a file in the test's folder stands for it; the writer opens its path as the real ones
     * do (truncating).
     */
    @Test
    public void aProcFdPathToARegularFileIsWrittenInPlaceNeverReplaced() throws IOException {
        Path fds = Path.of("/proc/self/fd");
        if (!Files.isDirectory(fds)) {
            throw new org.testng.SkipException("no /proc/self/fd here");
        }
        Path folder = Files.createDirectory(dir.resolve("redirected"));
        Path file = folder.resolve("out.txt");
        try (java.io.FileOutputStream stdout = new java.io.FileOutputStream(file.toFile())) {
            stdout.write("| markdown table |\n".getBytes(StandardCharsets.UTF_8));
            stdout.flush();
            Path descriptor = null;
            try (Stream<Path> s = Files.list(fds)) {
                for (Path fd : (Iterable<Path>) s::iterator) {
                    try {
                        if (Files.readSymbolicLink(fd).equals(file.toRealPath())) {
                            descriptor = fd;
                        }
                    } catch (IOException e) {
                        // a descriptor closed while listing
                    }
                }
            }
            assertTrue(descriptor != null, "no descriptor of this process is open on " + file);
            Object inode = Files.readAttributes(file, BasicFileAttributes.class).fileKey();
            // as given, and through a symbolic link to it (a link to /dev/stdout)
            Path link = Files.createSymbolicLink(dir.resolve("stdout-link"), descriptor);
            for (Path given : List.of(descriptor, link)) {
                boolean written =
                        ReportFiles.writeIfGiven(
                                "--json",
                                given,
                                f -> Files.writeString(f, "{}\n", StandardCharsets.UTF_8),
                                new PrintWriter(new StringWriter(), true));
                assertTrue(written, given.toString());
                assertEquals(
                        Files.readAttributes(file, BasicFileAttributes.class).fileKey(),
                        inode,
                        "the redirected file was replaced through " + given);
            }
            assertEquals(Files.readString(file), "| markdown table |\n{}\n{}\n");
            assertEquals(namesIn(folder), List.of("out.txt"));
        }
    }

    /**
     * A replaced file keeps its permissions (the temporary file is made with the defaults the umask
     * leaves, and takes the old file's before it is moved into place).
     */
    @Test
    public void aReplacedFileKeepsItsPermissions() throws IOException {
        Path folder = Files.createDirectory(dir.resolve("permissions"));
        Path file = folder.resolve("m.json");
        Files.writeString(file, "{}\n");
        Set<PosixFilePermission> shared = PosixFilePermissions.fromString("rw-rw----");
        try {
            Files.setPosixFilePermissions(file, shared);
        } catch (UnsupportedOperationException e) {
            throw new org.testng.SkipException("no POSIX permissions here");
        }
        boolean written =
                ReportFiles.writeIfGiven(
                        "--json",
                        file,
                        f -> Files.writeString(f, "{\"new\": 1}\n", StandardCharsets.UTF_8),
                        new PrintWriter(new StringWriter(), true));
        assertTrue(written);
        assertEquals(Files.readString(file), "{\"new\": 1}\n");
        assertEquals(Files.getPosixFilePermissions(file), shared);
    }

    /**
     * A new report file gets the permissions any new file gets here (the umask's), not owner-only.
     */
    @Test
    public void aNewFileGetsTheUsualPermissions() throws IOException {
        Path folder = Files.createDirectory(dir.resolve("new-file"));
        Set<PosixFilePermission> usual;
        try {
            usual = Files.getPosixFilePermissions(Files.createFile(folder.resolve("usual")));
        } catch (UnsupportedOperationException e) {
            throw new org.testng.SkipException("no POSIX permissions here");
        }
        Path file = folder.resolve("b.csv");
        boolean written =
                ReportFiles.writeIfGiven(
                        "--csv",
                        file,
                        f -> Files.writeString(f, "a,b\n", StandardCharsets.UTF_8),
                        new PrintWriter(new StringWriter(), true));
        assertTrue(written);
        assertEquals(Files.getPosixFilePermissions(file), usual);
    }

    /**
     * The temporary file has a fresh name: a file named as temporaries once were (".NAME.PID.tmp",
     * which a run of the same process would have overwritten) is left alone. It guards against a
     * return to names derived from the process.
     */
    @Test
    public void aFileNamedLikeATemporaryIsLeftAlone() throws IOException {
        Path folder = Files.createDirectory(dir.resolve("temporary"));
        Path file = folder.resolve("b.csv");
        Path other = folder.resolve(".b.csv." + ProcessHandle.current().pid() + ".tmp");
        Files.writeString(other, "not ours\n");
        boolean written =
                ReportFiles.writeIfGiven(
                        "--csv",
                        file,
                        f -> Files.writeString(f, "a,b\n", StandardCharsets.UTF_8),
                        new PrintWriter(new StringWriter(), true));
        assertTrue(written);
        assertEquals(Files.readString(file), "a,b\n");
        assertEquals(Files.readString(other), "not ours\n");
    }

    /**
     * An existing writable file in a folder that is not writable is written in place (no temporary
     * file can be made there) and accepted by checkOutputs' problem(). Root writes to any folder,
     * so the test is skipped where the folder stays writable.
     */
    @Test
    public void aWritableFileInAReadOnlyFolderIsWrittenInPlace() throws IOException {
        Path folder = Files.createDirectory(dir.resolve("read-only"));
        Path file = folder.resolve("m.xml");
        Files.writeString(file, "<old/>\n");
        Set<PosixFilePermission> before = Files.getPosixFilePermissions(folder);
        Files.setPosixFilePermissions(folder, PosixFilePermissions.fromString("r-xr-xr-x"));
        try {
            if (Files.isWritable(folder)) {
                throw new org.testng.SkipException("the folder stays writable (root)");
            }
            assertEquals(ReportFiles.problem(file), null);
            boolean written =
                    ReportFiles.writeIfGiven(
                            "--junit",
                            file,
                            f -> Files.writeString(f, "<new/>\n", StandardCharsets.UTF_8),
                            new PrintWriter(new StringWriter(), true));
            assertTrue(written);
            assertEquals(Files.readString(file), "<new/>\n");
        } finally {
            Files.setPosixFilePermissions(folder, before);
        }
    }
}
