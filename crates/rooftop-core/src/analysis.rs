//! One kernel through the whole pipeline: work → roofline → tile/wave efficiency →
//! occupancy → diagnosis.
//!
//! Every reader (trace, counters, bench) ends by building a [`KernelRequest`] and calling
//! [`analyze`]; every renderer consumes the resulting [`Analysis`].

use crate::device::{DeviceSpec, MemLevel};
use crate::diagnose::{diagnose, DiagnoseInput, Finding};
use crate::gemm_tiles::{self, GemmKernelInfo, TileEfficiency};
use crate::occupancy::{self, KernelResources, Occupancy};
use crate::ops::quant::DequantFusion;
use crate::ops::Work;
use crate::roofline::{roofline, Roofline, RooflineError};
use serde::Serialize;

/// In which view the GEMM's M and N are given.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum GemmView {
    /// As the kernel (BLAS library) sees them; no swap.
    #[default]
    Blas,
    /// As PyTorch states them (row-major; `aten::mm` M = output rows). Swapped before
    /// the tile math when the kernel comes from a column-major BLAS library.
    Torch,
}

/// The GEMM problem, for tile/wave efficiency.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct GemmShape {
    pub m: u64,
    pub n: u64,
    pub batch: u64,
    pub view: GemmView,
}

/// Everything known about one kernel.
#[derive(Debug, Clone)]
pub struct KernelRequest {
    pub work: Work,
    /// Measured duration (None: floor and bound only).
    pub time_ns: Option<u64>,
    pub kernel_name: Option<String>,
    pub gemm: Option<GemmShape>,
    pub resources: Option<KernelResources>,
    /// Resident tiles per compute unit for the wave math (1 for big GEMM tiles).
    pub ctas_per_cu: u32,
    /// Bytes at other memory levels, from counters.
    pub level_bytes: Vec<(MemLevel, f64)>,
    /// For quantized GEMMs: fused vs dequantize-then-matmul traffic (fusion advice).
    pub dequant_fusion: Option<DequantFusion>,
}

impl KernelRequest {
    /// A request for `work` with nothing else known.
    pub fn new(work: Work) -> KernelRequest {
        KernelRequest {
            work,
            time_ns: None,
            kernel_name: None,
            gemm: None,
            resources: None,
            ctas_per_cu: 1,
            level_bytes: Vec::new(),
            dequant_fusion: None,
        }
    }
}

/// The device as the analysis used it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DeviceRef {
    pub id: String,
    pub name: String,
    pub num_cu: u32,
    pub cu_kind: String,
}

/// Tile/wave efficiency with the problem as the kernel saw it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TileReport {
    /// M and N after the BLAS swap (when applied).
    pub kernel_m: u64,
    pub kernel_n: u64,
    pub swapped: bool,
    #[serde(flatten)]
    pub efficiency: TileEfficiency,
}

/// The result of analysing one kernel.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Analysis {
    pub device: DeviceRef,
    pub work: Work,
    pub roofline: Roofline,
    pub kernel_name: Option<String>,
    pub gemm_kernel: Option<GemmKernelInfo>,
    pub tiles: Option<TileReport>,
    pub occupancy: Option<Occupancy>,
    /// Why occupancy was not computed although resources were given.
    pub occupancy_note: Option<String>,
    pub findings: Vec<Finding>,
}

/// Why an analysis could not be made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AnalysisError {
    #[error(transparent)]
    Roofline(#[from] RooflineError),
    #[error("occupancy: {0}")]
    Occupancy(#[from] occupancy::OccupancyError),
}

/// Analyses one kernel on `device`.
///
/// Occupancy problems that come from the device (no model for Apple9, Intel) are kept
/// as a note; invalid launch parameters (more threads than a block may have) are errors.
///
/// # Analyze an op
///
/// A 4096³ BF16 GEMM on an H100 SXM that took 200 µs: 2·M·N·K FLOPs, A, B and C moved
/// once (2 bytes each), compute-bound (its arithmetic intensity, 4096/3 FLOP/byte, is
/// far above the ridge point).
///
/// ```
/// use rooftop_core::analysis::{analyze, KernelRequest};
/// use rooftop_core::device::Catalog;
/// use rooftop_core::ops::gemm::GemmSpec;
/// use rooftop_core::roofline::Bound;
/// use rooftop_core::units::{ExecUnit, Precision};
///
/// let catalog = Catalog::builtin();
/// let h100 = catalog.lookup("h100-sxm")?;
/// let n = 4096;
/// let gemm = GemmSpec {
///     m: n, n, k: n, batch: 1,
///     dtype: Precision::Bf16, out_dtype: None, bias: false, unit: None,
/// };
/// let mut request = KernelRequest::new(gemm.work()?);
/// request.time_ns = Some(200_000);
/// let a = analyze(h100, &request)?;
///
/// let nf = n as f64;
/// assert_eq!(a.roofline.flops, 2.0 * nf * nf * nf); // 137.4 GFLOP
/// assert_eq!(a.roofline.bytes, 3.0 * nf * nf * 2.0); // 100.7 MB
/// assert!((a.roofline.arithmetic_intensity - nf / 3.0).abs() < 1e-9);
/// assert_eq!(a.roofline.bound, Bound::Compute);
/// // The floor is the FLOPs at the BF16 tensor-core peak; 200 µs is 687 TFLOP/s.
/// let peak = h100.peak(Precision::Bf16, ExecUnit::Matrix).expect("H100 has BF16 MMA").tflops;
/// assert!((a.roofline.compute_floor_us - a.roofline.flops / (peak * 1e6)).abs() < 1e-6);
/// let achieved = a.roofline.achieved.expect("timed");
/// assert!((achieved.achieved_tflops - 687.19).abs() < 0.01);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn analyze(device: &DeviceSpec, req: &KernelRequest) -> Result<Analysis, AnalysisError> {
    let roof = roofline(&req.work, device, req.time_ns, &req.level_bytes)?;
    let gemm_kernel = req.kernel_name.as_deref().and_then(gemm_tiles::parse_kernel_name);
    let tiles = tile_report(device, req, gemm_kernel.as_ref());
    let (occ, occupancy_note) = match &req.resources {
        Some(res) => match occupancy::occupancy(device, res) {
            Ok(o) => (Some(o), None),
            Err(occupancy::OccupancyError::Unsupported(why)) => (None, Some(why)),
            Err(e) => return Err(e.into()),
        },
        None => (None, None),
    };
    let findings = diagnose(&DiagnoseInput {
        device,
        work: &req.work,
        roofline: &roof,
        tiles: tiles.as_ref().map(|t| &t.efficiency),
        occupancy: occ.as_ref(),
        dequant_fusion: req.dequant_fusion.as_ref(),
    });
    Ok(Analysis {
        device: DeviceRef {
            id: device.id.clone(),
            name: device.name.clone(),
            num_cu: device.num_cu,
            cu_kind: device.cu_kind.clone(),
        },
        work: req.work.clone(),
        roofline: roof,
        kernel_name: req.kernel_name.clone(),
        gemm_kernel,
        tiles,
        occupancy: occ,
        occupancy_note,
        findings,
    })
}

