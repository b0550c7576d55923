/* Shared state and helpers of the init process. Everything runs on one thread: the poll() loop in
 * main.c calls into exec.c and files.c, which never block on anything a tenant controls. */
#ifndef PADDOCK_INIT_H
#define PADDOCK_INIT_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <poll.h>
#include <stdint.h>
#include <sys/types.h>

#include "buf.h"
#include "proto.h"

#ifndef PADDOCK_BUILD_ID
#define PADDOCK_BUILD_ID "dev"
#endif

#define OUT_SOFT (1u << 20)         /* bulk producers (exec output, file reads, listings) wait below this */
#define OUT_PAUSE_INPUT (4u << 20)  /* stop reading engine input above this: the engine is not reading */
#define OUT_MAX (16u << 20)         /* hard limit of the queue towards the engine */
#define CHUNK (128u * 1024u)        /* one read from an exec pipe */
#define FILE_CHUNK (256u * 1024u)   /* one F_DATA frame */
#define STDIN_WINDOW (256u * 1024u) /* stdin window granted per exec */
#define UPLOAD_WINDOW (256u * 1024u)
#define MAX_EXECS 1024              /* execs that have not ended */
#define MAX_EXEC_RECORDS 4096       /* ended but not yet released execs are kept up to this many */
#define MAX_FILE_REQS 256

struct init_state {
    uid_t uid;                /* the sandbox user for file operations */
    gid_t gid;
    char workdir[4096];
    struct buf out;           /* frames queued towards the engine (fd 1) */
    int out_broken;           /* fd 1 has no reader: drop output until the next HELLO */
    int in_eof;               /* fd 0 hit end of file: waiting for a new writer */
    int hello_seen;
    int orphan_die;
    uint64_t deadline_ns;     /* DEADLINE backstop, 0 = none */
    int is_pid1;
    /* Capabilities a command running as uid 0 keeps (--tenant-caps): none, except in image builds' sandboxes,
     * whose RUN steps install packages as root of their own user namespace, as docker build does. */
    uint64_t tenant_caps;
    /* Signals (bit sig-1) whose disposition in the init is not the default, found once at start-up
     * (commands_prepare): the only ones a command must reset before its exec. */
    uint64_t sig_nondefault;
    /* The bounding set holds nothing beyond tenant_caps: dropped once at start-up, so commands need not. */
    int bset_clean;
    /* Commands get oom_score_adj 1000, so that an OOM kill in the sandbox takes them, not the init; except where
     * no OOM killer works inside (gVisor: the host's kills the whole Sentry), so that the write does nothing. */
    int no_oom_killer;
};

extern struct init_state g;

/* Diagnostics to fd 2 (a host log file), bounded in rate and total size. */
void logmsg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
uint64_t now_ns(void);
/* Whether bulk data may be queued towards the engine now. */
int out_has_room(void);

/* Small replies used by several modules. */
void send_window(uint32_t chan, uint8_t stream, uint32_t inc);
void send_f_error(uint32_t chan, int err, const char *what);
void send_f_ok(uint32_t chan, uint32_t window);
void send_f_end(uint32_t chan);

/* Kills every process the init knows of (all of the pid namespace when it is PID 1), reaps, and exits. */
void die_all(int code) __attribute__((noreturn));

/* exec.c */
void exec_spawn(uint32_t chan, const uint8_t *p, size_t n);
void exec_spawn_too_big(uint32_t chan);
void exec_stdin(uint32_t chan, const uint8_t *p, size_t n);
void exec_stdin_close(uint32_t chan);
void exec_signal(uint32_t chan, uint32_t sig, uint8_t scope);
void exec_resize(uint32_t chan, uint32_t rows, uint32_t cols);
int exec_window(uint32_t chan, uint8_t stream, uint32_t inc); /* 0 when chan is an exec */
void exec_release(uint32_t chan);
void exec_reap(void);
void exec_timers(uint64_t now);
void exec_pty_drain(void);      /* ends the output of pty execs whose process tree is gone */
uint64_t exec_next_timer(void); /* 0 = none */
/* Adds the exec fds to poll; returns the new count. tags[i] identifies the entry for exec_poll_done. */
int exec_poll_add(struct pollfd *pfd, void **tags, int *kinds, int n, int max);
void exec_poll_done(void *tag, int kind, short revents);
int exec_poll_count(void);
/* Whether an exec whose output filled its pipe (it streams) still has output open. */
int exec_streaming(void);
void exec_kill_all(void);
/* Without child subreapers (gVisor): a cgroup hierarchy in which each exec's processes get a cgroup. */
void exec_tracking_init(void);
/* Once, at start-up: what every command would otherwise do before its exec (see sig_nondefault, bset_clean). */
void commands_prepare(void);
/* SIGKILLs every descendant of root (not root itself) until none is alive; bounded. */
void kill_tree(pid_t root, pid_t sid);

/* files.c */
void files_init(void);
/* The file-system identity of the init's own file work: the sandbox user, then back to root. */
void fs_enter(void);
void fs_leave(void);
void files_handle(uint8_t type, uint32_t chan, const uint8_t *p, size_t n);
void files_too_big(uint8_t type, uint32_t chan);
int files_window(uint32_t chan, uint8_t stream, uint32_t inc); /* 0 when chan is a file request */
/* Does one step of pending streamed work (reads, listings); returns 1 if more work is pending. */
int files_pump(void);
/* Whether a file request is in flight. */
int files_busy(void);
void files_abort_all(void);

#endif
