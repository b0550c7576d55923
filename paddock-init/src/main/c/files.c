/* File operations, done by the init itself as the sandbox user (setfsuid/setfsgid around each step).
 *
 * Paths are resolved by the kernel inside the sandbox's mount namespace, so `..` and symlinks can only
 * lead to other places in the sandbox; openat2(RESOLVE_NO_MAGICLINKS) refuses /proc magic links, and
 * files on pseudo filesystems are refused after opening (fstatfs). Nothing here can block on a tenant:
 * reads serve only regular files (opened O_NONBLOCK, so a FIFO never blocks the open), uploads go to a
 * fresh O_EXCL temp file, listings are streamed in batches from a DIR handle. */
#include "init.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#define PATH_BUF 4096
#define RESOLVE_NO_MAGICLINKS_ 0x02
#define RENAME_NOREPLACE_ 1
#define LIST_BATCH_BYTES (64u * 1024u)
#define LIST_BATCH_MAX 1024
#define REMOVE_DEPTH_MAX 256

struct open_how_ {
    uint64_t flags;
    uint64_t mode;
    uint64_t resolve;
};

enum { FR_READ = 1, FR_WRITE = 2, FR_LIST = 3 };

struct freq {
    struct freq *next;
    uint32_t id;
    int kind;
    int fd;             /* READ: the file; WRITE: the temp file */
    DIR *dir;           /* LIST */
    uint64_t offset;    /* READ */
    uint64_t remaining; /* READ: bytes still allowed by the limit */
    uint64_t window;    /* READ: F_DATA bytes the engine accepts */
    int dirfd;          /* WRITE: O_PATH fd of the target directory */
    uint32_t flags;     /* WRITE */
    uint32_t mode;      /* WRITE */
    char tmp[64];       /* WRITE: temp name in dirfd */
    char name[256];     /* WRITE: target name in dirfd */
};

static struct freq *reqs;
static int n_reqs;
static int have_openat2 = 1;

static int have_setfsuid = 1;

/* setfsuid(2) changes only the identity file checks use, which is exactly what file work as the sandbox
 * user needs. Where it is missing (gVisor answers ENOSYS) the effective ids change instead: the init is
 * single-threaded and keeps 0 as its real and saved uid, so it can always switch back, and the kernel
 * restores its effective capabilities from the permitted set when the effective uid returns to 0. Raw system
 * calls, as the commands make them: musl's setresuid and setresgid block and restore every signal around the
 * call (to change every thread's ids), three system calls each that a single thread does not need, and under
 * gVisor every system call is a trip through the Sentry; every file operation there switches four times. */
void fs_enter(void)
{
    if (have_setfsuid) {
        errno = 0;
        if (setfsgid(g.gid) != -1 || errno != ENOSYS) {
            setfsuid(g.uid);
            return;
        }
        have_setfsuid = 0;
        logmsg("setfsuid unavailable, switching effective ids for file work");
    }
    if (syscall(SYS_setresgid, -1, g.gid, -1) < 0 || syscall(SYS_setresuid, -1, g.uid, -1) < 0)
        logmsg("cannot switch to the sandbox user: %s", strerror(errno));
}

void fs_leave(void)
{
    if (have_setfsuid) {
        setfsuid(0);
        setfsgid(0);
        return;
    }
    if (syscall(SYS_setresuid, -1, 0, -1) < 0 || syscall(SYS_setresgid, -1, 0, -1) < 0)
        logmsg("cannot switch back to root: %s", strerror(errno));
}

/* Opens with RESOLVE_NO_MAGICLINKS. Without openat2 (an old kernel, a seccomp profile, gVisor) plain
 * openat: ordinary symlinks are followed as openat2 follows them, and no flag can refuse a magic link
 * midway, so what an open reaches is checked afterwards (bad_fs refuses /proc and the other pseudo
 * filesystems; a sandbox's magic links lead only into its own mount namespace). O_CLOEXEC always:
 * nothing of the init may leak into a command. */
