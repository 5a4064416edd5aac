"""torch.cuda.nvtx: start/end ranges, logged by name."""
import itertools

_ids = itertools.count(1)
_open = {}


def range_start(msg):
    from .. import _log

    range_id = next(_ids)
    _open[range_id] = msg
    _log("nvtx.range_start %s" % msg)
    return range_id


def range_end(range_id):
    from .. import _log

    _log("nvtx.range_end %s" % _open.pop(range_id, "?"))
