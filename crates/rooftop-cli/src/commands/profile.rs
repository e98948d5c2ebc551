//! `rooftop profile --with TOOL [--preset P | --counters A,B] -- PROGRAM ARGS`: build the
//! exact profiler command line for a preset or a counter list (split into passes where
//! the hardware needs it), run it, then analyse the output as `rooftop counters` does.
//!
//! The plan ([`plan`]) is pure and tested; running only spawns the commands it lists.
//! Counter lists per preset and tool are in [`PRESETS`] (also `--list-presets`).

use crate::args::Cli;
use crate::error::{CliError, Result};
use crate::output;
use clap::{Args, ValueEnum};
use rooftop_core::counters::CounterFormat;
use rooftop_core::device::Catalog;
use rooftop_report::counters::RenderOptions;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// Profilers `--with` accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Tool {
    /// NVIDIA Nsight Compute (`ncu`): per-kernel metrics, replayed per pass by ncu.
    Ncu,
    /// NVIDIA Nsight Systems (`nsys`): kernel durations and launch shapes only.
    Nsys,
    /// AMD rocprof v1 (`rocprof -i input.txt`).
    Rocprof,
    /// AMD rocprofv3 (rocprofiler-sdk, ROCm 6.2+).
    Rocprofv3,
    /// AMD rocprof-compute (Omniperf): collects its full counter set and its roofline.
    RocprofCompute,
}

impl Tool {
    fn binary(self) -> &'static str {
        match self {
            Tool::Ncu => "ncu",
            Tool::Nsys => "nsys",
            Tool::Rocprof => "rocprof",
            Tool::Rocprofv3 => "rocprofv3",
            Tool::RocprofCompute => "rocprof-compute",
        }
    }

    fn install_hint(self) -> &'static str {
        match self {
            Tool::Ncu => {
                "install Nsight Compute (it ships with the CUDA toolkit, in \
                          /usr/local/cuda/bin)"
            }
            Tool::Nsys => "install Nsight Systems (it ships with the CUDA toolkit)",
            Tool::Rocprof => "install ROCm's rocprofiler (rocprof is in /opt/rocm/bin)",
            Tool::Rocprofv3 => "install ROCm 6.2+ rocprofiler-sdk (rocprofv3 is in /opt/rocm/bin)",
            Tool::RocprofCompute => "install ROCm's rocprofiler-compute (rocprof-compute)",
        }
    }

    fn vendor_amd(self) -> bool {
        matches!(self, Tool::Rocprof | Tool::Rocprofv3 | Tool::RocprofCompute)
    }
}

/// Presets `--preset` accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Preset {
    /// DRAM bytes read/written, L2/L1 traffic, hit rates, occupancy.
    Memory,
    /// FLOPs per precision (FMA pipes / VALU, tensor / MFMA), occupancy.
    Compute,
    /// Hit rates, requests vs sectors (coalescing), LDS / shared bank conflicts.
    Cache,
    /// Warp / wave stall reasons.
    Stalls,
    /// Everything the hierarchical roofline needs: memory + compute + LDS.
    Roofline,
    /// The tool's full set (ncu `--set full`; every preset's counters on AMD).
    Full,
}

impl Preset {
    fn as_str(self) -> &'static str {
        match self {
            Preset::Memory => "memory",
            Preset::Compute => "compute",
            Preset::Cache => "cache",
            Preset::Stalls => "stalls",
            Preset::Roofline => "roofline",
            Preset::Full => "full",
        }
    }
}

