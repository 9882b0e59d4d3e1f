"""Simulation settings: one validated dataclass shared by every solver.

Units are SI throughout: metres, seconds, kilograms. Stretch and shear stiffness are per
spring, in N/m; bending stiffness is per unit width, in N m (see bend_stiffness).
On a 2D cloth a constant per-spring stiffness is already resolution independent: a strip of
width W cut by springs of spacing a has W/a springs in parallel, each of stiffness k and
length a, so the strip's tension per unit strain is (W/a) * k * a = W * k. That is why the
stiffness is not divided by the spring length (as Blender's cloth does).
"""

import math
from dataclasses import dataclass, replace

SOLVERS = ("fast_mass_spring", "verlet", "newton")

DEFAULT_MAX_VERTICES = 250_000
# Settings.self_collision_distance=None: this fraction of the median rest edge length.
AUTO_SELF_DISTANCE = 0.5
# Aerodynamics (docs/PHYSICS.md §7): drag in kg/m^3 (half the air density, 0.6 kg/m^3, times a drag
# coefficient), and lift as a multiple of the drag.
AIR_DRAG = 0.3
AIR_LIFT = 1.5


def vector3(name: str, value, owner: str = "Settings") -> tuple[float, float, float]:
    """value as three finite floats, else ValueError naming <owner>.<name> (Settings and WindField)."""
    try:
        vector = tuple(float(c) for c in value)
    except (TypeError, ValueError):
        raise ValueError(f"{owner}.{name} must be a 3-vector, got {value!r}") from None
    if len(vector) != 3 or not all(math.isfinite(c) for c in vector):
        raise ValueError(f"{owner}.{name} must be three finite numbers, got {value!r}")
    return vector


def _number(name: str, value, low: float = -math.inf, high: float = math.inf) -> float:
    """value as a finite float in [low, high], else ValueError naming Settings.<name>. A bool is
    not a number here: True for a stiffness is a slip, not 1 N/m."""
    if isinstance(value, bool):
        raise ValueError(f"Settings.{name} must be a number, got {value!r}")
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"Settings.{name} must be a number, got {value!r}") from None
    if not (math.isfinite(number) and low <= number <= high):
        raise ValueError(f"Settings.{name} must be a finite number in [{low:g}, {high:g}], got {value!r}")
    return number


def _check_garment_fields(settings) -> None:
    """Validate and normalise the sewing, pressure, shrinking and property-weight fields."""
    set_ = object.__setattr__
    set_(settings, "sewing_force_max", _number("sewing_force_max", settings.sewing_force_max, 0.0))
    set_(settings, "pressure", _number("pressure", settings.pressure))
    set_(settings, "target_volume", _number("target_volume", settings.target_volume, 0.0))
    shrink = _number("shrink", settings.shrink, -1.0, 1.0)
    if shrink >= 1.0:
        raise ValueError(f"Settings.shrink must be below 1 (1 shrinks springs to nothing), got {shrink!r}")
    set_(settings, "shrink", shrink)
    for name in ("stretch_stiffness_max", "shear_stiffness_max", "bend_stiffness_max"):
        if getattr(settings, name) is not None:
            set_(settings, name, _number(name, getattr(settings, name), 0.0))


