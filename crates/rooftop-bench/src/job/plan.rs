//! Planning: what a request runs on one backend. Error messages name the `rooftop bench`
//! flag each field of [`BenchRequest`] mirrors.

use super::JobError;
use crate::any::AnyBackend;
use crate::backend::{Backend, Implementation, Launch};
use crate::harness::TimingOptions;
use crate::spec::{self, SpecKernel, SpecSet};
use crate::suite::{self, Kernel, KernelId};
use crate::{Case, Selection, Variant, WeightFormatKind};
use rooftop_core::device::DeviceSpec;
use rooftop_core::units::Precision;
use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

/// What to bench, field for field the flags of `rooftop bench` (its `--help` says what
/// each does), parsed: front ends turn the flags' text into these types with
/// [`parse_kernels`], [`parse_sizes`] and [`parse_flag`], which name the flag in their
/// errors. [`Default`] is the flags' defaults: the default suite on every size, quick
/// ceilings first, [`TimingOptions::default`].
#[derive(Debug, Clone, Default)]
#[allow(clippy::struct_excessive_bools)]
pub struct BenchRequest {
    /// `--kernel`: suite kernels to run (empty: the default suite).
    pub kernels: Vec<KernelId>,
    /// `--kernel` with `--spec`: the spec'd kernels to run, by the spec's names (empty:
    /// all of the spec).
    pub spec_kernels: Vec<String>,
    /// `--all-kernels`: every kernel, probes included.
    pub all_kernels: bool,
    /// `--single-config`: one value per size parameter.
    pub single_config: Option<Vec<u64>>,
    /// `--sizes`: problem sizes in elements.
    pub sizes: Option<Vec<u64>>,
    /// `--dtype`: element type.
    pub dtype: Option<Precision>,
    /// `--bits`: quantized weight bits.
    pub bits: Option<u32>,
    /// `--group-size`: weights per scale.
    pub group_size: Option<u32>,
    /// `--wformat`: quantized weight format.
    pub wformat: Option<WeightFormatKind>,
    /// `--variant`: kernel variant.
    pub variant: Option<Variant>,
    /// `--threads`: worker threads (CPU).
    pub threads: Option<u32>,
    /// `--tile`: tile / chunk parameter (CPU).
    pub tile: Option<u32>,
    /// `--sweep`: `PARAM=V,V,...` launch sweeps (their product is run).
    pub sweep: Vec<String>,
    /// `--autotune`: sweep the backend's launch space.
    pub autotune: bool,
    /// `--no-builtin`: skip the built-in baselines.
    pub no_builtin: bool,
    /// `--no-ceilings`: skip the quick ceilings.
    pub no_ceilings: bool,
    /// `--warmup`, `--min-runs`, ...: the timing of every case.
    pub timing: TimingOptions,
    /// `--spec`: a spec file of your own kernels (docs/spec.md).
    pub spec: Option<PathBuf>,
    /// `--compare A,B`: two spec'd kernels to compare.
    pub compare: Option<Vec<String>>,
    /// `--device`: judge against this device instead of the backend's own.
    pub device: Option<DeviceSpec>,
}

/// The parts of a request checked without a backend.
#[derive(Debug, Clone)]
pub struct BenchSettings {
    /// The sizes, types and variants.
    pub selection: Selection,
    /// The validated timing.
    pub timing: TimingOptions,
    /// The launches of `--sweep`, if any.
    pub sweep: Option<Vec<Launch>>,
}

/// `--kernel`'s names as a request takes them: with a spec, the spec's kernels by name
/// (checked against the spec when it is read); else suite kernels, each parsed into its
/// [`KernelId`] (an unknown name is an input error with the closest names).
pub fn parse_kernels(
    names: &[String],
    spec: bool,
) -> Result<(Vec<KernelId>, Vec<String>), JobError> {
    if spec {
        return Ok((Vec::new(), names.to_vec()));
    }
    let ids = names
        .iter()
        .map(|n| n.parse::<KernelId>().map_err(|e| JobError::Input(format!("--kernel: {e}"))))
        .collect::<Result<_, _>>()?;
    Ok((ids, Vec::new()))
}

