# Paddock code layer: the Python kernel behind one code context. Uploaded into each sandbox by Paddock.
#
# Protocol: requests arrive on stdin as JSON lines; replies leave on the ORIGINAL stdout as frames
# (4-byte big-endian length, then UTF-8 JSON). At start the kernel moves that stdout to a private
# close-on-exec descriptor and points fds 0/1/2 at /dev/null and two pipes that a reader thread forwards
# as "stream" messages, so output of user code, C extensions and subprocesses alike is captured and can
# never be mistaken for a protocol frame.
import json
import os
import select
import signal
import struct
import sys
import threading
import time
import codecs

MAX_FRAME = 32 << 20

_proto_fd = os.dup(1)          # non-inheritable (PEP 446)
_diag_fd = os.dup(2)           # the exec's own stderr: the kernel's fatal errors, for Paddock's diagnostics
_req_fd = os.dup(0)
_devnull = os.open(os.devnull, os.O_RDONLY)
os.dup2(_devnull, 0)
os.close(_devnull)
_out_r, _w = os.pipe()
os.dup2(_w, 1)
os.close(_w)
_err_r, _w = os.pipe()
os.dup2(_w, 2)
os.close(_w)
sys.stdin = open(0, "r", closefd=False)
sys.stdout = sys.__stdout__ = open(1, "w", buffering=1, encoding="utf-8", errors="backslashreplace",
                                   closefd=False)
sys.stderr = sys.__stderr__ = open(2, "w", buffering=1, encoding="utf-8", errors="backslashreplace",
                                   closefd=False)
sys.stdout.reconfigure(write_through=True)
sys.stderr.reconfigure(write_through=True)

_lock = threading.Lock()


class Requests:
    """Request lines from the kernel's stdin, read in chunks: an unbuffered readline() costs one read(2) per
    byte, each a trip through the Sentry on runsc."""

    def __init__(self, fd):
        self.fd = fd
        self.buf = b""

    def readline(self):
        """The next line, or b"" at the end of input."""
        while True:
            end = self.buf.find(b"\n")
            if end >= 0:
                line, self.buf = self.buf[:end + 1], self.buf[end + 1:]
                return line
            chunk = os.read(self.fd, 1 << 16)
            if not chunk:
                line, self.buf = self.buf, b""
                return line
            self.buf += chunk


def send(msg):
    data = json.dumps(msg, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "backslashreplace")
    if len(data) > MAX_FRAME:
        data = json.dumps({"type": "stream", "id": msg.get("id"), "name": "stderr",
                           "text": "paddock: a %s message of %d bytes was dropped (limit %d)\n"
                                   % (msg.get("type"), len(data), MAX_FRAME)}).encode()
    frame = struct.pack(">I", len(data)) + data
    with _lock:
        view = memoryview(frame)
        while view:
            n = os.write(_proto_fd, view)
            view = view[n:]


class Pump(threading.Thread):
    """Forwards fds 1 and 2 as stream messages for the current cell, within its output caps.

    The thread forwards output while a cell runs; drain() forwards the rest in the calling thread. Reading
    and forwarding happen under one lock on non-blocking pipes, so what the thread has read is sent before
    a drain returns, and a drain costs one select(2) when nothing was written, not a hand-off to the thread
    and back (each hand-off is a wake-up through the Sentry on runsc)."""

    def __init__(self):
        super().__init__(name="paddock-pump", daemon=True)
        self.lock = threading.Lock()
        self.cell = None
        self.cap = 1 << 20
        self.used = {"stdout": 0, "stderr": 0}
        self.truncated = {"stdout": False, "stderr": False}
        self.decoders = {}
        self.names = {_out_r: "stdout", _err_r: "stderr"}
        self.fds = [_out_r, _err_r]
        for fd in self.fds:
            os.set_blocking(fd, False)

    def begin(self, cell, cap):
        with self.lock:
            self.cell = cell
            self.cap = cap
            self.used = {"stdout": 0, "stderr": 0}
            self.truncated = {"stdout": False, "stderr": False}
            self.decoders = {}

    def drain(self):
        """Returns once everything written to fds 1 and 2 before the call has been forwarded."""
        with self.lock:
            deadline = time.monotonic() + 0.2
            while self.fds:
                more, _, _ = select.select(self.fds, [], [], 0)
                if not more:
                    break
                for fd in more:
                    self.read(fd)
                if time.monotonic() >= deadline:
                    break  # something keeps writing: the rest belongs to whatever comes next
            for name, dec in self.decoders.items():
                rest = dec.decode(b"", final=True)
                if rest:
                    send({"type": "stream", "id": self.cell, "name": name, "text": rest})
            self.decoders = {}

    def read(self, fd):
        """Reads what fd holds and forwards it; the caller holds the lock."""
        try:
            data = os.read(fd, 65536)
        except BlockingIOError:
            return  # the other side of the lock got it first
        if not data:
            self.fds.remove(fd)  # every writer closed it: nothing more can come
            return
        name = self.names[fd]
        room = self.cap - self.used[name]
        if room <= 0:
            self.truncated[name] = True
            return
        if len(data) > room:
            data = data[:room]
            self.truncated[name] = True
        self.used[name] += len(data)
        dec = self.decoders.get(name)
        if dec is None:
            dec = self.decoders[name] = codecs.getincrementaldecoder("utf-8")("replace")
        text = dec.decode(data)
        if text:
            send({"type": "stream", "id": self.cell, "name": name, "text": text})

    def run(self):
        while self.fds:
            ready, _, _ = select.select(self.fds, [], [])
            with self.lock:
                for fd in ready:
                    if fd in self.fds:
                        self.read(fd)