static int xopen(int dirfd, const char *path, int flags, mode_t mode, int nofollow)
{
    flags |= O_CLOEXEC;
    if (nofollow)
        flags |= O_NOFOLLOW;
    if (have_openat2) {
        struct open_how_ how = {(uint64_t)flags, (flags & O_CREAT) ? mode : 0, RESOLVE_NO_MAGICLINKS_};
        long r = syscall(SYS_openat2, dirfd, path, &how, sizeof(how));
        if (r >= 0 || errno != ENOSYS)
            return (int)r;
        have_openat2 = 0;
        logmsg("openat2 unavailable, falling back to openat");
    }
    return openat(dirfd, path, flags, mode);
}

void files_init(void)
{
    int fd = xopen(AT_FDCWD, "/", O_PATH | O_DIRECTORY, 0, 0);
    if (fd >= 0) {
        close(fd);
    } else if (have_openat2) {
        /* Present but refused (a seccomp profile answering EPERM): do not use it at all. */
        logmsg("openat2 refused (%s), falling back to openat", strerror(errno));
        have_openat2 = 0;
    }
}

/* Pseudo filesystems that must never be served (EPERM). devtmpfs reports the tmpfs magic and cannot be
 * told apart here; device nodes are refused by the regular-file check anyway. */
static int bad_fs(int fd)
{
    struct statfs s;
    if (fstatfs(fd, &s) < 0)
        return errno;
    switch ((unsigned long)s.f_type) {
    case 0x9fa0UL:     /* proc */
    case 0x62656572UL: /* sysfs */
    case 0x1cd1UL:     /* devpts */
    case 0x27e0ebUL:   /* cgroup */
    case 0x63677270UL: /* cgroup2 */
    case 0x64626720UL: /* debugfs */
    case 0x74726163UL: /* tracefs */
    case 0x73636673UL: /* securityfs */
    case 0xcafe4a11UL: /* bpf */
    case 0xde5e81e4UL: /* efivarfs */
    case 0x42494e4dUL: /* binfmt_misc */
    case 0xf97cff8cUL: /* selinuxfs */
        return EPERM;
    }
    return 0;
}

/* A wire path as an absolute C path: relative paths are joined to the workdir, trailing slashes go.
 * Returns 0 or an errno. */
static int wire_path(const uint8_t *p, uint32_t n, char *out)
{
    if (n == 0)
        return ENOENT;
    if (memchr(p, 0, n))
        return EINVAL;
    size_t off = 0;
    if (p[0] != '/') {
        size_t wl = strlen(g.workdir);
        if (wl + 1 + n >= PATH_BUF)
            return ENAMETOOLONG;
        memcpy(out, g.workdir, wl);
        off = wl;
        if (off == 0 || out[off - 1] != '/')
            out[off++] = '/';
    }
    if (off + n >= PATH_BUF)
        return ENAMETOOLONG;
    memcpy(out + off, p, n);
    off += n;
    while (off > 1 && out[off - 1] == '/')
        off--;
    out[off] = 0;
    return 0;
}

/* Splits path in place: returns the last component and leaves the parent in dir ("/" for top level). */
static const char *split(char *path, char *dir)
{
    char *slash = strrchr(path, '/');
    if (!slash || (slash == path && path[1] == 0)) {
        strcpy(dir, "/");
        return ".";
    }
    size_t dl = (size_t)(slash - path);
    if (dl == 0)
        dl = 1;
    memcpy(dir, path, dl);
    dir[dl] = 0;
    return slash + 1;
}

/* Opens the directory containing path (O_PATH) and checks its filesystem. *name points into path. */
static int open_parent(char *path, const char **name, int *err)
{
    char dir[PATH_BUF];
    *name = split(path, dir);
    int fd = xopen(AT_FDCWD, dir, O_PATH | O_DIRECTORY, 0, 0);
    if (fd < 0) {
        *err = errno;
        return -1;
    }
    int bad = bad_fs(fd);
    if (bad) {
        close(fd);
        *err = bad;
        return -1;
    }
    return fd;
}