impl BenchRequest {
    /// Parses the sweep and checks the timing.
    ///
    /// # Errors
    /// A sweep or timing that does not parse or is out of range.
    pub fn settings(&self) -> Result<BenchSettings, JobError> {
        let selection = Selection {
            single_config: self.single_config.clone(),
            sizes: self.sizes.clone(),
            dtype: self.dtype,
            bits: self.bits,
            group_size: self.group_size,
            wformat: self.wformat,
            variant: self.variant,
        };
        let t = &self.timing;
        for (v, flag) in [
            (t.warmup_time_s, "--warmup-time"),
            (t.min_time_s, "--min-time"),
            (t.min_sample_s, "--min-sample-time"),
        ] {
            if !(v.is_finite() && v >= 0.0) {
                return Err(JobError::Input(format!("{flag}: expected seconds >= 0, got {v}")));
            }
        }
        if t.min_runs == 0 || t.max_runs < t.min_runs {
            return Err(JobError::Input(format!(
                "--min-runs {} / --max-runs {}: need 1 <= min-runs <= max-runs",
                t.min_runs, t.max_runs
            )));
        }
        let base = Launch { threads: self.threads, tile: self.tile, ..Launch::default() };
        let sweep =
            if self.sweep.is_empty() { None } else { Some(parse_sweep(&self.sweep, base)?) };
        Ok(BenchSettings { selection, timing: t.clone(), sweep })
    }

    fn spec_path(&self) -> String {
        self.spec.as_ref().map_or_else(String::new, |p| p.display().to_string())
    }

    /// Options of the suite that do not apply to spec'd kernels.
    fn refuse_suite_options(&self) -> Result<(), JobError> {
        let given = [
            (!self.kernels.is_empty(), "suite kernels (name the spec's kernels)"),
            (self.all_kernels, "--all-kernels"),
            (self.sizes.is_some(), "--sizes (use --single-config or the spec's `sizes`)"),
            (
                !self.sweep.is_empty(),
                "--sweep (list blocks in the spec's `block` and use --autotune)",
            ),
            (self.threads.is_some(), "--threads"),
            (self.tile.is_some(), "--tile"),
            (
                self.dtype.is_some() || self.bits.is_some() || self.group_size.is_some(),
                "--dtype/--bits/--group-size (the spec's `work` sets them)",
            ),
            (
                self.wformat.is_some() || self.variant.is_some(),
                "--wformat/--variant (the spec's `work` sets them)",
            ),
        ];
        match given.iter().find(|(g, _)| *g) {
            Some((_, flag)) => {
                Err(JobError::Input(format!("--spec: {flag} does not apply to spec'd kernels")))
            }
            None => Ok(()),
        }
    }

    /// The spec'd kernels to run: `compare`, `kernels`, or all of the spec.
    fn spec_kernels(&self, set: &SpecSet) -> Result<Vec<&'static SpecKernel>, JobError> {
        let names: Vec<&str> = match (&self.compare, self.spec_kernels.is_empty()) {
            (Some(c), _) => {
                let [x, y] = &c[..] else {
                    return Err(JobError::Input(format!(
                        "--compare: expected two kernels A,B, got {}",
                        c.len()
                    )));
                };
                if x == y {
                    return Err(JobError::Input(format!("--compare: `{x}` with itself")));
                }
                vec![x.as_str(), y.as_str()]
            }
            (None, false) => self.spec_kernels.iter().map(String::as_str).collect(),
            (None, true) => return Ok(set.kernels().to_vec()),
        };
        let ks = names
            .iter()
            .map(|n| {
                set.find(n)
                    .map_err(|e| JobError::Input(format!("--spec {}: {e}", self.spec_path())))
            })
            .collect::<Result<Vec<_>, _>>()?;
        if let [x, y] = ks[..] {
            if self.compare.is_some() && x.spec().vars != y.spec().vars {
                return Err(JobError::Input(format!(
                    "--compare: `{}` has size variables [{}], `{}` [{}]: they must be the same",
                    x.spec().name,
                    x.spec().vars.join(", "),
                    y.spec().name,
                    y.spec().vars.join(", ")
                )));
            }
        }
        Ok(ks)
    }
}

