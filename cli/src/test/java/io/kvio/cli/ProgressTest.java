/*
 * Progress decides between a line rewritten in place and plain log lines by what stderr, the
 * stream it writes to, is open on (a /proc/self/fd link), not by System.console(), which is
 * about stdin and stdout.
 */
package io.kvio.cli;

import static org.testng.Assert.assertFalse;
import static org.testng.Assert.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import org.testng.annotations.Test;

public class ProgressTest extends OutputDirTest {
    private Path link(String name, String target) throws Exception {
        return Files.createSymbolicLink(dir.resolve(name), Paths.get(target));
    }

    @Test
    public void aTerminalDeviceIsATerminal() throws Exception {
        assertTrue(Progress.isTerminal(link("pts", "/dev/pts/3")));
        assertTrue(Progress.isTerminal(link("tty", "/dev/tty1")));
        assertTrue(Progress.isTerminal(link("console", "/dev/console")));
    }

    @Test
    public void aFileAPipeOrNothingIsNot() throws Exception {
        assertFalse(Progress.isTerminal(link("file", dir.resolve("err.log").toString())));
        assertFalse(Progress.isTerminal(link("pipe", "pipe:[12345]")));
        assertFalse(Progress.isTerminal(link("null", "/dev/null")));
        Path plain = Files.createFile(dir.resolve("plain"));
        assertFalse(Progress.isTerminal(plain), "not a link");
        assertFalse(Progress.isTerminal(dir.resolve("missing")), "no such link");
    }

    /**
     * This test JVM's stderr is surefire's pipe (or a file), never a terminal, whatever the
     * terminal Maven runs in: read from /proc, it is not taken for one.
     */
    @Test
    public void theTestJvmsStderrIsNoTerminal() throws Exception {
        if (!Files.exists(Progress.STDERR)) {
            throw new org.testng.SkipException("no /proc here");
        }
        String target = Files.readSymbolicLink(Progress.STDERR).toString();
        assertFalse(Progress.isTerminal(Progress.STDERR), target);
    }
}
