//! Measuring ceilings with the suite's own kernels through the harness, on any backend,
//! and writing them as a device file.
//!
//! **Bandwidth.** The 1-D kernels `read`, `write`, `copy` and `triad` (size `n`, fp32)
//! run at working sets (all arrays of a case together) from 16 KiB up to
//! [`CeilingOptions::max_working_set`] in steps of 2x (full mode), each point checked and
//! timed by the harness like any benchmark case; GB/s = the work model's bytes / median
//! time. Levels are then assigned from the cache capacities the backend's device has
//! for the kernels as they run ([`CeilingOptions::cache_levels`], on a CPU the per-core
//! L1d and L2 times the cores, and the L3): a level's points are those whose working set
//! fits comfortably in it (at most half its capacity) and not in the level below
//! (more than that level's capacity), each bound with 1% slack; DRAM's are those of at least 4x the last cache
//! (STREAM's rule). A level's ceiling per pattern is the median of its points (the lower
//! median for an even count, so that it is one measured point with its working set).
//!
//! Every point is the **best** of its samples (the fastest sample's rate): a roof is what
//! the machine can do, and noise (another process, a timer interrupt) only ever slows a
//! sample down; kernels are then judged by their median against it.
//!
//! Quick mode (what `rooftop bench` runs first) times `triad`, `copy`, `read` and
//! `write` (the access patterns of the suite's memory-bound kernels: two reads and a
//! write, one and one, read-only, write-only) at the suite's own 1-D size (32 Mi elements) or at 4x the last cache
//! if that is larger (256 MiB when no cache is known, 16 MiB on a simulated backend),
//! capped by `max_working_set`; and, when the last-level cache is known, `read` at half
//! its capacity for the cache's own roof (the roof of kernels whose buffers fit in it).
//!
//! **Compute.** The `fma` kernel in fp32 and fp64, `vector` (and `scalar` in full mode);
//! GFLOP/s = 2 x FMAs / median time, beside the theoretical figures the options carry
//! (from `CpuInfo::theoretical_peak` on a CPU).

use super::{BandwidthCeiling, Ceilings, ComputeCeiling, Pattern, SweepPoint};
use crate::backend::Backend;
use crate::case::Case;
use crate::cpu::info::{quote, CpuInfo, TheoreticalPeak};
use crate::error::{BenchError, SuiteError};
use crate::harness::{self, Progress, TimingOptions, Workspace};
use crate::suite::{self, Kernel};
use rooftop_core::device::{ArchFamily, Catalog, DeviceSpec, FigureMeta, MemLevel, Vendor};
use rooftop_core::units::Precision;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicBool, Ordering};

/// What `measure` sweeps.
#[derive(Debug, Clone, PartialEq)]
pub struct CeilingOptions {
    /// DRAM bandwidth and FMA peaks only (what `rooftop bench` measures first).
    pub quick: bool,
    pub timing: TimingOptions,
    /// Largest working set of the sweep, bytes (default: 4x the last-level cache, at
    /// least 256 MiB; 16 MiB on a simulated backend without caches).
    pub max_working_set: Option<u64>,
    /// Capacity of each cache level as the kernels use it (all threads together),
    /// from L1 out; empty when unknown, and then only DRAM is assigned.
    pub cache_levels: Vec<(MemLevel, u64)>,
    /// Theoretical FMA peaks to report beside the measured ones.
    pub theoretical: Vec<TheoreticalPeak>,
    /// Notes to keep with the ceilings (where the theoretical figures came from).
    pub notes: Vec<String>,
    /// Matrix-unit (tensor-core) peaks to measure with the suite's `gemm` kernel through
    /// a backend's implementation; empty on backends without matrix units (the CPU).
    pub matrix: Vec<MatrixProbe>,
}

/// One matrix-unit peak to measure: `gemm` of `shape` in `precision` through
/// `implementation` (its own operand conversion, fp32 buffers in and out), checked
/// normwise against the suite's reference on random inputs in [-1, 1), then timed.
/// Recorded as a [`ComputeCeiling`] with variant `matrix`.
#[derive(Debug, Clone, PartialEq)]
pub struct MatrixProbe {
    pub implementation: String,
    pub precision: Precision,
    /// (m, n, k).
    pub shape: (u64, u64, u64),
    /// What runs, for the notes (`tensor cores: cuBLASLt bf16 8192x8192x8192`).
    pub label: String,
    pub theoretical_gflops: Option<f64>,
    pub theoretical_formula: Option<String>,
}

/// Smallest working set of the sweep.
pub const MIN_WORKING_SET: u64 = 16 << 10;
/// Working set without a known last-level cache.
const DEFAULT_WORKING_SET: u64 = 256 << 20;
/// Largest working set on a simulated backend (no caches to overflow; its times come
/// from the work model), unless the options say otherwise.
const SIMULATED_WORKING_SET: u64 = 16 << 20;

impl CeilingOptions {
    /// Options for a backend whose caches and theoretical peaks are unknown.
    pub fn new(quick: bool, timing: TimingOptions) -> CeilingOptions {
        CeilingOptions {
            quick,
            timing,
            max_working_set: None,
            cache_levels: Vec::new(),
            theoretical: Vec::new(),
            notes: Vec::new(),
            matrix: Vec::new(),
        }
    }

    /// Options for the CPU backend: its cache capacities and theoretical peaks.
    pub fn for_cpu(cpu: &CpuInfo, quick: bool, timing: TimingOptions) -> CeilingOptions {
        let mut theoretical = Vec::new();
        for p in [Precision::Fp32, Precision::Fp64] {
            for scalar in [false, true] {
                theoretical.extend(cpu.theoretical_peak(p, scalar));
            }
        }
        let mut notes = vec![format!(
            "the FMA probe and the vectorised kernels use {}; the fp32/fp64 GEMM micro-kernel \
             uses avx2+fma",
            cpu.kernel_isa
        )];
        match (&cpu.uarch, cpu.fma_width_bits) {
            (Some(u), Some(w)) if cpu.kernel_isa == "avx2+fma" && w > 256 => notes.push(format!(
                "{u} has {w}-bit FMA pipes but this CPU's kernels run 256-bit AVX2: expect at \
                 most {}% of the vector peak",
                100 * 256 / w
            )),
            (None, _) => notes.push(format!(
                "no theoretical FMA peak: {} family {:?} model {:?} is not in rooftop's \
                 micro-architecture table",
                cpu.vendor, cpu.cpu_family, cpu.cpu_model
            )),
            _ => {}
        }
        if cpu.clock().is_none() {
            notes.push("no theoretical FMA peak: the clock is unknown".to_string());
        }
        CeilingOptions {
            cache_levels: cpu.cache_levels(),
            theoretical,
            notes,
            ..CeilingOptions::new(quick, timing)
        }
    }

    pub(crate) fn last_cache(&self) -> Option<u64> {
        self.cache_levels.iter().map(|&(_, b)| b).max()
    }

    /// The sweep's largest working set.
    fn max_ws(&self, simulated: bool) -> u64 {
        self.max_working_set.unwrap_or_else(|| match self.last_cache() {
            Some(c) => (4 * c).max(DEFAULT_WORKING_SET),
            None if simulated => SIMULATED_WORKING_SET,
            None => DEFAULT_WORKING_SET,
        })
    }

