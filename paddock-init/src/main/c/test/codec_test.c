/* Golden-vector test of the C codec: decodes every engine->init vector and asserts its fields, encodes
 * every init->engine vector and compares the bytes. Also feeds truncated and oversized input to the
 * decoders, which must fail cleanly.
 *
 *   codec_test <golden dir> */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../proto.h"

static int failures;
static const char *current;
static const char *dir;

#define CHECK(c)                                                                                  \
    do {                                                                                          \
        if (!(c)) {                                                                               \
            fprintf(stderr, "FAIL %s:%d [%s]: %s\n", __FILE__, __LINE__, current, #c);             \
            failures++;                                                                           \
        }                                                                                         \
    } while (0)

#define MAX_FRAMES 16
struct vec {
    uint8_t *frame[MAX_FRAMES];
    size_t len[MAX_FRAMES];
    int n;
    uint8_t all[1 << 16]; /* all frames concatenated */
    size_t all_len;
};

static int hexval(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

static void load(const char *name, struct vec *v)
{
    current = name;
    char path[1024];
    snprintf(path, sizeof(path), "%s/%s.hex", dir, name);
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "cannot open %s\n", path);
        exit(2);
    }
    memset(v, 0, sizeof(*v));
    static char line[1 << 17];
    while (fgets(line, sizeof(line), f)) {
        size_t l = strcspn(line, "\r\n");
        if (l == 0)
            continue;
        if (v->n == MAX_FRAMES || l % 2) {
            fprintf(stderr, "bad vector %s\n", path);
            exit(2);
        }
        uint8_t *p = v->all + v->all_len;
        for (size_t i = 0; i < l; i += 2)
            p[i / 2] = (uint8_t)(hexval(line[i]) * 16 + hexval(line[i + 1]));
        v->frame[v->n] = p;
        v->len[v->n] = l / 2;
        v->all_len += l / 2;
        v->n++;
    }
    fclose(f);
}

static struct assembler as;

/* Runs the vector's frames through the splitter and the assembler; returns the message. */
static struct frame decode(const char *name, struct vec *v)
{
    load(name, v);
    struct frame out;
    memset(&out, 0, sizeof(out));
    for (int i = 0; i < v->n; i++) {
        CHECK(frame_split(v->frame[i], v->len[i], IN_FRAME_MAX) == (long)v->len[i]);
        enum asm_result r = asm_feed(&as, v->frame[i], v->len[i], &out);
        CHECK(r == (i == v->n - 1 ? ASM_MESSAGE : ASM_NONE));
    }
    return out;
}

static int bytes_eq(struct rd *r, const char *want)
{
    uint32_t n;
    const uint8_t *p = rd_bytes(r, &n);
    return !r->err && n == strlen(want) && memcmp(p, want, n) == 0;
}

static void expect_encoded(const char *name, struct buf *b)
{
    struct vec v;
    load(name, &v);
    CHECK(buf_used(b) == v.all_len);
    CHECK(buf_used(b) == v.all_len && memcmp(buf_start(b), v.all, v.all_len) == 0);
    buf_clear(b);
}

