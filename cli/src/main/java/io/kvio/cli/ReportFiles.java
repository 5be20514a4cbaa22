/*
 * The files `matrix`, `bench` and `plot` write besides their Markdown report on stdout (--json,
 * --junit, --csv, --svg): each only when asked for, followed by a line on stderr that names it.
 * Every path is checked before the run starts (checkOutputs: a usage error, exit 2); a file that
 * still cannot be written after the run is one error line on stderr, the other files are still
 * written, and the command keeps the run's own exit status (exitStatus). Each file is written to
 * a temporary file in the same folder and then renamed over the target (writeIfGiven), so a write
 * that fails (a full disk, a file size limit) leaves the previous file as it was, never a
 * truncated one. /dev/ and /proc/ paths (/dev/stdout), devices and pipes are appended to instead
 * (a stdout redirected to a file keeps the Markdown report), once the report is complete; a
 * writable file in a folder that is not writable is rewritten in place (not all-or-nothing: a
 * write that fails there can leave it truncated). JSON reports start with the same three fields (kvio version, platform, mode) and
 * are indented.
 */
package io.kvio.cli;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintWriter;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.AccessDeniedException;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.FileSystemException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.ParameterException;

final class ReportFiles {
    private ReportFiles() {}

    /** Writes one rendering of a report to a file. */
    interface Writer {
        void write(Path file) throws IOException;
    }

    /**
     * Checks the output files named by options (option name -> path, null when not given) before a
     * run: a path must not be a folder, an existing file must be writable, a new file's folder must
     * exist and be writable, and no two options may name the same file. A usage error (exit 2)
     * names the option and the path.
     */
    static void checkOutputs(CommandSpec spec, Map<String, Path> files) {
        Map<Path, String> seen = new HashMap<>();
        for (Map.Entry<String, Path> e : files.entrySet()) {
            Path file = e.getValue();
            if (file == null) {
                continue;
            }
            String option = e.getKey();
            String problem = problem(file);
            if (problem != null) {
                throw new ParameterException(
                        spec.commandLine(), option + " " + file + ": " + problem);
            }
            String other = seen.putIfAbsent(identity(file), option);
            if (other != null) {
                throw new ParameterException(
                        spec.commandLine(),
                        option + " " + file + ": " + other + " names the same file");
            }
        }
    }

    /**
     * A usage error when the report {@code option} would be written over the file an input option
     * reads ({@code plot t.tsv --svg t.tsv}): checked before anything is read or written.
     */
    static void checkNotInput(
            CommandSpec spec, String option, Path output, String inputName, Path input) {
        if (output != null && input != null && identity(output).equals(identity(input))) {
            throw new ParameterException(
                    spec.commandLine(),
                    option
                            + " "
                            + output
                            + ": is "
                            + inputName
                            + ", which this command reads; name another file");
        }
    }

    /**
     * The file a path names, for telling whether two paths are one file: its real path (symbolic
     * links and {@code ..} resolved) when it exists, else its folder's real path and its name, else
     * the path made absolute and normalized.
     */
    private static Path identity(Path file) {
        Path absolute = file.toAbsolutePath(); // not normalized: ".." after a link is the link's
        try {
            return absolute.toRealPath();
        } catch (IOException notThere) {
            Path parent = absolute.getParent();
            if (parent != null && absolute.getFileName() != null) {
                try {
                    return parent.toRealPath().resolve(absolute.getFileName());
                } catch (IOException noFolder) {
                    // below
                }
            }
            return absolute.normalize();
        }
    }

    /** Why a report cannot be written to this path, or null when it can. */
    static String problem(Path file) {
        if (Files.isDirectory(file)) {
            return "is a folder; name a file";
        }
        if (Files.exists(file) && !Files.isWritable(file)) {
            return "the file exists and is not writable";
        }
        if (writtenInPlace(file)) {
            return null;
        }
        Path parent = target(file).getParent();
        if (parent == null || !Files.isDirectory(parent)) {
            return "no folder " + parent + "; create it first or name a file in an existing folder";
        }
        if (!Files.isWritable(parent)) {
            return "the folder " + parent + " is not writable (a new report file is created there)";
        }
        return null;
    }