    /// Quick mode's DRAM working set.
    pub(crate) fn quick_ws(&self, simulated: bool) -> u64 {
        let ws = match self.last_cache() {
            Some(c) => 4 * c,
            None if simulated => SIMULATED_WORKING_SET,
            None => DEFAULT_WORKING_SET,
        };
        self.max_working_set.map_or(ws, |m| ws.min(m))
    }
}

/// Measures the ceilings of `backend`'s device.
pub fn measure(
    backend: &mut dyn Backend,
    opts: &CeilingOptions,
    stop: &AtomicBool,
    progress: &mut dyn FnMut(Progress<'_>),
) -> Result<Ceilings, BenchError> {
    let mut ws = Workspace::new();
    let r = measure_in(&mut ws, backend, opts, stop, progress);
    ws.release(backend);
    r
}

/// [`measure`] with the buffers of `ws` (kept for the cases that follow, e.g. the suite
/// of `rooftop bench`, whose 1-D kernels use the same buffers).
pub fn measure_in(
    ws: &mut Workspace,
    backend: &mut dyn Backend,
    opts: &CeilingOptions,
    stop: &AtomicBool,
    progress: &mut dyn FnMut(Progress<'_>),
) -> Result<Ceilings, BenchError> {
    let info = backend.info().clone();
    let mut c = Ceilings {
        backend: info.backend.clone(),
        device_name: info.device_name.clone(),
        method: if opts.quick { "quick" } else { "full" }.to_string(),
        parallelism: info.parallelism,
        bandwidth: Vec::new(),
        sweep: Vec::new(),
        compute: Vec::new(),
        notes: opts.notes.clone(),
        caches: opts
            .cache_levels
            .iter()
            .map(|&(level, bytes)| super::CacheCapacity { level, bytes })
            .collect(),
        adjustments: Vec::new(),
    };
    let mut run = Runner { ws, backend, opts: &opts.timing, stop, progress };

    if opts.quick {
        let ws = opts.quick_ws(info.simulated);
        // Triad is STREAM's figure; copy is the shape of every one-in, one-out kernel;
        // read-only has no write-allocate traffic and is the highest on most CPUs, so
        // read-only kernels (sums, row reductions) stay under it; write-only kernels
        // (fills) can beat all three on a machine with streaming stores.
        for pattern in QUICK_PATTERNS {
            if !run.has(pattern.as_str(), &mut c.notes) {
                continue;
            }
            let case = quick_case(pattern, ws, opts, info.simulated)?;
            if let Some(p) = run.point_at(pattern, &case, &mut c.notes)? {
                c.bandwidth.push(BandwidthCeiling {
                    level: MemLevel::Dram,
                    pattern,
                    gbs: p.gbs,
                    working_set_bytes: p.working_set_bytes,
                });
                c.sweep.push(p);
            }
        }
        if let Some(p) = quick_llc(&mut run, opts, info.simulated, &mut c.notes)? {
            c.bandwidth.push(BandwidthCeiling {
                level: MemLevel::Llc,
                pattern: Pattern::Read,
                gbs: p.gbs,
                working_set_bytes: p.working_set_bytes,
            });
            c.sweep.push(p);
        }
        let why = match opts.last_cache() {
            None if info.simulated => "simulated backend: no caches".to_string(),
            None => "no cache size known".to_string(),
            Some(l) if ws >= 4 * l => format!("4x the {} last cache", bytes_label(l)),
            Some(l) => format!(
                "capped by the largest working set allowed; below 4x the {} last cache, so \
                 partly cache-resident",
                bytes_label(l)
            ),
        };
        c.notes.push(format!(
            "quick: DRAM bandwidth = the best sample of triad, copy, read-only and write-only, \
             each at the suite's 32 Mi elements or a {} working set, whichever is larger ({why})",
            bytes_label(ws)
        ));
    } else {
        let max = opts.max_ws(info.simulated).max(MIN_WORKING_SET);
        let mut sizes = Vec::new();
        let mut ws = MIN_WORKING_SET;
        while ws <= max {
            sizes.push(ws);
            ws *= 2;
        }
        'patterns: for pattern in [Pattern::Read, Pattern::Write, Pattern::Copy, Pattern::Triad] {
            if !run.has(pattern.as_str(), &mut c.notes) {
                continue;
            }
            for &ws in &sizes {
                if run.stopped() {
                    break 'patterns;
                }
                match run.point(pattern, ws, &mut c.notes) {
                    Ok(Some(p)) => c.sweep.push(p),
                    Ok(None) => {}
                    // Larger sizes of this pattern would not fit either.
                    Err(BenchError::TooLarge { .. } | BenchError::Backend(_))
                        if ws > MIN_WORKING_SET =>
                    {
                        c.notes.push(format!(
                            "{}: stopped at {}: the buffers do not fit",
                            pattern.as_str(),
                            bytes_label(ws)
                        ));
                        continue 'patterns;
                    }
                    Err(e) => return Err(e),
                }
            }
        }
        let (levels, note) = assign_levels(&c.sweep, &opts.cache_levels);
        c.bandwidth = levels;
        c.notes.push(note);
    }

    let variants: &[bool] = if opts.quick { &[false] } else { &[false, true] };
    let fma = run.has("fma", &mut c.notes);
    for p in [Precision::Fp32, Precision::Fp64] {
        if !fma {
            break;
        }
        for &scalar in variants {
            if run.stopped() {
                break;
            }
            let case = suite::fma::ceiling_case(p, scalar);
            let variant = if scalar { "scalar" } else { "vector" };
            // A backend without this precision (WGSL has no fp64 on most GPUs) skips the
            // peak with a note instead of failing the whole measurement.
            let seconds = match run.best(&case, &mut c.notes) {
                Ok(Some(s)) => s,
                Ok(None) => continue,
                Err(BenchError::Backend(e)) => {
                    c.notes.push(format!("fma {} {variant}: not measured: {e}", p.as_str()));
                    continue;
                }
                Err(e) => return Err(e),
            };
            let kernel = suite::find("fma")?;
            let work = kernel.work(&case)?;
            let t = opts.theoretical.iter().find(|t| t.precision == p && t.variant == variant);
            c.compute.push(ComputeCeiling {
                precision: p,
                variant: variant.to_string(),
                gflops: work.flops / seconds / 1e9,
                theoretical_gflops: t.map(|t| t.gflops),
                theoretical_formula: t.map(|t| t.formula.clone()),
            });
        }
    }
    for probe in &opts.matrix {
        if run.stopped() {
            break;
        }
        let what = format!("{} [{}]", probe.label, probe.implementation);
        match matrix_point(&mut *run.backend, probe, &opts.timing, stop) {
            Ok(Ok(seconds)) => {
                let (m, n, k) = probe.shape;
                let gflops = 2.0 * m as f64 * n as f64 * k as f64 / seconds / 1e9;
                c.notes.push(format!("{} matrix: {what}, {gflops:.0} GFLOP/s", probe.precision));
                c.compute.push(ComputeCeiling {
                    precision: probe.precision,
                    variant: "matrix".to_string(),
                    gflops,
                    theoretical_gflops: probe.theoretical_gflops,
                    theoretical_formula: probe.theoretical_formula.clone(),
                });
            }
            Ok(Err(why)) | Err(BenchError::Backend(crate::error::BackendError::Other(why))) => {
                c.notes.push(format!("{} matrix not measured: {what}: {why}", probe.precision));
            }
            Err(e) => {
                c.notes.push(format!("{} matrix not measured: {what}: {e}", probe.precision));
            }
        }
    }
    if run.stopped() {
        c.notes.push("interrupted: the ceilings are incomplete".to_string());
    }
    Ok(c)
}

/// Normwise relative tolerance of a matrix probe: 4 unit roundoffs of the operand type
/// (the expected error of products of rounded operands with random signs is about
/// 0.8 u), plus fp32 accumulation. A transposed or wrong product is off by ~1.4.
pub fn matrix_tolerance(p: Precision) -> f64 {
    let u = match p {
        Precision::Fp64 => f64::EPSILON / 2.0,
        Precision::Fp32 => f64::from(f32::EPSILON) / 2.0,
        Precision::Tf32 | Precision::Fp16 => 2f64.powi(-11),
        Precision::Bf16 => 2f64.powi(-8),
        Precision::Fp8 => 2f64.powi(-4),
        _ => 0.5,
    };
    4.0 * u + 1e-5
}

/// `‖got - want‖ / ‖want‖` over the elements the reference computed (not NaN); NaN when
/// an output is not finite or nothing was compared.
pub fn normwise_error(got: &[f64], want: &[f64]) -> f64 {
    let (mut num, mut den, mut n) = (0.0, 0.0, 0usize);
    for (&g, &w) in got.iter().zip(want) {
        if w.is_nan() {
            continue;
        }
        if !g.is_finite() {
            return f64::NAN;
        }
        num += (g - w) * (g - w);
        den += w * w;
        n += 1;
    }
    if n == 0 || den == 0.0 || got.len() != want.len() {
        return f64::NAN;
    }
    (num / den).sqrt()
}

/// Median seconds of one matrix probe, or why it was not measured (failed check).
fn matrix_point(
    backend: &mut dyn Backend,
    probe: &MatrixProbe,
    timing: &TimingOptions,
    stop: &AtomicBool,
) -> Result<Result<f64, String>, BenchError> {
    use crate::backend::{HostBuf, KernelCall};
    let kernel = suite::find("gemm")?;
    let (m, n, k) = probe.shape;
    let case = Case {
        kernel: "gemm",
        sizes: vec![("m", m), ("n", n), ("k", k)],
        dtype: probe.precision,
        weights: None,
        variant: None,
    };
    let specs = kernel.buffers(&case);
    let seed = timing.seed ^ (m << 32 ^ n << 16 ^ k);
    let host: Vec<HostBuf> = specs
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let init = if s.output {
                crate::rng::Init::Poison
            } else {
                crate::rng::Init::Uniform { lo: -1.0, hi: 1.0 }
            };
            crate::rng::fill(s.dtype, s.len, init, seed.wrapping_add(i as u64))
        })
        .collect();
    let mut ids = Vec::new();
    let result = (|| -> Result<Result<f64, String>, BenchError> {
        for (s, h) in specs.iter().zip(&host) {
            let id = backend.alloc(s.dtype, s.len)?;
            ids.push(id);
            backend.upload(id, h)?;
        }
        let launch = crate::backend::Launch::default();
        let call = KernelCall {
            case: &case,
            implementation: &probe.implementation,
            buffers: &ids,
            launch: &launch,
            scalars: &[],
        };
        backend.prepare(&call)?;
        let first = backend.run(&call, 1)?;
        let Some(out) = ids.last() else { return Ok(Err("no output buffer".to_string())) };
        let got = backend.download(*out)?.to_f64_lossy();
        let want =
            kernel.reference(&case, &host).first().map(HostBuf::to_f64_lossy).unwrap_or_default();
        let err = normwise_error(&got, &want);
        let tol = matrix_tolerance(probe.precision);
        if err.is_nan() || err > tol {
            return Ok(Err(format!(
                "result check failed: normwise error {err:.3e} > {tol:.3e}; not timed"
            )));
        }
        // Warm-up, then samples of at least min_sample_s until min_runs and min_time_s.
        let mut warm = first;
        let mut runs = 1;
        while runs < timing.warmup_runs.max(1) || warm < timing.warmup_time_s {
            warm += backend.run(&call, 1)?;
            runs += 1;
        }
        let per_run = (warm / f64::from(runs)).max(1e-9);
        let iters = (timing.min_sample_s / per_run).ceil().clamp(1.0, 1e6) as u32;
        let mut times = Vec::new();
        let mut total = 0.0;
        while (times.len() < timing.min_runs as usize || total < timing.min_time_s)
            && times.len() < timing.max_runs.max(1) as usize
        {
            if stop.load(Ordering::Relaxed) {
                break;
            }
            let t = backend.run(&call, iters)?;
            total += t;
            times.push(t / f64::from(iters));
        }
        Ok(crate::stats::Stats::of(&times)
            .map(|s| s.median_s)
            .ok_or_else(|| "interrupted before any sample".to_string()))
    })();
    for id in ids {
        backend.free(id);
    }
    result
}