static void test_engine_to_init(void)
{
    static struct vec v;
    struct frame f;
    struct rd r;
    uint8_t nonce[16], want_nonce[16];
    for (int i = 0; i < 16; i++)
        want_nonce[i] = (uint8_t)i;

    f = decode("hello", &v);
    CHECK(f.type == 0x01 && f.chan == 0);
    rd_init(&r, f.payload, f.len);
    CHECK(rd_u32(&r) == 1);
    rd_raw(&r, nonce, 16);
    CHECK(memcmp(nonce, want_nonce, 16) == 0);
    CHECK(rd_u32(&r) == HELLO_ORPHAN_DIE);
    CHECK(!r.err && rd_left(&r) == 0);

    f = decode("spawn", &v);
    CHECK(f.type == 0x02 && f.chan == 7);
    struct spawn_req s;
    CHECK(spawn_decode(&s, f.payload, f.len) == 0);
    CHECK(s.flags == SPAWN_STDIN_PIPE && s.uid == 1000 && s.gid == 1000 && s.timeout_ms == 5000);
    CHECK(s.cap[0] == U64_NONE && s.cap[1] == 1048576 && s.win[0] == 262144 && s.win[1] == 65536);
    CHECK(s.cwd && strcmp(s.cwd, "/workspace") == 0);
    CHECK(s.argv && !strcmp(s.argv[0], "sh") && !strcmp(s.argv[1], "-c") && !strcmp(s.argv[2], "echo hi") &&
          s.argv[3] == NULL);
    CHECK(s.envp && !strcmp(s.envp[0], "PATH=/usr/bin:/bin") && !strcmp(s.envp[1], "HOME=/workspace") &&
          s.envp[2] == NULL);
    CHECK(s.n_rlim == 1 && s.rlim[0].res == 7 && s.rlim[0].soft == 1024 && s.rlim[0].hard == 2048);
    spawn_req_free(&s);

    /* Every truncation of a valid SPAWN must be refused, never crash or over-read. */
    for (size_t cut = 0; cut < f.len; cut++) {
        struct spawn_req t;
        CHECK(spawn_decode(&t, f.payload, cut) < 0);
        spawn_req_free(&t);
    }

    f = decode("spawn_fragmented", &v);
    CHECK(v.n == 2 && (v.frame[0][4] & TYPE_MORE) && v.len[0] == 4096);
    CHECK(f.type == 0x02 && f.chan == 9);
    CHECK(spawn_decode(&s, f.payload, f.len) == 0);
    CHECK(s.argv && !strcmp(s.argv[0], "true") && s.envp && strlen(s.envp[0]) == 5002 && s.n_rlim == 0);
    CHECK(s.cap[0] == U64_NONE && s.cap[1] == U64_NONE && s.cwd && !strcmp(s.cwd, "/"));
    spawn_req_free(&s);

    f = decode("spawn_pty", &v);
    CHECK(f.type == 0x02 && f.chan == 11);
    CHECK(spawn_decode(&s, f.payload, f.len) == 0);
    CHECK(s.flags == (SPAWN_STDIN_PIPE | SPAWN_PTY) && s.rows == 24 && s.cols == 80 && s.n_rlim == 0);
    CHECK(s.argv && !strcmp(s.argv[0], "bash") && !strcmp(s.argv[1], "-i") && s.argv[2] == NULL);
    spawn_req_free(&s);
    /* The size is required with PTY, and a zero side is refused. */
    for (size_t cut = f.len - 8; cut < f.len; cut++) {
        struct spawn_req t;
        CHECK(spawn_decode(&t, f.payload, cut) < 0);
        spawn_req_free(&t);
    }
    {
        uint8_t zero[4096];
        memcpy(zero, f.payload, f.len);
        put32(zero + f.len - 4, 0);
        struct spawn_req t;
        CHECK(spawn_decode(&t, zero, f.len) < 0);
        spawn_req_free(&t);
    }
    f = decode("resize", &v);
    rd_init(&r, f.payload, f.len);
    CHECK(f.type == 0x0C && f.chan == 11 && rd_u32(&r) == 50 && rd_u32(&r) == 132 && !r.err && rd_left(&r) == 0);

    f = decode("stdin", &v);
    CHECK(f.type == 0x03 && f.chan == 7 && f.len == 6 && memcmp(f.payload, "hello\n", 6) == 0);
    f = decode("stdin_close", &v);
    CHECK(f.type == 0x04 && f.chan == 7 && f.len == 0);
    f = decode("signal", &v);
    rd_init(&r, f.payload, f.len);
    CHECK(f.type == 0x05 && rd_u32(&r) == 15 && rd_u8(&r) == 0 && !r.err);
    f = decode("kill", &v);
    rd_init(&r, f.payload, f.len);
    CHECK(f.type == 0x05 && rd_u32(&r) == 9 && rd_u8(&r) == 1 && !r.err);
    f = decode("window", &v);
    rd_init(&r, f.payload, f.len);
    CHECK(f.type == 0x06 && f.chan == 7 && rd_u8(&r) == 1 && rd_u32(&r) == 65536 && !r.err);
    f = decode("deadline", &v);
    rd_init(&r, f.payload, f.len);
    CHECK(f.type == 0x07 && rd_u64(&r) == 123456789000ull && !r.err);
    f = decode("deadline_in", &v);
    rd_init(&r, f.payload, f.len);
    CHECK(f.type == 0x0B && f.chan == 0 && rd_u64(&r) == 30000000000ull && !r.err);
    f = decode("ping", &v);
    CHECK(f.type == 0x08 && f.len == 8 && memcmp(f.payload, "12345678", 8) == 0);
    f = decode("release", &v);
    CHECK(f.type == 0x09 && f.chan == 7 && f.len == 0);
    f = decode("shutdown", &v);
    CHECK(f.type == 0x0A && f.chan == 0 && f.len == 0);

    f = decode("f_read", &v);
    rd_init(&r, f.payload, f.len);
    CHECK(f.type == 0x10 && f.chan == 100 && bytes_eq(&r, "/workspace/a.txt"));
    CHECK(rd_u64(&r) == 0 && rd_u64(&r) == U64_NONE && rd_u32(&r) == 262144 && !r.err);
    f = decode("f_write_open", &v);
    rd_init(&r, f.payload, f.len);
    CHECK(f.type == 0x11 && f.chan == 101 && bytes_eq(&r, "out/b.bin"));
    CHECK(rd_u32(&r) == 0644 && rd_u32(&r) == (FWRITE_PARENTS | FWRITE_EXCL) && !r.err);
    f = decode("f_write_data", &v);
    CHECK(f.type == 0x12 && f.len == 3 && f.payload[0] == 1 && f.payload[2] == 3);
    f = decode("f_write_end", &v);
    CHECK(f.type == 0x13 && f.chan == 101 && f.len == 0);
    f = decode("f_write_abort", &v);
    CHECK(f.type == 0x14 && f.chan == 101 && f.len == 0);
    f = decode("f_list", &v);
    rd_init(&r, f.payload, f.len);
    CHECK(f.type == 0x15 && f.chan == 102 && bytes_eq(&r, "/workspace") && rd_left(&r) == 0);
    f = decode("f_stat", &v);
    rd_init(&r, f.payload, f.len);
    CHECK(f.type == 0x16 && f.chan == 103 && bytes_eq(&r, "x"));
    f = decode("f_mkdir", &v);
    rd_init(&r, f.payload, f.len);
    CHECK(f.type == 0x17 && bytes_eq(&r, "/workspace/d") && rd_u32(&r) == 0755 && rd_u8(&r) == 1 && !r.err);
    f = decode("f_remove", &v);
    rd_init(&r, f.payload, f.len);
    CHECK(f.type == 0x18 && bytes_eq(&r, "/workspace/d") && rd_u8(&r) == 1 && !r.err);
    f = decode("f_move", &v);
    rd_init(&r, f.payload, f.len);
    CHECK(f.type == 0x19 && f.chan == 106 && bytes_eq(&r, "/a") && bytes_eq(&r, "/b") && rd_left(&r) == 0);
}

