/* paddock-init: PID 1 of every Paddock sandbox.
 *
 *   paddock-init --uid=N --gid=N --workdir=/abs/path [--tenant-caps=0xMASK] [--seccomp-fd=N]
 *
 * fd 0: engine->init byte stream, fd 1: init->engine byte stream, fd 2: host log file; with --seccomp-fd, fd N:
 * the sandbox's seccomp filter, compiled once by the engine (paddock-seccomp), which this process installs
 * before anything else, as runc would have just before executing it.
 * One thread, one poll() loop; every buffer is bounded; the protocol is docs/PROTOCOL.md. */
#include "init.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <net/if.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

struct init_state g;

static uint8_t inbuf[64 * 1024];
static size_t inlen;
static struct assembler asmb;
static int sig_fd = -1;      /* signalfd, or the read end of the self-pipe */
static int sig_pipe_w = -1;  /* self-pipe write end when signalfd is unavailable */

/* ---------------------------------------------------------------- logging */

void logmsg(const char *fmt, ...)
{
    /* At most 50 lines per 10 s and 1 MiB in total: tenant code that provokes errors in a loop must
     * not fill the host's disk. */
    static uint64_t window_start;
    static int lines;
    static size_t total;
    static int suppressed;
    uint64_t now = now_ns();
    if (now - window_start > 10ull * 1000000000ull) {
        window_start = now;
        lines = 0;
    }
    if (lines >= 50 || total > (1u << 20)) {
        suppressed++;
        return;
    }
    char b[512];
    int off = snprintf(b, sizeof(b), "paddock-init[%d]: ", (int)getpid());
    if (suppressed) {
        off += snprintf(b + off, sizeof(b) - (size_t)off, "(%d messages suppressed) ", suppressed);
        suppressed = 0;
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(b + off, sizeof(b) - (size_t)off, fmt, ap);
    va_end(ap);
    size_t l = strnlen(b, sizeof(b) - 2);
    b[l++] = '\n';
    lines++;
    total += l;
    ssize_t w = write(2, b, l);
    (void)w;
}

uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int out_has_room(void)
{
    return buf_used(&g.out) < OUT_SOFT;
}

/* ---------------------------------------------------------------- small replies */

void send_window(uint32_t chan, uint8_t stream, uint32_t inc)
{
    struct msg m;
    msg_begin(&m, &g.out, R_WINDOW, chan);
    msg_u8(&m, stream);
    msg_u32(&m, inc);
    msg_end(&m);
}

void send_f_error(uint32_t chan, int err, const char *what)
{
    const char *s = what ? what : strerror(err);
    struct msg m;
    msg_begin(&m, &g.out, R_F_ERROR, chan);
    msg_u32(&m, (uint32_t)err);
    msg_bytes(&m, s, strlen(s));
    msg_end(&m);
}

void send_f_ok(uint32_t chan, uint32_t window)
{
    struct msg m;
    msg_begin(&m, &g.out, R_F_OK, chan);
    msg_u32(&m, window);
    msg_end(&m);
}

void send_f_end(uint32_t chan)
{
    struct msg m;
    msg_begin(&m, &g.out, R_F_END, chan);
    msg_end(&m);
}

/* ---------------------------------------------------------------- output towards the engine */

static void flush_out(void)
{
    while (buf_used(&g.out) > 0) {
        ssize_t n = write(1, buf_start(&g.out), buf_used(&g.out));
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EAGAIN)
            return;
        if (n <= 0) {
            /* No reader (the engine died): whatever is queued is lost anyway; a new engine resyncs on
             * its HELLO_ACK. Drop output until then. */
            if (!g.out_broken)
                logmsg("engine channel broken (%s); output dropped until the next HELLO", strerror(errno));
            g.out_broken = 1;
            buf_clear(&g.out);
            return;
        }
        buf_consume(&g.out, (size_t)n);
    }
    /* Written out. A large queue is given back so that an idle init stays small, but not while output
     * streams: on these machines touching fresh pages costs more than the copy into them. */
    if (!exec_streaming() && !files_busy())
        buf_clear(&g.out);
}

