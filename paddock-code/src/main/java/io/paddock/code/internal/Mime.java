package io.paddock.code.internal;

import java.util.Locale;
import java.util.Map;

/** MIME types of artifact files, by extension. */
final class Mime {
    static final String OCTET = "application/octet-stream";
    private static final Map<String, String> BY_EXT = Map.ofEntries(
            Map.entry("png", "image/png"), Map.entry("jpg", "image/jpeg"), Map.entry("jpeg", "image/jpeg"),
            Map.entry("gif", "image/gif"), Map.entry("webp", "image/webp"), Map.entry("bmp", "image/bmp"),
            Map.entry("svg", "image/svg+xml"), Map.entry("ico", "image/x-icon"), Map.entry("tif", "image/tiff"),
            Map.entry("tiff", "image/tiff"), Map.entry("pdf", "application/pdf"), Map.entry("eps", "application/postscript"),
            Map.entry("ps", "application/postscript"),
            Map.entry("csv", "text/csv"), Map.entry("tsv", "text/tab-separated-values"), Map.entry("txt", "text/plain"),
            Map.entry("log", "text/plain"), Map.entry("md", "text/markdown"), Map.entry("html", "text/html"),
            Map.entry("htm", "text/html"), Map.entry("css", "text/css"), Map.entry("js", "text/javascript"),
            Map.entry("mjs", "text/javascript"), Map.entry("json", "application/json"),
            Map.entry("jsonl", "application/jsonl"), Map.entry("ndjson", "application/x-ndjson"),
            Map.entry("xml", "application/xml"), Map.entry("yaml", "application/yaml"), Map.entry("yml", "application/yaml"),
            Map.entry("toml", "application/toml"), Map.entry("ipynb", "application/x-ipynb+json"),
            Map.entry("py", "text/x-python"), Map.entry("java", "text/x-java"), Map.entry("c", "text/x-c"),
            Map.entry("h", "text/x-c"), Map.entry("cpp", "text/x-c++"), Map.entry("sh", "application/x-sh"),
            Map.entry("zip", "application/zip"), Map.entry("gz", "application/gzip"), Map.entry("tgz", "application/gzip"),
            Map.entry("tar", "application/x-tar"), Map.entry("bz2", "application/x-bzip2"), Map.entry("xz", "application/x-xz"),
            Map.entry("whl", "application/zip"), Map.entry("jar", "application/java-archive"),
            Map.entry("parquet", "application/vnd.apache.parquet"), Map.entry("npy", "application/x-npy"),
            Map.entry("npz", "application/zip"), Map.entry("pkl", "application/x-python-pickle"),
            Map.entry("xlsx", "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"),
            Map.entry("docx", "application/vnd.openxmlformats-officedocument.wordprocessingml.document"),
            Map.entry("pptx", "application/vnd.openxmlformats-officedocument.presentationml.presentation"),
            Map.entry("wav", "audio/wav"), Map.entry("mp3", "audio/mpeg"), Map.entry("ogg", "audio/ogg"),
            Map.entry("mp4", "video/mp4"), Map.entry("webm", "video/webm"), Map.entry("gif89", "image/gif"),
            Map.entry("sqlite", "application/vnd.sqlite3"), Map.entry("db", "application/vnd.sqlite3"));

    private Mime() {
    }

    static String of(String name) {
        int slash = name.lastIndexOf('/');
        String base = name.substring(slash + 1);
        int dot = base.lastIndexOf('.');
        if (dot <= 0 || dot == base.length() - 1) {
            return OCTET;
        }
        return BY_EXT.getOrDefault(base.substring(dot + 1).toLowerCase(Locale.ROOT), OCTET);
    }
}
