package io.paddock.mcp;

import com.tngtech.archunit.core.domain.JavaClass;
import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import org.junit.jupiter.api.Test;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * The public package is JDK and Paddock types only (the MCP SDK, Jackson and the servlet API stay internal), and
 * the tools use the public Paddock API alone, so they run over an engine, a daemon, or a tenant's view alike.
 */
class ArchitectureTest {
    private static final JavaClasses MAIN = new ClassFileImporter().withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
            .importPackages("io.paddock.mcp");

    @Test
    void publicSignaturesUseOnlyJdkAndPaddockTypes() {
        MAIN.stream().filter(c -> c.getPackageName().equals("io.paddock.mcp")).forEach(c -> {
            c.getMethods().stream().filter(m -> m.getModifiers().contains(com.tngtech.archunit.core.domain.JavaModifier.PUBLIC))
                    .forEach(m -> {
                        assertThat(isApi(m.getRawReturnType())).as(m.getFullName()).isTrue();
                        m.getRawParameterTypes().forEach(p -> assertThat(isApi(p)).as(m.getFullName() + " takes " + p.getName()).isTrue());
                    });
        });
    }

    private static boolean isApi(JavaClass c) {
        JavaClass base = c.isArray() ? c.getBaseComponentType() : c;
        String p = base.getPackageName();
        return base.isPrimitive() || p.startsWith("java.") || p.equals("io.paddock") || p.equals("io.paddock.mcp");
    }

    @Test
    void onlyThePublicPaddockApiIsUsed() {
        noClasses().that().resideInAPackage("io.paddock.mcp..")
                .should().dependOnClassesThat().resideInAnyPackage("io.paddock.engine..", "io.paddock.runtime..",
                        "io.paddock.init..", "io.paddock.client..", "io.paddock.server..", "io.paddock.cli..")
                .check(MAIN);
    }
}