/// Metrics every ncu preset collects (duration, launch shape, occupancy).
const NCU_BASE: &[&str] = &[
    "gpu__time_duration.sum",
    "launch__grid_size",
    "launch__block_size",
    "launch__registers_per_thread",
    "launch__shared_mem_per_block_static",
    "launch__shared_mem_per_block_dynamic",
    "launch__waves_per_multiprocessor",
    "sm__warps_active.avg.pct_of_peak_sustained_active",
    "sm__maximum_warps_per_active_cycle_pct",
];
const NCU_MEMORY: &[&str] = &[
    "dram__bytes_read.sum",
    "dram__bytes_write.sum",
    "lts__t_bytes.sum",
    "l1tex__t_bytes.sum",
    "lts__t_sector_hit_rate.pct",
    "l1tex__t_sector_hit_rate.pct",
];
const NCU_COMPUTE: &[&str] = &[
    "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum",
    "smsp__sass_thread_inst_executed_op_fmul_pred_on.sum",
    "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum",
    "smsp__sass_thread_inst_executed_op_dadd_pred_on.sum",
    "smsp__sass_thread_inst_executed_op_dmul_pred_on.sum",
    "smsp__sass_thread_inst_executed_op_dfma_pred_on.sum",
    "smsp__sass_thread_inst_executed_op_hadd_pred_on.sum",
    "smsp__sass_thread_inst_executed_op_hmul_pred_on.sum",
    "smsp__sass_thread_inst_executed_op_hfma_pred_on.sum",
    "sm__inst_executed_pipe_tensor.sum",
];
const NCU_CACHE: &[&str] = &[
    "lts__t_sector_hit_rate.pct",
    "l1tex__t_sector_hit_rate.pct",
    "lts__t_bytes.sum",
    "l1tex__t_bytes.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum",
    "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum",
];
const NCU_STALLS: &[&str] = &[
    "smsp__average_warp_latency_issue_stalled_long_scoreboard",
    "smsp__average_warp_latency_issue_stalled_short_scoreboard",
    "smsp__average_warp_latency_issue_stalled_barrier",
    "smsp__average_warp_latency_issue_stalled_math_pipe_throttle",
    "smsp__average_warp_latency_issue_stalled_mio_throttle",
    "smsp__average_warp_latency_issue_stalled_lg_throttle",
    "smsp__average_warp_latency_issue_stalled_not_selected",
    "smsp__average_warp_latency_issue_stalled_wait",
    "smsp__issue_active.avg.pct_of_peak_sustained_active",
];

/// Counters every AMD preset collects (waves, busy cycles).
const AMD_BASE: &[&str] = &["SQ_WAVES", "GRBM_GUI_ACTIVE", "GRBM_COUNT"];
/// FETCH_SIZE / WRITE_SIZE are rocprofiler's derived metrics (kilobytes), defined per
/// architecture by rocprofiler, so one name works on gfx90a and gfx942.
const AMD_MEMORY: &[&str] = &["FETCH_SIZE", "WRITE_SIZE", "TCC_HIT_sum", "TCC_MISS_sum"];
const AMD_COMPUTE: &[&str] = &[
    "SQ_INSTS_VALU_ADD_F32",
    "SQ_INSTS_VALU_MUL_F32",
    "SQ_INSTS_VALU_FMA_F32",
    "SQ_INSTS_VALU_TRANS_F32",
    "SQ_INSTS_VALU_ADD_F16",
    "SQ_INSTS_VALU_MUL_F16",
    "SQ_INSTS_VALU_FMA_F16",
    "SQ_INSTS_VALU_TRANS_F16",
    "SQ_INSTS_VALU_ADD_F64",
    "SQ_INSTS_VALU_MUL_F64",
    "SQ_INSTS_VALU_FMA_F64",
    "SQ_INSTS_VALU_TRANS_F64",
    "SQ_INSTS_VALU_MFMA_MOPS_F16",
    "SQ_INSTS_VALU_MFMA_MOPS_BF16",
    "SQ_INSTS_VALU_MFMA_MOPS_F32",
    "SQ_INSTS_VALU_MFMA_MOPS_F64",
];
const AMD_CACHE: &[&str] = &[
    "TCP_TOTAL_CACHE_ACCESSES_sum",
    "TCP_TCC_READ_REQ_sum",
    "TCP_TCC_WRITE_REQ_sum",
    "TCC_HIT_sum",
    "TCC_MISS_sum",
    "TCC_REQ_sum",
    "SQ_LDS_BANK_CONFLICT",
    "SQ_LDS_IDX_ACTIVE",
    "SQ_INSTS_LDS",
];
const AMD_STALLS: &[&str] = &[
    "SQ_WAIT_ANY",
    "SQ_WAIT_INST_ANY",
    "SQ_BUSY_CYCLES",
    "SQ_ACTIVE_INST_VALU",
    "SQ_ACTIVE_INST_VMEM",
    "SQ_ACTIVE_INST_LDS",
];

