/*
 * paddock-seccomp: compiles a sandbox's seccomp profile to the classic BPF program the kernel loads, once, so
 * that no sandbox start pays for it.
 *
 *   paddock-seccomp OUT < profile       (OUT: a new file, the program's instructions)
 *
 * runc compiles the config.json's profile through libseccomp in every container's init (3.1-3.4 ms of CPU
 * each, measured on the development hosts), then loads the result with prctl(PR_SET_SECCOMP). This program
 * makes the same libseccomp calls, in the same order, as runc 1.1's libcontainer/seccomp (InitSeccomp,
 * matchCall), and writes what seccomp_export_bpf returns. runc 1.1.5 puts a stub of its own in front
 * (patchbpf: -ENOSYS for system calls newer than the profile's newest); with ENOSYS as the profile's default
 * action, as all of Paddock's are, the stub changes no answer. paddock-init installs the program
 * (--seccomp-fd), and RuncSeccompTest compares it with what runc installs: the same bytes after the stub, and
 * the same answer for every system call number and every argument value the profile compares.
 *
 * libseccomp is opened at run time (libseccomp.so.2, which the host's runc links): no headers are needed to
 * build, and the few declarations below are libseccomp 2.x's stable ABI.
 *
 * The profile is text, one directive per line, as OciSpec's seccomp section in runc's terms:
 *   default errno <n>                          the default action (Paddock's profiles only use errno)
 *   arch <name>                                a libseccomp architecture name (x86_64, aarch64, ...)
 *   rule <action> <errno> <syscall> [<index> <op> <value> <value2>]...
 *                                              action: allow | errno | kill | kill_process | trap | log;
 *                                              op: NE LT LE EQ GE GT MASKED_EQ
 * Exit status: 0 with the program in OUT; 1 with the reason on stderr (and OUT removed).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* libseccomp 2.x ABI (seccomp.h) */
typedef void *scmp_filter_ctx;
struct scmp_arg_cmp {
    unsigned int arg;
    int op;
    uint64_t datum_a;
    uint64_t datum_b;
};
#define SCMP_ACT_KILL_PROCESS 0x80000000U
#define SCMP_ACT_KILL_THREAD 0x00000000U
#define SCMP_ACT_TRAP 0x00030000U
#define SCMP_ACT_ERRNO(x) (0x00050000U | ((x) & 0x0000ffffU))
#define SCMP_ACT_LOG 0x7ffc0000U
#define SCMP_ACT_ALLOW 0x7fff0000U
#define NR_SCMP_ERROR (-1)
#define MAX_ARGS 6

static struct {
    scmp_filter_ctx (*init)(uint32_t);
    void (*release)(scmp_filter_ctx);
    uint32_t (*arch_resolve_name)(const char *);
    int (*arch_add)(scmp_filter_ctx, uint32_t);
    int (*syscall_resolve_name)(const char *);
    int (*rule_add_array)(scmp_filter_ctx, uint32_t, int, unsigned int, const struct scmp_arg_cmp *);
    int (*export_bpf)(scmp_filter_ctx, int);
} lib;

static const char *out_path;

static void fail(const char *fmt, const char *what, int err) {
    if (out_path) {
        unlink(out_path);
    }
    fprintf(stderr, "paddock-seccomp: ");
    fprintf(stderr, fmt, what);
    if (err) {
        fprintf(stderr, ": %s", strerror(err));
    }
    fputc('\n', stderr);
    exit(1);
}

static void *sym(void *h, const char *name) {
    void *p = dlsym(h, name);
    if (!p) {
        fail("libseccomp has no %s", name, 0);
    }
    return p;
}

static void open_libseccomp(void) {
    void *h = dlopen("libseccomp.so.2", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fail("%s (install it: apt-get install -y libseccomp2; runc needs it too)", dlerror(), 0);
    }
    lib.init = sym(h, "seccomp_init");
    lib.release = sym(h, "seccomp_release");
    lib.arch_resolve_name = sym(h, "seccomp_arch_resolve_name");
    lib.arch_add = sym(h, "seccomp_arch_add");
    lib.syscall_resolve_name = sym(h, "seccomp_syscall_resolve_name");
    lib.rule_add_array = sym(h, "seccomp_rule_add_array");
    lib.export_bpf = sym(h, "seccomp_export_bpf");
}

static unsigned long long number(const char *s, const char *what) {
    if (!s || *s == '\0' || *s == '-') {
        fail("bad %s", what, 0);
    }
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 0);
    if (errno || *end != '\0') {
        fail("bad %s", what, 0);
    }
    return v;
}