/* ---------------------------------------------------------------- the end */

static void reap_all(uint64_t budget_ns)
{
    uint64_t until = now_ns() + budget_ns;
    while (now_ns() < until) {
        pid_t w = waitpid(-1, NULL, WNOHANG);
        if (w < 0 && errno == ECHILD)
            return;
        if (w <= 0) {
            struct timespec ts = {0, 5 * 1000 * 1000};
            nanosleep(&ts, NULL);
        }
    }
}

void die_all(int code)
{
    logmsg("killing everything and exiting (%d)", code);
    exec_kill_all();
    /* As PID 1 of its namespace, kill(-1) reaches every process in the sandbox (and nothing outside).
     * Never do it otherwise: outside a pid namespace it would mean the whole machine. */
    if (g.is_pid1)
        kill(-1, SIGKILL);
    files_abort_all();
    /* Let the engine see what is queued (e.g. EXITs), briefly. */
    if (!g.out_broken) {
        uint64_t until = now_ns() + 200ull * 1000000ull;
        while (buf_used(&g.out) > 0 && now_ns() < until && !g.out_broken) {
            struct pollfd p = {1, POLLOUT, 0};
            poll(&p, 1, 20);
            flush_out();
        }
    }
    reap_all(2ull * 1000000000ull);
    _exit(code);
}

/* ---------------------------------------------------------------- messages from the engine */

static void on_hello(const uint8_t *p, size_t n)
{
    struct rd r;
    rd_init(&r, p, n);
    uint32_t version = rd_u32(&r);
    uint8_t nonce[16];
    rd_raw(&r, nonce, 16);
    uint32_t flags = rd_u32(&r);
    if (r.err) {
        logmsg("malformed HELLO ignored");
        return;
    }
    if (version != PDK_VERSION)
        logmsg("HELLO version %u, speaking %u", version, PDK_VERSION);
    g.hello_seen = 1;
    g.orphan_die = (flags & HELLO_ORPHAN_DIE) != 0;
    g.out_broken = 0;
    /* A new engine does not know the old one's file requests (and may reuse their ids). Execs stay:
     * they are adopted, with their windows. */
    files_abort_all();
    enc_hello_ack(&g.out, nonce, PADDOCK_BUILD_ID);
}

static void dispatch(const struct frame *f)
{
    struct rd r;
    rd_init(&r, f->payload, f->len);
    if (f->type == M_HELLO) {
        on_hello(f->payload, f->len);
        return;
    }
    if (!g.hello_seen) {
        logmsg("message 0x%02x before HELLO ignored", f->type);
        return;
    }
    switch (f->type) {
    case M_SPAWN:
        exec_spawn(f->chan, f->payload, f->len);
        break;
    case M_STDIN:
        exec_stdin(f->chan, f->payload, f->len);
        break;
    case M_STDIN_CLOSE:
        exec_stdin_close(f->chan);
        break;
    case M_SIGNAL: {
        uint32_t sig = rd_u32(&r);
        uint8_t scope = rd_u8(&r);
        if (!r.err)
            exec_signal(f->chan, sig, scope);
        break;
    }
    case M_RESIZE: {
        uint32_t rows = rd_u32(&r);
        uint32_t cols = rd_u32(&r);
        if (!r.err)
            exec_resize(f->chan, rows, cols);
        break;
    }
    case M_WINDOW: {
        uint8_t stream = rd_u8(&r);
        uint32_t inc = rd_u32(&r);
        if (!r.err && exec_window(f->chan, stream, inc) < 0)
            files_window(f->chan, stream, inc);
        break;
    }
    case M_DEADLINE:
        g.deadline_ns = rd_u64(&r);
        if (r.err)
            g.deadline_ns = 0;
        break;
    case M_DEADLINE_IN: {
        /* Relative, so that it holds whatever this init's CLOCK_MONOTONIC is: under gVisor it is the
         * Sentry's, which starts near zero, not the engine's. */
        uint64_t in = rd_u64(&r);
        uint64_t now = now_ns();
        g.deadline_ns = r.err || in == 0 ? 0 : (in > UINT64_MAX - now ? UINT64_MAX : now + in);
        break;
    }
    case M_PING: {
        /* Echoed; an over-long payload is cut to what one init->engine frame can carry. */
        size_t n = f->len > (1u << 20) ? (1u << 20) : f->len;
        struct msg m;
        msg_begin(&m, &g.out, R_PONG, 0);
        msg_raw(&m, f->payload, n);
        msg_end(&m);
        break;
    }
    case M_RELEASE:
        exec_release(f->chan);
        break;
    case M_SHUTDOWN:
        die_all(0);
    case M_F_READ:
    case M_F_WRITE_OPEN:
    case M_F_WRITE_DATA:
    case M_F_WRITE_END:
    case M_F_WRITE_ABORT:
    case M_F_LIST:
    case M_F_STAT:
    case M_F_MKDIR:
    case M_F_REMOVE:
    case M_F_MOVE:
    case M_F_CANCEL:
        files_handle(f->type, f->chan, f->payload, f->len);
        break;
    default:
        logmsg("unknown message type 0x%02x ignored", f->type);
    }
}