/// Groups of counter names.
type Groups = &'static [&'static [&'static str]];

/// (preset, what it is for, NVIDIA metrics, AMD counters).
pub const PRESETS: &[(&str, &str, Groups, Groups)] = &[
    (
        "memory",
        "DRAM bytes, L2/L1 traffic, hit rates",
        &[NCU_BASE, NCU_MEMORY],
        &[AMD_BASE, AMD_MEMORY],
    ),
    (
        "compute",
        "FLOPs per precision, tensor/MFMA",
        &[NCU_BASE, NCU_COMPUTE],
        &[AMD_BASE, AMD_COMPUTE],
    ),
    (
        "cache",
        "hit rates, coalescing, bank conflicts",
        &[NCU_BASE, NCU_CACHE],
        &[AMD_BASE, AMD_CACHE],
    ),
    ("stalls", "warp/wave stall reasons", &[NCU_BASE, NCU_STALLS], &[AMD_BASE, AMD_STALLS]),
    (
        "roofline",
        "hierarchical roofline: memory + compute",
        &[NCU_BASE, NCU_MEMORY, NCU_COMPUTE],
        &[AMD_BASE, AMD_MEMORY, AMD_COMPUTE, AMD_CACHE],
    ),
    (
        "full",
        "ncu --set full; every AMD preset",
        &[],
        &[AMD_BASE, AMD_MEMORY, AMD_COMPUTE, AMD_CACHE, AMD_STALLS],
    ),
];

/// Counters of a preset for a tool, deduplicated in order.
fn preset_counters(preset: Preset, amd: bool) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for (name, _, nv, am) in PRESETS {
        if *name == preset.as_str() {
            for group in if amd { *am } else { *nv } {
                for c in *group {
                    if !out.iter().any(|x| x == c) {
                        out.push((*c).to_string());
                    }
                }
            }
        }
    }
    out
}

/// How many counters of one hardware block fit in a pass. Conservative figures for
/// gfx9 (MI100–MI300): the SQ has 8 counter registers, the TCC, TCP, TA and TD 4, GRBM
/// 2 (rocprofiler's per-block limits from `rocprofv3 --list-avail`; a pass that asks
/// for more is refused by the tool). Derived metrics (FETCH_SIZE, WRITE_SIZE) expand to
/// TCC counters, so each takes 2 TCC slots.
fn block_of(counter: &str) -> (&'static str, usize) {
    let c = counter;
    if c == "FETCH_SIZE" || c == "WRITE_SIZE" {
        ("TCC", 2)
    } else if c.starts_with("SQ_") {
        ("SQ", 1)
    } else if c.starts_with("TCC_") {
        ("TCC", 1)
    } else if c.starts_with("TCP_") {
        ("TCP", 1)
    } else if c.starts_with("TA_") {
        ("TA", 1)
    } else if c.starts_with("TD_") {
        ("TD", 1)
    } else if c.starts_with("GRBM_") {
        ("GRBM", 1)
    } else {
        ("OTHER", 1)
    }
}

fn block_limit(block: &str) -> usize {
    match block {
        "SQ" => 8,
        "GRBM" => 2,
        "OTHER" => 1,
        _ => 4,
    }
}

