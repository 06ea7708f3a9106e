"""What a user caused ends as exit 2 (or 1) and one line, never as an internal error (exit 3) or a traceback."""
from __future__ import annotations

import numpy as np
import pytest
from conftest import ROOT

from codesign.milp.highs import _Held, _Pending


def test_held_rows_with_trailing_empty_rows() -> None:
    """A model whose last rows read no column (ResNet-50's baseline prices area as a constant 0, so the Pareto
    front's area rows are empty) is held back without an IndexError from ``np.add.reduceat``."""
    pend = _Pending(lo=[0.0, 0.0], hi=[1.0, 1.0], integers=[1], row_lo=[-1.0, 0.0, 0.0, -1.0], row_hi=[1.0] * 4,
                    starts=[0, 2, 2, 2], index=[0, 1], value=[1.0, 2.0])
    held = _Held.of(pend, 2, {1})
    assert list(held.member) == [True, False, False, False]  # only the row reading the continuous column
    x = np.array([0.5, 1.0])
    assert list(held.broken(x, 1e-9)) == [0]  # 0.5 + 2 * 1 = 2.5 > 1


def _main(capsys, *argv: str) -> tuple[int, str]:
    from codesign.cli.main import main
    status = main(list(argv))
    return status, capsys.readouterr().err


def test_a_key_path_with_control_codes_prints_as_one_escaped_line(tmp_path, capsys) -> None:
    """A key path quoting what the file wrote (a line break, a carriage return, an ESC of a colour code) prints its
    escapes, on one line that cannot drive the terminal."""
    text = (ROOT / "problems/quickstart.yaml").read_text()
    bad = tmp_path / "bad.yaml"
    bad.write_text(text.replace("engine:\n", 'engine:\n  "\\e[31mred\\nsecond\\rline": 1\n', 1))
    status, err = _main(capsys, "validate", str(bad))
    assert status == 2
    assert err.count("\n") == 1 and "\x1b" not in err and "\r" not in err, err
    assert "\\x1b[31mred\\nsecond\\rline" in err


def test_a_bad_argument_is_one_line(capsys) -> None:
    """argparse's own report prints the whole usage (five lines) before the error; codesign's is one line."""
    with pytest.raises(SystemExit) as e:
        _main(capsys, "solve", "problems/quickstart.yaml", "--bogus")
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "unrecognized arguments: --bogus" in err, err


def test_an_astra_network_of_more_than_ten_dimensions_is_refused(tmp_path) -> None:
    """ASTRA-sim 1.0's involved-dimension vectors have 10 entries: an 11th dimension was an IndexError (exit 3)."""
    import json

    from codesign.astra.inputs import MAX_DIMS, load_astra_network
    from codesign.errors import SpecError
    n = MAX_DIMS + 1
    net = tmp_path / "net.json"
    net.write_text(json.dumps({"topology-name": "Hierarchical", "dimensions-count": n,
                               "topologies-per-dim": ["Ring"] * n, "units-count": [2] * n, "links-count": [2] * n,
                               "link-latency": [500] * n, "link-bandwidth": [25] * n}))
    with pytest.raises(SpecError, match="dimensions-count: expected at most 10 dimensions"):
        load_astra_network(net)
    ten = json.loads(net.read_text())
    ten.update({k: v[:MAX_DIMS] for k, v in ten.items() if isinstance(v, list)}, **{"dimensions-count": MAX_DIMS})
    net.write_text(json.dumps(ten))
    assert len(load_astra_network(net).dims) == MAX_DIMS


def test_a_scheduler_that_is_no_address_is_bad_input() -> None:
    """``--scheduler garbage``: Dask's ValueError ("missing port number") was an internal error (exit 3)."""
    pytest.importorskip("dask.distributed")
    from codesign.errors import SpecError
    from codesign.explore.executors import DaskRunner
    with pytest.raises(SpecError, match="'garbage' is not an address"):
        DaskRunner("garbage", None)
