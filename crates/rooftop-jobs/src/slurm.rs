//! Slurm submission: the map array job and the dependent reduce job (module doc of
//! the crate). Scripts are plain bash with `#SBATCH` lines, written into the work
//! directory (which must be on a filesystem the compute nodes share) so they can be
//! read, edited and resubmitted by hand; `sbatch --parsable` gives the job ids.
//!
//! Every path and argument written into a script is single-quoted for the shell, so
//! file names with spaces or quotes are safe.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

/// What went wrong preparing or submitting the jobs.
#[derive(Debug, thiserror::Error)]
pub enum JobError {
    #[error("cannot write {path}: {source}")]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "cannot run `{program}` ({source}); is Slurm installed here? (--dry-run prints the \
         scripts without submitting)"
    )]
    Spawn {
        program: String,
        #[source]
        source: std::io::Error,
    },
    #[error("`{command}` failed (exit status {status}): {stderr}")]
    Sbatch { command: String, status: String, stderr: String },
    #[error("`{command}` printed `{stdout}`, not a job id")]
    JobId { command: String, stdout: String },
    #[error("no rank traces to submit")]
    Empty,
}

/// Everything the two jobs need.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SlurmPlan {
    /// The rooftop binary the compute nodes run (absolute, on a shared filesystem).
    pub rooftop: PathBuf,
    /// The rank traces, absolute; array task `i` maps `traces[i]`.
    pub traces: Vec<PathBuf>,
    /// Scripts, logs and tables go here (absolute, shared).
    pub work_dir: PathBuf,
    /// The cross-rank report file.
    pub report: PathBuf,
    /// `--format` of the report (`table`, `json`, `md`, `html`, `csv`).
    pub report_format: String,
    /// Extra `rooftop trace` arguments of the map (`--device X`).
    pub map_args: Vec<String>,
    /// Extra `rooftop trace` arguments of the reduce (`--gpus-per-node 8`, `--top 20`).
    pub reduce_args: Vec<String>,
    pub partition: Option<String>,
    /// At most this many map tasks at once (`--array=0-N%P`).
    pub array_parallelism: Option<u32>,
    /// More `#SBATCH` options for both jobs (`--account=ml`, `--time=00:30:00`).
    pub sbatch_args: Vec<String>,
}

/// The submitted jobs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Submitted {
    pub map_job: String,
    pub reduce_job: String,
}

/// Single-quotes `s` for bash.
pub fn quote(s: &str) -> String {
    if !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric() || b"/._-+=:,@%".contains(&b)) {
        return s.to_string();
    }
    format!("'{}'", s.replace('\'', "'\\''"))
}

fn q(p: &Path) -> String {
    quote(&p.to_string_lossy())
}

impl SlurmPlan {
    pub fn tables_dir(&self) -> PathBuf {
        self.work_dir.join("tables")
    }

    pub fn logs_dir(&self) -> PathBuf {
        self.work_dir.join("logs")
    }

    /// The list of traces, one per line (array task `i` reads line `i + 1`).
    pub fn manifest_path(&self) -> PathBuf {
        self.work_dir.join("ranks.txt")
    }

    pub fn map_script_path(&self) -> PathBuf {
        self.work_dir.join("map.sbatch")
    }

    pub fn reduce_script_path(&self) -> PathBuf {
        self.work_dir.join("reduce.sbatch")
    }

    fn header(&self, out: &mut String, name: &str) {
        let _ = writeln!(out, "#!/bin/bash");
        let _ = writeln!(out, "#SBATCH --job-name={name}");
        if let Some(p) = &self.partition {
            let _ = writeln!(out, "#SBATCH --partition={}", quote(p));
        }
        for a in &self.sbatch_args {
            let _ = writeln!(out, "#SBATCH {a}");
        }
    }

