//! Every `unsafe` call of the CUDA backend, and nothing else: library probes, version
//! queries, kernel launches, event timing, cuBLAS / cuBLASLt calls.
//!
//! Invariants the callers keep (each block's SAFETY comment relies on them):
//! - no function here is called before [`libraries`] said the library it uses loads
//!   (cudarc panics inside `culib()` when a library is missing);
//! - device pointers passed in are live allocations of the backend's context, at least
//!   as large as the kernel or GEMM reads or writes (the plan checks the sizes against
//!   the suite's buffer specs before it builds a launch);
//! - argument lists match the `extern "C"` signatures of the kernel sources in
//!   `kernels/`, in order and type (the plan builds them from one table per kernel).

#![allow(unsafe_code)]
// m, n, k, a, b, c: the names of the GEMM formulas.
#![allow(clippy::many_single_char_names)]

use cudarc::cublas::sys as blas_sys;
use cudarc::cublaslt::sys as lt_sys;
use cudarc::driver::{sys, CudaEvent, CudaFunction, CudaStream, LaunchConfig, PushKernelArg};

/// Which CUDA libraries `dlopen` finds, under cudarc's candidate names (the CUDA 13
/// names `libX.so.13`, the CUDA 12 names `libX.so.12`, and the unversioned `libX.so`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Libraries {
    pub driver: bool,
    pub nvrtc: bool,
    pub cublas: bool,
    pub cublaslt: bool,
}

/// Probes the four libraries without calling into any of them.
pub(crate) fn libraries() -> Libraries {
    // SAFETY: each `is_culib_present` only tries `dlopen` on candidate file names and
    // drops the handle; it calls no symbol of the library and never panics.
    unsafe {
        Libraries {
            driver: sys::is_culib_present(),
            nvrtc: cudarc::nvrtc::sys::is_culib_present(),
            cublas: blas_sys::is_culib_present(),
            cublaslt: lt_sys::is_culib_present(),
        }
    }
}

/// `cuDriverGetVersion` (1000 x major + 10 x minor; 13000 for CUDA 13.0). Needs no
/// `cuInit`.
pub(crate) fn driver_version() -> Result<i32, sys::CUresult> {
    let mut v: std::ffi::c_int = 0;
    // SAFETY: the driver library loaded (checked by the caller); the pointer is a live
    // local.
    let r = unsafe { sys::cuDriverGetVersion(&raw mut v) };
    if r == sys::CUresult::CUDA_SUCCESS {
        Ok(v)
    } else {
        Err(r)
    }
}

/// `nvrtcVersion` as (major, minor).
pub(crate) fn nvrtc_version() -> Result<(i32, i32), String> {
    let (mut major, mut minor): (std::ffi::c_int, std::ffi::c_int) = (0, 0);
    // SAFETY: NVRTC loaded (checked by the caller); both pointers are live locals.
    let r = unsafe { cudarc::nvrtc::sys::nvrtcVersion(&raw mut major, &raw mut minor) };
    if r == cudarc::nvrtc::sys::nvrtcResult::NVRTC_SUCCESS {
        Ok((major, minor))
    } else {
        Err(format!("{r:?}"))
    }
}

/// One kernel argument, passed by value.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Arg {
    /// A device pointer.
    Ptr(u64),
    U32(u32),
    I32(i32),
    U64(u64),
    F32(f32),
}

/// Launches `func` on `stream` with `args` in order.
pub(crate) fn launch(
    stream: &CudaStream,
    func: &CudaFunction,
    grid: [u32; 3],
    block: [u32; 3],
    args: &[Arg],
) -> Result<(), cudarc::driver::DriverError> {
    let mut b = stream.launch_builder(func);
    for a in args {
        match a {
            Arg::Ptr(p) | Arg::U64(p) => b.arg(p),
            Arg::U32(v) => b.arg(v),
            Arg::I32(v) => b.arg(v),
            Arg::F32(v) => b.arg(v),
        };
    }
    let cfg = LaunchConfig {
        grid_dim: (grid[0], grid[1], grid[2]),
        block_dim: (block[0], block[1], block[2]),
        shared_mem_bytes: 0,
    };
    // SAFETY: per the module invariants, `args` matches the kernel's signature and every
    // pointer is a live device allocation large enough for the launch; `b` borrows
    // `args`, which outlives the launch call (cuLaunchKernel copies the values).
    unsafe { b.launch(cfg) }.map(|_| ())
}

