/* Execs: one shim per command, stdio pumping with windows and caps, timeouts and tree kills.
 *
 * Process layout of one exec:
 *
 *   init (PID 1) --clone(VM)--> shim (subreaper, still root in the userns) --clone(VM|VFORK)--> command (dropped)
 *
 * The shim exists so that every orphaned descendant of the command is reparented to it, not to the init:
 * the init then knows which exec a process belongs to (the tree under the shim), and the kernel keeps
 * doing the bookkeeping for us. The shim reports over a private pipe with fixed-size records, each one
 * write() of less than PIPE_BUF, so records arrive whole.
 *
 * The shim is a process of its own (its own pid, fd table, signal mask, subreaper bit) that shares the init's
 * memory, on a stack of its own (struct shim_mem): no copy of the init's address space, which a fork would
 * make and then pay for again in a copy-on-write fault for every page the init touches while the shim lives.
 * On a PVM guest that fork was half of an exec's cost. Sharing memory binds the shim: until its first record
 * (the command has executed, or failed) the init waits for it, so that the spawn request and the stacks it uses
 * stay the init's to give; after it the shim touches nothing but its own stack and makes raw system calls,
 * which leave the errno it shares with the init alone. Where raw calls are not written (other architectures)
 * the shim is forked as before.
 *
 * Without child subreapers (gVisor) orphans go to the init whatever the shim does, so there is none: the init
 * starts the command itself (clone(VM|VFORK), suspended until the command has executed), which joins the exec's
 * cgroup before its exec, and the init reaps it and makes the shim's records itself (exec "direct").
 *
 * A command with SPAWN_PTY runs on a pseudo-terminal instead of pipes: its stdin, stdout and stderr are the
 * terminal's slave side (also its controlling terminal), and the init holds the master, which it reads as
 * the exec's stdout and writes the exec's stdin to. The master reads EIO once every slave descriptor is
 * closed: that is the end of its output, as end of file is for a pipe. gVisor's master never reads EIO (an
 * empty one just has nothing to read), so once the shim (direct: the command) is gone, and with it every
 * process of the exec that could hold the terminal, an empty master is the end of the output too. */
#include "init.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

enum { REC_SPAWNED = 1, REC_EXIT = 2, REC_FAILED = 3 };

struct shim_rec {
    int32_t type;
    int32_t pid;
    int32_t status; /* wait status (REC_EXIT) or errno (REC_FAILED) */
    int32_t pad;
    int64_t utime_us, stime_us, maxrss_kb;
    char msg[200];
};

struct exec {
    struct exec *next;
    uint32_t id;
    pid_t shim_pid;
    int shim_alive;
    int direct;                /* no shim (exec_direct): the init started the command itself */
    pid_t direct_pid;          /* direct: the command's pid until the init has reaped it */
    pid_t pid;                 /* the command, 0 until SPAWNED */
    int status_fd;             /* shim -> init records */
    struct shim_rec rec;       /* partial record being read */
    size_t rec_len;

    int stdin_fd;              /* write end of the command's stdin pipe (a pty: the master), -1 if none/closed */
    struct buf stdin_buf;      /* at most STDIN_WINDOW bytes */
    int stdin_close_req;
    int pty;                   /* runs on a pseudo-terminal: out_fd[0] and stdin_fd are its master */
    int eof_pending;           /* pty: end-of-file characters to type once stdin_buf is written */
    int pty_orphaned;          /* pty: the shim is gone, so nothing holds the slave; empty master = end */

    int out_fd[2];             /* read ends of stdout/stderr, -1 at EOF */
    uint64_t out_win[2];
    uint64_t out_cap[2];
    uint64_t out_sent[2];
    int out_trunc[2];
    int out_grown[2];          /* its pipe was made larger (read_output) */

    uint64_t start_ns;
    uint64_t timeout_at;       /* CLOCK_MONOTONIC ns, 0 = none */
    int pending_signal;        /* scope-0 signal asked for before the pid was known */

    int main_exited;
    int kind;
    int32_t code;
    int64_t utime_us, stime_us, maxrss_kb;
    char msg[200];
    int timed_out;
    int killed;
    int ended;                 /* EXIT sent */
    int released;              /* the engine forgot it: free once ended, without EXIT */
    char cg[96];               /* its cgroup (exec_tracking_init), "" if none */

    /* pty: the last RESIZE, checked a few times after (see exec_resize) */
    struct winsize size_was;   /* the size it replaced */
    struct winsize size_want;
    uint64_t size_check_at;    /* CLOCK_MONOTONIC ns of the next check, 0 = none */
    int size_checks;           /* checks done */
};

static struct exec *execs;
/* Where each exec's cgroup is made when child subreapers are missing; "" when there is none. */
static char cg_root[64];
static uint64_t cg_serial;
static int n_live;    /* not ended */
static int n_records; /* all */

static struct exec *find(uint32_t id)
{
    for (struct exec *e = execs; e; e = e->next)
        if (e->id == id)
            return e;
    return NULL;
}

static void close_fd(int *fd)
{
    if (*fd >= 0) {
        close(*fd);
        *fd = -1;
    }
}

static void exec_free(struct exec *e)
{
    struct exec **pp = &execs;
    while (*pp && *pp != e)
        pp = &(*pp)->next;
    if (*pp)
        *pp = e->next;
    close_fd(&e->status_fd);
    close_fd(&e->stdin_fd);
    close_fd(&e->out_fd[0]);
    close_fd(&e->out_fd[1]);
    buf_free(&e->stdin_buf);
    if (e->cg[0] && rmdir(e->cg) < 0)
        logmsg("exec %u: rmdir %s: %s", e->id, e->cg, strerror(errno)); /* processes outlive it */
    if (!e->ended)
        n_live--;
    n_records--;
    free(e);
}

/* ---------------------------------------------------------------- tree kill */

struct procent {
    pid_t pid, ppid, sid;
    char state;
    char mark;
};

/* Reads /proc/<pid>/stat: "pid (comm) state ppid ...". comm may hold spaces and ')', so parse from the
 * last ')'. */
static int read_stat(const char *name, struct procent *pe)
{
    char path[64], b[512];
    snprintf(path, sizeof(path), "/proc/%s/stat", name);
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return -1;
    ssize_t n = read(fd, b, sizeof(b) - 1);
    close(fd);
    if (n <= 0)
        return -1;
    b[n] = 0;
    char *rp = strrchr(b, ')');
    if (!rp || rp[1] != ' ' || !rp[2])
        return -1;
    int ppid = 0, pgrp = 0, sid = 0;
    pe->pid = (pid_t)atoi(b);
    pe->state = rp[2];
    if (sscanf(rp + 3, "%d %d %d", &ppid, &pgrp, &sid) < 1)
        return -1;
    pe->ppid = (pid_t)ppid;
    pe->sid = (pid_t)sid;
    pe->mark = 0;
    return 0;
}

static int have_subreaper(void)
{
    static int subreaper = -1;
    if (subreaper < 0) {
        int v = 0;
        subreaper = prctl(PR_GET_CHILD_SUBREAPER, &v, 0, 0, 0) == 0;
    }
    return subreaper;
}

/* One pass: SIGKILLs every live descendant of root (-1: none) and, without subreapers, every process of
 * session sid (0: none) and of the sessions they reach; returns how many were alive. */
static int kill_pass(pid_t root, pid_t sid)
{
    DIR *d = opendir("/proc");
    if (!d)
        return 0;
    size_t cap = 1024, n = 0;
    struct procent *ps = malloc(cap * sizeof(*ps));
    struct dirent *de;
    while (ps && (de = readdir(d)) != NULL) {
        if (de->d_name[0] < '0' || de->d_name[0] > '9')
            continue;
        if (n == cap) {
            if (cap >= (1u << 22))
                break; /* a bound, far above any pids limit */
            struct procent *np = realloc(ps, cap * 2 * sizeof(*ps));
            if (!np)
                break;
            ps = np;
            cap *= 2;
        }
        if (read_stat(de->d_name, &ps[n]) == 0)
            n++;
    }
    closedir(d);
    if (!ps)
        return 0;
    /* Without child subreapers (gVisor answers EINVAL) an orphan of the exec is reparented to the init,
     * out of the shim's tree: it is still the exec's while it stays in one of the exec's sessions (the
     * command's own, sid, first: it holds orphans whose shim is already gone). An orphan that also left
     * the session (setsid, then its parent exited) cannot be told apart from other execs' and dies with
     * the sandbox. */
    int subreaper = have_subreaper();
    pid_t own_sid = getsid(0);
    /* Mark descendants until a fixed point: parents may have higher pids than children after pid
     * wrap-around, so a single ordered pass is not enough. */
    int changed = 1;
    while (changed) {
        changed = 0;
        for (size_t i = 0; i < n; i++) {
            if (ps[i].mark || ps[i].pid == root)
                continue;
            if (ps[i].ppid == root || (!subreaper && sid > 1 && ps[i].sid == sid)) {
                ps[i].mark = 1;
                changed = 1;
                continue;
            }
            for (size_t j = 0; j < n; j++) {
                if (ps[j].mark && (ps[j].pid == ps[i].ppid
                                   || (!subreaper && ps[i].sid > 1 && ps[i].sid != own_sid && ps[j].sid == ps[i].sid))) {
                    ps[i].mark = 1;
                    changed = 1;
                    break;
                }
            }
        }
    }
    int alive = 0;
    for (size_t i = 0; i < n; i++) {
        if (!ps[i].mark || ps[i].state == 'Z' || ps[i].state == 'X')
            continue;
        alive++;
        kill(ps[i].pid, SIGKILL);
    }
    free(ps);
    return alive;
}

