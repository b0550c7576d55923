package io.paddock.engine;

import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.classes;
import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;

/**
 * The rules of docs/CONTRIBUTING.md ("Public and internal", "The fence", "Layers") that a compiler does not
 * check: the public API is JDK-only, and privileged host operations live in one fenced package.
 */
class ArchitectureTest {
    private static JavaClasses main;

    @BeforeAll
    static void importClasses() {
        main = new ClassFileImporter().withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
                .importPackages("io.paddock");
    }

    @Test
    void publicApiUsesOnlyJdkAndOwnTypes() {
        classes().that().resideInAnyPackage("io.paddock", "io.paddock.spi")
                .should().onlyDependOnClassesThat().resideInAnyPackage("java..", "io.paddock", "io.paddock.spi",
                        "io.paddock.internal")
                .check(main);
    }

    @Test
    void onlyTheHostPackageSpawnsProcessesOrSignalsHostPids() {
        // The testkit drives tests (it starts a registry, for one) and never ships in Paddock itself.
        noClasses().that().resideOutsideOfPackages("io.paddock.runtime.internal.host..", "io.paddock.testkit..")
                .should().callConstructor(ProcessBuilder.class, String[].class)
                .orShould().callConstructor(ProcessBuilder.class, java.util.List.class)
                .orShould().callMethod(Runtime.class, "exec", String.class)
                .orShould().callMethod(Runtime.class, "exec", String[].class)
                .orShould().callMethod(ProcessHandle.class, "destroyForcibly")
                .orShould().callMethod(ProcessHandle.class, "destroy")
                .check(main);
    }

    @Test
    void enginesAndRuntimesDoNotDependOnTheCli() {
        noClasses().that().resideInAnyPackage("io.paddock.engine..", "io.paddock.runtime..", "io.paddock.init..")
                .should().dependOnClassesThat().resideInAPackage("io.paddock.cli..")
                .check(main);
    }

    @Test
    void runtimeDoesNotDependOnTheEngine() {
        noClasses().that().resideInAPackage("io.paddock.runtime..")
                .should().dependOnClassesThat().resideInAPackage("io.paddock.engine..")
                .check(main);
    }
}