/* mkdir -p, one component at a time, each resolved from the fd of the previous one. */
static int mkdir_p(const char *path, mode_t mode)
{
    int cur = xopen(AT_FDCWD, "/", O_PATH | O_DIRECTORY, 0, 0);
    if (cur < 0)
        return errno;
    char comp[PATH_BUF];
    const char *p = path;
    while (*p) {
        while (*p == '/')
            p++;
        if (!*p)
            break;
        size_t l = strcspn(p, "/");
        if (l >= sizeof(comp) || l > 255) {
            close(cur);
            return ENAMETOOLONG;
        }
        memcpy(comp, p, l);
        comp[l] = 0;
        p += l;
        if (mkdirat(cur, comp, mode) < 0 && errno != EEXIST) {
            int e = errno;
            close(cur);
            return e;
        }
        int next = xopen(cur, comp, O_PATH | O_DIRECTORY, 0, 0);
        int e = errno;
        close(cur);
        if (next < 0)
            return e;
        cur = next;
    }
    int bad = bad_fs(cur);
    close(cur);
    return bad;
}

static void put_info(struct msg *m, const struct stat *st, const char *name, const char *link, size_t llen)
{
    uint8_t type = S_ISREG(st->st_mode) ? FT_FILE
                   : S_ISDIR(st->st_mode) ? FT_DIR
                   : S_ISLNK(st->st_mode) ? FT_SYMLINK
                                          : FT_OTHER;
    int64_t mtime = (int64_t)st->st_mtim.tv_sec * 1000000000LL + st->st_mtim.tv_nsec;
    enc_info(m, type, st->st_mode & 07777, (uint64_t)st->st_size, mtime, name, link, llen);
}

/* Describes dirfd/name without following it; 0 or an errno. */
static int send_info_at(uint32_t id, uint8_t type, int dirfd, const char *name, const char *shown)
{
    struct stat st;
    if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
        return errno;
    char link[PATH_BUF];
    ssize_t ll = 0;
    if (S_ISLNK(st.st_mode)) {
        ll = readlinkat(dirfd, name, link, sizeof(link));
        if (ll < 0)
            ll = 0;
    }
    struct msg m;
    msg_begin(&m, &g.out, type, id);
    put_info(&m, &st, shown, link, (size_t)ll);
    msg_end(&m);
    return 0;
}

static struct freq *find(uint32_t id)
{
    for (struct freq *r = reqs; r; r = r->next)
        if (r->id == id)
            return r;
    return NULL;
}

static struct freq *new_req(uint32_t id, int kind)
{
    if (find(id)) {
        send_f_error(id, EBUSY, NULL);
        return NULL;
    }
    if (n_reqs >= MAX_FILE_REQS) {
        send_f_error(id, EAGAIN, "too many file operations in progress");
        return NULL;
    }
    struct freq *r = calloc(1, sizeof(*r));
    if (!r) {
        send_f_error(id, ENOMEM, NULL);
        return NULL;
    }
    r->id = id;
    r->kind = kind;
    r->fd = -1;
    r->dirfd = -1;
    r->next = reqs;
    reqs = r;
    n_reqs++;
    return r;
}

static void free_req(struct freq *r, int discard_tmp)
{
    struct freq **pp = &reqs;
    while (*pp && *pp != r)
        pp = &(*pp)->next;
    if (*pp)
        *pp = r->next;
    if (r->kind == FR_WRITE && discard_tmp && r->dirfd >= 0 && r->tmp[0]) {
        fs_enter();
        unlinkat(r->dirfd, r->tmp, 0);
        fs_leave();
    }
    if (r->fd >= 0)
        close(r->fd);
    if (r->dirfd >= 0)
        close(r->dirfd);
    if (r->dir)
        closedir(r->dir);
    n_reqs--;
    free(r);
}

/* ---------------------------------------------------------------- the operations (as the user) */

