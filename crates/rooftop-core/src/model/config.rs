//! A model's shape, read from a Hugging Face `config.json` (Llama, Mistral, Qwen2/3,
//! Gemma, Mixtral and Qwen-MoE keys), validated, with its parameter count.
//!
//! The JSON is deserialised by the caller (this crate does no I/O and has no JSON
//! dependency) into [`RawConfig`], whose fields accept any JSON value so that a wrong
//! type is reported here with the field's name instead of as a serde position.
//! [`ModelConfig::from_raw`] then checks every field and applies the defaults
//! `transformers` applies, each one recorded in [`ModelConfig::notes`]:
//! - `num_key_value_heads` absent: equal to `num_attention_heads` (`LlamaConfig`);
//! - `head_dim` absent: `hidden_size / num_attention_heads` (which must divide);
//! - `tie_word_embeddings` absent: true for `model_type` `gemma*` (`GemmaConfig`), false
//!   otherwise (`LlamaConfig`, `MistralConfig`, `MixtralConfig`, `Qwen2Config`);
//! - `num_local_experts` (Mixtral) or `num_experts` (Qwen-MoE) > 1: a mixture of experts
//!   with `num_experts_per_tok` experts per token, each an MLP of
//!   `moe_intermediate_size` (Qwen-MoE) or `intermediate_size` (Mixtral), plus a shared
//!   expert of `shared_expert_intermediate_size` when given (Qwen2-MoE);
//! - Q, K and V projections carry a bias for `model_type` `qwen2`/`qwen2_moe` (its
//!   modeling code hard-codes `bias=True`) or when `attention_bias` is true.
//!
//! Parameters (every count exact in `u64`): embedding `V*H`, LM head `V*H` unless tied,
//! per layer `H*Hq*D + 2*H*Hkv*D + Hq*D*H` (Q, K, V, O) `+ 3*H*I` (gated MLP) `+ 2*H`
//! (two RMSNorm weights), and a final norm of `H`.

use serde::Deserialize;
use std::fmt;

/// Any JSON value, kept just precisely enough to validate a field and name it in the
/// error.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum JsonValue {
    Bool(bool),
    UInt(u64),
    Int(i64),
    Float(f64),
    Str(String),
    /// An array or an object.
    Other(serde::de::IgnoredAny),
}

impl fmt::Display for JsonValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            JsonValue::Bool(b) => write!(f, "{b}"),
            JsonValue::UInt(u) => write!(f, "{u}"),
            JsonValue::Int(i) => write!(f, "{i}"),
            // `4096.0`, not `4096`: the value is refused for being a float.
            JsonValue::Float(x) => write!(f, "{x:?}"),
            JsonValue::Str(s) => write!(f, "\"{s}\""),
            JsonValue::Other(_) => f.write_str("an array or object"),
        }
    }
}

/// Why `text` is not a config at all, when its JSON is not an object: serde would read
/// an array's elements as the fields in order (`[1, 2]` as `model_type` 1), so the shape
/// is checked first. The sentence names the line and column of the first value.
pub fn not_an_object(text: &str) -> Option<String> {
    let start = text.len() - text.trim_start().len();
    let first = text[start..].chars().next();
    if first == Some('{') {
        return None;
    }
    let before = &text[..start];
    let line = before.matches('\n').count() + 1;
    let column = start - before.rfind('\n').map_or(0, |i| i + 1) + 1;
    Some(match first {
        None => "the file is empty: expected a JSON object `{...}` (a Hugging Face \
                 config.json)"
            .to_string(),
        Some(c) => format!(
            "expected a JSON object `{{...}}` (a Hugging Face config.json), found `{c}` at \
             line {line}, column {column}"
        ),
    })
}

