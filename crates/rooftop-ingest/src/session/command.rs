//! The profiler command lines of a session, as plain data ([`Plan`]): which files to
//! write first, which commands to run in order, and which output to read afterwards.
//!
//! The command lines are the ones each vendor documents for a kernel-level profile:
//! - ncu: `--csv --page raw --print-units base` into a log file (one row per kernel,
//!   base units), `--metrics LIST` or `--set full`; ncu replays each kernel per pass;
//! - nsys: `profile --trace cuda`, then `stats --report cuda_gpu_trace` to CSV;
//! - rocprof (v1): `-i input.txt` with one `pmc:` line per pass, `--timestamp on`;
//! - rocprofv3: the same input file, `--kernel-trace --output-format csv`;
//! - rocprof-compute: `profile` (with `--roof-only` for the roofline preset).

use super::passes::split_passes;
use super::{Preset, Session, Tool};
use rooftop_core::counters::CounterFormat;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// What a session does, in order: write `files`, run `commands` one after the other,
/// then read `output` as `format`.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// Files to write before the first command (rocprof's `input.txt`): path and body.
    pub files: Vec<(PathBuf, String)>,
    /// Command lines, program first.
    pub commands: Vec<Vec<String>>,
    /// The output the counter readers read afterwards (a file or a directory).
    pub output: PathBuf,
    /// Its format.
    pub format: CounterFormat,
    /// What the user should know (passes, what a preset does not apply to).
    pub notes: Vec<String>,
}

impl Plan {
    /// The plan as a shell script to read or copy: each input file as comments, then
    /// the commands ([`shell_line`]), then the notes as comments.
    pub fn script(&self) -> String {
        let mut text = String::new();
        for (path, body) in &self.files {
            let _ = writeln!(text, "# {}:", path.display());
            for l in body.lines() {
                let _ = writeln!(text, "#   {l}");
            }
        }
        for c in &self.commands {
            let _ = writeln!(text, "{}", shell_line(c));
        }
        for n in &self.notes {
            let _ = writeln!(text, "# note: {n}");
        }
        text
    }
}

