//! What shell completion offers for flags whose values come from a fixed set (device
//! ids, precisions, presets, kernels): the value is still taken as any text and checked
//! by the command, with its own message ("unknown device ...; did you mean ..."), so a
//! name a device file adds is accepted; the set only feeds `rooftop completions`. The
//! flags hide the set from `--help` (a list of 100 device ids would drown it).

use clap::builder::{PossibleValue, StringValueParser, TypedValueParser};
use std::ffi::OsStr;

/// A value parser that accepts any UTF-8 text and offers `names()` to completion.
#[derive(Clone, Copy)]
pub struct Offers(fn() -> Vec<&'static str>);

impl TypedValueParser for Offers {
    type Value = String;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &OsStr,
    ) -> Result<String, clap::Error> {
        StringValueParser::new().parse_ref(cmd, arg, value)
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = PossibleValue> + '_>> {
        Some(Box::new((self.0)().into_iter().map(PossibleValue::new)))
    }
}

/// The built-in catalog's device ids (read only when completions are generated).
pub const DEVICES: Offers = Offers(|| {
    rooftop_core::device::Catalog::builtin().devices.iter().map(|d| d.id.as_str()).collect()
});

/// Every precision name (`fp64` ... `int4`).
pub const PRECISIONS: Offers =
    Offers(|| rooftop_core::units::Precision::ALL.iter().map(|p| p.as_str()).collect());

/// Element types of the CPU benchmark kernels.
pub const BENCH_DTYPES: Offers = Offers(|| vec!["fp32", "fp64"]);

/// The suite's kernel names.
pub const KERNELS: Offers =
    Offers(|| rooftop_bench::KernelId::ALL.iter().map(|k| k.name()).collect());

/// The built-in models of `rooftop model --preset`.
pub const PRESETS: Offers =
    Offers(|| rooftop_core::model::presets::PRESETS.iter().map(|p| p.id).collect());

/// Weight formats of `rooftop model --weights` (any `int<bits>-g<group>` is taken too).
pub const WEIGHTS: Offers = Offers(|| {
    vec!["bf16", "fp16", "fp32", "fp8", "int8", "q4_0", "q8_0", "int4-g128", "int4-g128-zp"]
});

/// Vendors of `rooftop devices --vendor`.
pub const VENDORS: Offers = Offers(|| vec!["nvidia", "amd", "apple", "intel", "cpu"]);

/// Metrics of `rooftop diff --metric`.
pub const METRICS: Offers = Offers(|| rooftop_report::diff::Metric::NAMES.to_vec());
