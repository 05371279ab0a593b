"""The seed's workloads, each as a short Victream program with a synthetic data generator and a
NumPy reference (seed 002 §6.1.1-6.1.2, §5.2.3).

``logreg``      logistic regression: per iteration, per partition, the margins ``X w``
                (mapPartitions) then the gradient ``X^T (sigmoid(m) - y)`` (reduce over
                ``data.zip(margins)``); the host updates ``w``. The data is reused every
                iteration, which is what a locality-aware scheduler exploits (§6.1.2).
``sort``        key-value records sorted by key with groupByKey (sort, split, merge steps).
``blur``        a 3 x 3 box blur of an image, iterated; each partition carries one halo row
                of each neighbour (MM.halo = 1), so subtask ``i`` depends on ``i-1, i, i+1``.
``matmul``      repeated dense matrix product ``C <- C @ B`` with join (blocked, accumulated).
``pansharpen``  Gram-Schmidt component-substitution pan-sharpening with average intensity
                (Laben & Brower 2000, in the formulation of Aiazzi et al. 2007, "GS"):
                upsampling, alignment, forward transform (intensity I and the GS gains
                g_k = cov(MS_k, I) / var(I)), intensity matching (pan to I in mean and standard
                deviation), substitution (D = P' - I), inverse transform (F_k = MS_k + g_k D),
                clipping: 25 user functions, as the seed's 25-task DAG (§6.1.1).

Each workload: ``inputs(data_bytes, seed, real)`` -> :class:`Inputs`; ``program(ctx, inputs)``
runs it (returns None in sim mode); ``reference(inputs)``; ``check(result, reference)``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tca import TcaError
from tca.victream.api.formats import xp_of
from tca.victream.api.grdd import MM

WORKLOADS = ("logreg", "sort", "blur", "matmul", "pansharpen")


@dataclass
class Inputs:
    name: str
    shapes: dict[str, tuple]
    arrays: dict[str, Any] | None  # None: metadata only (sim mode)
    params: dict = field(default_factory=dict)


def _source(ctx, inp: Inputs, key: str, fmt: str, dtype="float32", **kw):
    if inp.arrays is None:
        return ctx.virtual(fmt, inp.shapes[key], dtype, **kw)
    return ctx.array(inp.arrays[key], fmt, **kw)


# ------------------------------------------------------------------ logistic regression
def logreg_inputs(data_bytes: int, seed: int = 1, real: bool = True, features: int = 31, iterations: int = 3):
    n = max(8, data_bytes // ((features + 1) * 4))
    arrays = None
    if real:
        rng = np.random.default_rng(seed)
        x = rng.standard_normal((n, features), dtype=np.float32)
        w_true = rng.standard_normal(features).astype(np.float32)
        y = (x @ w_true + 0.5 * rng.standard_normal(n).astype(np.float32) > 0).astype(np.float32)
        arrays = {"data": np.hstack([x, y[:, None]])}
    return Inputs("logreg", {"data": (n, features + 1)}, arrays, {"iterations": iterations, "lr": 1.0})


def _sigmoid(xp, m):
    return 1.0 / (1.0 + xp.exp(-m))


def logreg_program(ctx, inp: Inputs):
    n, cols = inp.shapes["data"]
    d = cols - 1
    data = _source(ctx, inp, "data", "dense")
    w = np.zeros(d, dtype=np.float32)
    for _ in range(inp.params["iterations"]):

        def margins(x, w=w):
            return x[:, :d] @ xp_of(x).asarray(w)

        def gradient(x, m):
            xp = xp_of(x)
            return x[:, :d].T @ (_sigmoid(xp, m) - x[:, d])

        m = data.mapPartitions(margins, MM(format="dense", ncols=1, cost_factor=1.0))
        g = data.zip(m).reduce(gradient, lambda a, b: a + b, MM(output_size=d * 4, cost_factor=1.0))
        if g is None:  # sim mode: nothing is computed
            continue
        w = (w - inp.params["lr"] * np.asarray(g) / n).astype(np.float32)
    return None if inp.arrays is None else w


def logreg_reference(inp: Inputs):
    data = inp.arrays["data"]
    d = data.shape[1] - 1
    x, y = data[:, :d], data[:, d]
    w = np.zeros(d, dtype=np.float32)
    for _ in range(inp.params["iterations"]):
        g = x.T @ (_sigmoid(np, x @ w) - y)
        w = (w - inp.params["lr"] * g / len(x)).astype(np.float32)
    return w


# ------------------------------------------------------------------ sort
def sort_inputs(data_bytes: int, seed: int = 1, real: bool = True, key_range: int | None = None):
    n = max(8, data_bytes // 16)
    arrays = None
    if real:
        rng = np.random.default_rng(seed)
        keys = rng.integers(0, key_range or 4 * n, n, dtype=np.int64)
        arrays = {"keys": keys, "values": np.arange(n, dtype=np.int64)}
    return Inputs("sort", {"kv": (n,)}, arrays)


def sort_program(ctx, inp: Inputs):
    if inp.arrays is None:
        kv = ctx.virtual("kv", inp.shapes["kv"], "int64")
    else:
        kv = ctx.kv(inp.arrays["keys"], inp.arrays["values"])
    return kv.groupByKey().collect()


def sort_reference(inp: Inputs):
    keys, values = inp.arrays["keys"], inp.arrays["values"]
    order = np.argsort(keys, kind="stable")
    uk, counts = np.unique(keys, return_counts=True)
    return uk, np.concatenate([[0], np.cumsum(counts)]), values[order]


# ------------------------------------------------------------------ blur
def blur_inputs(data_bytes: int, seed: int = 1, real: bool = True, width: int = 1024, iterations: int = 4):
    h = max(4, data_bytes // (width * 4))
    arrays = None
    if real:
        rng = np.random.default_rng(seed)
        arrays = {"image": rng.random((h, width), dtype=np.float32)}
    return Inputs("blur", {"image": (h, width)}, arrays, {"iterations": iterations})


def box_blur(tile, info):
    """3 x 3 box blur of the own rows of ``tile`` (edges replicated); ``tile`` carries one halo
    row of each neighbour, or none at the image's top and bottom (``info``)."""
    xp = xp_of(tile)
    parts = [tile[:1]] if info.halo_top == 0 else []
    parts.append(tile)
    if info.halo_bottom == 0:
        parts.append(tile[-1:])
    t = xp.concatenate(parts) if len(parts) > 1 else tile
    t = xp.concatenate([t[:, :1], t, t[:, -1:]], axis=1)
    rows, width = info.rows, tile.shape[1]
    acc = xp.zeros((rows, width), dtype=tile.dtype)
    for dy in range(3):
        for dx in range(3):
            acc += t[dy : dy + rows, dx : dx + width]
    return acc / 9.0