    /**
     * Whether a report is written to {@code file} in place rather than replaced by a rename:
     * appended (appendedInPlace), or an existing writable file in a folder that is not writable (no
     * temporary file can be made there), rewritten.
     */
    private static boolean writtenInPlace(Path file) {
        if (appendedInPlace(file)) {
            return true;
        }
        if (!Files.exists(file)) {
            return false;
        }
        Path parent = target(file).getParent();
        return parent != null && !Files.isWritable(parent) && Files.isWritable(file);
    }

    /**
     * Whether a report is appended to {@code file}, never replacing nor truncating it: a path under
     * /dev/ or /proc/ as given or as a symbolic link leads (/dev/stdout, /proc/self/fd/1: whatever
     * the descriptor is open on, which may be the regular file the shell redirected stdout to and
     * which already holds the Markdown report), or a path whose file is not a regular file (a
     * device, a pipe).
     */
    private static boolean appendedInPlace(Path file) {
        for (Path hop : links(file)) {
            if (hop.startsWith("/dev") || hop.startsWith("/proc")) {
                return true;
            }
        }
        return Files.exists(file) && !Files.isRegularFile(file);
    }

    /** The file a report replaces: the path itself, or the file a symbolic link points to. */
    private static Path target(Path file) {
        Path absolute = file.toAbsolutePath();
        if (Files.isSymbolicLink(absolute)) {
            try {
                return absolute.toRealPath();
            } catch (IOException e) {
                return absolute; // a dangling link: replaced by the report
            }
        }
        return absolute;
    }

    /**
     * The path as given (absolute, normalized) and each symbolic link it leads through, unresolved
     * further (a link to /dev/stdout gives /dev/stdout, not the file stdout is redirected to).
     */
    private static List<Path> links(Path file) {
        List<Path> hops = new ArrayList<>();
        Path hop = file.toAbsolutePath().normalize();
        hops.add(hop);
        for (int i = 0; i < 40 && Files.isSymbolicLink(hop); i++) {
            try {
                hop = hop.resolveSibling(Files.readSymbolicLink(hop)).toAbsolutePath().normalize();
            } catch (IOException e) {
                break;
            }
            hops.add(hop);
        }
        return hops;
    }

    /**
     * Writes {@code file} all or nothing: {@code writer} writes a new temporary file (random name,
     * created exclusively) in the same folder, which then replaces {@code file} in one rename,
     * keeping an existing file's POSIX permissions; when anything fails the temporary file is
     * deleted and {@code file} is left as it was. A path written in place (writtenInPlace: under
     * /dev/ or /proc/, not a regular file, or a writable file in a folder that is not) is given to
     * {@code writer} as it is.
     */
    static void writeAtomically(Path file, Writer writer) throws IOException {
        if (appendedInPlace(file)) {
            appendWhole(file, writer);
            return;
        }
        if (writtenInPlace(file)) {
            writer.write(file); // a writable file in a folder that is not writable
            return;
        }
        Path target = target(file);
        Path temporary = createTemporary(target);
        boolean moved = false;
        try {
            writer.write(temporary);
            if (Files.exists(target)) {
                copyPermissions(target, temporary);
            }
            try {
                Files.move(
                        temporary,
                        target,
                        StandardCopyOption.REPLACE_EXISTING,
                        StandardCopyOption.ATOMIC_MOVE);
            } catch (AtomicMoveNotSupportedException e) {
                Files.move(temporary, target, StandardCopyOption.REPLACE_EXISTING);
            }
            moved = true;
        } finally {
            if (!moved) {
                try {
                    Files.deleteIfExists(temporary);
                } catch (IOException e) {
                    // the write's own failure is the one to report
                }
            }
        }
    }

