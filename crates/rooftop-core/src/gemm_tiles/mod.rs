//! GEMM tile, wave and dimension efficiency, with macro tiles read from kernel names.
//!
//! Two halves:
//!
//! * **Kernel-name parsing** ([`parse_kernel_name`]): one module per library family, applied
//!   in the fixed order of docs/reference/kernel-names.md — Tensile / hipBLASLt / rocBLAS
//!   (including the `Custom_Cijk_` prefix), Tensile `PostGSU` reductions, cuBLASLt `nvjet`,
//!   cuBLAS `xmma`, CUTLASS 3 (`cutlass3x_`), CUTLASS 2 (including inside
//!   `void cutlass::Kernel2<...>`), legacy cuBLAS (`ampere_sgemm_128x64_tn`), Composable
//!   Kernel (template-argument walk) and ck_tile, Triton (AITER constexpr names and Inductor
//!   templates), and MIOpen implicit GEMM. The order matters because some cuBLAS names embed
//!   CUTLASS names. Conventions come from the Tensile / hipBLASLt sources, CUTLASS's
//!   `gemm_operation.py` procedural names and TraceLens's `kernel_name_parser.py` (each
//!   cited in docs/reference/kernel-names.md), with TraceLens's greedy nvjet pattern
//!   avoided by anchoring every group.
//! * **Efficiency** ([`tile_efficiency`]): the formulas of TraceLens's GEMM analysis
//!   (github.com/AMD-AGI/TraceLens/blob/main/docs/conceptual/gemm-analysis.md) — `tile_eff`,
//!   `num_tiles`, `waves`, `wq_eff`, `dim_eff` — extended (docs/reference/formulas.md): the
//!   tile count is multiplied by batch and split-K, stream-K kernels get tile efficiency only,
//!   and a launch grid can be checked against the tile count ([`check_launch_grid`]).
//!
//! # Whose M is the tile's M (`blas_column_major`)
//!
//! cuBLAS, cuBLASLt, rocBLAS and hipBLASLt are column-major. PyTorch (row-major) computes
//! `C = A @ B` by asking BLAS for `C^T = B^T A^T` (`aten/src/ATen/native/cuda/Blas.cpp`), so the
//! tile M of a BLAS kernel runs along PyTorch's N and the tile N along PyTorch's M
//! ([`blas_mn_from_torch`]). [`GemmKernelInfo::blas_column_major`] says whether that swap
//! applies:
//!
//! | true | false |
//! |---|---|
//! | Tensile / hipBLASLt / rocBLAS (and PostGSU), legacy cuBLAS, cuBLAS xmma GEMMs, cuBLASLt nvjet, CUTLASS 2 procedural names (`cutlass_80_...`: the instances shipped inside cuBLAS) | Composable Kernel and ck_tile (called row-major by AITER/PyTorch), Triton and Inductor, CUTLASS 3 (`cutlass3x_`, Inductor's CUTLASS backend), and every implicit-GEMM convolution (MIOpen igemm, xmma/CUTLASS fprop/dgrad/wgrad), whose M/N are not a matmul's |
//!
//! The swap was checked against real launch grids in the TraceLens MI300X goldens: for
//! `aten::addmm` with M=141, N=30522 and `MT128x144`, the grid holds 239 workgroups =
//! ceil(30522/128) * ceil(141/144); without the swap it would be 424.
//!
//! # Invariants
//!
//! Parsing never panics on any string; every number read from a name is range-checked and an
//! unreadable part becomes a note, not a guess. [`tile_efficiency`] returns `None` for zero
//! inputs or a tile count that does not fit in `u64`, and otherwise efficiencies in (0, 1].

mod ck;
mod cublas;
mod cutlass;
mod efficiency;
mod igemm;
mod nvjet;
mod scan;
mod tensile;
mod triton;
mod xmma;

#[cfg(test)]
mod reference_names;

use std::sync::LazyLock;

use regex::Regex;
use serde::Serialize;

