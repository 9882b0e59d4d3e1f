"""Wind fields: a bpy-free description of Blender's Wind force fields, evaluated vectorised.

A field blows along its direction (the field object's Z axis) with its strength, read as an
air speed in m/s, scaled by Blender's falloff (`blender_falloff`, the formula of Blender's
effector code as the manual describes it: full strength inside the minimum distance, zero
beyond the maximum, (1 + d - min)^-power in between). Noise makes the wind gust: the strength
varies smoothly in time and space (`WindField.gust`), seeded by the field's seed, so a run is
reproducible. The air velocity at a point is the sum of every field's and Settings.wind.
"""

import math
from dataclasses import dataclass

import numpy as np

from .settings import vector3

SHAPES = ("point", "line", "plane")
FALLOFFS = ("sphere", "tube", "cone")
Z_DIRECTIONS = ("both", "positive", "negative")
# Gusts: GUST_WAVES travelling sine waves, periods between these (s). Equal amplitudes, so their
# mean stays within [-1, 1] with an RMS of 1/sqrt(2 GUST_WAVES) = 0.35 for 4, close to Blender's
# white noise term (random integer 0..127 / (1 + random fraction) / 128: RMS 0.41).
GUST_WAVES = 4
GUST_PERIODS = (0.4, 3.0)


def blender_falloff(distance, power, use_min=False, min_distance=0.0, use_max=False, max_distance=0.0):
    """(k,) float64 in [0, 1]: Blender's falloff of a force field at `distance` (k,) (m or degrees).

    1 below min_distance (when use_min), 0 beyond max_distance (when use_max), otherwise
    (1 + distance - min)^-power, with min = 0 unless use_min.
    """
    distance = np.asarray(distance, dtype=np.float64)
    start = min_distance if use_min else 0.0
    factor = np.power(1.0 + np.maximum(distance - start, 0.0), -power)
    if use_max:
        factor = np.where(distance > max_distance, 0.0, factor)
    return factor


def _number(owner: str, name: str, value, minimum=None) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{owner}.{name} must be a number, got {value!r}") from None
    if not math.isfinite(number):
        raise ValueError(f"{owner}.{name} must be finite, got {value!r}")
    if minimum is not None and number < minimum:
        raise ValueError(f"{owner}.{name} must be >= {minimum}, got {value!r}")
    return number


def _choice(owner: str, name: str, value, choices) -> str:
    text = str(value).lower()
    if text not in choices:
        raise ValueError(f"{owner}.{name} must be one of {choices}, got {value!r}")
    return text


