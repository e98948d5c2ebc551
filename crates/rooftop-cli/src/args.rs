//! Command-line arguments, as parsed by clap. Plain data only: validation and
//! conversion into core types happen in the command modules.

use clap::{Args, Parser, Subcommand, ValueEnum};
use std::path::PathBuf;

/// The limits on hostile input and the variables that raise them, for `--help`.
/// The exit codes, in `-h` and `--help`.
const EXIT_CODES: &str = "Exit codes: 0 ok; 1 a regression found by `diff` (or a run that \
                          failed); 2 bad input or usage (an output path that cannot be written \
                          is refused before any work); 130 interrupted by Ctrl-C (partial \
                          results and exports kept, marked \"interrupted\": true).";

/// `--help`'s epilogue: the exit codes, then the input limits.
fn long_after_help() -> String {
    format!("{EXIT_CODES}\n\n{}", limits_help())
}

fn limits_help() -> String {
    let vars: Vec<String> = rooftop_core::limits::Limit::ALL
        .iter()
        .map(|l| format!("  {}={} ({})", l.var(), l.default_value(), l.what()))
        .collect();
    format!(
        "Limits (docs/limits.md): an input over one is refused with exit code 2, naming the \
         file and the environment variable that raises it. Defaults:\n{}",
        vars.join("\n")
    )
}

/// How far each kernel is from what the hardware allows, and why.
#[derive(Debug, Parser)]
#[command(
    name = "rooftop",
    version,
    about,
    long_about = None,
    max_term_width = 100,
    after_help = EXIT_CODES,
    after_long_help = long_after_help()
)]
pub struct Cli {
    /// Extra device file(s) in rooftop's device format (docs/device-format.md); they add
    /// devices or override catalog entries with the same id. Repeatable.
    /// Default: none (the built-in catalog only).
    #[arg(long = "device-file", global = true, value_name = "FILE")]
    pub device_files: Vec<PathBuf>,

    /// Output format (the value shown is the default, unless -o names a file ending in
    /// .json, .csv, .md or .html: then that format; .perfetto.json: perfetto).
    #[arg(long, global = true, value_enum, default_value_t = OutputFormat::Table)]
    pub format: OutputFormat,

    /// Write the output to FILE instead of standard output.
    /// Default: standard output.
    #[arg(short = 'o', long = "output", global = true, value_name = "FILE")]
    pub output: Option<PathBuf>,

    #[command(subcommand)]
    pub command: Command,

    /// Whether the user typed `--format` (rather than getting the default, or the format
    /// the `-o` file's extension names), for commands that warn it has no effect.
    #[arg(skip)]
    pub format_given: bool,
}

impl Cli {
    /// The command line of this process, with `--format` taken from the `-o` file's
    /// extension (`.json`, `.csv`, `.md`, `.html`, `.perfetto.json`) when it was not
    /// given: `-o r.html` writes the HTML page, not the terminal table into a file named
    /// `.html`. Exits
    /// with clap's message on a bad command line, as [`Parser::parse`] does.
    pub fn parsed() -> Cli {
        Cli::parsed_from(std::env::args_os()).unwrap_or_else(|e| e.exit())
    }

    /// [`Cli::parsed`] of the command line `args` (the program name first).
    ///
    /// # Errors
    /// clap's error for a bad command line (and for `--help` and `--version`, which
    /// [`clap::Error::exit`] prints).
    pub fn parsed_from<I, T>(args: I) -> std::result::Result<Cli, clap::Error>
    where
        I: IntoIterator<Item = T>,
        T: Into<std::ffi::OsString> + Clone,
    {
        use clap::{CommandFactory, FromArgMatches};
        let matches = Cli::command().try_get_matches_from(args)?;
        let mut cli = Cli::from_arg_matches(&matches)?;
        // A global flag given after the subcommand is propagated up to these matches.
        cli.format_given =
            matches.value_source("format") == Some(clap::parser::ValueSource::CommandLine);
        if !cli.format_given {
            if let Some(f) = cli.output.as_deref().and_then(OutputFormat::of_extension) {
                cli.format = f;
            }
        }
        Ok(cli)
    }
}

