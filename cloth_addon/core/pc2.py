"""The PC2 point-cache format (Blender's Mesh Cache modifier, 3ds Max, Maya): no bpy needed.

A PC2 file is a 32-byte little-endian header and then the samples, frame after frame:

    offset  type       field
         0  char[12]   signature "POINTCACHE2\\0"
        12  int32      file version, 1
        16  int32      number of points (vertices) per sample
        20  float32    start frame
        24  float32    sample rate (frames between samples)
        28  int32      number of samples
        32  float32[]  samples x points x 3 coordinates (x, y, z)
"""

import struct

import numpy as np

SIGNATURE = b"POINTCACHE2\0"
VERSION = 1
HEADER = struct.Struct("<12siiffi")


def write_pc2(path: str, samples: np.ndarray, frame_start: float, sample_rate: float = 1.0) -> None:
    """Write (samples, points, 3) positions as a PC2 file (coordinates stored as float32)."""
    samples = np.ascontiguousarray(samples, dtype="<f4")
    if samples.ndim != 3 or samples.shape[2] != 3:
        raise ValueError(f"PC2 samples must have shape (samples, points, 3), got {samples.shape}")
    count, points, _ = samples.shape
    with open(path, "wb") as handle:
        handle.write(HEADER.pack(SIGNATURE, VERSION, points, float(frame_start), float(sample_rate), count))
        samples.tofile(handle)  # straight from the array: a bake's samples can be hundreds of MB


def read_pc2_header(path: str) -> tuple[int, float, float, int]:
    """(points, start frame, sample rate, samples) from a PC2 file's header.

    Raises ValueError when the file is not PC2 version 1 or its size disagrees with the header.
    """
    with open(path, "rb") as handle:
        header = handle.read(HEADER.size)
        size = handle.seek(0, 2)
    if len(header) < HEADER.size:
        raise ValueError(f"{path}: {len(header)} bytes is too short for a PC2 header")
    signature, version, points, start, rate, count = HEADER.unpack(header)
    if signature != SIGNATURE:
        raise ValueError(f"{path}: not a PC2 file (signature {signature!r})")
    if version != VERSION:
        raise ValueError(f"{path}: PC2 version {version} (only {VERSION} exists)")
    if points < 0 or count < 0:
        raise ValueError(f"{path}: negative point or sample count in the PC2 header")
    expected = HEADER.size + 12 * points * count
    if size != expected:
        raise ValueError(f"{path}: {size} bytes, but {count} samples of {points} points take {expected}")
    return points, start, rate, count


def read_pc2(path: str) -> np.ndarray:
    """(samples, points, 3) float32 from a PC2 file; ValueError when it is not a valid one."""
    points, _, _, count = read_pc2_header(path)
    with open(path, "rb") as handle:
        handle.seek(HEADER.size)
        data = np.fromfile(handle, dtype="<f4")
    return data.reshape(count, points, 3)
