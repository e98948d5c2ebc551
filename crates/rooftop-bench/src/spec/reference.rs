//! References a user supplies: expected outputs from files, and a command that computes
//! them, for kernels whose work no built-in op does (a fused attention variant, a custom
//! quantisation).
//!
//! - **Files** (`reference = { outputs = { y = "expected/y_{N}.npy" } }`): every output
//!   buffer's expected contents, a `.npy` file or raw little-endian elements of the
//!   buffer's type (any other extension). Paths are relative to the spec file and may
//!   name size variables in braces (`{N}`), replaced by the case's values. Expected
//!   outputs only mean something for fixed inputs, so every input must be fixed too: read
//!   from a file (`init = { file = "x_{N}.npy" }`) or a constant (`"zeros"`, `"ones"`).
//!   Every file is checked when the spec is loaded (it exists, its type converts, its
//!   length is the buffer's at every size point).
//! - **A command** (`reference = { command = "python3 ref.py" }`): before the check,
//!   rooftop writes every input buffer (its declared length, the values the kernel gets)
//!   as `<name>.npy` into the directory `$ROOFTOP_INPUTS`, with `case.json` describing the
//!   case, runs the command with `sh -c` in the spec file's directory, and reads one
//!   `<name>.npy` per output from `$ROOFTOP_OUTPUTS`. The environment also carries
//!   `ROOFTOP_KERNEL` and `ROOFTOP_SIZE_<VAR>` per size variable. The outputs of a case
//!   are kept for the other launches of the same case (`--autotune`) while its inputs
//!   are the same (a fingerprint of every input byte).
//!
//! Conversions between file and buffer types are those of `npy::to_buffer`.

use super::{npy, KernelSpec, ReferenceDecl, SpecError, SpecKernel};
use crate::backend::HostBuf;
use crate::case::Case;
use crate::suite::BufferSpec;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};

/// A path with `{VAR}` placeholders.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathTemplate(pub String);

impl PathTemplate {
    /// The placeholders, in order.
    pub(crate) fn variables(&self) -> Result<Vec<String>, String> {
        let mut out = Vec::new();
        let mut rest = self.0.as_str();
        while let Some(open) = rest.find('{') {
            let Some(close) = rest[open..].find('}') else {
                return Err(format!("`{}`: a `{{` is not closed", self.0));
            };
            out.push(rest[open + 1..open + close].to_string());
            rest = &rest[open + close + 1..];
        }
        Ok(out)
    }

    /// The path at a size point (`vars` and `point` in the same order).
    pub(crate) fn resolve(&self, vars: &[&str], point: &[u64]) -> Result<PathBuf, String> {
        let mut out = self.0.clone();
        for v in self.variables()? {
            let Some(i) = vars.iter().position(|x| *x == v) else {
                return Err(format!(
                    "`{}`: unknown size variable `{{{v}}}` (expected one of {})",
                    self.0,
                    vars.join(", ")
                ));
            };
            let value = point.get(i).copied().unwrap_or(0);
            out = out.replace(&format!("{{{v}}}"), &value.to_string());
        }
        Ok(PathBuf::from(out))
    }
}

/// A reference command and where it runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandRef {
    /// Run with `sh -c`.
    pub command: String,
    /// Working directory (the spec file's).
    pub dir: PathBuf,
}