impl OutputFormat {
    /// The format a file name's extension names, if any (any case): `.perfetto.json`
    /// is the Perfetto timeline, the name the docs give it.
    pub fn of_extension(path: &std::path::Path) -> Option<OutputFormat> {
        let ext = path.extension()?.to_string_lossy().to_ascii_lowercase();
        let stem = path.file_stem().map(|s| s.to_string_lossy().to_ascii_lowercase());
        if ext == "json" && stem.is_some_and(|s| s.ends_with(".perfetto")) {
            return Some(OutputFormat::Perfetto);
        }
        match ext.as_str() {
            "json" => Some(OutputFormat::Json),
            "csv" => Some(OutputFormat::Csv),
            "md" | "markdown" => Some(OutputFormat::Md),
            "html" | "htm" => Some(OutputFormat::Html),
            _ => None,
        }
    }
}

/// Output formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OutputFormat {
    /// Aligned table for the terminal (100 columns).
    Table,
    /// JSON (schema in docs/json-schema.md).
    Json,
    /// CSV, one row per item.
    Csv,
    /// Markdown, for pull-request comments.
    Md,
    /// One self-contained HTML page: the roofline chart (SVG), sortable tables, findings,
    /// provenance. Write it with -o report.html.
    Html,
    /// Chrome-trace JSON of the analysed kernels for ui.perfetto.dev (`trace` only).
    Perfetto,
    /// One rank's normalised tables as Parquet files in the folder -o names (`trace`
    /// only; docs/parquet-schema.md).
    Parquet,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// List the device catalog, or show one device with every figure and its source.
    Devices(DevicesArgs),
    /// Roofline, bound, efficiency and findings for one operation on one device.
    Analyze(Box<AnalyzeArgs>),
    /// Time the kernel suite (or one kernel) on this machine, check every result, and
    /// compare it with the measured ceilings and the theoretical peaks.
    Bench(Box<crate::commands::bench::BenchArgs>),
    /// Measure this machine's real roofs (bandwidth per cache level, peak FLOP/s) and
    /// write them as a device file for `--device-file`.
    Ceilings(Box<crate::commands::ceilings::CeilingsArgs>),
    /// Analyse a PyTorch profiler (Kineto) trace: timeline, ops, roofline tables,
    /// kernels, findings.
    Trace(Box<crate::commands::trace::TraceArgs>),
    /// The bandwidth and compute budget of a whole LLM step (decode or prefill), per op,
    /// on any device, from a Hugging Face config.json or a preset.
    Model(Box<crate::commands::model::ModelArgs>),
    /// Compare two traces, or two exports (bench, trace, analyze, counters): regressions,
    /// improvements, a CI gate.
    Diff(Box<crate::commands::diff::DiffArgs>),
    /// Read vendor profiler counters (rocprof, rocprofv3, rocprof-compute, Nsight
    /// Compute, Nsight Systems): bytes, FLOPs, hit rates, roofline and findings per
    /// kernel.
    Counters(Box<crate::commands::counters::CountersArgs>),
    /// Run a program under a vendor profiler with a counter preset, then analyse the
    /// output as `counters` does.
    Profile(Box<crate::commands::profile::ProfileArgs>),
    /// Print a shell completion script (bash, zsh, fish, powershell, elvish) for every
    /// subcommand and flag.
    Completions(crate::commands::completions::CompletionsArgs),
    /// Print rooftop's manual page (roff) with every subcommand and flag:
    /// `rooftop man > rooftop.1`.
    Man,
}

#[derive(Debug, Args)]
pub struct DevicesArgs {
    /// A device id, alias, or the name a tool prints (e.g. "NVIDIA H100 80GB HBM3").
    /// Without it, all devices are listed.
    pub name: Option<String>,

