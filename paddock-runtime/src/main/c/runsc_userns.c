/*
 * paddock-runsc-userns: runs runsc as root of a user namespace of the sandbox's own, so that its Sentry runs as a
 * host uid of that sandbox alone.
 *
 *   paddock-runsc-userns <sentry> <base> <count> <runsc> [runsc args...]
 *   paddock-runsc-userns -j <runsc> [runsc args...]
 *
 * runsc (as uid 0, without --network=host) starts each Sentry in a new user namespace mapping 65534 to 65534 of
 * its own namespace, and as that uid: on the host, every Sentry would be uid 65534, and one that escaped gVisor
 * could signal or ptrace every other sandbox's Sentry. Here runsc runs in a fresh user namespace whose maps (uid
 * and gid alike) are
 *
 *     0      0       1        root stays root: runsc reaches root's files (bundle, state, cgroups) as before
 *     65534  <sentry> 1       the Sentry's uid: a host id no other sandbox has
 *     <base> <base>  <count>  the sandbox's own range, unchanged: the gofer's and the tenant's ids (the spec's maps)
 *
 * so the Sentry becomes host uid <sentry>, and nothing else changes: runsc's files are root's as before (its
 * state, the sandbox's cgroups, the bundle), so the host's root manages the sandbox as any other. Only runsc is
 * ever in the namespace, while it starts the sandbox (and, for a networked one, the engine's holder while the
 * network layer makes the network namespace in it): the Sentry and the gofer are in namespaces of their own below
 * it, which map no root, and from there it cannot be entered (that takes CAP_SYS_ADMIN in it).
 *
 * A child unshares the namespace and waits; this process, root of the host's, writes its maps, then lets the
 * child exec runsc, and returns runsc's exit status; 125 when this program failed (the reason is on stderr,
 * runsc's log). The runsc dies with this process (the engine kills it on a timeout).
 *
 * With -j, runsc runs in the user namespace that owns this process's network namespace instead, as its root: a
 * networked sandbox's runsc must join that network namespace for the Sentry, which takes CAP_SYS_ADMIN in the
 * namespace that owns it, so the network layer made it inside a namespace this program made (above) for the
 * sandbox. When the host's user namespace owns it (a namespace made before that), runsc runs as the host's root.
 */
#define _GNU_SOURCE
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>

/* linux/nsfs.h, which musl's headers lack: the user namespace that owns a namespace. */
#ifndef NS_GET_USERNS
#define NS_GET_USERNS _IO(0xb7, 0x1)
#endif

#define PROGRAM "paddock-runsc-userns"
#include "launcher.h"

/* Writes "<inside> <outside> <count>" lines of the namespace's map of kind ("uid_map" or "gid_map"). */
static void write_map(pid_t child, const char *kind, unsigned long sentry, unsigned long base, unsigned long count) {
    char path[64];
    char map[128];
    snprintf(path, sizeof path, "/proc/%d/%s", (int) child, kind);
    snprintf(map, sizeof map, "0 0 1\n65534 %lu 1\n%lu %lu %lu\n", sentry, base, base, count);
    write_file(path, map);
}

/* -j: joins the user namespace that owns this process's network namespace, unless it is this process's own. */
static void join_network_owner(void) {
    int net = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
    if (net < 0) {
        die("/proc/self/ns/net");
    }
    int owner = ioctl(net, NS_GET_USERNS);
    if (owner < 0) {
        die("NS_GET_USERNS");
    }
    struct stat theirs;
    struct stat mine;
    if (fstat(owner, &theirs) != 0 || stat("/proc/self/ns/user", &mine) != 0) {
        die("stat of a user namespace");
    }
    if ((theirs.st_dev != mine.st_dev || theirs.st_ino != mine.st_ino) && setns(owner, CLONE_NEWUSER) != 0) {
        die("setns(CLONE_NEWUSER) into the network namespace's owner");
    }
    close(owner);
    close(net);
}

int main(int argc, char **argv) {
    if (argc >= 3 && strcmp(argv[1], "-j") == 0) {
        join_network_owner();
        execv(argv[2], argv + 2);
        die(argv[2]);
    }
    if (argc < 5) {
        fprintf(stderr, "usage: " PROGRAM " <sentry> <base> <count> <runsc> [runsc args...]\n"
                "       " PROGRAM " -j <runsc> [runsc args...]\n");
        return FAIL;
    }
    unsigned long sentry = number(argv[1], "sentry id");
    unsigned long base = number(argv[2], "base");
    unsigned long count = number(argv[3], "count");
    /* The three lines must not overlap, inside or out; the kernel would refuse them with a bare EINVAL. */
    if (sentry == 0 || sentry == 65534 || base <= 65534 || count == 0 || base + count > UINT32_MAX
            || (sentry >= base && sentry < base + count)) {
        fprintf(stderr, PROGRAM ": the Sentry's id %lu must be a host id of its own, outside 0, 65534 and the"
                " sandbox's range %lu+%lu (above 65534)\n", sentry, base, count);
        return FAIL;
    }

    int ready[2];
    int go[2];
    if (pipe2(ready, O_CLOEXEC) != 0 || pipe2(go, O_CLOEXEC) != 0) {
        die("pipe");
    }
    pid_t self = getpid();
    pid_t child = fork();
    if (child < 0) {
        die("fork");
    }
    if (child == 0) {
        close(ready[0]);
        close(go[1]);
        if (unshare(CLONE_NEWUSER) != 0) {
            die("unshare(CLONE_NEWUSER)");
        }
        if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != self) {
            _exit(FAIL);
        }
        char c;
        if (write(ready[1], "u", 1) != 1 || read(go[0], &c, 1) != 1) {
            _exit(FAIL); /* the parent failed and said why */
        }
        execv(argv[4], argv + 4);
        die(argv[4]);
    }
    close(ready[1]);
    close(go[0]);
    char c;
    ssize_t r;
    do {
        r = read(ready[0], &c, 1);
    } while (r < 0 && errno == EINTR);
    if (r != 1) {
        fprintf(stderr, PROGRAM ": the child could not create the user namespace\n");
    } else {
        write_map(child, "uid_map", sentry, base, count);
        write_map(child, "gid_map", sentry, base, count);
        if (write(go[1], "g", 1) != 1) {
            die("starting runsc");
        }
    }
    close(go[1]);
    int ws;
    while (waitpid(child, &ws, 0) < 0) {
        if (errno != EINTR) {
            die("waitpid");
        }
    }
    if (r != 1) {
        return FAIL;
    }
    return WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws);
}
