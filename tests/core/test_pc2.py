"""The PC2 point-cache writer and reader against the format's definition."""

import struct

import numpy as np
import pytest

from cloth_addon.core.pc2 import read_pc2, read_pc2_header, write_pc2


@pytest.fixture
def samples():
    return np.random.default_rng(3).normal(size=(4, 5, 3)).astype(np.float32)


def test_round_trip_keeps_every_coordinate(tmp_path, samples):
    path = str(tmp_path / "a.pc2")
    write_pc2(path, samples, frame_start=7)
    back = read_pc2(path)
    assert back.dtype == np.float32 and back.shape == (4, 5, 3)
    np.testing.assert_array_equal(back, samples)
    assert read_pc2_header(path) == (5, 7.0, 1.0, 4)


def test_header_fields_are_the_ones_the_format_defines(tmp_path, samples):
    path = tmp_path / "a.pc2"
    write_pc2(str(path), samples.astype(np.float64), frame_start=12.0, sample_rate=0.5)
    raw = path.read_bytes()
    # char[12] signature, int32 version, int32 points, float32 start, float32 rate, int32 samples
    assert raw[:12] == b"POINTCACHE2\0"
    assert struct.unpack("<i", raw[12:16]) == (1,)
    assert struct.unpack("<i", raw[16:20]) == (5,)
    assert struct.unpack("<f", raw[20:24]) == (12.0,)
    assert struct.unpack("<f", raw[24:28]) == (0.5,)
    assert struct.unpack("<i", raw[28:32]) == (4,)
    assert len(raw) == 32 + 4 * 5 * 3 * 4
    # then x, y, z of point 0 of sample 0, little-endian float32
    np.testing.assert_array_equal(struct.unpack("<3f", raw[32:44]), samples[0, 0])


def header(signature=b"POINTCACHE2\0", version=1, points=2, count=1):
    return struct.pack("<12siiffi", signature, version, points, 1.0, 1.0, count)


@pytest.mark.parametrize("content, message", [
    (b"", "too short"),
    (b"POINTCACHE2\0" + b"\0" * 8, "too short"),
    (header(signature=b"POINTCACHE3\0") + bytes(24), "not a PC2 file"),
    (header(version=2) + bytes(24), "version 2"),
    (header(points=-1) + bytes(24), "negative"),
    (header() + bytes(20), "take 56"),  # a truncated last sample
    (header() + bytes(28), "take 56"),  # trailing bytes
], ids=["empty", "short-header", "signature", "version", "negative", "truncated", "trailing"])
def test_bad_files_raise_value_error(tmp_path, content, message):
    path = tmp_path / "bad.pc2"
    path.write_bytes(content)
    with pytest.raises(ValueError, match=message):
        read_pc2(str(path))


def test_samples_of_the_wrong_shape_are_refused(tmp_path):
    with pytest.raises(ValueError, match="shape"):
        write_pc2(str(tmp_path / "a.pc2"), np.zeros((4, 5)), frame_start=1)
