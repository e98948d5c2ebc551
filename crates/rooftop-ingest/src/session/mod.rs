//! Profiling sessions: run a program under a vendor profiler with the counters a
//! roofline needs, then read what the profiler wrote.
//!
//! A [`Session`] is a profiler ([`Tool`]), what to collect (a [`Preset`] or an explicit
//! counter list) and an output directory. From it come:
//! - [`Session::passes`]: the counters split into hardware passes (AMD GPUs count only
//!   a few events per block at a time; see [`split_passes`]);
//! - [`Session::plan`] and [`Session::build_command`]: the exact command lines, as data
//!   or as a [`std::process::Command`], without running anything;
//! - [`Session::run`]: writes the input files, spawns the profiler (once per command,
//!   with the program's own stdout and stderr), and checks it left an output;
//! - [`Session::read`]: reads that output with the same readers as
//!   [`crate::counters::read_path`] and hands back the [`CounterSet`]; analyse it with
//!   `rooftop_core::counters::analyze`.
//!
//! Nothing here prints: [`Session::run_with`] reports progress through a callback.
//!
//! # Start a profiling session
//!
//! ```
//! use rooftop_ingest::session::{Session, Tool};
//!
//! // The memory preset on an AMD GPU: 7 counters, split into 2 hardware passes (the TCC
//! // block has 4 counter registers; FETCH_SIZE and WRITE_SIZE take 2 each).
//! let session = Session::memory(Tool::Rocprofv3, "/tmp/profile_output");
//! assert_eq!(session.counters().len(), 7);
//! assert_eq!(session.passes().len(), 2);
//!
//! let cmd = session.build_command("./benches/matmul_bench", &[]);
//! assert_eq!(cmd.get_program(), "rocprofv3");
//! let args: Vec<_> = cmd.get_args().map(|a| a.to_string_lossy().into_owned()).collect();
//! assert_eq!(args[..2], ["-i", "/tmp/profile_output/input.txt"]);
//! assert_eq!(args.last().map(String::as_str), Some("./benches/matmul_bench"));
//!
//! // The input file rocprofv3 reads (written by `run`, or by `prepare` when you spawn
//! // the command yourself): one `pmc:` line per pass.
//! let plan = session.plan("./benches/matmul_bench", &[]);
//! assert_eq!(plan.files[0].1.lines().filter(|l| l.starts_with("pmc:")).count(), 2);
//! ```

mod command;
mod passes;
pub mod presets;

pub use command::{shell_line, Plan};
pub use passes::split_passes;

use crate::counters::CounterError;
use rooftop_core::counters::{CounterFormat, CounterSet};
use std::path::{Path, PathBuf};
use std::process::ExitStatus;

