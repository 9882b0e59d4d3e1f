"""ClothState: what changes in time."""

from dataclasses import dataclass

import numpy as np


@dataclass
class ClothState:
    """positions, previous: (n, 3) float64, m, at the current and the previous substep
    (Verlet keeps velocity implicit in their difference). torn: (s,) bool or None."""

    positions: np.ndarray
    previous: np.ndarray
    torn: np.ndarray | None = None

    def copy(self) -> "ClothState":
        return ClothState(self.positions.copy(), self.previous.copy(),
                          None if self.torn is None else self.torn.copy())