/// The keys of a `config.json` rooftop reads; every other key is ignored. `null` is the
/// same as absent.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct RawConfig {
    #[serde(default)]
    pub model_type: Option<JsonValue>,
    #[serde(default, rename = "_name_or_path")]
    pub name_or_path: Option<JsonValue>,
    #[serde(default)]
    pub hidden_size: Option<JsonValue>,
    #[serde(default)]
    pub intermediate_size: Option<JsonValue>,
    #[serde(default)]
    pub num_hidden_layers: Option<JsonValue>,
    #[serde(default)]
    pub num_attention_heads: Option<JsonValue>,
    #[serde(default)]
    pub num_key_value_heads: Option<JsonValue>,
    #[serde(default)]
    pub head_dim: Option<JsonValue>,
    #[serde(default)]
    pub vocab_size: Option<JsonValue>,
    #[serde(default)]
    pub tie_word_embeddings: Option<JsonValue>,
    #[serde(default)]
    pub attention_bias: Option<JsonValue>,
    #[serde(default)]
    pub num_local_experts: Option<JsonValue>,
    #[serde(default)]
    pub num_experts: Option<JsonValue>,
    #[serde(default)]
    pub num_experts_per_tok: Option<JsonValue>,
    #[serde(default)]
    pub moe_intermediate_size: Option<JsonValue>,
    #[serde(default)]
    pub shared_expert_intermediate_size: Option<JsonValue>,
    #[serde(default)]
    pub sliding_window: Option<JsonValue>,
    #[serde(default)]
    pub use_sliding_window: Option<JsonValue>,
    #[serde(default)]
    pub max_position_embeddings: Option<JsonValue>,
    #[serde(default)]
    pub torch_dtype: Option<JsonValue>,
    /// DeepSeek multi-head latent attention: recognised only to refuse it.
    #[serde(default)]
    pub kv_lora_rank: Option<JsonValue>,
    /// Multimodal configs (Gemma 3, Mistral 3, Llama 4) keep the language model here.
    #[serde(default)]
    pub text_config: Option<Box<RawConfig>>,
}

/// A config that cannot be used: one sentence naming the source and the field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}: `{field}` {message}")]
pub struct ConfigError {
    /// The file (or `preset NAME`) the config came from.
    pub file: String,
    /// The JSON key at fault.
    pub field: String,
    /// What is wrong with it, and what was expected.
    pub message: String,
}

/// Mixture-of-experts MLP shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct MoeConfig {
    /// Routed experts per layer (`num_local_experts` / `num_experts`).
    pub experts: u64,
    /// Experts each token is routed to (`num_experts_per_tok`).
    pub experts_per_token: u64,
    /// Width of one expert's gated MLP.
    pub expert_intermediate_size: u64,
    /// Width of the always-active shared expert (Qwen2-MoE), if any.
    pub shared_expert_intermediate_size: Option<u64>,
}

/// A validated model shape.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ModelConfig {
    /// Display name: the preset's, `_name_or_path`, or the source.
    pub name: String,
    /// Where it came from (a file path or `preset NAME`).
    pub source: String,
    pub model_type: Option<String>,
    /// H.
    pub hidden_size: u64,
    /// I, the dense gated MLP's width (0 for a mixture of experts without one).
    pub intermediate_size: u64,
    /// L.
    pub num_layers: u64,
    /// Hq.
    pub num_heads: u64,
    /// Hkv.
    pub num_kv_heads: u64,
    /// D.
    pub head_dim: u64,
    /// V.
    pub vocab_size: u64,
    pub tie_word_embeddings: bool,
    /// Q, K, V projections have a bias.
    pub qkv_bias: bool,
    pub moe: Option<MoeConfig>,
    /// Keys of the cache a token attends to at most (Mistral-7B-v0.1: 4096).
    pub sliding_window: Option<u64>,
    pub max_position_embeddings: Option<u64>,
    /// Defaults applied and keys interpreted, one line each.
    pub notes: Vec<String>,
}

/// Parameter counts of a model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct ParamCount {
    /// Every parameter stored (tied embeddings counted once).
    pub total: u64,
    /// Parameters a single token's forward pass uses: all but the unrouted experts
    /// (equal to `total` for a dense model).
    pub active_per_token: u64,
    /// Token embedding table `V*H`.
    pub embedding: u64,
    /// LM head `V*H`, 0 when tied to the embedding.
    pub lm_head: u64,
    /// One decoder layer, all experts included.
    pub per_layer: u64,
}

struct Reader<'a> {
    source: &'a str,
}