def blur_program(ctx, inp: Inputs):
    img = _source(ctx, inp, "image", "image")
    for _ in range(inp.params["iterations"]):
        img = img.map(box_blur, MM(halo=1, cost_factor=9.0))
    return img.collect()


def blur_reference(inp: Inputs):
    img = inp.arrays["image"]
    for _ in range(inp.params["iterations"]):
        p = np.pad(img, 1, mode="edge")
        h, w = img.shape
        img = sum(p[dy : dy + h, dx : dx + w] for dy in range(3) for dx in range(3)) / 9.0
        img = img.astype(np.float32)
    return img


# ------------------------------------------------------------------ matrix multiplication
def matmul_inputs(data_bytes: int, seed: int = 1, real: bool = True, iterations: int = 1):
    n = max(4, int((data_bytes / 8) ** 0.5))
    arrays = None
    if real:
        rng = np.random.default_rng(seed)
        arrays = {
            "a": rng.standard_normal((n, n), dtype=np.float32),
            "b": (rng.standard_normal((n, n), dtype=np.float32) / np.float32(n**0.5)),
        }
    return Inputs("matmul", {"a": (n, n), "b": (n, n)}, arrays, {"iterations": iterations})


def matmul_program(ctx, inp: Inputs):
    a = _source(ctx, inp, "a", "dense")
    b = _source(ctx, inp, "b", "dense")
    c = a
    for _ in range(inp.params["iterations"]):
        c = c.join(None, b)
    return c.collect()