static int op_read(uint32_t id, struct rd *rd)
{
    uint32_t pl;
    const uint8_t *pp = rd_bytes(rd, &pl);
    uint64_t offset = rd_u64(rd);
    uint64_t limit = rd_u64(rd);
    uint32_t window = rd_u32(rd);
    if (rd->err)
        return EINVAL;
    char path[PATH_BUF], dir[PATH_BUF];
    int err = wire_path(pp, pl, path);
    if (err)
        return err;
    int fd = xopen(AT_FDCWD, path, O_RDONLY | O_NONBLOCK | O_NOCTTY, 0, 0);
    if (fd < 0)
        return errno;
    struct stat st;
    err = bad_fs(fd);
    if (!err && fstat(fd, &st) < 0)
        err = errno;
    if (!err && !S_ISREG(st.st_mode))
        err = S_ISDIR(st.st_mode) ? EISDIR : EINVAL;
    if (err) {
        close(fd);
        return err;
    }
    struct freq *r = new_req(id, FR_READ);
    if (!r) {
        close(fd);
        return 0; /* already answered */
    }
    r->fd = fd;
    r->offset = offset;
    r->remaining = limit;
    r->window = window;
    struct msg m;
    msg_begin(&m, &g.out, R_F_INFO, id);
    put_info(&m, &st, split(path, dir), "", 0);
    msg_end(&m);
    return 0;
}

static int op_write_open(uint32_t id, struct rd *rd)
{
    static unsigned counter;
    uint32_t pl;
    const uint8_t *pp = rd_bytes(rd, &pl);
    uint32_t mode = rd_u32(rd);
    uint32_t flags = rd_u32(rd);
    if (rd->err)
        return EINVAL;
    char path[PATH_BUF], dir[PATH_BUF];
    int err = wire_path(pp, pl, path);
    if (err)
        return err;
    if (flags & FWRITE_PARENTS) {
        char copy[PATH_BUF];
        strcpy(copy, path);
        split(copy, dir);
        err = mkdir_p(dir, 0755);
        if (err)
            return err;
    }
    const char *name;
    int dfd = open_parent(path, &name, &err);
    if (dfd < 0)
        return err;
    if (strlen(name) >= sizeof(((struct freq *)0)->name) || !strcmp(name, ".") || !strcmp(name, "..")) {
        close(dfd);
        return strlen(name) > 255 ? ENAMETOOLONG : EINVAL;
    }
    struct stat st;
    if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
        err = S_ISDIR(st.st_mode) ? EISDIR : (flags & FWRITE_EXCL) ? EEXIST : 0;
        if (err) {
            close(dfd);
            return err;
        }
    }
    char tmp[64];
    snprintf(tmp, sizeof(tmp), ".paddock-upload-%x-%llx", ++counter, (unsigned long long)now_ns());
    int fd = xopen(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL, 0600, 1);
    if (fd < 0) {
        err = errno;
        close(dfd);
        return err;
    }
    struct freq *r = new_req(id, FR_WRITE);
    if (!r) {
        unlinkat(dfd, tmp, 0);
        close(fd);
        close(dfd);
        return 0;
    }
    r->fd = fd;
    r->dirfd = dfd;
    r->flags = flags;
    r->mode = mode & 0777; /* never setuid/setgid/sticky from the API */
    strcpy(r->tmp, tmp);
    strcpy(r->name, name);
    send_f_ok(id, UPLOAD_WINDOW);
    return 0;
}

static int write_all(int fd, const uint8_t *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return errno;
        }
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

static int op_write_end(struct freq *r)
{
    if (fchmod(r->fd, r->mode) < 0)
        return errno;
    if (r->flags & FWRITE_EXCL) {
        if (syscall(SYS_renameat2, r->dirfd, r->tmp, r->dirfd, r->name, RENAME_NOREPLACE_) < 0) {
            if (errno != EINVAL && errno != ENOSYS)
                return errno;
            /* Filesystems without RENAME_NOREPLACE: link(2) never replaces either. */
            if (linkat(r->dirfd, r->tmp, r->dirfd, r->name, 0) < 0)
                return errno;
            unlinkat(r->dirfd, r->tmp, 0);
        }
    } else if (renameat(r->dirfd, r->tmp, r->dirfd, r->name) < 0) {
        return errno;
    }
    r->tmp[0] = 0; /* committed: nothing to clean up */
    struct stat st;
    if (fstat(r->fd, &st) < 0)
        return errno;
    struct msg m;
    msg_begin(&m, &g.out, R_F_INFO, r->id);
    put_info(&m, &st, r->name, "", 0);
    msg_end(&m);
    return 0;
}