impl Reader<'_> {
    fn err(&self, field: &str, message: impl Into<String>) -> ConfigError {
        ConfigError {
            file: self.source.to_string(),
            field: field.to_string(),
            message: message.into(),
        }
    }

    /// A positive integer, or `None` when absent.
    fn opt_count(&self, field: &str, v: Option<&JsonValue>) -> Result<Option<u64>, ConfigError> {
        match v {
            None => Ok(None),
            Some(JsonValue::UInt(0)) => Err(self.err(field, "must be at least 1, got 0")),
            Some(JsonValue::UInt(u)) => Ok(Some(*u)),
            Some(other) => Err(self.err(field, format!("must be a positive integer, got {other}"))),
        }
    }

    fn count(&self, field: &str, v: Option<&JsonValue>) -> Result<u64, ConfigError> {
        self.opt_count(field, v)?
            .ok_or_else(|| self.err(field, "is missing: a positive integer is required"))
    }

    /// Like `opt_count` but 0 is allowed (expert counts of dense models).
    fn opt_u64(&self, field: &str, v: Option<&JsonValue>) -> Result<Option<u64>, ConfigError> {
        match v {
            None => Ok(None),
            Some(JsonValue::UInt(u)) => Ok(Some(*u)),
            Some(other) => {
                Err(self.err(field, format!("must be a non-negative integer, got {other}")))
            }
        }
    }

    fn opt_bool(&self, field: &str, v: Option<&JsonValue>) -> Result<Option<bool>, ConfigError> {
        match v {
            None => Ok(None),
            Some(JsonValue::Bool(b)) => Ok(Some(*b)),
            Some(other) => Err(self.err(field, format!("must be true or false, got {other}"))),
        }
    }

    fn opt_str(&self, field: &str, v: Option<&JsonValue>) -> Result<Option<String>, ConfigError> {
        match v {
            None => Ok(None),
            Some(JsonValue::Str(s)) => Ok(Some(s.clone())),
            Some(other) => Err(self.err(field, format!("must be a string, got {other}"))),
        }
    }
}

/// `a * b * ...` in `u64`, or an error naming `field` when it overflows.
fn product(r: &Reader<'_>, field: &str, factors: &[u64]) -> Result<u64, ConfigError> {
    factors
        .iter()
        .try_fold(1u64, |acc, &f| acc.checked_mul(f))
        .ok_or_else(|| r.err(field, "makes the parameter count overflow 64 bits"))
}

