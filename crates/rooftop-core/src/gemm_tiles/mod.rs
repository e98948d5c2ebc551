//! GEMM tile and wave quantization (TraceLens, seed 001) with macro tiles parsed from
//! kernel names of every family in `reference/hardware.md` §3.
//!
//! INTERFACE SKELETON: bodies are filled in by the gemm_tiles work.

use serde::Serialize;

/// The library family a GEMM kernel name belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum KernelFamily {
    Tensile,
    TensilePostGsu,
    Nvjet,
    CublasXmma,
    Cutlass3,
    Cutlass2,
    CublasLegacy,
    ComposableKernel,
    CkTile,
    Triton,
    MiopenIgemm,
}

/// Whether an operand is transposed in the BLAS (column-major) view.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum Transpose {
    N,
    T,
}

/// What a GEMM kernel name says about its tiling.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GemmKernelInfo {
    pub family: KernelFamily,
    /// Macro (CTA / workgroup) tile along the kernel's own M.
    pub mt_m: Option<u32>,
    pub mt_n: Option<u32>,
    pub mt_k: Option<u32>,
    pub stages: Option<u32>,
    /// op(A), op(B) as the name encodes them.
    pub layout: Option<(Transpose, Transpose)>,
    /// Split-K factor (Tensile GSU, Triton NUM_KSPLIT); None when not split.
    pub split_k: Option<u32>,
    /// Stream-K / persistent scheduling: classical wave quantization does not apply.
    pub stream_k: bool,
    /// The tile spans two SMs (Blackwell 2-CTA / `_2sm`).
    pub two_sm: bool,
    /// Whether the name came from a column-major BLAS library (cuBLAS/cuBLASLt/rocBLAS/
    /// hipBLASLt), which swaps PyTorch's M and N.
    pub blas_column_major: bool,
    /// Notes on what was assumed or could not be read.
    pub notes: Vec<String>,
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
    /// None for stream-K / persistent kernels (wave quantization does not apply).
    pub waves: Option<u64>,
    pub wq_eff: Option<f64>,
    /// tile_eff * wq_eff (tile_eff alone when wq_eff is None).
    pub dim_eff: f64,
    pub notes: Vec<String>,
}

/// Inputs to [`tile_efficiency`], in the kernel's (BLAS) view of M and N.
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
pub fn parse_kernel_name(name: &str) -> Option<GemmKernelInfo> {
    let _ = name;
    todo!("gemm_tiles work")
}

/// Tile and wave quantization efficiency (seed 001 formulas).
pub fn tile_efficiency(p: &TileProblem) -> Option<TileEfficiency> {
    let _ = p;
    todo!("gemm_tiles work")
}
