//! Compute probes: the `fma` kernel in fp32 and fp64, `vector` (and `scalar` in full
//! mode); GFLOP/s = 2 x FMAs / best sample's time, beside the theoretical figures of the
//! options.

use super::measure::Runner;
use super::options::CeilingOptions;
use super::{Ceilings, ComputeCeiling};
use crate::error::BenchError;
use crate::suite::KernelId;
use rooftop_core::units::Precision;

/// The FMA peaks, recorded in `c.compute` (a precision the backend lacks gets a note).
pub(crate) fn fma_peaks(
    run: &mut Runner<'_, '_>,
    opts: &CeilingOptions,
    c: &mut Ceilings,
) -> Result<(), BenchError> {
    let variants: &[bool] = if opts.quick { &[false] } else { &[false, true] };
    let fma = run.has(KernelId::Fma, &mut c.notes);
    for p in [Precision::Fp32, Precision::Fp64] {
        if !fma {
            break;
        }
        for &scalar in variants {
            if run.stopped() {
                break;
            }
            let case = opts.fma_case(p, scalar);
            let variant = if scalar { "scalar" } else { "vector" };
            // A backend without this precision (WGSL has no fp64 on most GPUs) skips the
            // peak with a note instead of failing the whole measurement.
            let seconds = match run.best(&case, &mut c.notes) {
                Ok(Some(s)) => s,
                Ok(None) => continue,
                Err(BenchError::Backend(e)) => {
                    c.notes.push(format!("fma {} {variant}: not measured: {e}", p.as_str()));
                    continue;
                }
                Err(e) => return Err(e),
            };
            let work = KernelId::Fma.def().work(&case)?;
            let t = opts.theoretical.iter().find(|t| t.precision == p && t.variant == variant);
            c.compute.push(ComputeCeiling {
                precision: p,
                variant: variant.to_string(),
                gflops: work.flops / seconds / 1e9,
                theoretical_gflops: t.map(|t| t.gflops),
                theoretical_formula: t.map(|t| t.formula.clone()),
            });
        }
    }
    Ok(())
}