static uint32_t action(const char *name, const char *errno_ret) {
    if (!name || !errno_ret) {
        fail("%s", "a rule without its action", 0);
    }
    unsigned long long e = number(errno_ret, "errno");
    if (!strcmp(name, "allow")) return SCMP_ACT_ALLOW;
    if (!strcmp(name, "errno")) return SCMP_ACT_ERRNO((uint32_t) e);
    if (!strcmp(name, "kill")) return SCMP_ACT_KILL_THREAD;
    if (!strcmp(name, "kill_process")) return SCMP_ACT_KILL_PROCESS;
    if (!strcmp(name, "trap")) return SCMP_ACT_TRAP;
    if (!strcmp(name, "log")) return SCMP_ACT_LOG;
    fail("unknown action %s", name, 0);
    return 0;
}

static int op(const char *name) {
    static const char *ops[] = {"", "NE", "LT", "LE", "EQ", "GE", "GT", "MASKED_EQ"};
    for (int i = 1; i < 8; i++) {
        if (!strcmp(name, ops[i])) return i;
    }
    fail("unknown comparison %s", name, 0);
    return 0;
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: paddock-seccomp OUT < profile\n");
        return 1;
    }
    int out = open(argv[1], O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0444);
    if (out < 0) {
        fail("cannot create %s", argv[1], errno);
    }
    out_path = argv[1];
    open_libseccomp();
    scmp_filter_ctx ctx = NULL;
    uint32_t default_action = 0;
    char line[4096];
    while (fgets(line, sizeof line, stdin)) {
        size_t len = strlen(line);
        if (len == sizeof line - 1 && line[len - 1] != '\n') {
            fail("%s", "a line too long", 0);
        }
        char *save = NULL;
        char *word = strtok_r(line, " \n", &save);
        if (!word) {
            continue;
        }
        if (!strcmp(word, "default")) {
            if (ctx) {
                fail("%s", "a second default", 0);
            }
            char *a = strtok_r(NULL, " \n", &save);
            default_action = action(a, strtok_r(NULL, " \n", &save));
            if (!(ctx = lib.init(default_action))) {
                fail("%s", "seccomp_init failed", 0);
            }
            continue;
        }
        if (!ctx) {
            fail("%s before default", word, 0);
        }
        if (!strcmp(word, "arch")) {
            char *name = strtok_r(NULL, " \n", &save);
            uint32_t arch = name ? lib.arch_resolve_name(name) : 0;
            if (!arch) {
                fail("unknown architecture %s", name ? name : "(none)", 0);
            }
            int rc = lib.arch_add(ctx, arch);
            if (rc < 0 && rc != -EEXIST) { /* the native one is already there, as in libseccomp-golang's AddArch */
                fail("adding the architecture %s", name, -rc);
            }
            continue;
        }
        if (strcmp(word, "rule")) {
            fail("unknown directive %s", word, 0);
        }
        char *a = strtok_r(NULL, " \n", &save);
        uint32_t act = action(a, strtok_r(NULL, " \n", &save));
        char *name = strtok_r(NULL, " \n", &save);
        if (!name) {
            fail("%s", "a rule without its system call", 0);
        }
        struct scmp_arg_cmp conds[MAX_ARGS];
        unsigned int n = 0, per_arg[MAX_ARGS] = {0};
        char *w;
        while ((w = strtok_r(NULL, " \n", &save))) {
            if (n == MAX_ARGS) {
                fail("too many conditions for %s", name, 0);
            }
            unsigned long long index = number(w, "argument index");
            char *o = strtok_r(NULL, " \n", &save), *v = strtok_r(NULL, " \n", &save), *v2 = strtok_r(NULL, " \n", &save);
            if (index >= MAX_ARGS || !o || !v || !v2) {
                fail("a bad condition for %s", name, 0);
            }
            conds[n] = (struct scmp_arg_cmp){(unsigned int) index, op(o), number(v, "value"), number(v2, "value2")};
            per_arg[index]++;
            n++;
        }
        /* runc's matchCall: a rule with the default's action adds nothing; a name libseccomp does not know is
         * skipped (not on this kernel's table); two conditions on one argument become one rule each (OR). */
        if (act == default_action) {
            continue;
        }
        int nr = lib.syscall_resolve_name(name);
        if (nr == NR_SCMP_ERROR) {
            continue;
        }
        int repeated = 0;
        for (int i = 0; i < MAX_ARGS; i++) {
            repeated |= per_arg[i] > 1;
        }
        int rc = 0;
        if (repeated) {
            for (unsigned int i = 0; i < n && rc == 0; i++) {
                rc = lib.rule_add_array(ctx, act, nr, 1, &conds[i]);
            }
        } else {
            rc = lib.rule_add_array(ctx, act, nr, n, n ? conds : NULL);
        }
        if (rc < 0) {
            fail("adding the rule for %s", name, -rc);
        }
    }
    if (!ctx) {
        fail("%s", "an empty profile", 0);
    }
    int rc = lib.export_bpf(ctx, out);
    if (rc < 0) {
        fail("%s", "seccomp_export_bpf", -rc);
    }
    if (fsync(out) != 0 || close(out) != 0) {
        fail("writing %s", argv[1], errno);
    }
    lib.release(ctx);
    return 0;
}