pub use efficiency::{
    blas_mn_from_torch, check_launch_grid, grid_blocks_from_work_items, tile_efficiency, GridCheck,
};

/// The library family a GEMM kernel name belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum KernelFamily {
    /// Tensile: rocBLAS, hipBLASLt (TensileLite) and hand-tuned `Custom_Cijk_` kernels.
    Tensile,
    /// Tensile's split-K reduction kernel (`..._PostGSU{n}`): no tile.
    TensilePostGsu,
    /// cuBLASLt `nvjet_*` (CUDA 12.4+, Hopper/Blackwell).
    Nvjet,
    /// cuBLAS / cuDNN `sm{arch}_xmma_*`.
    CublasXmma,
    /// CUTLASS 3.x procedural names (`cutlass3x_sm90_...`).
    Cutlass3,
    /// CUTLASS 2.x procedural names (`cutlass_80_tensorop_...`), also inside cuBLAS/cuDNN.
    Cutlass2,
    /// Legacy cuBLAS SIMT/HMMA names (`ampere_sgemm_128x64_tn`).
    CublasLegacy,
    /// Composable Kernel (`ck::kernel_gemm_*<ck::GridwiseGemm...<...>>`).
    ComposableKernel,
    /// ck_tile (`ck_tile::kentry<...TileGemmShape<...>...>`).
    CkTile,
    /// Triton: AITER names with `BLOCK_SIZE_*` constexprs, Inductor `triton_tem_*` templates.
    Triton,
    /// MIOpen implicit-GEMM convolution (`igemm_fwd_..._bt{M}x{N}x{K}_...`).
    MiopenIgemm,
}

impl KernelFamily {
    /// A short stable label (the serde name).
    pub fn label(self) -> &'static str {
        match self {
            Self::Tensile => "tensile",
            Self::TensilePostGsu => "tensile_post_gsu",
            Self::Nvjet => "nvjet",
            Self::CublasXmma => "cublas_xmma",
            Self::Cutlass3 => "cutlass3",
            Self::Cutlass2 => "cutlass2",
            Self::CublasLegacy => "cublas_legacy",
            Self::ComposableKernel => "composable_kernel",
            Self::CkTile => "ck_tile",
            Self::Triton => "triton",
            Self::MiopenIgemm => "miopen_igemm",
        }
    }
}

/// Whether an operand is transposed in the BLAS (column-major) view.
///
/// `N` = the operand is stored column-major as the BLAS formula names it (A as M x K, B as
/// K x N); `T` = it is stored the other way. A row-major A (K contiguous) is `T`; a row-major
/// B (N contiguous) is `N`. PyTorch `Linear` forward reaches BLAS as `T`,`N`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum Transpose {
    N,
    T,
}

impl Transpose {
    /// Reads a BLAS/CUTLASS layout letter: `n`/`N` or `t`/`T`.
    pub(crate) fn from_letter(c: char) -> Option<Self> {
        match c {
            'n' | 'N' => Some(Self::N),
            't' | 'T' => Some(Self::T),
            _ => None,
        }
    }
}