/// What can be checked without sizes: every output has exactly one file, no file names a
/// buffer that is not an output, every input of a file reference is fixed, every path
/// names only size variables.
pub(crate) fn check_static(s: &KernelSpec) -> Result<(), SpecError> {
    let vars: Vec<&str> = s.vars.iter().map(String::as_str).collect();
    let check_vars = |t: &PathTemplate, field: String| -> Result<(), SpecError> {
        for v in t.variables().map_err(|e| SpecError::field(&s.name, field.clone(), e))? {
            if !vars.contains(&v.as_str()) {
                return Err(SpecError::field(
                    &s.name,
                    field,
                    format!(
                        "`{{{v}}}` in `{}` is not a size variable (expected one of {})",
                        t.0,
                        vars.join(", ")
                    ),
                ));
            }
        }
        Ok(())
    };
    for (i, b) in s.buffers.iter().enumerate() {
        if let Some(t) = &b.file {
            if b.output {
                return Err(SpecError::field(
                    &s.name,
                    format!("buffers[{i}].init"),
                    "an output buffer is not read from a file (expected outputs go in \
                     `reference = { outputs = { ... } }`)",
                ));
            }
            check_vars(t, format!("buffers[{i}].init"))?;
        }
    }
    let ReferenceDecl::Files(files) = &s.reference else { return Ok(()) };
    for (name, t) in files {
        if !s.buffers.iter().any(|b| b.output && &b.name == name) {
            let outs: Vec<&str> =
                s.buffers.iter().filter(|b| b.output).map(|b| b.name.as_str()).collect();
            return Err(SpecError::field(
                &s.name,
                format!("reference.outputs.{name}"),
                format!("`{name}` is not an output buffer (the outputs are {})", outs.join(", ")),
            ));
        }
        check_vars(t, format!("reference.outputs.{name}"))?;
    }
    for b in s.buffers.iter().filter(|b| b.output) {
        if !files.iter().any(|(n, _)| n == &b.name) {
            return Err(SpecError::field(
                &s.name,
                "reference.outputs",
                format!("no expected file for output `{}`: every output needs one", b.name),
            ));
        }
    }
    for (i, b) in s.buffers.iter().enumerate().filter(|(_, b)| !b.output) {
        let fixed = b.file.is_some() || b.init.as_ref().is_some_and(is_constant);
        if !fixed {
            return Err(SpecError::field(
                &s.name,
                format!("buffers[{i}].init"),
                format!(
                    "input `{}` is random, but expected outputs from files only hold for fixed \
                     inputs: read it from a file (`init = {{ file = \"{}_{{...}}.npy\" }}`) or \
                     make it a constant (\"zeros\", \"ones\"); or use a reference command, \
                     which sees the random inputs",
                    b.name, b.name
                ),
            ));
        }
    }
    Ok(())
}

/// The size variables of a kernel and the values of `case`, in order.
fn point_of<'a>(k: &'a SpecKernel, case: &Case) -> (Vec<&'a str>, Vec<u64>) {
    (k.spec().vars.iter().map(String::as_str).collect(), k.point(case))
}

/// The file input buffer `index` is read from at `case`, if any.
pub(crate) fn input_file(
    k: &SpecKernel,
    case: &Case,
    index: usize,
) -> Result<Option<PathBuf>, String> {
    let Some(t) = k.spec().buffers.get(index).and_then(|b| b.file.as_ref()) else {
        return Ok(None);
    };
    let (vars, point) = point_of(k, case);
    t.resolve(&vars, &point).map(Some)
}

/// The expected-output files of a file reference at `case`, in output order.
fn output_files(k: &SpecKernel, case: &Case) -> Result<Vec<PathBuf>, String> {
    let ReferenceDecl::Files(files) = &k.spec().reference else { return Ok(Vec::new()) };
    let (vars, point) = point_of(k, case);
    k.spec()
        .buffers
        .iter()
        .filter(|b| b.output)
        .map(|b| match files.iter().find(|(n, _)| n == &b.name) {
            Some((_, t)) => t.resolve(&vars, &point),
            None => Err(format!("no expected file for output `{}`", b.name)),
        })
        .collect()
}

