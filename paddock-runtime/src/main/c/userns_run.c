/*
 * paddock-userns-run: runs runc with the sandbox's user namespace owned by the sandbox's own host uid.
 *
 *   paddock-userns-run [-s <filter>] [-n <netns> <sysfs>] <uid> <gid> <count> <nofile> <link> <runc> [runc args...]
 *
 * The kernel charges per-user counts (inotify instances and watches, user namespaces, POSIX queue bytes,
 * pending signals, RLIMIT_NPROC) at every user-namespace level, and at the host's level to the uid that
 * created the namespace. runc creates it as root, so every sandbox would share root's allowance. Here a
 * holder child switches to <uid>/<gid> (the sandbox's range root, an unprivileged host id) and unshares a
 * user namespace; this process, still root, writes its maps ("0 <uid> <count>", "0 <gid> <count>"), points
 * <link> at /proc/<holder>/ns/user (config.json names <link> as the user namespace to join), sets the
 * init's rlimits on itself (runc cannot prlimit a task in a namespace root does not own without
 * CAP_SYS_RESOURCE; they are inherited instead), and runs runc. Once runc exits the sandbox's processes
 * hold the namespace, so the holder is killed and reaped, and runc's exit status is returned.
 *
 * With -n, runc runs in the network namespace at <netns> (a file under /run/netns, made by Paddock's network
 * layer, owned by the host's user namespace) and the container's config.json names no network namespace, so
 * the sandbox stays in it. runc cannot join it itself: it joins the sandbox's user namespace first, and from
 * there a namespace the host owns is out of reach. Owned by the host, it is also out of reach of the
 * sandbox's root: no address, route or neighbour inside can be changed from inside. For the same reason the
 * sandbox cannot mount a sysfs of its own (sysfs shows the network namespace of whoever mounts it, and only
 * the namespace's owner may): this program mounts one at <sysfs>, read-only, from inside the namespace, the
 * spec binds it at /sys, and once runc has exited (the sandbox holds its own copy) it is detached here.
 *
 * With -s, <filter> (the sandbox's seccomp filter, compiled once by paddock-seccomp) is open as fd 3 for runc,
 * which passes it on (--preserve-fds 1) to paddock-init, which installs it (--seccomp-fd=3).
 *
 * Exit status: runc's; 125 when this program failed (the reason is on stderr, runc's log).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#define PROGRAM "paddock-userns-run"
#include "launcher.h"

/* The holder: the sandbox's range root, alone in a fresh user namespace until the sandbox joins it. */
static void holder(uid_t uid, gid_t gid, pid_t parent, int ready) {
    int null = open("/dev/null", O_RDWR | O_CLOEXEC);
    /* Keep no end of the sandbox's FIFOs: stdio becomes /dev/null (stderr stays, for errors). */
    if (null < 0 || dup2(null, 0) < 0 || dup2(null, 1) < 0) {
        die("holder: /dev/null");
    }
    /* The namespace records its creator's RLIMIT_NPROC as the cap on the sandbox's tasks at the host's level
     * (root as creator gets none): make it the hard limit, so that the cgroup's pids.max stays what binds. */
    struct rlimit nproc;
    if (getrlimit(RLIMIT_NPROC, &nproc) == 0) {
        nproc.rlim_cur = nproc.rlim_max;
        setrlimit(RLIMIT_NPROC, &nproc);
    }
    if (setgroups(0, NULL) != 0 || setresgid(gid, gid, gid) != 0 || setresuid(uid, uid, uid) != 0) {
        die("holder: switching to the sandbox's host uid");
    }
    /* After the switch: changing credentials clears the parent-death signal. */
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent) {
        _exit(FAIL);
    }
    if (unshare(CLONE_NEWUSER) != 0) {
        die("holder: unshare(CLONE_NEWUSER)");
    }
    if (write(ready, "u", 1) != 1) {
        _exit(FAIL);
    }
    close(ready);
    for (;;) {
        pause();
    }
}

