/* Wire format of the init protocol, version 1 (docs/PROTOCOL.md is the contract).
 *
 * Decoding goes through struct rd, which never reads past its end: any short read sets rd.err and
 * returns zeros, so a handler checks rd.err once after pulling all its fields. */
#ifndef PADDOCK_PROTO_H
#define PADDOCK_PROTO_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"

#define PDK_MAGIC 0x50444B31u
#define PDK_VERSION 1u
#define FRAME_HDR 9u                          /* u32 length + u8 type + u32 channel */
#define IN_FRAME_MAX 4096u                    /* engine->init, whole frame (PIPE_BUF) */
#define OUT_FRAME_MAX (1024u * 1024u + 64u)   /* init->engine, whole frame */
#define MSG_MAX (2u * 1024u * 1024u)          /* reassembled engine->init message */
#define TYPE_MORE 0x80u
#define U64_NONE UINT64_MAX                   /* "no cap", "everything" */

/* engine -> init */
enum {
    M_HELLO = 0x01, M_SPAWN = 0x02, M_STDIN = 0x03, M_STDIN_CLOSE = 0x04, M_SIGNAL = 0x05,
    M_WINDOW = 0x06, M_DEADLINE = 0x07, M_PING = 0x08, M_RELEASE = 0x09, M_SHUTDOWN = 0x0A,
    M_DEADLINE_IN = 0x0B, M_RESIZE = 0x0C,
    M_F_READ = 0x10, M_F_WRITE_OPEN = 0x11, M_F_WRITE_DATA = 0x12, M_F_WRITE_END = 0x13,
    M_F_WRITE_ABORT = 0x14, M_F_LIST = 0x15, M_F_STAT = 0x16, M_F_MKDIR = 0x17, M_F_REMOVE = 0x18,
    M_F_MOVE = 0x19, M_F_CANCEL = 0x1A,
};

/* init -> engine */
enum {
    R_HELLO_ACK = 0x41, R_SPAWNED = 0x42, R_DATA = 0x43, R_EXIT = 0x44, R_WINDOW = 0x45, R_PONG = 0x46,
    R_LOG = 0x47, R_F_INFO = 0x50, R_F_DATA = 0x51, R_F_END = 0x52, R_F_OK = 0x53, R_F_ERROR = 0x54,
    R_F_ENTRIES = 0x55,
};

#define HELLO_ORPHAN_DIE 0x1u
#define SPAWN_STDIN_PIPE 0x1u
#define SPAWN_ENTRYPOINT 0x2u
#define SPAWN_PTY 0x4u
#define EXIT_EXITED 1
#define EXIT_SIGNALED 2
#define EXIT_FAILED_TO_START 3
#define EXITF_TIMED_OUT 0x1u
#define EXITF_STDOUT_TRUNC 0x2u
#define EXITF_STDERR_TRUNC 0x4u
#define EXITF_KILLED 0x8u
#define FWRITE_PARENTS 0x1u
#define FWRITE_EXCL 0x2u
#define FT_FILE 1
#define FT_DIR 2
#define FT_SYMLINK 3
#define FT_OTHER 4

/* ---- decoding ---- */
struct rd {
    const uint8_t *p;
    size_t len;
    size_t pos;
    int err;
};

static inline void rd_init(struct rd *r, const uint8_t *p, size_t len)
{
    r->p = p;
    r->len = len;
    r->pos = 0;
    r->err = 0;
}
static inline size_t rd_left(const struct rd *r) { return r->len - r->pos; }
uint8_t rd_u8(struct rd *r);
uint32_t rd_u32(struct rd *r);
uint64_t rd_u64(struct rd *r);
/* Copies n raw bytes (e.g. the nonce). */
void rd_raw(struct rd *r, void *dst, size_t n);
/* A length-prefixed str/bytes: points into the payload, no copy. */
const uint8_t *rd_bytes(struct rd *r, uint32_t *n);
/* The rest of the payload. */
const uint8_t *rd_rest(struct rd *r, size_t *n);

