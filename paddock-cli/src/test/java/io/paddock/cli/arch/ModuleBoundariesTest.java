package io.paddock.cli.arch;

import com.tngtech.archunit.core.domain.Dependency;
import com.tngtech.archunit.core.domain.JavaClass;
import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * docs/CONTRIBUTING.md, "Public and internal": a module's {@code internal} packages are used only from inside
 * that module ({@code io.paddock.internal}, paddock-api's helpers for Paddock's own modules, excepted). The CLI's test class path holds every shipped module, so the rule is checked here over all of them.
 *
 * <p>The uses that predate the rule are listed in {@code internal-uses.txt} beside this class, one
 * {@code USING-MODULE -> USED-CLASS} line each. A use not on the list fails the build (publish what the other
 * module needs instead), and so does a listed use that is gone (take its line out: the list only shrinks).
 */
class ModuleBoundariesTest {
    private static final Pattern MODULE = Pattern.compile("io\\.paddock(?:\\.(\\w+))?(\\..*)?");
    private static JavaClasses main;

    @BeforeAll
    static void importClasses() {
        main = new ClassFileImporter().withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
                .importPackages("io.paddock");
    }

    @Test
    void internalPackagesAreUsedOnlyFromTheirOwnModule() throws IOException {
        Set<String> uses = new TreeSet<>();
        for (JavaClass c : main) {
            Optional<String> from = module(c.getPackageName());
            if (from.isEmpty() || from.get().equals("testkit")) {
                continue; // the test kit drives tests and never ships
            }
            for (Dependency d : c.getDirectDependenciesFromSelf()) {
                JavaClass target = d.getTargetClass();
                String pkg = target.getPackageName();
                if (!pkg.contains(".internal") || pkg.equals("io.paddock.internal")) {
                    continue; // io.paddock.internal is the helpers every module shares (CONTRIBUTING.md)
                }
                module(pkg).filter(owner -> !owner.equals(from.get()))
                        .ifPresent(owner -> uses.add(from.get() + " -> " + outermost(target).getName()));
            }
        }
        Set<String> allowed = allowedUses();
        Set<String> added = new TreeSet<>(uses);
        added.removeAll(allowed);
        Set<String> gone = new TreeSet<>(allowed);
        gone.removeAll(uses);
        assertThat(added).as("uses of another module's internal classes that are not in internal-uses.txt: publish"
                + " what the using module needs as a contract instead (docs/CONTRIBUTING.md)").isEmpty();
        assertThat(gone).as("lines of internal-uses.txt whose use is gone: take them out, the list only shrinks")
                .isEmpty();
    }

    /** The module a package belongs to: {@code io.paddock.X…} is module X; {@code io.paddock.spi} is paddock-api's. */
    private static Optional<String> module(String pkg) {
        Matcher m = MODULE.matcher(pkg);
        if (!m.matches()) {
            return Optional.empty();
        }
        String first = m.group(1);
        return Optional.of(first == null || first.equals("spi") ? "api" : first);
    }

    private static JavaClass outermost(JavaClass c) {
        JavaClass top = c;
        while (top.getEnclosingClass().isPresent()) {
            top = top.getEnclosingClass().get();
        }
        return top;
    }

    private static Set<String> allowedUses() throws IOException {
        Set<String> lines = new TreeSet<>();
        try (InputStream in = ModuleBoundariesTest.class.getResourceAsStream("internal-uses.txt")) {
            if (in == null) {
                return lines;
            }
            for (String line : new String(in.readAllBytes(), StandardCharsets.UTF_8).split("\n")) {
                String l = line.strip();
                if (!l.isEmpty() && !l.startsWith("#")) {
                    lines.add(l);
                }
            }
        }
        return lines;
    }
}
