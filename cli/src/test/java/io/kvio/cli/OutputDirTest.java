/*
 * Base of the CLI tests whose commands write files: a temporary directory per test class (made
 * before the class's own @BeforeClass methods run, deleted with all it holds after the class)
 * and readers for the JSON and XML written there.
 */
package io.kvio.cli;

import static org.testng.Assert.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.stream.Stream;
import javax.xml.parsers.DocumentBuilderFactory;
import org.testng.annotations.AfterClass;
import org.testng.annotations.BeforeClass;
import org.w3c.dom.Document;

abstract class OutputDirTest {
    Path dir;

    @BeforeClass
    public void createOutputDir() throws IOException {
        dir = Files.createTempDirectory("kvio-" + getClass().getSimpleName());
    }

    /** {@code name} inside the directory, as a command-line argument. */
    String out(String name) {
        return dir.resolve(name).toString();
    }

    /** A JSON report, parsed; it must end with one line break, as every text report does. */
    JsonNode readJson(String name) throws IOException {
        String text = Files.readString(dir.resolve(name));
        assertTrue(text.endsWith("}\n") && !text.endsWith("\n\n"), name + " ends: " + text);
        return new ObjectMapper().readTree(text);
    }

    Document readXml(String name) throws Exception {
        return DocumentBuilderFactory.newInstance()
                .newDocumentBuilder()
                .parse(dir.resolve(name).toFile());
    }

    @AfterClass(alwaysRun = true)
    public void deleteOutputDir() throws IOException {
        if (dir == null) return;
        try (Stream<Path> paths = Files.walk(dir)) {
            paths.sorted(Comparator.reverseOrder()).map(Path::toFile).forEach(File::delete);
        }
    }
}
