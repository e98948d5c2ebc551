//! Shared vocabulary: numeric precisions, execution units, provenance of a number, and
//! the SI formatting every renderer and finding uses.
//!
//! Invariants: rates are decimal (`1 GB/s = 1e9 B/s`, `1 TFLOP/s = 1e12 FLOP/s`);
//! `bits()` of a storage type is exact (4-bit types are 4, not rounded to a byte).

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// A numeric format, used both for storage (bytes per element) and for selecting the
/// compute roof (which peak applies).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Precision {
    Fp64,
    Fp32,
    Tf32,
    Fp16,
    Bf16,
    Fp8,
    Fp6,
    Fp4,
    Int8,
    Int4,
}

impl Precision {
    /// Every precision, in the order the catalog lists peaks.
    pub const ALL: [Precision; 10] = [
        Precision::Fp64,
        Precision::Fp32,
        Precision::Tf32,
        Precision::Fp16,
        Precision::Bf16,
        Precision::Fp8,
        Precision::Fp6,
        Precision::Fp4,
        Precision::Int8,
        Precision::Int4,
    ];

    /// Storage size of one element in bits. TF32 is stored in 32-bit words.
    pub fn bits(self) -> u32 {
        match self {
            Precision::Fp64 => 64,
            Precision::Fp32 | Precision::Tf32 => 32,
            Precision::Fp16 | Precision::Bf16 => 16,
            Precision::Fp8 | Precision::Int8 => 8,
            Precision::Fp6 => 6,
            Precision::Fp4 | Precision::Int4 => 4,
        }
    }

    /// Storage size of one element in bytes (fractional for sub-byte formats).
    pub fn bytes(self) -> f64 {
        f64::from(self.bits()) / 8.0
    }

    /// The lower-case name used in flags, keys and JSON (`bf16`, `fp8`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            Precision::Fp64 => "fp64",
            Precision::Fp32 => "fp32",
            Precision::Tf32 => "tf32",
            Precision::Fp16 => "fp16",
            Precision::Bf16 => "bf16",
            Precision::Fp8 => "fp8",
            Precision::Fp6 => "fp6",
            Precision::Fp4 => "fp4",
            Precision::Int8 => "int8",
            Precision::Int4 => "int4",
        }
    }

    /// Integer formats count operations (OP/s), not floating-point operations.
    pub fn is_integer(self) -> bool {
        matches!(self, Precision::Int8 | Precision::Int4)
    }
}

impl fmt::Display for Precision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Microseconds (a user's measured time) to whole nanoseconds, refusing what is not a
/// time: zero, negative, NaN, or beyond what `u64` nanoseconds hold (584 years).
///
/// ```
/// use rooftop_core::units::ns_from_us;
/// assert_eq!(ns_from_us(12.5), Ok(12_500));
/// assert!(ns_from_us(0.0).is_err());
/// ```
pub fn ns_from_us(us: f64) -> Result<u64, crate::InputError> {
    if !us.is_finite() || us <= 0.0 {
        return Err(crate::InputError(format!(
            "must be a positive number of microseconds, got {us}"
        )));
    }
    let ns = (us * 1000.0).round();
    if ns < 1.0 || ns > u64::MAX as f64 {
        return Err(crate::InputError(format!(
            "{us} is outside the range rooftop can represent (1 ns to 584 years)"
        )));
    }
    Ok(ns as u64)
}

/// Error for a precision name that is not known.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown precision `{0}`: expected one of fp64, fp32, tf32, fp16, bf16, fp8, fp6, fp4, int8, int4")]
pub struct UnknownPrecision(pub String);

impl FromStr for Precision {
    type Err = UnknownPrecision;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let p = match s.trim().to_ascii_lowercase().as_str() {
            "fp64" | "f64" | "double" | "float64" => Precision::Fp64,
            "fp32" | "f32" | "float" | "float32" => Precision::Fp32,
            "tf32" => Precision::Tf32,
            "fp16" | "f16" | "half" | "float16" => Precision::Fp16,
            "bf16" | "bfloat16" => Precision::Bf16,
            "fp8" | "f8" | "e4m3" | "e5m2" | "fp8_e4m3" | "fp8_e5m2" => Precision::Fp8,
            "fp6" => Precision::Fp6,
            "fp4" | "mxfp4" | "nvfp4" => Precision::Fp4,
            "int8" | "i8" => Precision::Int8,
            "int4" | "i4" => Precision::Int4,
            _ => return Err(UnknownPrecision(s.to_string())),
        };
        Ok(p)
    }
}