static void on_too_big(const struct frame *f)
{
    logmsg("message 0x%02x on %u over %u bytes dropped", f->type, f->chan, MSG_MAX);
    if (!g.hello_seen)
        return;
    if (f->type == M_SPAWN)
        exec_spawn_too_big(f->chan);
    else if (f->type >= M_F_READ && f->type <= M_F_CANCEL)
        files_too_big(f->type, f->chan);
}

static void engine_gone(void)
{
    g.in_eof = 1;
    inlen = 0;
    asm_reset(&asmb);
    if (g.orphan_die) {
        logmsg("engine channel closed with ORPHAN_DIE");
        die_all(1);
    }
    logmsg("engine channel closed; waiting for a new engine");
}

static void read_input(void)
{
    ssize_t n = read(0, inbuf + inlen, sizeof(inbuf) - inlen);
    if (n < 0) {
        if (errno != EAGAIN && errno != EINTR)
            engine_gone();
        return;
    }
    if (n == 0) {
        engine_gone();
        return;
    }
    inlen += (size_t)n;
    size_t pos = 0;
    while (pos < inlen) {
        long fl = frame_split(inbuf + pos, inlen - pos, IN_FRAME_MAX);
        if (fl == 0)
            break;
        if (fl < 0) {
            /* Frames are written atomically, so this is a broken engine, not a torn write. Drop what
             * we have and look for frames again from the next read. */
            logmsg("protocol error: frame length %u out of bounds; input discarded", be32(inbuf + pos));
            asm_reset(&asmb);
            inlen = 0;
            return;
        }
        struct frame f;
        enum asm_result res = asm_feed(&asmb, inbuf + pos, (size_t)fl, &f);
        pos += (size_t)fl;
        if (res == ASM_MESSAGE) {
            int assembled = f.payload == buf_start(&asmb.msg) && buf_used(&asmb.msg) > 0;
            dispatch(&f);
            if (assembled)
                asm_reset(&asmb); /* give the (up to 2 MiB) reassembly buffer back */
        } else if (res == ASM_TOO_BIG) {
            on_too_big(&f);
        }
    }
    memmove(inbuf, inbuf + pos, inlen - pos);
    inlen -= pos;
}

/* ---------------------------------------------------------------- start-up */

static void sigchld_handler(int sig)
{
    (void)sig;
    int saved = errno;
    ssize_t w = write(sig_pipe_w, "x", 1);
    (void)w;
    errno = saved;
}

static void setup_signals(void)
{
    signal(SIGPIPE, SIG_IGN);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGCHLD);
    sigprocmask(SIG_BLOCK, &set, NULL);
    sig_fd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
    if (sig_fd >= 0)
        return;
    /* No signalfd (seccomp?): a self-pipe written by a SIGCHLD handler. */
    logmsg("signalfd failed (%s); using a self-pipe", strerror(errno));
    int p[2];
    if (pipe2(p, O_CLOEXEC | O_NONBLOCK) < 0) {
        logmsg("pipe failed: %s", strerror(errno));
        exit(1);
    }
    sig_fd = p[0];
    sig_pipe_w = p[1];
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = sigchld_handler;
    sa.sa_flags = SA_RESTART | SA_NOCLDSTOP;
    sigaction(SIGCHLD, &sa, NULL);
    sigprocmask(SIG_UNBLOCK, &set, NULL);
}

