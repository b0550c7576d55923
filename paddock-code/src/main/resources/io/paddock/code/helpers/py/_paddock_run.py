# Paddock code layer: runs a Python source file once, as a script, with the extras of a notebook cell:
# the last expression's value, figures shown or left open (also at sys.exit). Its stdout and stderr are the
# process's own; rich output and plots go as JSON lines to $PADDOCK_RUN_EVENTS. Uploaded by Paddock.
import json
import os
import sys


def main():
    source = sys.argv[1]
    events_path = os.environ.pop("PADDOCK_RUN_EVENTS", None)
    plot_format = os.environ.pop("PADDOCK_PLOT_FORMAT", "png")
    sys.argv = [source] + sys.argv[2:]
    sys.path[0] = ""  # like `python3 -c`: the working directory, not this helper's
    import _paddock_cell
    events = open(events_path, "a", encoding="utf-8") if events_path else None

    def emit(msg):
        if events is not None:
            events.write(json.dumps(msg, ensure_ascii=False) + "\n")
            events.flush()

    with open(source, encoding="utf-8", errors="surrogateescape") as f:
        code = f.read()
    namespace = _paddock_cell.main_module(source)
    executor = _paddock_cell.Executor(emit, namespace)
    status, error = executor.run(code, plot_format, filename=source)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:
            pass
    if status == "exit":
        code = error.get("exit_code", 1)
        if code not in (0, None) and error.get("evalue") not in ("", str(code)):
            sys.stderr.write(error["evalue"] + "\n")
        return code
    if error is not None:
        sys.stderr.write(error.get("traceback", ""))
        emit({"type": "error", **error})
        return 1 if status != "interrupted" else 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
