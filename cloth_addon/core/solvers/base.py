"""What every solver shares: per-substep damping and the inertial prediction."""

import numpy as np


class InertialSolver:
    """Base of the solvers: `advance` (one substep) and `set_active` (tearing) are theirs."""

    def __init__(self, model, settings):
        self.model = model
        self.iterations = settings.iterations
        # Settings.damping is per frame; compounded over the substeps it removes the same share.
        self.damping = 1.0 - (1.0 - settings.damping) ** (1.0 / settings.substeps)

    def predict(self, positions, previous, accel, h, pin_targets) -> np.ndarray:
        """(n, 3) x + (1 - damping)(x - x_prev) + a h^2, the pinned particles at their targets."""
        predicted = positions + (1.0 - self.damping) * (positions - previous) + accel * (h * h)
        predicted[self.model.pinned_indices] = pin_targets
        return predicted