static void loopback_up(void)
{
    int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (s < 0)
        return;
    struct ifreq ifr;
    memset(&ifr, 0, sizeof(ifr));
    strcpy(ifr.ifr_name, "lo");
    if (ioctl(s, SIOCGIFFLAGS, &ifr) == 0 && !(ifr.ifr_flags & IFF_UP)) {
        ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
        if (ioctl(s, SIOCSIFFLAGS, &ifr) < 0)
            logmsg("bringing up lo failed: %s", strerror(errno));
    }
    close(s);
}

/* CAP_NET_ADMIN was only needed for the loopback: drop it from every set, with raw syscalls. */
/* Drops a capability (below 32) the init needed only to start: from every set, for good. */
static void drop_cap(int cap, const char *name)
{
    struct { uint32_t version; int pid; } h = {0x20080522, 0};
    struct { uint32_t eff, perm, inh; } d[2];
    if (syscall(SYS_capget, &h, d) == 0) {
        uint32_t bit = 1u << cap;
        d[0].eff &= ~bit;
        d[0].perm &= ~bit;
        d[0].inh &= ~bit;
        if (syscall(SYS_capset, &h, d) < 0)
            logmsg("capset without %s failed: %s", name, strerror(errno));
    }
    /* Unprivileged (a restricted pod) it holds none to drop: only a capability still in the set is dropped. */
    if (prctl(PR_CAPBSET_READ, cap, 0, 0, 0) == 1 && prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0)
        logmsg("dropping %s from the bounding set failed: %s", name, strerror(errno));
}

static int parse_u32(const char *s, uint32_t *out)
{
    char *end;
    errno = 0;
    unsigned long v = strtoul(s, &end, 10);
    if (errno || end == s || *end || v > UINT32_MAX - 1)
        return -1;
    *out = (uint32_t)v;
    return 0;
}

static void usage(void)
{
    logmsg("usage: paddock-init --uid=N --gid=N --workdir=/abs/path [--tenant-caps=0xMASK] [--seccomp-fd=N]");
    exit(2);
}

/* The kernel's classic BPF program (linux/filter.h), declared here: musl's headers carry no linux/ directory. */
struct bpf_insn {
    uint16_t code;
    uint8_t jt;
    uint8_t jf;
    uint32_t k;
};
struct bpf_prog {
    unsigned short len;
    struct bpf_insn *filter;
};
#define SECCOMP_MODE_FILTER 2
#define BPF_MAXINSNS 4096

/* Installs the filter read from fd (then closed), with the call runc makes for a profile without flags. Any
 * failure ends the init: a sandbox never starts without its filter. */
static void install_seccomp(int fd)
{
    static struct bpf_insn prog[BPF_MAXINSNS + 1];
    size_t have = 0;
    for (;;) {
        ssize_t r = read(fd, (char *)prog + have, sizeof(prog) - have);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            logmsg("seccomp filter: read: %s", strerror(errno));
            exit(3);
        }
        if (r == 0)
            break;
        have += (size_t)r;
        if (have == sizeof(prog)) {
            logmsg("seccomp filter: longer than %d instructions", BPF_MAXINSNS);
            exit(3);
        }
    }
    close(fd);
    if (have == 0 || have % sizeof(struct bpf_insn) != 0) {
        logmsg("seccomp filter: %zu bytes is not a program", have);
        exit(3);
    }
    struct bpf_prog p = {(unsigned short)(have / sizeof(struct bpf_insn)), prog};
    if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &p, 0, 0) != 0) {
        logmsg("seccomp filter: %s", strerror(errno));
        exit(3);
    }
}

