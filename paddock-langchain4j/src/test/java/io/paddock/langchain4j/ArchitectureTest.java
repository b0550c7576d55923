package io.paddock.langchain4j;

import com.tngtech.archunit.core.domain.JavaClass;
import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.domain.JavaCodeUnit;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import com.tngtech.archunit.lang.ArchCondition;
import com.tngtech.archunit.lang.ConditionEvents;
import com.tngtech.archunit.lang.SimpleConditionEvent;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.codeUnits;
import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;

/**
 * The adapter builds on the public Paddock and paddock-code APIs alone (so it works over an embedded engine and
 * a remote daemon alike), and its public methods take and return JDK and Paddock types only: LangChain4j's types
 * appear as the interface it implements and the annotations it carries, never in a signature.
 */
class ArchitectureTest {
    private static JavaClasses main;

    @BeforeAll
    static void importClasses() {
        main = new ClassFileImporter().withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
                .importPackages("io.paddock.langchain4j");
    }

    private static boolean apiType(JavaClass c) {
        JavaClass base = c.isArray() ? c.getBaseComponentType() : c;
        String p = base.getPackageName();
        return base.isPrimitive() || p.startsWith("java.") || p.equals("io.paddock") || p.equals("io.paddock.code")
                || p.equals("io.paddock.langchain4j");
    }

    @Test
    void publicSignaturesUseOnlyJdkAndPaddockTypes() {
        codeUnits().that().arePublic().and().areDeclaredInClassesThat().resideInAPackage("io.paddock.langchain4j")
                .should(new ArchCondition<>("take and return only JDK or Paddock types") {
                    @Override
                    public void check(JavaCodeUnit m, ConditionEvents events) {
                        if (!apiType(m.getRawReturnType())) {
                            events.add(SimpleConditionEvent.violated(m, m.getFullName() + " returns " + m.getRawReturnType().getName()));
                        }
                        for (JavaClass p : m.getRawParameterTypes()) {
                            if (!apiType(p)) {
                                events.add(SimpleConditionEvent.violated(m, m.getFullName() + " takes " + p.getName()));
                            }
                        }
                    }
                })
                .check(main);
    }

    @Test
    void onlyThePublicApisAreUsed() {
        noClasses().that().resideInAPackage("io.paddock.langchain4j..")
                .should().dependOnClassesThat().resideInAnyPackage("io.paddock.engine..", "io.paddock.runtime..",
                        "io.paddock.init..", "io.paddock.client..", "io.paddock.server..", "io.paddock.cli..",
                        "io.paddock.wire..", "io.paddock.internal..", "io.paddock.code.internal..", "com.fasterxml..")
                .check(main);
    }
}
