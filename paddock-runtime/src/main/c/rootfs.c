/*
 * paddock-rootfs: the mount and btrfs calls that give a sandbox its root filesystem. Java has no mount,
 * open_tree, mount_setattr or ioctl, so the few calls live here; everything else (which layers, where,
 * which sizes) is decided by the engine and passed as arguments.
 *
 *   paddock-rootfs create <uid-base> <subvol> <limit-bytes> <layers-dir> <lowers> <target> [ENTRY...]
 *       All of a new sandbox's root in one process:
 *       - the btrfs subvolume <subvol>, its quota group limited to <limit-bytes> referenced bytes in the same
 *         ioctl, so that there is never a subvolume without its limit;
 *       - <subvol>/upper and <subvol>/work, and each ENTRY in upper: d:PATH:MODE:UID:GID (a directory; an
 *         empty PATH is upper itself) or f:PATH:MODE:UID:GID:CONTENT (a file), MODE octal, PATH relative
 *         without "..", made without following links. What the entries are is the engine's decision;
 *       - an overlay at <target>: the lower layers are <layers-dir>/<name> for each ':'-separated name in
 *         <lowers> (topmost first), seen through an idmapped, read-only clone of <layers-dir> that maps the
 *         image's ids 0..65535 to the sandbox's host range <uid-base>..<uid-base>+65535; writes go to upper,
 *         which is not idmapped: files there carry the sandbox's host ids, as files a sandbox writes anywhere
 *         do. The layers are stored once, owned by the image's own ids, and shared by every sandbox whatever
 *         its range. The overlay uses user.overlay.* xattrs ("userxattr"), so that the engine can read
 *         opaque-directory marks in an upper dir without privileges.
 *   paddock-rootfs overlay <uid-base> <lower-parent> <lower-name> <dir> <target> [ENTRY...]
 *       An overlay at <target> of one read-only directory, <lower-parent>/<lower-name>, seen through the same
 *       idmapped clone as a root's layers, with a writable layer of the sandbox's own: <dir>/upper and
 *       <dir>/work are made (in a subvolume the caller made), each ENTRY in upper as for create. A codebase's
 *       view in a sandbox: its writes land in <dir>/upper, never in the directory below.
 *   paddock-rootfs bind <uid-base> <source> <target> ro|rw
 *       Mounts <source> at <target> through an idmapped clone (image ids 0..65535 as the sandbox's range),
 *       nosuid and nodev, read-only with ro. A volume in a sandbox: writes land in <source>, owned by the ids
 *       they have in the sandbox, so that sandboxes of different ranges share it.
 *   paddock-rootfs subvol-create <path> <limit-bytes>
 *       Creates the btrfs subvolume <path> with its quota group limited to <limit-bytes> referenced bytes.
 *   paddock-rootfs snapshot <source> <path> [limit-bytes]
 *       Creates <path> as a writable btrfs snapshot of the subvolume <source>: an O(1) copy; with a limit, its
 *       quota group is limited to it in the same ioctl (a fork's writable layer).
 *   paddock-rootfs mount <uid-base> <layers-dir> <lowers> <upper> <work> <target>
 *       The overlay of create, over an upper and work directory that exist already (a fork's copy of a
 *       sandbox's writable layer).
 *   paddock-rootfs umount <target>
 *       Detaches the mount at <target>; succeeds when nothing is mounted there.
 *   paddock-rootfs subvol-delete <path>
 *       Deletes the btrfs subvolume <path> with everything in it, and its quota group; succeeds when
 *       <path> does not exist.
 *   paddock-rootfs remove-root <target> <subvol>
 *       umount <target>, then subvol-delete <subvol>: a sandbox's root gone in one process.
 *
 * Any command may be preceded by "-p <path>" (repeated): each <path> is first made a FIFO readable and
 * writable by its owner only (mkfifo, failing if anything is there), so that a new sandbox's channel to its
 * init costs no process of its own.
 *
 * Exit status: 0, or 1 with the reason on stderr.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

/* The kernel ABI this program uses, spelled out: musl's headers do not carry linux/mount.h or btrfs.h. */
#ifndef SYS_open_tree
#define SYS_open_tree 428
#endif
#ifndef SYS_move_mount
#define SYS_move_mount 429
#endif
#ifndef SYS_mount_setattr
#define SYS_mount_setattr 442
#endif
#define OPEN_TREE_CLONE_ 1
#define AT_RECURSIVE_ 0x8000
#define MOUNT_ATTR_RDONLY_ 0x00000001
#define MOUNT_ATTR_NOSUID_ 0x00000002
#define MOUNT_ATTR_NODEV_ 0x00000004
#define MOUNT_ATTR_IDMAP_ 0x00100000
#define MOVE_MOUNT_F_EMPTY_PATH_ 0x00000004

