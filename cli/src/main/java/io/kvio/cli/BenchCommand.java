package io.kvio.cli;

import picocli.CommandLine.Command;

@Command(name = "bench", mixinStandardHelpOptions = true)
public final class BenchCommand implements Runnable {
    public void run() {}
}