/// A command line, shell-quoted for copying: arguments made only of safe characters
/// stay bare, the others are single-quoted.
///
/// ```
/// use rooftop_ingest::session::shell_line;
///
/// let cmd: Vec<String> = ["a b", "it's", "x"].iter().map(|s| s.to_string()).collect();
/// assert_eq!(shell_line(&cmd), "'a b' 'it'\\''s' x");
/// ```
pub fn shell_line(cmd: &[String]) -> String {
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

/// Where `tool` leaves its output under `out`, and its format.
pub(super) fn output_of(tool: Tool, out: &Path) -> (PathBuf, CounterFormat) {
    match tool {
        Tool::Ncu => (out.join("ncu_raw.csv"), CounterFormat::NcuRaw),
        Tool::Nsys => (out.join("stats_cuda_gpu_trace.csv"), CounterFormat::NsysGpuTrace),
        Tool::Rocprof => (out.join("results.csv"), CounterFormat::RocprofV1),
        Tool::Rocprofv3 => (out.to_path_buf(), CounterFormat::Rocprofv3Csv),
        Tool::RocprofCompute => (out.to_path_buf(), CounterFormat::RocprofCompute),
    }
}

/// The plan of `session` with the profiler binary `bin` over `program` (program first).
pub(super) fn plan(session: &Session, bin: &str, program: &[String]) -> Plan {
    let out = session.out_dir();
    let s = |p: &Path| p.display().to_string();
    let list = session.counters();
    let (output, format) = output_of(session.tool(), out);
    let mut notes = Vec::new();
    let mut files = Vec::new();
    let mut commands = Vec::new();
    let mut cmd: Vec<String> = vec![bin.to_string()];
    let args = |c: &mut Vec<String>, a: &[&str]| c.extend(a.iter().map(|x| (*x).to_string()));
    match session.tool() {
        Tool::Ncu => {
            args(&mut cmd, &["--target-processes", "all", "--csv", "--page", "raw"]);
            args(&mut cmd, &["--print-units", "base"]);
            if session.explicit_counters().is_none() && session.preset() == Preset::Full {
                args(&mut cmd, &["--set", "full"]);
            } else {
                cmd.extend(["--metrics".into(), list.join(",")]);
            }
            cmd.extend(["--log-file".into(), s(&output)]);
            cmd.extend(program.iter().cloned());
            notes.push("ncu replays each kernel as many times as its metrics need".to_string());
        }
        Tool::Nsys => {
            let rep = out.join("report");
            args(&mut cmd, &["profile", "--trace", "cuda", "--force-overwrite", "true", "-o"]);
            cmd.push(s(&rep));
            cmd.extend(program.iter().cloned());
            commands.push(std::mem::replace(&mut cmd, vec![bin.to_string()]));
            args(&mut cmd, &["stats", "--report", "cuda_gpu_trace", "--format", "csv"]);
            args(&mut cmd, &["--timeunit", "nsec", "--force-export", "true", "--output"]);
            cmd.extend([s(&out.join("stats")), format!("{}.nsys-rep", s(&rep))]);
            notes.push(format!(
                "nsys gives durations and launch shapes only; the {} preset does not apply",
                session.preset().as_str()
            ));
        }
        Tool::Rocprof | Tool::Rocprofv3 => {
            let passes = split_passes(&list);
            let mut input = String::from("# written by rooftop profile: one pmc line per pass\n");
            for p in &passes {
                let _ = writeln!(input, "pmc: {}", p.join(" "));
            }
            let input_path = out.join("input.txt");
            if passes.len() > 1 {
                notes.push(format!(
                    "{} counters in {} passes: the program runs once per pass and the passes \
                     are joined by dispatch index (the program must launch the same kernels \
                     in the same order every run)",
                    list.len(),
                    passes.len()
                ));
            }
            cmd.extend(["-i".into(), s(&input_path)]);
            files.push((input_path, input));
            if session.tool() == Tool::Rocprof {
                args(&mut cmd, &["--timestamp", "on", "-o"]);
                cmd.push(s(&output));
            } else {
                args(&mut cmd, &["--kernel-trace", "--output-format", "csv", "-d"]);
                cmd.push(s(out));
                args(&mut cmd, &["-o", "run", "--"]);
            }
            cmd.extend(program.iter().cloned());
        }
        Tool::RocprofCompute => {
            args(&mut cmd, &["profile", "-n", "rooftop", "--path"]);
            cmd.push(s(out));
            if session.preset() == Preset::Roofline {
                cmd.push("--roof-only".into());
            }
            cmd.push("--".into());
            cmd.extend(program.iter().cloned());
            notes.push(
                "rocprof-compute collects its full counter set and measures the roofline; \
                 the preset only chooses --roof-only for `roofline`"
                    .to_string(),
            );
        }
    }
    commands.push(cmd);
    Plan { files, commands, output, format, notes }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| (*s).to_string()).collect()
    }

    #[test]
    fn ncu_plan_is_the_documented_command() {
        let s = Session::memory(Tool::Ncu, "out")
            .with_counters(["dram__bytes_read.sum", "gpu__time_duration.sum"])
            .expect("ncu takes metrics");
        let p = plan(&s, "ncu", &strings(&["./app", "--n", "1"]));
        assert_eq!(
            shell_line(&p.commands[0]),
            "ncu --target-processes all --csv --page raw --print-units base --metrics \
             dram__bytes_read.sum,gpu__time_duration.sum --log-file out/ncu_raw.csv ./app --n 1"
        );
        assert_eq!(p.format, CounterFormat::NcuRaw);
    }

    #[test]
    fn rocprof_plan_writes_input_txt() {
        let p = plan(&Session::memory(Tool::Rocprof, "o"), "rocprof", &strings(&["./b"]));
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
    fn nsys_and_rocprofv3_plans() {
        let p = plan(&Session::memory(Tool::Nsys, "o"), "nsys", &strings(&["./a"]));
        assert_eq!(
            shell_line(&p.commands[0]),
            "nsys profile --trace cuda --force-overwrite true -o o/report ./a"
        );
        assert_eq!(
            shell_line(&p.commands[1]),
            "nsys stats --report cuda_gpu_trace --format csv --timeunit nsec --force-export \
             true --output o/stats o/report.nsys-rep"
        );
        assert_eq!(p.output, Path::new("o/stats_cuda_gpu_trace.csv"));
        let p = plan(&Session::roofline(Tool::Rocprofv3, "o"), "rocprofv3", &strings(&["./a"]));
        assert_eq!(
            shell_line(&p.commands[0]),
            "rocprofv3 -i o/input.txt --kernel-trace --output-format csv -d o -o run -- ./a"
        );
        let p = plan(&Session::roofline(Tool::RocprofCompute, "o"), "rc", &strings(&["./a"]));
        assert_eq!(shell_line(&p.commands[0]), "rc profile -n rooftop --path o --roof-only -- ./a");
    }

    #[test]
    fn quoting() {
        assert_eq!(shell_line(&strings(&["a b", "it's", "x"])), "'a b' 'it'\\''s' x");
    }
}