/// Milliseconds between two recorded events (created with timing enabled), after
/// waiting for `end`. Uses `cuEventElapsedTime_v2` where the driver has it (CUDA 12.8+)
/// and `cuEventElapsedTime` otherwise, so that older drivers keep working with
/// bindings generated for CUDA 13.
pub(crate) fn elapsed_ms(start: &CudaEvent, end: &CudaEvent) -> Result<f32, String> {
    type ElapsedFn = unsafe extern "C" fn(*mut f32, sys::CUevent, sys::CUevent) -> sys::CUresult;
    end.synchronize().map_err(|e| format!("waiting for the end event: {e:?}"))?;
    // SAFETY: the driver library loaded (the backend exists only after the probe);
    // both symbols have the signature `CUresult (float*, CUevent, CUevent)` in cuda.h.
    let f: ElapsedFn = unsafe {
        let lib = sys::culib();
        match lib.get::<ElapsedFn>(b"cuEventElapsedTime_v2\0") {
            Ok(s) => *s,
            Err(_) => *lib
                .get::<ElapsedFn>(b"cuEventElapsedTime\0")
                .map_err(|e| format!("the CUDA driver has no cuEventElapsedTime: {e}"))?,
        }
    };
    let mut ms = 0f32;
    // SAFETY: both events are live, recorded on the same context, and `ms` is a live
    // local.
    let r = unsafe { f(&raw mut ms, start.cu_event(), end.cu_event()) };
    if r == sys::CUresult::CUDA_SUCCESS {
        Ok(ms)
    } else {
        Err(format!("cuEventElapsedTime: {r:?}"))
    }
}

/// Row-major `C[m x n] = A[m x k] B[k x n]` through cuBLAS (column-major), as
/// `C^T = B^T A^T`: `gemm(N, N, n, m, k, B, n, A, k, C, n)`. fp32 (`double = false`)
/// or fp64, with the handle's default math mode (no TF32).
#[allow(clippy::too_many_arguments)]
pub(crate) fn cublas_gemm(
    handle: blas_sys::cublasHandle_t,
    double: bool,
    m: i32,
    n: i32,
    k: i32,
    a: u64,
    b: u64,
    c: u64,
) -> Result<(), String> {
    let op = blas_sys::cublasOperation_t::CUBLAS_OP_N;
    // SAFETY: the handle is live and bound to the backend's stream; a, b, c are device
    // allocations of m*k, k*n and m*n elements of the type named by `double` (checked
    // by the plan); the scalars are live locals read before the call returns
    // (host pointer mode, the default).
    let r = unsafe {
        if double {
            let (one, zero) = (1f64, 0f64);
            cudarc::cublas::result::dgemm(
                handle,
                op,
                op,
                n,
                m,
                k,
                &raw const one,
                b as *const f64,
                n,
                a as *const f64,
                k,
                &raw const zero,
                c as *mut f64,
                n,
            )
        } else {
            let (one, zero) = (1f32, 0f32);
            cudarc::cublas::result::sgemm(
                handle,
                op,
                op,
                n,
                m,
                k,
                &raw const one,
                b as *const f32,
                n,
                a as *const f32,
                k,
                &raw const zero,
                c as *mut f32,
                n,
            )
        }
    };
    r.map_err(|e| format!("cuBLAS {}gemm: {e:?}", if double { "d" } else { "s" }))
}

/// A cuBLAS handle on a stream, destroyed on drop.
#[derive(Debug)]
pub(crate) struct BlasHandle(pub blas_sys::cublasHandle_t);

impl BlasHandle {
    pub(crate) fn new(stream: &CudaStream) -> Result<BlasHandle, String> {
        let h = cudarc::cublas::result::create_handle().map_err(|e| format!("{e:?}"))?;
        // SAFETY: `h` was just created; the stream outlives the handle (both are owned
        // by the backend, the handle dropped first).
        unsafe { cudarc::cublas::result::set_stream(h, stream.cu_stream().cast()) }
            .map_err(|e| format!("{e:?}"))?;
        Ok(BlasHandle(h))
    }
}

impl Drop for BlasHandle {
    fn drop(&mut self) {
        // SAFETY: created by `new`, destroyed once.
        let _ = unsafe { cudarc::cublas::result::destroy_handle(self.0) };
    }
}

/// A cuBLASLt handle, destroyed on drop.
#[derive(Debug)]
pub(crate) struct LtHandle(pub lt_sys::cublasLtHandle_t);

impl LtHandle {
    pub(crate) fn new() -> Result<LtHandle, String> {
        cudarc::cublaslt::result::create_handle().map(LtHandle).map_err(|e| format!("{e:?}"))
    }
}

impl Drop for LtHandle {
    fn drop(&mut self) {
        // SAFETY: created by `new`, destroyed once.
        let _ = unsafe { cudarc::cublaslt::result::destroy_handle(self.0) };
    }
}

/// One matrix operand's layout for cuBLASLt (column-major rows x cols, leading dim).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct LtMatrix {
    pub dtype: lt_sys::cudaDataType,
    pub rows: u64,
    pub cols: u64,
    pub ld: i64,
}

/// A cuBLASLt matmul with its descriptors and the heuristic's algorithm, built once and
/// run many times: `D = op(A) op(B)` with `C = D` and beta = 0.
#[derive(Debug)]
pub(crate) struct LtPlan {
    desc: lt_sys::cublasLtMatmulDesc_t,
    layouts: [lt_sys::cublasLtMatrixLayout_t; 3],
    algo: lt_sys::cublasLtMatmulAlgo_t,
    workspace_bytes: usize,
    /// fp64 scale type (alpha and beta are f64).
    double: bool,
}

