//! The suite's kernels in WGSL: for a (kernel, case, launch), which shader runs, with
//! which entry point, bindings, grid and parameters ([`plan`]).
//!
//! Conventions shared by every shader in `shaders/`: bindings are in group 0, the call's
//! buffers first in the suite's `buffers()` order (scratch buffers where a kernel needs
//! them), then a 16-byte uniform of four 32-bit parameters. `WG` (threads per workgroup,
//! from `Launch::block`) and other compile-time constants are prepended to the source
//! as WGSL `const` declarations, so one source serves every workgroup size. Grids that
//! exceed the per-dimension workgroup limit are folded into two dimensions; shaders
//! recover the linear workgroup id as `wid.y * num_workgroups.x + wid.x`.
//!
//! Data are fp32 (WGSL has no fp64), except `hgemm` (fp16 in and out, fp32 accumulation)
//! on adapters with SHADER_F16 and the fp64 `fma` probe on adapters with SHADER_F64 (see
//! `docs/wgpu.md`).

use crate::backend::Launch;
use crate::case::{Case, KernelRef};
use crate::error::BackendError;
use crate::suite::{fma, norm, quant::NibbleOrder, quant::QuantLayout, KernelId};
use rooftop_core::units::Precision;
use std::borrow::Cow;
use std::fmt::Write as _;

const UNARY: &str = include_str!("shaders/unary.wgsl");
const BINARY: &str = include_str!("shaders/binary.wgsl");
const FILL: &str = include_str!("shaders/fill.wgsl");
const SUM: &str = include_str!("shaders/sum.wgsl");
const ROWSUM: &str = include_str!("shaders/rowsum.wgsl");
const RMSNORM: &str = include_str!("shaders/rmsnorm.wgsl");
const LAYERNORM: &str = include_str!("shaders/layernorm.wgsl");
const SOFTMAX: &str = include_str!("shaders/softmax.wgsl");
const GEMM: &str = include_str!("shaders/gemm.wgsl");
const QUANT: &str = include_str!("shaders/quant.wgsl");
const FMA: &str = include_str!("shaders/fma.wgsl");

/// Threads per workgroup when the launch does not say (every adapter allows 256).
pub const DEFAULT_WG: u32 = 256;
/// Smallest workgroup `--autotune` tries.
pub const MIN_WG: u32 = 32;
/// Workgroups of the first stage of the `read` reduction (at most).
const READ_GROUPS: u64 = 1024;
/// The tiled GEMM's fixed workgroup (16 x 16 threads, 64 x 64 outputs).
pub const GEMM_BLOCK: [u32; 3] = [16, 16, 1];
const GEMM_TILE: u64 = 64;

/// What the plans need to know about the device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeviceLimits {
    /// Largest 1-D workgroup (min of the x limit and the invocations limit).
    pub max_wg: u32,
    pub max_groups_per_dim: u32,
    pub workgroup_storage_bytes: u32,
    /// The device has `SHADER_F64` (the fp64 `fma` probe can run).
    pub shader_f64: bool,
    /// The device has `SHADER_F16` (`hgemm` can run).
    pub shader_f16: bool,
}

/// How a kernel's dispatches are built (the shape of its plan).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dispatch {
    /// One thread per element over `n`: `source` with `const OP` selecting the operation,
    /// the call's buffers `buffers` then the parameters.
    Elementwise { shader: &'static str, source: &'static str, op: u32, buffers: usize },
    /// `read`: a two-stage strided sum through a scratch buffer of partial sums.
    Sum,
    /// One workgroup per row: `entry` of `source` over the call's `buffers`, with the
    /// norm's epsilon in the parameters when `eps`.
    Rows {
        shader: &'static str,
        source: &'static str,
        entry: &'static str,
        buffers: usize,
        eps: bool,
    },
    /// The tiled GEMM (`f16`: fp16 elements in memory, needs SHADER_F16).
    Gemm { f16: bool },
    /// Quantized GEMV / GEMM (`gemm`: an `m` dimension).
    Quant { gemm: bool },
    /// The FMA-chain probe.
    Fma,
}

