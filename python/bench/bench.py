"""The Python client's figures for Paddock's bench harness (P16): run by the harness against the same daemon
its Java remote client measures, and printing one JSON object.

    python3 bench.py URL TOKEN CREATES EXECS STREAM_BYTES
"""
from __future__ import annotations

import json
import sys
import time

import paddock


def first_output(sb: paddock.Sandbox, t0: int) -> int:
    p = sb.start("/bin/echo", "hi")
    next(p.stdout.chunks())
    t = time.perf_counter_ns() - t0
    p.stdout.read()
    p.wait(60)
    return t


def main() -> None:
    url, token, creates, execs, stream_bytes = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
    spec = {"memory": "256m", "timeout": 1800}
    out: dict[str, object] = {}
    with paddock.Client(url, token) as client:
        for _ in range(min(5, creates)):  # warm-up: connections, the daemon's code paths
            with client.create(**spec) as sb:
                first_output(sb, time.perf_counter_ns())
        create_ns = []
        for _ in range(creates):
            t0 = time.perf_counter_ns()
            sb = client.create(**spec)
            create_ns.append(first_output(sb, t0))
            sb.destroy()
        out["create_first_output_ns"] = create_ns
        with client.create(**spec) as sb:
            for _ in range(min(50, execs)):
                sb.exec("/bin/true")
            exec_ns = []
            for _ in range(execs):
                t0 = time.perf_counter_ns()
                if sb.exec("/bin/true").exit_code != 0:
                    raise SystemExit("/bin/true failed")
                exec_ns.append(time.perf_counter_ns() - t0)
            out["exec_round_trip_ns"] = exec_ns
            t0 = time.perf_counter_ns()
            p = sb.start("head", "-c", str(stream_bytes), "/dev/zero", output_limit=stream_bytes + 1)
            n = sum(len(c) for c in p.stdout.chunks())
            p.wait(600)
            seconds = (time.perf_counter_ns() - t0) / 1e9
            if n != stream_bytes:
                raise SystemExit(f"streamed {n} bytes of {stream_bytes}")
            out["stream_mib_per_s"] = n / (1 << 20) / seconds
    print(json.dumps(out))


if __name__ == "__main__":
    main()
