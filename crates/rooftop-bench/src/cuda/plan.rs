//! How each suite kernel runs on the CUDA backend: the CUDA C sources (compiled by NVRTC
//! at run time), the implementations per kernel, and for one call the launches it makes
//! (entry point, grid, block, arguments) or the cuBLAS / cuBLASLt GEMM it calls.
//!
//! Planning is pure (no driver call), so it is tested on machines without a GPU. It
//! checks every buffer of the call against the suite's `buffers()` (count, element type,
//! length) before it names any of them in a launch: the launches in `ffi` rely on that.
//!
//! Launch parameters (`Launch`):
//! - 1-D kernels (`read` .. `gelu`, `fma`) and row kernels (`rmsnorm`, `layernorm`,
//!   `softmax`, `softmax-online`, `rowsum`): `block = [x, 1, 1]`, x a multiple of 32 up
//!   to the device's maximum; `grid = [g, 1, 1]` optional (1-D kernels default to the
//!   blocks that fit on the device at once, grid-stride loops cover the rest; row kernels
//!   to one block per row);
//! - `gemm` `rooftop` (tiled): `tile` = 32, 64 or 128 selects the BM = BN tile of C per
//!   block (BK 32 / 16 / 8, 2x2 / 4x4 / 8x8 per thread), always 256 threads;
//!   `rooftop-naive`: `block = [x, y, 1]`, one thread per element of C;
//! - `qmatvec`: `block = [x, 1, 1]`, one warp per output row; `qgemm`: 64 x 64 tiles of
//!   256 threads; `chase`: one thread.

// m, n, k, a, b, c: the names of the GEMM formulas.
#![allow(clippy::many_single_char_names)]

use super::info::DeviceAttributes;
use crate::backend::{DType, Implementation, Launch};
use crate::case::Case;
use crate::error::BackendError;
use crate::suite::{self, quant::QuantLayout};
use rooftop_core::units::Precision;

/// Definitions every source starts with.
pub(crate) const COMMON: &str = include_str!("kernels/common.cuh");

/// A CUDA C source of the backend.
#[derive(Debug)]
pub struct Source {
    pub name: &'static str,
    pub code: &'static str,
}

/// Every source, compiled on first use.
pub static SOURCES: [Source; 6] = [
    Source { name: "stream", code: include_str!("kernels/stream.cu") },
    Source { name: "rows", code: include_str!("kernels/rows.cu") },
    Source { name: "gemm", code: include_str!("kernels/gemm.cu") },
    Source { name: "quant", code: include_str!("kernels/quant.cu") },
    Source { name: "probe", code: include_str!("kernels/probe.cu") },
    Source { name: "tensor", code: include_str!("kernels/tensor.cu") },
];

/// The source called `name`.
pub fn source(name: &str) -> Option<&'static Source> {
    SOURCES.iter().find(|s| s.name == name)
}

/// Whether `code` defines the `extern "C" __global__` entry `entry`, literally or through
/// one of the sources' export macros (`rt_copy_##S` instantiated with `f32`/`f64`).
pub fn declares(code: &str, entry: &str) -> bool {
    let literal = format!("{entry}(");
    if code.lines().any(|l| l.contains("__global__") && l.contains(&literal)) {
        return true;
    }
    for suffix in ["f32", "f64"] {
        let Some(stem) = entry.strip_suffix(&format!("_{suffix}")) else { continue };
        let templated = format!("{stem}_##S(");
        let defines = code.lines().any(|l| l.contains("__global__") && l.contains(&templated));
        let ty = if suffix == "f32" { "float" } else { "double" };
        let instantiated = code.lines().any(|l| {
            let l = l.trim();
            l.ends_with(&format!("({ty}, {suffix})")) && l.contains("_EXPORTS(")
        });
        if defines && instantiated {
            return true;
        }
    }
    false
}

/// Our implementation id.
pub const OURS: &str = "rooftop";
/// The naive GEMM (one thread per element).
pub const NAIVE: &str = "rooftop-naive";
/// cuBLAS (classic API).
pub const CUBLAS: &str = "cublas";
/// cuBLASLt.
pub const CUBLASLT: &str = "cublaslt";

/// Suite kernels the backend has CUDA sources for.
pub const KERNELS: [&str; 18] = [
    "read",
    "write",
    "copy",
    "scale",
    "add",
    "triad",
    "silu",
    "gelu",
    "rmsnorm",
    "layernorm",
    "softmax",
    "softmax-online",
    "rowsum",
    "gemm",
    "qmatvec",
    "qgemm",
    "fma",
    "chase",
];