static void test_init_to_engine(void)
{
    struct buf b;
    buf_init(&b, 1 << 20);
    struct msg m;
    uint8_t nonce[16];
    for (int i = 0; i < 16; i++)
        nonce[i] = (uint8_t)i;

    enc_hello_ack(&b, nonce, "test");
    expect_encoded("hello_ack", &b);

    msg_begin(&m, &b, R_SPAWNED, 7);
    msg_u32(&m, 42);
    msg_u32(&m, 262144);
    msg_end(&m);
    expect_encoded("spawned", &b);

    msg_begin(&m, &b, R_DATA, 7);
    msg_u8(&m, 2);
    uint8_t *p = msg_reserve(&m, 100);
    memcpy(p, "err\n", 4);
    msg_unreserve(&m, 96);
    msg_end(&m);
    expect_encoded("data", &b);

    struct exit_report x = {EXIT_SIGNALED, 9, EXITF_TIMED_OUT | EXITF_KILLED, 1500000000, 1000, 2000, 4096, ""};
    enc_exit(&b, 7, &x);
    expect_encoded("exit", &b);
    struct exit_report y = {EXIT_FAILED_TO_START, 2, 0, 0, 0, 0, 0, "No such file or directory"};
    enc_exit(&b, 8, &y);
    expect_encoded("exit_failed", &b);

    msg_begin(&m, &b, R_WINDOW, 7);
    msg_u8(&m, 0);
    msg_u32(&m, 4096);
    msg_end(&m);
    expect_encoded("window_ack", &b);

    msg_begin(&m, &b, R_PONG, 0);
    msg_raw(&m, "12345678", 8);
    msg_end(&m);
    expect_encoded("pong", &b);

    msg_begin(&m, &b, R_LOG, 0);
    msg_u8(&m, 2);
    msg_bytes(&m, "hello", 5);
    msg_end(&m);
    expect_encoded("log", &b);

    msg_begin(&m, &b, R_F_INFO, 100);
    enc_info(&m, FT_SYMLINK, 0777, 11, 1700000000123456789LL, "link", "/etc/passwd", 11);
    msg_end(&m);
    expect_encoded("f_info", &b);

    msg_begin(&m, &b, R_F_DATA, 100);
    msg_raw(&m, "abc", 3);
    msg_end(&m);
    expect_encoded("f_data", &b);

    msg_begin(&m, &b, R_F_END, 100);
    msg_end(&m);
    expect_encoded("f_end", &b);

    msg_begin(&m, &b, R_F_OK, 101);
    msg_u32(&m, 262144);
    msg_end(&m);
    expect_encoded("f_ok", &b);

    msg_begin(&m, &b, R_F_ERROR, 103);
    msg_u32(&m, 2);
    msg_bytes(&m, "No such file or directory", 25);
    msg_end(&m);
    expect_encoded("f_error", &b);

    msg_begin(&m, &b, R_F_ENTRIES, 102);
    msg_u32(&m, 2);
    enc_info(&m, FT_FILE, 0644, 5, 1, "a", "", 0);
    enc_info(&m, FT_DIR, 0755, 4096, -1, "d", "", 0);
    msg_end(&m);
    expect_encoded("f_entries", &b);
    buf_free(&b);
}

