//! The records rooftop's commands exchange: what `--format json` and the export files
//! hold, defined once with `Serialize` and `Deserialize`, so that a command that writes
//! an export and one that reads it back (`rooftop diff`) agree on every field.
//!
//! - [`bench`](mod@bench): `rooftop bench` results (`docs/bench-schema.md`): [`bench::BenchReport`]
//!   and the records it carries (results, checks, timing, backend, roofs).
//! - [`ceilings`]: a machine's measured roofs ([`ceilings::Ceilings`]), as `rooftop
//!   ceilings` and `rooftop bench` measure them, and the rules that pick the roof a
//!   result is compared with.
//! - [`compare`]: `rooftop bench --compare A,B` ([`compare::Comparison`]).
//! - [`analysis`]: `rooftop analyze` ([`analysis::AnalysisRecord`], `docs/json-schema.md`).
//! - [`finding`]: a finding as exports hold it ([`finding::FindingRecord`]).
//! - [`devices`]: this machine's devices (`rooftop devices --local`).
//!
//! Invariants: every top-level export has a `schema_version`; within a version fields are
//! only added, never renamed or removed. A value that was not measured is `null`, and a
//! field the schema always writes must be present when read back: [`nullable`] fields
//! accept `null` but not absence, so a truncated or hand-edited export is an error that
//! names the field, never a silent `None`. Fields written only when they apply
//! (`skip_serializing_if`) are the only ones that may be absent.
//!
//! The producers live where the measurements are made (`rooftop-bench`, the CLI); the
//! renderers (`rooftop-report`) only read these records.

pub mod analysis;
pub mod bench;
pub mod ceilings;
pub mod compare;
pub mod devices;
pub mod finding;

use serde::{Deserialize, Deserializer};

/// Reads a field that is always written but may be `null`: `null` is `None`, absence is
/// an error (serde's default for `Option` fields would read absence as `None`).
///
/// ```
/// #[derive(serde::Deserialize)]
/// struct R {
///     #[serde(deserialize_with = "rooftop_core::schema::nullable")]
///     median_s: Option<f64>,
/// }
/// assert!(serde_json::from_str::<R>(r#"{"median_s": null}"#).unwrap().median_s.is_none());
/// assert!(serde_json::from_str::<R>("{}").is_err());
/// ```
pub fn nullable<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    Option::deserialize(d)
}
