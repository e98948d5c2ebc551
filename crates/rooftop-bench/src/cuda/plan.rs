//! How each suite kernel runs on the CUDA backend: the CUDA C sources (compiled by NVRTC
//! at run time), and [`KERNELS`], one row per (kernel, implementation) saying which entry
//! of which source runs with which block, grid and arguments; plus the cuBLAS / cuBLASLt
//! GEMMs. [`plan`] turns a row and a call into the launches it makes.
//!
//! Planning is pure (no driver call), so it is tested on machines without a GPU. It
//! checks every buffer of the call against the suite's `buffers()` (count, element type,
//! length) before it names any of them in a launch: the launches in `ffi` rely on that.
//!
//! Launch parameters (`Launch`), as the rows say:
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
use crate::case::{Case, KernelRef};
use crate::error::BackendError;
use crate::suite::{self, quant::QuantLayout, KernelId};
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

/// A kernel argument as a row writes it; [`plan`] gives it its value for a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arg {
    /// The call's buffer at this index.
    Buf(usize),
    /// The call's last buffer (the output of the quantized kernels).
    LastBuf,
    /// Buffer 3 when the weight format stores zero points, else a null pointer.
    ZeroPoints,
    /// The plan's scratch buffer at this index.
    Scratch(usize),
    /// A size parameter of the case, as a 64-bit integer.
    Size64(&'static str),
    /// A size parameter of the case, as a 32-bit integer (refused past 2^32 - 1).
    Size32(&'static str),
    /// The elements of buffer 0 (the FMA probe's accumulators), 32-bit.
    Accumulators,
    /// 1 for the `scalar` variant, else 0 (the FMA probe).
    ScalarVariant,
    /// The five 32-bit words of the quantized weight layout: bits, group, zero point
    /// stored, GGML nibble order, signed.
    QuantLayout,
}

/// How the threads of a block are given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Block {
    /// `[x, 1, 1]`, x a multiple of 32 up to the device's maximum; this x by default.
    OneD(u32),
    /// Always 256 threads (`[256, 1, 1]`, the only block accepted); the rule as the
    /// refusal of another block states it.
    Fixed256(&'static str),
    /// `[x, y, 1]` of at most the device's maximum threads; `default` when unset, `what`
    /// names the kernel in the refusal of another.
    TwoD { default: [u32; 3], what: &'static str },
    /// One thread (the launch's block is not read).
    Single,
}

/// How the grid is sized (`n`, `m`, `rows`: the case's size parameters). A launch's
/// `[g, 1, 1]` (g >= 1) replaces a 1-D grid; another shape is refused by `Resident` and
/// `PerRow`, ignored by `WarpPerItem` and `FmaChains`; the 2-D and single grids never
/// read the launch's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Grid {
    /// Grid-stride over the size parameter: its blocks, at most those resident on the
    /// device at once.
    Resident(&'static str),
    /// One block per row.
    PerRow,
    /// One warp per element of the size parameter.
    WarpPerItem(&'static str),
    /// The FMA probe's threads: 4 accumulators per thread (vector), 32 threads per
    /// accumulator (scalar).
    FmaChains,
    /// `[ceil(n / T), ceil(m / T), 1]` for the tile T (at most 65535 row blocks).
    Tiles,
    /// `[ceil(n / x), min(ceil(m / y), 65535), 1]` for the block `[x, y, 1]`.
    PerElement2d,
    /// One block.
    Single,
}

/// The tile of tiled kernels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tile {
    /// Not tiled.
    None,
    /// Always this tile.
    Fixed(u64),
    /// `Launch::tile`, one of these (the default when unset); `what` names the kernel in
    /// the refusal of another.
    Launch { default: u32, allowed: &'static [u32], what: &'static str },
}

/// The entry point's name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Entry {
    /// `<stem>_f32` or `<stem>_f64` by the case's element type.
    Typed(&'static str),
    /// `<stem>_t<tile>_<f32|f64>`.
    Tiled(&'static str),
    /// As written.
    Plain(&'static str),
}

/// Launches `--autotune` sweeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Space {
    /// `[32 .. 1024, 1, 1]` in powers of two, up to the device's maximum.
    Blocks1d,
    /// Each of these tiles with 256 threads.
    Tiles(&'static [u32]),
    /// These blocks, those within the device's maximum threads.
    Blocks2d(&'static [[u32; 3]]),
    /// Only this launch.
    Only(Launch),
}

/// One CUDA implementation of a suite kernel: everything [`plan`] needs, as data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CudaKernel {
    pub kernel: KernelId,
    /// Implementation id (`rooftop`, `rooftop-naive`).
    pub implementation: &'static str,
    pub label: &'static str,
    /// The [`SOURCES`] entry that defines it.
    pub source: &'static str,
    pub entry: Entry,
    pub block: Block,
    pub grid: Grid,
    pub tile: Tile,
    pub args: &'static [Arg],
    /// One partial result per block (of the element type) and a 4-byte counter, in
    /// scratch buffers 0 and 1 (`read`'s two-stage sum).
    pub block_partials: bool,
    /// The launch used when none is given.
    pub default: Launch,
    pub space: Space,
}

const fn block(x: u32) -> Launch {
    Launch { threads: None, tile: None, block: Some([x, 1, 1]), grid: None }
}

const NVRTC: &str = "rooftop CUDA C (NVRTC)";
const BUF3: &[Arg] = &[Arg::Buf(0), Arg::Buf(1), Arg::Buf(2), Arg::Size64("n")];
const BUF2: &[Arg] = &[Arg::Buf(0), Arg::Buf(1), Arg::Size64("n")];
const ROWS2: &[Arg] = &[Arg::Buf(0), Arg::Buf(1), Arg::Size64("rows"), Arg::Size64("cols")];
const GEMM_ARGS: &[Arg] =
    &[Arg::Buf(0), Arg::Buf(1), Arg::Buf(2), Arg::Size32("m"), Arg::Size32("n"), Arg::Size32("k")];

/// A 1-D kernel of `stream.cu`: `rt_<name>_<f32|f64>` over `n`, grid-stride.
const fn stream(kernel: KernelId, entry: &'static str, args: &'static [Arg]) -> CudaKernel {
    CudaKernel {
        kernel,
        implementation: OURS,
        label: NVRTC,
        source: "stream",
        entry: Entry::Typed(entry),
        block: Block::OneD(256),
        grid: Grid::Resident("n"),
        tile: Tile::None,
        args,
        block_partials: false,
        default: block(256),
        space: Space::Blocks1d,
    }
}

/// A row kernel of `rows.cu`: one block per row.
const fn rows(kernel: KernelId, entry: &'static str, args: &'static [Arg]) -> CudaKernel {
    CudaKernel {
        source: "rows",
        grid: Grid::PerRow,
        entry: Entry::Typed(entry),
        ..stream(kernel, entry, args)
    }
}

/// Every CUDA implementation of a suite kernel (the cuBLAS GEMMs aside).
pub static KERNELS: [CudaKernel; 19] = [
    CudaKernel {
        args: &[Arg::Buf(0), Arg::Buf(1), Arg::Scratch(0), Arg::Scratch(1), Arg::Size64("n")],
        block_partials: true,
        ..stream(KernelId::Read, "rt_read", &[])
    },
    stream(KernelId::Write, "rt_write", &[Arg::Buf(0), Arg::Size64("n")]),
    stream(KernelId::Copy, "rt_copy", BUF2),
    stream(KernelId::Scale, "rt_scale", BUF2),
    stream(KernelId::Add, "rt_add", BUF3),
    stream(KernelId::Triad, "rt_triad", BUF3),
    stream(KernelId::Silu, "rt_silu", BUF2),
    stream(KernelId::Gelu, "rt_gelu", BUF2),
    rows(
        KernelId::RmsNorm,
        "rt_rmsnorm",
        &[Arg::Buf(0), Arg::Buf(1), Arg::Buf(2), Arg::Size64("rows"), Arg::Size64("cols")],
    ),
    rows(
        KernelId::LayerNorm,
        "rt_layernorm",
        &[
            Arg::Buf(0),
            Arg::Buf(1),
            Arg::Buf(2),
            Arg::Buf(3),
            Arg::Size64("rows"),
            Arg::Size64("cols"),
        ],
    ),
    rows(KernelId::Softmax, "rt_softmax", ROWS2),
    rows(KernelId::SoftmaxOnline, "rt_softmax_online", ROWS2),
    rows(KernelId::RowSum, "rt_rowsum", ROWS2),
    CudaKernel {
        kernel: KernelId::Gemm,
        implementation: OURS,
        label: "rooftop CUDA C, shared-memory tiles (NVRTC)",
        source: "gemm",
        entry: Entry::Tiled("rt_gemm"),
        block: Block::Fixed256("the tiled GEMM always runs 256 threads per block ([256, 1, 1])"),
        grid: Grid::Tiles,
        tile: Tile::Launch { default: 64, allowed: &[32, 64, 128], what: "the tiled GEMM" },
        args: GEMM_ARGS,
        block_partials: false,
        default: Launch { tile: Some(64), ..block(256) },
        space: Space::Tiles(&[32, 64, 128]),
    },
    CudaKernel {
        kernel: KernelId::Gemm,
        implementation: NAIVE,
        label: "rooftop CUDA C, one thread per element (NVRTC)",
        source: "gemm",
        entry: Entry::Typed("rt_gemm_naive"),
        block: Block::TwoD { default: [16, 16, 1], what: "the naive GEMM" },
        grid: Grid::PerElement2d,
        tile: Tile::None,
        args: GEMM_ARGS,
        block_partials: false,
        default: Launch { tile: Some(64), ..block(256) },
        space: Space::Blocks2d(&[[8, 8, 1], [16, 16, 1], [32, 8, 1], [32, 32, 1], [256, 1, 1]]),
    },
    CudaKernel {
        kernel: KernelId::Qmatvec,
        implementation: OURS,
        label: NVRTC,
        source: "quant",
        entry: Entry::Plain("rt_qmatvec"),
        block: Block::OneD(128),
        grid: Grid::WarpPerItem("n"),
        tile: Tile::None,
        args: &[
            Arg::Buf(0),
            Arg::Buf(1),
            Arg::Buf(2),
            Arg::ZeroPoints,
            Arg::LastBuf,
            Arg::Size32("n"),
            Arg::Size32("k"),
            Arg::QuantLayout,
        ],
        block_partials: false,
        default: block(128),
        space: Space::Blocks1d,
    },
    CudaKernel {
        kernel: KernelId::Qgemm,
        implementation: OURS,
        label: NVRTC,
        source: "quant",
        entry: Entry::Plain("rt_qgemm"),
        block: Block::Fixed256("qgemm always runs 256 threads per block"),
        grid: Grid::Tiles,
        tile: Tile::Fixed(64),
        args: &[
            Arg::Buf(0),
            Arg::Buf(1),
            Arg::Buf(2),
            Arg::ZeroPoints,
            Arg::LastBuf,
            Arg::Size32("m"),
            Arg::Size32("n"),
            Arg::Size32("k"),
            Arg::QuantLayout,
        ],
        block_partials: false,
        default: block(256),
        space: Space::Only(Launch { tile: Some(64), ..block(256) }),
    },
    CudaKernel {
        kernel: KernelId::Fma,
        implementation: OURS,
        label: NVRTC,
        source: "probe",
        entry: Entry::Typed("rt_fma"),
        block: Block::OneD(64),
        grid: Grid::FmaChains,
        tile: Tile::None,
        args: &[
            Arg::Buf(0),
            Arg::Buf(1),
            Arg::Buf(2),
            Arg::Buf(3),
            Arg::Accumulators,
            Arg::Size32("iters"),
            Arg::ScalarVariant,
        ],
        block_partials: false,
        default: block(64),
        space: Space::Blocks1d,
    },
    CudaKernel {
        kernel: KernelId::Chase,
        implementation: OURS,
        label: NVRTC,
        source: "probe",
        entry: Entry::Plain("rt_chase"),
        block: Block::Single,
        grid: Grid::Single,
        tile: Tile::None,
        args: &[Arg::Buf(0), Arg::Buf(1), Arg::Size64("steps")],
        block_partials: false,
        default: Launch { grid: Some([1, 1, 1]), ..block(1) },
        space: Space::Only(Launch { grid: Some([1, 1, 1]), ..block(1) }),
    },
];

/// The cuBLAS implementations of `gemm` (present when the libraries loaded).
const BLAS: [(&str, &str); 2] = [
    (CUBLAS, "cuBLAS sgemm/dgemm (default math mode, no TF32)"),
    (CUBLASLT, "cuBLASLt matmul (fp32/fp64 compute; tf32/bf16/fp16/fp8 for ceilings)"),
];

/// Our implementation `implementation` of `kernel`.
pub fn find(kernel: KernelRef, implementation: &str) -> Option<&'static CudaKernel> {
    KERNELS.iter().find(|k| kernel == k.kernel && k.implementation == implementation)
}

/// The implementations of `kernel`, ours first; `blas` says whether cuBLAS and
/// cuBLASLt loaded.
pub fn implementations(kernel: KernelRef, blas: bool) -> Vec<Implementation> {
    let mut v: Vec<Implementation> = KERNELS
        .iter()
        .filter(|k| kernel == k.kernel)
        .map(|k| Implementation {
            id: k.implementation.to_string(),
            builtin: false,
            label: k.label.to_string(),
        })
        .collect();
    if blas && kernel == KernelId::Gemm {
        v.extend(BLAS.iter().map(|(id, label)| Implementation {
            id: (*id).to_string(),
            builtin: true,
            label: (*label).to_string(),
        }));
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

/// The default launch of a case: its kernel's first row's.
pub fn default_launch(case: &Case) -> Launch {
    KERNELS.iter().find(|k| case.kernel == k.kernel).map_or(block(256), |k| k.default)
}

/// Launches `--autotune` sweeps for `kernel` with `implementation`.
pub fn launch_space(kernel: KernelRef, implementation: &str, max_threads: u32) -> Vec<Launch> {
    let Some(k) = find(kernel, implementation) else { return vec![Launch::default()] };
    match k.space {
        Space::Blocks1d => [32u32, 64, 128, 256, 512, 1024]
            .iter()
            .filter(|&&b| b <= max_threads)
            .map(|&b| block(b))
            .collect(),
        Space::Tiles(tiles) => {
            tiles.iter().map(|&t| Launch { tile: Some(t), ..block(256) }).collect()
        }
        Space::Blocks2d(blocks) => blocks
            .iter()
            .filter(|b| b[0] * b[1] <= max_threads)
            .map(|&b| Launch { block: Some(b), ..Launch::default() })
            .collect(),
        Space::Only(l) => vec![l],
    }
}

/// Checks the call's buffers against the suite's, so that every launch reads and writes
/// inside them.
fn check_buffers(id: KernelId, case: &Case, bufs: &[(DType, usize)]) -> Result<(), BackendError> {
    let specs = id.def().buffers(case);
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
    let no_impl = || BackendError::NoImplementation {
        backend: "cuda".to_string(),
        kernel: case.kernel.to_string(),
        implementation: implementation.to_string(),
    };
    let id = case.kernel.suite().ok_or_else(no_impl)?;
    check_buffers(id, case, bufs)?;
    if id == KernelId::Gemm && BLAS.iter().any(|(b, _)| *b == implementation) {
        return blas_plan(case, implementation, dev);
    }
    let k = find(case.kernel, implementation).ok_or_else(no_impl)?;
    let max = dev.max_threads_per_block.max(32);
    let tile = tile_of(k.tile, launch)?;
    let block = block_of(k.block, launch, max)?;
    let grid = grid_of(k.grid, case, launch, block, tile, bufs, dev)?;
    let double = case.dtype == Precision::Fp64;
    let sfx = if double { "f64" } else { "f32" };
    let entry = match k.entry {
        Entry::Typed(stem) => format!("{stem}_{sfx}"),
        Entry::Tiled(stem) => format!("{stem}_t{tile}_{sfx}"),
        Entry::Plain(name) => name.to_string(),
    };
    let mut args = Vec::with_capacity(k.args.len() + 4);
    for a in k.args {
        push_arg(&mut args, *a, case, bufs)?;
    }
    let scratch_bytes = if k.block_partials {
        vec![u64::from(grid[0]) * if double { 8 } else { 4 }, 4]
    } else {
        Vec::new()
    };
    let step = StepSpec::Kernel { source: k.source, entry, grid, block, args };
    Ok(PlanSpec { prep: Vec::new(), steps: vec![step], scratch_bytes })
}

/// The tile of a row (0 when not tiled).
fn tile_of(tile: Tile, launch: &Launch) -> Result<u64, BackendError> {
    match tile {
        Tile::None => Ok(0),
        Tile::Fixed(t) => Ok(t),
        Tile::Launch { default, allowed, what } => {
            let t = launch.tile.unwrap_or(default);
            if allowed.contains(&t) {
                return Ok(u64::from(t));
            }
            let list: Vec<String> = allowed.iter().map(u32::to_string).collect();
            let choices = match list.split_last() {
                Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
                _ => list.join(""),
            };
            Err(bad_launch(format!("{what} takes tile {choices}, got {t}")))
        }
    }
}

/// The block of a row, checked against the device's `max` threads per block.
fn block_of(b: Block, launch: &Launch, max: u32) -> Result<[u32; 3], BackendError> {
    match b {
        Block::OneD(default) => {
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
            Ok([x, 1, 1])
        }
        Block::Fixed256(rule) => match launch.block {
            Some([bx, by, bz]) if [bx, by, bz] != [256, 1, 1] => {
                Err(bad_launch(format!("{rule}, got {bx}x{by}x{bz}")))
            }
            _ => Ok([256, 1, 1]),
        },
        Block::TwoD { default, what } => {
            let [bx, by, bz] = launch.block.unwrap_or(default);
            if bz != 1 || bx == 0 || by == 0 || bx * by > max {
                return Err(bad_launch(format!(
                    "{what} takes a block [x, y, 1] of at most {max} threads, got {bx}x{by}x{bz}"
                )));
            }
            Ok([bx, by, 1])
        }
        Block::Single => Ok([1, 1, 1]),
    }
}

/// The grid of a row for `case` with `block` (and `tile` for tiled rows).
fn grid_of(
    g: Grid,
    case: &Case,
    launch: &Launch,
    block: [u32; 3],
    tile: u64,
    bufs: &[(DType, usize)],
    dev: &DeviceAttributes,
) -> Result<[u32; 3], BackendError> {
    // A 1-D grid given in the launch replaces the computed one; another shape is refused
    // with `rule` (`None`: ignored, the computed grid runs).
    let one_d = |computed: u64, rule: Option<&str>| -> Result<[u32; 3], BackendError> {
        match (launch.grid, rule) {
            (Some([g, 1, 1]), _) if g > 0 => Ok([g, 1, 1]),
            (Some([x, y, z]), Some(rule)) => Err(bad_launch(format!("{rule}, got {x}x{y}x{z}"))),
            _ => Ok([to_u32("grid", computed)?, 1, 1]),
        }
    };
    let threads = u64::from(block[0]);
    let row_blocks = |m: u64, per: u64| -> Result<u32, BackendError> {
        let gy = blocks_for(m, per);
        if gy > 65_535 {
            return Err(bad_launch(format!("m = {m} needs {gy} > 65535 row blocks")));
        }
        Ok(gy as u32)
    };
    match g {
        Grid::Resident(n) => {
            let resident = u64::from(dev.sm_count.max(1))
                * u64::from((dev.max_threads_per_sm / block[0]).max(1));
            one_d(
                blocks_for(case.size(n), threads).min(resident),
                Some("this kernel takes a 1-D grid ([g, 1, 1], g >= 1)"),
            )
        }
        Grid::PerRow => one_d(
            case.size("rows").min(u64::from(i32::MAX as u32)),
            Some("row kernels take a 1-D grid"),
        ),
        Grid::WarpPerItem(n) => one_d(blocks_for(case.size(n), threads / 32), None),
        Grid::FmaChains => {
            let nacc = bufs.first().map_or(0, |b| b.1 as u64);
            let scalar = case.variant == Some("scalar");
            // The vector kernel runs FMA_CHAINS (4) accumulators per thread.
            if !scalar && !nacc.is_multiple_of(4) {
                return Err(bad_launch(format!(
                    "the fma kernel runs 4 accumulators per thread: {nacc} is not a multiple of 4"
                )));
            }
            one_d(blocks_for(if scalar { nacc * 32 } else { nacc / 4 }, threads), None)
        }
        Grid::Tiles => {
            let gy = row_blocks(case.size("m"), tile)?;
            Ok([to_u32("grid x", blocks_for(case.size("n"), tile))?, gy, 1])
        }
        Grid::PerElement2d => Ok([
            to_u32("grid x", blocks_for(case.size("n"), threads))?,
            blocks_for(case.size("m"), u64::from(block[1])).min(65_535) as u32,
            1,
        ]),
        Grid::Single => Ok([1, 1, 1]),
    }
}

/// Appends the value(s) of `arg` for `case` and its buffers.
fn push_arg(
    out: &mut Vec<ArgSpec>,
    arg: Arg,
    case: &Case,
    bufs: &[(DType, usize)],
) -> Result<(), BackendError> {
    let layout = || {
        case.weights.and_then(QuantLayout::of).ok_or_else(|| {
            BackendError::Other(format!("{}: no weight format in the case", case.kernel))
        })
    };
    match arg {
        Arg::Buf(i) => out.push(ArgSpec::Buf(i)),
        Arg::LastBuf => out.push(ArgSpec::Buf(bufs.len().saturating_sub(1))),
        Arg::ZeroPoints => {
            out.push(if layout()?.zero_point { ArgSpec::Buf(3) } else { ArgSpec::Null });
        }
        Arg::Scratch(i) => out.push(ArgSpec::Scratch(i)),
        Arg::Size64(name) => out.push(ArgSpec::U64(case.size(name))),
        Arg::Size32(name) => out.push(ArgSpec::U32(to_u32(name, case.size(name))?)),
        Arg::Accumulators => {
            let n = bufs.first().map_or(0, |b| b.1 as u64);
            out.push(ArgSpec::U32(to_u32("accumulators", n)?));
        }
        Arg::ScalarVariant => out.push(ArgSpec::U32(u32::from(case.variant == Some("scalar")))),
        Arg::QuantLayout => {
            let l = layout()?;
            out.extend([
                ArgSpec::U32(l.bits),
                ArgSpec::U32(l.group as u32),
                ArgSpec::U32(u32::from(l.zero_point)),
                ArgSpec::U32(u32::from(l.nibbles == suite::quant::NibbleOrder::Ggml)),
                ArgSpec::U32(u32::from(l.signed)),
            ]);
        }
    }
    Ok(())
}

/// The plan of a cuBLAS or cuBLASLt GEMM (buffers already checked).
fn blas_plan(
    case: &Case,
    implementation: &str,
    dev: &DeviceAttributes,
) -> Result<PlanSpec, BackendError> {
    use ArgSpec::{Buf, Scratch, U32, U64};
    let (m, n, k) = (case.size("m"), case.size("n"), case.size("k"));
    let mut out = PlanSpec::default();
    if implementation == CUBLAS {
        let i = |what, v: u64| {
            i32::try_from(v).map_err(|_| bad_launch(format!("cuBLAS takes {what} < 2^31, got {v}")))
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
        return Ok(out);
    }
    let kind = lt_kind(case.dtype, dev.compute_capability)?;
    if !kind.converted() {
        out.steps.push(StepSpec::Lt { kind, m, n, k, a: Buf(1), b: Buf(0), d: Buf(2) });
        return Ok(out);
    }
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
    let resident =
        u64::from(dev.sm_count.max(1)) * u64::from((dev.max_threads_per_sm / 256).max(1));
    let conv = |items: u64| -> Result<[u32; 3], BackendError> {
        Ok([to_u32("grid", blocks_for(items, 256).min(resident))?, 1, 1])
    };
    let step = |entry: String, grid, args| StepSpec::Kernel {
        source: "tensor",
        entry,
        grid,
        block: [256, 1, 1],
        args,
    };
    out.prep.push(step(
        format!("rt_to_{entry}"),
        conv(m * k)?,
        vec![Buf(0), Scratch(0), U64(m * k)],
    ));
    out.prep.push(step(
        format!("rt_to_{entry}_t"),
        conv(k * n)?,
        vec![Buf(1), Scratch(1), U32(to_u32("k", k)?), U32(to_u32("n", n)?)],
    ));
    out.steps.push(StepSpec::Lt { kind, m, n, k, a: Scratch(1), b: Scratch(0), d: Buf(2) });
    Ok(out)
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
        let id = case.kernel.suite().unwrap();
        id.def().buffers(case).iter().map(|s| (s.dtype, s.len)).collect()
    }

    fn case1d(kernel: KernelId, n: u64) -> Case {
        Case {
            kernel: kernel.into(),
            sizes: vec![("n", n)],
            dtype: Precision::Fp32,
            weights: None,
            variant: None,
        }
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
        for id in KernelId::ALL.into_iter().filter(|k| *k != KernelId::Hgemm) {
            assert!(
                !implementations(id.into(), false).is_empty(),
                "{id} has no CUDA implementation"
            );
        }
        assert!(declares(source("probe").unwrap().code, "rt_flush"));
        // The tensor conversions of every low-precision kind.
        for dtype in [Precision::Bf16, Precision::Fp16, Precision::Fp8] {
            let c = Case {
                kernel: KernelId::Gemm.into(),
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
        let c = case1d(KernelId::Triad, 1 << 25);
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
        let c = case1d(KernelId::Read, 1000);
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
            kernel: KernelId::Gemm.into(),
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
            kernel: KernelId::Qmatvec.into(),
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
            kernel: KernelId::Qgemm.into(),
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
        let c = case1d(KernelId::Copy, 100);
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
        let (triad, gemm) = (KernelId::Triad.into(), KernelId::Gemm.into());
        assert_eq!(launch_space(triad, OURS, 1024).len(), 6);
        assert_eq!(launch_space(triad, OURS, 512).len(), 5);
        let g: Vec<Option<u32>> = launch_space(gemm, OURS, 1024).iter().map(|l| l.tile).collect();
        assert_eq!(g, vec![Some(32), Some(64), Some(128)]);
        assert_eq!(launch_space(gemm, CUBLASLT, 1024), vec![Launch::default()]);
        assert_eq!(launch_space(gemm, NAIVE, 1024).len(), 5);
        assert_eq!(launch_space(KernelId::Chase.into(), OURS, 1024).len(), 1);
        let names: Vec<String> = implementations(gemm, true).into_iter().map(|i| i.id).collect();
        assert_eq!(names, ["rooftop", "rooftop-naive", "cublas", "cublaslt"]);
        assert_eq!(implementations(gemm, false).len(), 2);
        assert!(implementations(KernelRef::Spec("nope"), true).is_empty());
        // Each (kernel, implementation) has one row.
        for (i, a) in KERNELS.iter().enumerate() {
            assert!(
                KERNELS[..i]
                    .iter()
                    .all(|b| (b.kernel, b.implementation) != (a.kernel, a.implementation)),
                "{} {}",
                a.kernel,
                a.implementation
            );
        }
    }
}
