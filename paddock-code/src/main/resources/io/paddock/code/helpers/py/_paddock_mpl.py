# Paddock code layer: the matplotlib backend of code runs and contexts (MPLBACKEND=module://_paddock_mpl).
# It renders with Agg; plt.show() hands every open figure to the running cell, which sends it back as a
# plot and closes it, as a notebook's inline backend does. Outside a Paddock run show() does nothing.
from matplotlib.backend_bases import _Backend
from matplotlib.backends.backend_agg import _BackendAgg


@_Backend.export
class _BackendPaddock(_BackendAgg):
    @classmethod
    def show(cls, *args, **kwargs):
        try:
            import _paddock_cell
        except ImportError:
            return
        _paddock_cell.show_hook()
