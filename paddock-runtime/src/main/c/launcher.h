/*
 * What the runtime launchers (userns_run.c, runsc_userns.c) share: failing with a reason on stderr (the runtime's
 * log), parsing a decimal argument, writing a /proc file in one write. Each defines PROGRAM (its name, for its
 * messages) and includes this once.
 */
#ifndef PADDOCK_LAUNCHER_H
#define PADDOCK_LAUNCHER_H

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The exit status when the launcher itself failed (not the runtime it runs). */
#define FAIL 125

static void die(const char *what) {
    fprintf(stderr, PROGRAM ": %s: %s\n", what, strerror(errno));
    _exit(FAIL);
}

static unsigned long number(const char *s, const char *what) {
    char *end;
    errno = 0;
    unsigned long v = strtoul(s, &end, 10);
    if (errno != 0 || *s == '\0' || *end != '\0') {
        fprintf(stderr, PROGRAM ": bad %s: %s\n", what, s);
        _exit(FAIL);
    }
    return v;
}

static void write_file(const char *path, const char *text) {
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0) {
        die(path);
    }
    size_t n = strlen(text);
    if (write(fd, text, n) != (ssize_t) n) {
        die(path);
    }
    close(fd);
}

#endif
