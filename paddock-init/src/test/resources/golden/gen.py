#!/usr/bin/env python3
"""Generates the golden vectors of the init protocol, independently of both codecs.

Run from this directory: python3 gen.py. Each NAME.hex holds one message: one frame per line, in hex.
The field values are listed in README.md; the C test (src/main/c/test/codec_test.c) and the Java test
(FramesGoldenTest) assert them.
"""
import struct

def u8(v): return struct.pack('>B', v)
def u32(v): return struct.pack('>I', v)
def i32(v): return struct.pack('>i', v)
def u64(v): return struct.pack('>Q', v)
def i64(v): return struct.pack('>q', v)
def bs(b):
    if isinstance(b, str): b = b.encode()
    return u32(len(b)) + b
def sl(items): return u32(len(items)) + b''.join(bs(x) for x in items)

MAX_IN_FRAME = 4096

def frames(typ, chan, payload, max_frame=MAX_IN_FRAME):
    """Splits like the engine does: every frame but the last is full and has MORE (0x80)."""
    room = max_frame - 9
    out = []
    while True:
        part, payload = payload[:room], payload[room:]
        t = typ | (0x80 if payload else 0)
        out.append(u32(5 + len(part)) + u8(t) + u32(chan) + part)
        if not payload:
            return out

def write(name, fr):
    with open(name + '.hex', 'w') as f:
        for x in fr:
            f.write(x.hex() + '\n')

NONCE = bytes(range(16))
U64_MAX = 2**64 - 1

# ---- engine -> init
write('hello', frames(0x01, 0, u32(1) + NONCE + u32(1)))
spawn = (u32(1) + u32(1000) + u32(1000) + u64(5000) + u64(U64_MAX) + u64(1048576) + u32(262144) + u32(65536)
         + bs('/workspace') + sl(['sh', '-c', 'echo hi']) + sl(['PATH=/usr/bin:/bin', 'HOME=/workspace'])
         + u32(1) + u32(7) + u64(1024) + u64(2048))
write('spawn', frames(0x02, 7, spawn))
big = (u32(0) + u32(0) + u32(0) + u64(0) + u64(U64_MAX) + u64(U64_MAX) + u32(262144) + u32(262144)
       + bs('/') + sl(['true']) + sl(['X=' + 'a' * 5000]) + u32(0))
write('spawn_fragmented', frames(0x02, 9, big))
spawn_pty = (u32(1 | 4) + u32(1000) + u32(1000) + u64(0) + u64(U64_MAX) + u64(U64_MAX) + u32(262144) + u32(262144)
             + bs('/workspace') + sl(['bash', '-i']) + sl(['TERM=xterm-256color']) + u32(0) + u32(24) + u32(80))
write('spawn_pty', frames(0x02, 11, spawn_pty))
write('resize', frames(0x0C, 11, u32(50) + u32(132)))
write('stdin', frames(0x03, 7, b'hello\n'))
write('stdin_close', frames(0x04, 7, b''))
write('signal', frames(0x05, 7, u32(15) + u8(0)))
write('kill', frames(0x05, 7, u32(9) + u8(1)))
write('window', frames(0x06, 7, u8(1) + u32(65536)))
write('deadline', frames(0x07, 0, u64(123456789000)))
write('deadline_in', frames(0x0B, 0, u64(30000000000)))
write('ping', frames(0x08, 0, b'12345678'))
write('release', frames(0x09, 7, b''))
write('shutdown', frames(0x0A, 0, b''))
write('f_read', frames(0x10, 100, bs('/workspace/a.txt') + u64(0) + u64(U64_MAX) + u32(262144)))
write('f_write_open', frames(0x11, 101, bs('out/b.bin') + u32(0o644) + u32(3)))
write('f_write_data', frames(0x12, 101, bytes([1, 2, 3])))
write('f_write_end', frames(0x13, 101, b''))
write('f_write_abort', frames(0x14, 101, b''))
write('f_list', frames(0x15, 102, bs('/workspace')))
write('f_stat', frames(0x16, 103, bs('x')))
write('f_mkdir', frames(0x17, 104, bs('/workspace/d') + u32(0o755) + u8(1)))
write('f_remove', frames(0x18, 105, bs('/workspace/d') + u8(1)))
write('f_move', frames(0x19, 106, bs('/a') + bs('/b')))

# ---- init -> engine (single frames)
def one(typ, chan, payload): return [u32(5 + len(payload)) + u8(typ) + u32(chan) + payload]
write('hello_ack', one(0x41, 0, u32(0x50444B31) + NONCE + u32(1) + bs('test')))
write('spawned', one(0x42, 7, u32(42) + u32(262144)))
write('data', one(0x43, 7, u8(2) + b'err\n'))
write('exit', one(0x44, 7, u8(2) + i32(9) + u32(0b1001) + u64(1500000000) + u64(1000) + u64(2000) + u64(4096) + bs('')))
write('exit_failed', one(0x44, 8, u8(3) + i32(2) + u32(0) + u64(0) + u64(0) + u64(0) + u64(0) + bs('No such file or directory')))
write('window_ack', one(0x45, 7, u8(0) + u32(4096)))
write('pong', one(0x46, 0, b'12345678'))
write('log', one(0x47, 0, u8(2) + bs('hello')))
def info(t, mode, size, mtime, name, link=''):
    return u8(t) + u32(mode) + u64(size) + i64(mtime) + bs(name) + bs(link)
write('f_info', one(0x50, 100, info(3, 0o777, 11, 1700000000123456789, 'link', '/etc/passwd')))
write('f_data', one(0x51, 100, b'abc'))
write('f_end', one(0x52, 100, b''))
write('f_ok', one(0x53, 101, u32(262144)))
write('f_error', one(0x54, 103, i32(2) + bs('No such file or directory')))
write('f_entries', one(0x55, 102, u32(2) + info(1, 0o644, 5, 1, 'a') + info(2, 0o755, 4096, -1, 'd')))
