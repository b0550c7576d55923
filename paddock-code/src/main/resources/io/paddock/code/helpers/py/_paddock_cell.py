# Paddock code layer: runs one Python cell the way a notebook does (shared by the kernel and the run
# wrapper). The last expression's value becomes rich output; matplotlib figures shown or left open
# become plots. Everything it reports goes through `emit(dict)`. Uploaded into each sandbox by Paddock.
import ast
import base64
import builtins
import inspect
import io
import json
import linecache
import os
import sys
import traceback

MAX_TEXT = 1 << 20          # cap on one rich-output representation
MAX_PLOT = 16 << 20         # cap on one plot's bytes
MAX_PLOTS = 50              # plots per cell
MIME_METHODS = (
    ("text/html", "_repr_html_"),
    ("text/markdown", "_repr_markdown_"),
    ("image/svg+xml", "_repr_svg_"),
    ("image/png", "_repr_png_"),
    ("text/latex", "_repr_latex_"),
    ("application/json", "_repr_json_"),
)


class Executor:
    def __init__(self, emit, namespace):
        self.emit = emit
        self.ns = namespace
        self.count = 0
        self.plot_format = "png"
        self.plots = 0
        self.loop = None
        self.filenames = set()
        if not hasattr(builtins, "display"):
            builtins.display = self.display

    # ------------------------------------------------------------------ running

    def run(self, code, plot_format="png", filename=None):
        """Runs a cell; returns (status, error): status is ok, error, interrupted or exit."""
        self.count += 1
        self.plot_format = plot_format if plot_format in ("png", "svg") else "png"
        self.plots = 0
        filename = filename or "<cell-%d>" % self.count
        self.filenames.add(filename)
        linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)
        global CURRENT
        CURRENT = self
        try:
            try:
                tree = ast.parse(code, filename, "exec")
                last = None
                if tree.body and isinstance(tree.body[-1], ast.Expr):
                    last = ast.Expression(tree.body.pop().value)
                flags = ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
                body = compile(tree, filename, "exec", flags=flags, dont_inherit=True)
                tail = compile(last, filename, "eval", flags=flags, dont_inherit=True) if last else None
            except SyntaxError as e:
                return "error", self._error(e, with_frames=False)
            self._eval(body)
            if tail is not None:
                value = self._eval(tail)
                if value is not None:
                    self.ns["_"] = value
                    self._show_value(value)
            return "ok", None
        except KeyboardInterrupt as e:
            return "interrupted", self._error(e)
        except SystemExit as e:
            return "exit", self._error(e)
        except BaseException as e:  # noqa: B902 - a cell's failure is data
            return "error", self._error(e)
        finally:
            try:
                self.capture_figures()
            except BaseException as e:  # noqa: B902
                sys.stderr.write("paddock: could not capture figures: %r\n" % (e,))

    def _eval(self, code):
        result = eval(code, self.ns)
        if code.co_flags & inspect.CO_COROUTINE:
            if self.loop is None:
                import asyncio
                self.loop = asyncio.new_event_loop()
            result = self.loop.run_until_complete(result)
        return result

    def _error(self, e, with_frames=True):
        tb = e.__traceback__
        while tb is not None and tb.tb_frame.f_code.co_filename not in self.filenames:
            tb = tb.tb_next
        if with_frames and tb is not None:
            text = "".join(traceback.format_exception(type(e), e, tb))
        else:
            text = "".join(traceback.format_exception_only(type(e), e))
        err = {"ename": type(e).__name__, "evalue": _safe_str(e), "traceback": text[-MAX_TEXT:]}
        if isinstance(e, SystemExit):
            code = e.code
            err["exit_code"] = code if isinstance(code, int) else (0 if code is None else 1)
        return err

    # ------------------------------------------------------------------ rich output

    def display(self, *objs):
        for obj in objs:
            self._show_value(obj, kind="display")

    def _show_value(self, value, kind="result"):
        if _is_figure(value):
            self._save_figure(value)
            try:
                import matplotlib.pyplot as plt
                plt.close(value)
            except Exception:
                pass
            return
        data = {}
        try:
            text = repr(value)
        except Exception as e:  # a broken __repr__ is the value's problem, not the cell's
            text = "<unrepresentable %s: %r>" % (type(value).__name__, e)
        data["text/plain"] = _cap(text)
        for mime, method in MIME_METHODS:
            fn = getattr(value, method, None)
            if fn is None or not callable(fn) or inspect.isclass(value):
                continue
            try:
                rep = fn()
            except Exception:
                continue
            if rep is None:
                continue
            if isinstance(rep, tuple):
                rep = rep[0]
            if mime == "image/png" and isinstance(rep, (bytes, bytearray)):
                rep = base64.b64encode(rep).decode("ascii")
            elif mime == "application/json":
                try:
                    rep = json.dumps(rep, allow_nan=False)
                except (TypeError, ValueError):
                    continue
            if isinstance(rep, str) and len(rep) <= MAX_TEXT:
                data[mime] = rep
        if "application/json" not in data and isinstance(value, (dict, list, tuple, str, int, float, bool)):
            try:
                rep = json.dumps(value, allow_nan=False)
                if len(rep) <= MAX_TEXT:
                    data["application/json"] = rep
            except (TypeError, ValueError):
                pass
        self.emit({"type": kind, "data": data})

    # ------------------------------------------------------------------ matplotlib

    def capture_figures(self):
        """Sends every open figure as a plot and closes it (plt.show() and the end of a cell)."""
        if "matplotlib" not in sys.modules:
            return
        from matplotlib._pylab_helpers import Gcf
        for manager in list(Gcf.get_all_fig_managers()):
            try:
                self._save_figure(manager.canvas.figure)
            finally:
                Gcf.destroy(manager)

    def _save_figure(self, fig):
        if self.plots >= MAX_PLOTS:
            return
        self.plots += 1
        fmt = self.plot_format
        buf = io.BytesIO()
        dpi = fig.dpi
        fig.savefig(buf, format=fmt, dpi=dpi)
        raw = buf.getvalue()
        if len(raw) > MAX_PLOT:
            sys.stderr.write("paddock: a figure of %d bytes is over the %d-byte limit and was dropped\n"
                             % (len(raw), MAX_PLOT))
            return
        w, h = fig.get_size_inches()
        mime = "image/png" if fmt == "png" else "image/svg+xml"
        payload = base64.b64encode(raw).decode("ascii") if fmt == "png" else raw.decode("utf-8", "replace")
        self.emit({"type": "display", "data": {mime: payload},
                   "metadata": {"width": int(round(w * dpi)), "height": int(round(h * dpi)), "dpi": float(dpi)}})


