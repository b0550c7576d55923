/*
 * The benchmark's native helper, built at bench time (gcc -O2 -static): the physical floor that Paddock is
 * measured against, and the probes run inside a sandbox and on the host alike.
 *
 *   pbench spawn N PROG ARG...   N x posix_spawn of PROG with stdout on a pipe; prints "<first-byte ns> <exit ns>"
 *                                per sample (first byte: -1 when PROG prints nothing)
 *   pbench rate SECONDS PROG...  spawns PROG serially for SECONDS; prints "<count> <elapsed ns>"
 *   pbench getppid N             N getppid system calls; prints ns per call
 *   pbench spin N                a CPU-bound loop of N iterations; prints elapsed ns
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t) ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int spawn_once(char **argv, int64_t *first, int64_t *exit_ns) {
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) {
        return -1;
    }
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
    pid_t pid;
    int64_t t0 = now_ns();
    int rc = posix_spawn(&pid, argv[0], &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(fds[1]);
    if (rc != 0) {
        close(fds[0]);
        return -1;
    }
    char buf[4096];
    *first = -1;
    ssize_t n;
    while ((n = read(fds[0], buf, sizeof buf)) > 0) {
        if (*first < 0) {
            *first = now_ns() - t0;
        }
    }
    close(fds[0]);
    int status;
    waitpid(pid, &status, 0);
    *exit_ns = now_ns() - t0;
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

int main(int argc, char **argv) {
    if (argc >= 4 && strcmp(argv[1], "spawn") == 0) {
        long n = atol(argv[2]);
        for (long i = 0; i < n; i++) {
            int64_t first, ex;
            if (spawn_once(argv + 3, &first, &ex) != 0) {
                fprintf(stderr, "spawn of %s failed\n", argv[3]);
                return 1;
            }
            printf("%lld %lld\n", (long long) first, (long long) ex);
        }
        return 0;
    }
    if (argc >= 4 && strcmp(argv[1], "rate") == 0) {
        double secs = atof(argv[2]);
        int64_t t0 = now_ns(), end = t0 + (int64_t) (secs * 1e9);
        long count = 0;
        while (now_ns() < end) {
            int64_t first, ex;
            if (spawn_once(argv + 3, &first, &ex) != 0) {
                return 1;
            }
            count++;
        }
        printf("%ld %lld\n", count, (long long) (now_ns() - t0));
        return 0;
    }
    if (argc == 3 && strcmp(argv[1], "getppid") == 0) {
        long n = atol(argv[2]);
        int64_t t0 = now_ns();
        for (long i = 0; i < n; i++) {
            syscall(SYS_getppid);
        }
        printf("%.2f\n", (double) (now_ns() - t0) / (double) n);
        return 0;
    }
    if (argc == 3 && strcmp(argv[1], "spin") == 0) {
        volatile uint64_t x = 88172645463325252ULL;
        long n = atol(argv[2]);
        int64_t t0 = now_ns();
        for (long i = 0; i < n; i++) {
            uint64_t v = x;
            v ^= v << 13;
            v ^= v >> 7;
            v ^= v << 17;
            x = v;
        }
        printf("%lld\n", (long long) (now_ns() - t0));
        return 0;
    }
    fprintf(stderr, "usage: pbench spawn N PROG ARG... | rate SECONDS PROG ARG... | getppid N | spin N\n");
    return 2;
}
