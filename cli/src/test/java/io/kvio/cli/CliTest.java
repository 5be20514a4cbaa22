/*
 * The command line itself: --help of every command, exit codes of bad arguments, errors that
 * say what to type instead, and `roundtrip` (what runs with no command) on a small cache.
 */
package io.kvio.cli;

import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertTrue;

import org.testng.annotations.DataProvider;
import org.testng.annotations.Test;

public class CliTest {
    @DataProvider(name = "commands")
    public static Object[][] commands() {
        return new Object[][] {{"matrix"}, {"bench"}, {"roundtrip"}};
    }

    @Test(dataProvider = "commands")
    public void everyCommandHasHelp(String command) {
        CliRunner r = CliRunner.run(command, "--help");
        assertEquals(r.exit, 0, r.toString());
        assertTrue(r.out.startsWith("Usage: java -jar kvio-cli.jar " + command), r.out);
        assertTrue(r.out.contains("Exit status:"), r.out);
        CliRunner viaHelp = CliRunner.run("help", command);
        assertEquals(viaHelp.exit, 0, viaHelp.toString());
        assertEquals(viaHelp.out, r.out);
    }

    @Test
    public void topLevelHelpListsTheCommands() {
        CliRunner r = CliRunner.run("--help");
        assertEquals(r.exit, 0, r.toString());
        for (String c : new String[] {"matrix", "bench", "roundtrip", "help"}) {
            assertTrue(r.out.contains("\n  " + c), c + " missing:\n" + r.out);
        }
    }

    @Test
    public void versionNamesTheNativeLibrary() {
        CliRunner r = CliRunner.run("--version");
        assertEquals(r.exit, 0, r.toString());
        assertTrue(r.out.contains("native library " + io.kvio.Kvio.VERSION), r.out);
    }

    @Test
    public void misspelledCommandSuggestsTheRightOne() {
        CliRunner.run("matrx")
                .assertUsage(
                        "java -jar kvio-cli.jar matrix", "Run `java -jar kvio-cli.jar --help`");
    }

    @Test
    public void misspelledOptionSuggestsTheRightOne() {
        CliRunner.run("matrix", "--jsn", "x.json")
                .assertUsage("--json", "Run `java -jar kvio-cli.jar matrix --help`");
    }

    @Test
    public void unknownBackendNamesTheNearestMatch() {
        CliRunner.run("matrix", "--backend", "cpu,kernal")
                .assertUsage("did you mean 'kernel'", "cpu, kernel, direct, kernel_ascend");
    }

    @Test
    public void unknownDeviceFormListsTheValidOnes() {
        CliRunner.run("matrix", "--device-forms", "allocated,per_layer")
                .assertUsage(
                        "unknown device form 'per_layer'", "allocated, per_component, layer_table");
    }

    @Test
    public void quickAndFullExcludeEachOther() {
        CliRunner.run("matrix", "--quick", "--full").assertUsage("mutually exclusive");
    }

    @Test
    public void commandOptionWithoutTheCommandSaysWhereItGoes() {
        CliRunner.run("--tokens", "512")
                .assertUsage(
                        "'--tokens' is an option of bench, roundtrip",
                        "put the command first, e.g. `java -jar kvio-cli.jar");
        CliRunner seed = CliRunner.run("--layouts", "page_first");
        assertTrue(
                seed.err.contains("java -jar kvio-cli.jar bench --layouts page_first"), seed.err);
    }

    @Test
    public void badNumberSaysWhatIsValid() {
        CliRunner.run("roundtrip", "--layers", "0")
                .assertUsage("--layers must be at least 1, got 0");
        CliRunner.run("roundtrip", "--layers", "x").assertUsage("'x' is not a long");
    }

    @Test
    public void unknownLayoutNamesTheNearestMatch() {
        CliRunner.run("roundtrip", "--layouts", "page_heda")
                .assertUsage("did you mean 'page_head'");
    }

    @Test
    public void unsupportedCombinationIsAUsageError() {
        CliRunner.run("roundtrip", "--kind", "mla", "--layouts", "page_head")
                .assertUsage("page_head");
    }

    @Test
    public void roundTripVerifiesEveryLayout() {
        CliRunner r =
                CliRunner.run("roundtrip", "--tokens", "300", "--layers", "3", "--page-size", "16");
        assertEquals(r.exit, 0, r.toString());
        assertTrue(r.out.contains("all 4 layouts verified OK"), r.out);
        CliRunner mla =
                CliRunner.run(
                        "roundtrip",
                        "--kind",
                        "mla",
                        "--tokens",
                        "100",
                        "--layers",
                        "2",
                        "--page-size",
                        "8");
        assertEquals(mla.exit, 0, mla.toString());
        assertTrue(mla.out.contains("all 3 layouts verified OK"), mla.out);
    }
}