    /// The map script: task `$SLURM_ARRAY_TASK_ID` writes one rank's tables.
    pub fn map_script(&self) -> String {
        let n = self.traces.len();
        let mut s = String::new();
        self.header(&mut s, "rooftop-map");
        let array = match self.array_parallelism {
            Some(p) if p > 0 => format!("0-{}%{p}", n.saturating_sub(1)),
            _ => format!("0-{}", n.saturating_sub(1)),
        };
        let _ = writeln!(s, "#SBATCH --array={array}");
        let _ = writeln!(s, "#SBATCH --ntasks=1");
        let _ = writeln!(s, "#SBATCH --output={}", q(&self.logs_dir().join("map-%A_%a.out")));
        let _ = writeln!(
            s,
            "# rooftop map: task i maps the trace on line i+1 of ranks.txt ({n} ranks) to its Parquet tables."
        );
        let _ = writeln!(s, "set -euo pipefail");
        let _ = writeln!(
            s,
            "trace=$(sed -n \"$((SLURM_ARRAY_TASK_ID + 1))p\" {})",
            q(&self.manifest_path())
        );
        let _ = writeln!(s, "name=$(basename \"$trace\")");
        let _ = writeln!(s, "stem=${{name%.gz}}");
        let _ = writeln!(s, "stem=${{stem%.json}}");
        let mut cmd = format!(
            "exec {} trace \"$trace\" --format parquet -o {}/\"$stem\"",
            q(&self.rooftop),
            q(&self.tables_dir())
        );
        for a in &self.map_args {
            let _ = write!(cmd, " {}", quote(a));
        }
        let _ = writeln!(s, "{cmd}");
        s
    }

    /// The reduce script: the cross-rank report from every rank's tables.
    pub fn reduce_script(&self) -> String {
        let mut s = String::new();
        self.header(&mut s, "rooftop-reduce");
        let _ = writeln!(s, "#SBATCH --ntasks=1");
        let _ = writeln!(s, "#SBATCH --output={}", q(&self.logs_dir().join("reduce-%j.out")));
        let _ = writeln!(
            s,
            "# rooftop reduce: the cross-rank report from the rank tables the map wrote."
        );
        let _ = writeln!(s, "set -euo pipefail");
        let mut cmd = format!(
            "exec {} trace {} --format {} -o {}",
            q(&self.rooftop),
            q(&self.tables_dir()),
            quote(&self.report_format),
            q(&self.report)
        );
        for a in &self.reduce_args {
            let _ = write!(cmd, " {}", quote(a));
        }
        let _ = writeln!(s, "{cmd}");
        s
    }

    /// Writes the manifest and both scripts, and creates the tables and logs folders.
    pub fn write(&self) -> Result<(), JobError> {
        if self.traces.is_empty() {
            return Err(JobError::Empty);
        }
        for d in [self.work_dir.clone(), self.tables_dir(), self.logs_dir()] {
            std::fs::create_dir_all(&d)
                .map_err(|e| JobError::Write { path: d.clone(), source: e })?;
        }
        let mut manifest = String::new();
        for t in &self.traces {
            let _ = writeln!(manifest, "{}", t.display());
        }
        for (path, text) in [
            (self.manifest_path(), manifest),
            (self.map_script_path(), self.map_script()),
            (self.reduce_script_path(), self.reduce_script()),
        ] {
            std::fs::write(&path, text)
                .map_err(|e| JobError::Write { path: path.clone(), source: e })?;
        }
        Ok(())
    }

    /// The two `sbatch` command lines (the reduce's dependency on `MAP_JOB`).
    pub fn commands(&self, sbatch: &str, map_job: &str) -> [Vec<String>; 2] {
        [
            vec![
                sbatch.to_string(),
                "--parsable".to_string(),
                self.map_script_path().display().to_string(),
            ],
            vec![
                sbatch.to_string(),
                "--parsable".to_string(),
                format!("--dependency=afterany:{map_job}"),
                self.reduce_script_path().display().to_string(),
            ],
        ]
    }

    /// Writes the files and submits both jobs with `sbatch` (the program name or path).
    pub fn submit(&self, sbatch: &str) -> Result<Submitted, JobError> {
        self.write()?;
        let [map, _] = self.commands(sbatch, "");
        let map_job = run_sbatch(&map)?;
        let [_, reduce] = self.commands(sbatch, &map_job);
        let reduce_job = run_sbatch(&reduce)?;
        Ok(Submitted { map_job, reduce_job })
    }
}

/// Runs one `sbatch --parsable` command; its stdout is `JOBID` or `JOBID;CLUSTER`.
fn run_sbatch(argv: &[String]) -> Result<String, JobError> {
    let command = argv.join(" ");
    let (program, args) = argv.split_first().ok_or(JobError::Empty)?;
    let out = Command::new(program)
        .args(args)
        .output()
        .map_err(|e| JobError::Spawn { program: program.clone(), source: e })?;
    if !out.status.success() {
        return Err(JobError::Sbatch {
            command,
            status: out.status.code().map_or_else(|| "killed".to_string(), |c| c.to_string()),
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        });
    }
    let stdout = String::from_utf8_lossy(&out.stdout).trim().to_string();
    parse_job_id(&stdout).ok_or(JobError::JobId { command, stdout })
}