/// What a GEMM kernel name says about its tiling.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GemmKernelInfo {
    pub family: KernelFamily,
    /// Macro (CTA / workgroup) tile along the kernel's own M. For two-SM kernels
    /// ([`Self::two_sm`]) this is the tile of the SM pair; see [`Self::per_cta_tile`].
    pub mt_m: Option<u32>,
    pub mt_n: Option<u32>,
    /// K depth of one main-loop iteration (Tensile DepthU, CUTLASS/xmma K tile, nvjet K block).
    pub mt_k: Option<u32>,
    /// Software-pipeline stages (CUTLASS/cuBLAS `KxS`, nvjet); 0 in CUTLASS 3 means "auto".
    pub stages: Option<u32>,
    /// op(A), op(B) as the name encodes them, in the BLAS view (see [`Transpose`]).
    pub layout: Option<(Transpose, Transpose)>,
    /// Split-K factor when the name states it (Tensile GSU, Triton NUM_KSPLIT); None when not
    /// split or when the factor is not in the name (see [`Self::split_k_flag`]).
    pub split_k: Option<u32>,
    /// The name marks a split-K kernel (GSU > 1, NUM_KSPLIT > 1, nvjet `splitK`, CK AtomicAdd
    /// output), whether or not it gives the factor. The grid then shows the factor.
    pub split_k_flag: bool,
    /// Stream-K scheduling (hipBLASLt SK > 0, CUTLASS `_stream_k`): K-iterations are balanced
    /// across CUs, so classical wave quantization does not apply.
    pub stream_k: bool,
    /// The launch grid does not hold one CTA per output tile (persistent, stream-K or
    /// K-segmented scheduling), so [`check_launch_grid`] does not apply.
    pub persistent: bool,
    /// The tile spans two SMs (Blackwell 2-CTA MMA: CUTLASS `_2sm`, nvjet `2cta`); per-SM tile
    /// is half along M.
    pub two_sm: bool,
    /// Whether the name came from a column-major BLAS library (cuBLAS/cuBLASLt/rocBLAS/
    /// hipBLASLt), which swaps PyTorch's M and N (module docs give the per-family rule).
    pub blas_column_major: bool,
    /// An implicit-GEMM convolution: the tile's M/N are the implicit GEMM's (output pixels and
    /// output channels), not a matmul's.
    pub implicit_conv: bool,
    /// Target architecture when the name gives it (`sm90`, `gfx942`).
    pub arch: Option<String>,
    /// Thread-block cluster (nvjet, CUTLASS 3), `[x, y, z]`.
    pub cluster: Option<[u32; 3]>,
    /// Threads per CTA / workgroup when the name gives it (Tensile WG product, CK BlockSize).
    pub block_threads: Option<u32>,
    /// Notes on what was assumed or could not be read.
    pub notes: Vec<String>,
}

impl GemmKernelInfo {
    /// An info with only the family and the BLAS-view flag set.
    pub(crate) fn new(family: KernelFamily, blas_column_major: bool) -> Self {
        Self {
            family,
            mt_m: None,
            mt_n: None,
            mt_k: None,
            stages: None,
            layout: None,
            split_k: None,
            split_k_flag: false,
            stream_k: false,
            persistent: false,
            two_sm: false,
            blas_column_major,
            implicit_conv: false,
            arch: None,
            cluster: None,
            block_threads: None,
            notes: Vec::new(),
        }
    }

    /// Whether the name gave both macro-tile dimensions.
    pub fn has_tile(&self) -> bool {
        self.mt_m.is_some() && self.mt_n.is_some()
    }

    /// The tile one CTA (one SM) computes: the name's tile, halved along M for two-SM kernels.
    pub fn per_cta_tile(&self) -> Option<(u32, u32)> {
        let (m, n) = (self.mt_m?, self.mt_n?);
        if self.two_sm {
            Some((m / 2, n)).filter(|&(m, _)| m > 0)
        } else {
            Some((m, n))
        }
    }

    /// Builds the [`TileProblem`] for a matmul given in the caller's (PyTorch, row-major) view.
    ///
    /// Applies the BLAS swap when [`Self::blas_column_major`], the split-K factor and stream-K
    /// flag of the name, and for two-SM kernels counts SM pairs as the scheduling unit
    /// (`num_cu / 2`), so `tiles` are pair tiles and waves are counted over pairs. `None` when
    /// the name has no tile or `num_cu` leaves no unit.
    pub fn tile_problem_from_torch(
        &self,
        torch_m: u64,
        torch_n: u64,
        batch: u64,
        num_cu: u32,
        ctas_per_cu: u32,
    ) -> Option<TileProblem> {
        let (m, n) = if self.blas_column_major {
            blas_mn_from_torch(torch_m, torch_n)
        } else {
            (torch_m, torch_n)
        };
        let units = if self.two_sm { num_cu / 2 } else { num_cu };
        if units == 0 {
            return None;
        }
        Some(TileProblem {
            m,
            n,
            batch,
            mt_m: self.mt_m?,
            mt_n: self.mt_n?,
            num_cu: units,
            ctas_per_cu,
            split_k: self.split_k.unwrap_or(1),
            stream_k: self.stream_k,
        })
    }