impl ModelConfig {
    /// Validates a deserialised config. `source` names it in errors (the file path, or
    /// `preset NAME`); `name` overrides the display name (presets).
    pub fn from_raw(
        raw: &RawConfig,
        source: &str,
        name: Option<&str>,
    ) -> Result<ModelConfig, ConfigError> {
        let r = Reader { source };
        let mut notes = Vec::new();
        // Multimodal wrappers: the language model's keys live in `text_config`.
        let raw = match (&raw.hidden_size, &raw.text_config) {
            (None, Some(text)) => {
                notes.push(
                    "the language model's keys were read from `text_config` (a multimodal \
                     config); the vision tower is not modelled"
                        .to_string(),
                );
                text.as_ref()
            }
            _ => raw,
        };
        if raw.kv_lora_rank.is_some() {
            return Err(r.err(
                "kv_lora_rank",
                "is set: multi-head latent attention (DeepSeek) is not modelled; only \
                 Llama-style attention with Q/K/V/O projections is",
            ));
        }
        let model_type = r.opt_str("model_type", raw.model_type.as_ref())?;
        let hidden = r.count("hidden_size", raw.hidden_size.as_ref())?;
        let layers = r.count("num_hidden_layers", raw.num_hidden_layers.as_ref())?;
        let heads = r.count("num_attention_heads", raw.num_attention_heads.as_ref())?;
        let vocab = r.count("vocab_size", raw.vocab_size.as_ref())?;

        let kv_given = r.opt_count("num_key_value_heads", raw.num_key_value_heads.as_ref())?;
        let kv_heads = kv_given.unwrap_or_else(|| {
            notes.push(format!(
                "`num_key_value_heads` absent: {heads}, equal to `num_attention_heads` \
                 (multi-head attention, the transformers default)"
            ));
            heads
        });
        if heads % kv_heads != 0 {
            return Err(r.err(
                "num_key_value_heads",
                format!(
                    "({kv_heads}) must divide `num_attention_heads` ({heads}): each key/value \
                     head serves a whole group of query heads"
                ),
            ));
        }
        let head_dim = if let Some(d) = r.opt_count("head_dim", raw.head_dim.as_ref())? {
            d
        } else {
            if hidden % heads != 0 {
                return Err(r.err(
                    "num_attention_heads",
                    format!(
                        "({heads}) does not divide `hidden_size` ({hidden}), and there is no \
                         `head_dim` to give the head size"
                    ),
                ));
            }
            hidden / heads
        };

        let tie_given = r.opt_bool("tie_word_embeddings", raw.tie_word_embeddings.as_ref())?;
        let is_gemma = model_type.as_deref().is_some_and(|t| t.starts_with("gemma"));
        let tie = tie_given.unwrap_or_else(|| {
            notes.push(format!(
                "`tie_word_embeddings` absent: {is_gemma} (the {} default)",
                if is_gemma { "GemmaConfig" } else { "LlamaConfig" }
            ));
            is_gemma
        });
        let is_qwen2 = matches!(model_type.as_deref(), Some("qwen2" | "qwen2_moe"));
        let qkv_bias =
            r.opt_bool("attention_bias", raw.attention_bias.as_ref())?.unwrap_or(false) || is_qwen2;
        if is_qwen2 {
            notes.push(
                "Q, K and V projections have a bias: Qwen2's modeling code sets bias=True"
                    .to_string(),
            );
        }

        // Experts: Mixtral says num_local_experts, Qwen-MoE num_experts.
        let local = r.opt_u64("num_local_experts", raw.num_local_experts.as_ref())?;
        let qwen = r.opt_u64("num_experts", raw.num_experts.as_ref())?;
        let (experts_field, experts) = match (local, qwen) {
            (Some(a), Some(b)) if a != b && a > 1 && b > 1 => {
                return Err(
                    r.err("num_experts", format!("({b}) contradicts `num_local_experts` ({a})"))
                )
            }
            (Some(a), _) if a > 1 => ("num_local_experts", a),
            (_, Some(b)) if b > 1 => ("num_experts", b),
            _ => ("", 0),
        };
        let moe_width = r.opt_count("moe_intermediate_size", raw.moe_intermediate_size.as_ref())?;
        let dense_width = if experts > 1 && moe_width.is_some() {
            // Qwen-MoE: intermediate_size is not used by the MoE layers.
            r.opt_count("intermediate_size", raw.intermediate_size.as_ref())?.unwrap_or(0)
        } else {
            r.count("intermediate_size", raw.intermediate_size.as_ref())?
        };
        let moe = if experts > 1 {
            let k = r.count("num_experts_per_tok", raw.num_experts_per_tok.as_ref())?;
            if k > experts {
                return Err(r.err(
                    "num_experts_per_tok",
                    format!("({k}) cannot exceed `{experts_field}` ({experts})"),
                ));
            }
            let shared = r.opt_u64(
                "shared_expert_intermediate_size",
                raw.shared_expert_intermediate_size.as_ref(),
            )?;
            let width = moe_width.unwrap_or(dense_width);
            notes.push(format!(
                "mixture of experts: {experts} experts per layer (`{experts_field}`), {k} per \
                 token, each a gated MLP of width {width} (`{}`){}; every layer is a MoE layer",
                if moe_width.is_some() { "moe_intermediate_size" } else { "intermediate_size" },
                match shared {
                    Some(s) if s > 0 =>
                        format!(", plus an always-active shared expert of width {s}"),
                    _ => String::new(),
                }
            ));
            Some(MoeConfig {
                experts,
                experts_per_token: k,
                expert_intermediate_size: width,
                shared_expert_intermediate_size: shared.filter(|&s| s > 0),
            })
        } else {
            None
        };

        let use_window =
            r.opt_bool("use_sliding_window", raw.use_sliding_window.as_ref())?.unwrap_or(true);
        let window = r.opt_count("sliding_window", raw.sliding_window.as_ref())?;
        let sliding_window = match window {
            Some(w) if use_window => {
                notes.push(format!(
                    "`sliding_window` {w}: a token attends to at most the last {w} positions \
                     (every layer)"
                ));
                Some(w)
            }
            Some(w) => {
                notes.push(format!("`sliding_window` {w} ignored: `use_sliding_window` is false"));
                None
            }
            None => None,
        };
        let max_pos =
            r.opt_count("max_position_embeddings", raw.max_position_embeddings.as_ref())?;
        // Validated only so a wrong type is caught; rooftop takes the dtype from --weights.
        let _ = r.opt_str("torch_dtype", raw.torch_dtype.as_ref())?;

        let name = match name {
            Some(n) => n.to_string(),
            None => r
                .opt_str("_name_or_path", raw.name_or_path.as_ref())?
                .filter(|s| !s.is_empty())
                .unwrap_or_else(|| source.to_string()),
        };
        let cfg = ModelConfig {
            name,
            source: source.to_string(),
            model_type,
            hidden_size: hidden,
            intermediate_size: dense_width,
            num_layers: layers,
            num_heads: heads,
            num_kv_heads: kv_heads,
            head_dim,
            vocab_size: vocab,
            tie_word_embeddings: tie,
            qkv_bias,
            moe,
            sliding_window,
            max_position_embeddings: max_pos,
            notes,
        };
        // Reject shapes whose parameter count does not fit, here where the field is known.
        cfg.checked_params(&r)?;
        Ok(cfg)
    }

