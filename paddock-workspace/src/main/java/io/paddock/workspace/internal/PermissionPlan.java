package io.paddock.workspace.internal;

import io.paddock.Permission;
import io.paddock.PermissionPreset;
import io.paddock.PermissionRule;

import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.SortedMap;
import java.util.TreeMap;

/**
 * A workspace's permission rules compiled against its tree: pure data, no I/O, computed before anything is
 * mounted. Immutable and thread-safe.
 *
 * <h2>Precedence</h2>
 * The rules are the preset's followed by the user's. For a path, among the rules whose pattern matches it, the
 * most specific wins:
 * <ol>
 *   <li>an exact path ({@code docs/README.md}: no {@code *}, {@code ?}, {@code **} or trailing {@code /}) beats
 *       every glob;</li>
 *   <li>then more literal segments ({@code secrets/**} beats {@code **}{@code /*.pem});</li>
 *   <li>then fewer {@code **} segments ({@code docs/*.md} beats {@code docs/**});</li>
 *   <li>then more literal characters outside {@code **} ({@code **}{@code /*.pem} beats {@code **});</li>
 *   <li>then the later rule: user rules come after the preset's, and within a list the order given.</li>
 * </ol>
 * No rule matching a path means {@link Permission#NONE}. Then one adjustment: a directory whose winning level
 * is {@code none} but that has a descendant of level {@code view} or more is raised to {@code view}, so the
 * path to that descendant exists; listing it shows only its visible children (rules naming something inside a
 * hidden directory expose that thing and the names of the directories above it, nothing else). Nothing is ever
 * raised above {@code view}, and no level is ever lowered: a {@code none} directory does not cap what is under
 * it, the most specific rule decides each path by itself.
 *
 * <h2>What a mount layer reads</h2>
 * <ul>
 *   <li>{@link #levelOf(String)}: the level of any path, in the tree or not (a file created later gets the
 *       level its path matches). A layer should let a process create, or rename onto, a path only if its parent
 *       directory is {@code write} and {@code levelOf(path)} is {@code write}, and answer EACCES otherwise;
 *       renaming changes a path's level, so a FUSE layer checks both names.</li>
 *   <li>{@link #directories()}: for each directory, its level, whether it is listable and writable, and the
 *       level of each child; a FUSE layer answers {@code readdir} from it (children of level {@code none}
 *       omitted) and {@code lookup} of a {@code none} child with ENOENT.</li>
 *   <li>{@link #spans()}: the compact form, the tree cut into the largest subtrees of one uniform level, each
 *       path in exactly one span. A bind-mount layer binds a {@code SUBTREE} span whole (read-only for
 *       {@code read}, read-write for {@code write}; {@code view} needs a layer that shows metadata without
 *       contents; {@code none} is not mounted), and makes a {@code SELF} span's directory itself (a mount point
 *       or a directory in a tmpfs) and descends. A span is {@code sealed} when every path that may ever be
 *       created under it gets the same level, so a writable bind mount needs no per-file check; a writable
 *       span that is not sealed needs a layer that checks {@link #levelOf} on each create.</li>
 * </ul>
 */
public final class PermissionPlan {
    /** Where a level came from: the rule that won, or none when no rule matched. */
    public record Decision(Permission level, Optional<PermissionRule> rule, String source, boolean raised) {
        @Override
        public String toString() {
            String by = rule.map(r -> r + " (" + source + ")").orElse("no rule");
            return raised ? by + ", raised to view: something under it is visible" : by;
        }
    }

    /** A directory as a mount layer lists it. {@code children} maps each child's name to its level. */
    public record Directory(String path, Permission level, SortedMap<String, Permission> children) {
        public boolean listable() {
            return level.atLeast(Permission.VIEW);
        }

        /** Whether entries may be created, renamed and deleted in it. */
        public boolean writable() {
            return level == Permission.WRITE;
        }

        /** The names a listing shows: the children of level {@code view} or more. */
        public List<String> visibleChildren() {
            List<String> out = new ArrayList<>();
            children.forEach((name, level) -> {
                if (level.atLeast(Permission.VIEW)) {
                    out.add(name);
                }
            });
            return out;
        }
    }

    public enum Scope {
        /** The path and everything under it. */
        SUBTREE,
        /** The directory itself only; its children have spans of their own. */
        SELF
    }