    pub(crate) fn note(&mut self, text: impl Into<String>) {
        self.notes.push(text.into());
    }
}

/// Tile, wave and dimension efficiency of one GEMM launch.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TileEfficiency {
    pub mt_m: u32,
    pub mt_n: u32,
    pub tiles_m: u64,
    pub tiles_n: u64,
    /// tiles_m * tiles_n * batch * split_k.
    pub num_tiles: u64,
    pub tile_eff: f64,
    /// None for stream-K kernels (wave quantization does not apply). Persistent
    /// data-parallel kernels keep their waves: each CTA still takes whole tiles.
    pub waves: Option<u64>,
    pub wq_eff: Option<f64>,
    /// tile_eff * wq_eff (tile_eff alone when wq_eff is None).
    pub dim_eff: f64,
    pub notes: Vec<String>,
}

/// Inputs to [`tile_efficiency`], in the kernel's (BLAS) view of M and N.
///
/// Every count must be positive (`split_k` is 1 when K is not split).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TileProblem {
    pub m: u64,
    pub n: u64,
    pub batch: u64,
    pub mt_m: u32,
    pub mt_n: u32,
    pub num_cu: u32,
    pub ctas_per_cu: u32,
    pub split_k: u32,
    pub stream_k: bool,
}

/// Parses a GEMM kernel name; None when no family matches.
///
/// Families are tried in the order of docs/reference/kernel-names.md. A name that is recognised but whose
/// tile cannot be read still returns `Some`, with `mt_m`/`mt_n` None and the reason in
/// `notes` ("tile unknown"); non-GEMM kernels (elementwise, attention, Inductor pointwise and
/// reductions) return None.
pub fn parse_kernel_name(name: &str) -> Option<GemmKernelInfo> {
    // A trace names the same few kernels hundreds of thousands of times: remember the
    // answers (per thread, bounded), which took a third of a trace's analysis time.
    /// Names kept per thread before the memo starts over: more than a trace names (a
    /// memo too small for a trace's names forgot each before it was asked again).
    const MEMO_NAMES: usize = 1 << 16;
    thread_local! {
        static SEEN: std::cell::RefCell<foldhash::HashMap<Box<str>, Option<GemmKernelInfo>>> =
            std::cell::RefCell::new(foldhash::HashMap::default());
    }
    if let Some(hit) = SEEN.with(|m| m.borrow().get(name).cloned()) {
        return hit;
    }
    let info = parse_uncached(name);
    SEEN.with(|m| {
        let mut m = m.borrow_mut();
        if m.len() >= MEMO_NAMES {
            m.clear();
        }
        m.insert(name.into(), info.clone());
    });
    info
}

fn parse_uncached(name: &str) -> Option<GemmKernelInfo> {
    tensile::parse(name)
        .or_else(|| tensile::parse_post_gsu(name))
        .or_else(|| nvjet::parse(name))
        .or_else(|| xmma::parse(name))
        .or_else(|| cutlass::parse_cutlass3(name))
        .or_else(|| cutlass::parse_cutlass2(name))
        .or_else(|| cublas::parse(name))
        .or_else(|| ck::parse(name))
        .or_else(|| triton::parse(name))
        .or_else(|| igemm::parse(name))
}