/// Runs cases through the harness.
pub(crate) struct Runner<'a, 'p> {
    pub(crate) ws: &'a mut Workspace,
    pub(crate) backend: &'a mut dyn Backend,
    pub(crate) opts: &'a TimingOptions,
    pub(crate) stop: &'a AtomicBool,
    pub(crate) progress: &'a mut (dyn FnMut(Progress<'_>) + 'p),
}

impl Runner<'_, '_> {
    fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    /// Whether the backend has our implementation of `kernel`; notes it when not.
    fn has(&self, kernel: &str, notes: &mut Vec<String>) -> bool {
        let ok = self.backend.implementations(kernel).iter().any(|i| !i.builtin);
        if !ok {
            notes.push(format!(
                "{kernel}: not measured, the {} backend has no implementation of it",
                self.backend.info().backend
            ));
        }
        ok
    }

    /// Seconds of the fastest sample of `case` with our implementation (a roof is the
    /// best the machine does); `None` (and a note) when it failed its check or was
    /// interrupted.
    pub(crate) fn best(
        &mut self,
        case: &Case,
        notes: &mut Vec<String>,
    ) -> Result<Option<f64>, BenchError> {
        let kernel = suite::find(case.kernel)?;
        let Some(imp) = self.backend.implementations(case.kernel).into_iter().find(|i| !i.builtin)
        else {
            return Err(BenchError::Suite(SuiteError::BadConfig {
                kernel: case.kernel.to_string(),
                message: format!(
                    "the {} backend has no implementation of it",
                    self.backend.info().backend
                ),
            }));
        };
        let r = harness::run_case_in(
            self.ws,
            self.backend,
            kernel,
            case,
            &imp,
            None,
            self.opts,
            self.stop,
            &mut *self.progress,
        )?;
        match r.timing {
            Some(t) if !r.interrupted => Ok(Some(t.stats.min_s)),
            _ if !r.check.passed => {
                notes.push(format!(
                    "{} {}: result check failed ({}), not used",
                    case.kernel,
                    case.label(),
                    r.check.first_failure.as_deref().unwrap_or("outputs differ")
                ));
                Ok(None)
            }
            _ => Ok(None),
        }
    }

    /// One sweep point: `pattern` at (about) `ws` bytes of arrays.
    fn point(
        &mut self,
        pattern: Pattern,
        ws: u64,
        notes: &mut Vec<String>,
    ) -> Result<Option<SweepPoint>, BenchError> {
        let kernel = suite::find(pattern.as_str())?;
        let case = stream_case(kernel, ws);
        self.point_at(pattern, &case, notes)
    }

