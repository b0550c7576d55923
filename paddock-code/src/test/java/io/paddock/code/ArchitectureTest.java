package io.paddock.code;

import com.tngtech.archunit.base.DescribedPredicate;
import com.tngtech.archunit.core.domain.JavaClass;
import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.codeUnits;
import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.methods;
import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;

/**
 * The code layer's public API is JDK and Paddock types only, and the module builds on the public Sandbox
 * API alone (so it works over an embedded engine and a remote daemon alike).
 */
class ArchitectureTest {
    private static JavaClasses main;

    @BeforeAll
    static void importClasses() {
        main = new ClassFileImporter().withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
                .importPackages("io.paddock.code");
    }

    private static final DescribedPredicate<JavaClass> API_TYPES = new DescribedPredicate<>("JDK or Paddock API types") {
        @Override
        public boolean test(JavaClass c) {
            JavaClass base = c.isArray() ? c.getBaseComponentType() : c;
            String p = base.getPackageName();
            return base.isPrimitive() || p.startsWith("java.") || p.equals("io.paddock") || p.equals("io.paddock.code")
                    || p.equals("io.paddock.code.spi");
        }
    };

    @Test
    void publicSignaturesUseOnlyJdkAndOwnTypes() {
        methods().that().arePublic().and().areDeclaredInClassesThat().resideInAnyPackage("io.paddock.code", "io.paddock.code.spi")
                .should().haveRawReturnType(API_TYPES)
                .check(main);
        codeUnits().that().arePublic().and().areDeclaredInClassesThat().resideInAnyPackage("io.paddock.code", "io.paddock.code.spi")
                .should(new com.tngtech.archunit.lang.ArchCondition<>("take only JDK or Paddock API types") {
                    @Override
                    public void check(com.tngtech.archunit.core.domain.JavaCodeUnit m, com.tngtech.archunit.lang.ConditionEvents events) {
                        for (JavaClass p : m.getRawParameterTypes()) {
                            if (!API_TYPES.test(p)) {
                                events.add(com.tngtech.archunit.lang.SimpleConditionEvent.violated(m, m.getFullName() + " takes " + p.getName()));
                            }
                        }
                    }
                })
                .check(main);
    }

    @Test
    void thePublicPackagesDoNotUseJacksonDirectly() {
        noClasses().that().resideInAnyPackage("io.paddock.code", "io.paddock.code.spi")
                .should().dependOnClassesThat().resideInAPackage("com.fasterxml..")
                .check(main);
    }

    @Test
    void onlyThePublicSandboxApiIsUsed() {
        noClasses().that().resideInAPackage("io.paddock.code..")
                .should().dependOnClassesThat().resideInAnyPackage("io.paddock.engine..", "io.paddock.runtime..",
                        "io.paddock.init..", "io.paddock.client..", "io.paddock.server..",
                        "io.paddock.cli..", "io.paddock.internal..")
                .check(main);
    }

    /** The JSON forms shared with the daemon and the remote client are the one use of paddock-wire. */
    @Test
    void onlyCodeWireUsesTheWireFormat() {
        noClasses().that().resideInAPackage("io.paddock.code..")
                .and().doNotHaveFullyQualifiedName(io.paddock.code.internal.CodeWire.class.getName())
                .should().dependOnClassesThat().resideInAnyPackage("io.paddock.wire..")
                .check(main);
    }
}
