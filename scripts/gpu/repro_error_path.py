"""Makes each op of a built rmsnorm variant throw (TORCH_CHECK inside the
extension) and reports whether Python gets a RuntimeError, next to an error
thrown by torch itself. For the H200 segfault in test_bad_arguments_raise.

    python3 scripts/gpu/repro_error_path.py BUILD_DIR
"""

import faulthandler
import sys
from pathlib import Path

import torch

faulthandler.enable()


def main() -> int:
    import kernels

    mod = kernels.get_local_kernel(Path(sys.argv[1]))
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    x = torch.randn(3, 64, device=dev)
    checks = [
        ("torch's own check (mm shapes)", lambda: torch.mm(x, x)),
        ("rms_norm, weight of 63", lambda: mod.rms_norm(x, torch.randn(63, device=dev))),
        ("rms_norm, fp16 weight", lambda: mod.rms_norm(x, torch.randn(64, device=dev, dtype=torch.float16))),
        ("rms_norm, float64", lambda: mod.rms_norm(x.double(), torch.randn(64, device=dev, dtype=torch.float64))),
    ]
    failed = 0
    for label, fn in checks:
        print(f"{label}:", end=" ", flush=True)
        try:
            fn()
            print("NO ERROR RAISED")
            failed += 1
        except RuntimeError as exc:
            print("raised:", str(exc).splitlines()[0][:160], flush=True)
    print("all raised cleanly" if not failed else f"{failed} did not raise")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