    /// One point: `pattern` at `case`.
    pub(crate) fn point_at(
        &mut self,
        pattern: Pattern,
        case: &Case,
        notes: &mut Vec<String>,
    ) -> Result<Option<SweepPoint>, BenchError> {
        let kernel = suite::find(pattern.as_str())?;
        let working_set_bytes: u64 =
            kernel.buffers(case).iter().map(suite::BufferSpec::bytes).sum();
        let Some(seconds) = self.best(case, notes)? else { return Ok(None) };
        let bytes = kernel.work(case)?.bytes();
        Ok(Some(SweepPoint { pattern, working_set_bytes, gbs: bytes / seconds / 1e9 }))
    }
}

/// The patterns of quick mode's DRAM roof.
pub(crate) const QUICK_PATTERNS: [Pattern; 4] =
    [Pattern::Triad, Pattern::Copy, Pattern::Read, Pattern::Write];

/// Quick mode's DRAM case of `pattern`: the suite's 1-D size, or `ws` bytes of buffers if
/// that is more (a simulated backend: `ws` itself, it has no caches to overflow).
pub(crate) fn quick_case(
    pattern: Pattern,
    ws: u64,
    opts: &CeilingOptions,
    simulated: bool,
) -> Result<Case, BenchError> {
    let kernel = suite::find(pattern.as_str())?;
    let by_ws = stream_case(kernel, ws);
    if simulated || opts.max_working_set.is_some() {
        return Ok(by_ws);
    }
    let mut suite_size = by_ws.clone();
    suite_size.sizes = vec![("n", suite::stream::DEFAULT_N)];
    Ok(if suite_size.size("n") > by_ws.size("n") { suite_size } else { by_ws })
}

/// Quick mode's last-level-cache roof: `read` at half the cache (`None` without a known
/// cache, on a simulated backend, or when the read kernel is missing).
pub(crate) fn quick_llc(
    run: &mut Runner<'_, '_>,
    opts: &CeilingOptions,
    simulated: bool,
    notes: &mut Vec<String>,
) -> Result<Option<SweepPoint>, BenchError> {
    let Some(llc) = opts.last_cache() else { return Ok(None) };
    if simulated || !run.has(Pattern::Read.as_str(), notes) {
        return Ok(None);
    }
    let p = run.point(Pattern::Read, llc / 2, notes)?;
    if let Some(p) = &p {
        notes.push(format!(
            "quick: last-level cache bandwidth = the best sample of read-only at {} (half the \
             {} cache): the roof of memory-bound kernels whose buffers fit in it",
            bytes_label(p.working_set_bytes),
            bytes_label(llc)
        ));
    }
    Ok(p)
}

/// The fp32 case of a 1-D kernel whose buffers add up to about `ws` bytes.
fn stream_case(kernel: &dyn Kernel, ws: u64) -> Case {
    const PROBE: u64 = 1 << 16;
    let case = |n: u64| Case {
        kernel: kernel.name(),
        sizes: vec![("n", n)],
        dtype: Precision::Fp32,
        weights: None,
        variant: None,
    };
    // bytes(n) = per_element * n + fixed (a scalar output, say): two probes.
    let bytes =
        |n: u64| -> u64 { kernel.buffers(&case(n)).iter().map(suite::BufferSpec::bytes).sum() };
    let (b1, b2) = (bytes(PROBE), bytes(2 * PROBE));
    let per_element = (b2.saturating_sub(b1) / PROBE).max(1);
    let fixed = b1.saturating_sub(per_element * PROBE);
    case((ws.saturating_sub(fixed) / per_element).max(16))
}

/// Levels from sweep points, per the module doc; returns the ceilings and a note saying
/// how they were assigned.
pub fn assign_levels(
    sweep: &[SweepPoint],
    caches: &[(MemLevel, u64)],
) -> (Vec<BandwidthCeiling>, String) {
    let mut caches = caches.to_vec();
    caches.sort_by_key(|&(_, b)| b);
    let mut ranges: Vec<(MemLevel, u64, u64)> = Vec::new(); // (level, exclusive lo, inclusive hi)
    let mut below = 0;
    for &(level, cap) in &caches {
        ranges.push((level, below, cap / 2));
        below = cap;
    }
    let mut note = String::from("levels: ");
    for &(level, lo, hi) in &ranges {
        let _ = write!(
            note,
            "{} = working sets in ({}, {}]; ",
            level.as_str(),
            bytes_label(lo),
            bytes_label(hi)
        );
    }
    let dram_min = caches.last().map(|&(_, c)| 4 * c);
    match dram_min {
        Some(m) => {
            let _ = write!(note, "dram = working sets >= {} (4x the last cache); ", bytes_label(m));
        }
        None => {
            note.push_str("no cache sizes known: dram = the largest working set of each pattern; ");
        }
    }
    note.push_str("each figure is the (lower) median of its points");

    let mut out = Vec::new();
    for pattern in [Pattern::Read, Pattern::Write, Pattern::Copy, Pattern::Triad] {
        let pts: Vec<&SweepPoint> = sweep.iter().filter(|p| p.pattern == pattern).collect();
        let largest = pts.iter().map(|p| p.working_set_bytes).max();
        let mut levels: Vec<(MemLevel, Vec<&SweepPoint>)> = ranges
            .iter()
            .map(|&(level, lo, hi)| {
                (
                    level,
                    pts.iter().copied().filter(|p| within(p.working_set_bytes, lo, hi)).collect(),
                )
            })
            .collect();
        let dram = pts
            .iter()
            .copied()
            .filter(|p| match dram_min {
                Some(m) => p.working_set_bytes as f64 >= m as f64 * (1.0 - SLACK),
                None => Some(p.working_set_bytes) == largest,
            })
            .collect();
        levels.push((MemLevel::Dram, dram));
        for (level, mut v) in levels {
            if v.is_empty() {
                continue;
            }
            v.sort_by(|a, b| a.gbs.total_cmp(&b.gbs));
            let m = v[(v.len() - 1) / 2];
            out.push(BandwidthCeiling {
                level,
                pattern,
                gbs: m.gbs,
                working_set_bytes: m.working_set_bytes,
            });
        }
    }
    (out, note)
}

/// Relative slack of the level boundaries: a case's arrays add up to its target working
/// set only to within a few elements (and a scalar output).
const SLACK: f64 = 0.01;

/// `lo < ws <= hi`, each bound widened by [`SLACK`].
fn within(ws: u64, lo: u64, hi: u64) -> bool {
    let ws = ws as f64;
    ws > lo as f64 * (1.0 + SLACK) && ws <= hi as f64 * (1.0 + SLACK)
}

/// `16 KiB`, `1 MiB`, `1.5 GiB`.
fn bytes_label(b: u64) -> String {
    let b = b as f64;
    let (v, unit) = if b >= f64::from(1u32 << 30) {
        (b / f64::from(1u32 << 30), "GiB")
    } else if b >= f64::from(1u32 << 20) {
        (b / f64::from(1u32 << 20), "MiB")
    } else if b >= 1024.0 {
        (b / 1024.0, "KiB")
    } else {
        (b, "B")
    };
    if v.fract() == 0.0 {
        format!("{v} {unit}")
    } else {
        format!("{v:.3} {unit}")
    }
}