_executing = False
_sending = False    # the main thread is writing frames: an interrupt now would cut one in two
_deferred = False   # an interrupt that arrived while _sending, raised once the frames are whole


def _on_sigint(signum, frame):
    global _deferred
    if _executing:
        if _sending:
            _deferred = True
            return
        raise KeyboardInterrupt
    # idle: an interrupt that arrived after its cell ended is dropped


def main():
    global _executing, _deferred
    import _paddock_cell
    pump = Pump()
    pump.start()
    namespace = _paddock_cell.main_module()
    current = {"id": None}

    def emit(msg):
        global _sending, _deferred
        # output written before a result comes before it
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:
                pass
        _sending = True
        try:
            pump.drain()
            msg["id"] = current["id"]
            send(msg)
        finally:
            _sending = False
        if _deferred and _executing:
            _deferred = False
            raise KeyboardInterrupt

    executor = _paddock_cell.Executor(emit, namespace)
    requests = Requests(_req_fd)
    signal.signal(signal.SIGINT, _on_sigint)
    send({"type": "ready", "pid": os.getpid(), "language": "python", "version": sys.version.split()[0]})
    while True:
        try:
            line = requests.readline()
        except KeyboardInterrupt:
            continue
        if not line:
            return
        try:
            req = json.loads(line)
        except ValueError:
            send({"type": "protocol_error", "message": "bad request line"})
            continue
        op = req.get("op")
        if op == "ping":
            send({"type": "pong", "id": req.get("id")})
        elif op == "execute":
            cell = req.get("id")
            current["id"] = cell
            artifacts = req.get("artifacts_dir")
            if artifacts:
                os.environ["PADDOCK_ARTIFACTS_DIR"] = artifacts
                try:
                    os.mkdir(artifacts)  # its parent is there after the first cell: skip makedirs' stat
                except FileNotFoundError:
                    try:
                        os.makedirs(artifacts, exist_ok=True)
                    except OSError:
                        pass
                except OSError:
                    pass
            pump.begin(cell, int(req.get("max_output", 1 << 20)))
            started = time.monotonic()
            status, error = "error", None
            try:
                import importlib
                importlib.invalidate_caches()
                _deferred = False
                _executing = True
                try:
                    status, error = executor.run(req.get("code", ""), req.get("plot_format", "png"))
                finally:
                    _executing = False
            except KeyboardInterrupt:
                status, error = "interrupted", {"ename": "KeyboardInterrupt", "evalue": "", "traceback": ""}
            for stream in (sys.stdout, sys.stderr):
                try:
                    stream.flush()
                except Exception:
                    pass
            if error is not None and error.get("traceback") and status != "exit":
                try:
                    os.write(2, error["traceback"].encode("utf-8", "backslashreplace"))
                except OSError:
                    pass
            pump.drain()
            listing = []
            if artifacts:
                try:
                    os.rmdir(artifacts)  # most cells write none: one rmdir(2) instead of a walk
                except OSError:
                    listing = _paddock_cell.walk_artifacts(artifacts)
            done = {"type": "done", "id": cell, "status": status,
                    "duration_ms": (time.monotonic() - started) * 1000.0,
                    "stdout_truncated": pump.truncated["stdout"], "stderr_truncated": pump.truncated["stderr"],
                    "artifacts": listing}
            if error is not None:
                done["error"] = error
            send(done)
        elif op == "shutdown":
            return
        else:
            send({"type": "protocol_error", "message": "unknown op %r" % (op,)})


if __name__ == "__main__":
    try:
        main()
    except BaseException:  # noqa: B902 - the kernel itself failed: say why where Paddock can see it
        import traceback
        os.write(_diag_fd, traceback.format_exc().encode("utf-8", "backslashreplace"))
        raise SystemExit(70)