    /**
     * Has {@code writer} write a temporary file in the default temporary-file folder, then appends
     * it to {@code file} (opened without truncating: a redirected stdout keeps what was written to
     * it before), so a writer that fails writes nothing there.
     */
    private static void appendWhole(Path file, Writer writer) throws IOException {
        Path staged = Files.createTempFile("kvio-report-", ".tmp");
        try {
            writer.write(staged);
            try (OutputStream to =
                    Files.newOutputStream(
                            file,
                            StandardOpenOption.CREATE,
                            StandardOpenOption.WRITE,
                            StandardOpenOption.APPEND)) {
                Files.copy(staged, to);
            }
        } finally {
            Files.deleteIfExists(staged);
        }
    }

    /**
     * A new file beside {@code target}, random name, created exclusively; asked for rw-rw-rw-,
     * which the umask reduces as for any new file (createTempFile's default is owner-only), where
     * the file system has POSIX permissions.
     */
    private static Path createTemporary(Path target) throws IOException {
        String prefix = "." + target.getFileName() + ".";
        try {
            return Files.createTempFile(
                    target.getParent(),
                    prefix,
                    ".tmp",
                    PosixFilePermissions.asFileAttribute(
                            PosixFilePermissions.fromString("rw-rw-rw-")));
        } catch (UnsupportedOperationException e) {
            return Files.createTempFile(target.getParent(), prefix, ".tmp");
        }
    }

    /** Gives {@code to} the POSIX permissions of {@code from}, where the file system has them. */
    private static void copyPermissions(Path from, Path to) throws IOException {
        try {
            Files.setPosixFilePermissions(to, Files.getPosixFilePermissions(from));
        } catch (UnsupportedOperationException e) {
            // not a POSIX file system: the temporary keeps the default permissions
        }
    }

    /**
     * Writes the file when one was given (file not null; all or nothing: writeAtomically), then
     * says so on err; when writing fails, one error line that names the option and the file
     * instead, and the file is left as it was. Returns false only on failure.
     */
    static boolean writeIfGiven(String option, Path file, Writer writer, PrintWriter err) {
        if (file == null) {
            return true;
        }
        try {
            writeAtomically(file, writer);
        } catch (IOException | UncheckedIOException e) {
            err.println("kvio: could not write " + option + " " + file + ": " + reason(e));
            return false;
        }
        err.println("kvio: wrote " + file);
        return true;
    }

    /**
     * The exit status of a run whose report files were written (or not): the run's own status when
     * it is not 0 (a FAIL stays 1), else 3 when a file could not be written, else 0.
     */
    static int exitStatus(int runStatus, boolean filesWritten) {
        if (runStatus != Main.EXIT_OK) {
            return runStatus;
        }
        return filesWritten ? Main.EXIT_OK : Main.EXIT_ERROR;
    }

    /**
     * An IOException in words: that of its innermost cause (a JUnit writer's IOException wraps the
     * XML writer's, which wraps the file's), without class names where the type says enough.
     */
    private static String reason(Throwable failure) {
        Throwable e = failure;
        while (e.getCause() != null && e.getCause() != e) {
            e = e.getCause();
        }
        if (e instanceof NoSuchFileException) {
            return "no such file or folder";
        }
        if (e instanceof AccessDeniedException) {
            return "permission denied";
        }
        if (e instanceof FileSystemException && ((FileSystemException) e).getReason() != null) {
            return ((FileSystemException) e).getReason();
        }
        return e.getMessage() != null ? e.getMessage() : e.getClass().getSimpleName();
    }

    /** A JSON report's root: the kvio version, the platform and the mode (quick or full). */
    static ObjectNode jsonRoot(String version, String platform, String mode) {
        ObjectNode root = new ObjectMapper().createObjectNode();
        root.put("kvio", version);
        root.put("platform", platform);
        root.put("mode", mode);
        return root;
    }

    /** The report, indented, ending with a line break (as a text file, or a terminal, expects). */
    static void writeJson(Path file, ObjectNode root) throws IOException {
        String text =
                new ObjectMapper()
                        .enable(SerializationFeature.INDENT_OUTPUT)
                        .writeValueAsString(root);
        Files.writeString(file, text + "\n", StandardCharsets.UTF_8);
    }
}