    /// Parameter counts (exact).
    pub fn params(&self) -> ParamCount {
        // `from_raw` checked that the counts fit; a config built by hand that does not
        // saturates instead of panicking.
        self.checked_params(&Reader { source: &self.source }).unwrap_or(ParamCount {
            total: u64::MAX,
            active_per_token: u64::MAX,
            embedding: u64::MAX,
            lm_head: u64::MAX,
            per_layer: u64::MAX,
        })
    }

    // H, D, I are the names the formulas use.
    #[allow(clippy::many_single_char_names)]
    fn checked_params(&self, r: &Reader<'_>) -> Result<ParamCount, ConfigError> {
        let h = self.hidden_size;
        let (hq, hkv, d) = (self.num_heads, self.num_kv_heads, self.head_dim);
        let p = |field: &str, f: &[u64]| product(r, field, f);
        let sum = |field: &str, terms: &[u64]| {
            terms
                .iter()
                .try_fold(0u64, |acc, &t| acc.checked_add(t))
                .ok_or_else(|| r.err(field, "makes the parameter count overflow 64 bits"))
        };
        let q = p("num_attention_heads", &[h, hq, d])?;
        let kv = p("num_key_value_heads", &[2, h, hkv, d])?;
        let o = q;
        let bias = if self.qkv_bias {
            sum(
                "num_attention_heads",
                &[p("num_attention_heads", &[hq, d])?, p("num_key_value_heads", &[2, hkv, d])?],
            )?
        } else {
            0
        };
        let attn = sum("hidden_size", &[q, kv, o, bias])?;
        let norms = p("hidden_size", &[2, h])?;
        let (mlp_all, mlp_active) = match self.moe {
            None => {
                let m = p("intermediate_size", &[3, h, self.intermediate_size])?;
                (m, m)
            }
            Some(m) => {
                let one = p("moe_intermediate_size", &[3, h, m.expert_intermediate_size])?;
                let router = p("num_experts", &[h, m.experts])?;
                let shared = match m.shared_expert_intermediate_size {
                    // The shared expert and its 1-output sigmoid gate (Qwen2-MoE).
                    Some(s) => sum(
                        "shared_expert_intermediate_size",
                        &[p("shared_expert_intermediate_size", &[3, h, s])?, h],
                    )?,
                    None => 0,
                };
                let all =
                    sum("num_experts", &[p("num_experts", &[one, m.experts])?, router, shared])?;
                let active = sum(
                    "num_experts_per_tok",
                    &[p("num_experts_per_tok", &[one, m.experts_per_token])?, router, shared],
                )?;
                (all, active)
            }
        };
        let per_layer = sum("num_hidden_layers", &[attn, mlp_all, norms])?;
        let per_layer_active = sum("num_hidden_layers", &[attn, mlp_active, norms])?;
        let embedding = p("vocab_size", &[self.vocab_size, h])?;
        let lm_head = if self.tie_word_embeddings { 0 } else { embedding };
        let layers_all = p("num_hidden_layers", &[per_layer, self.num_layers])?;
        let layers_active = p("num_hidden_layers", &[per_layer_active, self.num_layers])?;
        Ok(ParamCount {
            total: sum("num_hidden_layers", &[layers_all, embedding, lm_head, h])?,
            active_per_token: sum("num_hidden_layers", &[layers_active, embedding, lm_head, h])?,
            embedding,
            lm_head,
            per_layer,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<ModelConfig, ConfigError> {
        let raw: RawConfig = serde_json::from_str(text).unwrap();
        ModelConfig::from_raw(&raw, "cfg.json", None)
    }

    const TINY: &str = r#"{"hidden_size": 64, "intermediate_size": 160, "num_hidden_layers": 2,
        "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 100,
        "tie_word_embeddings": false}"#;

    #[test]
    fn tiny_config_and_its_parameters() {
        let c = parse(TINY).unwrap();
        // D = 64 / 4 = 16.
        assert_eq!(c.head_dim, 16);
        // q: 64*4*16 = 4096; k+v: 2*64*2*16 = 4096; o: 4096 -> 12288 attention.
        // MLP: 3*64*160 = 30720; norms 2*64 = 128; layer = 43136.
        let p = c.params();
        assert_eq!(p.per_layer, 43_136);
        // 2 layers = 86272; embedding 100*64 = 6400, LM head 6400, final norm 64.
        assert_eq!(p.total, 86_272 + 6400 + 6400 + 64);
        assert_eq!(p.active_per_token, p.total);
        assert_eq!(c.name, "cfg.json");
    }

    #[test]
    fn defaults_are_noted() {
        let c = parse(
            r#"{"hidden_size": 64, "intermediate_size": 160, "num_hidden_layers": 2,
            "num_attention_heads": 4, "vocab_size": 100, "model_type": "gemma"}"#,
        )
        .unwrap();
        assert_eq!(c.num_kv_heads, 4);
        assert!(c.tie_word_embeddings);
        assert_eq!(c.params().lm_head, 0);
        assert_eq!(c.notes.len(), 2, "{:?}", c.notes);
    }

    #[test]
    fn bad_fields_are_named() {
        let e = parse(r#"{"hidden_size": 64}"#).unwrap_err();
        assert_eq!(e.field, "num_hidden_layers");
        assert_eq!(
            e.to_string(),
            "cfg.json: `num_hidden_layers` is missing: a positive integer is required"
        );
        let zero = TINY.replace("\"num_attention_heads\": 4", "\"num_attention_heads\": 0");
        let e = parse(&zero).unwrap_err();
        assert_eq!(e.to_string(), "cfg.json: `num_attention_heads` must be at least 1, got 0");
        let odd = TINY
            .replace("\"num_attention_heads\": 4", "\"num_attention_heads\": 6")
            .replace("\"num_key_value_heads\": 2", "\"num_key_value_heads\": 3");
        let e = parse(&odd).unwrap_err();
        assert_eq!(e.field, "num_attention_heads");
        assert!(e.message.contains("does not divide `hidden_size` (64)"), "{e}");
        // With an explicit head_dim (Gemma: 16 heads * 256 != 3072) it is fine.
        let ok = odd.replace("\"vocab_size\"", "\"head_dim\": 8, \"vocab_size\"");
        assert_eq!(parse(&ok).unwrap().head_dim, 8);
        let gqa = TINY.replace("\"num_key_value_heads\": 2", "\"num_key_value_heads\": 3");
        assert_eq!(parse(&gqa).unwrap_err().field, "num_key_value_heads");
        let typed = TINY.replace("\"hidden_size\": 64", "\"hidden_size\": \"64\"");
        assert_eq!(
            parse(&typed).unwrap_err().to_string(),
            "cfg.json: `hidden_size` must be a positive integer, got \"64\""
        );
        let neg = TINY.replace("\"vocab_size\": 100", "\"vocab_size\": -1");
        assert_eq!(parse(&neg).unwrap_err().field, "vocab_size");
    }

    #[test]
    fn moe_counts_active_experts() {
        // 4 experts, 2 per token, width 32: one expert 3*64*32 = 6144.
        let c = parse(&TINY.replace(
            "\"vocab_size\"",
            "\"num_local_experts\": 4, \"num_experts_per_tok\": 2, \"vocab_size\"",
        ))
        .unwrap();
        let m = c.moe.unwrap();
        assert_eq!((m.experts, m.experts_per_token, m.expert_intermediate_size), (4, 2, 160));
        let p = c.params();
        // layer: attention 12288 + experts 4*3*64*160 = 122880 + router 64*4 = 256 + norms 128.
        assert_eq!(p.per_layer, 12_288 + 122_880 + 256 + 128);
        // active: 2 experts = 61440 instead of 122880, per layer; 2 layers.
        assert_eq!(p.total - p.active_per_token, 2 * (122_880 - 61_440));
        let e = parse(&TINY.replace("\"vocab_size\"", "\"num_experts\": 4, \"vocab_size\""))
            .unwrap_err();
        assert_eq!(e.field, "num_experts_per_tok");
    }
}