/// Splits AMD counters into passes within the per-block limits (first fit, in order).
pub fn split_passes(counters: &[String]) -> Vec<Vec<String>> {
    // Each pass: its counters, and the slots used per hardware block.
    type Pass = (Vec<String>, Vec<(&'static str, usize)>);
    let mut passes: Vec<Pass> = Vec::new();
    for c in counters {
        let (block, cost) = block_of(c);
        let fits = |used: &Vec<(&'static str, usize)>| {
            let u = used.iter().find(|(b, _)| *b == block).map_or(0, |(_, n)| *n);
            u + cost <= block_limit(block)
        };
        let slot = passes.iter().position(|(_, used)| fits(used));
        let i = if let Some(i) = slot {
            i
        } else {
            passes.push((Vec::new(), Vec::new()));
            passes.len() - 1
        };
        let (list, used) = &mut passes[i];
        list.push(c.clone());
        match used.iter_mut().find(|(b, _)| *b == block) {
            Some((_, n)) => *n += cost,
            None => used.push((block, cost)),
        }
    }
    passes.into_iter().map(|(l, _)| l).collect()
}

/// What `profile` will do: files to write, commands to run in order, what to read.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    pub files: Vec<(PathBuf, String)>,
    pub commands: Vec<Vec<String>>,
    /// The output `counters` reads afterwards.
    pub output: PathBuf,
    pub format: CounterFormat,
    pub notes: Vec<String>,
}

/// Builds the plan for `tool` (binary path `bin`) over `program`.
pub fn plan(
    tool: Tool,
    bin: &str,
    preset: Preset,
    counters: Option<&[String]>,
    out: &Path,
    program: &[String],
) -> Result<Plan> {
    let amd = tool.vendor_amd();
    let list: Vec<String> = match counters {
        Some(c) => c.to_vec(),
        None => preset_counters(preset, amd),
    };
    let s = |p: &Path| p.display().to_string();
    let mut notes = Vec::new();
    let mut files = Vec::new();
    let mut commands = Vec::new();
    let (output, format) = match tool {
        Tool::Ncu => {
            let log = out.join("ncu_raw.csv");
            let mut cmd = vec![
                bin.to_string(),
                "--target-processes".into(),
                "all".into(),
                "--csv".into(),
                "--page".into(),
                "raw".into(),
                "--print-units".into(),
                "base".into(),
            ];
            if counters.is_none() && preset == Preset::Full {
                cmd.extend(["--set".into(), "full".into()]);
            } else {
                cmd.extend(["--metrics".into(), list.join(",")]);
            }
            cmd.extend(["--log-file".into(), s(&log)]);
            cmd.extend(program.iter().cloned());
            commands.push(cmd);
            notes.push("ncu replays each kernel as many times as its metrics need".to_string());
            (log, CounterFormat::NcuRaw)
        }
        Tool::Nsys => {
            if counters.is_some() {
                return Err(CliError::input(
                    "--counters: Nsight Systems has no per-kernel counters (durations and \
                     launch shapes only); use --with ncu for metrics",
                ));
            }
            let rep = out.join("report");
            let mut cmd = vec![
                bin.to_string(),
                "profile".into(),
                "--trace".into(),
                "cuda".into(),
                "--force-overwrite".into(),
                "true".into(),
                "-o".into(),
                s(&rep),
            ];
            cmd.extend(program.iter().cloned());
            commands.push(cmd);
            let stats = out.join("stats");
            commands.push(vec![
                bin.to_string(),
                "stats".into(),
                "--report".into(),
                "cuda_gpu_trace".into(),
                "--format".into(),
                "csv".into(),
                "--timeunit".into(),
                "nsec".into(),
                "--force-export".into(),
                "true".into(),
                "--output".into(),
                s(&stats),
                format!("{}.nsys-rep", s(&rep)),
            ]);
            notes.push(format!(
                "nsys gives durations and launch shapes only; the --preset {} does not apply",
                preset.as_str()
            ));
            (out.join("stats_cuda_gpu_trace.csv"), CounterFormat::NsysGpuTrace)
        }
        Tool::Rocprof | Tool::Rocprofv3 => {
            let passes = split_passes(&list);
            let mut input = String::from("# written by rooftop profile: one pmc line per pass\n");
            for p in &passes {
                let _ = writeln!(input, "pmc: {}", p.join(" "));
            }
            let input_path = out.join("input.txt");
            files.push((input_path.clone(), input));
            if passes.len() > 1 {
                notes.push(format!(
                    "{} counters in {} passes: the program runs once per pass and the passes \
                     are joined by dispatch index (the program must launch the same kernels \
                     in the same order every run)",
                    list.len(),
                    passes.len()
                ));
            }
            if tool == Tool::Rocprof {
                let csv = out.join("results.csv");
                let mut cmd = vec![
                    bin.to_string(),
                    "-i".into(),
                    s(&input_path),
                    "--timestamp".into(),
                    "on".into(),
                    "-o".into(),
                    s(&csv),
                ];
                cmd.extend(program.iter().cloned());
                commands.push(cmd);
                (csv, CounterFormat::RocprofV1)
            } else {
                let mut cmd = vec![
                    bin.to_string(),
                    "-i".into(),
                    s(&input_path),
                    "--kernel-trace".into(),
                    "--output-format".into(),
                    "csv".into(),
                    "-d".into(),
                    s(out),
                    "-o".into(),
                    "run".into(),
                    "--".into(),
                ];
                cmd.extend(program.iter().cloned());
                commands.push(cmd);
                (out.to_path_buf(), CounterFormat::Rocprofv3Csv)
            }
        }
        Tool::RocprofCompute => {
            if counters.is_some() {
                return Err(CliError::input(
                    "--counters: rocprof-compute collects its own full counter set; use \
                     --with rocprofv3 for a chosen list",
                ));
            }
            let mut cmd = vec![
                bin.to_string(),
                "profile".into(),
                "-n".into(),
                "rooftop".into(),
                "--path".into(),
                s(out),
            ];
            if preset == Preset::Roofline {
                cmd.push("--roof-only".into());
            }
            cmd.push("--".into());
            cmd.extend(program.iter().cloned());
            commands.push(cmd);
            notes.push(
                "rocprof-compute collects its full counter set and measures the roofline; \
                 the preset only chooses --roof-only for `roofline`"
                    .to_string(),
            );
            (out.to_path_buf(), CounterFormat::RocprofCompute)
        }
    };
    Ok(Plan { files, commands, output, format, notes })
}

#[derive(Debug, Args)]
pub struct ProfileArgs {
    /// The profiler to run.
    #[arg(long = "with", value_enum, required_unless_present = "list_presets")]
    pub with: Option<Tool>,

    /// Counter preset (`--list-presets` shows what each collects).
    #[arg(long, value_enum, default_value_t = Preset::Memory)]
    pub preset: Preset,

    /// An explicit counter / metric list instead of a preset (comma-separated, the
    /// tool's own names). AMD lists are split into passes within the per-block limits.
    #[arg(long, value_delimiter = ',', conflicts_with = "preset")]
    pub counters: Option<Vec<String>>,

    /// Directory for the profiler's output (created). Default: `rooftop-profile`.
    #[arg(long, default_value = "rooftop-profile")]
    pub out: PathBuf,

    /// The profiler binary, when it is not on PATH under its usual name.
    #[arg(long, value_name = "PATH")]
    pub profiler: Option<PathBuf>,

    /// Print the commands (and the input file) instead of running them.
    #[arg(long)]
    pub dry_run: bool,

    /// List the presets and their counters, then exit.
    #[arg(long)]
    pub list_presets: bool,

    /// Device for the roofs (as `counters --device`).
    #[arg(long, short = 'd')]
    pub device: Option<String>,

    /// Rows per table.
    #[arg(long, default_value_t = 20)]
    pub top: usize,

    /// The program to profile and its arguments, after `--`.
    #[arg(last = true, value_name = "PROGRAM")]
    pub program: Vec<String>,
}

/// A command line, shell-quoted for copying.
fn shell_line(cmd: &[String]) -> String {
    cmd.iter()
        .map(|a| {
            if !a.is_empty()
                && a.chars().all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c))
            {
                a.clone()
            } else {
                format!("'{}'", a.replace('\'', "'\\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// `bin` found on PATH (or given as a path), or the error that says what to install.
fn find_binary(tool: Tool, given: Option<&Path>) -> Result<String> {
    if let Some(p) = given {
        return if p.is_file() {
            Ok(p.display().to_string())
        } else {
            Err(CliError::input(format!("--profiler {}: no such file", p.display())))
        };
    }
    let name = tool.binary();
    let path = std::env::var_os("PATH").unwrap_or_default();
    for dir in std::env::split_paths(&path) {
        let cand = dir.join(name);
        if cand.is_file() {
            return Ok(cand.display().to_string());
        }
    }
    Err(CliError::input(format!(
        "{name} not found on PATH: {}, or pass its path with --profiler",
        tool.install_hint()
    )))
}

fn list_presets() -> String {
    let mut out = String::new();
    for (name, what, nv, amd) in PRESETS {
        let _ = writeln!(out, "{name}: {what}");
        let flat = |g: &[&[&'static str]]| -> Vec<&'static str> {
            g.iter().flat_map(|x| x.iter()).copied().collect()
        };
        let nv = flat(nv);
        let nv_text = if nv.is_empty() { "--set full".to_string() } else { nv.join(", ") };
        out.push_str(&rooftop_report::wrap_text(&nv_text, 100, "  ncu: ", "       "));
        out.push_str(&rooftop_report::wrap_text(&flat(amd).join(", "), 100, "  amd: ", "       "));
    }
    out.push_str(
        "nsys collects no counters (durations and launch shapes); rocprof-compute collects \
         its own full set.\n",
    );
    out
}

pub fn run(catalog: &Catalog, a: &ProfileArgs, cli: &Cli) -> Result<()> {
    if a.list_presets {
        return output::emit(&list_presets(), cli.output.as_deref());
    }
    let Some(tool) = a.with else {
        return Err(CliError::input(
            "--with: name the profiler (ncu, nsys, rocprof, rocprofv3, rocprof-compute)",
        ));
    };
    if a.program.is_empty() {
        return Err(CliError::input(
            "no program to profile: put it after `--`, e.g. rooftop profile --with ncu -- ./app",
        ));
    }
    if a.counters.as_ref().is_some_and(|c| c.iter().any(|x| x.trim().is_empty())) {
        return Err(CliError::input("--counters: an empty name in the list"));
    }
    let bin = if a.dry_run {
        a.profiler.as_ref().map_or_else(|| tool.binary().to_string(), |p| p.display().to_string())
    } else {
        find_binary(tool, a.profiler.as_deref())?
    };
    let p = plan(tool, &bin, a.preset, a.counters.as_deref(), &a.out, &a.program)?;
    if a.dry_run {
        let mut text = String::new();
        for (path, body) in &p.files {
            let _ = writeln!(text, "# {}:", path.display());
            for l in body.lines() {
                let _ = writeln!(text, "#   {l}");
            }
        }
        for c in &p.commands {
            let _ = writeln!(text, "{}", shell_line(c));
        }
        for n in &p.notes {
            let _ = writeln!(text, "# note: {n}");
        }
        return output::emit(&text, cli.output.as_deref());
    }
    std::fs::create_dir_all(&a.out)
        .map_err(|e| CliError::input(format!("--out {}: cannot create: {e}", a.out.display())))?;
    for (path, body) in &p.files {
        std::fs::write(path, body)
            .map_err(|e| CliError::Runtime(format!("cannot write {}: {e}", path.display())))?;
    }
    for n in &p.notes {
        eprintln!("rooftop: {n}");
    }
    for c in &p.commands {
        eprintln!("rooftop: running {}", shell_line(c));
        let status = std::process::Command::new(&c[0])
            .args(&c[1..])
            .status()
            .map_err(|e| CliError::Runtime(format!("cannot start {}: {e}", c[0])))?;
        if !status.success() {
            return Err(CliError::Runtime(format!(
                "{} failed ({status}); its messages are above. Check that the program runs \
                 on its own and that the counters exist on this GPU",
                tool.binary()
            )));
        }
    }
    let empty = std::fs::metadata(&p.output).map_or(true, |m| m.is_file() && m.len() == 0);
    if empty || !p.output.exists() {
        return Err(CliError::Runtime(format!(
            "{} wrote no output at {}: did the program launch any GPU kernel?",
            tool.binary(),
            p.output.display()
        )));
    }
    let set = super::counters::read(&p.output, Some(p.format))?;
    if set.dispatches.is_empty() && set.aggregates.is_empty() {
        return Err(CliError::Runtime(format!(
            "{} recorded no kernels in {}: did the program launch any GPU kernel?",
            tool.binary(),
            p.output.display()
        )));
    }
    let opts = RenderOptions { top: a.top, dispatches: false };
    super::counters::report(catalog, set, a.device.as_deref(), None, &opts, cli)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| (*s).to_string()).collect()
    }

    #[test]
    fn amd_passes_respect_block_limits() {
        // 5 TCC counters: 4 fit a pass, the fifth starts a second; SQ counters share.
        let c = strings(&[
            "TCC_HIT_sum",
            "TCC_MISS_sum",
            "TCC_REQ_sum",
            "TCC_EA_RDREQ_sum",
            "TCC_EA_WRREQ_sum",
            "SQ_WAVES",
        ]);
        let p = split_passes(&c);
        assert_eq!(p.len(), 2);
        assert_eq!(p[0].len(), 5); // 4 TCC + SQ_WAVES
        assert_eq!(p[1], strings(&["TCC_EA_WRREQ_sum"]));
        // FETCH_SIZE and WRITE_SIZE take two TCC slots each: with two TCC counters, three
        // passes are not needed, but they cannot share one pass with 4 TCC counters.
        let c = strings(&["FETCH_SIZE", "WRITE_SIZE", "TCC_HIT_sum"]);
        let p = split_passes(&c);
        assert_eq!(p, vec![strings(&["FETCH_SIZE", "WRITE_SIZE"]), strings(&["TCC_HIT_sum"])]);
    }

    #[test]
    fn ncu_plan_is_the_documented_command() {
        let p = plan(
            Tool::Ncu,
            "ncu",
            Preset::Memory,
            Some(&strings(&["dram__bytes_read.sum", "gpu__time_duration.sum"])),
            Path::new("out"),
            &strings(&["./app", "--n", "1"]),
        )
        .expect("plan");
        assert_eq!(
            shell_line(&p.commands[0]),
            "ncu --target-processes all --csv --page raw --print-units base --metrics \
             dram__bytes_read.sum,gpu__time_duration.sum --log-file out/ncu_raw.csv ./app --n 1"
        );
        assert_eq!(p.format, CounterFormat::NcuRaw);
    }

    #[test]
    fn rocprof_plan_writes_input_txt() {
        let p = plan(
            Tool::Rocprof,
            "rocprof",
            Preset::Memory,
            None,
            Path::new("o"),
            &strings(&["./b"]),
        )
        .expect("plan");
        let (path, body) = &p.files[0];
        assert_eq!(path, Path::new("o/input.txt"));
        // SQ_WAVES GRBM_GUI_ACTIVE GRBM_COUNT FETCH_SIZE WRITE_SIZE TCC_HIT_sum TCC_MISS_sum:
        // TCC cost 2+2+1+1 = 6 > 4, so two passes.
        assert_eq!(body.lines().filter(|l| l.starts_with("pmc:")).count(), 2);
        assert_eq!(
            shell_line(&p.commands[0]),
            "rocprof -i o/input.txt --timestamp on -o o/results.csv ./b"
        );
    }

    #[test]
    fn nsys_refuses_counters() {
        let e =
            plan(Tool::Nsys, "nsys", Preset::Memory, Some(&strings(&["x"])), Path::new("o"), &[]);
        assert!(e.is_err());
    }

    #[test]
    fn quoting() {
        assert_eq!(shell_line(&strings(&["a b", "it's", "x"])), "'a b' 'it'\\''s' x");
    }
}