/// The profilers a session can run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
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
    /// Every tool, in the order the CLI lists them.
    pub const ALL: [Tool; 5] =
        [Tool::Ncu, Tool::Nsys, Tool::Rocprof, Tool::Rocprofv3, Tool::RocprofCompute];

    /// What the tool collects, in a line.
    pub fn about(self) -> &'static str {
        match self {
            Tool::Ncu => {
                "NVIDIA Nsight Compute (`ncu`): per-kernel metrics, replayed per pass by ncu"
            }
            Tool::Nsys => "NVIDIA Nsight Systems (`nsys`): kernel durations and launch shapes only",
            Tool::Rocprof => "AMD rocprof v1 (`rocprof -i input.txt`)",
            Tool::Rocprofv3 => "AMD rocprofv3 (rocprofiler-sdk, ROCm 6.2+)",
            Tool::RocprofCompute => {
                "AMD rocprof-compute (Omniperf): collects its full counter set and its roofline"
            }
        }
    }

    /// The profiler's usual binary name, looked up on `PATH` (also the tool's name).
    pub fn binary(self) -> &'static str {
        match self {
            Tool::Ncu => "ncu",
            Tool::Nsys => "nsys",
            Tool::Rocprof => "rocprof",
            Tool::Rocprofv3 => "rocprofv3",
            Tool::RocprofCompute => "rocprof-compute",
        }
    }

    /// What to install to get the profiler.
    pub fn install_hint(self) -> &'static str {
        match self {
            Tool::Ncu => {
                "install Nsight Compute (it ships with the CUDA toolkit, in /usr/local/cuda/bin)"
            }
            Tool::Nsys => "install Nsight Systems (it ships with the CUDA toolkit)",
            Tool::Rocprof => "install ROCm's rocprofiler (rocprof is in /opt/rocm/bin)",
            Tool::Rocprofv3 => "install ROCm 6.2+ rocprofiler-sdk (rocprofv3 is in /opt/rocm/bin)",
            Tool::RocprofCompute => "install ROCm's rocprofiler-compute (rocprof-compute)",
        }
    }

    /// Whether the tool profiles AMD GPUs (and so takes AMD counter names).
    pub fn is_amd(self) -> bool {
        matches!(self, Tool::Rocprof | Tool::Rocprofv3 | Tool::RocprofCompute)
    }

    /// Why the tool takes no explicit counter list, for the tools that choose their own.
    fn no_counter_list(self) -> Option<&'static str> {
        match self {
            Tool::Nsys => Some(
                "Nsight Systems has no per-kernel counters (durations and launch shapes \
                 only); use ncu for metrics",
            ),
            Tool::RocprofCompute => Some(
                "rocprof-compute collects its own full counter set; use rocprofv3 for a \
                 chosen list",
            ),
            _ => None,
        }
    }
}

/// What a session collects when no explicit list is given ([`presets::PRESETS`] lists
/// the counters of each).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
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

impl std::str::FromStr for Tool {
    type Err = String;

    /// A tool by its binary name (`ncu`, `rocprof-compute`, ...).
    fn from_str(s: &str) -> Result<Tool, String> {
        Tool::ALL.into_iter().find(|t| t.binary() == s).ok_or_else(|| {
            format!(
                "unknown profiler `{s}`: expected ncu, nsys, rocprof, rocprofv3 or rocprof-compute"
            )
        })
    }
}

impl std::str::FromStr for Preset {
    type Err = String;

    /// A preset by its name (`memory`, `roofline`, ...).
    fn from_str(s: &str) -> Result<Preset, String> {
        Preset::ALL.into_iter().find(|p| p.as_str() == s).ok_or_else(|| {
            format!(
                "unknown preset `{s}`: expected memory, compute, cache, stalls, roofline or full"
            )
        })
    }
}

impl Preset {
    /// Every preset, in the order of [`presets::PRESETS`].
    pub const ALL: [Preset; 6] = [
        Preset::Memory,
        Preset::Compute,
        Preset::Cache,
        Preset::Stalls,
        Preset::Roofline,
        Preset::Full,
    ];

    /// What the preset collects, in a line.
    pub fn about(self) -> &'static str {
        match self {
            Preset::Memory => "DRAM bytes read/written, L2/L1 traffic, hit rates, occupancy",
            Preset::Compute => "FLOPs per precision (FMA pipes / VALU, tensor / MFMA), occupancy",
            Preset::Cache => {
                "Hit rates, requests vs sectors (coalescing), LDS / shared bank conflicts"
            }
            Preset::Stalls => "Warp / wave stall reasons",
            Preset::Roofline => {
                "Everything the hierarchical roofline needs: memory + compute + LDS"
            }
            Preset::Full => {
                "The tool's full set (ncu `--set full`; every preset's counters on AMD)"
            }
        }
    }

    /// The preset's name, as in [`presets::PRESETS`].
    pub fn as_str(self) -> &'static str {
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

