package io.paddock.code;

import io.paddock.ImageStep;
import org.junit.jupiter.api.Test;

import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The code images' names and recipes, from the language table's {@code debian} column. */
class CodeImagesTest {
    @Test
    void aLanguagesLeanImageHasItsRowsPackagesAndTheCommonOnes() {
        CodeImages.Named python = CodeImages.forLanguage(Languages.defaults().get("py"));
        assertThat(python.name()).isEqualTo("paddock/code-python:bookworm-1");
        assertThat(python.recipe().base()).isEqualTo("debian:bookworm");
        assertThat(python.recipe().steps()).filteredOn(ImageStep.Apt.class::isInstance).singleElement().isInstanceOfSatisfying(ImageStep.Apt.class, apt ->
                assertThat(apt.packages()).containsExactly("python3", "python3-numpy", "python3-pandas",
                        "python3-matplotlib", "python3-pip", "fonts-dejavu-core", "ca-certificates", "procps"));
        CodeImages.Named bash = CodeImages.forLanguage(Languages.defaults().get("bash"));
        assertThat(bash.recipe().steps()).filteredOn(ImageStep.Apt.class::isInstance).singleElement().isInstanceOfSatisfying(ImageStep.Apt.class, apt ->
                assertThat(apt.packages()).containsExactlyElementsOf(CodeImages.COMMON));
        assertThat(python.description()).contains("python3-matplotlib");
    }

    @Test
    void theFullImageHasEveryLanguagesPackagesAndNothingElse() {
        Set<String> union = new LinkedHashSet<>();
        for (String name : List.of("python", "javascript", "bash", "java", "c", "cpp", "perl", "go", "ruby", "r")) {
            union.addAll(Languages.defaults().get(name).debian());
        }
        union.addAll(CodeImages.COMMON);
        assertThat(union).containsExactlyInAnyOrderElementsOf(CodeImages.FULL_PACKAGES);
        assertThat(CodeImages.full().steps()).filteredOn(ImageStep.Apt.class::isInstance).singleElement().isInstanceOfSatisfying(ImageStep.Apt.class, apt ->
                assertThat(apt.packages()).isEqualTo(CodeImages.FULL_PACKAGES));
    }

    @Test
    void aRowsDebianPackagesMustBePackageNames() {
        assertThatThrownBy(() -> Languages.fromJson(new java.io.ByteArrayInputStream(("{\"languages\":[{\"name\":\"x\","
                + "\"sourceFile\":\"m.x\",\"run\":[\"x\"],\"debian\":[\"gcc; rm -rf /\"]}]}").getBytes())))
                .hasMessageContaining("is not a Debian package name");
    }
}
