package io.paddock.testkit;

import io.paddock.ExecRequest;
import io.paddock.ExecResult;
import io.paddock.Sandbox;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;

/**
 * What a tenant process sees of its own confinement, collected inside a sandbox and written as normalized
 * text (no ids, inode numbers or pids), so that one golden file per tier pins the whole posture: a change
 * to capabilities, seccomp, id maps, namespaces, mounts, descriptors, environment, devices or masked paths
 * shows up as a diff in review. Golden files: {@code src/main/resources/golden/posture-<tier>.txt} of this
 * module; regenerate with {@code -Dpaddock.golden.update=true}.
 */
public final class PostureProbe {
    /** The probe: Python, run as the tenant, printing {@code section: value} lines. */
    static final String SCRIPT = """
            import os, re, sys, ctypes, threading, stat
            libc = ctypes.CDLL(None, use_errno=True)
            out = []
            def p(section, value):
                out.append("%s: %s" % (section, value))
            p("ids", "uid=%d gid=%d groups=%s" % (os.getuid(), os.getgid(), sorted(os.getgroups())))
            st = dict(l.split(":", 1) for l in open("/proc/self/status") if ":" in l)
            for k in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"):
                p("cap " + k, st[k].strip() if k in st else "absent")
            p("proc status NoNewPrivs", st["NoNewPrivs"].strip() if "NoNewPrivs" in st else "absent")
            p("proc status Seccomp", st["Seccomp"].strip() if "Seccomp" in st else "absent")
            modes = set()
            def probe():
                modes.add((libc.prctl(21, 0, 0, 0, 0), libc.prctl(39, 0, 0, 0, 0)))
            ts = [threading.Thread(target=probe) for _ in range(3)]
            [t.start() for t in ts]
            [t.join() for t in ts]
            probe()
            p("threads seccomp-mode,no_new_privs", sorted(modes))
            for f in ("uid_map", "gid_map"):
                # the host id is the sandbox's leased range (varies per sandbox): BASE unless it is 0
                p(f, " | ".join(" ".join(x if i != 1 or x == "0" else "BASE" for i, x in enumerate(l.split()))
                                 for l in open("/proc/self/" + f)))
            p("namespaces", " ".join(sorted(n for n in os.listdir("/proc/self/ns"))))
            mounts = []
            for l in open("/proc/self/mountinfo"):
                f = l.split()
                sep = f.index("-")
                opts = set(f[5].split(","))
                mounts.append("%s %s %s" % (f[4], f[sep + 1], "ro" if "ro" in opts else "rw"))
            for m in sorted(mounts):
                p("mount", m)
            for fd in sorted(int(x) for x in os.listdir("/proc/self/fd")):
                try:
                    t = os.readlink("/proc/self/fd/%d" % fd)
                except OSError:
                    continue
                t = re.sub(r"\\[\\d+\\]", "", t)
                t = re.sub(r"^/proc/\\d+/", "/proc/PID/", t)
                p("fd %d" % fd, t)
            p("env", " ".join(sorted(os.environ)))
            for name in sorted(os.listdir("/dev")):
                path = "/dev/" + name
                m = os.lstat(path).st_mode
                kind = "link" if stat.S_ISLNK(m) else "dir" if stat.S_ISDIR(m) else "chr" if stat.S_ISCHR(m) \\
                    else "blk" if stat.S_ISBLK(m) else "file"
                p("dev", "%s %s" % (name, kind))
            for path in ("/proc/kcore", "/proc/keys", "/proc/kallsyms", "/proc/timer_list", "/proc/sched_debug",
                         "/proc/interrupts", "/proc/acpi", "/proc/scsi", "/sys/firmware", "/sys/kernel/debug",
                         "/sys/kernel/security", "/proc/sysrq-trigger", "/proc/sys/kernel/core_pattern"):
                if not os.path.lexists(path):
                    p("masked " + path, "absent")
                    continue
                try:
                    if os.path.isdir(path):
                        n = len(os.listdir(path))
                        p("masked " + path, "dir, %s" % ("empty" if n == 0 else "ENTRIES"))
                    else:
                        with open(path, "rb") as fh:
                            data = fh.read(4096)
                        p("masked " + path, "readable, %s" % ("empty" if not data else "CONTENT"))
                except OSError as e:
                    p("masked " + path, "unreadable (%s)" % os.strerror(e.errno))
                try:
                    fd = os.open(path, os.O_WRONLY)
                    is_null = stat.S_ISCHR(os.fstat(fd).st_mode) and os.fstat(fd).st_rdev == os.stat("/dev/null").st_rdev
                    os.close(fd)
                    p("masked " + path + " write-open", "opens: /dev/null bound over it" if is_null else "ALLOWED")
                except OSError as e:
                    p("masked " + path + " write-open", "denied (%s)" % os.strerror(e.errno))
            print("\\n".join(out))
            """;

    private PostureProbe() {
    }

    /** Runs the probe in the sandbox and returns its normalized report. */
    public static String collect(Sandbox sb) {
        ExecResult r = sb.exec(ExecRequest.builder().argv("python3", "-c", SCRIPT).timeout(Duration.ofSeconds(60)).build());
        if (!r.success()) {
            throw new AssertionError("the posture probe failed: " + r.status().describe() + "\n" + r.stderrText());
        }
        return r.stdoutText();
    }

    /** The golden report of a tier, from the classpath. */
    public static String golden(Tier tier) {
        String name = "/golden/posture-" + tier.runtimeName() + ".txt";
        try (InputStream in = PostureProbe.class.getResourceAsStream(name)) {
            return in == null ? "(no golden file " + name + ")" : new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    /**
     * With {@code -Dpaddock.golden.update=true}: writes the report as the tier's golden file in this
     * module's sources (found from the working directory of the module that runs the suites).
     */
    public static void updateGoldenIfAsked(Tier tier, String report) {
        if (!Boolean.getBoolean("paddock.golden.update")) {
            return;
        }
        Path golden = Path.of("..", "paddock-testkit", "src", "main", "resources", "golden",
                "posture-" + tier.runtimeName() + ".txt");
        try {
            Files.writeString(golden, report, StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }
}
