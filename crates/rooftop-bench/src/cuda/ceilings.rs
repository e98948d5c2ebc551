//! What the ceilings measure on a CUDA device: L2 as the cache level, the theoretical FMA
//! peaks, and tensor-core GEMM probes through cuBLASLt.

use super::info::DeviceAttributes;
use super::plan;
use crate::ceilings::{CeilingOptions, MatrixProbe};
use crate::cpu::info::TheoreticalPeak;
use crate::harness::TimingOptions;
use rooftop_core::device::{DeviceSpec, MemLevel};
use rooftop_core::units::{ExecUnit, Precision};

/// Ceilings options for a device (see [`CudaBackend::ceiling_options`](super::CudaBackend::ceiling_options)).
pub fn ceiling_options_for(
    attrs: &DeviceAttributes,
    spec: Option<&DeviceSpec>,
    blas: bool,
    quick: bool,
    timing: TimingOptions,
) -> CeilingOptions {
    let mut o = CeilingOptions::new(quick, timing);
    // 65536 dependent FMAs per thread: about 0.1 ms per launch on an H100-class GPU.
    o.fma_iters_factor = 16;
    o.overhead_bound_factor = Some(8.0);
    let mut notes = Vec::new();
    if attrs.l2_bytes > 0 {
        o.cache_levels = vec![(MemLevel::L2, attrs.l2_bytes)];
        o.max_working_set = Some((8 * attrs.l2_bytes).max(1 << 30));
        notes.push(format!(
            "L2 ({} MiB) is the cache level of the sweep; DRAM points are working sets of at least 4x L2",
            attrs.l2_bytes >> 20
        ));
    }
    for p in [Precision::Fp32, Precision::Fp64] {
        if let Some(t) = attrs.fma_peak(p) {
            o.theoretical.push(TheoreticalPeak {
                precision: p,
                variant: "vector",
                gflops: t.gflops,
                formula: t.formula,
            });
        }
    }
    if blas {
        let side = if quick { 4096 } else { 8192 };
        let mut kinds = vec![
            (Precision::Fp16, (7, 0)),
            (Precision::Bf16, (8, 0)),
            (Precision::Tf32, (8, 0)),
            (Precision::Fp8, (8, 9)),
        ];
        kinds.retain(|&(_, cc)| attrs.compute_capability >= cc);
        for (p, _) in kinds {
            let peak = spec.and_then(|s| s.peak(p, ExecUnit::Matrix));
            o.matrix.push(MatrixProbe {
                implementation: plan::CUBLASLT.to_string(),
                precision: p,
                shape: (side, side, side),
                label: format!(
                    "tensor cores: cuBLASLt {} {side}x{side}x{side}, fp32 accumulate, random inputs in [-1, 1)",
                    p.as_str()
                ),
                theoretical_gflops: peak.map(|r| r.tflops * 1e3),
                theoretical_formula: peak.map(|r| format!("catalog {} {}_matrix: {}", spec.map_or("", |s| s.id.as_str()), p.as_str(), r.meta.source)),
            });
        }
    } else {
        notes.push("tensor-core peaks not measured: cuBLASLt is not loadable".to_string());
    }
    o.notes = notes;
    o
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cuda::info;

    #[test]
    fn h100_ceiling_options() {
        let a = info::h100_sxm_attributes();
        let spec = a.catalog_match(rooftop_core::device::Catalog::builtin());
        let o = ceiling_options_for(&a, spec.as_ref(), true, false, TimingOptions::default());
        assert_eq!(o.cache_levels, vec![(MemLevel::L2, 50 << 20)]);
        // At least 4x L2 (DRAM points) and at least 1 GiB.
        assert_eq!(o.max_working_set, Some(1 << 30));
        let kinds: Vec<Precision> = o.matrix.iter().map(|m| m.precision).collect();
        assert_eq!(kinds, [Precision::Fp16, Precision::Bf16, Precision::Tf32, Precision::Fp8]);
        let bf16 = &o.matrix[1];
        assert_eq!(bf16.shape, (8192, 8192, 8192));
        assert!((bf16.theoretical_gflops.unwrap() - 989_400.0).abs() < 1.0);
        assert_eq!(o.theoretical.len(), 2);
        // A T4-like device (CC 7.5) gets fp16 only; without cuBLASLt none.
        let t4 = DeviceAttributes { compute_capability: (7, 5), ..a.clone() };
        assert_eq!(
            ceiling_options_for(&t4, None, true, true, TimingOptions::default()).matrix.len(),
            1
        );
        let o = ceiling_options_for(&a, None, false, true, TimingOptions::default());
        assert!(o.matrix.is_empty() && o.notes.iter().any(|n| n.contains("cuBLASLt")));
    }
}
