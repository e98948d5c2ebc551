"""Compiles rooftop's CUDA kernel sources with NVRTC, as the CUDA backend does
(common.cuh prepended, --gpu-architecture=compute_90, --std=c++17), on a machine without a
GPU: a syntax or type error shows here instead of on the GPU machine.

    pip download --no-deps -d /tmp/nvrtc nvidia-cuda-nvrtc-cu12 && unzip /tmp/nvrtc/*.whl -d /tmp/nvrtc/x
    python3 scripts/gpu/nvrtc_check.py /tmp/nvrtc/x/nvidia/cuda_nvrtc/lib/libnvrtc.so.12 [--ptx DIR]

Prints each source's result and NVRTC's log; exits 1 when one fails. With --ptx DIR it
writes each PTX there (read `ld.global.v4` for 16-byte loads).
"""
import ctypes
import pathlib
import sys

KERNELS = pathlib.Path(__file__).resolve().parents[2] / "crates/rooftop-bench/src/cuda/kernels"


def main(lib_path, ptx_dir=None):
    lib = ctypes.CDLL(lib_path)
    common = (KERNELS / "common.cuh").read_text()
    failed = False
    for src in sorted(KERNELS.glob("*.cu")):
        code = (common + "\n" + src.read_text()).encode()
        prog = ctypes.c_void_p()
        rc = lib.nvrtcCreateProgram(ctypes.byref(prog), code, src.name.encode(), 0, None, None)
        assert rc == 0, rc
        opts = [b"--gpu-architecture=compute_90", b"--std=c++17"]
        arr = (ctypes.c_char_p * len(opts))(*opts)
        rc = lib.nvrtcCompileProgram(prog, len(opts), arr)
        size = ctypes.c_size_t()
        lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
        log = ctypes.create_string_buffer(size.value)
        lib.nvrtcGetProgramLog(prog, log)
        text = log.value.decode(errors="replace").strip()
        print(f"{src.name}: {'ok' if rc == 0 else 'FAILED'}")
        if text:
            print(text)
        if rc != 0:
            failed = True
        elif ptx_dir:
            lib.nvrtcGetPTXSize(prog, ctypes.byref(size))
            ptx = ctypes.create_string_buffer(size.value)
            lib.nvrtcGetPTX(prog, ptx)
            pathlib.Path(ptx_dir, src.stem + ".ptx").write_bytes(ptx.value)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    args = sys.argv[1:]
    ptx = None
    if "--ptx" in args:
        i = args.index("--ptx")
        ptx = args[i + 1]
        del args[i:i + 2]
    main(args[0], ptx)
