package io.paddock.runtime.internal.oci;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonPropertyOrder;

import java.util.List;
import java.util.Map;

/**
 * The subset of the OCI runtime specification (config.json, version 1.0.2) that Paddock writes. Plain
 * immutable data: {@link OciSpecBuilder} computes it from a sandbox spec with no I/O, and a golden test
 * pins its JSON form.
 */
@JsonInclude(JsonInclude.Include.NON_NULL)
@JsonPropertyOrder({"ociVersion", "process", "root", "hostname", "mounts", "linux", "annotations"})
public record OciSpec(String ociVersion, Process process, Root root, String hostname, List<Mount> mounts, Linux linux,
                      Map<String, String> annotations) {

    /** A spec without annotations. */
    public OciSpec(String ociVersion, Process process, Root root, String hostname, List<Mount> mounts, Linux linux) {
        this(ociVersion, process, root, hostname, mounts, linux, null);
    }

    /** This spec with these annotations (none: {@code null} or empty, and the field is left out). */
    public OciSpec withAnnotations(Map<String, String> annotations) {
        return new OciSpec(ociVersion, process, root, hostname, mounts, linux,
                annotations == null || annotations.isEmpty() ? null
                        : java.util.Collections.unmodifiableMap(new java.util.TreeMap<>(annotations)));
    }

    /**
     * This spec with its seccomp filter installed by the init instead of the runtime: {@code linux.seccomp} left
     * out and {@code --seccomp-fd=<fd>} added to the init's arguments, the filter (compiled from the same
     * profile) being open as {@code fd} when the init starts. An init that cannot install it exits, and the
     * sandbox never starts.
     */
    public OciSpec withSeccompByInit(int fd) {
        if (linux.seccomp() == null) {
            throw new IllegalStateException("this spec has no seccomp filter to hand to the init");
        }
        List<String> args = new java.util.ArrayList<>(process.args());
        args.add("--seccomp-fd=" + fd);
        Process p = new Process(process.terminal(), process.user(), List.copyOf(args), process.env(), process.cwd(),
                process.capabilities(), process.rlimits(), process.noNewPrivileges());
        Linux l = new Linux(linux.uidMappings(), linux.gidMappings(), linux.resources(), linux.cgroupsPath(),
                linux.namespaces(), null, linux.maskedPaths(), linux.readonlyPaths());
        return new OciSpec(ociVersion, p, root, hostname, mounts, l, annotations);
    }

    @JsonInclude(JsonInclude.Include.NON_NULL)
    @JsonPropertyOrder({"terminal", "user", "args", "env", "cwd", "capabilities", "rlimits", "noNewPrivileges"})
    public record Process(boolean terminal, User user, List<String> args, List<String> env, String cwd,
                          Capabilities capabilities, List<Rlimit> rlimits, boolean noNewPrivileges) {
    }

    public record User(long uid, long gid) {
    }

    @JsonPropertyOrder({"bounding", "effective", "inheritable", "permitted", "ambient"})
    public record Capabilities(List<String> bounding, List<String> effective, List<String> inheritable,
                               List<String> permitted, List<String> ambient) {
        public static Capabilities only(List<String> caps) {
            return new Capabilities(caps, caps, List.of(), caps, List.of());
        }
    }

    @JsonPropertyOrder({"type", "hard", "soft"})
    public record Rlimit(String type, long hard, long soft) {
    }

    public record Root(String path, boolean readonly) {
    }

    @JsonInclude(JsonInclude.Include.NON_NULL)
    @JsonPropertyOrder({"destination", "type", "source", "options"})
    public record Mount(String destination, String type, String source, List<String> options) {
    }

    @JsonInclude(JsonInclude.Include.NON_NULL)
    @JsonPropertyOrder({"uidMappings", "gidMappings", "resources", "cgroupsPath", "namespaces", "seccomp",
            "maskedPaths", "readonlyPaths"})
    public record Linux(List<IdMapping> uidMappings, List<IdMapping> gidMappings, Resources resources,
                        String cgroupsPath, List<Namespace> namespaces, Seccomp seccomp, List<String> maskedPaths,
                        List<String> readonlyPaths) {
    }

    @JsonPropertyOrder({"containerID", "hostID", "size"})
    public record IdMapping(long containerID, long hostID, long size) {
    }

    /** A namespace the runtime creates ({@code path} null), or one it joins (the namespace file at {@code path}). */
    @JsonInclude(JsonInclude.Include.NON_NULL)
    public record Namespace(String type, String path) {
        public Namespace(String type) {
            this(type, null);
        }
    }

    @JsonInclude(JsonInclude.Include.NON_NULL)
    @JsonPropertyOrder({"devices", "memory", "cpu", "pids"})
    public record Resources(List<DeviceRule> devices, Memory memory, Cpu cpu, Pids pids) {
    }

    public record DeviceRule(boolean allow, String access) {
    }

    @JsonInclude(JsonInclude.Include.NON_NULL)
    public record Memory(Long limit, Long swap) {
    }

    @JsonInclude(JsonInclude.Include.NON_NULL)
    public record Cpu(Long quota, Long period) {
    }

    public record Pids(long limit) {
    }

    @JsonInclude(JsonInclude.Include.NON_NULL)
    @JsonPropertyOrder({"defaultAction", "defaultErrnoRet", "architectures", "syscalls"})
    public record Seccomp(String defaultAction, Integer defaultErrnoRet, List<String> architectures,
                          List<SyscallRule> syscalls) {
    }

    @JsonInclude(JsonInclude.Include.NON_NULL)
    @JsonPropertyOrder({"names", "action", "errnoRet", "args"})
    public record SyscallRule(List<String> names, String action, Integer errnoRet, List<SyscallArg> args) {
    }

    @JsonPropertyOrder({"index", "value", "valueTwo", "op"})
    public record SyscallArg(int index, long value, long valueTwo, String op) {
    }
}