/// A flag's value parsed by its type's [`FromStr`] (`--dtype` into a [`Precision`],
/// `--wformat` into a [`WeightFormatKind`], `--variant` into a [`Variant`]); errors start
/// with `flag` and list the accepted values.
///
/// ```
/// use rooftop_bench::job::parse_flag;
/// use rooftop_bench::Variant;
/// assert_eq!(parse_flag::<Variant>("Scalar", "--variant")?, Variant::Scalar);
/// let e = parse_flag::<Variant>("nope", "--variant").unwrap_err().to_string();
/// assert!(e.starts_with("--variant: unknown variant `nope` (expected vector or scalar"));
/// # Ok::<(), rooftop_bench::job::JobError>(())
/// ```
///
/// # Errors
/// The text is not one of the type's values.
pub fn parse_flag<T>(text: &str, flag: &str) -> Result<T, JobError>
where
    T: FromStr,
    T::Err: fmt::Display,
{
    text.parse().map_err(|e| JobError::Input(format!("{flag}: {e}")))
}

/// The values of a size list (`--sizes`, `--single-config`), each by [`parse_size`].
///
/// # Errors
/// The first item that is not a size.
pub fn parse_sizes(items: &[String], flag: &str) -> Result<Vec<u64>, JobError> {
    items.iter().map(|s| parse_size(s, flag)).collect()
}

/// Parses `1M`, `4096`, `2Gi`, `16k` (binary multiples); errors start with `flag`.
///
/// ```
/// use rooftop_bench::job::parse_size;
/// assert_eq!(parse_size("16M", "--sizes")?, 16 << 20);
/// assert!(parse_size("12Q", "--sizes").is_err());
/// # Ok::<(), rooftop_bench::job::JobError>(())
/// ```
///
/// # Errors
/// Not a number, an unknown suffix, zero, or past `u64`.
pub fn parse_size(text: &str, flag: &str) -> Result<u64, JobError> {
    let trimmed = text.trim();
    let (digits, multiplier) = match trimmed.trim_end_matches('i').char_indices().last() {
        Some((at, suffix)) if suffix.is_ascii_alphabetic() => {
            let mult: u64 = match suffix.to_ascii_uppercase() {
                'K' => 1 << 10,
                'M' => 1 << 20,
                'G' => 1 << 30,
                _ => {
                    return Err(JobError::Input(format!(
                        "{flag}: `{text}` has an unknown suffix `{suffix}` (expected K, M or G)"
                    )))
                }
            };
            (&trimmed[..at], mult)
        }
        _ => (trimmed, 1),
    };
    let value: u64 = digits.trim().parse().map_err(|_| {
        JobError::Input(format!("{flag}: `{text}` is not a size (expected e.g. 4096, 16M, 1G)"))
    })?;
    value
        .checked_mul(multiplier)
        .filter(|v| *v > 0)
        .ok_or_else(|| JobError::Input(format!("{flag}: `{text}` must be between 1 and 2^64-1")))
}

/// The launches of `--sweep` items (`threads=1,2`, `tile=64,128`): their product, each
/// starting from `base`.
///
/// # Errors
/// An item without `=`, an unknown parameter, or a value outside 1..=1048576.
pub fn parse_sweep(items: &[String], base: Launch) -> Result<Vec<Launch>, JobError> {
    let mut launches = vec![base];
    for s in items {
        let (key, values) = s.split_once('=').ok_or_else(|| {
            JobError::Input(format!("--sweep `{s}`: expected PARAM=V,V,... (threads or tile)"))
        })?;
        let values: Vec<u32> = values
            .split(',')
            .map(|v| {
                v.trim().parse::<u32>().ok().filter(|n| (1..=1_048_576).contains(n)).ok_or_else(
                    || {
                        JobError::Input(format!(
                            "--sweep `{s}`: `{v}` is not a positive integer up to 1048576"
                        ))
                    },
                )
            })
            .collect::<Result<_, _>>()?;
        let mut next = Vec::new();
        for l in &launches {
            for &v in &values {
                let mut l = *l;
                match key.trim() {
                    "threads" => l.threads = Some(v),
                    "tile" => l.tile = Some(v),
                    other => {
                        return Err(JobError::Input(format!(
                            "--sweep: unknown parameter `{other}` (expected threads or tile)"
                        )))
                    }
                }
                next.push(l);
            }
        }
        launches = next;
    }
    Ok(launches)
}