/// One of our WGSL implementations: the kernel, its label, and how it dispatches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WgpuKernel {
    pub kernel: KernelId,
    pub label: &'static str,
    /// Whether `--autotune` sweeps its workgroup size.
    pub tunable: bool,
    pub dispatch: Dispatch,
}

const fn elementwise(kernel: KernelId, op: u32, binary: bool) -> WgpuKernel {
    let (shader, source, buffers) =
        if binary { ("binary", BINARY, 3) } else { ("unary", UNARY, 2) };
    WgpuKernel {
        kernel,
        label: "WGSL, one element per thread",
        tunable: true,
        dispatch: Dispatch::Elementwise { shader, source, op, buffers },
    }
}

const fn row_kernel(
    kernel: KernelId,
    label: &'static str,
    (shader, source, entry): (&'static str, &'static str, &'static str),
    buffers: usize,
    eps: bool,
) -> WgpuKernel {
    WgpuKernel {
        kernel,
        label,
        tunable: true,
        dispatch: Dispatch::Rows { shader, source, entry, buffers, eps },
    }
}

/// Every kernel this backend implements.
pub const KERNELS: &[WgpuKernel] = &[
    WgpuKernel {
        kernel: KernelId::Read,
        label: "WGSL two-stage strided sum",
        tunable: true,
        dispatch: Dispatch::Sum,
    },
    WgpuKernel {
        kernel: KernelId::Write,
        label: "WGSL fill, one element per thread",
        tunable: true,
        dispatch: Dispatch::Elementwise { shader: "fill", source: FILL, op: 0, buffers: 1 },
    },
    elementwise(KernelId::Copy, 0, false),
    elementwise(KernelId::Scale, 1, false),
    elementwise(KernelId::Silu, 2, false),
    elementwise(KernelId::Gelu, 3, false),
    elementwise(KernelId::Add, 0, true),
    elementwise(KernelId::Triad, 1, true),
    row_kernel(
        KernelId::RmsNorm,
        "WGSL, one workgroup per row",
        ("rmsnorm", RMSNORM, "main"),
        3,
        true,
    ),
    row_kernel(
        KernelId::LayerNorm,
        "WGSL, one workgroup per row",
        ("layernorm", LAYERNORM, "main"),
        4,
        true,
    ),
    row_kernel(
        KernelId::Softmax,
        "WGSL 3-pass, one workgroup per row",
        ("softmax", SOFTMAX, "three_pass"),
        2,
        false,
    ),
    row_kernel(
        KernelId::SoftmaxOnline,
        "WGSL online max/sum, one workgroup per row",
        ("softmax", SOFTMAX, "online"),
        2,
        false,
    ),
    row_kernel(
        KernelId::RowSum,
        "WGSL, one workgroup per row",
        ("rowsum", ROWSUM, "main"),
        2,
        false,
    ),
    WgpuKernel {
        kernel: KernelId::Gemm,
        label: "WGSL tiled fp32 (64x64x16 tiles, 4x4 per thread)",
        tunable: false,
        dispatch: Dispatch::Gemm { f16: false },
    },
    WgpuKernel {
        kernel: KernelId::Hgemm,
        label: "WGSL tiled fp16 in/out, fp32 accumulation (64x64x16 tiles, 4x4 per thread)",
        tunable: false,
        dispatch: Dispatch::Gemm { f16: true },
    },
    WgpuKernel {
        kernel: KernelId::Qmatvec,
        label: "WGSL, one workgroup per output row",
        tunable: true,
        dispatch: Dispatch::Quant { gemm: false },
    },
    WgpuKernel {
        kernel: KernelId::Qgemm,
        label: "WGSL, one workgroup per output element (no tiling)",
        tunable: true,
        dispatch: Dispatch::Quant { gemm: true },
    },
    WgpuKernel {
        kernel: KernelId::Fma,
        label: "WGSL fma() chains",
        tunable: true,
        dispatch: Dispatch::Fma,
    },
];

/// Our implementation of `kernel`, if any.
pub fn find(kernel: KernelRef) -> Option<&'static WgpuKernel> {
    KERNELS.iter().find(|k| kernel == k.kernel)
}

/// Where a binding's buffer comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Slot {
    /// The call's buffer at this index.
    Call(usize),
    /// The plan's scratch buffer at this index.
    Scratch(usize),
    /// The step's uniform parameters.
    Params,
}