/// The implementations of `kernel`, ours first; `blas` says whether cuBLAS and
/// cuBLASLt loaded.
pub fn implementations(kernel: &str, blas: bool) -> Vec<Implementation> {
    if !KERNELS.contains(&kernel) {
        return Vec::new();
    }
    let ours = |id: &str, label: &str| Implementation {
        id: id.to_string(),
        builtin: false,
        label: label.to_string(),
    };
    if kernel != "gemm" {
        return vec![ours(OURS, "rooftop CUDA C (NVRTC)")];
    }
    let mut v = vec![
        ours(OURS, "rooftop CUDA C, shared-memory tiles (NVRTC)"),
        ours(NAIVE, "rooftop CUDA C, one thread per element (NVRTC)"),
    ];
    if blas {
        v.push(Implementation {
            id: CUBLAS.to_string(),
            builtin: true,
            label: "cuBLAS sgemm/dgemm (default math mode, no TF32)".to_string(),
        });
        v.push(Implementation {
            id: CUBLASLT.to_string(),
            builtin: true,
            label: "cuBLASLt matmul (fp32/fp64 compute; tf32/bf16/fp16/fp8 for ceilings)"
                .to_string(),
        });
    }
    v
}

/// A kernel argument before buffers have device addresses.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ArgSpec {
    /// The call's buffer at this index.
    Buf(usize),
    /// The plan's scratch buffer at this index.
    Scratch(usize),
    /// A null pointer (an absent optional buffer).
    Null,
    U32(u32),
    U64(u64),
}

/// The cuBLASLt type combination of a GEMM.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LtKind {
    F32,
    F64,
    /// fp32 operands, TF32 tensor-core compute.
    Tf32,
    Bf16,
    F16,
    /// e4m3 operands.
    Fp8,
}

impl LtKind {
    /// Operands converted from the fp32 buffers (and laid out TN).
    pub fn converted(self) -> bool {
        matches!(self, LtKind::Bf16 | LtKind::F16 | LtKind::Fp8)
    }
}

/// One step of a plan.
#[derive(Debug, Clone, PartialEq)]
pub enum StepSpec {
    /// A launch of `entry` from `source`.
    Kernel {
        source: &'static str,
        entry: String,
        grid: [u32; 3],
        block: [u32; 3],
        args: Vec<ArgSpec>,
    },
    /// cuBLAS row-major GEMM of the call's buffers 0, 1, 2.
    Blas { double: bool, m: i32, n: i32, k: i32 },
    /// cuBLASLt `D = op(A) op(B)` in column-major terms: `a` is n x k (the suite's B,
    /// transposed when `kind.converted()`), `b` is k x m (the suite's A), `d` is n x m
    /// (the suite's row-major C).
    Lt { kind: LtKind, m: u64, n: u64, k: u64, a: ArgSpec, b: ArgSpec, d: ArgSpec },
}

/// Everything one call needs: untimed preparation, the timed steps (one run), scratch
/// buffers (bytes, zero-filled at allocation).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PlanSpec {
    pub prep: Vec<StepSpec>,
    pub steps: Vec<StepSpec>,
    pub scratch_bytes: Vec<u64>,
}

fn bad_launch(msg: impl Into<String>) -> BackendError {
    BackendError::BadLaunch(msg.into())
}

/// The default launch of a case.
pub fn default_launch(case: &Case) -> Launch {
    let block = |x| Launch { block: Some([x, 1, 1]), ..Launch::default() };
    match case.kernel {
        "gemm" => Launch { block: Some([256, 1, 1]), tile: Some(64), ..Launch::default() },
        "fma" => block(64),
        "qmatvec" => block(128),
        "chase" => Launch { block: Some([1, 1, 1]), grid: Some([1, 1, 1]), ..Launch::default() },
        _ => block(256),
    }
}

/// Launches `--autotune` sweeps for `kernel` with `implementation`.
pub fn launch_space(kernel: &str, implementation: &str, max_threads: u32) -> Vec<Launch> {
    let blocks: Vec<Launch> = [32u32, 64, 128, 256, 512, 1024]
        .iter()
        .filter(|&&b| b <= max_threads)
        .map(|&b| Launch { block: Some([b, 1, 1]), ..Launch::default() })
        .collect();
    match (kernel, implementation) {
        (_, CUBLAS | CUBLASLT) => vec![Launch::default()],
        ("gemm", OURS) => [32, 64, 128]
            .iter()
            .map(|&t| Launch { block: Some([256, 1, 1]), tile: Some(t), ..Launch::default() })
            .collect(),
        ("gemm", _) => [[8, 8, 1], [16, 16, 1], [32, 8, 1], [32, 32, 1], [256, 1, 1]]
            .iter()
            .filter(|b| b[0] * b[1] <= max_threads)
            .map(|&b| Launch { block: Some(b), ..Launch::default() })
            .collect(),
        ("qgemm", _) => {
            vec![Launch { block: Some([256, 1, 1]), tile: Some(64), ..Launch::default() }]
        }
        ("chase", _) => vec![default_launch_for("chase")],
        _ => blocks,
    }
}

