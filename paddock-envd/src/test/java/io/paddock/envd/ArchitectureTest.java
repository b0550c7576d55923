package io.paddock.envd;

import org.junit.jupiter.api.Test;

import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.lang.reflect.Type;
import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/** The module's public API, {@link Envd}, is JDK and Paddock API types only: no protobuf type leaks out. */
class ArchitectureTest {
    @Test
    void envdsPublicSignaturesUseOnlyJdkAndPaddockTypes() {
        List<String> bad = new ArrayList<>();
        for (Class<?> c : List.of(Envd.class, Envd.Response.class)) {
            for (Method m : c.getDeclaredMethods()) {
                if (!Modifier.isPublic(m.getModifiers())) {
                    continue;
                }
                List<Type> types = new ArrayList<>(List.of(m.getGenericParameterTypes()));
                types.add(m.getGenericReturnType());
                types.addAll(List.of(m.getGenericExceptionTypes()));
                for (Type t : types) {
                    String name = t.getTypeName();
                    for (String part : name.split("[<>, ]+")) {
                        if (!part.isEmpty() && part.contains(".") && !part.startsWith("java.")
                                && !part.equals("io.paddock.Sandbox") && !part.startsWith("io.paddock.envd.Envd")) {
                            bad.add(c.getSimpleName() + "." + m.getName() + " uses " + part);
                        }
                    }
                }
            }
        }
        assertThat(bad).isEmpty();
        assertThat(Envd.owns("/process.Process/Start")).isTrue();
        assertThat(Envd.owns("/filesystem.Filesystem/Stat")).isTrue();
        assertThat(Envd.owns("/files")).isFalse();
    }
}