/// One dispatch.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    /// Source file name (part of the pipeline cache key).
    pub shader: &'static str,
    pub source: Cow<'static, str>,
    /// WGSL `const` declarations (and, for quantized kernels, bindings) put before the
    /// source.
    pub header: String,
    pub entry: &'static str,
    /// Bindings 0.. in order.
    pub slots: Vec<Slot>,
    pub params: [u32; 4],
    pub workgroups: [u32; 3],
}

impl Step {
    /// The full WGSL text.
    pub fn wgsl(&self) -> String {
        format!("{}\n{}", self.header, self.source)
    }

    /// The pipeline cache key.
    pub fn key(&self) -> String {
        format!("{}|{}|{}", self.shader, self.entry, self.header)
    }
}

/// Everything one run of a case dispatches.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    pub steps: Vec<Step>,
    /// Bytes of each scratch buffer.
    pub scratch_bytes: Vec<u64>,
}

fn bad_launch(msg: impl Into<String>) -> BackendError {
    BackendError::BadLaunch(msg.into())
}

/// Threads per workgroup of a 1-D kernel: `launch.block` (x only) or the default.
fn workgroup(launch: &Launch, lim: &DeviceLimits) -> Result<u32, BackendError> {
    let Some([x, y, z]) = launch.block else { return Ok(DEFAULT_WG.min(lim.max_wg)) };
    if y != 1 || z != 1 {
        return Err(bad_launch(format!(
            "the wgpu kernels take a 1-D block (Nx1x1), got {x}x{y}x{z}"
        )));
    }
    if !x.is_power_of_two() || x < MIN_WG || x > lim.max_wg {
        return Err(bad_launch(format!(
            "block {x}: the wgpu kernels take a power of two from {MIN_WG} to {} (this \
             adapter's limit)",
            lim.max_wg
        )));
    }
    // Reductions keep one f32 (softmax: two) per thread in workgroup memory.
    if 8 * x > lim.workgroup_storage_bytes {
        return Err(bad_launch(format!(
            "block {x} needs {} bytes of workgroup memory; the adapter has {}",
            8 * x,
            lim.workgroup_storage_bytes
        )));
    }
    Ok(x)
}

/// `groups` workgroups as a grid within the per-dimension limit.
pub fn grid(groups: u64, lim: &DeviceLimits) -> Result<[u32; 3], BackendError> {
    let max = u64::from(lim.max_groups_per_dim.max(1));
    let x = groups.clamp(1, max);
    let y = groups.div_ceil(x).max(1);
    if y > max {
        return Err(bad_launch(format!(
            "{groups} workgroups exceed this adapter's {max} x {max} grid"
        )));
    }
    Ok([x as u32, y as u32, 1])
}

fn u32_size(case: &Case, what: &str, v: u64) -> Result<u32, BackendError> {
    u32::try_from(v).map_err(|_| {
        BackendError::Other(format!(
            "{} {}: {what} = {v} exceeds the 32-bit indices of the WGSL kernels",
            case.kernel,
            case.label()
        ))
    })
}

fn header(wg: u32) -> String {
    format!("const WG: u32 = {wg}u;")
}

/// The dispatches of one run of `case` with `launch`.
pub fn plan(case: &Case, launch: &Launch, lim: &DeviceLimits) -> Result<Plan, BackendError> {
    let k = find(case.kernel).ok_or_else(|| BackendError::NoImplementation {
        backend: "wgpu".to_string(),
        kernel: case.kernel.to_string(),
        implementation: "rooftop".to_string(),
    })?;
    check_dtype(case, k.dispatch, lim)?;
    let one = |step: Step| Plan { steps: vec![step], scratch_bytes: Vec::new() };
    // The GEMMs have a fixed workgroup; the others take theirs from the launch.
    let wg = || workgroup(launch, lim);
    match k.dispatch {
        Dispatch::Gemm { f16 } => gemm(case, f16, launch, lim).map(one),
        Dispatch::Elementwise { shader, source, op, buffers } => {
            let (wg, n) = (wg()?, case.size("n"));
            Ok(one(Step {
                shader,
                source: Cow::Borrowed(source),
                header: format!("{}\nconst OP: u32 = {op}u;", header(wg)),
                entry: "main",
                slots: (0..buffers).map(Slot::Call).chain([Slot::Params]).collect(),
                params: [u32_size(case, "n", n)?, 0, 0, 0],
                workgroups: grid(n.div_ceil(u64::from(wg)), lim)?,
            }))
        }
        Dispatch::Sum => read(case, wg()?, lim),
        Dispatch::Rows { shader, source, entry, buffers, eps } => {
            rows(case, (shader, source, entry), buffers, eps, wg()?, lim).map(one)
        }
        Dispatch::Quant { gemm } => quant(case, gemm, wg()?, lim).map(one),
        Dispatch::Fma => fma_step(case, wg()?, lim).map(one),
    }
}