/// The job id in `sbatch --parsable` output (`1234` or `1234;cluster`).
pub fn parse_job_id(stdout: &str) -> Option<String> {
    let line = stdout.lines().map(str::trim).rfind(|l| !l.is_empty())?;
    let id = line.split(';').next()?.trim();
    (!id.is_empty() && id.bytes().all(|b| b.is_ascii_digit() || b == b'_')).then(|| id.to_string())
}

#[cfg(test)]
#[allow(clippy::many_single_char_names, clippy::cast_possible_wrap)]
mod tests {
    use super::*;

    fn plan() -> SlurmPlan {
        SlurmPlan {
            rooftop: "/shared/bin/rooftop".into(),
            traces: vec!["/data/run 1/rank0.json.gz".into(), "/data/run 1/rank1.json".into()],
            work_dir: "/shared/rooftop-slurm".into(),
            report: "/shared/report.json".into(),
            report_format: "json".into(),
            map_args: vec!["--device".into(), "h100-sxm".into()],
            reduce_args: vec!["--gpus-per-node".into(), "8".into()],
            partition: Some("gpu".into()),
            array_parallelism: Some(4),
            sbatch_args: vec!["--time=00:30:00".into()],
        }
    }

    #[test]
    fn scripts_quote_and_carry_every_option() {
        let p = plan();
        let m = p.map_script();
        assert!(m.contains("#SBATCH --array=0-1%4\n"), "{m}");
        assert!(m.contains("#SBATCH --partition=gpu\n#SBATCH --time=00:30:00\n"), "{m}");
        assert!(
            m.contains("sed -n \"$((SLURM_ARRAY_TASK_ID + 1))p\" /shared/rooftop-slurm/ranks.txt"),
            "{m}"
        );
        assert!(m.contains("exec /shared/bin/rooftop trace \"$trace\" --format parquet -o /shared/rooftop-slurm/tables/\"$stem\" --device h100-sxm"), "{m}");
        let r = p.reduce_script();
        assert!(r.contains("exec /shared/bin/rooftop trace /shared/rooftop-slurm/tables --format json -o /shared/report.json --gpus-per-node 8"), "{r}");
        assert_eq!(quote("it's here"), "'it'\\''s here'");
        assert_eq!(quote(""), "''");
        let [a, b] = p.commands("sbatch", "77");
        assert_eq!(a.join(" "), "sbatch --parsable /shared/rooftop-slurm/map.sbatch");
        assert_eq!(
            b.join(" "),
            "sbatch --parsable --dependency=afterany:77 /shared/rooftop-slurm/reduce.sbatch"
        );
    }

    #[test]
    fn job_ids_from_sbatch_parsable() {
        assert_eq!(parse_job_id("1234\n"), Some("1234".into()));
        assert_eq!(parse_job_id("1234;cluster1"), Some("1234".into()));
        assert_eq!(parse_job_id("sbatch: error: Batch job submission failed"), None);
        assert_eq!(parse_job_id(""), None);
    }

    #[test]
    fn write_lays_out_the_work_dir_and_a_missing_sbatch_is_one_sentence() {
        // A work dir that does not exist yet, inside a scratch directory removed at the end.
        let tmp = tempfile::Builder::new().prefix("rooftop-jobs-").tempdir().unwrap();
        let dir = tmp.path().join("work");
        let p = SlurmPlan { work_dir: dir.clone(), ..plan() };
        let e = p.submit("/nonexistent/sbatch").unwrap_err().to_string();
        assert!(e.contains("cannot run `/nonexistent/sbatch`") && e.contains("--dry-run"), "{e}");
        let manifest = std::fs::read_to_string(dir.join("ranks.txt")).unwrap_or_default();
        assert_eq!(manifest, "/data/run 1/rank0.json.gz\n/data/run 1/rank1.json\n");
        assert!(dir.join("tables").is_dir() && dir.join("logs").is_dir());
        assert!(matches!(SlurmPlan::default().write(), Err(JobError::Empty)));
    }
}