/// One unit of work: a case with one implementation, at one or several launches.
#[derive(Debug, Clone)]
pub struct PlannedCase {
    /// The kernel (a suite kernel or a spec'd one).
    pub kernel: &'static dyn Kernel,
    /// The spec'd kernel, for kernels of a spec file.
    pub spec: Option<&'static SpecKernel>,
    /// Its sizes and types.
    pub case: Case,
    /// The implementation to run.
    pub implementation: Implementation,
}

/// A request planned for one backend: the cases in order, with what the run needs.
#[derive(Debug)]
pub struct BenchPlan {
    pub(super) cases: Vec<PlannedCase>,
    pub(super) notes: Vec<String>,
    pub(super) settings: BenchSettings,
    pub(super) set: Option<SpecSet>,
    pub(super) request: BenchRequest,
}

impl BenchPlan {
    /// Plans `request` on `backend`. With a spec file, loads it and its kernels' sources
    /// into the backend (the mock simulates them from their references).
    ///
    /// # Errors
    /// An unknown kernel, a kernel the backend lacks (when named), an option that does
    /// not apply to spec'd kernels, a spec that does not load, buffers larger than the
    /// device, or nothing to run.
    pub fn new(
        request: &BenchRequest,
        settings: BenchSettings,
        backend: &mut AnyBackend,
    ) -> Result<BenchPlan, JobError> {
        let set = match &request.spec {
            Some(path) => {
                request.refuse_suite_options()?;
                let set = spec::parse::load(path).map_err(|e| JobError::Input(e.to_string()))?;
                if let AnyBackend::Mock(m) = backend {
                    for k in set.kernels() {
                        m.add_kernel(*k);
                    }
                    // A test hook: the mock writes past these kernels' outputs.
                    if let Ok(v) = std::env::var("ROOFTOP_MOCK_OOB") {
                        m.set_write_past_end(v.split(',').map(str::to_string).collect());
                    }
                }
                spec::load_sources(backend.as_dyn(), &set)
                    .map_err(|e| JobError::Input(format!("--spec {}: {e}", path.display())))?;
                Some(set)
            }
            None => None,
        };
        let (cases, notes) = match &set {
            Some(set) => {
                (plan_spec(request, backend.as_dyn(), set, &settings.selection)?, Vec::new())
            }
            None => plan_suite(request, backend.as_dyn(), &settings.selection)?,
        };
        if cases.is_empty() {
            return Err(JobError::Input(
                "nothing to run: no kernel matched the selection".to_string(),
            ));
        }
        Ok(BenchPlan { cases, notes, settings, set, request: request.clone() })
    }

    /// The cases, in the order they run.
    pub fn cases(&self) -> &[PlannedCase] {
        &self.cases
    }

    /// Whether every case is compute-side at any size the suite runs (gemm and the FMA
    /// probe): such a run needs no memory roof.
    pub fn compute_only(&self) -> bool {
        self.set.is_none()
            && self
                .cases
                .iter()
                .all(|c| matches!(c.kernel.id().suite(), Some(KernelId::Gemm | KernelId::Fma)))
    }

    /// Notes from planning (kernels the backend lacks, skipped).
    pub fn notes(&self) -> &[String] {
        &self.notes
    }

    /// The launches to run `job` with: the spec's blocks, the sweep, the autotune space,
    /// or the backend's default with `threads` / `tile` applied.
    pub(super) fn launches(
        &self,
        job: &PlannedCase,
        backend: &mut dyn Backend,
    ) -> Result<Vec<Launch>, JobError> {
        let r = &self.request;
        Ok(if let Some(k) = job.spec {
            let all = k.launches(&job.case).map_err(|e| JobError::Input(e.to_string()))?;
            if r.autotune {
                all
            } else {
                all.into_iter().take(1).collect()
            }
        } else if let Some(s) = &self.settings.sweep {
            s.clone()
        } else if r.autotune {
            let call_launch = backend.default_launch(&job.case);
            let ids = [];
            let call = crate::backend::KernelCall {
                case: &job.case,
                implementation: &job.implementation.id,
                buffers: &ids,
                launch: &call_launch,
                scalars: &[],
            };
            backend.launch_space(&call)
        } else {
            let mut l = backend.default_launch(&job.case);
            if r.threads.is_some() {
                l.threads = r.threads;
            }
            if r.tile.is_some() {
                l.tile = r.tile;
            }
            vec![l]
        })
    }
}