@dataclass(frozen=True)
class WindField:
    """One Wind force field, as Blender defines it. Invalid values raise ValueError naming the field.

    location:   (3,) m, the field object's origin, world space.
    direction:  (3,) the field object's Z axis (normalised here; must not be zero).
    strength:   m/s, air speed along `direction` at full falloff (negative blows backwards).
    noise:      m/s, amplitude of the gusts added to the strength (Blender's Noise), >= 0.
    seed:       integer seed of the gusts (Blender's Seed).
    shape:      "point" (distance to the origin), "line" (to the Z axis), "plane" (to the XY plane).
    falloff:    "sphere" (by that distance), "tube" (by the distance along Z, then radially from
                the Z axis), "cone" (along Z, then by the angle from the Z axis in degrees).
    power:      falloff power (Blender's Power), >= 0; 0 = no falloff.
    use_min_distance, min_distance, use_max_distance, max_distance: m, Blender's Min/Max Distance.
    z_direction: "both", "positive" or "negative": only points on that side of the XY plane.
    radial_power, use_radial_min, radial_min, use_radial_max, radial_max: the radial falloff of
                tube (m) and cone (degrees) falloffs.
    """

    location: tuple = (0.0, 0.0, 0.0)
    direction: tuple = (0.0, 0.0, 1.0)
    strength: float = 1.0
    noise: float = 0.0
    seed: int = 1
    shape: str = "point"
    falloff: str = "sphere"
    power: float = 0.0
    use_min_distance: bool = False
    min_distance: float = 0.0
    use_max_distance: bool = False
    max_distance: float = 0.0
    z_direction: str = "both"
    radial_power: float = 0.0
    use_radial_min: bool = False
    radial_min: float = 0.0
    use_radial_max: bool = False
    radial_max: float = 0.0

    def __post_init__(self):
        set_, owner = object.__setattr__, "WindField"
        set_(self, "location", vector3("location", self.location, owner))
        direction = np.array(vector3("direction", self.direction, owner))
        length = np.linalg.norm(direction)
        if length == 0.0:
            raise ValueError(f"{owner}.direction must not be zero, got {self.direction!r}")
        set_(self, "direction", tuple(float(c) for c in direction / length))
        set_(self, "strength", _number(owner, "strength", self.strength))
        for name in ("noise", "power", "min_distance", "max_distance", "radial_power", "radial_min",
                     "radial_max"):
            set_(self, name, _number(owner, name, getattr(self, name), minimum=0.0))
        if isinstance(self.seed, bool) or not isinstance(self.seed, int | np.integer):
            raise ValueError(f"{owner}.seed must be an integer, got {self.seed!r}")
        set_(self, "shape", _choice(owner, "shape", self.shape, SHAPES))
        set_(self, "falloff", _choice(owner, "falloff", self.falloff, FALLOFFS))
        set_(self, "z_direction", _choice(owner, "z_direction", self.z_direction, Z_DIRECTIONS))
        # The gust waves, fixed by the seed so that the same field gusts the same way every run:
        # angular frequencies omega (1/s) and wave vectors (1/m) of size omega / speed along the
        # wind plus a random one of the same size across it (the gusts travel with the wind).
        rng = np.random.default_rng(int(self.seed) & 0xFFFFFFFF)
        omega = 2.0 * np.pi / rng.uniform(*GUST_PERIODS, GUST_WAVES)
        phase = rng.uniform(0.0, 2.0 * np.pi, GUST_WAVES)
        axis = np.array(self.direction)
        across = rng.normal(size=(GUST_WAVES, 3))
        across -= np.outer(across @ axis, axis)
        across /= np.maximum(np.linalg.norm(across, axis=1), 1e-12)[:, None]
        waves = (omega / max(abs(self.strength), 1.0))[:, None] * (axis + across)
        set_(self, "_gust", (omega, phase + waves @ self.location, waves.T.copy()))

    @property
    def _without_falloff(self) -> bool:
        """Whether the falloff is 1 at every distance (Blender's default: Sphere, Power 0, no Max
        Distance), the z direction aside."""
        return self.falloff == "sphere" and self.power == 0.0 and not self.use_max_distance

    @property
    def uniform(self) -> np.ndarray | None:
        """(3,) m/s: the air velocity where it is the same at every point and time (no noise, no
        falloff, both sides of the XY plane: a Wind field as Blender adds it), else None."""
        if self.noise > 0.0 or self.z_direction != "both" or not self._without_falloff:
            return None
        return self.strength * np.array(self.direction)

    def falloff_factor(self, points: np.ndarray) -> np.ndarray:
        """(k,) float64 in [0, 1]: Blender's falloff at points (k, 3) m, world space."""
        axis = np.array(self.direction)
        offset = np.asarray(points, dtype=np.float64) - self.location
        along = offset @ axis  # signed distance from the XY plane
        factor = np.ones(len(offset))
        if self.z_direction == "positive":
            factor[along < 0.0] = 0.0
        elif self.z_direction == "negative":
            factor[along > 0.0] = 0.0
        if self._without_falloff:
            return factor
        distance_limits = (self.use_min_distance, self.min_distance, self.use_max_distance, self.max_distance)
        radial_limits = (self.use_radial_min, self.radial_min, self.use_radial_max, self.radial_max)
        if self.falloff == "sphere":
            if self.shape == "plane":
                distance = np.abs(along)
            elif self.shape == "line":
                distance = np.linalg.norm(offset - along[:, None] * axis, axis=1)
            else:
                distance = np.linalg.norm(offset, axis=1)
            return factor * blender_falloff(distance, self.power, *distance_limits)
        factor *= blender_falloff(np.abs(along), self.power, *distance_limits)
        if self.falloff == "tube":
            radial = np.linalg.norm(offset - along[:, None] * axis, axis=1)
        else:
            length = np.linalg.norm(offset, axis=1)
            cosine = np.divide(along, length, out=np.ones_like(along), where=length > 0.0)
            radial = np.degrees(np.arccos(np.clip(cosine, -1.0, 1.0)))
        return factor * blender_falloff(radial, self.radial_power, *radial_limits)

    def gust(self, points: np.ndarray, time: float) -> np.ndarray:
        """(k,) float64 in [-1, 1]: the gust factor at points (k, 3) m and `time` s.

        A few sine waves travelling with the wind (Taylor's frozen turbulence: a gust is carried
        along at the wind speed) and across it, so neighbouring parts of a cloth feel different
        gusts and the pattern moves over it.
        """
        omega, phase, waves = self._gust
        angle = np.asarray(points, dtype=np.float64) @ waves
        np.subtract(omega * time + phase, angle, out=angle)
        return np.sin(angle, out=angle) @ np.full(GUST_WAVES, 1.0 / GUST_WAVES)

    def velocity(self, points: np.ndarray, time: float = 0.0) -> np.ndarray:
        """(k, 3) float64 m/s: this field's air velocity at points (k, 3) m at `time` s."""
        points = np.asarray(points, dtype=np.float64)
        speed = np.full(len(points), self.strength)
        if self.noise > 0.0:
            speed += self.noise * self.gust(points, time)
        return np.outer(speed * self.falloff_factor(points), self.direction)


def uniform_air(wind, fields) -> tuple[np.ndarray, list]:
    """((3,) m/s, [fields]): when every field is uniform, the constant `wind` (3,) plus them all
    and no fields left to evaluate at points; else `wind` and all the fields, for air_velocity
    (which adds them in their order, so that the sums are the same to the last bit)."""
    air = np.array(wind, dtype=np.float64)
    fields = list(fields or ())
    same = [field.uniform for field in fields]
    if any(velocity is None for velocity in same):
        return air, fields
    for velocity in same:
        air += velocity
    return air, []


def air_velocity(points: np.ndarray, time: float, wind, fields) -> np.ndarray:
    """(k, 3) float64 m/s: the constant `wind` (3,) plus every field's velocity at points (k, 3)."""
    velocity = np.empty((len(points), 3))
    velocity[:] = wind
    for field in fields:  # a handful of fields, each vectorised over the points
        velocity += field.velocity(points, time)
    return velocity