int main(int argc, char **argv) {
    const char *sysfs = NULL;
    if (argc > 2 && strcmp(argv[1], "-s") == 0) {
        int f = open(argv[2], O_RDONLY);
        if (f < 0) {
            die(argv[2]);
        }
        if (f != 3 && (dup2(f, 3) != 3 || close(f) != 0)) {
            die("the seccomp filter's fd");
        }
        argc -= 2;
        argv += 2;
    }
    if (argc > 3 && strcmp(argv[1], "-n") == 0) {
        int ns = open(argv[2], O_RDONLY | O_CLOEXEC);
        if (ns < 0) {
            die(argv[2]);
        }
        if (setns(ns, CLONE_NEWNET) != 0) {
            die("setns(CLONE_NEWNET)");
        }
        close(ns);
        sysfs = argv[3];
        if (mount("sysfs", sysfs, "sysfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) != 0) {
            die("mounting the sandbox's sysfs");
        }
        argc -= 3;
        argv += 3;
    }
    if (argc < 7) {
        fprintf(stderr, "usage: paddock-userns-run [-s <filter>] [-n <netns> <sysfs>] <uid> <gid> <count> <nofile> <link> <runc> [args...]\n");
        return FAIL;
    }
    uid_t uid = (uid_t) number(argv[1], "uid");
    gid_t gid = (gid_t) number(argv[2], "gid");
    unsigned long count = number(argv[3], "count");
    rlim_t nofile = (rlim_t) number(argv[4], "nofile");
    const char *link = argv[5];
    if (uid == 0 || gid == 0 || count == 0) {
        fprintf(stderr, "paddock-userns-run: the namespace's owner must not be root\n");
        return FAIL;
    }

    int pipefd[2];
    if (pipe2(pipefd, O_CLOEXEC) != 0) {
        die("pipe");
    }
    pid_t self = getpid();
    pid_t h = fork();
    if (h < 0) {
        die("fork");
    }
    if (h == 0) {
        close(pipefd[0]);
        holder(uid, gid, self, pipefd[1]);
    }
    close(pipefd[1]);
    char c;
    ssize_t r;
    do {
        r = read(pipefd[0], &c, 1);
    } while (r < 0 && errno == EINTR);
    close(pipefd[0]);

    int status = FAIL;
    if (r == 1) {
        char path[64];
        char map[96];
        snprintf(map, sizeof map, "0 %lu %lu\n", (unsigned long) uid, count);
        snprintf(path, sizeof path, "/proc/%d/uid_map", (int) h);
        write_file(path, map);
        snprintf(map, sizeof map, "0 %lu %lu\n", (unsigned long) gid, count);
        snprintf(path, sizeof path, "/proc/%d/gid_map", (int) h);
        write_file(path, map);
        snprintf(path, sizeof path, "/proc/%d/ns/user", (int) h);
        if (unlink(link) != 0 && errno != ENOENT) {
            die(link);
        }
        if (symlink(path, link) != 0) {
            die(link);
        }
        struct rlimit files = {nofile, nofile};
        struct rlimit core = {0, 0};
        if (setrlimit(RLIMIT_NOFILE, &files) != 0 || setrlimit(RLIMIT_CORE, &core) != 0) {
            die("setrlimit");
        }
        pid_t runc = fork();
        if (runc < 0) {
            die("fork");
        }
        if (runc == 0) {
            /* runc dies with this process (the engine kills it on a timeout), as when it was the engine's child. */
            if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != self) {
                _exit(FAIL);
            }
            execv(argv[6], argv + 6);
            die(argv[6]);
        }
        int ws;
        while (waitpid(runc, &ws, 0) < 0) {
            if (errno != EINTR) {
                die("waitpid");
            }
        }
        status = WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws);
    } else {
        fprintf(stderr, "paddock-userns-run: the holder could not create the user namespace\n");
    }
    kill(h, SIGKILL);
    while (waitpid(h, NULL, 0) < 0 && errno == EINTR) {
    }
    if (sysfs != NULL && umount2(sysfs, MNT_DETACH) != 0) {
        fprintf(stderr, "paddock-userns-run: detaching %s: %s\n", sysfs, strerror(errno));
    }
    return status;
}
