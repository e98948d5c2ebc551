//! Built-in models: each is the architecture keys of the model's published
//! `config.json` on the Hugging Face Hub (tokenizer ids, initialisation, dropout and
//! RoPE keys left out), parsed exactly like a user's file.
//!
//! Parameter totals these configs give (checked in `model::tests`): Llama-2-7B
//! 6,738,415,616; Llama-3-8B 8,030,261,248; Mistral-7B 7,241,732,096; Mixtral-8x7B
//! 46,702,792,704 (12,879,925,248 active per token); Qwen2-7B 7,615,616,512 — the sizes
//! the Hub's safetensors metadata reports for these checkpoints.

/// A built-in model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Preset {
    /// The name `--preset` takes.
    pub id: &'static str,
    /// Other names accepted.
    pub aliases: &'static [&'static str],
    /// Display name.
    pub name: &'static str,
    /// Where the numbers come from.
    pub source: &'static str,
    /// The config, as JSON.
    pub json: &'static str,
}

/// Every built-in model.
pub const PRESETS: &[Preset] = &[
    Preset {
        id: "llama-7b",
        aliases: &["llama-2-7b", "llama2-7b", "meta-llama/Llama-2-7b-hf"],
        name: "Llama-2-7B",
        source: "https://huggingface.co/meta-llama/Llama-2-7b-hf/blob/main/config.json",
        json: r#"{
  "architectures": ["LlamaForCausalLM"],
  "hidden_act": "silu",
  "hidden_size": 4096,
  "intermediate_size": 11008,
  "max_position_embeddings": 4096,
  "model_type": "llama",
  "num_attention_heads": 32,
  "num_hidden_layers": 32,
  "num_key_value_heads": 32,
  "rms_norm_eps": 1e-05,
  "tie_word_embeddings": false,
  "torch_dtype": "float16",
  "vocab_size": 32000
}"#,
    },
    Preset {
        id: "llama-3-8b",
        aliases: &["llama3-8b", "meta-llama/Meta-Llama-3-8B"],
        name: "Llama-3-8B",
        source: "https://huggingface.co/meta-llama/Meta-Llama-3-8B/blob/main/config.json",
        json: r#"{
  "architectures": ["LlamaForCausalLM"],
  "attention_bias": false,
  "hidden_act": "silu",
  "hidden_size": 4096,
  "intermediate_size": 14336,
  "max_position_embeddings": 8192,
  "model_type": "llama",
  "num_attention_heads": 32,
  "num_hidden_layers": 32,
  "num_key_value_heads": 8,
  "rms_norm_eps": 1e-05,
  "tie_word_embeddings": false,
  "torch_dtype": "bfloat16",
  "vocab_size": 128256
}"#,
    },
    Preset {
        id: "mistral-7b",
        aliases: &["mistral-7b-v0.1", "mistralai/Mistral-7B-v0.1"],
        name: "Mistral-7B-v0.1",
        source: "https://huggingface.co/mistralai/Mistral-7B-v0.1/blob/main/config.json",
        json: r#"{
  "architectures": ["MistralForCausalLM"],
  "hidden_act": "silu",
  "hidden_size": 4096,
  "intermediate_size": 14336,
  "max_position_embeddings": 32768,
  "model_type": "mistral",
  "num_attention_heads": 32,
  "num_hidden_layers": 32,
  "num_key_value_heads": 8,
  "rms_norm_eps": 1e-05,
  "sliding_window": 4096,
  "tie_word_embeddings": false,
  "torch_dtype": "bfloat16",
  "vocab_size": 32000
}"#,
    },
    Preset {
        id: "mixtral-8x7b",
        aliases: &["mixtral", "mixtral-8x7b-v0.1", "mistralai/Mixtral-8x7B-v0.1"],
        name: "Mixtral-8x7B-v0.1",
        source: "https://huggingface.co/mistralai/Mixtral-8x7B-v0.1/blob/main/config.json",
        json: r#"{
  "architectures": ["MixtralForCausalLM"],
  "hidden_act": "silu",
  "hidden_size": 4096,
  "intermediate_size": 14336,
  "max_position_embeddings": 32768,
  "model_type": "mixtral",
  "num_attention_heads": 32,
  "num_experts_per_tok": 2,
  "num_hidden_layers": 32,
  "num_key_value_heads": 8,
  "num_local_experts": 8,
  "rms_norm_eps": 1e-05,
  "sliding_window": null,
  "tie_word_embeddings": false,
  "torch_dtype": "bfloat16",
  "vocab_size": 32000
}"#,
    },
    Preset {
        id: "qwen2-7b",
        aliases: &["qwen2", "Qwen/Qwen2-7B"],
        name: "Qwen2-7B",
        source: "https://huggingface.co/Qwen/Qwen2-7B/blob/main/config.json",
        json: r#"{
  "architectures": ["Qwen2ForCausalLM"],
  "hidden_act": "silu",
  "hidden_size": 3584,
  "intermediate_size": 18944,
  "max_position_embeddings": 131072,
  "max_window_layers": 28,
  "model_type": "qwen2",
  "num_attention_heads": 28,
  "num_hidden_layers": 28,
  "num_key_value_heads": 4,
  "rms_norm_eps": 1e-06,
  "sliding_window": 131072,
  "tie_word_embeddings": false,
  "torch_dtype": "bfloat16",
  "use_sliding_window": false,
  "vocab_size": 152064
}"#,
    },
];

/// The preset `name` names (id or alias, case-insensitive).
pub fn find(name: &str) -> Option<&'static Preset> {
    let n = name.trim();
    PRESETS.iter().find(|p| {
        p.id.eq_ignore_ascii_case(n) || p.aliases.iter().any(|a| a.eq_ignore_ascii_case(n))
    })
}

/// The preset ids, comma-separated, for error messages and help.
pub fn ids() -> String {
    PRESETS.iter().map(|p| p.id).collect::<Vec<_>>().join(", ")
}