fn default_launch_for(kernel: &'static str) -> Launch {
    default_launch(&Case {
        kernel,
        sizes: Vec::new(),
        dtype: Precision::Fp32,
        weights: None,
        variant: None,
    })
}

/// Checks the call's buffers against the suite's, so that every launch reads and writes
/// inside them.
fn check_buffers(case: &Case, bufs: &[(DType, usize)]) -> Result<(), BackendError> {
    let kernel = suite::find(case.kernel).map_err(|e| BackendError::Other(e.to_string()))?;
    let specs = kernel.buffers(case);
    if specs.is_empty() {
        return Err(BackendError::Other(format!(
            "{}: the case {} has no buffers (an unsupported format?)",
            case.kernel,
            case.label()
        )));
    }
    if specs.len() != bufs.len() {
        return Err(BackendError::Other(format!(
            "{}: expected {} buffers, got {}",
            case.kernel,
            specs.len(),
            bufs.len()
        )));
    }
    for (i, (s, &(dt, len))) in specs.iter().zip(bufs).enumerate() {
        if s.dtype != dt || len < s.len {
            return Err(BackendError::BufferMismatch {
                buffer: i as u32,
                expected: format!("{} x {} ({})", s.len, s.dtype.as_str(), s.name),
                got: format!("{len} x {}", dt.as_str()),
            });
        }
    }
    Ok(())
}

/// `x` of a 1-D block, checked: a multiple of 32 (warp reductions), at most the device's
/// limit.
fn block_1d(launch: &Launch, default: u32, max: u32) -> Result<u32, BackendError> {
    let [x, y, z] = launch.block.unwrap_or([default, 1, 1]);
    if y != 1 || z != 1 {
        return Err(bad_launch(format!(
            "this kernel takes a 1-D block ([x, 1, 1]), got {x}x{y}x{z}"
        )));
    }
    if x == 0 || x % 32 != 0 || x > max {
        return Err(bad_launch(format!(
            "block size must be a multiple of 32 between 32 and {max}, got {x}"
        )));
    }
    Ok(x)
}

fn to_u32(what: &str, v: u64) -> Result<u32, BackendError> {
    u32::try_from(v).map_err(|_| bad_launch(format!("{what} = {v} exceeds 2^32 - 1")))
}

fn blocks_for(items: u64, per_block: u64) -> u64 {
    items.div_ceil(per_block.max(1)).max(1)
}

