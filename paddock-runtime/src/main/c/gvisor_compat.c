/* A preload library for the gVisor (runsc) tier only, listed in that tier's /etc/ld.so.preload.
 *
 * The gVisor build Debian ships (runsc 2022-12) rejects AT_NO_AUTOMOUNT in statx(2) and fstatat(2) with
 * EINVAL, and coreutils 9 passes it on every stat: ls, stat, du and cp fail on every path. The flag only
 * matters for automount points, which a sandbox never has, so dropping it changes nothing else. Programs
 * that make the system call directly (static binaries, Go) still see EINVAL: a documented gap of that
 * build, fixed in later gVisor releases.
 *
 * Built with the host's C library (the sandbox runs the host's /usr); it calls the kernel directly and
 * depends on nothing but libc's syscall(). */
#define _GNU_SOURCE
#include <sys/syscall.h>
#include <unistd.h>

/* <fcntl.h> and <sys/stat.h> are left out on purpose: their prototypes would clash with these
 * definitions, which only pass the buffers through. */
#define AT_NO_AUTOMOUNT 0x800

struct stat;
struct statx;

int statx(int dirfd, const char *path, int flags, unsigned int mask, struct statx *buf);
int fstatat(int dirfd, const char *path, struct stat *buf, int flags);
int fstatat64(int dirfd, const char *path, struct stat *buf, int flags);

int statx(int dirfd, const char *path, int flags, unsigned int mask, struct statx *buf)
{
    return (int)syscall(SYS_statx, dirfd, path, flags & ~AT_NO_AUTOMOUNT, mask, buf);
}

int fstatat(int dirfd, const char *path, struct stat *buf, int flags)
{
    return (int)syscall(SYS_newfstatat, dirfd, path, buf, flags & ~AT_NO_AUTOMOUNT);
}

int fstatat64(int dirfd, const char *path, struct stat *buf, int flags)
{
    return fstatat(dirfd, path, buf, flags);
}