@dataclass(frozen=True)
class Settings:
    """Everything that configures a simulation. Invalid values raise ValueError naming the field.

    solver:            "fast_mass_spring" (implicit Euler, Liu et al. 2013), "verlet"
                       (Verlet + Jakobsen/XPBD relaxation) or "newton" (reference); see
                       docs/PHYSICS.md.
    dt:                frame length, s (1/24 for 24 fps). `Simulation.step(1)` advances dt.
    substeps:          solver steps per frame (h = dt / substeps), >= 1.
    iterations:        relaxation passes (verlet) or local/global iterations (fast_mass_spring,
                       each substep then ends with one vertex Newton step: docs/PHYSICS.md §9)
                       or Newton iterations per substep, >= 1.
    gravity:           (3,) m/s^2, world space; Z up by default.
    density:           kg/m^2 of cloth surface; lumped onto the vertices of each face.
    linear_density:    kg/m of loose edges (ropes: edges that belong to no face).
    stretch_stiffness: N/m, springs along mesh edges (membrane tension per unit strain).
    shear_stiffness:   N/m, quad diagonals and n-gon chords.
    bend_stiffness:    N m, plate bending stiffness k_b (a sheet bent to radius R stores
                       1/2 k_b / R^2 per m^2), the same material at every mesh resolution.
                       The implicit solvers use the quadratic bending model (bending.py); the
                       verlet solver skip-one springs of model.verlet_bend_stiffness (N/m).
                       `math.inf` on any stiffness makes it a rigid constraint for the verlet
                       solver (exactly Jakobsen's projection); the implicit solvers
                       need finite values.
    damping:           fraction of velocity removed per frame, in [0, 1). A velocity factor
                       of 0.99 per step is damping=0.01 at one substep.
    spring_damping:    s, stiffness-proportional damping along the springs: each spring resists
                       the rate of its own stretching with spring_damping times its stiffness
                       (kg/s). A stretch vibration of angular frequency w gets the damping ratio
                       spring_damping * w / 2 (a 3 m strip's 5 Hz bounce: 0.15 at 0.01 s), while
                       rigid motion and swinging, which stretch nothing, are left alone. Off (0)
                       by default (docs/BENCHMARKS.md, "What the renders show": it did not settle the
                       drape). Implicit solvers only; the verlet solver ignores it.
    air_drag:          kg/m^3: aerodynamic drag, force per unit area per (m/s)^2 of air speed
                       relative to the cloth, face-on (half the air density times a drag
                       coefficient; forces.aerodynamic_forces). Also what couples the cloth to
                       the wind.
    air_lift:          the lift coefficient as a multiple of the drag's (dimensionless, >= 0):
                       the force perpendicular to the relative air velocity that a face at an
                       angle to it feels. air_drag = 0 turns all air off.
    wind:              (3,) m/s, constant wind velocity in world space (wind fields are
                       given to the Simulation: core.WindField).
    tear_factor:       None (off) or > 1: a spring longer than rest * tear_factor at the end of
                       a step breaks for good.
    compression:       how hard a compressed spring pushes back, as a fraction of its stretch or
                       shear stiffness, in [0, 1]: cloth resists stretching and barely resists
                       being squeezed along itself, it buckles (woven cotton 0.3; 1 resists both
                       alike, as rubber does; 0 does not resist at all). Every solver honours it
                       (docs/PHYSICS.md §9).
    imperfection:      the deterministic nudge every fresh state gets at its first step, as a
                       fraction of the median edge length (Simulation._add_imperfection): what
                       lets exactly symmetric input (a flat sheet squeezed in its plane, a strip
                       standing on its edge) buckle as real cloth does. 0 keeps such symmetry
                       exactly (for scripts that need bitwise invariants).
    self_collision:    keep the cloth (and other cloth objects simulated with it) from passing
                       through itself, and its layers self_collision_distance apart.
    collision_distance: m, cloth thickness against colliders (added to their own thickness).
    self_collision_distance: m, gap kept between layers of cloth, or None (the default) for
                       AUTO_SELF_DISTANCE times the mesh's median edge length: a fixed number
                       would be too thick for a fine mesh and too thin for a coarse one.
    friction:          Coulomb friction coefficient for colliders that set none of their own.
    chebyshev:         Chebyshev acceleration of the fast solver's iterations (Wang 2015).
    chebyshev_rho:     spectral-radius estimate for it, in (0, 1); None = estimate it.
    max_vertices:      refuse larger meshes before allocating anything big.

    Garments and pillows (see core/garment.py and core/pressure.py; per-vertex weights and a
    rest shape are Simulation arguments, not settings):
    use_sewing:        loose edges of a mesh that has faces become sewing springs: rest length 0,
                       stretch_stiffness, pulling their two vertices together until the seam closes.
                       Off: they are rope springs at their rest length (linear_density).
    sewing_force_max:  N, the most one sewing spring pulls with; 0 = unlimited.
    use_pressure:      a closed mesh is inflated by a gas pressure on its faces (an open mesh
                       raises ValueError).
    pressure:          Pa, gas pressure at the target volume; the gas follows Boyle's law, so the
                       pressure is pressure * target / volume (negative pulls the faces in).
    target_volume:     m^3, the volume at which the gas has `pressure`; 0 = the rest volume.
    shrink:            fraction of the rest length springs shrink by (0.2: 20% shorter, negative
                       grows), in [-1, 1); scaled per vertex by Simulation's weights["shrink"].
    stretch_stiffness_max, shear_stiffness_max, bend_stiffness_max: the stiffness at vertex
                       weight 1 of Simulation's weights["stretch"|"shear"|"bend"] (N/m; bending N m,
                       per fold) (the base value is at weight 0, linear in between); None = the
                       base value.
    """

    solver: str = "fast_mass_spring"
    dt: float = 1.0 / 24.0
    substeps: int = 5
    iterations: int = 2
    gravity: tuple = (0.0, 0.0, -9.81)
    density: float = 0.15
    linear_density: float = 0.02
    stretch_stiffness: float = 500.0
    shear_stiffness: float = 50.0
    bend_stiffness: float = 2e-5
    damping: float = 0.05
    spring_damping: float = 0.0
    air_drag: float = AIR_DRAG
    air_lift: float = AIR_LIFT
    wind: tuple = (0.0, 0.0, 0.0)
    tear_factor: float | None = None
    compression: float = 0.3
    imperfection: float = 1e-6
    self_collision: bool = False
    collision_distance: float = 0.005
    self_collision_distance: float | None = None
    friction: float = 0.3
    chebyshev: bool = True
    chebyshev_rho: float | None = None
    max_vertices: int = DEFAULT_MAX_VERTICES
    use_sewing: bool = False
    sewing_force_max: float = 0.0
    use_pressure: bool = False
    pressure: float = 0.0
    target_volume: float = 0.0
    shrink: float = 0.0
    stretch_stiffness_max: float | None = None
    shear_stiffness_max: float | None = None
    bend_stiffness_max: float | None = None

    def __post_init__(self):
        set_ = object.__setattr__
        if self.solver not in SOLVERS:
            raise ValueError(f"Settings.solver must be one of {SOLVERS}, got {self.solver!r}")
        for name in ("substeps", "iterations", "max_vertices"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"Settings.{name} must be an integer >= 1, got {value!r}")
        _positive = ("dt", "density", "linear_density")
        _non_negative = ("stretch_stiffness", "shear_stiffness", "bend_stiffness", "air_drag",
                         "air_lift", "collision_distance", "friction", "spring_damping")
        for name in ("self_collision", "chebyshev", "use_sewing", "use_pressure"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"Settings.{name} must be True or False, got {getattr(self, name)!r}")
        for name in _positive + _non_negative:
            value = getattr(self, name)
            if isinstance(value, bool):
                raise ValueError(f"Settings.{name} must be a number, got {value!r}")
            try:
                value = float(value)
            except (TypeError, ValueError):
                raise ValueError(f"Settings.{name} must be a number, got {value!r}") from None
            finite_required = name in _positive or not name.endswith("stiffness")
            if math.isnan(value) or (finite_required and not math.isfinite(value)):
                raise ValueError(f"Settings.{name} must be finite, got {value!r}")
            if name in _positive and value <= 0:
                raise ValueError(f"Settings.{name} must be > 0, got {value!r}")
            if value < 0:
                raise ValueError(f"Settings.{name} must be >= 0, got {value!r}")
            set_(self, name, value)
        set_(self, "compression", _number("compression", self.compression, 0.0, 1.0))
        set_(self, "imperfection", _number("imperfection", self.imperfection, 0.0, 1e-2))
        damping = _number("damping", self.damping, 0.0, math.inf)
        if damping >= 1.0:
            raise ValueError(f"Settings.damping must be in [0, 1), got {self.damping!r}")
        set_(self, "damping", damping)
        set_(self, "gravity", vector3("gravity", self.gravity))
        set_(self, "wind", vector3("wind", self.wind))
        if self.tear_factor is not None:
            tear = _number("tear_factor", self.tear_factor)
            if not tear > 1.0:
                raise ValueError(f"Settings.tear_factor must be None or > 1, got {self.tear_factor!r}")
            set_(self, "tear_factor", tear)
        if self.self_collision_distance is not None:
            distance = _number("self_collision_distance", self.self_collision_distance)
            if not distance > 0.0:
                raise ValueError("Settings.self_collision_distance must be None (automatic) or a finite "
                                 f"distance > 0, got {self.self_collision_distance!r}")
            set_(self, "self_collision_distance", distance)
        if self.chebyshev_rho is not None:
            rho = _number("chebyshev_rho", self.chebyshev_rho)
            if not 0.0 < rho < 1.0:
                raise ValueError(f"Settings.chebyshev_rho must be None or in (0, 1), got {rho!r}")
            set_(self, "chebyshev_rho", rho)
        _check_garment_fields(self)
        if self.solver != "verlet":
            for name in ("stretch_stiffness", "shear_stiffness", "bend_stiffness"):
                if math.isinf(getattr(self, name)):
                    raise ValueError(f"Settings.{name} must be finite for solver {self.solver!r} "
                                     "(only 'verlet' supports rigid constraints)")

    @property
    def h(self) -> float:
        """Substep length, s."""
        return self.dt / self.substeps

    def replace(self, **changes) -> "Settings":
        """A copy with some fields changed (validated again)."""
        return replace(self, **changes)