void kill_tree(pid_t root, pid_t sid)
{
    /* Killed processes take a moment to turn into zombies and a process in the middle of fork() may
     * produce a child after our scan: repeat until a pass finds nothing alive, at most ~0.5 s. */
    for (int i = 0; i < 250; i++) {
        if (kill_pass(root, sid) == 0)
            return;
        struct timespec ts = {0, 2 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    logmsg("kill_tree(%d): processes still alive after 250 passes", (int)root);
}

#define CGROUP_SUPER_MAGIC_ 0x27e0ebL

void exec_tracking_init(void)
{
    if (have_subreaper())
        return;
    /* gVisor with --cgroupfs: the Sentry's own v1 hierarchies, the cpu one among them. A process cannot
     * leave its cgroup without writing to a root-owned cgroup.procs, which no tenant process can. */
    const char *base = "/sys/fs/cgroup/cpu";
    struct statfs sf;
    if (statfs(base, &sf) != 0 || (long)sf.f_type != CGROUP_SUPER_MAGIC_) {
        logmsg("no child subreapers and no cgroup hierarchy at %s: an exec's orphans are attributed by session", base);
        return;
    }
    snprintf(cg_root, sizeof(cg_root), "%s/paddock-execs", base);
    if (mkdir(cg_root, 0755) < 0 && errno != EEXIST) {
        logmsg("mkdir %s: %s: an exec's orphans are attributed by session", cg_root, strerror(errno));
        cg_root[0] = 0;
    }
}

/* SIGKILLs every process in the exec's cgroup but keep (its shim, which joined the cgroup to be born there
 * and must live to report the exit) until none is left alive; bounded like kill_tree. */
static void cg_kill(const char *cg, pid_t keep)
{
    char path[128];
    snprintf(path, sizeof(path), "%s/cgroup.procs", cg);
    for (int i = 0; i < 250; i++) {
        FILE *f = fopen(path, "re");
        if (!f)
            return;
        int alive = 0, pid;
        while (fscanf(f, "%d", &pid) == 1) {
            char name[16];
            struct procent pe;
            snprintf(name, sizeof(name), "%d", pid);
            if (pid <= 1 || pid == keep || (read_stat(name, &pe) == 0 && (pe.state == 'Z' || pe.state == 'X')))
                continue;
            alive++;
            kill(pid, SIGKILL);
        }
        fclose(f);
        if (!alive)
            return;
        struct timespec ts = {0, 2 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    logmsg("%s: processes still alive after 250 passes", cg);
}

/* Kills the exec's processes: the shim's tree and, without subreapers, the command's session, whose
 * orphans outlive the shim (it exits once it has no children left), and the exec's cgroup, which holds
 * even those that left the session. e->pid is still a session id while any of them lives: the kernel does
 * not reuse it until then. */
static void exec_kill(struct exec *e)
{
    pid_t sid = have_subreaper() ? 0 : e->pid;
    if (e->shim_alive || sid > 0)
        kill_tree(e->shim_alive ? e->shim_pid : -1, sid);
    if (e->cg[0])
        cg_kill(e->cg, e->shim_alive ? e->shim_pid : 0);
}

void exec_kill_all(void)
{
    for (struct exec *e = execs; e; e = e->next) {
        exec_kill(e);
        if (e->shim_alive)
            kill(e->shim_pid, SIGKILL);
    }
}

/* ---------------------------------------------------------------- EXIT */

static void maybe_end(struct exec *e)
{
    if (e->ended || !e->main_exited || e->out_fd[0] >= 0 || e->out_fd[1] >= 0)
        return;
    e->ended = 1;
    n_live--;
    close_fd(&e->stdin_fd);
    buf_free(&e->stdin_buf);
    close_fd(&e->status_fd);
    if (e->released) {
        exec_free(e);
        return;
    }
    uint32_t flags = 0;
    if (e->timed_out)
        flags |= EXITF_TIMED_OUT;
    if (e->out_trunc[0])
        flags |= EXITF_STDOUT_TRUNC;
    if (e->out_trunc[1])
        flags |= EXITF_STDERR_TRUNC;
    if (e->killed)
        flags |= EXITF_KILLED;
    struct exit_report x = {(uint8_t)e->kind, e->code, flags, now_ns() - e->start_ns, (uint64_t)e->utime_us,
                            (uint64_t)e->stime_us, (uint64_t)e->maxrss_kb, e->msg};
    size_t before = buf_used(&g.out);
    enc_exit(&g.out, e->id, &x);
    if (buf_used(&g.out) == before)
        logmsg("exec %u: EXIT dropped (output queue full)", e->id);
}

/* The command never started: report it without a shim (bad request, fork failure). */
static void fail_now(uint32_t id, int err, const char *what)
{
    char b[256];
    snprintf(b, sizeof(b), "%s: %s", what, strerror(err));
    struct exit_report x = {EXIT_FAILED_TO_START, err, 0, 0, 0, 0, 0, b};
    enc_exit(&g.out, id, &x);
}

void exec_spawn_too_big(uint32_t chan)
{
    fail_now(chan, E2BIG, "spawn request too large");
}

static void write_stdin(struct exec *e);

/* ---------------------------------------------------------------- the command and its shim */

static void close_from(int lo, int hi_incl)
{
    if (lo > hi_incl)
        return;
    if (syscall(SYS_close_range, (unsigned)lo, (unsigned)hi_incl, 0) == 0)
        return;
    int max = (int)sysconf(_SC_OPEN_MAX);
    if (max < 0 || max > 65536)
        max = 65536;
    for (int fd = lo; fd <= hi_incl && fd < max; fd++)
        close(fd);
}

struct cap_hdr { uint32_t version; int pid; };
struct cap_data { uint32_t effective, permitted, inheritable; };

/* Set in the command (which shares the shim's memory until its exec) when it fails before its exec. */
static void child_fail(struct shim_rec *fail, int err, const char *step, const char *arg)
{
    fail->status = err;
    if (arg)
        snprintf(fail->msg, sizeof(fail->msg), "%s %s: %s", step, arg, strerror(err));
    else
        snprintf(fail->msg, sizeof(fail->msg), "%s", strerror(err));
    __atomic_store_n(&fail->type, REC_FAILED, __ATOMIC_RELEASE);
    _exit(127);
}

/* execvp with PATH taken from the command's environment, not from ours. */
static void exec_search(char **argv, char **envp, struct shim_rec *fail)
{
    const char *file = argv[0];
    if (strchr(file, '/')) {
        execve(file, argv, envp);
        child_fail(fail, errno, "exec", NULL);
    }
    const char *path = "/usr/local/bin:/usr/bin:/bin";
    for (char **e = envp; *e; e++)
        if (strncmp(*e, "PATH=", 5) == 0)
            path = *e + 5;
    int err = ENOENT, seen_eacces = 0;
    size_t flen = strlen(file);
    char full[4096];
    for (const char *p = path;; p++) {
        const char *q = strchrnul(p, ':');
        size_t dlen = (size_t)(q - p);
        if (dlen + flen + 2 <= sizeof(full)) {
            memcpy(full, p, dlen);
            size_t off = dlen;
            if (dlen == 0)
                full[off++] = '.';
            full[off++] = '/';
            memcpy(full + off, file, flen + 1);
            execve(full, argv, envp);
            switch (errno) {
            case EACCES:
                seen_eacces = 1;
                /* fall through */
            case ENOENT:
            case ENOTDIR:
            case ELOOP:
            case ENAMETOOLONG:
                break;
            default:
                err = errno;
                child_fail(fail, err, "exec", NULL);
            }
        }
        if (!*q)
            break;
        p = q;
    }
    child_fail(fail, seen_eacces ? EACCES : err, "exec", NULL);
}

/* The hexadecimal mask after "key" in /proc/self/status ("CapBnd:", "SigIgn:"); -1 if it is not there. */
static int status_mask(const char *status, const char *key, uint64_t *out)
{
    const char *p = strstr(status, key);
    if (!p)
        return -1;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(p + strlen(key), &end, 16);
    if (errno || end == p + strlen(key))
        return -1;
    *out = v;
    return 0;
}

/* The kernel's struct sigaction for the raw rt_sigaction system call (libc's differs, and musl refuses 32-34). */
struct kernel_sigaction {
    void (*handler)(int);
    unsigned long flags;
    void (*restorer)(void);
    uint64_t mask;
};

/* sig's bit in a mask of signals (bit sig - 1) when its disposition is not the default or cannot be read; asked
 * with the raw system call, as musl refuses signals 32-34. */
static uint64_t not_default(int sig)
{
    struct kernel_sigaction old = {SIG_DFL, 0, NULL, 0};
    if (syscall(SYS_rt_sigaction, sig, NULL, &old, sizeof(old.mask)) != 0 || old.handler != SIG_DFL)
        return 1ULL << (sig - 1);
    return 0;
}

/* Each command used to reset all 64 signal dispositions and read (and drop) all 64 bounding-set capabilities
 * between its fork and its exec: some 130 system calls, each a trip through the Sentry under gVisor (about
 * 12 us on its ptrace platform). Both are properties of the init, the same for every command, so they are
 * found and done once here: the bounding set is dropped to tenant_caps in the init itself (its own permitted
 * and effective sets are untouched; it never executes anything), which every command inherits; and only the
 * dispositions that are not the default are recorded for the commands to reset (a caught signal is reset by
 * execve itself, an ignored one is inherited, which is what the reset is for). Where this cannot be done
 * (an unprivileged pod's init, no /proc), the commands do it all, as before. */
void commands_prepare(void)
{
    char b[4096];
    ssize_t n = -1;
    int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        n = read(fd, b, sizeof(b) - 1);
        close(fd);
    }
    b[n > 0 ? n : 0] = 0;
    uint64_t ign = 0, cgt = 0, bnd = 0;
    if (status_mask(b, "SigIgn:", &ign) == 0 && status_mask(b, "SigCgt:", &cgt) == 0) {
        g.sig_nondefault = ign | cgt;
    } else if (n > 0 && g.is_pid1) {
        /* A status without signal masks is gVisor's, where PID 1 is made by the Sentry itself with every
         * disposition at its default (no parent to inherit an ignored signal from): what is not the default is
         * what the init set itself (setup_signals), read back from the two it may have set rather than asked of
         * all 64, 64 trips through the Sentry at every sandbox's start. */
        g.sig_nondefault = not_default(SIGPIPE) | not_default(SIGCHLD);
    } else {
        /* No status to read (no /proc), or an init that a parent started: ask for each disposition. */
        g.sig_nondefault = 0;
        for (int sig = 1; sig < 65; sig++)
            g.sig_nondefault |= not_default(sig);
    }
    int have_bnd = status_mask(b, "CapBnd:", &bnd) == 0;
    int clean = 1;
    for (int cap = 0; cap < 64; cap++) {
        if (g.tenant_caps & (1ULL << cap))
            continue;
        if (have_bnd ? !(bnd & (1ULL << cap)) : prctl(PR_CAPBSET_READ, cap, 0, 0, 0) != 1)
            continue;
        if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0)
            clean = 0; /* e.g. no CAP_SETPCAP: each command tries, and fails, as before */
    }
    g.bset_clean = clean;
    /* gVisor is where there are no child subreapers, and it has no OOM killer of its own either. */
    g.no_oom_killer = !have_subreaper();
}

/* SIG_DFL for sig with the raw system call: libc (musl) refuses signals 32-34, which it keeps for itself, so an
 * init that inherited them ignored (as from a JVM's spawn) would have passed that on. */
static void reset_signal(int sig)
{
    struct kernel_sigaction ksa = {SIG_DFL, 0, NULL, 0};
    syscall(SYS_rt_sigaction, sig, &ksa, NULL, sizeof(ksa.mask));
}

/* In the command: fd 0..2 are its stdio; a failure before its exec is written to *fail. Never returns. */
static void run_command(struct spawn_req *s, struct shim_rec *fail)
{
    for (int sig = 1; sig < 65; sig++)
        if (g.sig_nondefault & (1ULL << (sig - 1)))
            reset_signal(sig);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    if (setsid() < 0)
        child_fail(fail, errno, "setsid", NULL);
    if ((s->flags & SPAWN_PTY) && ioctl(0, TIOCSCTTY, 0) < 0)
        child_fail(fail, errno, "set the controlling terminal", NULL);
    close_from(3, INT32_MAX);
    for (uint32_t i = 0; i < s->n_rlim; i++) {
        struct rlimit l;
        l.rlim_cur = s->rlim[i].soft == U64_NONE ? RLIM_INFINITY : (rlim_t)s->rlim[i].soft;
        l.rlim_max = s->rlim[i].hard == U64_NONE ? RLIM_INFINITY : (rlim_t)s->rlim[i].hard;
        if (setrlimit((int)s->rlim[i].res, &l) < 0)
            child_fail(fail, errno, "setrlimit", NULL);
    }
    /* openat, not open: musl's open follows O_CLOEXEC with an fcntl, a trip through the Sentry on gVisor for
     * nothing here (the descriptor is closed at once; so are those below, in the same way). */
    int oom = !g.no_oom_killer ? openat(AT_FDCWD, "/proc/self/oom_score_adj", O_WRONLY) : -1;
    if (oom >= 0) {
        ssize_t w = write(oom, "1000", 4);
        (void)w;
        close(oom);
    }
    /* Normally the init dropped the bounding set to tenant_caps once for all (commands_prepare). Otherwise: a
     * capability already out of the bounding set needs no dropping: an init started without any (a Kubernetes
     * pod's, capabilities dropped, not root) could not drop one anyway (EPERM without CAP_SETPCAP). One still
     * there that cannot be dropped fails the command. */
    for (int cap = 0; !g.bset_clean && cap < 64; cap++)
        if (!(g.tenant_caps & (1ULL << cap)) && prctl(PR_CAPBSET_READ, cap, 0, 0, 0) == 1 &&
            prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0)
            child_fail(fail, errno, "drop capabilities", NULL);
    /* The raw system calls: libc's broadcast each id change to every thread of the process (musl blocks and
     * restores all signals around it, two more calls each), but a command is one thread until its exec. */
    /* An unprivileged init (a pod's) cannot change groups: the command keeps the init's own, the pod's. */
    if (syscall(SYS_setgroups, 0, NULL) < 0 && !(errno == EPERM && geteuid() != 0))
        child_fail(fail, errno, "setgroups", NULL);
    if (syscall(SYS_setresgid, s->gid, s->gid, s->gid) < 0)
        child_fail(fail, errno, "setresgid", NULL);
    if (syscall(SYS_setresuid, s->uid, s->uid, s->uid) < 0)
        child_fail(fail, errno, "setresuid", NULL);
    prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
    /* With uid 0 the caps would survive setresuid; clear them (inheritable too) explicitly. */
    struct cap_hdr h = {0x20080522, 0};
    struct cap_data d[2];
    memset(d, 0, sizeof(d));
    /* A root command of a build step keeps --tenant-caps (permitted, so that no_new_privs lets its exec
     * keep them; the bounding set above holds nothing more). Any other uid keeps none. */
    if (s->uid == 0 && g.tenant_caps) {
        d[0].permitted = d[0].effective = (uint32_t)g.tenant_caps;
        d[1].permitted = d[1].effective = (uint32_t)(g.tenant_caps >> 32);
    }
    if (syscall(SYS_capset, &h, d) < 0)
        child_fail(fail, errno, "drop capabilities", NULL);
    /* chdir after the uid switch: the command may only start where its user may go. */
    if (chdir(s->cwd) < 0)
        child_fail(fail, errno, "chdir", s->cwd);
    exec_search(s->argv, s->envp, fail);
}

/* The REC_EXIT record of pid, which ended with wait status st and used ru: what a shim reports of its command,
 * and what the init makes itself for a command it started directly. */
static void exit_record(struct shim_rec *r, pid_t pid, int st, const struct rusage *ru)
{
    memset(r, 0, sizeof(*r));
    r->type = REC_EXIT;
    r->pid = pid;
    r->status = st;
    r->utime_us = (int64_t)ru->ru_utime.tv_sec * 1000000 + ru->ru_utime.tv_usec;
    r->stime_us = (int64_t)ru->ru_stime.tv_sec * 1000000 + ru->ru_stime.tv_usec;
    r->maxrss_kb = ru->ru_maxrss;
}

/* ---------------------------------------------------------------- the shim's memory and system calls */

#if defined(__x86_64__) || defined(__aarch64__)
#define LIGHT_SHIM 1
#else
#define LIGHT_SHIM 0
#endif

/* A system call that returns -errno and never writes errno: once the init runs again, a shim that shares its
 * memory (LIGHT_SHIM) also shares its errno, which libc's wrappers would set under the init's feet. */
static long raw_syscall4(long n, long a1, long a2, long a3, long a4)
{
#if defined(__x86_64__)
    long ret;
    register long r10 __asm__("r10") = a4;
    __asm__ volatile("syscall" : "=a"(ret) : "a"(n), "D"(a1), "S"(a2), "d"(a3), "r"(r10) : "rcx", "r11", "memory");
    return ret;
#elif defined(__aarch64__)
    register long x8 __asm__("x8") = n;
    register long x0 __asm__("x0") = a1;
    register long x1 __asm__("x1") = a2;
    register long x2 __asm__("x2") = a3;
    register long x3 __asm__("x3") = a4;
    __asm__ volatile("svc 0" : "+r"(x0) : "r"(x8), "r"(x1), "r"(x2), "r"(x3) : "memory");
    return x0;
#else
    long ret = syscall(n, a1, a2, a3, a4); /* a forked shim has an errno of its own */
    return ret < 0 ? -errno : ret;
#endif
}

static void shim_write(const struct shim_rec *r)
{
    long w;
    do
        w = raw_syscall4(SYS_write, 3, (long)r, (long)sizeof(*r), 0);
    while (w == -EINTR);
}

/* The stacks of one light shim and of its command until the command's exec, each above a guard page. The region
 * is the init's to reuse once the shim is reaped; a few are kept for the next execs. */
#define SHIM_STACK (64 * 1024)
struct shim_mem {
    struct shim_mem *next;
    pid_t pid;       /* the shim using it, while it lives */
    char *base;      /* the mapping: guard, the command's stack, guard, the shim's stack */
    size_t len;
    char *command_top, *shim_top;
    struct spawn_req req; /* the request as its command sees it: the init's, copied out of the init's stack */
};
static struct shim_mem *shims_live, *shims_free;
static int n_shims_free;
#define SHIM_MEM_KEPT 8

static struct shim_mem *shim_mem_get(void)
{
    struct shim_mem *m = shims_free;
    if (m) {
        shims_free = m->next;
        n_shims_free--;
        return m;
    }
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t stack = (SHIM_STACK + page - 1) / page * page;
    m = calloc(1, sizeof(*m));
    if (!m)
        return NULL;
    m->len = 2 * (page + stack);
    m->base = mmap(NULL, m->len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m->base == MAP_FAILED || mprotect(m->base, page, PROT_NONE) < 0 ||
        mprotect(m->base + page + stack, page, PROT_NONE) < 0) {
        if (m->base != MAP_FAILED)
            munmap(m->base, m->len);
        free(m);
        return NULL;
    }
    m->command_top = m->base + page + stack;
    m->shim_top = m->base + m->len;
    return m;
}

static void shim_mem_put(struct shim_mem *m)
{
    if (n_shims_free < SHIM_MEM_KEPT) {
        m->next = shims_free;
        shims_free = m;
        n_shims_free++;
        return;
    }
    munmap(m->base, m->len);
    free(m);
}

/* Takes the stacks of shim pid out of shims_live; NULL if it had none. */
static struct shim_mem *shim_mem_unlink(pid_t pid)
{
    for (struct shim_mem **pp = &shims_live; *pp; pp = &(*pp)->next)
        if ((*pp)->pid == pid) {
            struct shim_mem *m = *pp;
            *pp = m->next;
            return m;
        }
    return NULL;
}

/* The shim pid was reaped: its stacks are free again. */
static void shim_mem_reaped(pid_t pid)
{
    struct shim_mem *m = shim_mem_unlink(pid);
    if (m)
        shim_mem_put(m);
}

struct command_arg {
    struct spawn_req *s;
    struct shim_rec *fail;
};

/* Moves the calling process into the exec's cgroup cg ("" = none); a failure is logged to logfd. */
static void join_cgroup(const char *cg, int logfd)
{
    if (!cg[0])
        return;
    char path[128], pid[16];
    snprintf(path, sizeof(path), "%s/cgroup.procs", cg);
    int fd = openat(AT_FDCWD, path, O_WRONLY | O_CLOEXEC); /* no fcntl after it, as musl's open makes */
    int n = snprintf(pid, sizeof(pid), "%d", (int)getpid());
    if (fd < 0 || write(fd, pid, (size_t)n) != n)
        dprintf(logfd, "exec: joining %s: %s\n", cg, strerror(errno));
    if (fd >= 0)
        close(fd);
}

static int command_main(void *p)
{
    struct command_arg *a = p;
    run_command(a->s, a->fail);
    return 127;
}

/* The command's stack until its exec when the init starts it (exec_direct) or a forked shim does: it shares their
 * memory (CLONE_VM), and they wait meanwhile. A light shim's command has a stack in its shim_mem. */
static char command_stack[SHIM_STACK] __attribute__((aligned(16)));

struct direct_arg {
    struct spawn_req *s;
    struct shim_rec *fail;
    const char *cg;
    int src[3]; /* the command's stdin, stdout and stderr in the init */
};

/* The command started by the init itself (exec_direct): into the exec's cgroup, stdio in place, then as from a
 * shim. Shares the init's memory, the init suspended, until its exec. */
static int direct_main(void *p)
{
    struct direct_arg *a = p;
    join_cgroup(a->cg, 2); /* fd 2 is still the init's log here */
    /* Copies above 10 first where a source is itself 0, 1 or 2, which a dup2 below could clobber; the init's
     * own 0..2 are always open (its channel and log), so its new descriptors never are, and that costs nothing. */
    int tmp[3] = {a->src[0], a->src[1], a->src[2]};
    for (int i = 0; i < 3 && (a->src[0] < 3 || a->src[1] < 3 || a->src[2] < 3); i++)
        if ((tmp[i] = fcntl(a->src[i], F_DUPFD, 10)) < 0)
            child_fail(a->fail, errno, "stdio", NULL);
    for (int i = 0; i < 3; i++)
        if (dup2(tmp[i], i) < 0)
            child_fail(a->fail, errno, "stdio", NULL);
    run_command(a->s, a->fail); /* closes every fd above 2 */
    return 127;
}

/* In the shim: fd 0..2 are the command's stdio, fd 3 the report pipe, fd 4 the log. Starts the command on the
 * stack that ends at command_top, reports, waits for the exec's processes. Never returns. */
static void run_shim(struct spawn_req *s, const char *cg, char *command_top)
{
    /* No handler of the init's runs here (its SIGCHLD self-pipe, when there is no signalfd): this process shares
     * the init's memory. The command sets its own mask; wait4 needs no signal. */
    sigset_t all;
    sigfillset(&all);
    sigprocmask(SIG_SETMASK, &all, NULL);
    if (have_subreaper())
        prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
    prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
    /* Before the command exists, so that it and everything it starts are born in the exec's cgroup. */
    join_cgroup(cg, 4); /* fd 4: the init's log */
    struct shim_rec r;
    memset(&r, 0, sizeof(r));
    /* The command is started as posix_spawn does, in the shim's memory and with the shim suspended until it has
     * executed (or failed): no copy of the shim's address space that its exec would throw away at once (under
     * gVisor's ptrace platform each address space is a host process of its own). A failure before the exec is
     * written to fr, which the shim reads once clone returns. */
    struct shim_rec fr;
    memset(&fr, 0, sizeof(fr));
    struct command_arg a = {s, &fr};
    pid_t pid = clone(command_main, command_top, CLONE_VM | CLONE_VFORK | SIGCHLD, &a);
    if (pid < 0) {
        r.type = REC_FAILED;
        r.status = errno;
        snprintf(r.msg, sizeof(r.msg), "fork: %s", strerror(errno));
        shim_write(&r);
        raw_syscall4(SYS_exit_group, 1, 0, 0, 0);
    }
    /* The shim must not hold the command's pipes, or stdout would never reach end of file. */
    close(0);
    close(1);
    close(2);
    int failed = __atomic_load_n(&fr.type, __ATOMIC_ACQUIRE) == REC_FAILED;
    if (!failed) {
        r.type = REC_SPAWNED;
        r.pid = pid;
        shim_write(&r);
    }
    /* From here on, raw system calls only: the init may be running (see the top of this file). */
    for (;;) {
        int st;
        struct rusage ru;
        long w = raw_syscall4(SYS_wait4, -1, (long)&st, 0, (long)&ru);
        if (w < 0) {
            if (w == -EINTR)
                continue;
            break; /* ECHILD: every descendant is gone */
        }
        if (w != pid)
            continue;
        if (failed) {
            fr.type = REC_FAILED;
            fr.pid = pid;
            shim_write(&fr);
        } else {
            exit_record(&r, pid, st, &ru);
            shim_write(&r);
        }
    }
    for (;;)
        raw_syscall4(SYS_exit_group, 0, 0, 0, 0);
}

struct shim_arg {
    struct spawn_req *s;
    const char *cg;
    char *command_top;
    int src[5]; /* in the init: the command's stdin, stdout and stderr, the report pipe's write end, the log */
};

/* The shim, forked or cloned: its fds in place, then run_shim. */
static int shim_main(void *p)
{
    struct shim_arg *a = p;
    /* Copies above 10 first, so that dup2 never clobbers a source. */
    int tmp[5];
    for (int i = 0; i < 5; i++) {
        tmp[i] = fcntl(a->src[i], F_DUPFD, 10);
        if (tmp[i] < 0)
            raw_syscall4(SYS_exit_group, 126, 0, 0, 0);
    }
    for (int i = 0; i < 5; i++)
        if (dup2(tmp[i], i) < 0)
            raw_syscall4(SYS_exit_group, 126, 0, 0, 0);
    close_from(5, INT32_MAX);
    run_shim(a->s, a->cg, a->command_top);
    return 0;
}

/* Starts the shim of a command; its pid, or -1 with errno. A light shim's stacks are its own until it is reaped
 * (shims_live); a forked one has none. */
static pid_t shim_start(struct shim_arg *a)
{
    if (LIGHT_SHIM) {
        struct shim_mem *m = shim_mem_get();
        if (m) {
            m->req = *a->s;
            a->s = &m->req;
            a->command_top = m->command_top;
            pid_t pid = clone(shim_main, m->shim_top, CLONE_VM | SIGCHLD, a);
            if (pid < 0) {
                int saved = errno;
                shim_mem_put(m);
                errno = saved;
                return -1;
            }
            m->pid = pid;
            m->next = shims_live;
            shims_live = m;
            return pid;
        }
        logmsg("no memory for a shim's stacks: forking it");
    }
    a->command_top = command_stack + sizeof(command_stack);
    pid_t pid = fork();
    if (pid == 0)
        shim_main(a);
    return pid;
}

/* Waits for the shim's first record (the command has executed, or failed): until then the command uses the
 * spawn request and a light shim's stacks. 0, or -1 if the shim died first. */
static int first_record(int fd, struct shim_rec *r)
{
    size_t got = 0;
    while (got < sizeof(*r)) {
        ssize_t n = read(fd, (char *)r + got, sizeof(*r) - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        got += (size_t)n;
    }
    return 0;
}

/* A pseudo-terminal of the requested size, in the sandbox's own devpts. Both descriptors are close-on-exec;
 * 0 or -1 with errno. */
static int open_pty(const struct spawn_req *s, int *master, int *slave)
{
    int m = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (m < 0)
        return -1;
    int sl = -1;
    if (unlockpt(m) == 0) {
        sl = ioctl(m, TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC);
        if (sl < 0) {
            /* Kernels before 4.13 and gVisor: by name, in this mount namespace's own devpts. */
            char name[64];
            if (ptsname_r(m, name, sizeof(name)) == 0)
                sl = open(name, O_RDWR | O_NOCTTY | O_CLOEXEC);
        }
    }
    if (sl < 0) {
        int saved = errno;
        close(m);
        errno = saved;
        return -1;
    }
    /* The device stays root's (the init has no CAP_CHOWN), as envd's terminals are; the command uses it
     * through the descriptors it is given. */
    struct winsize ws = {(unsigned short)s->rows, (unsigned short)s->cols, 0, 0};
    if (ioctl(m, TIOCSWINSZ, &ws) < 0)
        logmsg("pty: TIOCSWINSZ: %s", strerror(errno));
    *master = m;
    *slave = sl;
    return 0;
}

static void on_record(struct exec *e, const struct shim_rec *r);

void exec_spawn(uint32_t id, const uint8_t *p, size_t n)
{
    if (id == 0) {
        logmsg("SPAWN on channel 0 ignored");
        return;
    }
    if (find(id)) {
        logmsg("SPAWN: exec %u already exists, ignored", id);
        return;
    }
    if (n_live >= MAX_EXECS) {
        fail_now(id, EAGAIN, "too many running commands");
        return;
    }
    /* Forget the oldest ended-but-unreleased execs rather than growing without bound. */
    while (n_records >= MAX_EXEC_RECORDS) {
        struct exec *victim = NULL;
        for (struct exec *e = execs; e; e = e->next)
            if (e->ended)
                victim = e; /* new execs are pushed at the head: the last one is the oldest */
        if (!victim)
            break;
        exec_free(victim);
    }
    struct spawn_req s;
    if (spawn_decode(&s, p, n) < 0) {
        spawn_req_free(&s);
        fail_now(id, EINVAL, "malformed spawn request");
        return;
    }
    int in[2] = {-1, -1}, out[2] = {-1, -1}, err[2] = {-1, -1}, st[2] = {-1, -1};
    int ok = 1;
    int pty = (s.flags & SPAWN_PTY) != 0;
    if (pty) {
        /* The slave is the command's stdin, stdout and stderr; the master is read as stdout and written as
         * stdin. No stderr: the terminal merges it. Copies, so that each end below is closed once. */
        int master, slave;
        ok = open_pty(&s, &master, &slave) == 0;
        if (ok) {
            in[0] = slave;
            out[0] = master;
            in[1] = fcntl(master, F_DUPFD_CLOEXEC, 0);
            out[1] = fcntl(slave, F_DUPFD_CLOEXEC, 0);
            err[1] = fcntl(slave, F_DUPFD_CLOEXEC, 0);
            ok = in[1] >= 0 && out[1] >= 0 && err[1] >= 0;
        }
    } else if (s.flags & SPAWN_STDIN_PIPE) {
        ok = pipe2(in, O_CLOEXEC) == 0;
    } else {
        in[0] = open("/dev/null", O_RDONLY | O_CLOEXEC);
        if (in[0] < 0 && pipe2(in, O_CLOEXEC) == 0)
            close_fd(&in[1]); /* no /dev/null: an empty pipe reads the same */
        ok = in[0] >= 0;
    }
    if (!pty)
        ok = ok && pipe2(out, O_CLOEXEC) == 0 && pipe2(err, O_CLOEXEC) == 0;
    /* Without child subreapers (gVisor) a shim keeps no orphan of the exec (they go to the init), so it would only
     * cost a fork per exec (a new address space: a host process on gVisor's ptrace platform): the init starts the
     * command itself, in the exec's cgroup, and reaps it. */
    int direct = !have_subreaper();
    ok = ok && (direct || pipe2(st, O_CLOEXEC) == 0);
    struct exec *e = ok ? calloc(1, sizeof(*e)) : NULL;
    if (!e) {
        int saved = errno ? errno : ENOMEM;
        for (int i = 0; i < 2; i++) {
            close_fd(&in[i]);
            close_fd(&out[i]);
            close_fd(&err[i]);
            close_fd(&st[i]);
        }
        spawn_req_free(&s);
        fail_now(id, saved, "spawn");
        return;
    }
    e->start_ns = now_ns();
    if (cg_root[0]) {
        snprintf(e->cg, sizeof(e->cg), "%s/e%llu", cg_root, (unsigned long long)++cg_serial);
        if (mkdir(e->cg, 0755) < 0) {
            logmsg("exec %u: mkdir %s: %s", id, e->cg, strerror(errno));
            e->cg[0] = 0;
        }
    }
    struct shim_rec fr;
    memset(&fr, 0, sizeof(fr));
    struct direct_arg da = {&s, &fr, e->cg, {in[0], out[1], err[1]}};
    struct shim_arg sa = {&s, e->cg, NULL, {in[0], out[1], err[1], st[1], 2}};
    pid_t shim = direct ? clone(direct_main, command_stack + sizeof(command_stack), CLONE_VM | CLONE_VFORK | SIGCHLD, &da)
                        : shim_start(&sa);
    int fork_errno = errno;
    close_fd(&in[0]);
    close_fd(&out[1]);
    close_fd(&err[1]);
    close_fd(&st[1]);
    /* The first record: a direct command has executed or failed by now (CLONE_VFORK), so the init makes what a
     * shim would have reported; a shim's is waited for (see first_record). */
    struct shim_rec first;
    int have_first = 0, keep_request = 0;
    if (direct && shim > 0) {
        memset(&first, 0, sizeof(first));
        if (__atomic_load_n(&fr.type, __ATOMIC_ACQUIRE) == REC_FAILED) {
            first = fr;
        } else {
            first.type = REC_SPAWNED;
            first.pid = shim;
        }
        have_first = 1;
    } else if (shim > 0) {
        have_first = first_record(st[0], &first) == 0;
        /* The shim died before its command executed (killed from outside), and the command may still run on a
         * light shim's stacks and read the request: both stay the command's for good. read_status reports the
         * death. */
        if (!have_first && shim_mem_unlink(shim))
            keep_request = 1;
    }
    if (shim < 0) {
        close_fd(&in[1]);
        close_fd(&out[0]);
        close_fd(&err[0]);
        close_fd(&st[0]);
        if (e->cg[0])
            rmdir(e->cg);
        free(e);
        fail_now(id, fork_errno, "fork");
        spawn_req_free(&s);
        return;
    }
    e->id = id;
    if (direct) {
        e->direct = 1;
        e->direct_pid = shim;
        e->status_fd = -1;
    } else {
        e->shim_pid = shim;
        e->shim_alive = 1;
        e->status_fd = st[0];
    }
    e->stdin_fd = in[1];
    buf_init(&e->stdin_buf, STDIN_WINDOW);
    e->out_fd[0] = out[0];
    e->out_fd[1] = err[0];
    e->pty = pty;
    /* Nothing will be typed: end of file at once, as /dev/null would give. */
    e->eof_pending = pty && !(s.flags & SPAWN_STDIN_PIPE);
    for (int i = 0; i < 2; i++) {
        e->out_win[i] = s.win[i];
        e->out_cap[i] = s.cap[i];
    }
    if (s.timeout_ms) {
        uint64_t t = s.timeout_ms > UINT64_MAX / 2000000 ? UINT64_MAX / 2 : s.timeout_ms * 1000000;
        e->timeout_at = e->start_ns + t;
    }
    int fds[] = {e->status_fd, e->stdin_fd, e->out_fd[0], e->out_fd[1]};
    for (int i = 0; i < 4; i++)
        if (fds[i] >= 0)
            fcntl(fds[i], F_SETFL, O_NONBLOCK);
    e->next = execs;
    execs = e;
    n_live++;
    n_records++;
    if (!keep_request)
        spawn_req_free(&s);
    if (have_first) {
        on_record(e, &first);
        if (e->main_exited)
            close_fd(&e->status_fd); /* failed to start: a shim has nothing more to say (direct: none) */
    }
    if (e->eof_pending)
        write_stdin(e);
}

/* ---------------------------------------------------------------- shim reports */

static void on_record(struct exec *e, const struct shim_rec *r)
{
    switch (r->type) {
    case REC_SPAWNED: {
        e->pid = r->pid;
        struct msg m;
        msg_begin(&m, &g.out, R_SPAWNED, e->id);
        msg_u32(&m, (uint32_t)r->pid);
        msg_u32(&m, e->stdin_fd >= 0 ? STDIN_WINDOW : 0);
        msg_end(&m);
        if (e->killed)
            exec_kill(e);
        else if (e->pending_signal)
            kill(-e->pid, e->pending_signal);
        break;
    }
    case REC_EXIT:
        e->main_exited = 1;
        if (WIFSIGNALED(r->status)) {
            e->kind = EXIT_SIGNALED;
            e->code = WTERMSIG(r->status);
        } else {
            e->kind = EXIT_EXITED;
            e->code = WEXITSTATUS(r->status);
        }
        e->utime_us = r->utime_us;
        e->stime_us = r->stime_us;
        e->maxrss_kb = r->maxrss_kb;
        break;
    case REC_FAILED:
        e->main_exited = 1;
        e->kind = EXIT_FAILED_TO_START;
        e->code = r->status;
        memcpy(e->msg, r->msg, sizeof(e->msg));
        e->msg[sizeof(e->msg) - 1] = 0;
        break;
    default:
        logmsg("exec %u: unknown shim record %d", e->id, (int)r->type);
    }
}

static void read_status(struct exec *e)
{
    for (;;) {
        ssize_t n = read(e->status_fd, (char *)&e->rec + e->rec_len, sizeof(e->rec) - e->rec_len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EAGAIN)
            return;
        if (n <= 0) {
            close_fd(&e->status_fd);
            if (!e->main_exited) {
                /* The shim died without a report (killed from outside): say so rather than hang. */
                e->main_exited = 1;
                if (e->pid == 0) {
                    e->kind = EXIT_FAILED_TO_START;
                    e->code = EIO;
                    snprintf(e->msg, sizeof(e->msg), "the exec's shim process died");
                } else {
                    e->kind = EXIT_SIGNALED;
                    e->code = SIGKILL;
                }
            }
            maybe_end(e);
            return;
        }
        e->rec_len += (size_t)n;
        if (e->rec_len == sizeof(e->rec)) {
            e->rec_len = 0;
            on_record(e, &e->rec);
            if (e->main_exited) {
                close_fd(&e->status_fd);
                maybe_end(e);
                return;
            }
        }
    }
}

/* ---------------------------------------------------------------- stdio */

static uint8_t scratch[64 * 1024];

/* A read of this much from a pipe means it was full (64 KiB is a pipe's default size): the command writes
 * faster than its output leaves. */
#define PIPE_DEFAULT (64u * 1024u)
#define PIPE_STREAMING (1024u * 1024u)
/* Reads of one output per round at most: enough to move a streaming command's output in large steps, few
 * enough that other execs and the engine's input are served in between. */
#define READS_PER_ROUND 4
/* One spliced DATA frame at most: the engine keeps each frame's bytes as one array. */
#define SPLICE_MAX (256u * 1024u)

/* Whether output may move from an exec's pipe to the engine's with splice(2); cleared for good the first time
 * splice fails other than for a full pipe (a kernel or a gVisor without it for these two). */
static int splice_works = 1;

/* Moves n bytes (at least n are in the pipe fd) to the engine as one DATA frame without copying them through
 * the init: the frame's header is written, then the bytes are spliced from the exec's pipe into the engine's.
 * Whatever cannot go now (the engine's pipe is full) is read into the queue towards the engine, which is
 * empty when this starts, so the frame stays whole and in order. Returns n, or -1 (errno set) if nothing was
 * sent (the caller reads as usual). */
static ssize_t splice_output(struct exec *e, int i, int fd, size_t n)
{
    uint8_t hdr[FRAME_HDR + 1]; /* as msg_begin and msg_u8 write it */
    put32(hdr, (uint32_t)(FRAME_HDR - 4 + 1 + n));
    hdr[4] = R_DATA;
    put32(hdr + 5, e->id);
    hdr[FRAME_HDR] = (uint8_t)(i + 1);
    /* Room for the whole frame in the (empty) queue first: once the header is out, the rest must follow. */
    if (buf_reserve(&g.out, sizeof(hdr) + n) < 0)
        return -1;
    ssize_t w = write(1, hdr, sizeof(hdr));
    if (w <= 0)
        return -1; /* the engine's pipe is full (or broken): nothing of the frame went */
    size_t moved = 0;
    if ((size_t)w == sizeof(hdr)) {
        ssize_t s = splice(fd, NULL, 1, NULL, n, SPLICE_F_NONBLOCK | SPLICE_F_MOVE);
        if (s > 0)
            moved = (size_t)s;
        else if (s < 0 && errno != EAGAIN && errno != EINTR)
            splice_works = 0;
    } else {
        memcpy(g.out.data + g.out.len, hdr + w, sizeof(hdr) - (size_t)w);
        g.out.len += sizeof(hdr) - (size_t)w;
    }
    if (moved < n) {
        /* the rest of the frame follows through the queue, read as it is in the pipe */
        size_t rest = n - moved;
        ssize_t r = read(fd, g.out.data + g.out.len, rest);
        if (r != (ssize_t)rest) {
            logmsg("exec %u: %zd of the %zu bytes counted in its pipe could be read", e->id, r, rest);
            die_all(1); /* the frame on the channel would be cut: nothing sane can follow it */
        }
        g.out.len += rest;
    }
    e->out_sent[i] += n;
    e->out_win[i] -= n;
    return (ssize_t)n;
}

/* One read of an output into the queue towards the engine (or discarded past its cap); the read's result,
 * and in *asked what it asked for (0 when it did not read: no window, or no room in the queue). */
static ssize_t read_output_once(struct exec *e, int i, uint64_t *asked)
{
    int fd = e->out_fd[i];
    ssize_t n;
    *asked = 0;
    if (e->out_sent[i] >= e->out_cap[i]) {
        /* Past the cap: read and discard so that the command is not blocked. */
        n = read(fd, scratch, sizeof(scratch));
        if (n > 0)
            e->out_trunc[i] = 1;
        *asked = sizeof(scratch);
        return n;
    }
    uint64_t want = e->out_win[i];
    if (want > CHUNK)
        want = CHUNK;
    if (want == 0) {
        errno = EAGAIN;
        return -1;
    }
    /* A streaming pipe's output is spliced when nothing is queued before it; otherwise, and for what is not in
     * the pipe yet (its end included), it is read. */
    int avail = 0;
    if (splice_works && e->out_grown[i] && !e->pty && !g.out_broken && buf_used(&g.out) == 0
            && ioctl(fd, FIONREAD, &avail) == 0 && avail > 0) {
        uint64_t take = e->out_win[i] < (uint64_t)avail ? e->out_win[i] : (uint64_t)avail;
        if (take > SPLICE_MAX)
            take = SPLICE_MAX;
        if (take <= e->out_cap[i] - e->out_sent[i]) {
            n = splice_output(e, i, fd, (size_t)take);
            if (n > 0) {
                *asked = take;
                return n;
            }
        }
    }
    struct msg m;
    msg_begin(&m, &g.out, R_DATA, e->id);
    msg_u8(&m, (uint8_t)(i + 1));
    uint8_t *p = msg_reserve(&m, (size_t)want);
    if (!p) {
        msg_abort(&m);
        errno = EAGAIN;
        return -1;
    }
    n = read(fd, p, (size_t)want);
    uint64_t keep = n > 0 ? (uint64_t)n : 0;
    uint64_t room = e->out_cap[i] - e->out_sent[i];
    if (keep > room) {
        keep = room;
        e->out_trunc[i] = 1;
    }
    msg_unreserve(&m, (size_t)(want - keep));
    if (keep > 0) {
        e->out_sent[i] += keep;
        e->out_win[i] -= keep;
        msg_end(&m);
    } else {
        msg_abort(&m);
    }
    *asked = want;
    return n;
}

static void read_output(struct exec *e, int i)
{
    ssize_t n;
    for (int r = 1;; r++) {
        uint64_t asked;
        n = read_output_once(e, i, &asked);
        if (asked == 0)
            return; /* nothing read: no window, or no room in the queue (and earlier reads, if any, got data) */
        if (n >= (ssize_t)PIPE_DEFAULT && !e->out_grown[i]) {
            /* A full pipe: this command streams. A larger pipe lets it write on while its output leaves, in
             * fewer rounds per MiB. Only streaming outputs grow: all of a user's pipes count against
             * /proc/sys/fs/pipe-user-pages-soft, beyond which new ones get a single page. Failure (a
             * terminal, or that limit reached) leaves it as it is. */
            e->out_grown[i] = 1;
            (void)fcntl(e->out_fd[i], F_SETPIPE_SZ, PIPE_STREAMING);
        }
        /* Read on while a read filled what it asked for (more may be waiting) and the window and the queue
         * allow: each such read saves a poll, and shares one write towards the engine. */
        if (n <= 0 || (uint64_t)n < asked || r >= READS_PER_ROUND || !out_has_room()
                || (e->out_sent[i] < e->out_cap[i] && e->out_win[i] == 0))
            break;
    }
    /* A pty's master may never read EIO (gVisor): with its exec's tree gone, nothing more can come. */
    int drained = e->pty_orphaned && n < 0 && errno == EAGAIN;
    if (n == 0 || drained || (n < 0 && errno != EAGAIN && errno != EINTR)) {
        close_fd(&e->out_fd[i]);
        maybe_end(e);
    }
}

static void write_stdin(struct exec *e)
{
    size_t used = buf_used(&e->stdin_buf);
    if (used > 0) {
        ssize_t n = write(e->stdin_fd, buf_start(&e->stdin_buf), used);
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
            return;
        if (n < 0) {
            /* EPIPE (EIO for a terminal): the command closed its stdin. Drop what is buffered, give the
             * window back. */
            buf_clear(&e->stdin_buf);
            send_window(e->id, 0, (uint32_t)used);
            close_fd(&e->stdin_fd);
            return;
        }
        buf_consume(&e->stdin_buf, (size_t)n);
        send_window(e->id, 0, (uint32_t)n);
    }
    if (buf_used(&e->stdin_buf) == 0) {
        buf_clear(&e->stdin_buf);
        /* A terminal's "close" types Ctrl-D after what was typed before it; the terminal stays open. */
        while (e->eof_pending > 0 && e->stdin_fd >= 0) {
            ssize_t n = write(e->stdin_fd, "\x04", 1);
            if (n == 1) {
                e->eof_pending--;
            } else if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
                return;
            } else {
                e->eof_pending = 0;
                close_fd(&e->stdin_fd);
            }
        }
        if (e->stdin_close_req)
            close_fd(&e->stdin_fd);
    }
}

void exec_stdin(uint32_t id, const uint8_t *p, size_t n)
{
    struct exec *e = find(id);
    if (!e)
        return;
    if (e->stdin_fd < 0 || e->stdin_close_req) {
        /* Nowhere to write: give the window back so the engine's writer is never stuck. */
        if (n)
            send_window(id, 0, (uint32_t)n);
        return;
    }
    size_t room = STDIN_WINDOW - buf_used(&e->stdin_buf);
    if (n > room) {
        logmsg("exec %u: stdin past the window (%zu > %zu), excess dropped", id, n, room);
        send_window(id, 0, (uint32_t)(n - room));
        n = room;
    }
    if (buf_append(&e->stdin_buf, p, n) < 0) {
        send_window(id, 0, (uint32_t)n);
        return;
    }
    /* Write it now rather than after another poll round for POLLOUT: the pipe almost always has room,
     * and on runsc every poll round is a trip through the Sentry. What does not fit waits for POLLOUT. */
    write_stdin(e);
}

void exec_stdin_close(uint32_t id)
{
    struct exec *e = find(id);
    if (!e)
        return;
    if (e->pty) {
        if (e->stdin_fd >= 0) {
            e->eof_pending++;
            write_stdin(e);
        }
        return;
    }
    e->stdin_close_req = 1;
    if (buf_used(&e->stdin_buf) == 0)
        close_fd(&e->stdin_fd);
}

/* After a RESIZE the size is checked at these offsets (ms): a program may have read the old size just before
 * and write it back just after. readline does exactly that on every line it reads (rltty.c set_winsize: TIOCGWINSZ,
 * then TIOCSWINSZ with what it read), so a resize that lands between the two is undone, and the terminal keeps
 * the old size until the next resize. Under gVisor's ptrace platform the two calls are far enough apart that
 * this happens to a resize sent while bash prints its prompt. */
static const unsigned RESIZE_CHECK_MS[] = {50, 250, 1000};

static int same_size(const struct winsize *a, const struct winsize *b)
{
    return a->ws_row == b->ws_row && a->ws_col == b->ws_col;
}

/* Sets the terminal's size and tells its foreground process group (SIGWINCH), as a terminal emulator does. Linux
 * signals the group itself when the size changes; gVisor (this release) does not, and full-screen programs
 * (vim, top, less) would never redraw. A second SIGWINCH is harmless: it does not queue, and its handlers read
 * the size again. */
static void apply_size(struct exec *e, const struct winsize *ws)
{
    if (ioctl(e->out_fd[0], TIOCSWINSZ, ws) < 0) {
        logmsg("exec %u: TIOCSWINSZ: %s", e->id, strerror(errno));
        return;
    }
    pid_t pgrp = 0;
    if (ioctl(e->out_fd[0], TIOCGPGRP, &pgrp) < 0 || pgrp <= 1)
        pgrp = e->pid; /* the command leads its session and first process group */
    if (pgrp > 1)
        kill(-pgrp, SIGWINCH);
}

void exec_resize(uint32_t id, uint32_t rows, uint32_t cols)
{
    struct exec *e = find(id);
    if (!e || !e->pty || e->out_fd[0] < 0)
        return;
    if (rows < 1 || rows > 65535 || cols < 1 || cols > 65535) {
        logmsg("exec %u: RESIZE to %ux%u ignored", id, cols, rows);
        return;
    }
    struct winsize ws = {(unsigned short)rows, (unsigned short)cols, 0, 0};
    struct winsize was;
    if (ioctl(e->out_fd[0], TIOCGWINSZ, &was) < 0) {
        logmsg("exec %u: TIOCGWINSZ: %s", id, strerror(errno));
        return;
    }
    if (same_size(&was, &ws) && !e->size_check_at)
        return;
    apply_size(e, &ws);
    if (!same_size(&was, &ws)) /* else: the same size again while checks run; the one it replaced stays */
        e->size_was = was;
    e->size_want = ws;
    e->size_checks = 0;
    e->size_check_at = now_ns() + RESIZE_CHECK_MS[0] * 1000000ull;
}

/* A check after a RESIZE (see RESIZE_CHECK_MS): the size went back to exactly the one the resize replaced, so a
 * stale write-back undid it: set it again. Any other size is a program's own choice (stty rows ...), and kept. */
static void check_size(struct exec *e, uint64_t now)
{
    struct winsize now_ws;
    if (e->out_fd[0] < 0 || ioctl(e->out_fd[0], TIOCGWINSZ, &now_ws) < 0) {
        e->size_check_at = 0;
        return;
    }
    if (same_size(&now_ws, &e->size_was) && !same_size(&now_ws, &e->size_want))
        apply_size(e, &e->size_want);
    else if (!same_size(&now_ws, &e->size_want)) {
        e->size_check_at = 0;
        return;
    }
    int n = ++e->size_checks;
    e->size_check_at = n < (int)(sizeof(RESIZE_CHECK_MS) / sizeof(RESIZE_CHECK_MS[0]))
                               ? now + (RESIZE_CHECK_MS[n] - RESIZE_CHECK_MS[n - 1]) * 1000000ull
                               : 0;
}

void exec_signal(uint32_t id, uint32_t sig, uint8_t scope)
{
    struct exec *e = find(id);
    if (!e || e->ended)
        return;
    if (scope == 1) {
        e->killed = 1;
        exec_kill(e);
        return;
    }
    if (sig == 0 || sig > 64)
        return;
    /* The group outlives its leader while members remain, and the kernel never reuses a pid that is
     * still a process group id: kill(-pid) is safe until the exec ends. */
    if (e->pid == 0)
        e->pending_signal = (int)sig;
    else
        kill(-e->pid, (int)sig);
}

int exec_window(uint32_t id, uint8_t stream, uint32_t inc)
{
    struct exec *e = find(id);
    if (!e)
        return -1;
    if (stream == 1 || stream == 2) {
        uint64_t *w = &e->out_win[stream - 1];
        *w = *w + inc > (1ull << 40) ? (1ull << 40) : *w + inc;
    }
    return 0;
}

void exec_release(uint32_t id)
{
    struct exec *e = find(id);
    if (!e)
        return;
    if (e->ended) {
        exec_free(e);
        return;
    }
    /* Released while running: the engine is no longer interested. Kill it; free it once it ends. */
    e->released = 1;
    e->killed = 1;
    exec_kill(e);
    /* Nobody reads its output any more: open the windows so the pipes drain to EOF. */
    e->out_cap[0] = e->out_cap[1] = 0;
}

void exec_reap(void)
{
    for (;;) {
        int st;
        struct rusage ru;
        pid_t w = wait4(-1, &st, WNOHANG, &ru);
        if (w <= 0)
            return;
        shim_mem_reaped(w);
        for (struct exec *e = execs; e; e = e->next) {
            if (e->shim_pid == w && e->shim_alive) {
                e->shim_alive = 0;
                e->pty_orphaned = e->pty;
                break;
            }
            if (e->direct && e->direct_pid == w) {
                /* Its orphans are the init's now, as they were with a shim under gVisor. */
                e->direct_pid = 0;
                e->pty_orphaned = e->pty;
                if (!e->main_exited) {
                    struct shim_rec r;
                    exit_record(&r, w, st, &ru);
                    on_record(e, &r);
                    maybe_end(e); /* may free e */
                }
                break;
            }
        }
        /* Anything else is an orphan reparented to PID 1: reaped silently. */
    }
}

void exec_pty_drain(void)
{
    /* An orphaned pty's master is read until it is empty although poll() may never say so (gVisor's does
     * not report a hangup), as far as its window and the queue to the engine allow; read_output ends it. */
    int room = out_has_room();
    struct exec *next;
    for (struct exec *e = execs; e; e = next) {
        next = e->next; /* read_output may end and free e */
        if (!e->pty_orphaned || e->out_fd[0] < 0)
            continue;
        if (e->out_sent[0] >= e->out_cap[0] || (room && e->out_win[0] > 0))
            read_output(e, 0);
    }
}

uint64_t exec_next_timer(void)
{
    uint64_t t = 0;
    for (struct exec *e = execs; e; e = e->next) {
        if (!e->ended && e->timeout_at && !e->timed_out && (t == 0 || e->timeout_at < t))
            t = e->timeout_at;
        if (!e->ended && e->size_check_at && (t == 0 || e->size_check_at < t))
            t = e->size_check_at;
    }
    return t;
}

void exec_timers(uint64_t now)
{
    for (struct exec *e = execs; e; e = e->next) {
        if (!e->ended && e->size_check_at && now >= e->size_check_at)
            check_size(e, now);
        if (e->ended || !e->timeout_at || e->timed_out || now < e->timeout_at)
            continue;
        e->timed_out = 1;
        exec_kill(e);
    }
}

/* ---------------------------------------------------------------- poll glue */

enum { K_STATUS = 1, K_STDIN = 2, K_OUT1 = 3, K_OUT2 = 4 };

int exec_streaming(void)
{
    for (struct exec *e = execs; e; e = e->next)
        if ((e->out_grown[0] && e->out_fd[0] >= 0) || (e->out_grown[1] && e->out_fd[1] >= 0))
            return 1;
    return 0;
}

int exec_poll_count(void)
{
    return n_records * 4;
}

int exec_poll_add(struct pollfd *pfd, void **tags, int *kinds, int n, int max)
{
    int room = out_has_room();
    for (struct exec *e = execs; e && n + 4 <= max; e = e->next) {
        if (e->status_fd >= 0) {
            pfd[n] = (struct pollfd){e->status_fd, POLLIN, 0};
            tags[n] = e;
            kinds[n++] = K_STATUS;
        }
        if (e->stdin_fd >= 0 && (buf_used(&e->stdin_buf) > 0 || e->eof_pending)) {
            pfd[n] = (struct pollfd){e->stdin_fd, POLLOUT, 0};
            tags[n] = e;
            kinds[n++] = K_STDIN;
        }
        for (int i = 0; i < 2; i++) {
            if (e->out_fd[i] < 0)
                continue;
            int discarding = e->out_sent[i] >= e->out_cap[i];
            if (discarding || (room && e->out_win[i] > 0)) {
                pfd[n] = (struct pollfd){e->out_fd[i], POLLIN, 0};
                tags[n] = e;
                kinds[n++] = K_OUT1 + i;
            }
        }
    }
    return n;
}

void exec_poll_done(void *tag, int kind, short revents)
{
    struct exec *e = tag;
    /* An earlier handler in this round may have freed e (released and ended): check it is still ours. */
    struct exec *x = execs;
    while (x && x != e)
        x = x->next;
    if (!x || !revents)
        return;
    switch (kind) {
    case K_STATUS:
        if (e->status_fd >= 0)
            read_status(e);
        break;
    case K_STDIN:
        if (e->stdin_fd >= 0)
            write_stdin(e);
        break;
    case K_OUT1:
    case K_OUT2:
        if (e->out_fd[kind - K_OUT1] >= 0)
            read_output(e, kind - K_OUT1);
        break;
    }
}
