package io.paddock.client.internal;

import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.domain.JavaModifier;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.classes;
import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;

/** The client publishes nothing but its SPI provider, and talks HTTP with the JDK only. */
class ArchitectureTest {
    private static JavaClasses client;

    @BeforeAll
    static void importClasses() {
        client = new ClassFileImporter().withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
                .importPackages("io.paddock.client");
    }

    @Test
    void onlyTheProviderIsPublic() {
        classes().that().resideInAPackage("io.paddock.client..").and().haveModifier(JavaModifier.PUBLIC)
                .should().haveFullyQualifiedName(RemotePaddockProvider.class.getName())
                .check(client);
    }

    @Test
    void theProviderExposesOnlyJdkAndPaddockTypes() {
        classes().that().haveFullyQualifiedName(RemotePaddockProvider.class.getName())
                .should().onlyDependOnClassesThat().resideInAnyPackage("java..", "io.paddock", "io.paddock.spi",
                        "io.paddock.client.internal")
                .check(client);
    }

    @Test
    void noServerEngineOrThirdPartyHttpLibrary() {
        noClasses().that().resideInAPackage("io.paddock.client..")
                .should().dependOnClassesThat().resideInAnyPackage("io.paddock.server..", "io.paddock.engine..",
                        "io.paddock.init..", "io.paddock.runtime..", "org.eclipse..", "okhttp3..", "org.apache.http..")
                .check(client);
    }
}