/// The plan of one call (module doc). `bufs` are the call's buffers (type, elements).
pub fn plan(
    case: &Case,
    implementation: &str,
    launch: &Launch,
    bufs: &[(DType, usize)],
    dev: &DeviceAttributes,
) -> Result<PlanSpec, BackendError> {
    use ArgSpec::{Buf, Scratch, U32, U64};
    check_buffers(case, bufs)?;
    let no_impl = || BackendError::NoImplementation {
        backend: "cuda".to_string(),
        kernel: case.kernel.to_string(),
        implementation: implementation.to_string(),
    };
    let gemm_impl =
        case.kernel == "gemm" && [OURS, NAIVE, CUBLAS, CUBLASLT].contains(&implementation);
    if !(implementation == OURS || gemm_impl) || !KERNELS.contains(&case.kernel) {
        return Err(no_impl());
    }
    let max = dev.max_threads_per_block.max(32);
    let sfx = suffix(case.dtype);
    let resident_blocks = |block: u32| resident_blocks(dev, block);
    let grid_1d = |launch: &Launch, block: u32, items: u64| -> Result<u32, BackendError> {
        match launch.grid {
            Some([g, 1, 1]) if g > 0 => Ok(g),
            Some(g) => Err(bad_launch(format!(
                "this kernel takes a 1-D grid ([g, 1, 1], g >= 1), got {}x{}x{}",
                g[0], g[1], g[2]
            ))),
            None => to_u32("grid", blocks_for(items, u64::from(block)).min(resident_blocks(block))),
        }
    };
    let mut out = PlanSpec::default();
    match case.kernel {
        "read" | "write" | "copy" | "scale" | "add" | "triad" | "silu" | "gelu" => {
            let n = case.size("n");
            let block = block_1d(launch, 256, max)?;
            let grid = grid_1d(launch, block, n)?;
            let entry = format!("rt_{}_{sfx}", case.kernel);
            let args = match case.kernel {
                "read" => {
                    let size = if sfx == "f64" { 8 } else { 4 };
                    out.scratch_bytes = vec![u64::from(grid) * size, 4];
                    vec![Buf(0), Buf(1), Scratch(0), Scratch(1), U64(n)]
                }
                "write" => vec![Buf(0), U64(n)],
                "add" | "triad" => vec![Buf(0), Buf(1), Buf(2), U64(n)],
                _ => vec![Buf(0), Buf(1), U64(n)],
            };
            out.steps.push(kernel("stream", entry, [grid, 1, 1], [block, 1, 1], args));
        }
        "rmsnorm" | "layernorm" | "softmax" | "softmax-online" | "rowsum" => {
            let (rows, cols) = (case.size("rows"), case.size("cols"));
            let block = block_1d(launch, 256, max)?;
            let grid = match launch.grid {
                Some([g, 1, 1]) if g > 0 => g,
                Some(g) => {
                    return Err(bad_launch(format!(
                        "row kernels take a 1-D grid, got {}x{}x{}",
                        g[0], g[1], g[2]
                    )))
                }
                None => rows.min(u64::from(i32::MAX as u32)) as u32,
            };
            let name = case.kernel.replace('-', "_");
            let args = match case.kernel {
                "rmsnorm" => vec![Buf(0), Buf(1), Buf(2), U64(rows), U64(cols)],
                "layernorm" => vec![Buf(0), Buf(1), Buf(2), Buf(3), U64(rows), U64(cols)],
                _ => vec![Buf(0), Buf(1), U64(rows), U64(cols)],
            };
            out.steps.push(kernel(
                "rows",
                format!("rt_{name}_{sfx}"),
                [grid, 1, 1],
                [block, 1, 1],
                args,
            ));
        }
        "gemm" => gemm_plan(case, implementation, launch, dev, &mut out)?,
        "qmatvec" | "qgemm" => quant_plan(case, launch, bufs, max, &mut out)?,
        "fma" => {
            let nacc = bufs[0].1 as u64;
            let scalar = case.variant == Some("scalar");
            let block = block_1d(launch, 64, max)?;
            // The vector kernel runs FMA_CHAINS (4) accumulators per thread.
            if !scalar && !nacc.is_multiple_of(4) {
                return Err(bad_launch(format!(
                    "the fma kernel runs 4 accumulators per thread: {nacc} is not a multiple of 4"
                )));
            }
            let threads = if scalar { nacc * 32 } else { nacc / 4 };
            let grid = match launch.grid {
                Some([g, 1, 1]) if g > 0 => g,
                _ => to_u32("grid", blocks_for(threads, u64::from(block)))?,
            };
            let args = vec![
                Buf(0),
                Buf(1),
                Buf(2),
                Buf(3),
                U32(to_u32("accumulators", nacc)?),
                U32(to_u32("iters", case.size("iters"))?),
                U32(u32::from(scalar)),
            ];
            out.steps.push(kernel(
                "probe",
                format!("rt_fma_{sfx}"),
                [grid, 1, 1],
                [block, 1, 1],
                args,
            ));
        }
        "chase" => {
            out.steps.push(kernel(
                "probe",
                "rt_chase".to_string(),
                [1, 1, 1],
                [1, 1, 1],
                vec![Buf(0), Buf(1), U64(case.size("steps"))],
            ));
        }
        _ => return Err(no_impl()),
    }
    Ok(out)
}

/// The kernels' type suffix for `dtype` (`f64`, else `f32`).
fn suffix(dtype: Precision) -> &'static str {
    match dtype {
        Precision::Fp64 => "f64",
        _ => "f32",
    }
}

/// Blocks of `block` threads resident on the whole device at once.
fn resident_blocks(dev: &DeviceAttributes, block: u32) -> u64 {
    u64::from(dev.sm_count.max(1)) * u64::from((dev.max_threads_per_sm / block).max(1))
}

/// One kernel launch of the plan.
fn kernel(
    source: &'static str,
    entry: String,
    grid: [u32; 3],
    block: [u32; 3],
    args: Vec<ArgSpec>,
) -> StepSpec {
    StepSpec::Kernel { source, entry, grid, block, args }
}

