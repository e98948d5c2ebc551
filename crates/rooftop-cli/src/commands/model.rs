//! `rooftop model`: the bandwidth and compute budget of a whole LLM step (decode or
//! prefill), per op, on a device, from a Hugging Face `config.json` or a preset.
//!
//! The model comes from `rooftop_ingest::model_config`; this module turns the flags
//! into `StepOptions`, and hands the report to
//! `rooftop_report::model`; the arithmetic lives in `rooftop_core::model`.

use crate::args::Cli;
use crate::error::{CliError, Result};
use crate::output;
use clap::{ArgGroup, Args, ValueEnum};
use rooftop_core::device::DeviceSpec;
use rooftop_core::model::{budget, ModelConfig, ModelError, Phase, StepOptions, WeightScheme};
use rooftop_core::units::Precision;
use rooftop_ingest::model_config::{self, ModelFileError};
use std::path::PathBuf;

/// `--phase` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PhaseArg {
    /// One new token per sequence, attending to --context cached positions.
    Decode,
    /// The prompt of --tokens tokens per sequence (time to first token).
    Prefill,
}

#[derive(Debug, Args)]
#[command(group(ArgGroup::new("model").required(true).args(["config", "preset"])))]
pub struct ModelArgs {
    /// A Hugging Face config.json (Llama, Mistral, Qwen, Gemma, Mixtral keys). This or --preset
    /// is required.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,

    /// A built-in model instead of --config: llama-7b (Llama-2-7B), llama-3-8b,
    /// mistral-7b, mixtral-8x7b, qwen2-7b.
    #[arg(long, value_name = "NAME", value_parser = crate::offers::PRESETS, hide_possible_values = true)]
    pub preset: Option<String>,

    /// Device id, alias or tool-printed name (`rooftop devices` lists them). Required.
    #[arg(long, short = 'd', value_parser = crate::offers::DEVICES, hide_possible_values = true)]
    pub device: String,

    /// Weight format: bf16, fp16, fp32, fp8 or int8 (W8A8: 8-bit activations too), q4_0,
    /// q8_0 (GGML blocks), int4-g128 (any `int<bits>-g<group>`, -zp for zero points).
    #[arg(
        long,
        default_value = "bf16",
        value_name = "FORMAT",
        value_parser = crate::offers::WEIGHTS,
        hide_possible_values = true
    )]
    pub weights: String,

    /// KV-cache precision (bf16, fp16, fp8, int8, ...). Default: the activations'
    /// (bf16 for bf16/fp8/int8 weights, fp16 for fp16 and quantized weights).
    #[arg(long = "kv-dtype", value_name = "DTYPE")]
    pub kv_dtype: Option<String>,

    /// Decode or prefill.
    #[arg(long, value_enum, default_value_t = PhaseArg::Decode)]
    pub phase: PhaseArg,

    /// Decode: KV-cache positions the new token attends to, itself included. Default:
    /// 4096.
    #[arg(long, value_name = "POSITIONS")]
    pub context: Option<u64>,

    /// Sequences in the batch.
    #[arg(long, default_value_t = 1)]
    pub batch: u64,

    /// Prefill: prompt tokens per sequence. Default: 2048.
    #[arg(long, value_name = "TOKENS")]
    pub tokens: Option<u64>,

    /// Tokens/s per sequence to budget for: the bandwidth and FLOP/s it needs (decode:
    /// generated tokens; prefill: prompt tokens). Default: none.
    #[arg(long = "target-tokens-per-s", value_name = "RATE")]
    pub target_tokens_per_s: Option<f64>,
}

/// Reads and validates the model the flags name.
fn load_model(args: &ModelArgs) -> Result<ModelConfig> {
    let r = match (&args.preset, &args.config) {
        (Some(name), _) => model_config::preset(name),
        (None, Some(path)) => model_config::read(path),
        (None, None) => {
            return Err(CliError::input("give a model with --config FILE or --preset NAME"))
        }
    };
    r.map_err(|e| match e {
        ModelFileError::UnknownPreset(_) => CliError::input(format!("--preset {e}")),
        ModelFileError::BadPreset { .. } => CliError::Runtime(e.to_string()),
        _ => CliError::input(e.to_string()),
    })
}

/// Turns the flags into step options, rejecting flags that do not apply to the phase.
fn step_options(args: &ModelArgs) -> Result<StepOptions> {
    let weights: WeightScheme =
        args.weights.parse().map_err(|e| CliError::input(format!("--weights: {e}")))?;
    let kv_dtype = match &args.kv_dtype {
        Some(s) => {
            s.parse::<Precision>().map_err(|e| CliError::input(format!("--kv-dtype: {e}")))?
        }
        None => weights.act_dtype(),
    };
    let phase = match args.phase {
        PhaseArg::Decode => Phase::Decode,
        PhaseArg::Prefill => Phase::Prefill,
    };
    match phase {
        Phase::Decode if args.tokens.is_some() => {
            return Err(CliError::input(
                "--tokens applies to --phase prefill; decode attends to --context positions",
            ))
        }
        Phase::Prefill if args.context.is_some() => {
            return Err(CliError::input(
                "--context applies to --phase decode; prefill attends to its own --tokens",
            ))
        }
        _ => {}
    }
    if args.batch == 0 {
        return Err(CliError::input("--batch must be at least 1"));
    }
    let context = args.context.unwrap_or(4096);
    if context == 0 {
        return Err(CliError::input("--context must be at least 1"));
    }
    let tokens = args.tokens.unwrap_or(2048);
    if tokens == 0 {
        return Err(CliError::input("--tokens must be at least 1"));
    }
    if let Some(t) = args.target_tokens_per_s {
        if !(t.is_finite() && t > 0.0) {
            return Err(CliError::input(format!(
                "--target-tokens-per-s must be a positive number, got {t}"
            )));
        }
    }
    // The option the phase does not use is 0, so the report does not show a default
    // that played no part.
    let (context, tokens) = match phase {
        Phase::Decode => (context, 0),
        Phase::Prefill => (0, tokens),
    };
    Ok(StepOptions { phase, batch: args.batch, context, tokens, weights, kv_dtype })
}