static void make_workdir(void)
{
    char p[sizeof(g.workdir)];
    strcpy(p, g.workdir);
    fs_enter();
    for (char *s = p + 1;; s++) {
        if (*s == '/' || *s == 0) {
            char c = *s;
            *s = 0;
            mkdir(p, 0755);
            *s = c;
            if (!c)
                break;
        }
    }
    fs_leave();
}

/* The environment the runtime started the init with (PATH, HOME) is nobody's business inside, yet
 * /proc/1/environ shows its bytes wherever /proc/1 is readable (gVisor): they are overwritten where the
 * kernel reads them from, and the environment emptied. Nothing in the init reads it; every command gets
 * the environment of its exec request. */
static void wipe_environment(void)
{
    extern char **environ;
    for (char **e = environ; e && *e; e++)
        memset(*e, 0, strlen(*e));
    clearenv();
}

int main(int argc, char **argv)
{
    uint32_t uid = UINT32_MAX, gid = UINT32_MAX, seccomp_fd = UINT32_MAX;
    for (int i = 1; i < argc; i++) {
        if (!strncmp(argv[i], "--uid=", 6) && parse_u32(argv[i] + 6, &uid) == 0)
            continue;
        if (!strncmp(argv[i], "--gid=", 6) && parse_u32(argv[i] + 6, &gid) == 0)
            continue;
        if (!strncmp(argv[i], "--tenant-caps=0x", 16) && argv[i][16]) {
            char *end;
            errno = 0;
            g.tenant_caps = strtoull(argv[i] + 16, &end, 16);
            if (errno == 0 && *end == '\0')
                continue;
        }
        if (!strncmp(argv[i], "--seccomp-fd=", 13) && parse_u32(argv[i] + 13, &seccomp_fd) == 0 &&
            seccomp_fd > 2 && seccomp_fd < 1024)
            continue;
        if (!strncmp(argv[i], "--workdir=", 10) && argv[i][10] == '/' &&
            strlen(argv[i] + 10) < sizeof(g.workdir)) {
            strcpy(g.workdir, argv[i] + 10);
            continue;
        }
        usage();
    }
    if (uid == UINT32_MAX || gid == UINT32_MAX || !g.workdir[0])
        usage();
    if (seccomp_fd != UINT32_MAX)
        install_seccomp((int)seccomp_fd);
    g.uid = uid;
    g.gid = gid;
    g.is_pid1 = getpid() == 1;
    wipe_environment();
    buf_init(&g.out, OUT_MAX);
    asm_init(&asmb);

    /* Nothing but the channel and the log may be open (no leaked fds reach a command). INT32_MAX, not ~0u, as
     * the bound: both mean every descriptor on Linux, but gVisor refuses a bound above INT32_MAX (EINVAL), and
     * the fallback below was then 1021 close calls, about 12 ms of every runsc sandbox's start. */
    if (syscall(SYS_close_range, 3u, (unsigned)INT32_MAX, 0u) < 0)
        for (int fd = 3; fd < 1024; fd++)
            close(fd);
    prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
    /* Unprivileged (a Kubernetes pod's init runs as the sandbox user, with no capabilities) it keeps its groups. */
    if (setgroups(0, NULL) < 0 && geteuid() == 0)
        logmsg("setgroups: %s", strerror(errno));
    umask(022);
    setup_signals();
    loopback_up();
    drop_cap(12, "CAP_NET_ADMIN");
    /* Under gVisor the spec grants CAP_DAC_OVERRIDE for this one directory in the Sentry's root cgroup;
     * only an image build's root commands keep it (--tenant-caps). */
    exec_tracking_init();
    if (!(g.tenant_caps & (1ull << 1)))
        drop_cap(1, "CAP_DAC_OVERRIDE");
    commands_prepare();
    /* A bigger pipe towards the engine means fewer wake-ups; failure (not a pipe, or above
     * /proc/sys/fs/pipe-max-size) is fine. */
    (void)fcntl(1, F_SETPIPE_SZ, 1 << 20);
    fcntl(0, F_SETFL, fcntl(0, F_GETFL) | O_NONBLOCK);
    fcntl(1, F_SETFL, fcntl(1, F_GETFL) | O_NONBLOCK);
    if (chdir("/") < 0)
        logmsg("chdir /: %s", strerror(errno));
    make_workdir();
    files_init();

    struct pollfd *pfd = NULL;
    void **tags = NULL;
    int *kinds = NULL;
    int cap = 0;
    uint64_t last_eof_check = 0;
    for (;;) {
        uint64_t now = now_ns();
        if (g.deadline_ns && now >= g.deadline_ns) {
            logmsg("deadline reached");
            die_all(124);
        }
        exec_timers(now);
        exec_pty_drain();
        int more = files_pump();

        int need = 3 + exec_poll_count();
        if (need > cap) {
            int ncap = need + 64;
            struct pollfd *np = realloc(pfd, (size_t)ncap * sizeof(*pfd));
            if (np)
                pfd = np;
            void **nt = realloc(tags, (size_t)ncap * sizeof(*tags));
            if (nt)
                tags = nt;
            int *nk = realloc(kinds, (size_t)ncap * sizeof(*kinds));
            if (nk)
                kinds = nk;
            if (np && nt && nk)
                cap = ncap;
        }
        int n = 0;
        int in_ok = !g.in_eof && buf_used(&g.out) < OUT_PAUSE_INPUT && inlen < sizeof(inbuf);
        pfd[n++] = (struct pollfd){in_ok ? 0 : -1, POLLIN, 0};
        pfd[n++] = (struct pollfd){buf_used(&g.out) > 0 && !g.out_broken ? 1 : -1, POLLOUT, 0};
        pfd[n++] = (struct pollfd){sig_fd, POLLIN, 0};
        n = exec_poll_add(pfd, tags, kinds, n, cap);

        int timeout = -1;
        uint64_t next = exec_next_timer();
        if (g.deadline_ns && (next == 0 || g.deadline_ns < next))
            next = g.deadline_ns;
        if (next) {
            uint64_t ms = next > now ? (next - now + 999999) / 1000000 : 0;
            timeout = ms > 60000 ? 60000 : (int)ms;
        }
        if (g.in_eof && (timeout < 0 || timeout > 250))
            timeout = 250;
        if (more)
            timeout = 0;

        int r = poll(pfd, (nfds_t)n, timeout);
        if (r < 0 && errno != EINTR) {
            logmsg("poll: %s", strerror(errno));
            struct timespec ts = {0, 10 * 1000 * 1000};
            nanosleep(&ts, NULL);
            continue;
        }
        if (r > 0) {
            /* Reap only when a child ended (SIGCHLD): a wait4 per round would be one more system call for
             * every chunk of output streamed. A child's pipes can end before it becomes a zombie, so a
             * pipe's end never means the child can be reaped yet; its SIGCHLD wakes a later round. Reap
             * before looking at the execs' pipes: a shim's exit is known when its pipe ends. */
            if (pfd[2].revents) {
                uint8_t drain[512];
                while (read(sig_fd, drain, sizeof(drain)) > 0)
                    ;
                exec_reap();
            }
            if (pfd[1].revents)
                flush_out();
            for (int i = 3; i < n; i++)
                if (pfd[i].revents)
                    exec_poll_done(tags[i], kinds[i], pfd[i].revents);
            if (pfd[0].fd >= 0 && pfd[0].revents)
                read_input();
        } else if (sig_pipe_w < 0) {
            exec_reap();
        }
        /* Try to write what handlers queued right away: saves a poll round per message. */
        if (buf_used(&g.out) > 0 && !g.out_broken)
            flush_out();
        if (g.in_eof && now_ns() - last_eof_check >= 250ull * 1000000ull) {
            /* A FIFO reports POLLHUP while it has no writer; it clears when a new engine opens it. */
            last_eof_check = now_ns();
            struct pollfd p = {0, POLLIN, 0};
            if (poll(&p, 1, 0) >= 0 && (!(p.revents & POLLHUP) || (p.revents & POLLIN))) {
                logmsg("engine channel has a writer again");
                g.in_eof = 0;
            }
        }
    }
}