static int op_list(uint32_t id, struct rd *rd)
{
    uint32_t pl;
    const uint8_t *pp = rd_bytes(rd, &pl);
    if (rd->err)
        return EINVAL;
    char path[PATH_BUF];
    int err = wire_path(pp, pl, path);
    if (err)
        return err;
    int fd = xopen(AT_FDCWD, path, O_RDONLY | O_DIRECTORY | O_NONBLOCK, 0, 0);
    if (fd < 0)
        return errno;
    err = bad_fs(fd);
    DIR *d = err ? NULL : fdopendir(fd);
    if (!d) {
        if (!err)
            err = errno;
        close(fd);
        return err;
    }
    struct freq *r = new_req(id, FR_LIST);
    if (!r) {
        closedir(d);
        return 0;
    }
    r->dir = d;
    return 0;
}

static int op_stat(uint32_t id, struct rd *rd)
{
    uint32_t pl;
    const uint8_t *pp = rd_bytes(rd, &pl);
    if (rd->err)
        return EINVAL;
    char path[PATH_BUF];
    int err = wire_path(pp, pl, path);
    if (err)
        return err;
    const char *name;
    int dfd = open_parent(path, &name, &err);
    if (dfd < 0)
        return err;
    /* "/" has no parent: describe it by itself, named "/". */
    err = send_info_at(id, R_F_INFO, dfd, name, strcmp(name, ".") ? name : "/");
    close(dfd);
    return err;
}

static int op_mkdir(uint32_t id, struct rd *rd)
{
    uint32_t pl;
    const uint8_t *pp = rd_bytes(rd, &pl);
    uint32_t mode = rd_u32(rd);
    uint8_t parents = rd_u8(rd);
    if (rd->err)
        return EINVAL;
    char path[PATH_BUF];
    int err = wire_path(pp, pl, path);
    if (err)
        return err;
    if (parents) {
        err = mkdir_p(path, mode & 0777);
    } else {
        const char *name;
        int dfd = open_parent(path, &name, &err);
        if (dfd < 0)
            return err;
        err = mkdirat(dfd, name, mode & 0777) < 0 ? errno : 0;
        close(dfd);
    }
    if (!err)
        send_f_ok(id, 0);
    return err;
}

/* Removes everything in dirfd/name, then the directory. Never follows a symlink: every directory is
 * opened O_NOFOLLOW relative to its parent's fd, so a concurrent symlink swap fails instead of
 * redirecting us. Depth is bounded (each level holds an fd). */
static int remove_tree(int dirfd, const char *name, int depth)
{
    if (depth > REMOVE_DEPTH_MAX)
        return ELOOP;
    for (int pass = 0; pass < 8; pass++) {
        int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
        if (fd < 0)
            return errno;
        DIR *d = fdopendir(fd);
        if (!d) {
            int e = errno;
            close(fd);
            return e;
        }
        struct dirent *de;
        int err = 0;
        while (!err && (de = readdir(d)) != NULL) {
            const char *n = de->d_name;
            if (!strcmp(n, ".") || !strcmp(n, ".."))
                continue;
            int isdir = de->d_type == DT_DIR;
            if (de->d_type == DT_UNKNOWN) {
                struct stat st;
                if (fstatat(fd, n, &st, AT_SYMLINK_NOFOLLOW) < 0)
                    continue;
                isdir = S_ISDIR(st.st_mode);
            }
            if (isdir)
                err = remove_tree(fd, n, depth + 1);
            else if (unlinkat(fd, n, 0) < 0 && errno != ENOENT)
                err = errno;
        }
        closedir(d);
        if (err)
            return err;
        if (unlinkat(dirfd, name, AT_REMOVEDIR) == 0 || errno == ENOENT)
            return 0;
        if (errno != ENOTEMPTY && errno != EEXIST)
            return errno;
        /* Entries appeared while we were deleting (tenant code still writing): go again. */
    }
    return ENOTEMPTY;
}

