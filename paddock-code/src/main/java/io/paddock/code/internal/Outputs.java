package io.paddock.code.internal;

import com.fasterxml.jackson.databind.JsonNode;
import io.paddock.SandboxFiles;
import io.paddock.code.Artifact;
import io.paddock.code.CellError;
import io.paddock.code.CodeListener;
import io.paddock.code.Plot;
import io.paddock.code.PlotFormat;
import io.paddock.code.RichOutput;

import java.util.ArrayList;
import java.util.Base64;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * Turns the helpers' JSON messages (rich output, plots, errors, artifact listings) into result types. All
 * of it comes from inside the sandbox, so everything is checked and bounded: the code could have written
 * anything.
 */
final class Outputs {
    static final int MAX_RESULTS = 100;
    static final int MAX_PLOTS = 50;
    static final int MAX_ARTIFACTS = 1000;
    static final int MAX_REPR = 1 << 20;

    final List<RichOutput> results = new ArrayList<>();
    final List<Plot> plots = new ArrayList<>();
    CellError error;
    private final CodeListener listener;

    Outputs(CodeListener listener) {
        this.listener = listener;
    }

    /** Handles a "result", "display" or "error" message; false for any other type. */
    boolean accept(JsonNode msg) {
        String type = Json.text(msg, "type", "");
        switch (type) {
            case "result", "display" -> {
                Map<String, String> data = data(msg.get("data"));
                Plot plot = plot(data, msg.path("metadata"));
                if (plot != null) {
                    if (plots.size() < MAX_PLOTS) {
                        plots.add(plot);
                        listener.onPlot(plot);
                    }
                } else if (!data.isEmpty() && results.size() < MAX_RESULTS) {
                    RichOutput out = new RichOutput(data, type.equals("result"));
                    results.add(out);
                    listener.onResult(out);
                }
                return true;
            }
            case "error" -> {
                error = error(msg);
                return true;
            }
            default -> {
                return false;
            }
        }
    }

    static CellError error(JsonNode e) {
        return new CellError(cap(Json.text(e, "ename", "Error"), 200), cap(Json.text(e, "evalue", ""), MAX_REPR),
                cap(Json.text(e, "traceback", ""), MAX_REPR));
    }

    private static Map<String, String> data(JsonNode node) {
        Map<String, String> out = new LinkedHashMap<>();
        if (node == null || !node.isObject()) {
            return out;
        }
        for (Iterator<Map.Entry<String, JsonNode>> it = node.fields(); it.hasNext() && out.size() < 16; ) {
            Map.Entry<String, JsonNode> e = it.next();
            if (e.getValue().isTextual() && e.getKey().length() < 100) {
                String v = e.getValue().asText();
                if (v.length() <= (e.getKey().startsWith("image/") ? 24 << 20 : MAX_REPR)) {
                    out.put(e.getKey(), v);
                }
            }
        }
        return out;
    }

    /** A plot when the data is only an image (a figure), null otherwise. */
    private static Plot plot(Map<String, String> data, JsonNode meta) {
        if (data.size() != 1) {
            return null;
        }
        double dpi = meta.path("dpi").asDouble(0);
        int w = meta.path("width").asInt(0);
        int h = meta.path("height").asInt(0);
        String png = data.get(PlotFormat.PNG.mimeType());
        if (png != null) {
            byte[] bytes;
            try {
                bytes = Base64.getDecoder().decode(png);
            } catch (IllegalArgumentException e) {
                return null;
            }
            int[] size = Png.size(bytes);
            if (size == null) {
                return null;
            }
            return new Plot(PlotFormat.PNG, bytes, size[0], size[1], dpi);
        }
        String svg = data.get(PlotFormat.SVG.mimeType());
        if (svg != null && !meta.isMissingNode()) {
            return new Plot(PlotFormat.SVG, svg.getBytes(java.nio.charset.StandardCharsets.UTF_8), w, h, dpi);
        }
        return null;
    }

    /**
     * Artifacts from a listing of (relative path, size) under {@code dir}; bytes read when asked. Entries
     * that are not plain relative paths are skipped.
     */
    static List<Artifact> artifacts(SandboxFiles files, String dir, List<Map.Entry<String, Long>> listing,
                                    boolean content) {
        List<Artifact> out = new ArrayList<>();
        for (Map.Entry<String, Long> e : listing) {
            String rel = e.getKey();
            if (out.size() >= MAX_ARTIFACTS || rel.isEmpty() || rel.startsWith("/") || rel.contains("\0")
                    || ("/" + rel + "/").contains("/../") || ("/" + rel + "/").contains("/./")) {
                continue;
            }
            String path = dir + "/" + rel;
            Optional<byte[]> bytes = Optional.empty();
            if (content) {
                try {
                    bytes = Optional.of(files.read(path));
                } catch (io.paddock.SandboxException ex) {
                    // gone or too large: reported without content; its path still says where it was
                }
            }
            long size = bytes.map(b -> (long) b.length).orElse(Math.max(0, e.getValue()));
            out.add(new Artifact(rel, path, Mime.of(rel), size, bytes));
        }
        return out;
    }

    static List<Map.Entry<String, Long>> listing(JsonNode array) {
        List<Map.Entry<String, Long>> out = new ArrayList<>();
        if (array != null && array.isArray()) {
            for (JsonNode a : array) {
                String p = Json.text(a, "path", null);
                if (p != null && out.size() < MAX_ARTIFACTS) {
                    out.add(Map.entry(p, a.path("size").asLong(0)));
                }
            }
        }
        return out;
    }

    static String cap(String s, int max) {
        return s.length() <= max ? s : s.substring(0, max) + "…";
    }
}