    /// Only list devices of this vendor (nvidia, amd, apple, intel; cpu for the CPUs that
    /// device files add). Default: every vendor.
    #[arg(long, value_parser = crate::offers::VENDORS, hide_possible_values = true)]
    pub vendor: Option<String>,

    /// List this machine's devices instead of the catalog: the CPU, CUDA devices and
    /// wgpu adapters (in builds with those features), each matched to its catalog entry.
    #[arg(long, conflicts_with = "name")]
    pub local: bool,
}

#[derive(Debug, Args)]
pub struct AnalyzeArgs {
    #[command(subcommand)]
    pub op: OpCommand,
}

/// Options every analysed op shares.
#[derive(Debug, Args, Clone)]
pub struct Common {
    /// Device id, alias or tool-printed name (`rooftop devices` lists them). Required.
    #[arg(long, short = 'd', value_parser = crate::offers::DEVICES, hide_possible_values = true)]
    pub device: String,

    /// Measured kernel time in microseconds. Without it rooftop prints the floor and the
    /// bound (the best possible); with it, achieved rates, attainment and findings.
    /// Default: none (the floor and bound only).
    #[arg(long = "time-us", value_name = "US")]
    pub time_us: Option<f64>,

    /// Kernel name (for GEMMs: the macro tile is read from it for tile/wave efficiency).
    /// Default: none (no tile/wave efficiency).
    #[arg(long)]
    pub kernel: Option<String>,

    /// Threads per block / workgroup / threadgroup (adds occupancy).
    /// Default: none (no occupancy).
    #[arg(long, value_name = "THREADS")]
    pub block: Option<u32>,

    /// Registers per thread (NVIDIA) or architectural VGPRs (AMD). Default: unknown
    /// (not limiting).
    #[arg(long, requires = "block")]
    pub regs: Option<u32>,

    /// AMD accumulation VGPRs (AGPRs) per lane. Default: 0.
    #[arg(long, requires = "block")]
    pub agprs: Option<u32>,

    /// AMD scalar registers per wave. Default: unknown (not limiting).
    #[arg(long, requires = "block")]
    pub sgprs: Option<u32>,

    /// Shared memory / LDS / threadgroup memory per block in bytes (static + dynamic).
    /// Default: 0.
    #[arg(long, requires = "block", value_name = "BYTES")]
    pub smem: Option<u64>,

    /// Wave size on devices with two modes (RDNA: 32 or 64). Default: the device's.
    #[arg(long = "wave-size", requires = "block")]
    pub wave_size: Option<u32>,
}

#[derive(Debug, Subcommand)]
pub enum OpCommand {
    /// Dense or quantized GEMM (C = A·B, A: M×K, B: K×N). With --wbits or --wformat the
    /// weights (B) are quantized.
    Gemm(GemmArgs),
    /// Scaled dot-product (flash) attention, forward or backward.
    Attention(AttentionArgs),
    /// RMSNorm over rows of length --cols.
    Rmsnorm(RowsArgs),
    /// LayerNorm over rows of length --cols (with weight and bias).
    Layernorm(RowsArgs),
    /// Softmax over rows of length --cols.
    Softmax(SoftmaxArgs),
    /// Element-wise op over --elements values.
    Elementwise(ElementwiseArgs),
    /// Row reduction (sum/max/mean) of a rows × cols tensor to rows values.
    Reduction(RowsArgs),
    /// Device-to-device copy.
    Copy(CopyArgs),
    /// 2-D convolution (NCHW input, KCRS weights).
    Conv2d(ConvArgs),
}

