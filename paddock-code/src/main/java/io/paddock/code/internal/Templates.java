package io.paddock.code.internal;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** Expands the language table's argv and env templates. {@code {packages}} alone expands to several arguments. */
final class Templates {
    static final String PACKAGES = "{packages}";

    private Templates() {
    }

    static List<String> argv(List<String> template, Map<String, String> vars, List<String> packages) {
        List<String> out = new ArrayList<>(template.size() + packages.size());
        for (String t : template) {
            if (t.equals(PACKAGES)) {
                out.addAll(packages);
            } else {
                out.add(expand(t, vars));
            }
        }
        return out;
    }

    static Map<String, String> env(Map<String, String> template, Map<String, String> vars) {
        Map<String, String> out = new LinkedHashMap<>();
        template.forEach((k, v) -> out.put(k, expand(v, vars)));
        return out;
    }

    static String expand(String t, Map<String, String> vars) {
        if (t.indexOf('{') < 0) {
            return t;
        }
        String s = t;
        for (Map.Entry<String, String> e : vars.entrySet()) {
            s = s.replace("{" + e.getKey() + "}", e.getValue());
        }
        return s;
    }

    /** The command a template runs, when it is a plain command (not a path built from a placeholder). */
    static String command(List<String> template) {
        if (template.isEmpty()) {
            return null;
        }
        String c = template.get(0);
        return c.indexOf('{') >= 0 ? null : c;
    }
}
