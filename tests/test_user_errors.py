"""What a user caused ends as exit 2 (or 1) and one line, never as an internal error (exit 3) or a traceback."""
from __future__ import annotations

import numpy as np

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
