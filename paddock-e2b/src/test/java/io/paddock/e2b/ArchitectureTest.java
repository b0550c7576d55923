package io.paddock.e2b;

import org.junit.jupiter.api.Test;

import java.lang.reflect.Constructor;
import java.lang.reflect.Executable;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.lang.reflect.Type;
import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The module's public API ({@link E2bServer}, {@link E2bOptions}, {@link E2bAccess}) is JDK and Paddock API
 * types only: no Jetty or Jackson type leaks out (docs/CONTRIBUTING.md, "Public and internal"); the rest is in {@code io.paddock.e2b.internal}.
 */
class ArchitectureTest {
    @Test
    void publicSignaturesUseOnlyJdkAndPaddockTypes() {
        List<String> bad = new ArrayList<>();
        for (Class<?> c : List.of(E2bServer.class, E2bOptions.class, E2bOptions.Builder.class, E2bAccess.class,
                E2bAccess.Holder.class)) {
            List<Executable> all = new ArrayList<>(List.of(c.getDeclaredMethods()));
            all.addAll(List.of(c.getDeclaredConstructors()));
            for (Executable m : all) {
                if (!Modifier.isPublic(m.getModifiers())) {
                    continue;
                }
                List<Type> types = new ArrayList<>(List.of(m.getGenericParameterTypes()));
                if (m instanceof Method method) {
                    types.add(method.getGenericReturnType());
                }
                for (Type t : types) {
                    for (String part : t.getTypeName().split("[<>, \\[\\]]+")) {
                        if (part.contains(".") && !part.startsWith("java.") && !part.startsWith("io.paddock.")
                                || part.startsWith("io.paddock.") && part.contains(".internal.")) {
                            bad.add(c.getSimpleName() + "." + (m instanceof Constructor<?> ? "<init>" : m.getName()) + " uses " + part);
                        }
                    }
                }
            }
        }
        assertThat(bad).isEmpty();
    }
}
