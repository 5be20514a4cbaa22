/*
 * Integration test of the packaged JARs (Failsafe, after `package`), laid out as JavaCPP presets
 * ship: kvio.jar holds the Java classes only and its POM depends on JavaCPP only;
 * kvio-<platform>.jar holds the natives only. kvio.jar + the natives JAR + the JavaCPP JAR, on a
 * fresh class path in a fresh JVM started outside the repository, load the natives from the JAR
 * and move data. (The runnable CLI JAR is tested in cli/, CliJarIT.)
 */
package io.kvio;

import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertTrue;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.jar.JarFile;
import java.util.stream.Stream;
import javax.xml.parsers.DocumentBuilderFactory;
import org.bytedeco.javacpp.Loader;
import org.testng.annotations.AfterClass;
import org.testng.annotations.BeforeClass;
import org.testng.annotations.Test;
import org.w3c.dom.Element;
import org.w3c.dom.NodeList;

public class JarIT {
    private Path workDir;

    @BeforeClass
    public void createWorkDir() throws IOException {
        workDir = Files.createTempDirectory("kvio-jar-it");
    }

    @AfterClass(alwaysRun = true)
    public void deleteWorkDir() throws IOException {
        if (workDir != null) {
            try (Stream<Path> paths = Files.walk(workDir)) {
                paths.sorted(Comparator.reverseOrder()).map(Path::toFile).forEach(File::delete);
            }
        }
    }

    private static Path jar(String property) {
        String path = System.getProperty(property);
        assertTrue(
                path != null,
                "system property " + property + " is not set (run through mvn verify)");
        Path p = Paths.get(path).toAbsolutePath();
        assertTrue(Files.isRegularFile(p), p + " does not exist");
        return p;
    }

    private static String java() {
        return Paths.get(System.getProperty("java.home"), "bin", "java").toString();
    }

    private static final class Result {
        final int exit;
        final String output;

        Result(int exit, String output) {
            this.exit = exit;
            this.output = output;
        }
    }

    private Result run(String... command) throws Exception {
        List<String> cmd = new ArrayList<>(Arrays.asList(command));
        ProcessBuilder pb =
                new ProcessBuilder(cmd).directory(workDir.toFile()).redirectErrorStream(true);
        Process process = pb.start();
        byte[] out = process.getInputStream().readAllBytes();
        assertTrue(process.waitFor(120, TimeUnit.SECONDS), "timed out: " + cmd);
        return new Result(process.exitValue(), new String(out, StandardCharsets.UTF_8));
    }

    /** A program that uses kvio's public API only, run with java's source-file launcher. */
    private static final String SMOKE =
            String.join(
                    "\n",
                    "import io.kvio.*;",
                    "public class Smoke {",
                    "  public static void main(String[] args) {",
                    "    PoolSpec spec = PoolSpec.builder().kind(PoolKind.MHA)",
                    "        .layout(KvLayout.LAYER_FIRST).layers(2).pages(4).pageSize(16)",
                    "        .heads(2).headBytes(64).build();",
                    "    try (DeviceKvPool device = DeviceKvPool.allocate(spec, IoBackend.CPU);",
                    "         HostKvPool host = HostKvPool.builder().forDevice(device)",
                    "             .layout(\"page_first_direct\").pages(2).build();",
                    "         TokenIndices d = TokenIndices.pages(16, 3, 1);",
                    "         TokenIndices h = TokenIndices.pages(16, 0, 1)) {",
                    "      java.nio.ByteBuffer dev = device.buffer();",
                    "      for (int i = 0; i < dev.capacity(); i++) dev.put(i, (byte) (i * 7 + 1));",
                    "      host.backup(device).deviceIndices(d).hostIndices(h).submit().await();",
                    "      java.nio.ByteBuffer hb = host.buffer();",
                    "      // page_first_direct [P, L, ps, H, D]: host page 0 layer 0 = device page 3 layer 0",
                    "      int src = 3 * 16 * 128, ok = 1;",
                    "      for (int b = 0; b < 16 * 128; b++) if (hb.get(b) != dev.get(src + b)) ok = 0;",
                    "      System.out.println(\"version \" + Kvio.version() + \" natives \"",
                    "          + Kvio.nativeLibraryPath() + \" moved OK=\" + ok);",
                    "    }",
                    "  }",
                    "}",
                    "");

