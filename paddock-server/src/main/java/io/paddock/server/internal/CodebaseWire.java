package io.paddock.server.internal;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.paddock.ByteSize;
import io.paddock.CodebaseChange;
import io.paddock.CodebaseInfo;
import io.paddock.CodebaseOptions;
import io.paddock.SandboxException;
import io.paddock.wire.Wire;
import org.eclipse.jetty.util.Fields;

import java.util.List;
import java.util.Locale;

/** The JSON of codebases: their records, a sandbox's changes, and an upload's options (its query). */
final class CodebaseWire {
    private CodebaseWire() {
    }

    /** {@code ?ignore=PATTERN&ignore=…&max_file_size=50m}. */
    static CodebaseOptions options(Fields query) {
        Fields.Field ignore = query.get("ignore");
        Fields.Field max = query.get("max_file_size");
        List<String> patterns = ignore == null ? List.of() : ignore.getValues();
        ByteSize size = CodebaseOptions.DEFAULT.maxFileSize();
        if (max != null) {
            if (max.getValues().size() != 1) {
                throw SandboxException.invalid("max_file_size", "give it once");
            }
            size = ByteSize.parse(max.getValue());
        }
        return new CodebaseOptions(patterns, size);
    }

    static ObjectNode json(String name, CodebaseInfo info) {
        ObjectNode o = Wire.object().put("name", name).put("revision", info.revision()).put("files", info.files())
                .put("bytes", info.bytes()).put("updated", info.updated().toString());
        if (!info.skipped().isEmpty()) {
            ArrayNode skipped = o.putArray("skipped");
            info.skipped().forEach(s -> skipped.addObject().put("path", s.path()).put("reason", s.reason()));
        }
        return o;
    }

    static ObjectNode json(List<CodebaseChange> changes) {
        ObjectNode o = Wire.object();
        ArrayNode all = o.putArray("changes");
        changes.forEach(c -> all.addObject().put("path", c.path()).put("kind", c.kind().name().toLowerCase(Locale.ROOT))
                .put("writable", c.writable()));
        return o;
    }
}