/// The GEMM's steps: rooftop's tiled kernel, the naive one, or a cuBLAS / cuBLASLt call.
fn gemm_plan(
    case: &Case,
    implementation: &str,
    launch: &Launch,
    dev: &DeviceAttributes,
    out: &mut PlanSpec,
) -> Result<(), BackendError> {
    use ArgSpec::{Buf, Scratch, U32, U64};
    let max = dev.max_threads_per_block.max(32);
    let sfx = suffix(case.dtype);
    let (m, n, k) = (case.size("m"), case.size("n"), case.size("k"));
    match implementation {
        OURS => {
            let tile = launch.tile.unwrap_or(64);
            if !matches!(tile, 32 | 64 | 128) {
                return Err(bad_launch(format!(
                    "the tiled GEMM takes tile 32, 64 or 128, got {tile}"
                )));
            }
            if let Some([bx, by, bz]) = launch.block.filter(|b| *b != [256, 1, 1]) {
                return Err(bad_launch(format!(
                    "the tiled GEMM always runs 256 threads per block ([256, 1, 1]), got {bx}x{by}x{bz}")));
            }
            let t = u64::from(tile);
            let gy = blocks_for(m, t);
            if gy > 65_535 {
                return Err(bad_launch(format!("m = {m} needs {gy} > 65535 row blocks")));
            }
            let grid = [to_u32("grid x", blocks_for(n, t))?, gy as u32, 1];
            let args = vec![
                Buf(0),
                Buf(1),
                Buf(2),
                U32(to_u32("m", m)?),
                U32(to_u32("n", n)?),
                U32(to_u32("k", k)?),
            ];
            out.steps.push(kernel(
                "gemm",
                format!("rt_gemm_t{tile}_{sfx}"),
                grid,
                [256, 1, 1],
                args,
            ));
        }
        NAIVE => {
            let [bx, by, bz] = launch.block.unwrap_or([16, 16, 1]);
            if bz != 1 || bx == 0 || by == 0 || bx * by > max {
                return Err(bad_launch(format!(
                    "the naive GEMM takes a block [x, y, 1] of at most {max} threads, got {bx}x{by}x{bz}"
                )));
            }
            let grid = [
                to_u32("grid x", blocks_for(n, u64::from(bx)))?,
                blocks_for(m, u64::from(by)).min(65_535) as u32,
                1,
            ];
            let args = vec![
                Buf(0),
                Buf(1),
                Buf(2),
                U32(to_u32("m", m)?),
                U32(to_u32("n", n)?),
                U32(to_u32("k", k)?),
            ];
            out.steps.push(kernel("gemm", format!("rt_gemm_naive_{sfx}"), grid, [bx, by, 1], args));
        }
        CUBLAS => {
            let i = |what, v: u64| {
                i32::try_from(v)
                    .map_err(|_| bad_launch(format!("cuBLAS takes {what} < 2^31, got {v}")))
            };
            if !matches!(case.dtype, Precision::Fp32 | Precision::Fp64) {
                return Err(BackendError::Other(format!(
                    "cuBLAS (classic) runs fp32 and fp64 GEMMs here, not {}; use cublaslt",
                    case.dtype
                )));
            }
            out.steps.push(StepSpec::Blas {
                double: case.dtype == Precision::Fp64,
                m: i("m", m)?,
                n: i("n", n)?,
                k: i("k", k)?,
            });
        }
        _ => {
            let kind = lt_kind(case.dtype, dev.compute_capability)?;
            if kind.converted() {
                let (entry, size) = match kind {
                    LtKind::Bf16 => ("bf16", 2),
                    LtKind::F16 => ("f16", 2),
                    _ => ("e4m3", 1),
                };
                if m % 16 != 0 || n % 16 != 0 || k % 16 != 0 {
                    return Err(bad_launch(format!(
                        "the {entry} tensor-core GEMM needs m, n, k multiples of 16, got {m}x{n}x{k}"
                    )));
                }
                out.scratch_bytes = vec![m * k * size, k * n * size];
                let conv = |items: u64| -> Result<[u32; 3], BackendError> {
                    Ok([
                        to_u32("grid", blocks_for(items, 256).min(resident_blocks(dev, 256)))?,
                        1,
                        1,
                    ])
                };
                out.prep.push(kernel(
                    "tensor",
                    format!("rt_to_{entry}"),
                    conv(m * k)?,
                    [256, 1, 1],
                    vec![Buf(0), Scratch(0), U64(m * k)],
                ));
                out.prep.push(kernel(
                    "tensor",
                    format!("rt_to_{entry}_t"),
                    conv(k * n)?,
                    [256, 1, 1],
                    vec![Buf(1), Scratch(1), U32(to_u32("k", k)?), U32(to_u32("n", n)?)],
                ));
                out.steps.push(StepSpec::Lt {
                    kind,
                    m,
                    n,
                    k,
                    a: Scratch(1),
                    b: Scratch(0),
                    d: Buf(2),
                });
            } else {
                out.steps.push(StepSpec::Lt { kind, m, n, k, a: Buf(1), b: Buf(0), d: Buf(2) });
            }
        }
    }
    Ok(())
}