/// Refuses element types the adapter cannot run: fp32 only (WGSL has no fp64), except
/// `hgemm` (fp16, with SHADER_F16) and the fp64 `fma` probe (with SHADER_F64).
fn check_dtype(case: &Case, dispatch: Dispatch, lim: &DeviceLimits) -> Result<(), BackendError> {
    match dispatch {
        Dispatch::Gemm { f16: true } if !lim.shader_f16 => Err(BackendError::Other(format!(
            "{} {}: this adapter lacks SHADER_F16 (fp16 arithmetic in shaders)",
            case.kernel,
            case.label()
        ))),
        Dispatch::Gemm { f16: true } => Ok(()),
        Dispatch::Fma if case.dtype == Precision::Fp64 && lim.shader_f64 => Ok(()),
        _ if case.dtype != Precision::Fp32 => Err(BackendError::Other(format!(
            "{} {}: the wgpu backend runs fp32 kernels only (WGSL has no fp64; the fma probe \
             runs in fp64 on adapters with SHADER_F64), got {}",
            case.kernel,
            case.label(),
            case.dtype
        ))),
        _ => Ok(()),
    }
}

/// `read`: G workgroups into G partial sums (scratch 0), then one workgroup into the
/// result.
fn read(case: &Case, wg: u32, lim: &DeviceLimits) -> Result<Plan, BackendError> {
    let n = case.size("n");
    let n32 = u32_size(case, "n", n)?;
    let groups =
        n.div_ceil(u64::from(wg)).clamp(1, READ_GROUPS.min(u64::from(lim.max_groups_per_dim)));
    let g32 = groups as u32;
    let step = |slots, params, groups: u32| Step {
        shader: "sum",
        source: Cow::Borrowed(SUM),
        header: header(wg),
        entry: "main",
        slots,
        params,
        workgroups: [groups, 1, 1],
    };
    Ok(Plan {
        steps: vec![
            step(vec![Slot::Call(0), Slot::Scratch(0), Slot::Params], [n32, g32, 0, 0], g32),
            step(vec![Slot::Scratch(0), Slot::Call(1), Slot::Params], [g32, 1, 0, 0], 1),
        ],
        scratch_bytes: vec![4 * groups],
    })
}

