//! One benchmark case (a kernel at given sizes, dtype and options) and the user's
//! selection that produces cases. A case names its kernel by [`KernelRef`]: a suite
//! kernel's [`KernelId`], or a spec'd kernel's name.

use crate::suite::KernelId;
use rooftop_core::ops::quant::WeightFormat;
use rooftop_core::units::Precision;
use serde::{Serialize, Serializer};
use std::fmt;

/// The kernel a case runs: one of the suite's, or a user's kernel from a spec file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum KernelRef {
    /// A kernel of the suite.
    Suite(KernelId),
    /// A spec'd kernel (`rooftop bench --spec`), by the spec's name (never a suite name).
    Spec(&'static str),
}

impl KernelRef {
    /// The kernel's name (`triad`, or the spec's name).
    pub fn name(self) -> &'static str {
        match self {
            KernelRef::Suite(id) => id.name(),
            KernelRef::Spec(name) => name,
        }
    }

    /// The suite kernel, if this is one.
    pub fn suite(self) -> Option<KernelId> {
        match self {
            KernelRef::Suite(id) => Some(id),
            KernelRef::Spec(_) => None,
        }
    }
}

impl From<KernelId> for KernelRef {
    fn from(id: KernelId) -> KernelRef {
        KernelRef::Suite(id)
    }
}

impl PartialEq<KernelId> for KernelRef {
    fn eq(&self, id: &KernelId) -> bool {
        *self == KernelRef::Suite(*id)
    }
}

impl fmt::Display for KernelRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl Serialize for KernelRef {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

/// A kernel at one configuration.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Case {
    /// The kernel (serialised as its name: `triad`, `gemm`, `qmatvec`).
    pub kernel: KernelRef,
    /// Size parameters in the kernel's own order (`[("m", 128), ("n", 4096), ("k", 4096)]`).
    pub sizes: Vec<(&'static str, u64)>,
    /// Element precision of the computation (the activations for quantized kernels).
    pub dtype: Precision,
    /// Weight format of quantized kernels.
    #[serde(skip_serializing_if = "Option::is_none", serialize_with = "ser_weights")]
    pub weights: Option<WeightFormat>,
    /// A kernel-specific variant (`scalar` / `vector` for `fma`), if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub variant: Option<&'static str>,
}

#[allow(clippy::ref_option)]
fn ser_weights<S: serde::Serializer>(w: &Option<WeightFormat>, s: S) -> Result<S::Ok, S::Error> {
    match w {
        Some(w) => s.serialize_str(&w.label()),
        None => s.serialize_none(),
    }
}

impl Case {
    /// The value of size parameter `name`; panics if the kernel does not have it (a bug
    /// in the suite, not bad input).
    pub fn size(&self, name: &str) -> u64 {
        self.sizes.iter().find(|(k, _)| *k == name).map_or_else(
            || panic!("kernel {} has no size parameter `{name}`", self.kernel),
            |(_, v)| *v,
        )
    }

    /// `usize` view of [`Case::size`].
    pub fn size_usize(&self, name: &str) -> usize {
        usize::try_from(self.size(name)).unwrap_or(usize::MAX)
    }

    /// A short label: `m=128 n=4096 k=4096 fp32 int4-g128`.
    pub fn label(&self) -> String {
        let mut s: Vec<String> = self.sizes.iter().map(|(k, v)| format!("{k}={v}")).collect();
        s.push(self.dtype.as_str().to_string());
        if let Some(w) = self.weights {
            s.push(w.label());
        }
        if let Some(v) = self.variant {
            s.push(v.to_string());
        }
        s.join(" ")
    }
}

/// What the user asked for on the command line; each kernel turns it into cases.
/// Every field is optional: `None` means "the kernel's default".
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Selection {
    /// `--single-config 128,4096,4096`: one value per size parameter, in order.
    pub single_config: Option<Vec<u64>>,
    /// `--sizes 1M,16M`: problem sizes in elements (each kernel says how it maps them).
    pub sizes: Option<Vec<u64>>,
    /// `--dtype`.
    pub dtype: Option<Precision>,
    /// `--bits` (quantized kernels).
    pub bits: Option<u32>,
    /// `--group-size` (quantized kernels).
    pub group_size: Option<u32>,
    /// `--wformat q4_0|q8_0|affine` (quantized kernels).
    pub wformat: Option<String>,
    /// `--variant` (kernel-specific).
    pub variant: Option<String>,
}