/// At one size point: every data file exists and fills its buffer.
pub(crate) fn check_point_files(k: &SpecKernel, case: &Case) -> Result<(), SpecError> {
    let declared = k.declared_buffers(case);
    for (i, b) in declared.iter().enumerate() {
        if let Some(p) = input_file(k, case, i).map_err(|e| {
            SpecError::field(k.spec().name.as_str(), format!("buffers[{i}].init"), e)
        })? {
            npy::check_file(&p, b.dtype, b.len).map_err(|e| {
                SpecError::field(k.spec().name.as_str(), format!("buffers[{i}].init"), e)
            })?;
        }
    }
    let files = output_files(k, case)
        .map_err(|e| SpecError::field(k.spec().name.as_str(), "reference.outputs", e))?;
    for (b, p) in declared.iter().filter(|b| b.output).zip(&files) {
        npy::check_file(p, b.dtype, b.len).map_err(|e| {
            SpecError::field(k.spec().name.as_str(), format!("reference.outputs.{}", b.name), e)
        })?;
    }
    Ok(())
}

/// The expected outputs of a file reference at `case` (declared lengths, output order).
pub(crate) fn read_expected(k: &SpecKernel, case: &Case) -> Result<Vec<HostBuf>, String> {
    let files = output_files(k, case)?;
    let declared = k.declared_buffers(case);
    declared
        .iter()
        .filter(|b| b.output)
        .zip(&files)
        .map(|(b, p)| npy::load_buffer(p, b.dtype, b.len))
        .collect()
}

/// A file name for buffer `name` (position `i`): the name itself when it is a plain file
/// name, else `buffer<i>`.
pub fn file_stem(name: &str, i: usize) -> String {
    let plain = !name.is_empty()
        && name != "case"
        && name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
        && !name.starts_with('.');
    if plain {
        name.to_string()
    } else {
        format!("buffer{i}")
    }
}

/// What one run of a reference command gets.
#[derive(Debug)]
pub struct CommandCase<'a> {
    pub kernel: &'a str,
    /// Size variables and their values.
    pub sizes: Vec<(&'a str, u64)>,
    /// Declared buffers in spec order (outputs without their guard).
    pub buffers: &'a [BufferSpec],
    /// The inputs' contents, one per input buffer in order (declared lengths).
    pub inputs: Vec<&'a HostBuf>,
}

/// Runs the command on the inputs and returns the outputs (declared lengths, output
/// order). Errors are one sentence naming the command, the case and what went wrong
/// (with the end of its stderr).
pub(crate) fn run_command(c: &CommandRef, case: &CommandCase<'_>) -> Result<Vec<HostBuf>, String> {
    static RUNS: AtomicU64 = AtomicU64::new(0);
    let tmp = std::env::temp_dir().join(format!(
        "rooftop-reference-{}-{}",
        std::process::id(),
        RUNS.fetch_add(1, Ordering::Relaxed)
    ));
    let result = run_in(c, case, &tmp);
    let _ = std::fs::remove_dir_all(&tmp);
    result
}

fn label(case: &CommandCase<'_>) -> String {
    let sizes: Vec<String> = case.sizes.iter().map(|(k, v)| format!("{k}={v}")).collect();
    format!("kernel `{}` at {}", case.kernel, sizes.join(" "))
}