static void test_robustness(void)
{
    current = "robustness";
    uint8_t fr[16] = {0, 0, 0, 4, 1, 0, 0, 0, 0};
    CHECK(frame_split(fr, 9, IN_FRAME_MAX) == -1); /* L < 5 */
    put32(fr, 4093);
    CHECK(frame_split(fr, 9, IN_FRAME_MAX) == -1); /* frame of 4097 bytes */
    put32(fr, 4092);
    CHECK(frame_split(fr, 9, IN_FRAME_MAX) == 0); /* valid length, bytes still missing */
    CHECK(frame_split(fr, 3, IN_FRAME_MAX) == 0);

    /* A message of more than MSG_MAX bytes is dropped and reported once. */
    static uint8_t big[4096];
    put32(big, 4092);
    big[4] = 0x02 | TYPE_MORE;
    put32(big + 5, 5);
    struct frame out;
    int too_big = 0, messages = 0;
    for (int i = 0; i < 600; i++) {
        if (i == 599)
            big[4] = 0x02;
        enum asm_result r = asm_feed(&as, big, sizeof(big), &out);
        too_big += r == ASM_TOO_BIG;
        messages += r == ASM_MESSAGE;
    }
    CHECK(too_big == 1 && messages == 0 && out.chan == 5 && out.type == 0x02);

    /* Fragments interrupted by another message: the partial one is dropped, the other delivered. */
    big[4] = 0x02 | TYPE_MORE;
    CHECK(asm_feed(&as, big, sizeof(big), &out) == ASM_NONE);
    uint8_t ping[13] = {0, 0, 0, 9, 0x08, 0, 0, 0, 0, 'a', 'b', 'c', 'd'};
    CHECK(asm_feed(&as, ping, sizeof(ping), &out) == ASM_MESSAGE && out.type == 0x08 && out.len == 4);
    CHECK(!as.active);

    /* Lists whose count claims more entries than bytes are refused without a huge allocation. */
    uint8_t sp[256];
    memset(sp, 0, sizeof(sp));
    size_t o = 4 + 4 + 4 + 8 + 8 + 8 + 4 + 4;
    put32(sp + o, 1);
    sp[o + 4] = '/';
    o += 5;
    put32(sp + o, 0xFFFFFFFFu); /* argv count */
    o += 4;
    struct spawn_req s;
    CHECK(spawn_decode(&s, sp, o) < 0);
    spawn_req_free(&s);

    /* An embedded NUL in argv cannot be exec'd: refused. */
    o = 4 + 4 + 4 + 8 + 8 + 8 + 4 + 4;
    memset(sp + o, 0, sizeof(sp) - o);
    put32(sp + o, 1);
    sp[o + 4] = '/';
    o += 5;
    put32(sp + o, 1);
    put32(sp + o + 4, 3);
    memcpy(sp + o + 8, "a\0b", 3);
    o += 11;
    put32(sp + o, 0); /* env */
    put32(sp + o + 4, 0); /* rlimits */
    o += 8;
    CHECK(spawn_decode(&s, sp, o) < 0);
    spawn_req_free(&s);
    memcpy(sp + o - 8 - 3, "a_b", 3);
    CHECK(spawn_decode(&s, sp, o) == 0);
    spawn_req_free(&s);

    /* The encoder never builds a frame over the init->engine maximum. */
    struct buf b;
    buf_init(&b, 4u << 20);
    struct msg m;
    msg_begin(&m, &b, R_DATA, 1);
    CHECK(msg_reserve(&m, OUT_FRAME_MAX) == NULL);
    CHECK(msg_end(&m) < 0 && buf_used(&b) == 0);
    buf_free(&b);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: codec_test <golden dir>\n");
        return 2;
    }
    dir = argv[1];
    asm_init(&as);
    test_engine_to_init();
    test_init_to_engine();
    test_robustness();
    if (failures) {
        fprintf(stderr, "codec_test: %d failure(s)\n", failures);
        return 1;
    }
    printf("codec_test: all golden vectors OK\n");
    return 0;
}
