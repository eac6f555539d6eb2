"""Standalone check of the nn GPU kernels (hip_kernels/onnx_*.hip) against NumPy references, through ctypes.

On a CUDA machine, from the repository root: bash tests/gpu_nn/build.sh /tmp/stb, then
python3 tests/gpu_nn/check.py /tmp/stb/libst.so [--quick]. Prints FAIL lines and RESULT; exits 1 on a failure.
"""

import ctypes as C
import sys
import time

import numpy as np

lib = C.CDLL(sys.argv[1])
QUICK = "--quick" in sys.argv
rng = np.random.default_rng(0)
lib.st_malloc.restype = C.c_void_p
lib.st_malloc.argtypes = [C.c_size_t]
lib.st_free.argtypes = [C.c_void_p]
lib.st_h2d.argtypes = [C.c_void_p, C.c_void_p, C.c_size_t]
lib.st_d2h.argtypes = [C.c_void_p, C.c_void_p, C.c_size_t]
lib.fp8ort_gpu_last_error.restype = C.c_char_p
I64 = C.c_int64
MAXR = 8


class Pool(C.Structure):
    _fields_ = [
        (n, I64)
        for n in "planes in_h in_w out_h out_w kernel_h kernel_w stride_h stride_w dilation_h "
        "dilation_w pad_top pad_left pad_bottom pad_right".split()
    ] + [("max_pool", C.c_int), ("count_include_pad", C.c_int)]


class Gemm(C.Structure):
    _fields_ = [
        ("m", I64),
        ("n", I64),
        ("k", I64),
        ("batch_rank", C.c_int),
        ("batch_dims", I64 * MAXR),
        ("a_batch_strides", I64 * MAXR),
        ("b_batch_strides", I64 * MAXR),
        ("a_sm", I64),
        ("a_sk", I64),
        ("b_sk", I64),
        ("b_sn", I64),
        ("alpha", C.c_float),
        ("beta", C.c_float),
        ("c", C.c_void_p),
        ("c_sm", I64),
        ("c_sn", I64),
    ]


class Conv(C.Structure):
    _fields_ = [
        (n, I64)
        for n in "batch in_c in_h in_w out_c out_h out_w group kernel_h kernel_w stride_h stride_w "
        "dilation_h dilation_w pad_top pad_left".split()
    ]


DT = {np.float32: 1, np.float16: 10}
results = {"pass": 0, "fail": 0}
bufs = []


def dev(a):
    a = np.ascontiguousarray(a)
    p = lib.st_malloc(a.nbytes)
    assert p, "cudaMalloc failed"
    assert lib.st_h2d(p, a.ctypes.data, a.nbytes) == 0
    bufs.append(p)
    return p


def back(p, shape, dt):
    out = np.empty(shape, dt)
    rc = lib.st_sync()
    assert rc == 0, f"cuda error {rc} after a launch"
    assert lib.st_d2h(out.ctypes.data, p, out.nbytes) == 0
    return out


def free_all():
    for p in bufs:
        lib.st_free(p)
    bufs.clear()


def report(name, got, ref, dt):
    ref = np.asarray(ref, np.float64)
    g = got.astype(np.float64)
    tol = 2e-2 if dt == np.float16 else 2e-4
    ok = g.shape == ref.shape and np.allclose(
        g, ref, rtol=tol, atol=tol * max(1.0, float(np.abs(ref).max(initial=0))), equal_nan=True
    )
    results["pass" if ok else "fail"] += 1
    if not ok:
        err = np.abs(g - ref).max() if g.shape == ref.shape else "shape"
        print(f"FAIL {name} {dt.__name__}: max err {err}, shapes {g.shape} {ref.shape}")
    free_all()


def status(st, what):
    if st != 0:
        raise RuntimeError(f"{what}: status {st}: {lib.fp8ort_gpu_last_error().decode()}")