/// The quantized matrix-vector product's or GEMM's kernel with the weights' layout.
fn quant_plan(
    case: &Case,
    launch: &Launch,
    bufs: &[(DType, usize)],
    max: u32,
    out: &mut PlanSpec,
) -> Result<(), BackendError> {
    use ArgSpec::{Buf, Null, U32};
    let l = case.weights.and_then(QuantLayout::of).ok_or_else(|| {
        BackendError::Other(format!("{}: no weight format in the case", case.kernel))
    })?;
    let layout = [
        U32(l.bits),
        U32(l.group as u32),
        U32(u32::from(l.zero_point)),
        U32(u32::from(l.nibbles == suite::quant::NibbleOrder::Ggml)),
        U32(u32::from(l.signed)),
    ];
    let zeros = if l.zero_point { Buf(3) } else { Null };
    let y = Buf(bufs.len() - 1);
    let (n, k) = (case.size("n"), case.size("k"));
    if case.kernel == "qmatvec" {
        let block = block_1d(launch, 128, max)?;
        let warps = u64::from(block / 32);
        let grid = match launch.grid {
            Some([g, 1, 1]) if g > 0 => g,
            _ => to_u32("grid", blocks_for(n, warps))?,
        };
        let mut args =
            vec![Buf(0), Buf(1), Buf(2), zeros, y, U32(to_u32("n", n)?), U32(to_u32("k", k)?)];
        args.extend(layout);
        out.steps.push(kernel(
            "quant",
            "rt_qmatvec".to_string(),
            [grid, 1, 1],
            [block, 1, 1],
            args,
        ));
    } else {
        let m = case.size("m");
        if let Some([bx, by, bz]) = launch.block.filter(|b| *b != [256, 1, 1]) {
            return Err(bad_launch(format!(
                "qgemm always runs 256 threads per block, got {bx}x{by}x{bz}"
            )));
        }
        let gy = blocks_for(m, 64);
        if gy > 65_535 {
            return Err(bad_launch(format!("m = {m} needs {gy} > 65535 row blocks")));
        }
        let mut args = vec![
            Buf(0),
            Buf(1),
            Buf(2),
            zeros,
            y,
            U32(to_u32("m", m)?),
            U32(to_u32("n", n)?),
            U32(to_u32("k", k)?),
        ];
        args.extend(layout);
        out.steps.push(kernel(
            "quant",
            "rt_qgemm".to_string(),
            [to_u32("grid", blocks_for(n, 64))?, gy as u32, 1],
            [256, 1, 1],
            args,
        ));
    }
    Ok(())
}

