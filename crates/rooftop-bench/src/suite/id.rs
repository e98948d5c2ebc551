//! The registry of suite kernels: [`KernelId`] names every kernel of the suite, and is
//! what cases, backends and spec files refer to a kernel by.
//!
//! Invariants: [`KernelId::name`] is the only place a kernel's name is written (what
//! `--kernel` takes, what exports print, what a spec's `work.op` names); [`KernelId::ALL`]
//! lists every id once, in `rooftop bench --list` order; [`KernelId::def`] is the
//! definition of the kernel (its size parameters, buffers, reference, tolerance and work
//! model, [`Kernel`]), whose `id` is the same id. Each backend keeps a table of its
//! implementations keyed by id (`cpu::kernels`, `cuda::plan`, `wgpu::kernels`).

use super::{fma, gemm, norm, probe, quant, reduce, softmax, stream, Kernel};
use crate::error::SuiteError;
use serde::{Serialize, Serializer};
use std::fmt;
use std::str::FromStr;

/// A kernel of the suite.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum KernelId {
    /// Sum of `n` elements (read-only bandwidth).
    Read,
    /// Fill of `n` elements (write-only bandwidth).
    Write,
    /// STREAM copy.
    Copy,
    /// STREAM scale.
    Scale,
    /// STREAM add.
    Add,
    /// STREAM triad.
    Triad,
    /// SiLU over `n` elements.
    Silu,
    /// GELU (tanh form) over `n` elements.
    Gelu,
    /// RMSNorm of rows.
    RmsNorm,
    /// LayerNorm of rows.
    LayerNorm,
    /// Softmax of rows, three passes.
    Softmax,
    /// Softmax of rows, online max and sum.
    SoftmaxOnline,
    /// Sum of each row.
    RowSum,
    /// Dense GEMM.
    Gemm,
    /// fp16 GEMM with fp32 accumulation.
    Hgemm,
    /// Quantized matrix-vector product.
    Qmatvec,
    /// Quantized GEMM.
    Qgemm,
    /// FMA-chain compute probe.
    Fma,
    /// Pointer-chasing latency probe.
    Chase,
}

impl KernelId {
    /// Every suite kernel, in display order.
    pub const ALL: [KernelId; 19] = [
        KernelId::Read,
        KernelId::Write,
        KernelId::Copy,
        KernelId::Scale,
        KernelId::Add,
        KernelId::Triad,
        KernelId::Silu,
        KernelId::Gelu,
        KernelId::RmsNorm,
        KernelId::LayerNorm,
        KernelId::Softmax,
        KernelId::SoftmaxOnline,
        KernelId::RowSum,
        KernelId::Gemm,
        KernelId::Hgemm,
        KernelId::Qmatvec,
        KernelId::Qgemm,
        KernelId::Fma,
        KernelId::Chase,
    ];

    /// The kernel's name: what `--kernel` takes, exports print and a spec's `work.op`
    /// names.
    pub const fn name(self) -> &'static str {
        match self {
            KernelId::Read => "read",
            KernelId::Write => "write",
            KernelId::Copy => "copy",
            KernelId::Scale => "scale",
            KernelId::Add => "add",
            KernelId::Triad => "triad",
            KernelId::Silu => "silu",
            KernelId::Gelu => "gelu",
            KernelId::RmsNorm => "rmsnorm",
            KernelId::LayerNorm => "layernorm",
            KernelId::Softmax => "softmax",
            KernelId::SoftmaxOnline => "softmax-online",
            KernelId::RowSum => "rowsum",
            KernelId::Gemm => "gemm",
            KernelId::Hgemm => "hgemm",
            KernelId::Qmatvec => "qmatvec",
            KernelId::Qgemm => "qgemm",
            KernelId::Fma => "fma",
            KernelId::Chase => "chase",
        }
    }

    /// The kernel's definition: size parameters, buffers, reference, tolerance, work.
    pub fn def(self) -> &'static dyn Kernel {
        match self {
            KernelId::Read => &stream::READ,
            KernelId::Write => &stream::WRITE,
            KernelId::Copy => &stream::COPY,
            KernelId::Scale => &stream::SCALE,
            KernelId::Add => &stream::ADD,
            KernelId::Triad => &stream::TRIAD,
            KernelId::Silu => &stream::SILU,
            KernelId::Gelu => &stream::GELU,
            KernelId::RmsNorm => &norm::RMSNORM,
            KernelId::LayerNorm => &norm::LAYERNORM,
            KernelId::Softmax => &softmax::SOFTMAX,
            KernelId::SoftmaxOnline => &softmax::SOFTMAX_ONLINE,
            KernelId::RowSum => &reduce::ROWSUM,
            KernelId::Gemm => &gemm::Gemm,
            KernelId::Hgemm => &gemm::Hgemm,
            KernelId::Qmatvec => &quant::QMATVEC,
            KernelId::Qgemm => &quant::QGEMM,
            KernelId::Fma => &fma::FMA,
            KernelId::Chase => &probe::CHASE,
        }
    }
}

impl fmt::Display for KernelId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl Serialize for KernelId {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl FromStr for KernelId {
    type Err = SuiteError;

    /// The kernel called `name` (case-insensitive), or an error with the closest names.
    fn from_str(name: &str) -> Result<KernelId, SuiteError> {
        if let Some(k) = KernelId::ALL.iter().find(|k| k.name().eq_ignore_ascii_case(name)) {
            return Ok(*k);
        }
        let lower = name.to_ascii_lowercase();
        let mut scored: Vec<(f64, &str)> = KernelId::ALL
            .iter()
            .map(|k| (strsim::jaro_winkler(&lower, k.name()), k.name()))
            .collect();
        scored.sort_by(|a, b| b.0.total_cmp(&a.0));
        let suggestions = scored
            .iter()
            .filter(|(s, _)| *s > 0.7)
            .take(3)
            .map(|(_, n)| (*n).to_string())
            .collect();
        Err(SuiteError::UnknownKernel { name: name.to_string(), suggestions })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_id_parses_from_its_name_and_defines_itself() {
        for id in KernelId::ALL {
            assert_eq!(id.name().parse::<KernelId>().unwrap(), id);
            assert_eq!(id.name().to_ascii_uppercase().parse::<KernelId>().unwrap(), id);
            assert_eq!(id.def().id().suite(), Some(id), "{id}");
        }
        let mut names: Vec<&str> = KernelId::ALL.iter().map(|k| k.name()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), KernelId::ALL.len());
    }

    #[test]
    fn unknown_names_suggest_close_ones() {
        // User input with a typo: the error names the input and the nearest kernel.
        let e = "triadd".parse::<KernelId>().unwrap_err();
        assert!(e.to_string().starts_with("unknown kernel `triadd` (did you mean triad"), "{e}");
        let SuiteError::UnknownKernel { suggestions, .. } =
            "sofmax".parse::<KernelId>().unwrap_err()
        else {
            panic!()
        };
        assert_eq!(suggestions.first().map(String::as_str), Some("softmax"));
        let e = "zzzz".parse::<KernelId>().unwrap_err();
        assert_eq!(e.to_string(), "unknown kernel `zzzz`");
    }
}