uint32_t be32(const uint8_t *p);
uint64_t be64(const uint8_t *p);
void put32(uint8_t *p, uint32_t v);
void put64(uint8_t *p, uint64_t v);

/* ---- encoding: a message is built in place at the end of a struct buf ---- */
struct msg {
    struct buf *b;
    size_t start; /* offset of the frame's length field, relative to b->data */
    int err;
};

/* Starts a frame; on failure m->err is set and the later calls do nothing. */
void msg_begin(struct msg *m, struct buf *b, uint8_t type, uint32_t chan);
void msg_u8(struct msg *m, uint8_t v);
void msg_u32(struct msg *m, uint32_t v);
void msg_u64(struct msg *m, uint64_t v);
void msg_raw(struct msg *m, const void *p, size_t n);
void msg_bytes(struct msg *m, const void *p, size_t n); /* u32 length + bytes */
/* Reserves n bytes to be filled by the caller (e.g. read(2) straight into the frame); NULL on failure. */
uint8_t *msg_reserve(struct msg *m, size_t n);
/* Gives back the unused tail of the last msg_reserve. */
void msg_unreserve(struct msg *m, size_t n);
/* Patches the length; rolls the message back if anything failed. Returns 0 or -1. */
int msg_end(struct msg *m);
/* Drops the message being built. */
void msg_abort(struct msg *m);

/* ---- frame reassembly, engine -> init ---- */
struct frame {
    uint8_t type; /* without MORE */
    uint32_t chan;
    const uint8_t *payload;
    size_t len;
};

struct assembler {
    struct buf msg;      /* payloads of the frames seen so far */
    uint8_t type;        /* type of the message being assembled */
    uint32_t chan;
    int active;          /* a MORE frame was seen */
    int discarding;      /* too large: drop frames until the last one */
};

void asm_init(struct assembler *a);
void asm_reset(struct assembler *a);

/* Result of feeding one frame. */
enum asm_result {
    ASM_NONE = 0,     /* need more frames */
    ASM_MESSAGE = 1,  /* *out is a complete message, valid until the next call */
    ASM_TOO_BIG = 2,  /* the message passed MSG_MAX and was dropped; out->type/chan say which */
};

/* Splits bytes into frames: returns the length of the first complete frame in p[0..n), 0 if more bytes
 * are needed, -1 if the length field is out of bounds (protocol error). */
long frame_split(const uint8_t *p, size_t n, size_t max_frame);
/* Feeds one complete frame (as found by frame_split). */
enum asm_result asm_feed(struct assembler *a, const uint8_t *frame, size_t n, struct frame *out);

/* ---- typed messages shared by the init and the C tests ---- */

struct spawn_rlimit {
    uint32_t res;
    uint64_t soft, hard; /* U64_NONE = unlimited */
};

struct spawn_req {
    uint32_t flags, uid, gid;
    uint64_t timeout_ms;
    uint64_t cap[2];
    uint32_t win[2];
    char *cwd;
    char **argv;
    char **envp;
    uint32_t n_rlim;
    struct spawn_rlimit *rlim;
    uint32_t rows, cols; /* SPAWN_PTY: the terminal's size, 1..65535 */
};

/* Decodes a SPAWN payload into NUL-terminated strings (an embedded NUL is an error). 0 or -1; on -1 the
 * caller still calls spawn_req_free. */
int spawn_decode(struct spawn_req *s, const uint8_t *p, size_t n);
void spawn_req_free(struct spawn_req *s);

struct exit_report {
    uint8_t kind;
    int32_t code;
    uint32_t flags;
    uint64_t duration_ns, user_us, sys_us, max_rss_kb;
    const char *message;
};

void enc_hello_ack(struct buf *b, const uint8_t nonce[16], const char *build_id);
void enc_exit(struct buf *b, uint32_t chan, const struct exit_report *x);
/* A file info record, inside a message being built. */
void enc_info(struct msg *m, uint8_t type, uint32_t mode, uint64_t size, int64_t mtime_ns, const char *name,
              const char *link, size_t link_len);

#endif