/// A device file (docs/device-format.md) with `base`'s figures overridden by the
/// measured ceilings, `provenance = "calibrated"`.
///
/// A base from the built-in catalog is extended (`extends = "<id>"`, only the measured
/// figures written, as the format's example does); any other base (a CPU, a device
/// from a user file) is written out in full so that the file stands alone. Measured
/// figures: `memory.bandwidth_gbs` (best DRAM pattern), `llc/l2/l1_bandwidth_gbs` where
/// measured, and `fp32_vector`/`fp64_vector` both as peaks (the roofs the analysis
/// uses) and as achievable ceilings; each says what was measured at which working set.
pub fn device_file_toml(base: &DeviceSpec, ceilings: &Ceilings, date: &str) -> String {
    let measured = |what: String| format!("measured by rooftop ceilings on {date}: {what}");
    let cal = |value: f64, what: String| {
        format!(
            "{{ value = {}, source = {}, provenance = \"calibrated\", confidence = \"medium\" }}",
            num(value),
            quote(&measured(what))
        )
    };
    let best = |level: MemLevel| {
        ceilings
            .bandwidth
            .iter()
            .filter(|b| b.level == level)
            .max_by(|a, b| a.gbs.total_cmp(&b.gbs))
    };
    let bw_what = |b: &BandwidthCeiling| {
        format!(
            "{} at {} ({} ceilings, {} workers)",
            b.pattern.as_str(),
            bytes_label(b.working_set_bytes),
            ceilings.method,
            ceilings.parallelism
        )
    };
    let mut measured_peaks: Vec<(String, String)> = Vec::new();
    for p in [Precision::Fp32, Precision::Fp64] {
        if let Some(cc) =
            ceilings.compute.iter().find(|c| c.precision == p && c.variant == "vector")
        {
            let mut what = format!("{} vector FMA kernel", p.as_str());
            if let Some(t) = cc.theoretical_gflops {
                let _ = write!(
                    what,
                    ", {:.0}% of the theoretical {:.1} GFLOP/s",
                    100.0 * cc.gflops / t,
                    t
                );
            }
            measured_peaks.push((format!("{}_vector", p.as_str()), cal(cc.gflops / 1e3, what)));
        }
    }
    let in_catalog = Catalog::builtin().get(&base.id).is_some();

    let mut t = String::new();
    let _ = writeln!(
        t,
        "# Written by rooftop ceilings on {date} ({} backend, {}).",
        ceilings.backend, ceilings.device_name
    );
    let _ = writeln!(t, "schema_version = 1\n\n[[device]]");
    if in_catalog {
        let _ = writeln!(t, "extends = {}", quote(&base.id));
        let _ = writeln!(t, "provenance = \"calibrated\"\nconfidence = \"medium\"");
        let _ =
            writeln!(t, "source = {}", quote(&format!("measured by rooftop ceilings on {date}")));
    } else {
        write_identity(&mut t, base);
    }

    // Compute.
    if !in_catalog {
        let _ = writeln!(t, "\n[device.compute]");
        let _ = writeln!(t, "num_cu = {}", fig(base, "compute.num_cu", f64::from(base.num_cu)));
        let _ = writeln!(t, "cu_kind = {}", quote(&base.cu_kind));
        let _ = writeln!(
            t,
            "warp_size = {}",
            fig(base, "compute.warp_size", f64::from(base.warp_size))
        );
        if let Some(w) = base.alt_warp_size {
            let _ =
                writeln!(t, "alt_warp_size = {}", fig(base, "compute.alt_warp_size", f64::from(w)));
        }
        if let Some(c) = base.boost_clock_mhz {
            let _ = writeln!(t, "boost_clock_mhz = {}", fig(base, "compute.boost_clock_mhz", c));
        }
    }

    // Peaks: measured ones replace the base's; the others are kept (full write only).
    let _ = writeln!(t, "\n[device.peak_tflops]");
    for (k, v) in &measured_peaks {
        let _ = writeln!(t, "{k} = {v}");
    }
    if !in_catalog {
        for p in &base.peaks {
            let k = format!("{}_{}", p.precision.as_str(), p.unit.as_str());
            if !measured_peaks.iter().any(|(m, _)| *m == k) {
                let _ = writeln!(t, "{k} = {}", fig(base, &format!("peak_tflops.{k}"), p.tflops));
            }
        }
    }
    if !measured_peaks.is_empty() || (!in_catalog && !base.achievable.is_empty()) {
        let _ = writeln!(t, "\n[device.achievable_tflops]");
        for (k, v) in &measured_peaks {
            let _ = writeln!(t, "{k} = {v}");
        }
        if !in_catalog {
            for p in &base.achievable {
                let k = format!("{}_{}", p.precision.as_str(), p.unit.as_str());
                if !measured_peaks.iter().any(|(m, _)| *m == k) {
                    let _ = writeln!(
                        t,
                        "{k} = {}",
                        fig(base, &format!("achievable_tflops.{k}"), p.tflops)
                    );
                }
            }
        }
    }
    if !in_catalog && !base.variant_peaks.is_empty() {
        let _ = writeln!(t, "\n[device.variant_peaks_tflops]");
        for (k, v) in &base.variant_peaks {
            let _ = writeln!(t, "{k} = {}", fig(base, &format!("variant_peaks_tflops.{k}"), *v));
        }
    }

    // Memory.
    let _ = writeln!(t, "\n[device.memory]");
    if !in_catalog {
        if let Some(m) = &base.mem_type {
            let _ = writeln!(t, "type = {}", quote(m));
        }
        if let Some(g) = base.mem_gb {
            let _ = writeln!(t, "size_gb = {}", fig(base, "memory.size_gb", g));
        }
        for (key, bytes) in [("l2", base.l2_bytes), ("llc", base.llc_bytes)] {
            if let Some(b) = bytes {
                let _ = writeln!(
                    t,
                    "{key}_kib = {}",
                    fig(base, &format!("memory.{key}_mib"), b as f64 / 1024.0)
                );
            }
        }
    }
    match best(MemLevel::Dram) {
        Some(b) => {
            let _ = writeln!(t, "bandwidth_gbs = {}", cal(b.gbs, bw_what(b)));
        }
        None if !in_catalog => {
            let _ = writeln!(
                t,
                "bandwidth_gbs = {}",
                fig(base, "memory.bandwidth_gbs", base.peak_bw_gbs)
            );
        }
        None => {}
    }
    for (level, key) in [(MemLevel::Llc, "llc"), (MemLevel::L2, "l2"), (MemLevel::L1, "l1")] {
        if let Some(b) = best(level) {
            let _ = writeln!(t, "{key}_bandwidth_gbs = {}", cal(b.gbs, bw_what(b)));
        } else if let (false, Some(r)) =
            (in_catalog, base.bandwidths.iter().find(|r| r.level == level))
        {
            let _ = writeln!(
                t,
                "{key}_bandwidth_gbs = {}",
                fig(base, &format!("memory.{key}_bandwidth_gbs"), r.gbs)
            );
        }
    }
    if !in_catalog {
        write_limits(&mut t, base);
    }
    t
}