#[derive(Debug, Args)]
pub struct GemmArgs {
    /// Rows of A and C (M). Required.
    #[arg(long)]
    pub m: u64,
    /// Columns of B and C (N). Required.
    #[arg(long)]
    pub n: u64,
    /// The reduction dimension: columns of A, rows of B (K). Required.
    #[arg(long)]
    pub k: u64,
    /// Independent GEMMs in the batch.
    #[arg(long, default_value_t = 1)]
    pub batch: u64,
    /// Input (activation) precision: fp64 fp32 tf32 fp16 bf16 fp8 int8.
    #[arg(long, default_value = "bf16", value_parser = crate::offers::PRECISIONS, hide_possible_values = true)]
    pub dtype: String,
    /// Output precision. Default: --dtype (fp16 for quantized GEMMs with integer inputs).
    #[arg(long = "out-dtype")]
    pub out_dtype: Option<String>,
    /// Add a bias vector of N values.
    #[arg(long)]
    pub bias: bool,
    /// Quantized weights: bits per weight (1-8), with --group scales.
    /// Default: none (dense weights in --dtype).
    #[arg(long, conflicts_with = "wformat", value_name = "BITS")]
    pub wbits: Option<u32>,
    /// Quantization group size along K (weights per scale). Default: 128 with --wbits.
    #[arg(long, requires = "wbits")]
    pub group: Option<u64>,
    /// Scale precision for --wbits. Default: fp16.
    #[arg(long = "scale-dtype", requires = "wbits")]
    pub scale_dtype: Option<String>,
    /// Quantized weights carry a zero point per group (same precision as the scale).
    #[arg(long = "zero-point", requires = "wbits")]
    pub zero_point: bool,
    /// GGML block format of the weights: q4_0 or q8_0 (blocks of 32 with an fp16 scale).
    /// Default: none (dense weights in --dtype).
    #[arg(long)]
    pub wformat: Option<String>,
    /// In which view --m/--n are given: `blas` (as the BLAS kernel sees them; TraceLens's
    /// worked examples, docs/reference/formulas.md) or `torch` (as PyTorch states them;
    /// swapped for column-major BLAS kernels before the tile math).
    #[arg(long, value_enum, default_value_t = View::Blas)]
    pub view: View,
    /// Run the FLOPs on the vector units instead of the matrix units (e.g. FP32 SIMT
    /// sgemm). Default: the matrix units, except for fp32, which runs on the vector units
    /// (cuBLAS SGEMM does unless TF32 is allowed; --dtype tf32 for tensor cores).
    #[arg(long = "vector-units", conflicts_with = "matrix_units")]
    pub vector_units: bool,
    /// Run the FLOPs on the matrix units: for fp32, MFMA FP32 GEMMs on CDNA (rocBLAS
    /// SGEMM on MI100, MI200, MI300). Default: off (fp32 on the vector units).
    #[arg(long = "matrix-units")]
    pub matrix_units: bool,
    #[command(flatten)]
    pub common: Common,
}

/// View of GEMM M/N.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum View {
    Blas,
    Torch,
}

#[derive(Debug, Args)]
pub struct AttentionArgs {
    /// Sequences in the batch.
    #[arg(long, default_value_t = 1)]
    pub batch: u64,
    /// Query heads. Required.
    #[arg(long)]
    pub heads: u64,
    /// Key/value heads (GQA/MQA). Default: --heads.
    #[arg(long = "kv-heads")]
    pub kv_heads: Option<u64>,
    /// Query sequence length. Required.
    #[arg(long = "seq-q")]
    pub seq_q: u64,
    /// Key/value sequence length. Default: --seq-q.
    #[arg(long = "seq-kv")]
    pub seq_kv: Option<u64>,
    /// Query/key head dimension. Required.
    #[arg(long = "head-dim")]
    pub head_dim: u64,
    /// Value head dimension. Default: --head-dim.
    #[arg(long = "head-dim-v")]
    pub head_dim_v: Option<u64>,
    /// Causal mask: none, top-left (PyTorch SDPA is_causal) or bottom-right
    /// (FlashAttention >= 2.1).
    #[arg(long, value_enum, default_value_t = Causal::None)]
    pub causal: Causal,
    /// Backward pass instead of forward.
    #[arg(long)]
    pub backward: bool,
    /// Precision of Q, K, V and the output.
    #[arg(long, default_value = "bf16", value_parser = crate::offers::PRECISIONS, hide_possible_values = true)]
    pub dtype: String,
    #[command(flatten)]
    pub common: Common,
}

