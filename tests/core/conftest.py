import pytest

from tools.scenes import grid as make_grid


@pytest.fixture
def grid():
    """make_grid(nx, ny, size=1.0, plane="xz") -> vertices, quads, index (see tools/scenes.py's grid)."""
    return make_grid