/// Why a session could not be set up, run or read.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// The profiler is not on `PATH`.
    #[error("{} not found on PATH: {}", .0.binary(), .0.install_hint())]
    NotFound(Tool),
    /// The profiler path given with [`Session::profiler`] is not a file.
    #[error("{}: no such file", .0.display())]
    NoSuchProfiler(PathBuf),
    /// An explicit counter list for a tool that chooses its own counters.
    #[error("{}", .0.no_counter_list().unwrap_or_default())]
    CountersUnsupported(Tool),
    /// An explicit counter list with an empty name.
    #[error("an empty name in the list")]
    EmptyCounterName,
    /// The output directory cannot be created.
    #[error("{}: cannot create: {source}", .path.display())]
    CreateDir {
        /// The output directory.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// An input file of the profiler cannot be written.
    #[error("cannot write {}: {source}", .path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A command could not be started.
    #[error("cannot start {program}: {source}")]
    Start {
        /// The command's program.
        program: String,
        /// Why.
        source: std::io::Error,
    },
    /// The profiler exited with an error (its own messages went to stderr).
    #[error(
        "{} failed ({status}); its messages are above. Check that the program runs on its \
         own and that the counters exist on this GPU",
        .tool.binary()
    )]
    Failed {
        /// The profiler.
        tool: Tool,
        /// How it exited.
        status: ExitStatus,
    },
    /// The profiler left no output (or an empty one).
    #[error(
        "{} wrote no output at {}: did the program launch any GPU kernel?",
        .tool.binary(),
        .path.display()
    )]
    NoOutput {
        /// The profiler.
        tool: Tool,
        /// Where the output should be.
        path: PathBuf,
    },
    /// The output has no kernel in it.
    #[error(
        "{} recorded no kernels in {}: did the program launch any GPU kernel?",
        .tool.binary(),
        .path.display()
    )]
    NoKernels {
        /// The profiler.
        tool: Tool,
        /// The output read.
        path: PathBuf,
    },
    /// The output cannot be read.
    #[error(transparent)]
    Read(#[from] CounterError),
}

impl SessionError {
    /// Whether the error is the user's input (a tool or path that is not there, a
    /// counter list the tool refuses, an unreadable output) rather than a failed run.
    pub fn is_bad_input(&self) -> bool {
        matches!(
            self,
            SessionError::NotFound(_)
                | SessionError::NoSuchProfiler(_)
                | SessionError::CountersUnsupported(_)
                | SessionError::EmptyCounterName
                | SessionError::CreateDir { .. }
                | SessionError::Read(_)
        )
    }
}

