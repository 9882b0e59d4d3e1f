import pytest

from cloth_addon.core.scenes import grid as make_grid


@pytest.fixture
def grid():
    """make_grid(nx, ny, size=1.0, plane="xz") -> vertices, quads, index (see core.scenes.grid)."""
    return make_grid