struct mount_attr_ {
    uint64_t attr_set;
    uint64_t attr_clr;
    uint64_t propagation;
    uint64_t userns_fd;
};

#define BTRFS_IOCTL_MAGIC 0x94
#define BTRFS_SUBVOL_NAME_MAX 4039
#define BTRFS_SUBVOL_QGROUP_INHERIT (1ULL << 2)
#define BTRFS_QGROUP_INHERIT_SET_LIMITS (1ULL << 0)
#define BTRFS_QGROUP_LIMIT_MAX_RFER (1ULL << 0)

struct btrfs_qgroup_limit_ {
    uint64_t flags;
    uint64_t max_rfer;
    uint64_t max_excl;
    uint64_t rsv_rfer;
    uint64_t rsv_excl;
};

struct btrfs_qgroup_inherit_ {
    uint64_t flags;
    uint64_t num_qgroups;
    uint64_t num_ref_copies;
    uint64_t num_excl_copies;
    struct btrfs_qgroup_limit_ lim;
};

struct btrfs_ioctl_vol_args_v2_ {
    int64_t fd;
    uint64_t transid;
    uint64_t flags;
    union {
        struct {
            uint64_t size;
            struct btrfs_qgroup_inherit_ *qgroup_inherit;
        };
        uint64_t unused[4];
    };
    union {
        char name[BTRFS_SUBVOL_NAME_MAX + 1];
        uint64_t devid;
        uint64_t subvolid;
    };
};

struct btrfs_ioctl_vol_args_ {
    int64_t fd;
    char name[4087 + 1];
};

struct btrfs_ioctl_qgroup_create_args_ {
    uint64_t create;
    uint64_t qgroupid;
};

struct btrfs_ioctl_ino_lookup_args_ {
    uint64_t treeid;
    uint64_t objectid;
    char name[4080];
};

#define BTRFS_IOC_SNAP_CREATE_V2 _IOW(BTRFS_IOCTL_MAGIC, 23, struct btrfs_ioctl_vol_args_v2_)
#define BTRFS_IOC_SNAP_DESTROY _IOW(BTRFS_IOCTL_MAGIC, 15, struct btrfs_ioctl_vol_args_)
#define BTRFS_IOC_INO_LOOKUP _IOWR(BTRFS_IOCTL_MAGIC, 18, struct btrfs_ioctl_ino_lookup_args_)
#define BTRFS_IOC_SUBVOL_CREATE_V2 _IOW(BTRFS_IOCTL_MAGIC, 24, struct btrfs_ioctl_vol_args_v2_)
#define BTRFS_IOC_QGROUP_CREATE _IOW(BTRFS_IOCTL_MAGIC, 42, struct btrfs_ioctl_qgroup_create_args_)

static int fail(const char *what, const char *arg) {
    fprintf(stderr, "paddock-rootfs: %s%s%s: %s\n", what, arg ? " " : "", arg ? arg : "", strerror(errno));
    return 1;
}

static int number(const char *s, unsigned long long *out) {
    char *end;
    errno = 0;
    *out = strtoull(s, &end, 10);
    return errno == 0 && *s != '\0' && *end == '\0' ? 0 : -1;
}

static int write_file(const char *path, const char *text) {
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0) {
        return -1;
    }
    ssize_t n = (ssize_t) strlen(text);
    int ok = write(fd, text, (size_t) n) == n;
    close(fd);
    return ok ? 0 : -1;
}

/* A user namespace mapping 0..65535 to base..base+65535, as an open fd: a child unshares one and waits
 * while this process writes its maps; the namespace outlives the child through the fd. */