    @Test
    public void coreJarLoadsOnAFreshClassPath() throws Exception {
        Path core = jar("kvio.jar");
        Path natives = jar("kvio.natives.jar");
        Path javacpp =
                Paths.get(Loader.class.getProtectionDomain().getCodeSource().getLocation().toURI());
        Path cache = workDir.resolve("cache-core");
        Path smoke = workDir.resolve("Smoke.java");
        Files.writeString(smoke, SMOKE);
        String classPath = core + File.pathSeparator + natives + File.pathSeparator + javacpp;
        Result r =
                run(
                        java(),
                        "-Dorg.bytedeco.javacpp.cachedir=" + cache,
                        "-cp",
                        classPath,
                        smoke.toString());
        assertEquals(r.exit, 0, r.output);
        assertTrue(r.output.contains("moved OK=1"), r.output);
        assertTrue(r.output.contains("version " + Kvio.VERSION), r.output);
        // the natives came out of kvio.jar into the cache, not from target/classes
        try (Stream<Path> files = Files.walk(cache)) {
            List<String> names = new ArrayList<>();
            files.forEach(f -> names.add(f.getFileName().toString()));
            assertTrue(
                    names.contains("libkvio.so") && names.contains("libjniKvioNative.so"),
                    names.toString());
        }
    }

    @Test
    public void classesJarWithoutNativesSaysWhatIsMissing() throws Exception {
        Path javacpp =
                Paths.get(Loader.class.getProtectionDomain().getCodeSource().getLocation().toURI());
        Path smoke = workDir.resolve("Smoke.java");
        Files.writeString(smoke, SMOKE);
        Result r =
                run(
                        java(),
                        "-Dorg.bytedeco.javacpp.cachedir=" + workDir.resolve("cache-nonatives"),
                        "-cp",
                        jar("kvio.jar") + File.pathSeparator + javacpp,
                        smoke.toString());
        assertTrue(r.exit != 0, r.output);
        assertTrue(!r.output.contains("moved OK"), r.output);
        // The error names the JAR to add, by file and by Maven coordinates.
        String platform = System.getProperty("kvio.platform");
        assertTrue(r.output.contains("could not load the native libraries"), r.output);
        assertTrue(r.output.contains("the natives JAR, kvio-" + platform + ".jar"), r.output);
        assertTrue(r.output.contains("io.kvio:kvio with classifier " + platform + ","), r.output);
    }

    /**
     * The class path README gives for running without Maven, from java/target/ alone: kvio.jar,
     * kvio-<platform>.jar and lib/javacpp-<version>.jar, which `package` copies there.
     */
    @Test
    public void theReadmeClassPathWorksFromTheTargetFolder() throws Exception {
        Path target = jar("kvio.jar").getParent();
        String platform = System.getProperty("kvio.platform");
        // the JAR the build depends on (from the local repository): javacpp-<version>.jar
        String javacppName =
                Paths.get(Loader.class.getProtectionDomain().getCodeSource().getLocation().toURI())
                        .getFileName()
                        .toString();
        assertTrue(javacppName.matches("javacpp-[0-9.]+\\.jar"), javacppName);
        Path javacpp = target.resolve("lib").resolve(javacppName);
        assertTrue(Files.isRegularFile(javacpp), javacpp + " was not copied by package");
        try (Stream<Path> lib = Files.list(target.resolve("lib"))) {
            List<String> names = new ArrayList<>();
            lib.forEach(f -> names.add(f.getFileName().toString()));
            assertEquals(names, List.of(javacpp.getFileName().toString()), "target/lib");
        }
        Path smoke = workDir.resolve("Smoke.java");
        Files.writeString(smoke, SMOKE);
        String classPath =
                String.join(
                        File.pathSeparator,
                        target.resolve("kvio.jar").toString(),
                        target.resolve("kvio-" + platform + ".jar").toString(),
                        javacpp.toString());
        Result r =
                run(
                        java(),
                        "-Dorg.bytedeco.javacpp.cachedir=" + workDir.resolve("cache-readme"),
                        "-cp",
                        classPath,
                        smoke.toString());
        assertEquals(r.exit, 0, r.output);
        assertTrue(r.output.contains("moved OK=1"), r.output);
    }