/// Which hardware unit executes the FLOPs: SIMT/VALU lanes or matrix engines
/// (tensor cores, MFMA/WMMA, XMX, `simdgroup_matrix`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ExecUnit {
    Vector,
    Matrix,
}

impl ExecUnit {
    pub fn as_str(self) -> &'static str {
        match self {
            ExecUnit::Vector => "vector",
            ExecUnit::Matrix => "matrix",
        }
    }
}

impl fmt::Display for ExecUnit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where a number comes from. Every derived number rooftop prints carries one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Provenance {
    /// Computed from shapes by a work model.
    Model,
    /// Measured by a vendor profiler's hardware counters.
    Counters,
    /// Timed by rooftop, or given by the user as a measurement (`--time-us`).
    Measured,
    /// A datasheet figure from the device catalog.
    #[default]
    Catalog,
    /// A ceiling measured on this machine (`rooftop ceilings`).
    Calibrated,
    /// Read from the device's driver or the operating system at run time (CUDA device
    /// attributes, wgpu adapter limits, `/proc` and sysfs), or computed from such
    /// readings alone (DRAM bandwidth from the memory clock and bus width).
    Driver,
    /// A vendor document's per-unit rate applied by rooftop to the counts the device
    /// reports (FMA lanes per SM from the CUDA Programming Guide, a CPU's FMA pipes
    /// from its optimisation manual): the figure's source gives the formula.
    Datasheet,
}

impl Provenance {
    pub fn as_str(self) -> &'static str {
        match self {
            Provenance::Model => "model",
            Provenance::Counters => "counters",
            Provenance::Measured => "measured",
            Provenance::Catalog => "catalog",
            Provenance::Calibrated => "calibrated",
            Provenance::Driver => "driver",
            Provenance::Datasheet => "datasheet",
        }
    }
}

impl fmt::Display for Provenance {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How much a catalog figure can be trusted (docs/device-format.md, docs/reference/devices.md).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, Default,
)]
#[serde(rename_all = "lowercase")]
pub enum Confidence {
    Low,
    #[default]
    Medium,
    High,
}

impl Confidence {
    pub fn as_str(self) -> &'static str {
        match self {
            Confidence::Low => "low",
            Confidence::Medium => "medium",
            Confidence::High => "high",
        }
    }
}

