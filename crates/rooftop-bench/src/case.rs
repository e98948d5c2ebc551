//! One benchmark case (a kernel at given sizes, dtype and options) and the user's
//! selection that produces cases. A case names its kernel by [`KernelRef`]: a suite
//! kernel's [`KernelId`], or a spec'd kernel's name.

use crate::suite::KernelId;
use rooftop_core::ops::quant::WeightFormat;
use rooftop_core::units::Precision;
use serde::{Serialize, Serializer};
use std::fmt;
use std::str::FromStr;

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
    pub wformat: Option<WeightFormatKind>,
    /// `--variant` (kernel-specific).
    pub variant: Option<Variant>,
}

/// `--wformat`: which family of weight formats the quantized kernels run. A family, not a
/// whole [`WeightFormat`]: `affine` takes its bits, group size and zero points from
/// `--bits`, `--group-size` and `--variant`. Parsed case-insensitively from its name.
#[allow(non_camel_case_types)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WeightFormatKind {
    /// `affine`: integer weights with one fp16 scale per group ([`WeightFormat::Affine`]).
    Affine,
    /// `q4_0`: GGML Q4_0 ([`WeightFormat::Q4_0`]).
    Q4_0,
    /// `q8_0`: GGML Q8_0 ([`WeightFormat::Q8_0`]).
    Q8_0,
}

impl WeightFormatKind {
    /// Every kind, in the order the error messages list them.
    pub const ALL: [WeightFormatKind; 3] =
        [WeightFormatKind::Affine, WeightFormatKind::Q4_0, WeightFormatKind::Q8_0];

    /// The flag's spelling: `affine`, `q4_0`, `q8_0`.
    pub fn name(self) -> &'static str {
        match self {
            WeightFormatKind::Affine => "affine",
            WeightFormatKind::Q4_0 => "q4_0",
            WeightFormatKind::Q8_0 => "q8_0",
        }
    }
}

impl fmt::Display for WeightFormatKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A `--wformat` value that is not a known family.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown weight format `{0}` (expected affine, q4_0 or q8_0)")]
pub struct UnknownWeightFormat(pub String);

impl FromStr for WeightFormatKind {
    type Err = UnknownWeightFormat;

    fn from_str(s: &str) -> Result<WeightFormatKind, UnknownWeightFormat> {
        WeightFormatKind::ALL
            .into_iter()
            .find(|k| k.name().eq_ignore_ascii_case(s.trim()))
            .ok_or_else(|| UnknownWeightFormat(s.to_string()))
    }
}

/// `--variant`: a kernel-specific variant. Each kernel takes its own (`fma`: vector or
/// scalar; `qmatvec`/`qgemm`: zp or sym) and refuses the others. Parsed
/// case-insensitively from its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Variant {
    /// `vector` (`fma`): the FMA chains on SIMD lanes.
    Vector,
    /// `scalar` (`fma`): the FMA chains on scalar registers.
    Scalar,
    /// `zp` (quantized kernels): one stored zero point per group.
    Zp,
    /// `sym` (quantized kernels): symmetric weights, the implicit zero point.
    Sym,
}

impl Variant {
    /// Every variant, in the order the error messages list them.
    pub const ALL: [Variant; 4] = [Variant::Vector, Variant::Scalar, Variant::Zp, Variant::Sym];

    /// The flag's spelling: `vector`, `scalar`, `zp`, `sym`.
    pub fn name(self) -> &'static str {
        match self {
            Variant::Vector => "vector",
            Variant::Scalar => "scalar",
            Variant::Zp => "zp",
            Variant::Sym => "sym",
        }
    }
}

impl fmt::Display for Variant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A `--variant` value that no kernel has.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown variant `{0}` (expected vector or scalar for fma, zp or sym for qmatvec and qgemm)"
)]
pub struct UnknownVariant(pub String);

impl FromStr for Variant {
    type Err = UnknownVariant;

    fn from_str(s: &str) -> Result<Variant, UnknownVariant> {
        Variant::ALL
            .into_iter()
            .find(|v| v.name().eq_ignore_ascii_case(s.trim()))
            .ok_or_else(|| UnknownVariant(s.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flag_values_parse_from_their_names_in_any_case() {
        for k in WeightFormatKind::ALL {
            assert_eq!(k.to_string().parse::<WeightFormatKind>(), Ok(k));
            assert_eq!(k.name().to_ascii_uppercase().parse::<WeightFormatKind>(), Ok(k));
        }
        for v in Variant::ALL {
            assert_eq!(v.to_string().parse::<Variant>(), Ok(v));
            assert_eq!(v.name().to_ascii_uppercase().parse::<Variant>(), Ok(v));
        }
        // What the help texts of --wformat and --variant list, spelled out by hand.
        assert_eq!("Q4_0".parse::<WeightFormatKind>(), Ok(WeightFormatKind::Q4_0));
        assert_eq!("zp".parse::<Variant>(), Ok(Variant::Zp));
        let e = "q9".parse::<WeightFormatKind>().unwrap_err().to_string();
        assert_eq!(e, "unknown weight format `q9` (expected affine, q4_0 or q8_0)");
        let e = "nope".parse::<Variant>().unwrap_err().to_string();
        assert!(e.starts_with("unknown variant `nope` (expected vector or scalar"), "{e}");
    }
}