fn run_in(c: &CommandRef, case: &CommandCase<'_>, tmp: &Path) -> Result<Vec<HostBuf>, String> {
    let (ins, outs) = (tmp.join("inputs"), tmp.join("outputs"));
    for d in [&ins, &outs] {
        std::fs::create_dir_all(d)
            .map_err(|e| format!("cannot create {} for the reference command: {e}", d.display()))?;
    }
    let mut json = format!("{{\"kernel\": {}, \"sizes\": {{", json_str(case.kernel));
    for (i, (k, v)) in case.sizes.iter().enumerate() {
        let _ = write!(json, "{}{}: {v}", if i > 0 { ", " } else { "" }, json_str(k));
    }
    json.push_str("}, \"inputs\": [");
    let mut inputs = case.inputs.iter();
    let mut first = [true, true];
    let mut outputs_json = String::new();
    for (i, b) in case.buffers.iter().enumerate() {
        let file = format!("{}.npy", file_stem(b.name, i));
        let entry = format!(
            "{{\"name\": {}, \"dtype\": \"{}\", \"len\": {}, \"file\": {}}}",
            json_str(b.name),
            b.dtype.as_str(),
            b.len,
            json_str(&file)
        );
        if b.output {
            if !first[1] {
                outputs_json.push_str(", ");
            }
            first[1] = false;
            outputs_json.push_str(&entry);
            continue;
        }
        if !first[0] {
            json.push_str(", ");
        }
        first[0] = false;
        json.push_str(&entry);
        let Some(data) = inputs.next() else {
            return Err(format!("{}: input `{}` has no contents", label(case), b.name));
        };
        let path = ins.join(&file);
        std::fs::write(&path, npy::write(data, b.dtype))
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    let _ = write!(json, "], \"outputs\": [{outputs_json}]}}");
    let case_file = ins.join("case.json");
    std::fs::write(&case_file, json)
        .map_err(|e| format!("cannot write {}: {e}", case_file.display()))?;

    let mut cmd = shell(&c.command);
    cmd.current_dir(&c.dir)
        .env("ROOFTOP_INPUTS", &ins)
        .env("ROOFTOP_OUTPUTS", &outs)
        .env("ROOFTOP_CASE", &case_file)
        .env("ROOFTOP_KERNEL", case.kernel);
    for (k, v) in &case.sizes {
        cmd.env(format!("ROOFTOP_SIZE_{k}"), v.to_string());
    }
    let out = cmd.output().map_err(|e| {
        format!(
            "reference command `{}` ({}) could not start in {}: {e}",
            c.command,
            label(case),
            c.dir.display()
        )
    })?;
    if !out.status.success() {
        return Err(format!(
            "reference command `{}` ({}) failed ({}){}",
            c.command,
            label(case),
            out.status,
            tail(&out.stderr)
        ));
    }
    let mut result = Vec::new();
    for (i, b) in case.buffers.iter().enumerate().filter(|(_, b)| b.output) {
        let path = outs.join(format!("{}.npy", file_stem(b.name, i)));
        if !path.exists() {
            return Err(format!(
                "reference command `{}` ({}) did not write output `{}`: expected \
                 $ROOFTOP_OUTPUTS/{} ({} {} elements, .npy){}",
                c.command,
                label(case),
                b.name,
                path.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default(),
                b.len,
                b.dtype.as_str(),
                tail(&out.stderr)
            ));
        }
        let a = npy::read(&path).map_err(|e| {
            format!("reference command `{}` ({}): its output {e}", c.command, label(case))
        })?;
        let buf = npy::to_buffer(&a, b.dtype, b.len, &format!("output `{}`", b.name))
            .map_err(|e| format!("reference command `{}` ({}): {e}", c.command, label(case)))?;
        result.push(buf);
    }
    Ok(result)
}

#[cfg(unix)]
fn shell(command: &str) -> Command {
    let mut c = Command::new("sh");
    c.arg("-c").arg(command);
    c
}

#[cfg(not(unix))]
fn shell(command: &str) -> Command {
    let mut c = Command::new("cmd");
    c.arg("/C").arg(command);
    c
}

/// The last lines of a command's stderr, for an error message.
fn tail(stderr: &[u8]) -> String {
    let text = String::from_utf8_lossy(stderr);
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    if lines.is_empty() {
        return String::new();
    }
    let from = lines.len().saturating_sub(6);
    format!("; its stderr ends: {}", lines[from..].join(" | "))
}

fn json_str(s: &str) -> String {
    serde_json::Value::String(s.to_string()).to_string()
}

/// A fingerprint of buffers' contents (every byte), to reuse a command's outputs for
/// the same inputs.
pub fn fingerprint(bufs: &[&HostBuf]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut mix = |w: u64| {
        h = (h ^ w).wrapping_mul(0x100_0000_01b3).rotate_left(29);
    };
    for b in bufs {
        mix(b.len() as u64);
        match b {
            HostBuf::F32(v) => v.iter().for_each(|x| mix(u64::from(x.to_bits()))),
            HostBuf::F64(v) => v.iter().for_each(|x| mix(x.to_bits())),
            HostBuf::U16(v) => v.iter().for_each(|x| mix(u64::from(*x))),
            HostBuf::U8(v) => v.iter().for_each(|x| mix(u64::from(*x))),
            HostBuf::I8(v) => v.iter().for_each(|x| mix(*x as u64)),
            HostBuf::U32(v) => v.iter().for_each(|x| mix(u64::from(*x))),
        }
    }
    h
}

/// Whether a buffer's fill is a constant (a fixed input for a file reference).
pub fn is_constant(init: &crate::rng::Init) -> bool {
    use crate::rng::Init;
    match init {
        Init::Uniform { lo, hi } => lo == hi,
        Init::Int { lo, hi } => lo == hi,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::DType;
    use crate::rng::Init;

    #[test]
    fn templates_name_size_variables() {
        let t = PathTemplate("data/y_{N}x{K}.npy".into());
        assert_eq!(t.variables().unwrap(), vec!["N", "K"]);
        assert_eq!(t.resolve(&["N", "K"], &[4, 8]).unwrap(), PathBuf::from("data/y_4x8.npy"));
        let e = t.resolve(&["M"], &[1]).unwrap_err();
        assert!(e.contains("unknown size variable `{N}` (expected one of M)"), "{e}");
        assert!(PathTemplate("a{N".into()).variables().unwrap_err().contains("not closed"));
    }

    #[test]
    fn file_names_of_buffers() {
        assert_eq!(file_stem("x", 0), "x");
        assert_eq!(file_stem("q/k", 2), "buffer2");
        assert_eq!(file_stem("case", 1), "buffer1");
        assert_eq!(file_stem("..", 3), "buffer3");
    }

    #[cfg(unix)]
    #[test]
    fn a_shell_command_sees_the_inputs_and_its_outputs_are_read() {
        let bufs = [
            BufferSpec::input("x", DType::F32, 3, Init::Poison),
            BufferSpec::output("y", DType::F32, 3),
        ];
        let x = HostBuf::F32(vec![1.0, 2.0, 3.0]);
        let case =
            CommandCase { kernel: "k", sizes: vec![("N", 3)], buffers: &bufs, inputs: vec![&x] };
        // The command copies its input to its output: y = x.
        let c = CommandRef {
            command: "test \"$ROOFTOP_SIZE_N\" = 3 && grep -q '\"len\": 3' \"$ROOFTOP_CASE\" && \
                      cp \"$ROOFTOP_INPUTS/x.npy\" \"$ROOFTOP_OUTPUTS/y.npy\""
                .into(),
            dir: std::env::temp_dir(),
        };
        assert_eq!(run_command(&c, &case).unwrap(), vec![x.clone()]);
        let fail = CommandRef { command: "echo boom >&2; exit 3".into(), ..c.clone() };
        let e = run_command(&fail, &case).unwrap_err();
        assert!(e.contains("failed (exit status: 3); its stderr ends: boom"), "{e}");
        let silent = CommandRef { command: "true".into(), ..c };
        let e = run_command(&silent, &case).unwrap_err();
        assert!(e.contains("did not write output `y`: expected $ROOFTOP_OUTPUTS/y.npy"), "{e}");
    }

    #[test]
    fn fingerprints_see_every_element() {
        let a = HostBuf::F32(vec![0.0; 1000]);
        let mut v = vec![0.0; 1000];
        v[777] = 1.0;
        let b = HostBuf::F32(v);
        assert_ne!(fingerprint(&[&a]), fingerprint(&[&b]));
        assert_eq!(fingerprint(&[&a]), fingerprint(&[&a.clone()]));
    }
}
