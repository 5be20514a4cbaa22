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
import java.util.ArrayList;
import java.util.List;
import picocli.CommandLine.ITypeConverter;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.TypeConversionException;

final class Converters {
    private Converters() {}

    static final class Layout implements ITypeConverter<KvLayout> {
        @Override
        public KvLayout convert(String value) {
            try {
                return KvLayout.parse(value.trim());
            } catch (KvioException e) {
                throw new TypeConversionException(e.getMessage());
            }
        }
    }

    static final class Kind implements ITypeConverter<PoolKind> {
        @Override
        public PoolKind convert(String value) {
            try {
                return PoolKind.parse(value.trim());
            } catch (KvioException e) {
                throw new TypeConversionException(e.getMessage());
            }
        }
    }

    static final class Backend implements ITypeConverter<IoBackend> {
        @Override
        public IoBackend convert(String value) {
            try {
                return IoBackend.parse(value.trim());
            } catch (KvioException e) {
                throw new TypeConversionException(e.getMessage());
            }
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

    static long positive(CommandSpec spec, String option, long value) {
        if (value < 1) {
            throw new ParameterException(
                    spec.commandLine(),
                    option + " must be at least 1, got " + value + "; e.g. " + option + " 8");
        }
        return value;
    }

    static long nonNegative(CommandSpec spec, String option, long value) {
        if (value < 0) {
            throw new ParameterException(
                    spec.commandLine(),
                    option + " must be 0 or more, got " + value + "; e.g. " + option + " 0");
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