/// Row kernels: one workgroup per row, `entry` of `source` over the call's first
/// `buffers` buffers.
fn rows(
    case: &Case,
    (shader, source, entry): (&'static str, &'static str, &'static str),
    buffers: usize,
    eps: bool,
    wg: u32,
    lim: &DeviceLimits,
) -> Result<Step, BackendError> {
    let (rows, cols) = (case.size("rows"), case.size("cols"));
    u32_size(case, "rows x cols", rows.saturating_mul(cols))?;
    let (r32, c32) = (rows as u32, cols as u32);
    let eps = if eps { (norm::EPS as f32).to_bits() } else { 0 };
    Ok(Step {
        shader,
        source: Cow::Borrowed(source),
        header: header(wg),
        entry,
        slots: (0..buffers).map(Slot::Call).chain([Slot::Params]).collect(),
        params: [r32, c32, eps, 0],
        workgroups: grid(rows, lim)?,
    })
}

fn gemm(case: &Case, f16: bool, launch: &Launch, lim: &DeviceLimits) -> Result<Step, BackendError> {
    if let Some([x, y, z]) = launch.block.filter(|&b| b != GEMM_BLOCK) {
        return Err(bad_launch(format!(
            "the wgpu gemm has a fixed 16x16x1 block, got {x}x{y}x{z}"
        )));
    }
    let (m, n, k) = (case.size("m"), case.size("n"), case.size("k"));
    for (what, v) in [("m x k", m * k), ("k x n", k * n), ("m x n", m * n)] {
        u32_size(case, what, v)?;
    }
    let (gx, gy) = (n.div_ceil(GEMM_TILE), m.div_ceil(GEMM_TILE));
    let max = u64::from(lim.max_groups_per_dim);
    if gx > max || gy > max {
        return Err(bad_launch(format!(
            "{gx} x {gy} workgroups exceed this adapter's limit of {max} per dimension"
        )));
    }
    Ok(Step {
        shader: "gemm",
        source: Cow::Borrowed(GEMM),
        // The element type in memory; `enable` must come before every declaration.
        header: if f16 {
            "enable f16;\nalias Elem = f16;".to_string()
        } else {
            "alias Elem = f32;".to_string()
        },
        entry: "main",
        slots: vec![Slot::Call(0), Slot::Call(1), Slot::Call(2), Slot::Params],
        params: [m as u32, n as u32, k as u32, 0],
        workgroups: [gx as u32, gy as u32, 1],
    })
}

/// The header of the quantized kernel: constants, bindings, and the zero-point decoder.
fn quant_header(wg: u32, l: &QuantLayout) -> String {
    let mut h = format!(
        "{}\nconst BITS: u32 = {}u;\nconst GROUP: u32 = {}u;\nconst GGML: bool = {};\n\
         const SIGNED: bool = {};\n\
         struct Params {{ m: u32, n: u32, k: u32, _p0: u32 }}\n\
         @group(0) @binding(0) var<storage, read> x: array<f32>;\n\
         @group(0) @binding(1) var<storage, read> qw: array<u32>;\n\
         @group(0) @binding(2) var<storage, read> sc: array<u32>;\n",
        header(wg),
        l.bits,
        l.group,
        l.nibbles == NibbleOrder::Ggml && l.bits == 4,
        l.signed,
    );
    if l.zero_point {
        // Zero points packed at the weight's bits: group g's is bits [g*BITS, g*BITS+BITS)
        // of the little-endian byte stream.
        h.push_str(
            "@group(0) @binding(3) var<storage, read> qz: array<u32>;\n\
             @group(0) @binding(4) var<storage, read_write> y: array<f32>;\n\
             @group(0) @binding(5) var<uniform> p: Params;\n\
             fn zero_point(g: u32) -> f32 {\n\
             \x20   let per = 32u / BITS;\n\
             \x20   return f32(extractBits(qz[g / per], (g % per) * BITS, BITS));\n\
             }\n",
        );
    } else {
        let _ = write!(
            h,
            "@group(0) @binding(3) var<storage, read_write> y: array<f32>;\n\
             @group(0) @binding(4) var<uniform> p: Params;\n\
             fn zero_point(g: u32) -> f32 {{ return {}.0; }}\n",
            l.implicit_zero()
        );
    }
    h
}

fn quant(case: &Case, gemm: bool, wg: u32, lim: &DeviceLimits) -> Result<Step, BackendError> {
    let l = case.weights.and_then(QuantLayout::of).ok_or_else(|| {
        BackendError::Other(format!("{} {}: no weight format", case.kernel, case.label()))
    })?;
    let m = if gemm { case.size("m") } else { 1 };
    let (n, k) = (case.size("n"), case.size("k"));
    for (what, v) in [("m x k", m * k), ("n x k", n * k), ("m x n", m * n)] {
        u32_size(case, what, v)?;
    }
    let inputs = if l.zero_point { 4 } else { 3 };
    let mut slots: Vec<Slot> = (0..=inputs).map(Slot::Call).collect();
    slots.push(Slot::Params);
    Ok(Step {
        shader: "quant",
        source: Cow::Borrowed(QUANT),
        header: quant_header(wg, &l),
        entry: "main",
        slots,
        params: [m as u32, n as u32, k as u32, 0],
        workgroups: grid(m * n, lim)?,
    })
}

fn fma_step(case: &Case, wg: u32, lim: &DeviceLimits) -> Result<Step, BackendError> {
    let iters = u32_size(case, "iters", case.size("iters"))?;
    let count = fma::ACCUMULATORS as u64;
    let scalar = case.variant == Some("scalar");
    let threads = if scalar { count } else { count / 4 };
    let groups = threads.div_ceil(u64::from(wg));
    if groups > u64::from(lim.max_groups_per_dim) {
        return Err(bad_launch(format!("{groups} workgroups exceed the adapter's limit")));
    }
    // The fp64 probe is the same source in f64 (naga accepts f64 with SHADER_F64).
    let (shader, source) = if case.dtype == Precision::Fp64 {
        ("fma-f64", Cow::Owned(FMA.replace("f32", "f64")))
    } else {
        ("fma", Cow::Borrowed(FMA))
    };
    Ok(Step {
        shader,
        source,
        header: header(wg),
        entry: if scalar { "scalar" } else { "vector" },
        slots: (0..4).map(Slot::Call).chain([Slot::Params]).collect(),
        params: [iters, count as u32, 0, 0],
        workgroups: [groups as u32, 1, 1],
    })
}

/// Workgroup sizes `--autotune` sweeps: powers of two from 32 to the adapter's limit.
pub fn workgroup_sizes(lim: &DeviceLimits) -> Vec<u32> {
    let mut v = Vec::new();
    let mut wg = MIN_WG;
    while wg <= lim.max_wg && 8 * wg <= lim.workgroup_storage_bytes {
        v.push(wg);
        wg *= 2;
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use rooftop_core::units::Precision;

    const LIM: DeviceLimits = DeviceLimits {
        max_wg: 1024,
        max_groups_per_dim: 65535,
        workgroup_storage_bytes: 16384,
        shader_f64: false,
        shader_f16: false,
    };

    #[test]
    fn grids_fold_into_two_dimensions() {
        assert_eq!(grid(10, &LIM).unwrap(), [10, 1, 1]);
        assert_eq!(grid(131_072, &LIM).unwrap(), [65535, 3, 1]);
        assert!(grid(65535u64 * 65535 + 1, &LIM).is_err());
    }

    #[test]
    fn workgroup_sizes_respect_limits() {
        assert_eq!(workgroup_sizes(&LIM), vec![32, 64, 128, 256, 512, 1024]);
        let small = DeviceLimits { max_wg: 256, ..LIM };
        assert_eq!(workgroup_sizes(&small), vec![32, 64, 128, 256]);
        let b = |x| Launch { block: Some([x, 1, 1]), ..Launch::default() };
        let case = KernelId::Copy.def().cases(&crate::Selection::default()).unwrap();
        assert!(plan(&case[0], &b(512), &small).is_err());
        assert!(plan(&case[0], &b(48), &LIM).is_err());
        assert!(plan(&case[0], &b(64), &LIM).is_ok());
    }

    #[test]
    fn every_listed_kernel_plans_its_default_cases_and_refuses_fp64() {
        for k in KERNELS {
            let kernel = k.kernel.def();
            // hgemm needs SHADER_F16 (refused without it, below).
            let lim = DeviceLimits { shader_f16: true, ..LIM };
            for case in kernel.cases(&crate::Selection::default()).unwrap() {
                let p = plan(&case, &Launch::default(), &lim).unwrap();
                let n_bufs = kernel.buffers(&case).len();
                for s in &p.steps {
                    for slot in &s.slots {
                        match slot {
                            Slot::Call(i) => assert!(*i < n_bufs, "{}", k.kernel),
                            Slot::Scratch(i) => assert!(*i < p.scratch_bytes.len()),
                            Slot::Params => {}
                        }
                    }
                }
            }
            if k.kernel == KernelId::Hgemm {
                let case = kernel.cases(&crate::Selection::default()).unwrap().remove(0);
                let e = plan(&case, &Launch::default(), &LIM).unwrap_err();
                assert!(e.to_string().contains("lacks SHADER_F16"), "{e}");
            }
            let sel = crate::Selection { dtype: Some(Precision::Fp64), ..Default::default() };
            if let Ok(cases) = kernel.cases(&sel) {
                let e = plan(&cases[0], &Launch::default(), &LIM).unwrap_err();
                assert!(e.to_string().contains("fp32 kernels only"), "{e}");
            }
        }
    }
}