fn tile_report(
    device: &DeviceSpec,
    req: &KernelRequest,
    info: Option<&GemmKernelInfo>,
) -> Option<TileReport> {
    let shape = req.gemm?;
    let info = info?;
    let swapped = shape.view == GemmView::Torch && info.blas_column_major;
    // `tile_problem_from_torch` swaps for column-major BLAS kernels; a shape already in
    // the kernel's view is handed over pre-swapped so the swap restores it.
    let pre_swap = shape.view == GemmView::Blas && info.blas_column_major;
    let (m, n) = if pre_swap { (shape.n, shape.m) } else { (shape.m, shape.n) };
    let problem = info.tile_problem_from_torch(
        m,
        n,
        shape.batch.max(1),
        device.num_cu,
        req.ctas_per_cu.max(1),
    )?;
    let efficiency = gemm_tiles::tile_efficiency(&problem)?;
    Some(TileReport { kernel_m: problem.m, kernel_n: problem.n, swapped, efficiency })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::Catalog;
    use crate::ops::gemm::GemmSpec;
    use crate::units::Precision;
    use proptest::prelude::*;

    proptest! {
        /// The whole pipeline never panics on any GEMM shape, time, kernel tile or launch,
        /// and every efficiency it reports lies in (0, 1].
        #[test]
        fn pipeline_never_panics_and_efficiencies_are_fractions(
            m in 0u64..=u64::MAX, n in 0u64..=u64::MAX, k in 0u64..=u64::MAX,
            small in 1u64..100_000, use_small in any::<bool>(),
            time_ns in proptest::option::of(0u64..=u64::MAX),
            mt in (1u32..1024, 1u32..1024),
            block in proptest::option::of(0u32..4096), regs in 0u32..300, smem in 0u64..300_000,
            torch in any::<bool>(),
            device in prop::sample::select(vec!["h100-sxm", "mi300x", "m1", "m4-max", "rx-7900-xt", "intel-max-1550"]),
        ) {
            let (m, n) = if use_small { (small, small / 2 + 1) } else { (m, n) };
            let Ok(work) = GemmSpec::new(m, n, k, Precision::Bf16).work() else { return Ok(()) };
            let mut req = KernelRequest::new(work);
            req.time_ns = time_ns;
            req.kernel_name = Some(format!("Cijk_Alik_Bljk_BBS_BH_MT{}x{}x64_MI32x32x8x1", mt.0, mt.1));
            req.gemm = Some(GemmShape {
                m, n, batch: 1, view: if torch { GemmView::Torch } else { GemmView::Blas },
            });
            req.resources = block.map(|b| KernelResources {
                threads_per_block: b,
                regs_per_thread: Some(regs),
                smem_bytes: smem,
                ..KernelResources::default()
            });
            let cat = Catalog::builtin();
            let dev = cat.lookup(device).unwrap();
            if let Ok(a) = analyze(dev, &req) {
                if let Some(t) = &a.tiles {
                    let e = &t.efficiency;
                    prop_assert!(e.tile_eff > 0.0 && e.tile_eff <= 1.0);
                    prop_assert!(e.dim_eff > 0.0 && e.dim_eff <= 1.0);
                    if let Some(w) = e.wq_eff { prop_assert!(w > 0.0 && w <= 1.0); }
                }
                if let Some(o) = &a.occupancy {
                    prop_assert!((0.0..=100.0).contains(&o.occupancy_pct));
                }
                prop_assert!(a.roofline.floor_time_us.is_finite());
            }
        }
    }
}
