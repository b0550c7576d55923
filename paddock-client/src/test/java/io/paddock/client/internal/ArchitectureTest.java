package io.paddock.client.internal;

import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.domain.JavaModifier;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.classes;
import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;

/**
 * The client publishes nothing but its SPI providers, talks HTTP with the JDK only, and needs paddock-code
 * (an optional dependency) only in the classes of the remote code interpreter.
 */
class ArchitectureTest {
    private static JavaClasses client;

    @BeforeAll
    static void importClasses() {
        client = new ClassFileImporter().withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
                .importPackages("io.paddock.client");
    }

    @Test
    void onlyTheProvidersArePublic() {
        classes().that().resideInAPackage("io.paddock.client..").and().haveModifier(JavaModifier.PUBLIC)
                .should().haveFullyQualifiedName(RemotePaddockProvider.class.getName())
                .orShould().haveFullyQualifiedName(RemoteCodeProvider.class.getName())
                .check(client);
    }

    @Test
    void theCodeProviderExposesOnlyJdkAndPaddockTypes() {
        classes().that().haveFullyQualifiedName(RemoteCodeProvider.class.getName())
                .should().onlyDependOnClassesThat().resideInAnyPackage("java..", "io.paddock", "io.paddock.code",
                        "io.paddock.code.spi", "io.paddock.client.internal")
                .check(client);
    }

    @Test
    void onlyTheRemoteCodeClassesNeedPaddockCode() {
        noClasses().that().resideInAPackage("io.paddock.client..").and().haveSimpleNameNotStartingWith("RemoteCode")
                .and().doNotHaveFullyQualifiedName(RemoteShellSession.class.getName())
                .should().dependOnClassesThat().resideInAPackage("io.paddock.code..")
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