impl Drop for LtPlan {
    fn drop(&mut self) {
        // SAFETY: each descriptor was created by `LtPlan::new` and is destroyed once.
        unsafe {
            let _ = cudarc::cublaslt::result::destroy_matmul_desc(self.desc);
            for l in self.layouts {
                let _ = cudarc::cublaslt::result::destroy_matrix_layout(l);
            }
        }
    }
}

impl LtPlan {
    /// Descriptors for `compute` (scale type fp64 when `double`, else fp32) with
    /// `transa`/`transb`, and the fastest algorithm cuBLASLt's heuristic offers within
    /// `workspace_bytes`.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        handle: &LtHandle,
        compute: lt_sys::cublasComputeType_t,
        double: bool,
        transa: bool,
        transb: bool,
        a: LtMatrix,
        b: LtMatrix,
        d: LtMatrix,
        workspace_bytes: usize,
    ) -> Result<LtPlan, String> {
        use cudarc::cublaslt::result as r;
        let err = |what: &str, e: r::CublasError| format!("cuBLASLt {what}: {e:?}");
        let scale = if double {
            lt_sys::cudaDataType_t::CUDA_R_64F
        } else {
            lt_sys::cudaDataType_t::CUDA_R_32F
        };
        let desc =
            r::create_matmul_desc(compute, scale).map_err(|e| err("matmul descriptor", e))?;
        let mk = |m: LtMatrix| r::create_matrix_layout(m.dtype, m.rows, m.cols, m.ld);
        // Build the plan as soon as the descriptor exists so that Drop frees whatever
        // was created if a later step fails.
        let mut plan = LtPlan {
            desc,
            layouts: [std::ptr::null_mut(); 3],
            // SAFETY: the algorithm struct is plain data (an array of u64); all-zero is
            // a valid value that is overwritten by the heuristic below before use.
            algo: unsafe { std::mem::zeroed() },
            workspace_bytes,
            double,
        };
        for (i, m) in [a, b, d].into_iter().enumerate() {
            plan.layouts[i] = mk(m).map_err(|e| err("matrix layout", e))?;
        }
        let ta: i32 = i32::from(transa);
        let tb: i32 = i32::from(transb);
        let pref = r::create_matmul_pref().map_err(|e| err("preference", e))?;
        // SAFETY: desc and pref are live; each attribute buffer is a live local of the
        // size passed (int32 for TRANSA/TRANSB, size_t for the workspace bytes).
        let heuristic = unsafe {
            let set = |attr, v: &i32| {
                r::set_matmul_desc_attribute(
                    plan.desc,
                    attr,
                    std::ptr::from_ref(v).cast(),
                    std::mem::size_of::<i32>(),
                )
            };
            let res = set(lt_sys::cublasLtMatmulDescAttributes_t::CUBLASLT_MATMUL_DESC_TRANSA, &ta)
                .and_then(|()| {
                    set(lt_sys::cublasLtMatmulDescAttributes_t::CUBLASLT_MATMUL_DESC_TRANSB, &tb)
                })
                .and_then(|()| {
                    r::set_matmul_pref_attribute(
                        pref,
                        lt_sys::cublasLtMatmulPreferenceAttributes_t::CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                        std::ptr::from_ref(&workspace_bytes).cast(),
                        std::mem::size_of::<usize>(),
                    )
                })
                .and_then(|()| {
                    r::get_matmul_algo_heuristic(
                        handle.0,
                        plan.desc,
                        plan.layouts[0],
                        plan.layouts[1],
                        plan.layouts[2],
                        plan.layouts[2],
                        pref,
                    )
                });
            let _ = r::destroy_matmul_pref(pref);
            res
        }
        .map_err(|e| err("no algorithm for this type combination and shape", e))?;
        plan.algo = heuristic.algo;
        Ok(plan)
    }

    /// Enqueues `D = op(A) op(B)` on `stream`.
    pub(crate) fn run(
        &self,
        handle: &LtHandle,
        stream: &CudaStream,
        a: u64,
        b: u64,
        d: u64,
        workspace: u64,
    ) -> Result<(), String> {
        let (alpha, beta) = (1f32, 0f32);
        let (alpha64, beta64) = (1f64, 0f64);
        let (pa, pb): (*const std::ffi::c_void, *const std::ffi::c_void) = if self.double {
            (std::ptr::from_ref(&alpha64).cast(), std::ptr::from_ref(&beta64).cast())
        } else {
            (std::ptr::from_ref(&alpha).cast(), std::ptr::from_ref(&beta).cast())
        };
        // SAFETY: handle, descriptors and algorithm are live (owned by self); a, b, d
        // are device allocations matching the layouts (checked by the caller when the
        // plan was built); the workspace holds `workspace_bytes`; alpha/beta are live
        // locals (host pointer mode).
        unsafe {
            cudarc::cublaslt::result::matmul(
                handle.0,
                self.desc,
                pa,
                pb,
                a as *const _,
                self.layouts[0],
                b as *const _,
                self.layouts[1],
                d as *const _,
                self.layouts[2],
                d as *mut _,
                self.layouts[2],
                &raw const self.algo,
                workspace as *mut _,
                self.workspace_bytes,
                stream.cu_stream().cast(),
            )
        }
        .map_err(|e| format!("cuBLASLt matmul: {e:?}"))
    }
}
