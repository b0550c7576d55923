/*
 * paddock-sealed-exec: holds a sealed in-memory copy of a program (runc) for others to execute.
 *
 *   paddock-sealed-exec <program>
 *
 * Copies <program> into a memfd, seals it against every change (F_SEAL_SEAL | SHRINK | GROW | WRITE), prints
 * "<fd>\n" and waits until its stdin ends (the engine closes it, or dies); the copy is then executable as
 * /proc/<this pid>/fd/<fd>.
 *
 * runc protects its binary from a container that would overwrite it (CVE-2019-5736): unless it already runs from
 * a fully sealed memfd, every runc process, and each container's runc init, first makes a read-only bind mount of
 * /proc/self/exe and executes itself again through it (runc 1.1.5: a mount, a remount, a detached unmount and an
 * execve of its 10 MiB binary). Run from this copy, runc sees the seals and goes straight on, as its own comments
 * suggest an administrator may arrange; the copy cannot be written by anyone, root included.
 *
 * Exit status: 0 at the end of stdin; 1 with the reason on stderr.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef F_SEAL_SEAL
#define F_ADD_SEALS 1033
#define F_SEAL_SEAL 0x0001
#define F_SEAL_SHRINK 0x0002
#define F_SEAL_GROW 0x0004
#define F_SEAL_WRITE 0x0008
#endif

static int fail(const char *what) {
    fprintf(stderr, "paddock-sealed-exec: %s: %s\n", what, strerror(errno));
    return 1;
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: paddock-sealed-exec <program>\n");
        return 1;
    }
    int src = open(argv[1], O_RDONLY | O_CLOEXEC);
    if (src < 0) {
        return fail(argv[1]);
    }
    struct stat st;
    if (fstat(src, &st) != 0) {
        return fail("fstat");
    }
    int mem = memfd_create("runc", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (mem < 0) {
        return fail("memfd_create");
    }
    off_t done = 0;
    while (done < st.st_size) {
        ssize_t n = sendfile(mem, src, NULL, (size_t) (st.st_size - done));
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            return fail("copying the program");
        }
        done += n;
    }
    close(src);
    if (fchmod(mem, 0555) != 0) {
        return fail("fchmod");
    }
    if (fcntl(mem, F_ADD_SEALS, F_SEAL_SEAL | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE) != 0) {
        return fail("sealing");
    }
    printf("%d\n", mem);
    if (fflush(stdout) != 0) {
        return fail("stdout");
    }
    char buf[64];
    for (;;) {
        ssize_t n = read(0, buf, sizeof buf);
        if (n == 0 || (n < 0 && errno != EINTR)) {
            return 0;
        }
    }
}