/// Identity keys and figure defaults of a full (non-`extends`) device.
fn write_identity(t: &mut String, d: &DeviceSpec) {
    let _ = writeln!(t, "id = {}", quote(&d.id));
    let _ = writeln!(t, "name = {}", quote(&d.name));
    let vendor = match d.vendor {
        Vendor::Nvidia => "nvidia",
        Vendor::Amd => "amd",
        Vendor::Apple => "apple",
        Vendor::Intel => "intel",
        Vendor::Cpu => "cpu",
        Vendor::Other => "other",
    };
    let _ = writeln!(t, "vendor = \"{vendor}\"");
    if !d.arch.is_empty() {
        let _ = writeln!(t, "arch = {}", quote(&d.arch));
    }
    let family = match d.family {
        ArchFamily::NvidiaCc { major, minor } => format!("sm{major}{minor}"),
        ArchFamily::Cdna1 => "cdna1".into(),
        ArchFamily::Cdna2 => "cdna2".into(),
        ArchFamily::Cdna3 => "cdna3".into(),
        ArchFamily::Cdna4 => "cdna4".into(),
        ArchFamily::Rdna3 => "rdna3".into(),
        ArchFamily::Apple78 => "apple7".into(),
        ArchFamily::Apple9 => "apple9".into(),
        ArchFamily::IntelXe => "xe".into(),
        ArchFamily::Cpu => "cpu".into(),
        ArchFamily::Unknown => "unknown".into(),
    };
    let _ = writeln!(t, "family = \"{family}\"");
    for (k, v) in [
        ("chip", &d.chip),
        ("compute_capability", &d.compute_capability),
        ("llvm_target", &d.llvm_target),
    ] {
        if let Some(v) = v {
            let _ = writeln!(t, "{k} = {}", quote(v));
        }
    }
    if !d.aliases.is_empty() {
        let a: Vec<String> = d.aliases.iter().map(|a| quote(a)).collect();
        let _ = writeln!(t, "aliases = [{}]", a.join(", "));
    }
    if !d.unsupported.is_empty() {
        let a: Vec<String> = d.unsupported.iter().map(|a| quote(a)).collect();
        let _ = writeln!(t, "unsupported = [{}]", a.join(", "));
    }
    if let Some(n) = &d.note {
        let _ = writeln!(t, "note = {}", quote(n));
    }
    let _ = writeln!(t, "source = {}", quote(&d.meta.source));
    let _ = writeln!(t, "confidence = \"{}\"", d.meta.confidence.as_str());
    let _ = writeln!(t, "provenance = \"{}\"", d.meta.provenance.as_str());
}

/// `[device.limits]` of a full device.
fn write_limits(t: &mut String, d: &DeviceSpec) {
    let l = &d.limits;
    let kib = |b: Option<u64>| b.map(|b| b as f64 / 1024.0);
    let n32 = |v: Option<u32>| v.map(f64::from);
    let n64 = |v: Option<u64>| v.map(|v| v as f64);
    let rows: [(&str, Option<f64>); 19] = [
        ("smem_kib_per_cu", kib(l.smem_bytes_per_cu)),
        ("smem_kib_per_wgp", kib(l.smem_bytes_per_wgp)),
        ("smem_kib_per_block_max", kib(l.smem_bytes_per_block_max)),
        ("smem_kib_per_block_default", kib(l.smem_bytes_per_block_default)),
        ("smem_alloc_granularity_bytes", n64(l.smem_alloc_granularity_bytes)),
        ("smem_reserved_per_block_bytes", n64(l.smem_reserved_per_block_bytes)),
        ("max_threads_per_block", n32(l.max_threads_per_block)),
        ("max_threads_per_cu", n32(l.max_threads_per_cu)),
        ("regs_32bit_per_cu", n32(l.regs_32bit_per_cu)),
        ("reg_file_kib_per_cu", n32(l.reg_file_kib_per_cu)),
        ("max_regs_per_thread", n32(l.max_regs_per_thread)),
        ("max_warps_per_cu", n32(l.max_warps_per_cu)),
        ("max_blocks_per_cu", n32(l.max_blocks_per_cu)),
        ("simds_per_cu", n32(l.simds_per_cu)),
        ("max_waves_per_simd", n32(l.max_waves_per_simd)),
        ("vgpr_per_lane_per_simd", n32(l.vgpr_per_lane_per_simd)),
        ("agpr_per_lane_per_simd", n32(l.agpr_per_lane_per_simd)),
        ("vgpr_alloc_granule", n32(l.vgpr_alloc_granule)),
        ("sgpr_per_simd", n32(l.sgpr_per_simd)),
    ];
    if rows.iter().all(|(_, v)| v.is_none()) {
        return;
    }
    let _ = writeln!(t, "\n[device.limits]");
    for (k, v) in rows {
        if let Some(v) = v {
            let _ = writeln!(t, "{k} = {}", fig(d, &format!("limits.{k}"), v));
        }
    }
}

/// A figure of `d`: bare when its meta is the device default, else an inline table.
fn fig(d: &DeviceSpec, key: &str, value: f64) -> String {
    let m: &FigureMeta = d.figure(key);
    if *m == d.meta {
        num(value)
    } else {
        format!(
            "{{ value = {}, source = {}, confidence = \"{}\", provenance = \"{}\" }}",
            num(value),
            quote(&m.source),
            m.confidence.as_str(),
            m.provenance.as_str()
        )
    }
}

