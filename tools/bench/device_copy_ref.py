# The device-copy reference for the GPU bandwidth figures (docs/performance-gpu.md), run on the GPU
# machine: torch's device-to-device copy of 16M floats and of 1 GiB, timed by CUDA events.
import torch
for n in (1 << 24, 1 << 28):
    x = torch.randn(n, device="cuda"); y = torch.empty_like(x)
    for _ in range(10): y.copy_(x)
    ts = []
    for _ in range(100):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record(); y.copy_(x); b.record(); torch.cuda.synchronize(); ts.append(a.elapsed_time(b))
    ts.sort(); ms = ts[len(ts) // 2]
    print(f"torch copy {n} floats: {ms:.4f} ms, {2 * 4 * n / ms / 1e6:.1f} GB/s (median of 100)")