fn plan_spec(
    r: &BenchRequest,
    backend: &mut dyn Backend,
    set: &SpecSet,
    sel: &Selection,
) -> Result<Vec<PlannedCase>, JobError> {
    let kernels = r.spec_kernels(set)?;
    let mut jobs = Vec::new();
    for k in kernels {
        let name = k.spec().name.as_str();
        let Some(implementation) = backend.implementations(k.id()).into_iter().next() else {
            return Err(JobError::Input(format!(
                "the {} backend has no implementation of `{name}` after loading its source",
                backend.info().backend
            )));
        };
        let cases =
            k.cases(sel).map_err(|e| JobError::Input(format!("--spec {}: {e}", r.spec_path())))?;
        for case in cases {
            jobs.push(PlannedCase {
                kernel: k,
                spec: Some(k),
                case,
                implementation: implementation.clone(),
            });
        }
    }
    Ok(jobs)
}

fn plan_suite(
    r: &BenchRequest,
    backend: &mut dyn Backend,
    sel: &Selection,
) -> Result<(Vec<PlannedCase>, Vec<String>), JobError> {
    if let Some(name) = r.spec_kernels.first() {
        return Err(JobError::Input(format!(
            "--kernel `{name}`: a spec'd kernel needs --spec (the suite's are {})",
            suite::all().iter().map(|k| k.name()).collect::<Vec<_>>().join(", ")
        )));
    }
    let explicit = !r.kernels.is_empty();
    let kernels: Vec<&'static dyn Kernel> = if explicit {
        r.kernels.iter().map(|k| k.def()).collect()
    } else if r.all_kernels {
        suite::all()
    } else {
        suite::all().into_iter().filter(|k| k.in_default_suite()).collect()
    };
    let mut jobs = Vec::new();
    let mut notes = Vec::new();
    for k in kernels {
        let impls: Vec<_> = backend
            .implementations(k.id())
            .into_iter()
            .filter(|i| !(r.no_builtin && i.builtin))
            .collect();
        if impls.is_empty() {
            let msg =
                format!("the {} backend has no `{}` kernel", backend.info().backend, k.name());
            if explicit {
                return Err(JobError::Input(msg));
            }
            notes.push(format!("{msg}: skipped"));
            continue;
        }
        let cases = k.cases(sel).map_err(|e| JobError::Input(e.to_string()))?;
        for case in cases {
            for i in &impls {
                jobs.push(PlannedCase {
                    kernel: k,
                    spec: None,
                    case: case.clone(),
                    implementation: i.clone(),
                });
            }
        }
    }
    // Refuse impossible sizes before running anything.
    if let Some(avail) = backend.available_memory_bytes() {
        for j in &jobs {
            let bytes: u64 = j.kernel.buffers(&j.case).iter().map(suite::BufferSpec::bytes).sum();
            if bytes.saturating_mul(2) > avail {
                return Err(JobError::Input(format!(
                    "{} {}: needs {} of buffers (twice {}: device copy and host reference) \
                     but the {} backend has {} available",
                    j.case.kernel,
                    j.case.label(),
                    rooftop_core::units::si(bytes as f64 * 2.0, "B"),
                    rooftop_core::units::si(bytes as f64, "B"),
                    backend.info().backend,
                    rooftop_core::units::si(avail as f64, "B"),
                )));
            }
        }
    }
    Ok((jobs, notes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_with_binary_suffixes() {
        assert_eq!(parse_size("4096", "--sizes").unwrap(), 4096);
        assert_eq!(parse_size("1M", "--sizes").unwrap(), 1_048_576);
        assert_eq!(parse_size("16k", "--sizes").unwrap(), 16_384);
        assert_eq!(parse_size("2Gi", "--sizes").unwrap(), 2 * 1_073_741_824);
        assert!(parse_size("0", "--sizes").is_err());
        assert!(parse_size("12Q", "--sizes").unwrap_err().to_string().contains("suffix `Q`"));
        assert!(parse_size("abc", "--sizes").is_err());
    }
}
