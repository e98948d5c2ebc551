//! Work models: for each operation, the FLOPs it must execute and the minimum bytes it
//! must move through device memory (each input read once, each output written once),
//! with the formula that produced them.
//!
//! One module per operation, each a plain spec struct with `pub` fields and a
//! `work(&self) -> Result<Work, OpError>`: [`gemm`], [`quant`] (quantized GEMM bytes, fused
//! vs unfused dequantization), [`attention`] (FlashAttention counting, exact causal pairs),
//! [`conv`], [`norm`] / [`softmax`] / [`elementwise`], [`reduction`], [`copy`]; each
//! formula is in docs/reference/formulas.md#work-models with a worked example. Where
//! TraceLens (AMD-AGI/TraceLens `perf_model.py`) models the same op, the module's tests
//! check our numbers against its golden CSVs
//! (`fixtures/kineto/tracelens_*/*_perf_report_csvs/`) and explain every difference.
//!
//! Invariants: `flops >= 0`, `bytes_read >= 0`, `bytes_written >= 0`, all finite for
//! any accepted input (`work()` rejects zero dimensions with [`OpError::ZeroDim`],
//! contradictory options with [`OpError::Invalid`] and counts beyond 128 bits with
//! [`OpError::Overflow`], and never panics: all counting is exact checked `u128`
//! arithmetic, with bytes kept in bits until the end so sub-byte formats stay exact);
//! the formulas show the arithmetic with the numbers substituted.

use crate::units::{ExecUnit, Precision};
use serde::Serialize;

pub mod attention;
pub mod conv;
pub mod copy;
mod count;
pub mod elementwise;
pub mod gemm;
pub mod norm;
pub mod quant;
pub mod reduction;
pub mod request;
pub mod softmax;

#[cfg(test)]
mod circulated_figures;
#[cfg(test)]
mod proptests;

/// The class of an operation: selects the expected-efficiency band
/// (docs/reference/formulas.md#diagnosis-thresholds-rooftops-conventions) and the
/// advice the diagnosis gives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum OpClass {
    Gemm,
    QuantizedGemm,
    QuantizedMatvec,
    Attention,
    Conv,
    RmsNorm,
    LayerNorm,
    Softmax,
    Elementwise,
    Reduction,
    Copy,
}

impl OpClass {
    pub fn as_str(self) -> &'static str {
        match self {
            OpClass::Gemm => "gemm",
            OpClass::QuantizedGemm => "quantized gemm",
            OpClass::QuantizedMatvec => "quantized matvec",
            OpClass::Attention => "attention",
            OpClass::Conv => "conv",
            OpClass::RmsNorm => "rmsnorm",
            OpClass::LayerNorm => "layernorm",
            OpClass::Softmax => "softmax",
            OpClass::Elementwise => "elementwise",
            OpClass::Reduction => "reduction",
            OpClass::Copy => "copy",
        }
    }
}

/// The cost of one operation.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Work {
    pub class: OpClass,
    /// Human-readable shape (`M=1 N=4096 K=4096 bf16`).
    pub shape: String,
    /// Floating-point (or integer) operations, counted as 2 per multiply-add.
    pub flops: f64,
    /// The precision whose roof applies to `flops`.
    pub precision: Precision,
    /// The unit that executes `flops`.
    pub unit: ExecUnit,
    /// Minimum bytes read from device memory.
    pub bytes_read: f64,
    /// Minimum bytes written to device memory.
    pub bytes_written: f64,
    /// FLOP formula with numbers substituted (`2*M*N*K = 2*1*4096*4096`).
    pub flops_formula: String,
    /// Byte formula with numbers substituted.
    pub bytes_formula: String,
    /// Assumptions the model makes (what counts as read once, what is ignored).
    pub assumptions: Vec<String>,
}

impl Work {
    /// Total minimum DRAM traffic in bytes.
    pub fn bytes(&self) -> f64 {
        self.bytes_read + self.bytes_written
    }

    /// FLOPs per byte of DRAM traffic (infinite when no bytes move).
    pub fn arithmetic_intensity(&self) -> f64 {
        let b = self.bytes();
        if b > 0.0 {
            self.flops / b
        } else if self.flops > 0.0 {
            f64::INFINITY
        } else {
            0.0
        }
    }
}

/// Why a work model rejected its input.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OpError {
    /// A dimension was zero (the message names it).
    #[error("`{name}` must be at least 1, got {value}")]
    ZeroDim { name: &'static str, value: u64 },
    /// The shape is too large to count exactly.
    #[error("the shape overflows: {0}")]
    Overflow(String),
    /// Flags that contradict each other.
    #[error("{0}")]
    Invalid(String),
}