def matmul_reference(inp: Inputs):
    c = inp.arrays["a"]
    for _ in range(inp.params["iterations"]):
        c = c @ inp.arrays["b"]
    return c


# ------------------------------------------------------------------ pan-sharpening
BANDS = 4  # blue, green, red, near infrared (as from a 4-band multispectral sensor)


def pansharpen_inputs(data_bytes: int, seed: int = 1, real: bool = True, scale: int = 4, shift: int = 1):
    # pan H x W float32 plus 4 bands at 1/scale resolution; H a multiple of scale
    w = 512
    h = max(2 * scale, (data_bytes // (w * 4)) // scale * scale)
    shapes = {"pan": (h, w), **{f"ms{k}": (h // scale, w // scale) for k in range(BANDS)}}
    arrays = None
    if real:
        rng = np.random.default_rng(seed)
        scene = rng.random((h // scale, w // scale), dtype=np.float32)
        arrays = {
            f"ms{k}": (
                0.2 + 0.6 * scene * (0.7 + 0.1 * k) + 0.05 * rng.random(scene.shape, dtype=np.float32)
            ).astype(np.float32)
            for k in range(BANDS)
        }
        fine = np.repeat(np.repeat(scene, scale, 0), scale, 1)
        arrays["pan"] = np.clip(fine + 0.1 * rng.random((h, w), dtype=np.float32), 0, None).astype(np.float32)
    return Inputs("pansharpen", shapes, arrays, {"scale": scale, "shift": shift})


def _upsample(scale):
    def f(band):  # nearest-neighbour upsampling by ``scale`` in both directions
        xp = xp_of(band)
        return xp.repeat(xp.repeat(band, scale, axis=0), scale, axis=1)

    return f


def _align(shift):
    def f(tile, info):  # registration: shift by ``shift`` rows and columns (edges replicated)
        xp = xp_of(tile)
        rows = info.rows
        idx = xp.clip(xp.arange(rows) + info.halo_top + shift, 0, tile.shape[0] - 1)
        if info.halo_bottom == 0:  # beyond the image's last row: replicate it
            idx = xp.minimum(idx, info.halo_top + rows - 1)
        out = tile[idx]
        return xp.concatenate([out[:, shift:], xp.repeat(out[:, -1:], shift, axis=1)], axis=1)

    return f


def _moments(a, b=None):
    xp = xp_of(a)
    b = a if b is None else b
    return xp.stack(
        [
            a.sum(dtype=xp.float64),
            b.sum(dtype=xp.float64),
            (a * b).sum(dtype=xp.float64),
            xp.asarray(float(a.size), dtype=xp.float64),
        ]
    )


def pansharpen_program(ctx, inp: Inputs):
    s, sh = inp.params["scale"], inp.params["shift"]
    h, w = inp.shapes["pan"]
    rows = max(s, (ctx.partition_size // (w * 4)) // s * s)
    pan = _source(ctx, inp, "pan", "image", partition_rows=rows)
    ms = [_source(ctx, inp, f"ms{k}", "image", partition_rows=rows // s) for k in range(BANDS)]
    size = rows * w * 4
    # upsampling (4) and alignment (4)
    up = [m.mapPartitions(_upsample(s), MM(ncols=w, row_scale=s, output_size=size)) for m in ms]
    al = [u.map(_align(sh), MM(halo=sh)).cache() for u in up]
    # forward transform: intensity (1)
    z = al[0]
    for a in al[1:]:
        z = z.zip(a)
    intensity = z.map(lambda *b: sum(b[1:], b[0]) / np.float32(len(b)), MM(format="image")).cache()
    add = _add
    # statistics for intensity matching (2) and the GS gains (4)
    ps = pan.reduce(_moments, add, MM(output_size=32))
    is_ = intensity.reduce(_moments, add, MM(output_size=32))
    cov = [a.zip(intensity).reduce(_moments, add, MM(output_size=32)) for a in al]
    if ps is None:  # sim mode: statistics are not computed; use placeholders
        ps = is_ = np.array([0.0, 0.0, 1.0, 1.0])
        cov = [ps] * BANDS
    p_mean, p_std = _mean_std(ps)
    i_mean, i_std = _mean_std(is_)
    gains = [_cov(c) / max(i_std**2, 1e-12) for c in cov]
    # intensity matching (1) and substitution (1)
    a_, b_ = np.float32(i_std / max(p_std, 1e-12)), np.float32(i_mean - p_mean * i_std / max(p_std, 1e-12))
    matched = pan.map(lambda p: p * a_ + b_)
    detail = matched.zip(intensity).map(lambda p, i: p - i).cache()
    # inverse transform (4) and clipping to the valid range (4)
    out = []
    for k in range(BANDS):
        g = np.float32(gains[k])
        fused = al[k].zip(detail).map(lambda m, d, g=g: m + g * d)
        out.append(fused.map(lambda x: xp_of(x).clip(x, 0.0, 1.0)).collect())
    return None if inp.arrays is None else np.stack(out)


def _add(a, b):
    return a + b


def _mean_std(m):
    mean = m[0] / m[3]
    return float(mean), float(max(m[2] / m[3] - mean * mean, 0.0) ** 0.5)


def _cov(m):
    return float(m[2] / m[3] - (m[0] / m[3]) * (m[1] / m[3]))


def pansharpen_reference(inp: Inputs):
    s, sh = inp.params["scale"], inp.params["shift"]
    pan = inp.arrays["pan"].astype(np.float32)
    al = []
    for k in range(BANDS):
        up = np.repeat(np.repeat(inp.arrays[f"ms{k}"], s, 0), s, 1)
        idx = np.clip(np.arange(up.shape[0]) + sh, 0, up.shape[0] - 1)
        a = up[idx]
        al.append(np.concatenate([a[:, sh:], np.repeat(a[:, -1:], sh, axis=1)], axis=1))
    intensity = sum(al[1:], al[0]) / np.float32(BANDS)
    p_mean, p_std = float(pan.mean(dtype=np.float64)), float(pan.std(dtype=np.float64))
    i_mean, i_std = float(intensity.mean(dtype=np.float64)), float(intensity.std(dtype=np.float64))
    matched = pan * np.float32(i_std / p_std) + np.float32(i_mean - p_mean * i_std / p_std)
    detail = matched - intensity
    out = []
    for k in range(BANDS):
        a64, i64 = al[k].astype(np.float64), intensity.astype(np.float64)
        g = np.float32(((a64 * i64).mean() - a64.mean() * i64.mean()) / i_std**2)
        out.append(np.clip(al[k] + g * detail, 0.0, 1.0))
    return np.stack(out)


# ------------------------------------------------------------------ registry
INPUTS = {
    "logreg": logreg_inputs,
    "sort": sort_inputs,
    "blur": blur_inputs,
    "matmul": matmul_inputs,
    "pansharpen": pansharpen_inputs,
}
PROGRAMS = {
    "logreg": logreg_program,
    "sort": sort_program,
    "blur": blur_program,
    "matmul": matmul_program,
    "pansharpen": pansharpen_program,
}
REFERENCES = {
    "logreg": logreg_reference,
    "sort": sort_reference,
    "blur": blur_reference,
    "matmul": matmul_reference,
    "pansharpen": pansharpen_reference,
}


def make_inputs(name: str, data_bytes: int, seed: int = 1, real: bool = True, **kw) -> Inputs:
    if name not in INPUTS:
        raise TcaError(f"unknown workload '{name}' (expected one of: {', '.join(WORKLOADS)})")
    return INPUTS[name](data_bytes, seed, real, **kw)


def run(ctx, inp: Inputs):
    return PROGRAMS[inp.name](ctx, inp)


def reference(inp: Inputs):
    return REFERENCES[inp.name](inp)


def check(inp: Inputs, result, ref=None, rtol: float = 1e-4, atol: float = 1e-4) -> None:
    """Raises AssertionError if ``result`` differs from the NumPy reference."""
    ref = reference(inp) if ref is None else ref
    if isinstance(ref, tuple):
        assert len(result) == len(ref)
        for a, b in zip(result, ref, strict=True):
            np.testing.assert_array_equal(np.asarray(a), b)
    else:
        np.testing.assert_allclose(np.asarray(result), ref, rtol=rtol, atol=atol)