impl fmt::Display for Confidence {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Formats `value` with three significant digits and an SI prefix, followed by `unit`:
/// `si(3.35e12, "B/s")` is `"3.35 TB/s"`, `si(0.000042, "s")` is `"42.0 µs"`.
/// Non-finite values print as `"n/a"`.
pub fn si(value: f64, unit: &str) -> String {
    const PREFIXES: [(f64, &str); 11] = [
        (1e18, "E"),
        (1e15, "P"),
        (1e12, "T"),
        (1e9, "G"),
        (1e6, "M"),
        (1e3, "k"),
        (1.0, ""),
        (1e-3, "m"),
        (1e-6, "µ"),
        (1e-9, "n"),
        (1e-12, "p"),
    ];
    if !value.is_finite() {
        return "n/a".to_string();
    }
    if value == 0.0 {
        return format!("0 {unit}");
    }
    let mag = value.abs();
    // Choose the prefix after rounding to 3 significant digits, so 999.96 becomes "1.00 k"
    // rather than "1000".
    let rounded = round_sig(mag, 3);
    let (scale, prefix) =
        PREFIXES.iter().copied().find(|(s, _)| rounded >= *s).unwrap_or((1e-12, "p"));
    let scaled = value.signum() * rounded / scale;
    let body = sig3(scaled);
    if unit.is_empty() {
        format!("{body}{prefix}")
    } else {
        format!("{body} {prefix}{unit}")
    }
}

/// Formats a duration given in microseconds: `us(42.0)` is `"42.0 µs"`, `us(1500.0)` is
/// `"1.50 ms"`.
pub fn us(micros: f64) -> String {
    si(micros * 1e-6, "s")
}

/// Formats a figure as its source gives it (a catalog's datasheet value, a count read
/// from a profiler's file): at least three significant digits and every whole digit (no
/// prefix): `as_given(0.8421)` is `"0.842"`, `as_given(42.0)` is `"42.0"`,
/// `as_given(2039.0)` is `"2039"` (the A100's GB/s, not 2040). A number rooftop computed
/// or measured is shown with [`sig3`].
pub fn as_given(value: f64) -> String {
    if !value.is_finite() {
        return "n/a".to_string();
    }
    if value == 0.0 {
        return "0".to_string();
    }
    // Decide the decimals on the value rounded to 3 significant digits, so 0.99997 is
    // "1.00", not "1.000".
    let rounded = round_sig(value.abs(), 3);
    let digits = rounded.log10().floor() as i32;
    let decimals = (2 - digits).max(0) as usize;
    format!("{value:.decimals$}")
}

/// Formats a computed or measured number with three significant digits, never more:
/// `sig3(0.8421)` is `"0.842"`, `sig3(42.0)` is `"42.0"`; rounded and written out below
/// 10 000 (`sig3(1365.3)` is `"1370"`), and from 10 000 with an SI prefix and no space
/// (`sig3(28_711_553.0)` is `"28.7M"`), which stays readable where the digits would not.
/// Non-finite values print as `"n/a"`. Catalog figures keep their digits: [`as_given`].
pub fn sig3(value: f64) -> String {
    let rounded = round_sig(value.abs(), 3);
    if !value.is_finite() || rounded < 999.5 {
        return as_given(value);
    }
    if rounded < 1e4 {
        return format!("{:.0}", value.signum() * rounded);
    }
    si(value, "")
}

/// Formats a percentage with three significant digits ([`sig3`]): `pct(71.33)` is
/// `"71.3%"`, `pct(1076.4)` is `"1080%"`. A percentage is always computed, never a
/// catalog figure.
pub fn pct(value: f64) -> String {
    format!("{}%", sig3(value))
}

fn round_sig(value: f64, digits: i32) -> f64 {
    if value == 0.0 || !value.is_finite() {
        return value;
    }
    let magnitude = value.abs().log10().floor() as i32;
    let factor = 10f64.powi(digits - 1 - magnitude);
    (value * factor).round() / factor
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn si_prefixes_and_three_digits() {
        assert_eq!(si(3.35e12, "B/s"), "3.35 TB/s");
        assert_eq!(si(989.4e12, "FLOP/s"), "989 TFLOP/s");
        assert_eq!(si(42e-6, "s"), "42.0 µs");
        assert_eq!(si(999.96, "B"), "1.00 kB");
        assert_eq!(si(0.0, "B"), "0 B");
        assert_eq!(si(f64::NAN, "B"), "n/a");
        assert_eq!(si(-2.5e9, "B/s"), "-2.50 GB/s");
    }

    #[test]
    fn sig3_cases() {
        assert_eq!(sig3(0.8421), "0.842");
        assert_eq!(sig3(1280.0), "1280");
        assert_eq!(sig3(42.0), "42.0");
        assert_eq!(sig3(71.33), "71.3");
        assert_eq!(pct(100.0), "100%");
        assert_eq!(sig3(0.99997), "1.00");
        assert_eq!(sig3(9.996), "10.0");
        // A catalog figure keeps its whole digits: a datasheet's 2039 GB/s as it says;
        // a computed 2039 has three significant digits.
        assert_eq!(as_given(2039.0), "2039");
        assert_eq!(as_given(0.8421), "0.842");
        assert_eq!(sig3(2039.0), "2040");
    }

    #[test]
    fn sig3_never_shows_more_than_three_digits() {
        // Below 1000 it is a figure's layout.
        assert_eq!(sig3(0.8421), "0.842");
        assert_eq!(sig3(42.0), "42.0");
        assert_eq!(sig3(999.4), "999");
        // 2·4096³ FLOP over 100,663,296 B (a 4096³ bf16 GEMM): 1365.33 FLOP/B.
        assert_eq!(sig3(2.0 * 4096f64.powi(3) / 100_663_296.0), "1370");
        assert_eq!(sig3(3518.0), "3520");
        assert_eq!(sig3(999.6), "1000");
        assert_eq!(sig3(-1076.0), "-1080");
        // 9996 rounds to 10 000 (1.00e4): the prefix, not five digits.
        assert_eq!(sig3(9996.0), "10.0k");
        assert_eq!(sig3(12_345.0), "12.3k");
        assert_eq!(sig3(28_711_553.0), "28.7M");
        assert_eq!(sig3(-403_553_187.19), "-404M");
        assert_eq!(sig3(f64::INFINITY), "n/a");
        assert_eq!(sig3(0.0), "0");
        assert_eq!(pct(1076.4), "1080%");
        assert_eq!(pct(28_711_553.0), "28.7M%");
        assert_eq!(pct(71.33), "71.3%");
    }

    #[test]
    fn precision_parse_and_bits() {
        assert_eq!("BF16".parse::<Precision>(), Ok(Precision::Bf16));
        assert_eq!("half".parse::<Precision>(), Ok(Precision::Fp16));
        assert!("fp12".parse::<Precision>().is_err());
        assert_eq!(Precision::Int4.bytes(), 0.5);
        assert_eq!(Precision::Fp64.bytes(), 8.0);
    }
}
