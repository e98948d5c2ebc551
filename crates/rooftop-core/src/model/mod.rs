//! The bandwidth and compute budget of a whole LLM step (issue 9, `rooftop model`).
//!
//! Data flow: a Hugging Face `config.json` (deserialised by the caller into
//! [`config::RawConfig`]) or a [`presets`] entry → [`config::ModelConfig`] (validated
//! shape, parameter count) → [`step::build`] (the step as ops from [`crate::ops`]) →
//! [`budget::budget`] (each op's [`crate::roofline`] floor on a device, totals, tokens/s
//! or time to first token, the bandwidth a target needs, fusion savings) →
//! [`budget::ModelReport`].
//!
//! Invariants: every op's bytes and FLOPs come from a core work model, so the step is
//! the sum of numbers the `analyze` command would print for each op; every default and
//! simplification is a line of [`budget::ModelReport::assumptions`] (or of an op's own
//! `work.assumptions`). Nothing here panics on a user's config: bad fields are
//! [`config::ConfigError`]s naming the field.
//!
//! A per-layer table in circulation sizes a 7B decode step at 1.1 GB per layer (36 GB per
//! token; docs/reference/formulas.md#a-7b-models-bytes-per-token); Llama-2-7B's shapes give
//! 0.41 GB per layer in bf16 (0.47 GB with a 4096-position KV cache) — `docs/model.md`
//! explains the difference row by row.

pub mod budget;
pub mod config;
pub mod presets;
pub mod step;

pub use budget::{budget, ModelError, ModelReport};
pub use config::{ConfigError, ModelConfig, RawConfig};
pub use step::{Phase, StepOptions, WeightScheme};

#[cfg(test)]
mod tests;