# ---------------- pooling ----------------
def pool_ref(x, k, s, d, pads, max_pool, cip, out):
    n, c, h, w = x.shape
    (kh, kw), (sh, sw), (dh, dw), (pt, pl, pb, pr), (oh, ow) = k, s, d, pads, out
    y = np.zeros((n, c, oh, ow))
    for oy in range(oh):
        for ox in range(ow):
            vals, padded = [], 0
            for ky in range(kh):
                iy = oy * sh - pt + ky * dh
                for kx in range(kw):
                    ix = ox * sw - pl + kx * dw
                    if not max_pool and (iy >= h + pb or ix >= w + pr):
                        continue
                    padded += 1
                    if 0 <= iy < h and 0 <= ix < w:
                        vals.append(x[:, :, iy, ix].astype(np.float64))
            if max_pool:
                y[:, :, oy, ox] = np.max(vals, axis=0) if vals else -3.4028234663852886e38
            else:
                div = padded if cip else len(vals)
                y[:, :, oy, ox] = (np.sum(vals, axis=0) / div) if vals else 0.0
    return y


def out_size(i, k, s, d, pb, pe, ceil):
    span = i + pb + pe - (d * (k - 1) + 1)
    return (-(-span // s) if ceil else span // s) + 1


def test_pool(shape, k, s=(1, 1), d=(1, 1), pads=(0, 0, 0, 0), max_pool=True, cip=False, ceil=False, dt=np.float32):
    x = rng.standard_normal(shape).astype(dt)
    n, c, h, w = shape
    oh = out_size(h, k[0], s[0], d[0], pads[0], pads[2], ceil)
    ow = out_size(w, k[1], s[1], d[1], pads[1], pads[3], ceil)
    p = Pool(n * c, h, w, oh, ow, k[0], k[1], s[0], s[1], d[0], d[1], *pads, int(max_pool), int(cip))
    xd, yd = dev(x), dev(np.zeros((n, c, oh, ow), dt))
    status(lib.fp8ort_nn_pool2d_run(C.c_void_p(xd), C.c_void_p(yd), DT[dt], C.byref(p), None), "pool")
    ref = pool_ref(x, k, s, d, pads, max_pool, cip, (oh, ow))
    if dt == np.float16 and max_pool:
        ref = np.maximum(ref, -65504.0)
    report(
        f"pool{shape} k{k} s{s} d{d} p{pads} max{max_pool} cip{cip} ceil{ceil}", back(yd, (n, c, oh, ow), dt), ref, dt
    )


# ---------------- reductions ----------------
def test_reduce(shape, outer, red, inner, op, dt=np.float32):
    x = rng.standard_normal(shape).astype(dt)
    xd, yd = dev(x), dev(np.zeros(outer * inner, dt))
    status(
        lib.fp8ort_nn_reduce(C.c_void_p(xd), C.c_void_p(yd), DT[dt], op, I64(outer), I64(red), I64(inner), None),
        "reduce",
    )
    x3 = x.astype(np.float64).reshape(outer, red, inner)
    f = [np.sum, np.mean, np.max, np.min][op]
    report(f"reduce{shape} [{outer},{red},{inner}] op{op}", back(yd, (outer * inner,), dt), f(x3, axis=1).ravel(), dt)


def test_reduce_axes(shape, axes, op, dt=np.float32):
    x = rng.standard_normal(shape).astype(dt)
    ref = [np.sum, np.mean, np.max, np.min][op](x.astype(np.float64), axis=tuple(axes))
    dims = (I64 * MAXR)(*shape)
    red = (C.c_int * MAXR)(*[int(a in axes) for a in range(len(shape))])
    xd, yd = dev(x), dev(np.zeros(ref.size, dt))
    status(lib.fp8ort_nn_reduce_axes(C.c_void_p(xd), C.c_void_p(yd), DT[dt], op, len(shape), dims, red, None), "axes")
    report(f"reduce_axes{shape} {axes} op{op}", back(yd, ref.shape, dt), ref, dt)


# ---------------- softmax / layernorm ----------------
def test_softmax(shape, axis, log=False, dt=np.float32, scale=3.0):
    x = (rng.standard_normal(shape) * scale).astype(dt)
    outer = int(np.prod(shape[:axis]))
    d = shape[axis]
    inner = int(np.prod(shape[axis + 1 :]))
    xd, yd = dev(x), dev(np.zeros(shape, dt))
    status(
        lib.fp8ort_nn_softmax(C.c_void_p(xd), C.c_void_p(yd), DT[dt], I64(outer), I64(d), I64(inner), int(log), None),
        "softmax",
    )
    x64 = x.astype(np.float64)
    e = x64 - x64.max(axis=axis, keepdims=True)
    ref = (
        e - np.log(np.exp(e).sum(axis=axis, keepdims=True))
        if log
        else np.exp(e) / np.exp(e).sum(axis=axis, keepdims=True)
    )
    report(f"softmax{shape} axis{axis} log{log}", back(yd, shape, dt), ref, dt)


def test_layernorm(rows, cols, bias=True, dt=np.float32):
    x = (rng.standard_normal((rows, cols)) * 2 + 0.5).astype(dt)
    sc = rng.standard_normal(cols).astype(dt)
    b = rng.standard_normal(cols).astype(dt)
    xd, sd, bd = dev(x), dev(sc), dev(b) if bias else None
    yd, md, vd = dev(np.zeros((rows, cols), dt)), dev(np.zeros(rows, np.float32)), dev(np.zeros(rows, np.float32))
    status(
        lib.fp8ort_nn_layer_norm(
            C.c_void_p(xd),
            C.c_void_p(sd),
            C.c_void_p(bd),
            C.c_void_p(yd),
            C.c_void_p(md),
            C.c_void_p(vd),
            DT[dt],
            I64(rows),
            I64(cols),
            C.c_float(1e-5),
            None,
        ),
        "layernorm",
    )
    x64 = x.astype(np.float64)
    mu = x64.mean(axis=1, keepdims=True)
    inv = 1 / np.sqrt(((x64 - mu) ** 2).mean(axis=1, keepdims=True) + 1e-5)
    ref = (x64 - mu) * inv * sc.astype(np.float64) + (b.astype(np.float64) if bias else 0)
    got_m, got_v = back(md, (rows,), np.float32), back(vd, (rows,), np.float32)
    y = back(yd, (rows, cols), dt)
    ok_stats = np.allclose(got_m, mu.ravel(), rtol=1e-3, atol=1e-3) and np.allclose(got_v, inv.ravel(), rtol=1e-3)
    if not ok_stats:
        print(f"FAIL layernorm stats {rows}x{cols}")
        results["fail"] += 1
    report(f"layernorm {rows}x{cols} bias{bias}", y, ref, dt)


# ---------------- matmul / gemm ----------------
def run_gemm(a, b, g, y_shape, dt, c=None):
    ad, bd, yd = dev(a), dev(b), dev(np.zeros(y_shape, dt))
    if c is not None:
        g.c = dev(c)
    status(lib.fp8ort_nn_gemm_run(C.c_void_p(ad), C.c_void_p(bd), C.c_void_p(yd), DT[dt], C.byref(g), None), "gemm")
    return back(yd, y_shape, dt)


def test_matmul(ash, bsh, dt=np.float32):
    a = rng.standard_normal(ash).astype(dt)
    b = rng.standard_normal(bsh).astype(dt)
    ref = np.matmul(a.astype(np.float64), b.astype(np.float64))
    a2 = a.reshape((1,) + ash) if len(ash) == 1 else a
    b2 = b.reshape(bsh + (1,)) if len(bsh) == 1 else b
    m, k = a2.shape[-2:]
    n = b2.shape[-1]
    ab, bb = a2.shape[:-2], b2.shape[:-2]
    r = max(len(ab), len(bb))
    ab, bb = (1,) * (r - len(ab)) + ab, (1,) * (r - len(bb)) + bb
    g = Gemm(m=m, n=n, k=k, batch_rank=r, a_sm=k, a_sk=1, b_sk=n, b_sn=1, alpha=1.0, beta=0.0)
    sa, sb = m * k, k * n
    for d in range(r - 1, -1, -1):
        g.batch_dims[d] = max(ab[d], bb[d])
        g.a_batch_strides[d] = 0 if ab[d] == 1 else sa
        g.b_batch_strides[d] = 0 if bb[d] == 1 else sb
        sa *= ab[d]
        sb *= bb[d]
    y = run_gemm(a, b, g, ref.shape, dt)
    report(f"matmul {ash}x{bsh}", y, ref, dt)


def test_gemm(m, n, k, ta, tb, csh, alpha=0.7, beta=1.3, dt=np.float32):
    a = rng.standard_normal((k, m) if ta else (m, k)).astype(dt)
    b = rng.standard_normal((n, k) if tb else (k, n)).astype(dt)
    c = rng.standard_normal(csh).astype(dt) if csh is not None else None
    g = Gemm(
        m=m,
        n=n,
        k=k,
        batch_rank=0,
        a_sm=1 if ta else k,
        a_sk=m if ta else 1,
        b_sk=1 if tb else n,
        b_sn=k if tb else 1,
        alpha=alpha,
        beta=beta,
    )
    if c is not None:
        cr = csh[0] if len(csh) == 2 else 1
        cc = csh[-1] if len(csh) else 1
        g.c_sn = 0 if cc == 1 else 1
        g.c_sm = 0 if cr == 1 else cc
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    ref = alpha * ((a64.T if ta else a64) @ (b64.T if tb else b64))
    if c is not None:
        ref = ref + beta * c.astype(np.float64)
    y = run_gemm(a, b, g, (m, n), dt, c)
    report(f"gemm {m}x{n}x{k} tA{ta} tB{tb} C{csh}", y, ref, dt)


# ---------------- conv ----------------
def conv_ref(x, w, b, s, d, p, group, oh, ow):
    n, c, h, wd = x.shape
    m, cg, kh, kw = w.shape
    xp = np.zeros((n, c, h + 2 * kh * d[0] + p[0] + oh * s[0], wd + 2 * kw * d[1] + p[1] + ow * s[1]))
    xp[:, :, p[0] : p[0] + h, p[1] : p[1] + wd] = x
    y = np.zeros((n, m, oh, ow))
    mg = m // group
    for gi in range(group):
        xs = xp[:, gi * cg : (gi + 1) * cg]
        ws = w[gi * mg : (gi + 1) * mg].astype(np.float64)
        for ky in range(kh):
            for kx in range(kw):
                patch = xs[:, :, ky * d[0] : ky * d[0] + oh * s[0] : s[0], kx * d[1] : kx * d[1] + ow * s[1] : s[1]]
                y[:, gi * mg : (gi + 1) * mg] += np.einsum("nchw,mc->nmhw", patch, ws[:, :, ky, kx])
    if b is not None:
        y += b.astype(np.float64)[None, :, None, None]
    return y


def test_conv(xsh, m, k, s=(1, 1), d=(1, 1), p=(0, 0), group=1, bias=True, dt=np.float32):
    n, c, h, w = xsh
    x = rng.standard_normal(xsh).astype(dt)
    wt = (rng.standard_normal((m, c // group) + k) / np.sqrt(c // group * k[0] * k[1])).astype(dt)
    b = rng.standard_normal(m).astype(dt) if bias else None
    oh = (h + 2 * p[0] - d[0] * (k[0] - 1) - 1) // s[0] + 1
    ow = (w + 2 * p[1] - d[1] * (k[1] - 1) - 1) // s[1] + 1
    pr = Conv(n, c, h, w, m, oh, ow, group, k[0], k[1], s[0], s[1], d[0], d[1], p[0], p[1])
    xd, wd, yd = dev(x), dev(wt), dev(np.zeros((n, m, oh, ow), dt))
    bd = dev(b) if bias else None
    status(
        lib.fp8ort_nn_conv2d_run(
            C.c_void_p(xd), C.c_void_p(wd), C.c_void_p(bd), C.c_void_p(yd), DT[dt], C.byref(pr), None
        ),
        "conv",
    )
    ref = conv_ref(x.astype(np.float64), wt, b, s, d, p, group, oh, ow)
    report(f"conv {xsh} m{m} k{k} s{s} d{d} p{p} g{group}", back(yd, (n, m, oh, ow), dt), ref, dt)


def timed(name, fn, reps=20):
    fn()
    lib.st_sync()
    t = time.perf_counter()
    for _ in range(reps):
        fn()
    lib.st_sync()
    print(f"TIME {name}: {(time.perf_counter() - t) / reps * 1e3:.3f} ms")


def main():
    for dt in (np.float32, np.float16):
        test_pool((2, 3, 9, 11), (3, 3), (2, 2), pads=(1, 1, 1, 1), dt=dt)
        test_pool((2, 3, 9, 11), (3, 3), (2, 2), pads=(1, 1, 1, 1), max_pool=False, dt=dt)
        test_pool((2, 3, 9, 11), (3, 3), (2, 2), pads=(1, 1, 1, 1), max_pool=False, cip=True, dt=dt)
        test_pool((1, 2, 10, 10), (3, 2), (2, 3), pads=(0, 1, 1, 0), max_pool=False, cip=True, ceil=True, dt=dt)
        test_pool((1, 2, 10, 10), (3, 3), (2, 2), ceil=True, dt=dt)
        test_pool((1, 2, 12, 12), (2, 2), (1, 1), d=(2, 3), pads=(1, 1, 1, 1), max_pool=False, dt=dt)
        test_pool((1, 2, 12, 12), (2, 2), (1, 1), d=(2, 3), pads=(1, 1, 1, 1), dt=dt)
        test_pool((2, 4, 1, 17), (1, 3), (1, 2), pads=(0, 1, 0, 1), max_pool=False, dt=dt)
        test_reduce((6, 1000), 6, 1000, 1, 0, dt)
        test_reduce((6, 100), 6, 100, 1, 1, dt)
        test_reduce((64, 20), 64, 20, 1, 2, dt)
        test_reduce((3, 40, 7), 3, 40, 7, 3, dt)
        test_reduce((2, 2048, 49), 4096, 49, 1, 1, dt)
        test_reduce((1, 5000), 1, 5000, 1, 2, dt)
        test_reduce((5000, 3), 1, 5000, 3, 0, dt)
        test_reduce_axes((2, 3, 4, 5), (0, 2), 0, dt)
        test_reduce_axes((2, 3, 4, 5, 3), (1, 3), 2, dt)
        test_reduce_axes((4, 3, 4, 5), (0, 2), 1, dt)
        test_softmax((2, 12, 8, 128), 3, dt=dt)
        test_softmax((7, 1000), 1, dt=dt)
        test_softmax((7, 5000), 1, log=True, dt=dt)
        test_softmax((3, 17, 5), 1, dt=dt)
        test_softmax((3, 17, 5), 1, log=True, dt=dt)
        test_layernorm(16, 768, dt=dt)
        test_layernorm(5, 37, bias=False, dt=dt)
        test_layernorm(3, 3000, dt=dt)
        test_matmul((2, 12, 128, 64), (2, 12, 64, 128), dt)
        test_matmul((2, 12, 128, 128), (2, 12, 128, 64), dt)
        test_matmul((3, 1, 65, 33), (4, 33, 17), dt)
        test_matmul((67, 129), (129, 70), dt)
        test_matmul((2, 50, 20), (20, 31), dt)
        test_matmul((20,), (3, 20, 9), dt)
        test_matmul((4, 5, 20), (20,), dt)
        test_matmul((20,), (20,), dt)
        test_gemm(65, 47, 33, False, False, (47,), dt=dt)
        test_gemm(65, 47, 33, True, False, (65, 1), dt=dt)
        test_gemm(65, 47, 33, False, True, (65, 47), dt=dt)
        test_gemm(65, 47, 33, True, True, (), dt=dt)
        test_gemm(64, 128, 256, False, True, None, alpha=1.0, dt=dt)
        test_conv((2, 8, 10, 9), 16, (3, 3), p=(1, 1), dt=dt)
        test_conv((2, 8, 10, 9), 70, (3, 3), s=(2, 2), p=(1, 1), dt=dt)
        test_conv((1, 3, 23, 23), 8, (7, 7), s=(2, 2), p=(3, 3), dt=dt)
        test_conv((2, 8, 12, 12), 6, (3, 3), d=(2, 2), p=(2, 1), group=2, dt=dt)
        test_conv((2, 6, 11, 11), 6, (3, 3), p=(1, 1), group=6, dt=dt)
        test_conv((2, 6, 11, 11), 12, (5, 5), s=(2, 2), p=(2, 2), group=6, bias=False, dt=dt)
        test_conv((2, 16, 7, 7), 32, (1, 1), bias=False, dt=dt)
        test_conv((2, 4, 1, 30), 5, (1, 3), s=(1, 2), p=(0, 1), dt=dt)
    print(f"RESULT pass={results['pass']} fail={results['fail']}")
    if results["fail"]:
        sys.exit(1)
    if QUICK:
        return
    # Throughput on BERT / ResNet-like shapes (float32).
    b = 32
    a = dev(rng.standard_normal((b, 12, 128, 64)).astype(np.float32))
    bt = dev(rng.standard_normal((b, 12, 64, 128)).astype(np.float32))
    y = dev(np.zeros((b, 12, 128, 128), np.float32))
    g = Gemm(m=128, n=128, k=64, batch_rank=2, a_sm=64, a_sk=1, b_sk=128, b_sn=1, alpha=1.0)
    g.batch_dims[0], g.batch_dims[1] = b, 12
    g.a_batch_strides[0], g.a_batch_strides[1] = 12 * 128 * 64, 128 * 64
    g.b_batch_strides[0], g.b_batch_strides[1] = 12 * 128 * 64, 128 * 64
    timed(
        "QK^T [32,12,128,64]x[32,12,64,128] fp32",
        lambda: lib.fp8ort_nn_gemm_run(C.c_void_p(a), C.c_void_p(bt), C.c_void_p(y), 1, C.byref(g), None),
    )
    ya = dev(np.zeros((b * 128, 3072), np.float32))
    xa = dev(rng.standard_normal((b * 128, 768)).astype(np.float32))
    wa = dev(rng.standard_normal((768, 3072)).astype(np.float32))
    g2 = Gemm(m=b * 128, n=3072, k=768, batch_rank=0, a_sm=768, a_sk=1, b_sk=3072, b_sn=1, alpha=1.0)
    timed(
        "linear 4096x3072x768 fp32",
        lambda: lib.fp8ort_nn_gemm_run(C.c_void_p(xa), C.c_void_p(wa), C.c_void_p(ya), 1, C.byref(g2), None),
    )
    xc = dev(rng.standard_normal((32, 64, 56, 56)).astype(np.float32))
    wc = dev(rng.standard_normal((64, 64, 3, 3)).astype(np.float32))
    yc = dev(np.zeros((32, 64, 56, 56), np.float32))
    pc = Conv(32, 64, 56, 56, 64, 56, 56, 1, 3, 3, 1, 1, 1, 1, 1, 1)
    timed(
        "conv 32x64x56x56 3x3 fp32",
        lambda: lib.fp8ort_nn_conv2d_run(C.c_void_p(xc), C.c_void_p(wc), None, C.c_void_p(yc), 1, C.byref(pc), None),
    )
    sm = dev(rng.standard_normal((32 * 12 * 128, 128)).astype(np.float32))
    so = dev(np.zeros((32 * 12 * 128, 128), np.float32))
    timed(
        "softmax 49152x128 fp32",
        lambda: lib.fp8ort_nn_softmax(C.c_void_p(sm), C.c_void_p(so), 1, I64(32 * 12 * 128), I64(128), I64(1), 0, None),
    )
    free_all()


main()
