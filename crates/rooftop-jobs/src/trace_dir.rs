//! A [`SlurmPlan`] for `rooftop trace DIR --slurm` from the run's settings: which
//! `rooftop trace` arguments the map tasks and the reduce job get, where the report,
//! scripts and tables go, and the text that shows a plan (`--dry-run`) or a submission.
//!
//! ```
//! use rooftop_jobs::trace_dir::TraceDirJob;
//! use std::path::PathBuf;
//!
//! let job = TraceDirJob {
//!     rooftop: PathBuf::from("/opt/rooftop"),
//!     traces: vec![PathBuf::from("/runs/r0.json.gz"), PathBuf::from("/runs/r1.json.gz")],
//!     work_dir: PathBuf::from("/scratch/rt"),
//!     report_format: "md".to_string(),
//!     gpus_per_node: Some(8),
//!     ..TraceDirJob::default()
//! };
//! let plan = job.plan();
//! assert_eq!(plan.report, PathBuf::from("/scratch/rt/report.md"));
//! assert!(plan.reduce_args.contains(&"--gpus-per-node".to_string()));
//! assert!(rooftop_jobs::trace_dir::dry_run_text(&plan).contains("nothing was submitted"));
//! ```

use crate::{SlurmPlan, Submitted};
use std::path::{Path, PathBuf};

/// The settings of a `--slurm` run of `rooftop trace` on a directory of rank traces.
/// Paths should be absolute ([`absolute`]): the compute nodes run elsewhere.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TraceDirJob {
    /// The rooftop binary the compute nodes run.
    pub rooftop: PathBuf,
    /// The rank traces; array task `i` maps `traces[i]`.
    pub traces: Vec<PathBuf>,
    /// Scripts, logs and tables go here.
    pub work_dir: PathBuf,
    /// The cross-rank report file; default `WORK_DIR/report.<ext of the format>`.
    pub report: Option<PathBuf>,
    /// `--format` of the report: `table`, `json`, `md`, `html` or `csv`.
    pub report_format: String,
    /// `--device-file` catalogs both jobs load.
    pub device_files: Vec<PathBuf>,
    /// `--device` of the map.
    pub device: Option<String>,
    /// `--top` of the report.
    pub top: usize,
    /// `--gpus-per-node` of the reduce.
    pub gpus_per_node: Option<u32>,
    /// `--intra-link` of the reduce (an interconnect-catalog id).
    pub intra_link: Option<String>,
    /// `--inter-link` of the reduce.
    pub inter_link: Option<String>,
    /// Slurm partition of both jobs.
    pub partition: Option<String>,
    /// At most this many map tasks at once.
    pub array_parallelism: Option<u32>,
    /// More `#SBATCH` options for both jobs.
    pub sbatch_args: Vec<String>,
}

/// The report file's extension for a `--format`: `table` → `txt`, others as named.
pub fn report_extension(format: &str) -> &str {
    if format == "table" {
        "txt"
    } else {
        format
    }
}

/// `p` made absolute against the current directory (as it is when that fails).
pub fn absolute(p: &Path) -> PathBuf {
    if p.is_absolute() {
        return p.to_path_buf();
    }
    std::env::current_dir().map_or_else(|_| p.to_path_buf(), |d| d.join(p))
}

impl TraceDirJob {
    /// The plan: the map gets the catalogs and `--device`, the reduce the catalogs,
    /// `--top` and the multi-rank flags.
    pub fn plan(&self) -> SlurmPlan {
        let mut common = Vec::new();
        for f in &self.device_files {
            common.push("--device-file".to_string());
            common.push(absolute(f).display().to_string());
        }
        let mut map_args = common.clone();
        if let Some(d) = &self.device {
            map_args.extend(["--device".to_string(), d.clone()]);
        }
        let mut reduce_args = common;
        reduce_args.extend(["--top".to_string(), self.top.to_string()]);
        if let Some(g) = self.gpus_per_node {
            reduce_args.extend(["--gpus-per-node".to_string(), g.to_string()]);
        }
        for (flag, v) in [("--intra-link", &self.intra_link), ("--inter-link", &self.inter_link)] {
            if let Some(v) = v {
                reduce_args.extend([flag.to_string(), v.clone()]);
            }
        }
        let ext = report_extension(&self.report_format);
        SlurmPlan {
            rooftop: self.rooftop.clone(),
            traces: self.traces.clone(),
            work_dir: self.work_dir.clone(),
            report: self
                .report
                .clone()
                .unwrap_or_else(|| self.work_dir.join(format!("report.{ext}"))),
            report_format: self.report_format.clone(),
            map_args,
            reduce_args,
            partition: self.partition.clone(),
            array_parallelism: self.array_parallelism,
            sbatch_args: self.sbatch_args.clone(),
        }
    }
}

/// What `--dry-run` prints: both scripts, the manifest's place and the two `sbatch`
/// command lines.
pub fn dry_run_text(plan: &SlurmPlan) -> String {
    let [map, reduce] = plan.commands("sbatch", "<map job id>");
    format!(
        "# {} (written at submission)\n{}\n# {}\n{}\n# {}: one trace per line, {} ranks\n\n# submission (nothing was submitted):\n{}\n{}\n",
        plan.map_script_path().display(),
        plan.map_script(),
        plan.reduce_script_path().display(),
        plan.reduce_script(),
        plan.manifest_path().display(),
        plan.traces.len(),
        map.join(" "),
        reduce.join(" ")
    )
}

/// What a submission prints: the job ids and where the report, tables and logs go.
pub fn submitted_text(plan: &SlurmPlan, done: &Submitted) -> String {
    let limit =
        plan.array_parallelism.map_or_else(String::new, |p| format!(", at most {p} at once"));
    format!(
        "submitted map job {} ({} array tasks{limit}) and reduce job {} (runs after the map)\n\
         report: {}\ntables: {}\nlogs:   {}\n",
        done.map_job,
        plan.traces.len(),
        done.reduce_job,
        plan.report.display(),
        plan.tables_dir().display(),
        plan.logs_dir().display()
    )
}
