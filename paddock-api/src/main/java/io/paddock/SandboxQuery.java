package io.paddock;

import io.paddock.internal.Validate;

import java.util.Collections;
import java.util.EnumSet;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * A filter for {@link Paddock#list(SandboxQuery)}: every given label must match exactly, the state must be
 * one of the given states (any when none are given), and the name must match when given.
 */
public final class SandboxQuery {
    private static final SandboxQuery ALL = builder().build();

    private final Map<String, String> labels;
    private final Set<SandboxState> states;
    private final String name;

    private SandboxQuery(Builder b) {
        this.labels = Collections.unmodifiableMap(new LinkedHashMap<>(b.labels));
        this.states = b.states.isEmpty() ? Set.of() : Collections.unmodifiableSet(EnumSet.copyOf(b.states));
        this.name = b.name;
    }

    public static SandboxQuery all() {
        return ALL;
    }

    public static Builder builder() {
        return new Builder();
    }

    public Map<String, String> labels() {
        return labels;
    }

    public Set<SandboxState> states() {
        return states;
    }

    public Optional<String> name() {
        return Optional.ofNullable(name);
    }

    public boolean matches(SandboxInfo info) {
        if (!states.isEmpty() && !states.contains(info.state())) {
            return false;
        }
        if (name != null && !info.name().map(name::equals).orElse(false)) {
            return false;
        }
        for (Map.Entry<String, String> e : labels.entrySet()) {
            if (!e.getValue().equals(info.labels().get(e.getKey()))) {
                return false;
            }
        }
        return true;
    }

    @Override
    public String toString() {
        return "SandboxQuery{labels=" + labels + ", states=" + states + ", name=" + name + "}";
    }

    public static final class Builder {
        private final Map<String, String> labels = new LinkedHashMap<>();
        private final Set<SandboxState> states = EnumSet.noneOf(SandboxState.class);
        private String name;

        private Builder() {
        }

        public Builder label(String key, String value) {
            Validate.label("labels", key, value);
            labels.put(key, value);
            return this;
        }

        public Builder labels(Map<String, String> all) {
            all.forEach(this::label);
            return this;
        }

        public Builder state(SandboxState... states) {
            this.states.addAll(Set.of(states));
            return this;
        }

        public Builder name(String name) {
            this.name = Validate.name("name", name);
            return this;
        }

        public SandboxQuery build() {
            return new SandboxQuery(this);
        }
    }
}
