package io.paddock.code;

import java.util.Map;
import java.util.Objects;
import java.util.Optional;

/**
 * A value shown the way a notebook shows it: the value of a cell's last expression (or of
 * {@code display(x)}), in one or more representations keyed by MIME type. {@code text/plain} is always
 * there; {@code text/html} when the value has {@code _repr_html_} (a pandas DataFrame, for example);
 * {@code application/json} (JSON text) when the value is JSON-able. Binary representations
 * ({@code image/png}) are base64 text.
 *
 * @param data          MIME type → representation
 * @param fromLastExpression true for a cell's last expression, false for an explicit {@code display(x)}
 */
public record RichOutput(Map<String, String> data, boolean fromLastExpression) {
    public static final String TEXT = "text/plain";
    public static final String HTML = "text/html";
    public static final String JSON = "application/json";

    public RichOutput {
        data = Map.copyOf(Objects.requireNonNull(data, "data"));
    }

    public Optional<String> get(String mimeType) {
        return Optional.ofNullable(data.get(mimeType));
    }

    public String text() {
        return data.getOrDefault(TEXT, "");
    }

    public Optional<String> html() {
        return get(HTML);
    }

    public Optional<String> json() {
        return get(JSON);
    }
}