/// The cuBLASLt type combination for a GEMM of `dtype` on compute capability `cc`.
pub fn lt_kind(dtype: Precision, cc: (u32, u32)) -> Result<LtKind, BackendError> {
    let need = |min: (u32, u32), what: &str| {
        if cc < min {
            Err(BackendError::Other(format!(
                "{what} GEMMs need compute capability {}.{} or newer; this device is {}.{}",
                min.0, min.1, cc.0, cc.1
            )))
        } else {
            Ok(())
        }
    };
    Ok(match dtype {
        Precision::Fp32 => LtKind::F32,
        Precision::Fp64 => LtKind::F64,
        Precision::Tf32 => {
            need((8, 0), "TF32")?;
            LtKind::Tf32
        }
        Precision::Bf16 => {
            need((8, 0), "BF16")?;
            LtKind::Bf16
        }
        Precision::Fp16 => {
            need((7, 0), "FP16 tensor-core")?;
            LtKind::F16
        }
        Precision::Fp8 => {
            need((8, 9), "FP8 (e4m3)")?;
            LtKind::Fp8
        }
        p => return Err(BackendError::Other(format!("cuBLASLt GEMMs are not wired for {p} here"))),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cuda::info::h100_sxm_attributes;
    use rooftop_core::ops::quant::WeightFormat;

    fn bufs_of(case: &Case) -> Vec<(DType, usize)> {
        suite::find(case.kernel).unwrap().buffers(case).iter().map(|s| (s.dtype, s.len)).collect()
    }

    fn case1d(kernel: &'static str, n: u64) -> Case {
        Case { kernel, sizes: vec![("n", n)], dtype: Precision::Fp32, weights: None, variant: None }
    }

    #[test]
    fn every_planned_entry_is_defined_in_its_source() {
        let dev = h100_sxm_attributes();
        let mut cases = Vec::new();
        for k in suite::all() {
            for dtype in [None, Some(Precision::Fp64)] {
                let sel = crate::case::Selection { dtype, ..Default::default() };
                if let Ok(cs) = k.cases(&sel) {
                    cases.extend(cs);
                }
            }
        }
        cases.push(crate::suite::fma::ceiling_case(Precision::Fp32, true));
        let mut seen = 0;
        for case in &cases {
            for imp in implementations(case.kernel, true) {
                for launch in launch_space(case.kernel, &imp.id, 1024) {
                    let Ok(p) = plan(case, &imp.id, &launch, &bufs_of(case), &dev) else {
                        continue;
                    };
                    for s in p.prep.iter().chain(&p.steps) {
                        if let StepSpec::Kernel { source: src, entry, .. } = s {
                            let code = source(src).unwrap().code;
                            assert!(declares(code, entry), "{src}.cu lacks {entry}");
                            seen += 1;
                        }
                    }
                }
            }
        }
        // Every suite kernel with a CUDA implementation was planned at least once.
        assert!(seen > 100, "{seen}");
        // hgemm (fp16, fp32 accumulation) has no CUDA implementation yet: wgpu only.
        for k in suite::all().into_iter().filter(|k| k.name() != "hgemm") {
            assert!(
                !implementations(k.name(), false).is_empty(),
                "{} has no CUDA implementation",
                k.name()
            );
        }
        assert!(declares(source("probe").unwrap().code, "rt_flush"));
        // The tensor conversions of every low-precision kind.
        for dtype in [Precision::Bf16, Precision::Fp16, Precision::Fp8] {
            let c = Case {
                kernel: "gemm",
                sizes: vec![("m", 64), ("n", 32), ("k", 16)],
                dtype,
                weights: None,
                variant: None,
            };
            let p = plan(&c, CUBLASLT, &Launch::default(), &bufs_of(&c), &dev).unwrap();
            for s in &p.prep {
                let StepSpec::Kernel { source: src, entry, .. } = s else { panic!() };
                assert!(declares(source(src).unwrap().code, entry), "{entry}");
            }
        }
        assert!(!declares(source("stream").unwrap().code, "rt_nothing_f32"));
    }

    #[test]
    fn sources_balance_braces_and_parentheses() {
        for s in &SOURCES {
            let code = format!("{COMMON}\n{}", s.code);
            for (open, close) in [('{', '}'), ('(', ')'), ('[', ']')] {
                let o = code.matches(open).count();
                let c = code.matches(close).count();
                assert_eq!(o, c, "{}.cu: {o} '{open}' vs {c} '{close}'", s.name);
            }
            assert!(!code.contains('\0'));
        }
    }

    #[test]
    fn triad_and_read_plans_by_hand() {
        let dev = h100_sxm_attributes();
        let c = case1d("triad", 1 << 25);
        let p = plan(&c, OURS, &default_launch(&c), &bufs_of(&c), &dev).unwrap();
        // 2^25 / 256 = 131072 blocks, capped at 132 SMs x 2048/256 = 1056 resident.
        assert_eq!(
            p.steps,
            vec![StepSpec::Kernel {
                source: "stream",
                entry: "rt_triad_f32".into(),
                grid: [1056, 1, 1],
                block: [256, 1, 1],
                args: vec![
                    ArgSpec::Buf(0),
                    ArgSpec::Buf(1),
                    ArgSpec::Buf(2),
                    ArgSpec::U64(1 << 25)
                ],
            }]
        );
        // A small read: 1000 / 128 -> 8 blocks; partials 8 x 4 bytes + a 4-byte counter.
        let c = case1d("read", 1000);
        let l = Launch { block: Some([128, 1, 1]), ..Launch::default() };
        let p = plan(&c, OURS, &l, &bufs_of(&c), &dev).unwrap();
        assert_eq!(p.scratch_bytes, vec![32, 4]);
        let StepSpec::Kernel { grid, .. } = &p.steps[0] else { panic!() };
        assert_eq!(*grid, [8, 1, 1]);
    }

    #[test]
    fn gemm_plans_by_hand() {
        let dev = h100_sxm_attributes();
        let c = Case {
            kernel: "gemm",
            sizes: vec![("m", 1000), ("n", 300), ("k", 70)],
            dtype: Precision::Fp64,
            weights: None,
            variant: None,
        };
        let b = bufs_of(&c);
        let l = Launch { block: Some([256, 1, 1]), tile: Some(128), ..Launch::default() };
        let p = plan(&c, OURS, &l, &b, &dev).unwrap();
        let StepSpec::Kernel { entry, grid, .. } = &p.steps[0] else { panic!() };
        // ceil(300/128) = 3 column blocks, ceil(1000/128) = 8 row blocks.
        assert_eq!((entry.as_str(), *grid), ("rt_gemm_t128_f64", [3, 8, 1]));
        let p = plan(&c, NAIVE, &Launch { block: Some([32, 8, 1]), ..Launch::default() }, &b, &dev)
            .unwrap();
        let StepSpec::Kernel { grid, block, .. } = &p.steps[0] else { panic!() };
        // ceil(300/32) = 10, ceil(1000/8) = 125.
        assert_eq!((*grid, *block), ([10, 125, 1], [32, 8, 1]));
        assert_eq!(
            plan(&c, CUBLAS, &Launch::default(), &b, &dev).unwrap().steps,
            vec![StepSpec::Blas { double: true, m: 1000, n: 300, k: 70 }]
        );
        // Bad launches: one sentence each.
        for l in [
            Launch { tile: Some(48), ..Launch::default() },
            Launch { block: Some([128, 1, 1]), tile: Some(64), ..Launch::default() },
        ] {
            assert!(
                matches!(plan(&c, OURS, &l, &b, &dev), Err(BackendError::BadLaunch(_))),
                "{l:?}"
            );
        }
        // fp8 on an A100 is refused with the capability in the message.
        let a100 = DeviceAttributes { compute_capability: (8, 0), ..dev.clone() };
        let c8 = Case {
            dtype: Precision::Fp8,
            sizes: vec![("m", 64), ("n", 64), ("k", 64)],
            ..c.clone()
        };
        let e = plan(&c8, CUBLASLT, &Launch::default(), &bufs_of(&c8), &a100).unwrap_err();
        assert!(e.to_string().contains("8.9"), "{e}");
        let p = plan(&c8, CUBLASLT, &Launch::default(), &bufs_of(&c8), &dev).unwrap();
        assert_eq!(p.scratch_bytes, vec![64 * 64, 64 * 64]);
        assert_eq!(
            p.steps,
            vec![StepSpec::Lt {
                kind: LtKind::Fp8,
                m: 64,
                n: 64,
                k: 64,
                a: ArgSpec::Scratch(1),
                b: ArgSpec::Scratch(0),
                d: ArgSpec::Buf(2)
            }]
        );
    }

    #[test]
    fn quant_plans_pass_the_layout() {
        use ArgSpec::{Buf, Null, U32};
        let dev = h100_sxm_attributes();
        let fmt = WeightFormat::Affine {
            bits: 4,
            group_size: 64,
            scale_dtype: Precision::Fp16,
            zero_point: true,
        };
        let c = Case {
            kernel: "qmatvec",
            sizes: vec![("n", 100), ("k", 128)],
            dtype: Precision::Fp32,
            weights: Some(fmt),
            variant: None,
        };
        let p = plan(&c, OURS, &default_launch(&c), &bufs_of(&c), &dev).unwrap();
        let StepSpec::Kernel { grid, args, .. } = &p.steps[0] else { panic!() };
        // 128 threads = 4 rows per block: ceil(100/4) = 25 blocks.
        assert_eq!(grid[0], 25);
        assert_eq!(
            args,
            &vec![
                Buf(0),
                Buf(1),
                Buf(2),
                Buf(3),
                Buf(4),
                U32(100),
                U32(128),
                U32(4),
                U32(64),
                U32(1),
                U32(0),
                U32(0)
            ]
        );
        let c = Case {
            kernel: "qgemm",
            sizes: vec![("m", 3), ("n", 100), ("k", 64)],
            weights: Some(WeightFormat::Q4_0),
            ..c
        };
        let p = plan(&c, OURS, &default_launch(&c), &bufs_of(&c), &dev).unwrap();
        let StepSpec::Kernel { grid, args, .. } = &p.steps[0] else { panic!() };
        assert_eq!(grid, &[2, 1, 1]);
        assert_eq!(&args[3..5], &[Null, Buf(3)]);
        assert_eq!(&args[8..], &[U32(4), U32(32), U32(0), U32(1), U32(0)]);
    }

    #[test]
    fn wrong_buffers_and_launches_are_refused() {
        let dev = h100_sxm_attributes();
        let c = case1d("copy", 100);
        let e = plan(&c, OURS, &Launch::default(), &[(DType::F32, 100), (DType::F64, 100)], &dev)
            .unwrap_err();
        assert!(matches!(e, BackendError::BufferMismatch { buffer: 1, .. }), "{e}");
        let e = plan(&c, OURS, &Launch::default(), &[(DType::F32, 100), (DType::F32, 99)], &dev)
            .unwrap_err();
        assert!(matches!(e, BackendError::BufferMismatch { .. }), "{e}");
        for block in [[48, 1, 1], [2048, 1, 1], [32, 2, 1]] {
            let l = Launch { block: Some(block), ..Launch::default() };
            assert!(
                matches!(plan(&c, OURS, &l, &bufs_of(&c), &dev), Err(BackendError::BadLaunch(_))),
                "{block:?}"
            );
        }
        assert!(matches!(
            plan(&c, CUBLAS, &Launch::default(), &bufs_of(&c), &dev),
            Err(BackendError::NoImplementation { .. })
        ));
    }

    #[test]
    fn launch_spaces() {
        assert_eq!(launch_space("triad", OURS, 1024).len(), 6);
        assert_eq!(launch_space("triad", OURS, 512).len(), 5);
        let g: Vec<Option<u32>> = launch_space("gemm", OURS, 1024).iter().map(|l| l.tile).collect();
        assert_eq!(g, vec![Some(32), Some(64), Some(128)]);
        assert_eq!(launch_space("gemm", CUBLASLT, 1024), vec![Launch::default()]);
        assert_eq!(launch_space("gemm", NAIVE, 1024).len(), 5);
        assert_eq!(launch_space("chase", OURS, 1024).len(), 1);
        let names: Vec<String> = implementations("gemm", true).into_iter().map(|i| i.id).collect();
        assert_eq!(names, ["rooftop", "rooftop-naive", "cublas", "cublaslt"]);
        assert_eq!(implementations("gemm", false).len(), 2);
        assert!(implementations("nope", true).is_empty());
    }
}