    @Test
    public void jarsFollowThePresetsLayout() throws Exception {
        String platform = System.getProperty("kvio.platform");
        List<String> classes = entries(jar("kvio.jar"));
        List<String> natives = entries(jar("kvio.natives.jar"));
        assertTrue(classes.contains("io/kvio/Kvio.class"), classes.toString());
        for (String e : classes) {
            assertTrue(!e.endsWith(".so") && !e.startsWith("io/kvio/" + platform + "/"), e);
        }
        assertTrue(natives.contains("io/kvio/" + platform + "/libkvio.so"), natives.toString());
        assertTrue(
                natives.contains("io/kvio/" + platform + "/libjniKvioNative.so"),
                natives.toString());
        for (String e : natives) {
            assertTrue(
                    e.startsWith("META-INF/")
                            || e.equals("io/")
                            || e.equals("io/kvio/")
                            || e.startsWith("io/kvio/" + platform + "/"),
                    e);
            assertTrue(!e.endsWith(".class"), e);
        }
        // the POM inside kvio.jar: JavaCPP is the only dependency outside test scope
        String pom;
        try (JarFile jf = new JarFile(jar("kvio.jar").toFile())) {
            pom =
                    new String(
                            jf.getInputStream(jf.getEntry("META-INF/maven/io.kvio/kvio/pom.xml"))
                                    .readAllBytes(),
                            StandardCharsets.UTF_8);
        }
        Element project =
                DocumentBuilderFactory.newInstance()
                        .newDocumentBuilder()
                        .parse(
                                new java.io.ByteArrayInputStream(
                                        pom.getBytes(StandardCharsets.UTF_8)))
                        .getDocumentElement();
        NodeList deps = project.getElementsByTagName("dependency");
        List<String> runtime = new ArrayList<>();
        for (int i = 0; i < deps.getLength(); i++) {
            Element d = (Element) deps.item(i);
            NodeList scope = d.getElementsByTagName("scope");
            if (scope.getLength() == 0 || !scope.item(0).getTextContent().equals("test")) {
                runtime.add(
                        d.getElementsByTagName("groupId").item(0).getTextContent()
                                + ":"
                                + d.getElementsByTagName("artifactId").item(0).getTextContent());
            }
        }
        assertEquals(runtime, List.of("org.bytedeco:javacpp"));
    }

    private static List<String> entries(Path jar) throws IOException {
        List<String> out = new ArrayList<>();
        try (JarFile jf = new JarFile(jar.toFile())) {
            jf.stream().forEach(e -> out.add(e.getName()));
        }
        return out;
    }

    @Test
    public void testClassesUseThePackagedJar() throws Exception {
        // Failsafe puts target/kvio.jar (not target/classes) on the class path
        String location = Kvio.class.getProtectionDomain().getCodeSource().getLocation().toString();
        assertTrue(location.endsWith(".jar"), location);
        assertEquals(Kvio.version(), Kvio.VERSION);
        assertTrue(Kvio.nativeLibraryPath().contains("javacpp-cache-it"), Kvio.nativeLibraryPath());
    }
}