    /** A piece of the compact form: see the class comment. */
    public record Span(String path, Scope scope, Permission level, boolean sealed) {
    }

    private record Rule(PermissionRule rule, String source, Glob glob) {
    }

    private final List<Rule> rules;
    private final Tree tree;
    private final Map<String, Decision> decisions;

    private PermissionPlan(List<Rule> rules, Tree tree, Map<String, Decision> decisions) {
        this.rules = rules;
        this.tree = tree;
        this.decisions = decisions;
    }

    /** Compiles the preset's rules followed by the user's against a tree. */
    public static PermissionPlan compile(PermissionPreset preset, List<PermissionRule> userRules, Tree tree) {
        Objects.requireNonNull(preset, "preset");
        Objects.requireNonNull(tree, "tree");
        List<Rule> rules = new ArrayList<>();
        for (PermissionRule r : preset.rules()) {
            rules.add(new Rule(r, preset.label(), Glob.of(r.pattern())));
        }
        for (PermissionRule r : List.copyOf(userRules)) {
            rules.add(new Rule(r, "user", Glob.of(r.pattern())));
        }
        List<Rule> frozen = List.copyOf(rules);
        // Decide each path by its rules alone, then raise hidden directories above visible paths, deepest first.
        Map<String, Decision> decisions = new HashMap<>();
        decisions.put("", decide(frozen, ""));
        for (Tree.Entry e : tree.entries()) {
            decisions.put(e.path(), decide(frozen, e.path()));
        }
        List<Tree.Entry> deepestFirst = new ArrayList<>(tree.entries());
        Collections.reverse(deepestFirst);
        for (Tree.Entry e : deepestFirst) {
            if (decisions.get(e.path()).level().atLeast(Permission.VIEW)) {
                String parent = Paths.parent(e.path());
                Decision d = decisions.get(parent);
                if (d.level() == Permission.NONE) {
                    decisions.put(parent, new Decision(Permission.VIEW, d.rule(), d.source(), true));
                }
            }
        }
        return new PermissionPlan(frozen, tree, Map.copyOf(decisions));
    }

    private static Decision decide(List<Rule> rules, String path) {
        List<String> segs = Paths.segments(path);
        Rule best = null;
        for (Rule r : rules) {
            // '>=': among equally specific rules the later one wins
            if (r.glob().matches(segs) && (best == null || Glob.compareSpecificity(r.glob(), best.glob()) >= 0)) {
                best = r;
            }
        }
        return best == null
                ? new Decision(Permission.NONE, Optional.empty(), "", false)
                : new Decision(best.rule().level(), Optional.of(best.rule()), best.source(), false);
    }

    /** The tree the plan was compiled against. */
    public Tree tree() {
        return tree;
    }

    /**
     * The level of a path ({@code ""} is the root): its effective level if the tree has it, else the level of
     * the rule that wins for it, as for a file created later.
     */
    public Permission levelOf(String path) {
        return decision(path).level();
    }

    /** Why a path has its level. */
    public Decision decision(String path) {
        Paths.check(path);
        Decision d = decisions.get(path);
        return d != null ? d : decide(rules, path);
    }

    /** The effective level of the root ({@code ""}) and of every entry of the tree, in the tree's order. */
    public SortedMap<String, Permission> levels() {
        SortedMap<String, Permission> out = new TreeMap<>(Tree.ORDER);
        decisions.forEach((p, d) -> out.put(p, d.level()));
        return Collections.unmodifiableSortedMap(out);
    }

    /** Every directory, the root first, in the tree's order. */
    public List<Directory> directories() {
        Map<String, SortedMap<String, Permission>> children = new LinkedHashMap<>();
        children.put("", new TreeMap<>());
        for (Tree.Entry e : tree.entries()) {
            if (e.kind() == Tree.Kind.DIRECTORY) {
                children.put(e.path(), new TreeMap<>());
            }
            children.get(Paths.parent(e.path())).put(Paths.name(e.path()), levelOf(e.path()));
        }
        List<Directory> out = new ArrayList<>();
        children.forEach((dir, kids) -> out.add(new Directory(dir, levelOf(dir),
                Collections.unmodifiableSortedMap(kids))));
        return List.copyOf(out);
    }