/// Causal mask alignment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Causal {
    None,
    TopLeft,
    BottomRight,
}

#[derive(Debug, Args)]
pub struct RowsArgs {
    /// Rows (independent vectors). Required.
    #[arg(long)]
    pub rows: u64,
    /// Values per row. Required.
    #[arg(long)]
    pub cols: u64,
    /// Element precision.
    #[arg(long, default_value = "bf16", value_parser = crate::offers::PRECISIONS, hide_possible_values = true)]
    pub dtype: String,
    #[command(flatten)]
    pub common: Common,
}

#[derive(Debug, Args)]
pub struct SoftmaxArgs {
    /// Rows (independent vectors). Required.
    #[arg(long)]
    pub rows: u64,
    /// Values per row. Required.
    #[arg(long)]
    pub cols: u64,
    /// Element precision.
    #[arg(long, default_value = "bf16", value_parser = crate::offers::PRECISIONS, hide_possible_values = true)]
    pub dtype: String,
    /// Passes over the input: 1 (online softmax, the minimum traffic) or 3 (max, sum,
    /// normalise: the common 3-pass kernel).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u8).range(1..=3))]
    pub passes: u8,
    #[command(flatten)]
    pub common: Common,
}

#[derive(Debug, Args)]
pub struct ElementwiseArgs {
    /// Values per tensor. Required.
    #[arg(long)]
    pub elements: u64,
    /// Input tensors of --elements values (1 = unary, 2 = binary).
    #[arg(long, default_value_t = 1)]
    pub inputs: u32,
    /// Output tensors.
    #[arg(long, default_value_t = 1)]
    pub outputs: u32,
    /// FLOPs per output element.
    #[arg(long = "flops-per-element", default_value_t = 1.0)]
    pub flops_per_element: f64,
    /// Element precision.
    #[arg(long, default_value = "bf16", value_parser = crate::offers::PRECISIONS, hide_possible_values = true)]
    pub dtype: String,
    #[command(flatten)]
    pub common: Common,
}

#[derive(Debug, Args)]
pub struct CopyArgs {
    /// Values copied. Required.
    #[arg(long)]
    pub elements: u64,
    /// Element precision.
    #[arg(long, default_value = "fp32", value_parser = crate::offers::PRECISIONS, hide_possible_values = true)]
    pub dtype: String,
    #[command(flatten)]
    pub common: Common,
}

#[derive(Debug, Args)]
pub struct ConvArgs {
    /// Batch size.
    #[arg(long)]
    pub n: u64,
    /// Input channels.
    #[arg(long)]
    pub c: u64,
    /// Input height.
    #[arg(long)]
    pub h: u64,
    /// Input width.
    #[arg(long)]
    pub w: u64,
    /// Output channels.
    #[arg(long)]
    pub k: u64,
    /// Filter height.
    #[arg(long)]
    pub r: u64,
    /// Filter width.
    #[arg(long)]
    pub s: u64,
    /// Stride (both dimensions).
    #[arg(long, default_value_t = 1)]
    pub stride: u64,
    /// Zero padding on each side (both dimensions).
    #[arg(long, default_value_t = 0)]
    pub pad: u64,
    /// Filter dilation (both dimensions).
    #[arg(long, default_value_t = 1)]
    pub dilation: u64,
    /// Channel groups (C and K divided among them).
    #[arg(long, default_value_t = 1)]
    pub groups: u64,
    /// Add a bias of K values.
    #[arg(long)]
    pub bias: bool,
    /// Precision of input, weights and output.
    #[arg(long, default_value = "bf16", value_parser = crate::offers::PRECISIONS, hide_possible_values = true)]
    pub dtype: String,
    #[command(flatten)]
    pub common: Common,
}