/// Compiles a regex that is a literal in this module; a bad literal is a bug caught by every
/// test run.
///
/// The literals spell their classes in ASCII (`[0-9]`, `[0-9A-Za-z_]`, `(?-u:\s)`): kernel
/// names are ASCII, and Unicode's `\d`, `\w` and `\s` cost every process some 20 M
/// instructions of lazy-DFA construction on its first names (half a small trace's
/// fixed cost).
pub(crate) fn regex(pattern: &str) -> Regex {
    Regex::new(pattern).unwrap_or_else(|e| panic!("gemm_tiles regex {pattern:?}: {e}"))
}

/// A `u32` from a regex capture; None when absent or out of range.
pub(crate) fn cap_u32(caps: &regex::Captures<'_>, group: &str) -> Option<u32> {
    caps.name(group).and_then(|m| m.as_str().parse().ok())
}

/// Reads `MxN` (both in range) or records why not.
pub(crate) fn set_tile(
    info: &mut GemmKernelInfo,
    caps: &regex::Captures<'_>,
    m: &str,
    n: &str,
    k: Option<&str>,
) {
    let (tm, tn) = (cap_u32(caps, m), cap_u32(caps, n));
    match (tm, tn) {
        (Some(tm), Some(tn)) if tm > 0 && tn > 0 => {
            info.mt_m = Some(tm);
            info.mt_n = Some(tn);
        }
        _ => info.note("tile unknown: tile numbers in the name are zero or out of range"),
    }
    if let Some(k) = k {
        info.mt_k = cap_u32(caps, k).filter(|&v| v > 0);
    }
}

/// [`set_tile`] from the three numbers as written (a hand-parsed name).
pub(crate) fn set_tile_from(info: &mut GemmKernelInfo, m: &str, n: &str, k: &str) {
    match (m.parse::<u32>().ok(), n.parse::<u32>().ok()) {
        (Some(tm), Some(tn)) if tm > 0 && tn > 0 => {
            info.mt_m = Some(tm);
            info.mt_n = Some(tn);
        }
        _ => info.note("tile unknown: tile numbers in the name are zero or out of range"),
    }
    info.mt_k = k.parse::<u32>().ok().filter(|&v| v > 0);
}

/// Layout from two letters (`tn`, `TN`), when both are valid.
pub(crate) fn layout_from_letters(s: &str) -> Option<(Transpose, Transpose)> {
    let mut chars = s.chars();
    let a = Transpose::from_letter(chars.next()?)?;
    let b = Transpose::from_letter(chars.next()?)?;
    Some((a, b))
}

/// Matches `{a}x{b}x{c}` and gives the three numbers.
pub(crate) fn triple(s: &str) -> Option<[u32; 3]> {
    static TRIPLE: LazyLock<Regex> = LazyLock::new(|| regex(r"^([0-9]+)x([0-9]+)x([0-9]+)$"));
    let caps = TRIPLE.captures(s)?;
    Some([caps[1].parse().ok()?, caps[2].parse().ok()?, caps[3].parse().ok()?])
}

#[cfg(test)]
mod ascii_classes {
    /// Every pattern literal of the module spells its classes in ASCII ([`super::regex`]).
    #[test]
    fn no_pattern_uses_a_unicode_perl_class() {
        let sources = [
            include_str!("ck.rs"),
            include_str!("cublas.rs"),
            include_str!("cutlass.rs"),
            include_str!("igemm.rs"),
            include_str!("mod.rs"),
            include_str!("nvjet.rs"),
            include_str!("scan.rs"),
            include_str!("tensile.rs"),
            include_str!("triton.rs"),
            include_str!("xmma.rs"),
        ];
        let mut literals = 0;
        for src in sources {
            // Every raw string literal (the patterns are the module's only ones).
            for lit in src.split("r\"").skip(1) {
                let pattern = lit.split('"').next().unwrap_or_default();
                literals += 1;
                for class in ["\\d", "\\w", "\\s", "\\D", "\\W", "\\S", "\\b"] {
                    let bare = pattern.replace(&format!("(?-u:{class})"), "");
                    assert!(!bare.contains(class), "{class} in {pattern}");
                }
            }
        }
        assert!(literals >= 40, "only {literals} pattern literals found");
    }
}