    /** The compact form: the largest uniform subtrees, in the tree's order; each path is in exactly one span. */
    public List<Span> spans() {
        // A path's subtree is uniform when every path in it has the path's level; compute bottom-up.
        Map<String, Boolean> uniform = new HashMap<>();
        List<Tree.Entry> deepestFirst = new ArrayList<>(tree.entries());
        Collections.reverse(deepestFirst);
        for (Tree.Entry e : deepestFirst) {
            uniform.putIfAbsent(e.path(), true);
            String parent = Paths.parent(e.path());
            boolean same = uniform.get(e.path()) && levelOf(e.path()) == levelOf(parent);
            uniform.merge(parent, same, Boolean::logicalAnd);
        }
        uniform.putIfAbsent("", true);
        Map<String, List<String>> children = new HashMap<>();
        for (Tree.Entry e : tree.entries()) {
            children.computeIfAbsent(Paths.parent(e.path()), k -> new ArrayList<>()).add(e.path());
        }
        List<Span> out = new ArrayList<>();
        addSpans("", uniform, children, out);
        return List.copyOf(out);
    }

    private void addSpans(String path, Map<String, Boolean> uniform, Map<String, List<String>> children,
            List<Span> out) {
        Permission level = levelOf(path);
        if (uniform.get(path)) {
            out.add(new Span(path, Scope.SUBTREE, level, !tree.isDirectory(path) || sealed(path, level)));
            return;
        }
        out.add(new Span(path, Scope.SELF, level, false));
        for (String child : children.getOrDefault(path, List.of())) {
            addSpans(child, uniform, children, out);
        }
    }

    /**
     * Whether every path that may appear under the directory gets {@code level}: some rule of that level matches
     * the directory and all below it, and outranks (is more specific than, or as specific and later than) every
     * rule of another level that could match something below.
     */
    private boolean sealed(String dir, Permission level) {
        List<String> segs = Paths.segments(dir);
        for (int c = 0; c < rules.size(); c++) {
            Rule cover = rules.get(c);
            if (cover.rule().level() != level || !cover.glob().matchesAllBelow(segs)) {
                continue;
            }
            boolean outranksAll = true;
            for (int r = 0; r < rules.size() && outranksAll; r++) {
                Rule other = rules.get(r);
                if (other.rule().level() != level && other.glob().mayMatchBelow(segs)) {
                    int spec = Glob.compareSpecificity(cover.glob(), other.glob());
                    outranksAll = spec > 0 || (spec == 0 && c > r);
                }
            }
            if (outranksAll) {
                return true;
            }
        }
        return false;
    }

    /**
     * The plan as text, for golden files and for a person: the rules, each path's level and what decided it,
     * the directories with their children, and the spans.
     */
    public String render() {
        StringBuilder b = new StringBuilder("rules (later wins a tie):\n");
        for (Rule r : rules) {
            b.append("  ").append(r.rule()).append("  (").append(r.source()).append(")\n");
        }
        b.append("paths:\n");
        int width = 4;
        for (String p : levels().keySet()) {
            width = Math.max(width, show(p).length());
        }
        for (String p : levels().keySet()) {
            Decision d = decision(p);
            b.append("  ").append(pad(show(p), width)).append("  ").append(pad(d.level().label(), 5))
                    .append("  ").append(d).append('\n');
        }
        b.append("directories:\n");
        for (Directory d : directories()) {
            b.append("  ").append(show(d.path())).append("  ").append(d.level().label())
                    .append(d.listable() ? " listable" : "").append(d.writable() ? " writable" : "").append(':');
            d.children().forEach((name, level) -> b.append(' ').append(name).append('=').append(level.label()));
            b.append('\n');
        }
        b.append("spans:\n");
        for (Span s : spans()) {
            b.append("  ").append(pad(s.scope().name().toLowerCase(java.util.Locale.ROOT), 7)).append("  ")
                    .append(pad(show(s.path()), width)).append("  ")
                    .append(s.sealed() ? pad(s.level().label(), 5) + "  sealed" : s.level().label()).append('\n');
        }
        return b.toString();
    }

    private String show(String path) {
        if (path.isEmpty()) {
            return "./";
        }
        return tree.isDirectory(path) ? path + "/" : path;
    }

    private static String pad(String s, int width) {
        return s.length() >= width ? s : s + " ".repeat(width - s.length());
    }
}