# The executor running now: the matplotlib backend's show() sends figures to it.
CURRENT = None


def show_hook():
    if CURRENT is not None:
        CURRENT.capture_figures()


def _is_figure(value):
    if "matplotlib.figure" not in sys.modules:
        return False
    from matplotlib.figure import Figure
    return isinstance(value, Figure)


def _safe_str(e):
    try:
        return _cap(str(e))
    except Exception:
        return "<unprintable %s>" % type(e).__name__


def _cap(text):
    return text if len(text) <= MAX_TEXT else text[:MAX_TEXT] + "…"


def walk_artifacts(directory, limit=1000):
    """Lists the files under the artifacts directory as (relative path, size)."""
    out = []
    if not directory or not os.path.isdir(directory):
        return out
    for root, dirs, files in os.walk(directory, followlinks=False):
        dirs.sort()
        for name in sorted(files):
            path = os.path.join(root, name)
            try:
                st = os.lstat(path)
            except OSError:
                continue
            if not os.path.isfile(path) or os.path.islink(path):
                continue
            out.append({"path": os.path.relpath(path, directory), "size": st.st_size})
            if len(out) >= limit:
                return out
    return out


def main_module(ns_file=None):
    """A fresh __main__ module whose namespace the cells share (so pickle and multiprocessing work)."""
    import types
    mod = types.ModuleType("__main__")
    mod.__dict__["__builtins__"] = builtins
    if ns_file:
        mod.__dict__["__file__"] = ns_file
    sys.modules["__main__"] = mod
    return mod.__dict__
