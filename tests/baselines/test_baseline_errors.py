"""Bad input to the baseline models: one-line TcaError messages."""

import pytest
from fixture_platforms import fixture_params
from tca import TcaError
from tca.peach.baselines import BASELINES, PAIRS

PARAMS = fixture_params("ha-pacs-tca")


def message(name, pair, size) -> str:
    with pytest.raises(TcaError) as e:
        BASELINES[name].pingpong_latency_us(PARAMS, pair, size)
    text = str(e.value)
    assert "\n" not in text
    return text


def test_registry_names_and_pairs():
    assert set(BASELINES) == {"cuda-peer", "cuda-peer-uva", "mvapich2", "mvapich2-gdr"}
    assert BASELINES["cuda-peer"].pairs == ("gpu-gpu",)
    assert set(BASELINES["cuda-peer-uva"].pairs) == {"gpu-gpu", "cpu-gpu", "gpu-cpu"}
    assert set(BASELINES["mvapich2"].pairs) == set(PAIRS)
    for name, baseline in BASELINES.items():
        assert baseline.name == name and baseline.description


@pytest.mark.parametrize(
    "name, pair",
    [
        ("cuda-peer", "cpu-gpu"),
        ("cuda-peer", "cpu-cpu"),
        ("cuda-peer", "gpu-cpu"),
        ("cuda-peer-uva", "cpu-cpu"),
    ],
)
def test_unsupported_pair(name, pair):
    assert (
        message(name, pair, 64)
        == f"{name}: pair {pair} is not supported (supported: " + ", ".join(BASELINES[name].pairs) + ")"
    )


@pytest.mark.parametrize("name", sorted(BASELINES))
@pytest.mark.parametrize("pair", ["gpu-xpu", "GPU-GPU", "", "gpu_gpu"])
def test_unknown_pair(name, pair):
    assert f"{name}: unknown pair" in message(name, pair, 64)


@pytest.mark.parametrize("name", sorted(BASELINES))
@pytest.mark.parametrize("size", [0, -1, -4096, 1.5, "64", True, None])
def test_size_must_be_a_positive_integer(name, size):
    pair = BASELINES[name].pairs[0]
    assert f"{name}: size must be a positive number of bytes" in message(name, pair, size)


def test_numpy_integer_sizes_are_accepted():
    import numpy as np

    assert BASELINES["mvapich2"].pingpong_latency_us(PARAMS, "gpu-gpu", np.int64(4096)) == pytest.approx(
        BASELINES["mvapich2"].pingpong_latency_us(PARAMS, "gpu-gpu", 4096)
    )
