/* Smoke test of the real binary, as a plain child process over two pipes: HELLO, a spawn of
 * `sh -c 'echo out; echo err >&2; exit 3'`, a PING, a garbage-free SHUTDOWN. The Java tests cover the
 * rest end to end; this one keeps `make test` meaningful on its own.
 *
 *   smoke_test <path to paddock-init> */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../proto.h"

static int to_init, from_init;

static void die(const char *what)
{
    fprintf(stderr, "smoke_test: FAIL: %s\n", what);
    exit(1);
}

static void send_msg(uint8_t type, uint32_t chan, struct buf *payload)
{
    uint8_t h[9];
    put32(h, (uint32_t)(5 + buf_used(payload)));
    h[4] = type;
    put32(h + 5, chan);
    uint8_t frame[4096];
    if (9 + buf_used(payload) > sizeof(frame))
        die("test frame too large");
    memcpy(frame, h, 9);
    memcpy(frame + 9, buf_start(payload), buf_used(payload));
    if (write(to_init, frame, 9 + buf_used(payload)) != (ssize_t)(9 + buf_used(payload)))
        die("write");
    buf_clear(payload);
}

static void readn(uint8_t *p, size_t n)
{
    while (n > 0) {
        struct pollfd pf = {from_init, POLLIN, 0};
        if (poll(&pf, 1, 10000) <= 0)
            die("timed out waiting for the init");
        ssize_t r = read(from_init, p, n);
        if (r <= 0)
            die("unexpected end of the init's output");
        p += r;
        n -= (size_t)r;
    }
}

/* Reads one frame; returns its type, the channel and payload in *chan / payload. */
static uint8_t recv_msg(uint32_t *chan, uint8_t *payload, size_t *len)
{
    uint8_t h[9];
    readn(h, 9);
    uint32_t l = be32(h);
    if (l < 5 || l - 5 > 65536)
        die("bad frame length");
    *len = l - 5;
    *chan = be32(h + 5);
    readn(payload, *len);
    return h[4];
}

static void put_str(struct buf *b, const char *s)
{
    uint8_t l[4];
    put32(l, (uint32_t)strlen(s));
    buf_append(b, l, 4);
    buf_append(b, s, strlen(s));
}

static void put_u32(struct buf *b, uint32_t v)
{
    uint8_t x[4];
    put32(x, v);
    buf_append(b, x, 4);
}

static void put_u64(struct buf *b, uint64_t v)
{
    uint8_t x[8];
    put64(x, v);
    buf_append(b, x, 8);
}

int main(int argc, char **argv)
{
    if (argc != 2)
        die("usage: smoke_test <paddock-init>");
    int in[2], out[2];
    if (pipe(in) < 0 || pipe(out) < 0)
        die("pipe");
    char tmpl[] = "/tmp/paddock-smoke-XXXXXX";
    if (!mkdtemp(tmpl))
        die("mkdtemp");
    pid_t pid = fork();
    if (pid == 0) {
        dup2(in[0], 0);
        dup2(out[1], 1);
        char logpath[128];
        snprintf(logpath, sizeof(logpath), "%s/init.log", tmpl);
        int lfd = open(logpath, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (lfd >= 0)
            dup2(lfd, 2);
        char uid[32], gid[32], wd[128];
        snprintf(uid, sizeof(uid), "--uid=%d", (int)getuid());
        snprintf(gid, sizeof(gid), "--gid=%d", (int)getgid());
        snprintf(wd, sizeof(wd), "--workdir=%s/work", tmpl);
        execl(argv[1], argv[1], uid, gid, wd, (char *)NULL);
        _exit(127);
    }
    close(in[0]);
    close(out[1]);
    to_init = in[1];
    from_init = out[0];
    signal(SIGPIPE, SIG_IGN);

    struct buf b;
    buf_init(&b, 1 << 16);
    static uint8_t p[65536];
    size_t n;
    uint32_t chan;

    put_u32(&b, 1);
    for (int i = 0; i < 16; i++)
        buf_append(&b, "N", 1);
    put_u32(&b, 0);
    send_msg(M_HELLO, 0, &b);
    if (recv_msg(&chan, p, &n) != R_HELLO_ACK || be32(p) != PDK_MAGIC || memcmp(p + 4, "NNNNNNNNNNNNNNNN", 16))
        die("HELLO_ACK");

    put_u32(&b, 0);
    put_u32(&b, (uint32_t)getuid());
    put_u32(&b, (uint32_t)getgid());
    put_u64(&b, 10000);
    put_u64(&b, UINT64_MAX);
    put_u64(&b, UINT64_MAX);
    put_u32(&b, 65536);
    put_u32(&b, 65536);
    put_str(&b, "/");
    put_u32(&b, 3);
    put_str(&b, "sh");
    put_str(&b, "-c");
    put_str(&b, "echo out; echo err >&2; exit 3");
    put_u32(&b, 1);
    put_str(&b, "PATH=/usr/bin:/bin");
    put_u32(&b, 0);
    send_msg(M_SPAWN, 5, &b);

    char outs[2][64] = {"", ""};
    int got_spawned = 0, got_exit = 0;
    while (!got_exit) {
        uint8_t t = recv_msg(&chan, p, &n);
        if (chan != 5)
            die("unexpected channel");
        if (t == R_SPAWNED)
            got_spawned = 1;
        else if (t == R_DATA && n >= 1 && (p[0] == 1 || p[0] == 2)) {
            char *o = outs[p[0] - 1];
            size_t have = strlen(o), add = n - 1;
            if (have + add >= sizeof(outs[0]))
                die("too much output");
            memcpy(o + have, p + 1, add);
            o[have + add] = 0;
        }
        else if (t == R_EXIT) {
            struct rd r;
            rd_init(&r, p, n);
            if (rd_u8(&r) != EXIT_EXITED || rd_u32(&r) != 3)
                die("EXIT: expected exited with code 3");
            got_exit = 1;
        }
    }
    if (!got_spawned || strcmp(outs[0], "out\n") || strcmp(outs[1], "err\n"))
        die("stdout/stderr");

    buf_append(&b, "ping", 4);
    send_msg(M_PING, 0, &b);
    if (recv_msg(&chan, p, &n) != R_PONG || n != 4 || memcmp(p, "ping", 4))
        die("PONG");

    send_msg(M_SHUTDOWN, 0, &b);
    int st;
    if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
        die("init did not exit 0 on SHUTDOWN");
    char cmd[256];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpl);
    if (system(cmd) != 0)
        die("cleanup");
    printf("smoke_test: OK\n");
    return 0;
}