/// What [`Session::run_with`] reports as it goes.
#[derive(Debug, Clone, Copy)]
pub enum Progress<'a> {
    /// Something the user should know before the run (passes, what is not collected).
    Note(&'a str),
    /// A command is about to run (program first; [`shell_line`] quotes it).
    Running(&'a [String]),
}

/// Where a finished run left its output.
#[derive(Debug, Clone, PartialEq)]
pub struct Output {
    /// The file or directory the counter readers read.
    pub path: PathBuf,
    /// Its format.
    pub format: CounterFormat,
}

/// A profiling session: a profiler, what it collects, and where it writes.
///
/// Build one with a preset constructor ([`Session::memory`], [`Session::compute`],
/// [`Session::cache`], [`Session::stalls`], [`Session::roofline`], [`Session::full`])
/// or [`Session::new`], then optionally [`Session::with_counters`] (an explicit list
/// instead of the preset) and [`Session::profiler`] (a binary not on `PATH`).
#[derive(Debug, Clone, PartialEq)]
pub struct Session {
    tool: Tool,
    preset: Preset,
    counters: Option<Vec<String>>,
    out_dir: PathBuf,
    profiler: Option<PathBuf>,
}

impl Session {
    /// A session collecting `preset` with `tool` into `out_dir`.
    pub fn new(tool: Tool, preset: Preset, out_dir: impl Into<PathBuf>) -> Session {
        Session { tool, preset, counters: None, out_dir: out_dir.into(), profiler: None }
    }

    /// DRAM bytes, L2/L1 traffic and hit rates ([`Preset::Memory`]).
    pub fn memory(tool: Tool, out_dir: impl Into<PathBuf>) -> Session {
        Session::new(tool, Preset::Memory, out_dir)
    }

    /// FLOPs per precision, tensor / MFMA ([`Preset::Compute`]).
    pub fn compute(tool: Tool, out_dir: impl Into<PathBuf>) -> Session {
        Session::new(tool, Preset::Compute, out_dir)
    }

    /// Hit rates, coalescing, bank conflicts ([`Preset::Cache`]).
    pub fn cache(tool: Tool, out_dir: impl Into<PathBuf>) -> Session {
        Session::new(tool, Preset::Cache, out_dir)
    }

    /// Warp / wave stall reasons ([`Preset::Stalls`]).
    pub fn stalls(tool: Tool, out_dir: impl Into<PathBuf>) -> Session {
        Session::new(tool, Preset::Stalls, out_dir)
    }

    /// Memory + compute (+ LDS on AMD): the hierarchical roofline ([`Preset::Roofline`]).
    pub fn roofline(tool: Tool, out_dir: impl Into<PathBuf>) -> Session {
        Session::new(tool, Preset::Roofline, out_dir)
    }

    /// The tool's full set ([`Preset::Full`]).
    pub fn full(tool: Tool, out_dir: impl Into<PathBuf>) -> Session {
        Session::new(tool, Preset::Full, out_dir)
    }

    /// Collects `counters` (the tool's own names) instead of the preset. Refused for an
    /// empty name and for nsys and rocprof-compute, which choose their own counters.
    pub fn with_counters<I, S>(mut self, counters: I) -> Result<Session, SessionError>
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        if self.tool.no_counter_list().is_some() {
            return Err(SessionError::CountersUnsupported(self.tool));
        }
        let list: Vec<String> = counters.into_iter().map(Into::into).collect();
        if list.iter().any(|c| c.trim().is_empty()) {
            return Err(SessionError::EmptyCounterName);
        }
        self.counters = Some(list);
        Ok(self)
    }

    /// Runs the profiler at `path` instead of looking its usual name up on `PATH`.
    #[must_use]
    pub fn profiler(mut self, path: impl Into<PathBuf>) -> Session {
        self.profiler = Some(path.into());
        self
    }

    /// The profiler.
    pub fn tool(&self) -> Tool {
        self.tool
    }

    /// The preset (ignored when [`Session::explicit_counters`] is set).
    pub fn preset(&self) -> Preset {
        self.preset
    }

    /// The list given with [`Session::with_counters`], if any.
    pub fn explicit_counters(&self) -> Option<&[String]> {
        self.counters.as_deref()
    }

    /// The output directory.
    pub fn out_dir(&self) -> &Path {
        &self.out_dir
    }

    /// The counters asked for: the explicit list, else the preset's for the tool's
    /// vendor (empty for ncu's `full`, where ncu chooses).
    pub fn counters(&self) -> Vec<String> {
        match &self.counters {
            Some(c) => c.clone(),
            None => presets::counters(self.preset, self.tool.is_amd()),
        }
    }

    /// The counters split into the passes the tool is asked for: one `pmc:` line each
    /// for rocprof and rocprofv3 (within the per-block limits of [`split_passes`]); one
    /// pass for ncu, which replays kernels on its own; none for nsys and
    /// rocprof-compute, which choose what they collect.
    pub fn passes(&self) -> Vec<Vec<String>> {
        match self.tool {
            Tool::Rocprof | Tool::Rocprofv3 => split_passes(&self.counters()),
            Tool::Ncu => {
                let c = self.counters();
                if c.is_empty() {
                    Vec::new()
                } else {
                    vec![c]
                }
            }
            Tool::Nsys | Tool::RocprofCompute => Vec::new(),
        }
    }

    /// Where the profiler leaves its output, and its format.
    pub fn output(&self) -> Output {
        let (path, format) = command::output_of(self.tool, &self.out_dir);
        Output { path, format }
    }

    /// The full plan over `program args`, with the profiler named as given to
    /// [`Session::profiler`] or by its usual name. Pure: nothing is written or run.
    pub fn plan(&self, program: &str, args: &[&str]) -> Plan {
        self.plan_with(&self.binary_name(), program, args)
    }

    /// The command that runs `program args` under the profiler (for nsys, the first of
    /// two: [`Session::plan`] has both). rocprof and rocprofv3 read an input file:
    /// call [`Session::prepare`] before spawning it yourself.
    pub fn build_command(&self, program: &str, args: &[&str]) -> std::process::Command {
        let plan = self.plan(program, args);
        let line = &plan.commands[0];
        let mut cmd = std::process::Command::new(&line[0]);
        cmd.args(&line[1..]);
        cmd
    }

    /// Creates the output directory and writes the profiler's input files.
    pub fn prepare(&self) -> Result<(), SessionError> {
        let plan = self.plan_with(&self.binary_name(), "", &[]);
        self.write_files(&plan)
    }

    /// The profiler's path: the one given to [`Session::profiler`] if it is a file, else
    /// the first match of its usual name on `PATH`.
    pub fn locate(&self) -> Result<PathBuf, SessionError> {
        if let Some(p) = &self.profiler {
            return if p.is_file() {
                Ok(p.clone())
            } else {
                Err(SessionError::NoSuchProfiler(p.clone()))
            };
        }
        let path = std::env::var_os("PATH").unwrap_or_default();
        std::env::split_paths(&path)
            .map(|dir| dir.join(self.tool.binary()))
            .find(|cand| cand.is_file())
            .ok_or(SessionError::NotFound(self.tool))
    }

    /// Runs `program args` under the profiler: [`Session::run_with`] without progress.
    pub fn run(&self, program: &str, args: &[&str]) -> Result<Output, SessionError> {
        self.run_with(program, args, |_| {})
    }

    /// Locates the profiler, writes its input files, runs its commands in order (the
    /// program's stdout and stderr are the caller's), and checks that it left an
    /// output, telling `progress` of the notes and of each command before it starts.
    pub fn run_with(
        &self,
        program: &str,
        args: &[&str],
        mut progress: impl FnMut(Progress<'_>),
    ) -> Result<Output, SessionError> {
        let bin = self.locate()?.display().to_string();
        let plan = self.plan_with(&bin, program, args);
        self.write_files(&plan)?;
        for n in &plan.notes {
            progress(Progress::Note(n));
        }
        for c in &plan.commands {
            progress(Progress::Running(c));
            let status = std::process::Command::new(&c[0])
                .args(&c[1..])
                .status()
                .map_err(|source| SessionError::Start { program: c[0].clone(), source })?;
            if !status.success() {
                return Err(SessionError::Failed { tool: self.tool, status });
            }
        }
        self.check_output()
    }

    /// Reads the profiler's output with the counter readers ([`crate::counters::read_as`])
    /// and hands back the set; an output without kernels is an error.
    ///
    /// # Read counters
    ///
    /// A raw-page Nsight Compute CSV where an ncu session leaves it: 64 MiB read and
    /// 64 MiB written by one kernel in 40 µs.
    ///
    /// ```
    /// use rooftop_ingest::session::{Session, Tool};
    ///
    /// let dir = std::env::temp_dir().join(format!("rooftop-doc-read-{}", std::process::id()));
    /// std::fs::create_dir_all(&dir)?;
    /// std::fs::write(
    ///     dir.join("ncu_raw.csv"),
    ///     concat!(
    ///         "\"ID\",\"Kernel Name\",\"Block Size\",\"Grid Size\",",
    ///         "\"dram__bytes_read.sum\",\"dram__bytes_write.sum\",\"gpu__time_duration.sum\"\n",
    ///         "\"\",\"\",\"\",\"\",\"byte\",\"byte\",\"nsecond\"\n",
    ///         "\"0\",\"copy_kernel\",\"(256, 1, 1)\",\"(65536, 1, 1)\",",
    ///         "\"67108864\",\"67108864\",\"40000\"\n",
    ///     ),
    /// )?;
    /// let set = Session::memory(Tool::Ncu, &dir).read()?;
    /// let d = &set.dispatches[0];
    /// assert_eq!(&*d.name, "copy_kernel");
    /// assert_eq!(d.duration_ns, Some(40_000.0));
    /// # std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn read(&self) -> Result<CounterSet, SessionError> {
        let out = self.check_output()?;
        let set = crate::counters::read_as(&out.path, out.format)?;
        if set.dispatches.is_empty() && set.aggregates.is_empty() {
            return Err(SessionError::NoKernels { tool: self.tool, path: out.path });
        }
        Ok(set)
    }

    fn binary_name(&self) -> String {
        self.profiler
            .as_ref()
            .map_or_else(|| self.tool.binary().to_string(), |p| p.display().to_string())
    }

    fn plan_with(&self, bin: &str, program: &str, args: &[&str]) -> Plan {
        let line: Vec<String> =
            std::iter::once(program).chain(args.iter().copied()).map(String::from).collect();
        command::plan(self, bin, &line)
    }

    fn write_files(&self, plan: &Plan) -> Result<(), SessionError> {
        std::fs::create_dir_all(&self.out_dir)
            .map_err(|source| SessionError::CreateDir { path: self.out_dir.clone(), source })?;
        for (path, body) in &plan.files {
            std::fs::write(path, body)
                .map_err(|source| SessionError::Write { path: path.clone(), source })?;
        }
        Ok(())
    }

    /// The output, if the profiler left a non-empty one.
    fn check_output(&self) -> Result<Output, SessionError> {
        let out = self.output();
        let empty = std::fs::metadata(&out.path).map_or(true, |m| m.is_file() && m.len() == 0);
        if empty || !out.path.exists() {
            return Err(SessionError::NoOutput { tool: self.tool, path: out.path });
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tools_that_choose_their_counters_refuse_a_list() {
        let e = Session::memory(Tool::Nsys, "o").with_counters(["x"]);
        assert!(matches!(e, Err(SessionError::CountersUnsupported(Tool::Nsys))));
        let e = Session::memory(Tool::RocprofCompute, "o").with_counters(["x"]);
        assert!(e.is_err());
        let e = Session::memory(Tool::Ncu, "o").with_counters(["a", " "]);
        assert!(matches!(e, Err(SessionError::EmptyCounterName)));
    }

    #[test]
    fn passes_per_tool() {
        assert_eq!(Session::full(Tool::Ncu, "o").passes().len(), 0);
        assert_eq!(Session::memory(Tool::Ncu, "o").passes().len(), 1);
        assert_eq!(Session::memory(Tool::Nsys, "o").passes().len(), 0);
        // Every AMD preset once: base 3 + memory 4 + compute 16 + cache 11 (2 of them
        // memory's TCC counters; 2 the TCP-to-TCC atomics L2 bytes need) + stalls 6.
        assert_eq!(Session::full(Tool::Rocprof, "o").passes().concat().len(), 38);
    }

    #[test]
    fn a_missing_profiler_says_what_to_install() {
        let s = Session::memory(Tool::Ncu, "o").profiler("/nonexistent/ncu");
        let e = s.run("./app", &[]).expect_err("no such profiler");
        assert!(e.is_bad_input());
        assert_eq!(e.to_string(), "/nonexistent/ncu: no such file");
        let text = SessionError::NotFound(Tool::Ncu).to_string();
        assert!(text.starts_with("ncu not found on PATH: install Nsight Compute"), "{text}");
    }
}