static int op_remove(uint32_t id, struct rd *rd)
{
    uint32_t pl;
    const uint8_t *pp = rd_bytes(rd, &pl);
    uint8_t recursive = rd_u8(rd);
    if (rd->err)
        return EINVAL;
    char path[PATH_BUF];
    int err = wire_path(pp, pl, path);
    if (err)
        return err;
    const char *name;
    int dfd = open_parent(path, &name, &err);
    if (dfd < 0)
        return recursive && err == ENOENT ? (send_f_ok(id, 0), 0) : err;
    struct stat st;
    if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
        err = errno;
    else if (S_ISDIR(st.st_mode))
        err = recursive ? remove_tree(dfd, name, 0) : (unlinkat(dfd, name, AT_REMOVEDIR) < 0 ? errno : 0);
    else
        err = unlinkat(dfd, name, 0) < 0 ? errno : 0;
    close(dfd);
    if (err == ENOENT && recursive)
        err = 0;
    if (!err)
        send_f_ok(id, 0);
    return err;
}

static int op_move(uint32_t id, struct rd *rd)
{
    uint32_t fl, tl;
    const uint8_t *fp = rd_bytes(rd, &fl);
    const uint8_t *tp = rd_bytes(rd, &tl);
    if (rd->err)
        return EINVAL;
    char from[PATH_BUF], to[PATH_BUF];
    int err = wire_path(fp, fl, from);
    if (!err)
        err = wire_path(tp, tl, to);
    if (err)
        return err;
    const char *fname, *tname;
    int fd1 = open_parent(from, &fname, &err);
    if (fd1 < 0)
        return err;
    int fd2 = open_parent(to, &tname, &err);
    if (fd2 < 0) {
        close(fd1);
        return err;
    }
    err = renameat(fd1, fname, fd2, tname) < 0 ? errno : 0;
    close(fd1);
    close(fd2);
    if (!err)
        send_f_ok(id, 0);
    return err;
}

/* ---------------------------------------------------------------- dispatch */

void files_handle(uint8_t type, uint32_t id, const uint8_t *p, size_t n)
{
    struct rd rd;
    rd_init(&rd, p, n);
    int err = 0;
    struct freq *r;
    if (id == 0) {
        logmsg("file operation 0x%02x on channel 0 ignored", type);
        return;
    }
    fs_enter();
    switch (type) {
    case M_F_READ:
        err = op_read(id, &rd);
        break;
    case M_F_WRITE_OPEN:
        err = op_write_open(id, &rd);
        break;
    case M_F_WRITE_DATA:
        r = find(id);
        if (r && r->kind == FR_WRITE) {
            err = write_all(r->fd, p, n);
            if (err) {
                free_req(r, 1);
            } else if (n) {
                send_window(id, 0, (uint32_t)n);
            }
        }
        break;
    case M_F_WRITE_END:
        r = find(id);
        if (!r || r->kind != FR_WRITE) {
            err = EBADF; /* the upload failed earlier (already reported) or never existed */
            break;
        }
        err = op_write_end(r);
        free_req(r, 1);
        break;
    case M_F_WRITE_ABORT:
        r = find(id);
        if (r && r->kind == FR_WRITE)
            free_req(r, 1);
        break;
    case M_F_LIST:
        err = op_list(id, &rd);
        break;
    case M_F_STAT:
        err = op_stat(id, &rd);
        break;
    case M_F_MKDIR:
        err = op_mkdir(id, &rd);
        break;
    case M_F_REMOVE:
        err = op_remove(id, &rd);
        break;
    case M_F_MOVE:
        err = op_move(id, &rd);
        break;
    case M_F_CANCEL:
        /* The engine stopped reading a download or a listing: stop sending it. Nothing is answered;
         * the engine has already forgotten the channel. */
        r = find(id);
        if (r && (r->kind == FR_READ || r->kind == FR_LIST))
            free_req(r, 0);
        break;
    }
    fs_leave();
    if (err)
        send_f_error(id, err, NULL);
}