static int idmap_userns(unsigned long long base) {
    int sync[2];
    if (pipe2(sync, O_CLOEXEC) < 0) {
        return -1;
    }
    pid_t child = fork();
    if (child < 0) {
        return -1;
    }
    if (child == 0) {
        char c;
        close(sync[1]);
        if (unshare(CLONE_NEWUSER) < 0) {
            _exit(1);
        }
        /* Wait until the parent has opened the namespace and closes its end. */
        while (read(sync[0], &c, 1) < 0 && errno == EINTR) {
        }
        _exit(0);
    }
    close(sync[0]);
    char path[64], map[64];
    int fd = -1;
    /* The child's unshare may not have happened yet: wait until its namespace differs from ours. */
    struct stat self, other;
    snprintf(path, sizeof path, "/proc/%d/ns/user", (int) child);
    if (stat("/proc/self/ns/user", &self) == 0) {
        for (int i = 0; i < 100000; i++) {
            if (stat(path, &other) == 0 && other.st_ino != self.st_ino) {
                break;
            }
            sched_yield();
        }
    }
    snprintf(map, sizeof map, "0 %llu 65536\n", base);
    snprintf(path, sizeof path, "/proc/%d/uid_map", (int) child);
    if (write_file(path, map) == 0) {
        snprintf(path, sizeof path, "/proc/%d/setgroups", (int) child);
        write_file(path, "deny");
        snprintf(path, sizeof path, "/proc/%d/gid_map", (int) child);
        if (write_file(path, map) == 0) {
            snprintf(path, sizeof path, "/proc/%d/ns/user", (int) child);
            fd = open(path, O_RDONLY | O_CLOEXEC);
        }
    }
    int saved = errno;
    close(sync[1]);
    waitpid(child, NULL, 0);
    errno = saved;
    return fd;
}

