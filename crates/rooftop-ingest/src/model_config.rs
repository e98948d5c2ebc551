//! Model descriptions for `rooftop_core::model`: a Hugging Face `config.json` (Llama,
//! Mistral, Qwen, Gemma, Mixtral keys; may be gzipped) or a built-in preset, parsed
//! into a validated [`ModelConfig`].
//!
//! ```
//! use rooftop_ingest::model_config;
//!
//! let llama = model_config::preset("llama-7b")?;
//! assert_eq!(llama.name, "Llama-2-7B");
//! assert!(model_config::preset("gpt-5").is_err());
//! # Ok::<(), model_config::ModelFileError>(())
//! ```

use crate::compressed::{self, ReadError};
use rooftop_core::model::{presets, ConfigError, ModelConfig, RawConfig};
use std::path::Path;

/// A model description that cannot be had.
#[derive(Debug, thiserror::Error)]
pub enum ModelFileError {
    /// No built-in preset has this name.
    #[error("`{name}` is not a built-in model: expected one of {ids}", name = .0, ids = presets::ids())]
    UnknownPreset(String),
    /// A built-in preset that does not parse (a bug in rooftop, not the user's input).
    #[error("built-in preset {id} does not parse: {message}")]
    BadPreset {
        /// The preset.
        id: &'static str,
        /// The parser's message.
        message: String,
    },
    /// The file cannot be read.
    #[error("cannot read the model config {0}")]
    Read(#[from] ReadError),
    /// The file is not JSON of the expected shape.
    #[error("{path} is not a valid config.json: {message}")]
    Json {
        /// The file, as given.
        path: String,
        /// The parser's message (with line and column).
        message: String,
    },
    /// The JSON parses but does not describe a model rooftop can budget.
    #[error(transparent)]
    Config(#[from] ConfigError),
}

/// The built-in model `name` (`rooftop_core::model::presets` lists them).
pub fn preset(name: &str) -> Result<ModelConfig, ModelFileError> {
    let p = presets::find(name).ok_or_else(|| ModelFileError::UnknownPreset(name.to_string()))?;
    let raw: RawConfig = serde_json::from_str(p.json)
        .map_err(|e| ModelFileError::BadPreset { id: p.id, message: e.to_string() })?;
    Ok(ModelConfig::from_raw(&raw, &format!("preset {}", p.id), Some(p.name))?)
}

/// The model a `config.json` at `path` describes.
pub fn read(path: &Path) -> Result<ModelConfig, ModelFileError> {
    let shown = path.display().to_string();
    let text = compressed::read_text(path)?;
    if let Some(why) = rooftop_core::model::config::not_an_object(&text) {
        return Err(ModelFileError::Json { path: shown, message: why });
    }
    let raw: RawConfig = serde_json::from_str(&text)
        .map_err(|e| ModelFileError::Json { path: shown.clone(), message: e.to_string() })?;
    Ok(ModelConfig::from_raw(&raw, &shown, None)?)
}