void files_too_big(uint8_t type, uint32_t id)
{
    struct freq *r = find(id);
    if (r && r->kind == FR_WRITE && type == M_F_WRITE_DATA)
        free_req(r, 1);
    if (type != M_F_WRITE_ABORT)
        send_f_error(id, E2BIG, "request too large");
}

int files_window(uint32_t id, uint8_t stream, uint32_t inc)
{
    struct freq *r = find(id);
    if (!r)
        return -1;
    if (r->kind == FR_READ && stream == 1)
        r->window = r->window + inc > (1ull << 40) ? (1ull << 40) : r->window + inc;
    return 0;
}

/* One F_DATA frame of a read; returns 1 while the request goes on. */
static int pump_read(struct freq *r)
{
    if (r->remaining == 0) {
        send_f_end(r->id);
        free_req(r, 0);
        return 0;
    }
    if (r->window == 0)
        return 1;
    uint64_t want = r->window;
    if (want > FILE_CHUNK)
        want = FILE_CHUNK;
    if (want > r->remaining)
        want = r->remaining;
    struct msg m;
    msg_begin(&m, &g.out, R_F_DATA, r->id);
    uint8_t *p = msg_reserve(&m, (size_t)want);
    if (!p) {
        msg_abort(&m);
        return 1;
    }
    ssize_t n = pread(r->fd, p, (size_t)want, (off_t)r->offset);
    if (n <= 0) {
        int e = errno;
        msg_abort(&m);
        if (n < 0)
            send_f_error(r->id, e, NULL);
        else
            send_f_end(r->id);
        free_req(r, 0);
        return 0;
    }
    msg_unreserve(&m, (size_t)(want - (uint64_t)n));
    msg_end(&m);
    r->offset += (uint64_t)n;
    r->remaining -= (uint64_t)n;
    r->window -= (uint64_t)n;
    if (r->remaining == 0) {
        send_f_end(r->id);
        free_req(r, 0);
        return 0;
    }
    return 1;
}

/* One F_ENTRIES batch of a listing; returns 1 while the listing goes on. */
static int pump_list(struct freq *r)
{
    struct msg m;
    msg_begin(&m, &g.out, R_F_ENTRIES, r->id);
    msg_u32(&m, 0); /* count, patched below */
    uint32_t count = 0;
    int done = 0;
    int dfd = dirfd(r->dir);
    while (!m.err && count < LIST_BATCH_MAX && g.out.len - m.start < LIST_BATCH_BYTES) {
        errno = 0;
        struct dirent *de = readdir(r->dir);
        if (!de) {
            done = 1;
            break;
        }
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
            continue;
        struct stat st;
        if (fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
            continue; /* deleted meanwhile */
        char link[PATH_BUF];
        ssize_t ll = 0;
        if (S_ISLNK(st.st_mode) && (ll = readlinkat(dfd, de->d_name, link, sizeof(link))) < 0)
            ll = 0;
        put_info(&m, &st, de->d_name, link, (size_t)ll);
        count++;
    }
    if (m.err) {
        msg_abort(&m);
        return 1; /* queue full: try again later */
    }
    if (count > 0) {
        put32(g.out.data + m.start + FRAME_HDR, count);
        msg_end(&m);
    } else {
        msg_abort(&m);
    }
    if (done) {
        send_f_end(r->id);
        free_req(r, 0);
        return 0;
    }
    return 1;
}

int files_busy(void)
{
    return n_reqs > 0;
}

int files_pump(void)
{
    int more = 0;
    struct freq *r = reqs, *next;
    /* Called on every turn of the main loop: with no file transfer under way, skip the four set*id
     * calls, each a trip through the Sentry on runsc. */
    if (!r)
        return 0;
    fs_enter();
    for (; r; r = next) {
        next = r->next;
        if (!out_has_room()) {
            more = 0; /* the output queue wakes the loop when it drains */
            break;
        }
        if (r->kind == FR_READ)
            more |= pump_read(r) && r->window > 0;
        else if (r->kind == FR_LIST)
            more |= pump_list(r);
    }
    fs_leave();
    return more;
}

void files_abort_all(void)
{
    while (reqs)
        free_req(reqs, 1);
}
