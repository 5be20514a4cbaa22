/*
 * picocli converters for the names users type (layouts, kinds, io backends, device forms): they parse through
 * kvio's own parsers, so an unknown name fails with kvio's message (the valid names and the
 * nearest match). Plus range checks that name the option and a valid example.
 */
package io.kvio.cli;

import io.kvio.IoBackend;
import io.kvio.KvLayout;
import io.kvio.KvioException;
import io.kvio.PoolKind;
import java.io.File;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Function;
import picocli.CommandLine.ITypeConverter;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.TypeConversionException;

final class Converters {
    /**
     * The io backends a sweep runs when none is named: every concrete one. auto only runs one of
     * them per transfer (without a GPU cpu, or kernel_ascend for NPU memory); name it to include
     * it.
     */
    static List<IoBackend> concreteBackends() {
        List<IoBackend> out = new ArrayList<>();
        for (IoBackend b : IoBackend.values()) {
            if (b != IoBackend.AUTO) {
                out.add(b);
            }
        }
        return out;
    }

    private Converters() {}

    /** A name parsed by one of kvio's parsers; kvio's message (valid names, nearest match). */
    private abstract static class KvioName<T> implements ITypeConverter<T> {
        private final Function<String, T> parser;

        KvioName(Function<String, T> parser) {
            this.parser = parser;
        }

        @Override
        public T convert(String value) {
            try {
                return parser.apply(value.trim());
            } catch (KvioException e) {
                throw new TypeConversionException(e.getMessage());
            }
        }
    }

    static final class Layout extends KvioName<KvLayout> {
        Layout() {
            super(KvLayout::parse);
        }
    }

    static final class Kind extends KvioName<PoolKind> {
        Kind() {
            super(PoolKind::parse);
        }
    }

    static final class Backend extends KvioName<IoBackend> {
        Backend() {
            super(IoBackend::parse);
        }
    }

    /** Device pool forms: allocated, per_component, layer_table (DeviceForm). */
    static final class Form implements ITypeConverter<DeviceForm> {
        @Override
        public DeviceForm convert(String value) {
            DeviceForm form = DeviceForm.of(value.trim());
            if (form == null) {
                StringBuilder valid = new StringBuilder();
                for (DeviceForm f : DeviceForm.values()) {
                    valid.append(valid.length() == 0 ? "" : ", ").append(f.userName);
                }
                throw new TypeConversionException(
                        "unknown device form '" + value.trim() + "'; valid: " + valid);
            }
            return form;
        }
    }

    /**
     * The most io threads an executor takes (native/src/cpu/cpu_executor.cpp: "threads must be at
     * most 1024").
     */
    static final int MAX_THREADS = 1024;

    /** --threads: 0 (one per core) or 1 to MAX_THREADS; else a usage error naming the range. */
    static int threads(CommandSpec spec, String option, long value) {
        if (value < 0 || value > MAX_THREADS) {
            throw new ParameterException(
                    spec.commandLine(),
                    option
                            + " must be 0 (one per core) or 1 to "
                            + MAX_THREADS
                            + ", got "
                            + value
                            + "; e.g. "
                            + option
                            + " 4");
        }
        return (int) value;
    }

    /**
     * The thread count for an executor of {@code backend}: {@code threads} for the backends that
     * run on io threads (cpu, and auto without a CUDA GPU), 0 for the others, which have none and
     * refuse a count (KvioExecutor.create): --threads applies to the backends it can.
     */
    static int executorThreads(io.kvio.IoBackend backend, int threads) {
        return backend.hasIoThreads() ? threads : 0;
    }

    /**
     * A report file's path (--json, --junit, --csv, --svg). A path that ends with '/' names a
     * folder, and is refused here: Path drops the trailing '/', so "out/" would otherwise be
     * written as a file named "out". An existing folder without the '/' is refused before the run
     * (ReportFiles.checkOutputs). Either way: name a file, there is no default file name.
     */
    static final class OutputFile implements ITypeConverter<Path> {
        @Override
        public Path convert(String value) {
            if (value.isEmpty()) {
                throw new TypeConversionException("the path is empty; name a file");
            }
            if (value.endsWith("/") || value.endsWith(File.separator)) {
                throw new TypeConversionException(
                        "'"
                                + value
                                + "' ends with '"
                                + value.charAt(value.length() - 1)
                                + "' and so names a folder; name a file, e.g. "
                                + value
                                + "report");
            }
            return Paths.get(value);
        }
    }

    /** The value when it is 1 to max; else a usage error that names the range and why. */
    static long inRange(CommandSpec spec, String option, long value, long max, String why) {
        if (value < 1 || value > max) {
            throw new ParameterException(
                    spec.commandLine(), option + " must be 1 to " + max + why + ", got " + value);
        }
        return value;
    }

    static long positive(CommandSpec spec, String option, long value) {
        return atLeast(spec, option, value, 1, "at least 1", 8);
    }

    /** The value when it is at least min; else a usage error that says the rule and an example. */
    private static long atLeast(
            CommandSpec spec, String option, long value, long min, String rule, long example) {
        if (value < min) {
            throw new ParameterException(
                    spec.commandLine(),
                    option
                            + " must be "
                            + rule
                            + ", got "
                            + value
                            + "; e.g. "
                            + option
                            + " "
                            + example);
        }
        return value;
    }

    /** The values in the order first given, repeats dropped. */
    static <T> List<T> distinct(List<T> values) {
        List<T> out = new ArrayList<>();
        for (T v : values) {
            if (!out.contains(v)) {
                out.add(v);
            }
        }
        return out;
    }
}