/// Largest tensor-parallel group rooftop answers for: beyond it, the question is not
/// about one device's step time.
const MAX_DEVICES: u64 = 1024;

/// What a step keeps in device memory, in bytes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Footprint {
    /// Every stored parameter at the weight format's bits (scales included).
    pub weights: f64,
    /// The KV cache of every sequence: layers x batch x KV heads x 2 (K and V) x head
    /// dim x positions (the sliding window at most) x KV bytes.
    pub kv_cache: f64,
    /// One layer's live activations: tokens in flight x (hidden + intermediate +
    /// vocabulary for the logits) x activation bytes.
    pub activations: f64,
}

impl Footprint {
    pub fn total(&self) -> f64 {
        self.weights + self.kv_cache + self.activations
    }
}

/// The memory a step needs, with checked arithmetic: sizes past 64-bit counts are
/// refused (exit 2) before any of the step is modelled.
pub(crate) fn footprint(cfg: &ModelConfig, opts: &StepOptions) -> Result<Footprint> {
    let product = |what: &str, xs: &[u64]| {
        xs.iter().try_fold(1u64, |a, &x| a.checked_mul(x)).ok_or_else(|| {
            CliError::input(format!(
                "{what} of {} does not fit 64-bit arithmetic (batch {}, context {}, tokens \
                 {}): no device holds it",
                cfg.name, opts.batch, opts.context, opts.tokens
            ))
        })
    };
    let positions = match opts.phase {
        Phase::Decode => cfg.sliding_window.map_or(opts.context, |w| opts.context.min(w)),
        Phase::Prefill => opts.tokens,
    };
    let kv = product(
        "the KV cache",
        &[cfg.num_layers, opts.batch, cfg.num_kv_heads, 2, cfg.head_dim, positions],
    )?;
    let tokens = match opts.phase {
        Phase::Decode => opts.batch,
        Phase::Prefill => product("the prompt", &[opts.batch, opts.tokens])?,
    };
    let width = cfg
        .hidden_size
        .checked_add(cfg.intermediate_size)
        .and_then(|w| w.checked_add(cfg.vocab_size))
        .ok_or_else(|| CliError::input(format!("{}: layer sizes overflow", cfg.name)))?;
    let act = product("the activations", &[tokens, width])?;
    Ok(Footprint {
        weights: cfg.params().total as f64 * opts.weights.bits_per_weight() / 8.0,
        kv_cache: kv as f64 * opts.kv_dtype.bytes(),
        activations: act as f64 * opts.weights.act_dtype().bytes(),
    })
}

/// Refuses a step that does not fit the device's memory, saying how many of it the
/// model needs with tensor parallelism (weights and KV cache split across them).
pub(crate) fn check_capacity(name: &str, f: &Footprint, device: &DeviceSpec) -> Result<()> {
    let Some(mem_gb) = device.mem_gb.filter(|g| *g > 0.0) else { return Ok(()) };
    let mem = mem_gb * 1e9;
    if f.total() <= mem {
        return Ok(());
    }
    let gb = |b: f64| rooftop_core::units::si(b, "B");
    let parts = format!(
        "{} of weights + {} of KV cache + {} of activations = {}",
        gb(f.weights),
        gb(f.kv_cache),
        gb(f.activations),
        gb(f.total())
    );
    let needed = (f.total() / mem).ceil();
    let need = if needed <= MAX_DEVICES as f64 {
        format!(
            "it needs {} of them with tensor parallelism (weights and KV cache split {} ways); \
             model one device's share with a smaller --batch/--context or a smaller --weights \
             format",
            needed as u64, needed as u64
        )
    } else {
        format!("more than {MAX_DEVICES} of them: no real system holds it")
    };
    Err(CliError::input(format!(
        "{name} does not fit on {} ({} of memory): {parts}; {need}",
        device.id,
        gb(mem)
    )))
}

pub fn run(catalog: super::CatalogRef<'_>, args: &ModelArgs, cli: &Cli) -> Result<()> {
    let format = output::format(cli.format);
    if !rooftop_report::model::supports(format) {
        return Err(CliError::input("rooftop model writes --format table, json, csv, md or html"));
    }
    let cfg = load_model(args)?;
    let opts = step_options(args)?;
    let device = catalog.find(&args.device)?;
    let need = footprint(&cfg, &opts)?;
    check_capacity(&cfg.name, &need, device)?;
    let report = budget(&cfg, &opts, device, args.target_tokens_per_s).map_err(|e| {
        let hint = match e {
            ModelError::Roofline { .. } => {
                "; try bf16, fp16 or a weight-only format (q8_0, q4_0, int4-g128)"
            }
            _ => "",
        };
        CliError::input(format!(
            "{} on {} with --weights {}: {e}{hint}",
            cfg.name, device.id, args.weights
        ))
    })?;
    let text = rooftop_report::model::render(&report, format, device)?;
    output::emit(&text, cli.output.as_deref())
}