/// A TOML number that reads back as the same f64.
fn num(v: f64) -> String {
    format!("{v}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mock::{MockBackend, MockConfig, MOCK_BW, MOCK_FP32, MOCK_LAUNCH_S};
    use rooftop_core::device::parse_device_file;
    use rooftop_core::units::{ExecUnit, Provenance};

    fn fast() -> TimingOptions {
        TimingOptions {
            warmup_runs: 1,
            warmup_time_s: 0.0,
            min_runs: 5,
            min_time_s: 0.0,
            ..TimingOptions::default()
        }
    }

    /// The mock's GB/s for a case of `bytes` per run: bytes / (bytes/BW + launch), the
    /// jitter pattern's median being 1.
    fn mock_gbs(bytes: f64) -> f64 {
        bytes / (bytes / MOCK_BW + MOCK_LAUNCH_S) / 1e9
    }

    fn bf16_probe() -> MatrixProbe {
        MatrixProbe {
            implementation: "rooftop".into(),
            precision: Precision::Bf16,
            shape: (64, 48, 32),
            label: "test probe".into(),
            theoretical_gflops: Some(1000.0),
            theoretical_formula: Some("by hand".into()),
        }
    }

    #[test]
    fn matrix_probes_are_checked_timed_and_recorded() {
        let mut be = MockBackend::new(MockConfig::default());
        let mut opts = CeilingOptions::new(true, fast());
        opts.max_working_set = Some(1 << 20);
        opts.matrix = vec![bf16_probe()];
        let c = measure(&mut be, &opts, &AtomicBool::new(false), &mut |_| {}).unwrap();
        let m = c.compute.iter().find(|c| c.variant == "matrix").expect("a matrix ceiling");
        assert_eq!(m.precision, Precision::Bf16);
        // The mock's time: 2*64*48*32 FLOPs at 1 TFLOP/s + 2 us launch.
        let case = Case {
            kernel: "gemm",
            sizes: vec![("m", 64), ("n", 48), ("k", 32)],
            dtype: Precision::Bf16,
            weights: None,
            variant: None,
        };
        let want = 2.0 * 64.0 * 48.0 * 32.0 / MockBackend::simulated_time(&case) / 1e9;
        assert!((m.gflops - want).abs() / want < 0.011, "{} vs {want}", m.gflops);
        assert_eq!(m.theoretical_gflops, Some(1000.0));
        assert!(c.notes.iter().any(|n| n.contains("test probe")), "{:?}", c.notes);
        // Matrix peaks never stand in for vector ones.
        assert_eq!(c.vector_gflops(Precision::Bf16), None);
        // A wrong product fails the normwise check: noted, not recorded.
        let mut be =
            MockBackend::new(MockConfig { wrong_results: vec!["gemm".into()], memory_bytes: None });
        let c = measure(&mut be, &opts, &AtomicBool::new(false), &mut |_| {}).unwrap();
        assert!(c.compute.iter().all(|c| c.variant != "matrix"));
        assert!(c.notes.iter().any(|n| n.contains("result check failed")), "{:?}", c.notes);
    }

    #[test]
    fn normwise_error_and_tolerances_by_hand() {
        // ‖(0.1, 0)‖ / ‖(3, 4)‖ = 0.02; NaN references are skipped.
        let e = normwise_error(&[3.1, 4.0, 9.0], &[3.0, 4.0, f64::NAN]);
        assert!((e - 0.02).abs() < 1e-12, "{e}");
        assert!(normwise_error(&[f64::INFINITY], &[1.0]).is_nan());
        assert!(normwise_error(&[1.0], &[f64::NAN]).is_nan());
        // 4 u + 1e-5: bf16 u = 2^-8, fp8 e4m3 u = 2^-4.
        assert!((matrix_tolerance(Precision::Bf16) - (4.0 / 256.0 + 1e-5)).abs() < 1e-15);
        assert!((matrix_tolerance(Precision::Fp8) - (0.25 + 1e-5)).abs() < 1e-15);
        assert!(matrix_tolerance(Precision::Fp8) < 1.0);
    }

    #[test]
    fn assign_levels_by_hand() {
        let caches = [(MemLevel::L1, 64 << 10), (MemLevel::L2, 2 << 20), (MemLevel::Llc, 32 << 20)];
        let pt =
            |ws: u64, gbs: f64| SweepPoint { pattern: Pattern::Copy, working_set_bytes: ws, gbs };
        let sweep = vec![
            pt(16 << 10, 50.0),
            pt(32 << 10, 60.0), // L1: <= 32 KiB
            pt(64 << 10, 1.0),  // neither L1 (> 32 KiB) nor L2 (not > 64 KiB)
            pt(128 << 10, 40.0),
            pt(256 << 10, 44.0),
            pt(1 << 20, 42.0), // L2: (64 KiB, 1 MiB]
            pt(4 << 20, 30.0),
            pt(16 << 20, 20.0), // LLC: (2 MiB, 16 MiB]
            pt(64 << 20, 3.0),  // between LLC and DRAM
            pt(128 << 20, 12.0),
            pt(256 << 20, 11.0), // DRAM: >= 128 MiB
        ];
        let (b, note) = assign_levels(&sweep, &caches);
        let got: Vec<(MemLevel, f64, u64)> =
            b.iter().map(|c| (c.level, c.gbs, c.working_set_bytes)).collect();
        assert_eq!(
            got,
            vec![
                (MemLevel::L1, 50.0, 16 << 10),    // lower median of {50, 60}
                (MemLevel::L2, 42.0, 1 << 20),     // median of {40, 44, 42}
                (MemLevel::Llc, 20.0, 16 << 20),   // lower median of {30, 20}
                (MemLevel::Dram, 11.0, 256 << 20), // lower median of {12, 11}
            ]
        );
        assert!(note.contains("dram = working sets >= 128 MiB"), "{note}");
        // Without caches: DRAM = the largest working set only.
        let (b, note) = assign_levels(&sweep, &[]);
        assert_eq!(b.len(), 1);
        assert_eq!((b[0].level, b[0].gbs), (MemLevel::Dram, 11.0));
        assert!(note.contains("no cache sizes known"));
    }

    #[test]
    fn quick_ceilings_on_the_mock_by_hand() {
        let mut be = MockBackend::new(MockConfig::default());
        let mut opts = CeilingOptions::new(true, fast());
        opts.max_working_set = Some(4 << 20);
        let stop = AtomicBool::new(false);
        let c = measure(&mut be, &opts, &stop, &mut |_| {}).unwrap();
        assert_eq!(c.method, "quick");
        // Triad, copy, read and write; no cache known, so no last-level cache roof.
        assert_eq!(c.bandwidth.len(), 4);
        // Each is its best sample: the mock's fastest jitter step is 0.98 of the modelled
        // time, so the best rate is within [1, 1/0.98] of the model's.
        let best = |got: f64, want: f64| (-1e-9..=0.021).contains(&((got - want) / want));
        for b in &c.bandwidth {
            assert_eq!(b.level, MemLevel::Dram);
            // 4 MiB of arrays: triad moves all three arrays once, read its one array.
            let want = mock_gbs(b.working_set_bytes as f64);
            assert!(best(b.gbs, want), "{b:?} vs {want}");
            assert!(b.working_set_bytes <= 4 << 20 && b.working_set_bytes > 4 << 19);
        }
        // fp32 vector FMA: 2*92160*4096 FLOPs at 1 TFLOP/s + 2 us; fp64 at 0.5 TFLOP/s.
        let flops = 2.0 * 92_160.0 * 4096.0;
        let want32 = flops / (flops / MOCK_FP32 + MOCK_LAUNCH_S) / 1e9;
        let want64 = flops / (flops / (MOCK_FP32 / 2.0) + MOCK_LAUNCH_S) / 1e9;
        assert_eq!(c.compute.len(), 2);
        assert!(best(c.compute[0].gflops, want32), "{:?}", c.compute[0]);
        assert!(best(c.compute[1].gflops, want64), "{:?}", c.compute[1]);
    }

    #[test]
    fn full_ceilings_on_the_mock_assign_every_level() {
        let mut be = MockBackend::new(MockConfig::default());
        let mut opts = CeilingOptions::new(false, fast());
        opts.cache_levels =
            vec![(MemLevel::L1, 64 << 10), (MemLevel::L2, 256 << 10), (MemLevel::Llc, 1 << 20)];
        opts.max_working_set = Some(4 << 20);
        // Sweep 16 KiB .. 4 MiB = 4x the 1 MiB "LLC": 9 points per pattern.
        let stop = AtomicBool::new(false);
        let c = measure(&mut be, &opts, &stop, &mut |_| {}).unwrap();
        assert_eq!(c.sweep.len(), 4 * 9);
        for p in &c.sweep {
            // The best sample: within [1, 1/0.98] of the model (see the quick test).
            let want = mock_gbs(p.working_set_bytes as f64);
            assert!((-1e-9..=0.021).contains(&((p.gbs - want) / want)), "{p:?}");
        }
        // Per pattern: L1 {16, 32 KiB}, L2 {128 KiB}, LLC {512 KiB}, DRAM {4 MiB}.
        for pattern in [Pattern::Read, Pattern::Write, Pattern::Copy, Pattern::Triad] {
            let lv: Vec<MemLevel> =
                c.bandwidth.iter().filter(|b| b.pattern == pattern).map(|b| b.level).collect();
            assert_eq!(
                lv,
                vec![MemLevel::L1, MemLevel::L2, MemLevel::Llc, MemLevel::Dram],
                "{pattern:?}"
            );
        }
        // The mock's GB/s grows with the working set (fixed launch cost): DRAM is the
        // largest point, and its ceiling is what the model gives at ~4 MiB.
        let dram = c
            .bandwidth
            .iter()
            .find(|b| b.level == MemLevel::Dram && b.pattern == Pattern::Triad)
            .unwrap();
        assert!(dram.working_set_bytes <= 4 << 20 && dram.working_set_bytes > (4 << 20) - 64);
        assert!((dram.gbs - mock_gbs(dram.working_set_bytes as f64)).abs() < 1.0);
        assert_eq!(c.compute.len(), 4, "fp32/fp64 x vector/scalar");
    }

    #[test]
    fn device_file_round_trips_through_the_parser() {
        let base = crate::mock::device_spec();
        let mut be = MockBackend::new(MockConfig::default());
        let mut opts = CeilingOptions::new(true, fast());
        opts.max_working_set = Some(1 << 20);
        opts.theoretical = vec![TheoreticalPeak {
            precision: Precision::Fp32,
            variant: "vector",
            gflops: 1000.0,
            formula: "mock".into(),
        }];
        let c = measure(&mut be, &opts, &AtomicBool::new(false), &mut |_| {}).unwrap();
        let text = device_file_toml(&base, &c, "2026-01-02");
        let d = parse_device_file(&text, "ceilings.toml")
            .unwrap_or_else(|e| panic!("{e}\n{text}"))
            .pop()
            .unwrap();
        assert_eq!(d.id, "mock");
        let dram = c.best_gbs(MemLevel::Dram).unwrap();
        assert_eq!(d.peak_bw_gbs, dram);
        let m = d.figure("memory.bandwidth_gbs");
        assert_eq!(m.provenance, Provenance::Calibrated);
        assert!(
            m.source.starts_with("measured by rooftop ceilings on 2026-01-02: "),
            "{}",
            m.source
        );
        let fp32 = c.vector_gflops(Precision::Fp32).unwrap();
        let p = d.peak(Precision::Fp32, ExecUnit::Vector).unwrap();
        assert_eq!(p.tflops, fp32 / 1e3);
        assert_eq!(p.meta.provenance, Provenance::Calibrated);
        assert!(p.meta.source.contains("% of the theoretical 1000.0 GFLOP/s"), "{}", p.meta.source);
        assert_eq!(d.achievable.len(), 2);
        // Unmeasured figures keep the base's values.
        assert_eq!((d.num_cu, d.warp_size), (4, 1));
        assert_eq!(d.vendor, Vendor::Other);
    }

    #[test]
    fn device_file_extends_catalog_devices() {
        let base = Catalog::builtin().get("h100-sxm").unwrap().clone();
        let c = Ceilings {
            backend: "cuda".into(),
            device_name: "H100".into(),
            method: "full".into(),
            parallelism: 132,
            bandwidth: vec![
                BandwidthCeiling {
                    level: MemLevel::Dram,
                    pattern: Pattern::Copy,
                    gbs: 3000.5,
                    working_set_bytes: 1 << 30,
                },
                BandwidthCeiling {
                    level: MemLevel::L2,
                    pattern: Pattern::Read,
                    gbs: 9100.0,
                    working_set_bytes: 16 << 20,
                },
            ],
            sweep: Vec::new(),
            compute: Vec::new(),
            notes: Vec::new(),
            caches: Vec::new(),
            adjustments: Vec::new(),
        };
        let text = device_file_toml(&base, &c, "2026-01-02");
        assert!(text.contains("extends = \"h100-sxm\""), "{text}");
        let d = parse_device_file(&text, "x").unwrap().pop().unwrap();
        assert_eq!(d.id, "h100-sxm");
        assert_eq!(d.peak_bw_gbs, 3000.5);
        assert_eq!(d.bandwidth(MemLevel::L2), Some(9100.0));
        assert_eq!(d.peaks, base.peaks, "unmeasured peaks inherited");
        assert_eq!(d.figure("memory.l2_bandwidth_gbs").provenance, Provenance::Calibrated);
    }

    #[test]
    fn cpu_device_file_round_trips() {
        let mut cpu = CpuInfo::from_files(std::path::Path::new("/nonexistent"));
        cpu.model_name = "Test \"CPU\"".into();
        cpu.fma_units = Some(2);
        cpu.fma_width_bits = Some(256);
        cpu.uarch = Some("Zen 4".into());
        cpu.measured_mhz = Some(3000.0);
        cpu.l2_bytes = Some(1 << 20);
        let c = Ceilings {
            backend: "cpu".into(),
            device_name: "Test".into(),
            method: "quick".into(),
            parallelism: 1,
            bandwidth: vec![BandwidthCeiling {
                level: MemLevel::Dram,
                pattern: Pattern::Triad,
                gbs: 20.0,
                working_set_bytes: 1 << 27,
            }],
            sweep: Vec::new(),
            caches: Vec::new(),
            adjustments: Vec::new(),
            compute: vec![ComputeCeiling {
                precision: Precision::Fp64,
                variant: "vector".into(),
                gflops: 40.0,
                theoretical_gflops: Some(48.0),
                theoretical_formula: None,
            }],
            notes: Vec::new(),
        };
        let base = cpu.device_spec(Some(&c)).unwrap();
        let text = device_file_toml(&base, &c, "2026-01-02");
        let d =
            parse_device_file(&text, "x").unwrap_or_else(|e| panic!("{e}\n{text}")).pop().unwrap();
        assert_eq!(d.name, "Test \"CPU\" (1 cores)");
        assert_eq!(d.family, ArchFamily::Cpu);
        assert_eq!(d.peak(Precision::Fp64, ExecUnit::Vector).unwrap().tflops, 0.04);
        // fp32 not measured: the theoretical 1 core x 3 GHz x 16 lanes x 2 = 96 GFLOP/s.
        let p = d.peak(Precision::Fp32, ExecUnit::Vector).unwrap();
        assert!((p.tflops - 0.096).abs() < 1e-12);
        assert_eq!(p.meta.provenance, Provenance::Catalog);
        assert_eq!(d.l2_bytes, Some(1 << 20));
        assert_eq!(d.peak_bw_gbs, 20.0);
    }

    #[test]
    fn a_stop_request_ends_early_with_a_note() {
        let mut be = MockBackend::new(MockConfig::default());
        let opts = CeilingOptions::new(false, fast());
        let c = measure(&mut be, &opts, &AtomicBool::new(true), &mut |_| {}).unwrap();
        assert!(c.sweep.is_empty() && c.compute.is_empty());
        assert!(c.notes.iter().any(|n| n.starts_with("interrupted")), "{:?}", c.notes);
    }

    #[test]
    fn simulated_backends_sweep_to_16_mib_by_default() {
        let mut be = MockBackend::new(MockConfig::default());
        let c = measure(
            &mut be,
            &CeilingOptions::new(true, fast()),
            &AtomicBool::new(false),
            &mut |_| {},
        )
        .unwrap();
        assert!(c
            .sweep
            .iter()
            .all(|p| p.working_set_bytes <= 16 << 20 && p.working_set_bytes > 15 << 20));
        assert!(
            c.notes.iter().any(|n| n.contains("simulated backend: no caches")),
            "{:?}",
            c.notes
        );
    }

    #[test]
    fn bytes_labels() {
        assert_eq!(bytes_label(16 << 10), "16 KiB");
        assert_eq!(bytes_label(3 << 19), "1.500 MiB");
        assert_eq!(bytes_label(100), "100 B");
    }
}