static int do_mount(char **argv) {
    unsigned long long base;
    if (number(argv[0], &base) < 0 || base == 0 || base > UINT32_MAX - 65536) {
        fprintf(stderr, "paddock-rootfs: bad uid base %s\n", argv[0]);
        return 1;
    }
    const char *layers = argv[1], *lowers = argv[2], *upper = argv[3], *work = argv[4], *target = argv[5];
    if (strstr(lowers, "..") || strchr(lowers, '/') || strchr(lowers, ',') || lowers[0] == '\0') {
        fprintf(stderr, "paddock-rootfs: bad layer list %s\n", lowers);
        return 1;
    }
    /* Upper and work are named to the overlay as /proc/self/fd/N: the mount's options, which a sandbox reads in
     * its /proc/self/mountinfo, then hold no host path (the storage directory, the sandbox's id). */
    int ufd = open(upper, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    int wfd = open(work, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (ufd < 0 || wfd < 0) {
        return fail("open", ufd < 0 ? upper : work);
    }
    int ns = idmap_userns(base);
    if (ns < 0) {
        return fail("cannot make the id-mapping user namespace", NULL);
    }
    int tree = (int) syscall(SYS_open_tree, AT_FDCWD, layers, OPEN_TREE_CLONE_ | O_CLOEXEC | AT_RECURSIVE_);
    if (tree < 0) {
        return fail("open_tree", layers);
    }
    struct mount_attr_ attr = {.attr_set = MOUNT_ATTR_IDMAP_ | MOUNT_ATTR_RDONLY_, .userns_fd = (uint64_t) ns};
    if (syscall(SYS_mount_setattr, tree, "", AT_EMPTY_PATH | AT_RECURSIVE_, &attr, sizeof attr) < 0) {
        return fail("cannot id-map", layers);
    }
    /* The lower dirs are named relative to the detached, idmapped clone: it is our working directory. */
    if (fchdir(tree) < 0) {
        return fail("fchdir", layers);
    }
    char opts[4096];
    int n = snprintf(opts, sizeof opts, "lowerdir=%s,upperdir=/proc/self/fd/%d,workdir=/proc/self/fd/%d,userxattr",
                     lowers, ufd, wfd);
    if (n < 0 || (size_t) n >= sizeof opts) {
        fprintf(stderr, "paddock-rootfs: too many layers for one overlay mount\n");
        return 1;
    }
    if (mount("overlay", target, "overlay", MS_NODEV, opts) < 0) {
        return fail("mount overlay at", target);
    }
    return 0;
}

static int do_subvol_create(const char *path, const char *limit_s);

/* Makes one ENTRY (see above) under the directory fd `upper`. */
static int make_entry(int upper, const char *spec) {
    char buf[8192];
    if (strlen(spec) >= sizeof buf || (spec[0] != 'd' && spec[0] != 'f') || spec[1] != ':') {
        fprintf(stderr, "paddock-rootfs: bad entry %.80s\n", spec);
        return 1;
    }
    strcpy(buf, spec + 2);
    char *fields[5] = {0};
    char *p = buf;
    int want = spec[0] == 'f' ? 5 : 4;
    for (int i = 0; i < want; i++) {
        fields[i] = p;
        char *colon = i < want - 1 ? strchr(p, ':') : NULL;
        if (i < want - 1) {
            if (!colon) {
                fprintf(stderr, "paddock-rootfs: bad entry %.80s\n", spec);
                return 1;
            }
            *colon = '\0';
            p = colon + 1;
        }
    }
    const char *path = fields[0];
    unsigned long mode = strtoul(fields[1], NULL, 8);
    unsigned long long uid, gid;
    if (strstr(path, "..") || path[0] == '/' || mode > 07777 || number(fields[2], &uid) < 0 || number(fields[3], &gid) < 0) {
        fprintf(stderr, "paddock-rootfs: bad entry %.80s\n", spec);
        return 1;
    }
    int fd;
    if (path[0] == '\0') {
        fd = dup(upper);
    } else if (spec[0] == 'd') {
        if (mkdirat(upper, path, 0700) < 0 && errno != EEXIST) {
            return fail("mkdir", path);
        }
        fd = openat(upper, path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    } else {
        fd = openat(upper, path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd >= 0) {
            size_t n = strlen(fields[4]);
            if (write(fd, fields[4], n) != (ssize_t) n) {
                return fail("write", path);
            }
        }
    }
    if (fd < 0) {
        return fail("open", path);
    }
    if (fchown(fd, (uid_t) uid, (gid_t) gid) < 0 || fchmod(fd, (mode_t) mode) < 0) {
        return fail("chown", path);
    }
    close(fd);
    return 0;
}

static int do_create(int argc, char **argv) {
    /* argv: uid-base subvol limit layers lowers target entries... */
    const char *subvol = argv[1];
    if (do_subvol_create(subvol, argv[2]) != 0) {
        return 1;
    }
    char upper[PATH_MAX], work[PATH_MAX];
    if ((size_t) snprintf(upper, sizeof upper, "%s/upper", subvol) >= sizeof upper
        || (size_t) snprintf(work, sizeof work, "%s/work", subvol) >= sizeof work) {
        fprintf(stderr, "paddock-rootfs: path too long\n");
        return 1;
    }
    if (mkdir(upper, 0700) < 0 || mkdir(work, 0700) < 0) {
        return fail("mkdir in", subvol);
    }
    int ufd = open(upper, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (ufd < 0) {
        return fail("open", upper);
    }
    for (int i = 6; i < argc; i++) {
        if (make_entry(ufd, argv[i]) != 0) {
            return 1;
        }
    }
    close(ufd);
    char *mount_args[6] = {argv[0], argv[3], argv[4], upper, work, argv[5]};
    return do_mount(mount_args);
}

static int do_umount(const char *target) {
    if (umount2(target, MNT_DETACH | UMOUNT_NOFOLLOW) < 0 && errno != EINVAL && errno != ENOENT) {
        return fail("umount", target);
    }
    return 0;
}

/* Splits path into an open parent directory and the last component. */
static int open_parent(const char *path, char *name, size_t size) {
    char dir[PATH_MAX];
    if (strlen(path) >= sizeof dir) {
        errno = ENAMETOOLONG;
        return -1;
    }
    strcpy(dir, path);
    char *slash = strrchr(dir, '/');
    if (!slash || slash[1] == '\0' || strlen(slash + 1) >= size) {
        errno = EINVAL;
        return -1;
    }
    strcpy(name, slash + 1);
    if (slash == dir) {
        slash[1] = '\0';
    } else {
        *slash = '\0';
    }
    return open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
}

static int do_subvol_create(const char *path, const char *limit_s) {
    unsigned long long limit;
    if (number(limit_s, &limit) < 0 || limit == 0) {
        fprintf(stderr, "paddock-rootfs: bad limit %s\n", limit_s);
        return 1;
    }
    struct btrfs_ioctl_vol_args_v2_ args;
    memset(&args, 0, sizeof args);
    int parent = open_parent(path, args.name, sizeof args.name);
    if (parent < 0) {
        return fail("cannot open the parent of", path);
    }
    struct btrfs_qgroup_inherit_ inherit;
    memset(&inherit, 0, sizeof inherit);
    inherit.flags = BTRFS_QGROUP_INHERIT_SET_LIMITS;
    inherit.lim.flags = BTRFS_QGROUP_LIMIT_MAX_RFER;
    inherit.lim.max_rfer = limit;
    args.flags = BTRFS_SUBVOL_QGROUP_INHERIT;
    args.size = sizeof inherit;
    args.qgroup_inherit = &inherit;
    if (ioctl(parent, BTRFS_IOC_SUBVOL_CREATE_V2, &args) < 0) {
        return fail("cannot create the btrfs subvolume", path);
    }
    return 0;
}

static int do_subvol_delete(const char *path) {
    struct btrfs_ioctl_vol_args_ args;
    memset(&args, 0, sizeof args);
    int sub = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
    if (sub < 0) {
        return errno == ENOENT ? 0 : fail("open", path);
    }
    /* Its id, to remove its quota group after it is gone (else stale groups pile up). */
    struct btrfs_ioctl_ino_lookup_args_ lookup;
    memset(&lookup, 0, sizeof lookup);
    lookup.objectid = 256; /* BTRFS_FIRST_FREE_OBJECTID: the subvolume's root directory */
    int have_id = ioctl(sub, BTRFS_IOC_INO_LOOKUP, &lookup) == 0;
    close(sub);
    int parent = open_parent(path, args.name, sizeof args.name);
    if (parent < 0) {
        return fail("cannot open the parent of", path);
    }
    if (ioctl(parent, BTRFS_IOC_SNAP_DESTROY, &args) < 0) {
        return errno == ENOENT ? 0 : fail("cannot delete the btrfs subvolume", path);
    }
    if (have_id) {
        struct btrfs_ioctl_qgroup_create_args_ q = {.create = 0, .qgroupid = lookup.treeid};
        ioctl(parent, BTRFS_IOC_QGROUP_CREATE, &q); /* best effort: the kernel may still be cleaning it */
    }
    return 0;
}

static int parse_base(const char *s, unsigned long long *base) {
    if (number(s, base) < 0 || *base == 0 || *base > UINT32_MAX - 65536) {
        fprintf(stderr, "paddock-rootfs: bad uid base %s\n", s);
        return -1;
    }
    return 0;
}

/* Makes <dir>/upper (with the entries) and <dir>/work; returns 0 or 1 with the reason printed. */
static int make_upper(const char *dir, char *upper, char *work, char **entries, int n) {
    if ((size_t) snprintf(upper, PATH_MAX, "%s/upper", dir) >= PATH_MAX
        || (size_t) snprintf(work, PATH_MAX, "%s/work", dir) >= PATH_MAX) {
        fprintf(stderr, "paddock-rootfs: path too long\n");
        return 1;
    }
    if ((mkdir(dir, 0700) < 0 && errno != EEXIST) || mkdir(upper, 0700) < 0 || mkdir(work, 0700) < 0) {
        return fail("mkdir in", dir);
    }
    int ufd = open(upper, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (ufd < 0) {
        return fail("open", upper);
    }
    for (int i = 0; i < n; i++) {
        if (make_entry(ufd, entries[i]) != 0) {
            return 1;
        }
    }
    close(ufd);
    return 0;
}

static int do_overlay(int argc, char **argv) {
    /* argv: uid-base lower-parent lower-name dir target entries... */
    char upper[PATH_MAX], work[PATH_MAX];
    if (make_upper(argv[3], upper, work, argv + 5, argc - 5) != 0) {
        return 1;
    }
    char *mount_args[6] = {argv[0], argv[1], argv[2], upper, work, argv[4]};
    return do_mount(mount_args);
}

static int do_bind(char **argv) {
    /* argv: uid-base source target ro|rw */
    unsigned long long base;
    if (parse_base(argv[0], &base) < 0) {
        return 1;
    }
    int ro = !strcmp(argv[3], "ro");
    if (!ro && strcmp(argv[3], "rw")) {
        fprintf(stderr, "paddock-rootfs: bad mode %s (ro or rw)\n", argv[3]);
        return 1;
    }
    int ns = idmap_userns(base);
    if (ns < 0) {
        return fail("cannot make the id-mapping user namespace", NULL);
    }
    int tree = (int) syscall(SYS_open_tree, AT_FDCWD, argv[1], OPEN_TREE_CLONE_ | O_CLOEXEC);
    if (tree < 0) {
        return fail("open_tree", argv[1]);
    }
    struct mount_attr_ attr = {.attr_set = MOUNT_ATTR_IDMAP_ | MOUNT_ATTR_NOSUID_ | MOUNT_ATTR_NODEV_
                                           | (ro ? MOUNT_ATTR_RDONLY_ : 0), .userns_fd = (uint64_t) ns};
    if (syscall(SYS_mount_setattr, tree, "", AT_EMPTY_PATH, &attr, sizeof attr) < 0) {
        return fail("cannot id-map", argv[1]);
    }
    if (syscall(SYS_move_mount, tree, "", AT_FDCWD, argv[2], MOVE_MOUNT_F_EMPTY_PATH_) < 0) {
        return fail("cannot mount at", argv[2]);
    }
    return 0;
}

static int do_snapshot(const char *source, const char *path, const char *limit_s) {
    struct btrfs_ioctl_vol_args_v2_ args;
    memset(&args, 0, sizeof args);
    struct btrfs_qgroup_inherit_ inherit;
    memset(&inherit, 0, sizeof inherit);
    if (limit_s) {
        unsigned long long limit;
        if (number(limit_s, &limit) < 0 || limit == 0) {
            fprintf(stderr, "paddock-rootfs: bad limit %s\n", limit_s);
            return 1;
        }
        inherit.flags = BTRFS_QGROUP_INHERIT_SET_LIMITS;
        inherit.lim.flags = BTRFS_QGROUP_LIMIT_MAX_RFER;
        inherit.lim.max_rfer = limit;
        args.flags = BTRFS_SUBVOL_QGROUP_INHERIT;
        args.size = sizeof inherit;
        args.qgroup_inherit = &inherit;
    }
    int src = open(source, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (src < 0) {
        return fail("open", source);
    }
    int parent = open_parent(path, args.name, sizeof args.name);
    if (parent < 0) {
        return fail("cannot open the parent of", path);
    }
    args.fd = src;
    if (ioctl(parent, BTRFS_IOC_SNAP_CREATE_V2, &args) < 0) {
        return fail("cannot snapshot the btrfs subvolume", source);
    }
    return 0;
}

int main(int argc, char **argv) {
    while (argc >= 3 && !strcmp(argv[1], "-p")) {
        mode_t old = umask(0077); /* exactly 0600, whatever umask the engine has */
        int made = mkfifo(argv[2], 0600);
        umask(old);
        if (made < 0) {
            return fail("mkfifo", argv[2]);
        }
        argv[2] = argv[0];
        argc -= 2;
        argv += 2;
    }
    if (argc >= 8 && !strcmp(argv[1], "create")) {
        return do_create(argc - 2, argv + 2);
    }
    if (argc >= 7 && !strcmp(argv[1], "overlay")) {
        return do_overlay(argc - 2, argv + 2);
    }
    if (argc == 6 && !strcmp(argv[1], "bind")) {
        return do_bind(argv + 2);
    }
    if (argc == 4 && !strcmp(argv[1], "subvol-create")) {
        return do_subvol_create(argv[2], argv[3]);
    }
    if ((argc == 4 || argc == 5) && !strcmp(argv[1], "snapshot")) {
        return do_snapshot(argv[2], argv[3], argc == 5 ? argv[4] : NULL);
    }
    if (argc == 8 && !strcmp(argv[1], "mount")) {
        return do_mount(argv + 2);
    }
    if (argc == 3 && !strcmp(argv[1], "umount")) {
        return do_umount(argv[2]);
    }
    if (argc == 3 && !strcmp(argv[1], "subvol-delete")) {
        return do_subvol_delete(argv[2]);
    }
    if (argc == 4 && !strcmp(argv[1], "remove-root")) {
        return do_umount(argv[2]) != 0 ? 1 : do_subvol_delete(argv[3]);
    }
    fprintf(stderr, "usage: paddock-rootfs [-p <fifo>]... COMMAND, where COMMAND is one of\n"
                    "       paddock-rootfs create <uid-base> <subvol> <limit-bytes> <layers-dir> <lowers> <target> [ENTRY...]\n"
                    "       paddock-rootfs overlay <uid-base> <lower-parent> <lower-name> <dir> <target> [ENTRY...]\n"
                    "       paddock-rootfs bind <uid-base> <source> <target> ro|rw\n"
                    "       paddock-rootfs subvol-create <path> <limit-bytes>\n"
                    "       paddock-rootfs snapshot <source> <path> [limit-bytes]\n"
                    "       paddock-rootfs mount <uid-base> <layers-dir> <lowers> <upper> <work> <target>\n"
                    "       paddock-rootfs umount <target>\n"
                    "       paddock-rootfs subvol-delete <path>\n"
                    "       paddock-rootfs remove-root <target> <subvol>\n");
    return 2;
}
