#!/usr/bin/python3
"""Compares every .npy in DIR_A with the same file in DIR_B: |a-b| <= atol + rtol*|b|.

usage: compare_npy.py DIR_A DIR_B [--rtol R] [--atol A] [--max-rel M [--mean-rel E]]
Prints the worst error per file; exits 1 on a missing file, a shape mismatch or a tolerance miss.
--max-rel M replaces the element-wise test by a relative one on the whole tensor:
max|a-b| <= M * max|b|, the error relative to the reference output's magnitude (element-wise
relative errors are meaningless where a reference underflows, e.g. sigmoid outputs near 0). --mean-rel E also bounds the mean error, mean|a-b| <= E * max|b|
(reduced precision: a steep sigmoid's few outliers bound the maximum, the rest the mean).
"""
import argparse
import pathlib
import sys

import numpy as np


def main():
    p = argparse.ArgumentParser()
    p.add_argument("a")
    p.add_argument("b")
    p.add_argument("--rtol", type=float, default=1e-4)
    p.add_argument("--atol", type=float, default=1e-5)
    p.add_argument("--max-rel", type=float, default=None)
    p.add_argument("--mean-rel", type=float, default=None)
    args = p.parse_args()
    files = sorted(pathlib.Path(args.b).glob("*.npy"))
    if not files:
        print(f"no .npy files in {args.b}")
        return 1
    ok = True
    for fb in files:
        fa = pathlib.Path(args.a) / fb.name
        if not fa.exists():
            print(f"{fb.name}: missing in {args.a}")
            ok = False
            continue
        a, b = np.load(fa), np.load(fb)
        if a.shape != b.shape:
            print(f"{fb.name}: shape {a.shape} != {b.shape}")
            ok = False
            continue
        a64, b64 = np.atleast_1d(a.astype(np.float64)), np.atleast_1d(b.astype(np.float64))  # 0-d outputs too
        err = np.abs(a64 - b64)
        if args.max_rel is not None:
            err[np.isnan(a64) & np.isnan(b64)] = 0  # NaN where the reference has NaN is a match
            scale = float(np.nanmax(np.abs(b64))) if b64.size else 0.0
            worst = float(err.max()) if err.size else 0.0  # NaN if a NaN is unmatched
            rel = worst / scale if scale > 0 else worst
            mean = float(err.mean()) / scale if scale > 0 and err.size else 0.0
            bad = not rel <= args.max_rel or (args.mean_rel is not None and not mean <= args.mean_rel)
            print(f"{fb.name}: shape {a.shape} max abs err {float(err.max()) if err.size else 0:.3g} "
                  f"max|ref| {scale:.3g} max rel err {rel:.3g} mean rel err {mean:.3g}" + ("  FAIL" if bad else ""))
            ok = ok and not bad
            continue
        bad = err > args.atol + args.rtol * np.abs(b64)
        rel = float(np.max(err / (np.abs(b64) + args.atol))) if err.size else 0.0
        print(f"{fb.name}: shape {a.shape} max abs err {float(err.max()) if err.size else 0:.3g} max rel err {rel:.3g}"
              + (f"  FAIL ({int(bad.sum())} elements)" if bad.any() else ""))
        ok = ok and not bad.any()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
