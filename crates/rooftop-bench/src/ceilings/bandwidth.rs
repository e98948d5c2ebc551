//! Bandwidth probes: quick mode's DRAM roof (triad, copy, read and write at one large
//! working set) and last-level-cache roof (`read` at half the cache), and the full
//! working-set sweep with its assignment of points to memory levels (module doc of
//! [`measure`](super::measure) for the rules).

use super::measure::Runner;
use super::options::{CeilingOptions, MIN_WORKING_SET};
use super::{BandwidthCeiling, Ceilings, Pattern, SweepPoint};
use crate::case::Case;
use crate::error::BenchError;
use crate::harness::TimingOptions;
use crate::suite::{self, Kernel, KernelId};
use rooftop_core::device::MemLevel;
use rooftop_core::units::Precision;
use std::fmt::Write as _;

/// Quick mode: the DRAM roof of each of [`QUICK_PATTERNS`] and the last-level cache's
/// roof, each the best sample at one working set.
pub(crate) fn quick(
    run: &mut Runner<'_, '_>,
    opts: &CeilingOptions,
    simulated: bool,
    c: &mut Ceilings,
) -> Result<(), BenchError> {
    let ws = opts.quick_ws(simulated);
    // Triad is STREAM's figure; copy is the shape of every one-in, one-out kernel;
    // read-only has no write-allocate traffic and is the highest on most CPUs, so
    // read-only kernels (sums, row reductions) stay under it; write-only kernels
    // (fills) can beat all three on a machine with streaming stores.
    for pattern in QUICK_PATTERNS {
        if !run.has(kernel_of(pattern), &mut c.notes) {
            continue;
        }
        let case = quick_case(pattern, ws, opts, simulated);
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
    if let Some(p) = quick_llc(run, opts, simulated, &mut c.notes)? {
        c.bandwidth.push(BandwidthCeiling {
            level: MemLevel::Llc,
            pattern: Pattern::Read,
            gbs: p.gbs,
            working_set_bytes: p.working_set_bytes,
        });
        c.sweep.push(p);
    }
    let why = match opts.last_cache() {
        None if simulated => "simulated backend: no caches".to_string(),
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
    Ok(())
}

/// Full mode: every pattern at working sets from [`MIN_WORKING_SET`] up by 2x, then the
/// points assigned to levels ([`assign_levels`]).
pub(crate) fn sweep(
    run: &mut Runner<'_, '_>,
    opts: &CeilingOptions,
    simulated: bool,
    c: &mut Ceilings,
) -> Result<(), BenchError> {
    let max = opts.max_ws(simulated).max(MIN_WORKING_SET);
    let mut sizes = Vec::new();
    let mut ws = MIN_WORKING_SET;
    while ws <= max {
        sizes.push(ws);
        ws *= 2;
    }
    'patterns: for pattern in [Pattern::Read, Pattern::Write, Pattern::Copy, Pattern::Triad] {
        if !run.has(kernel_of(pattern), &mut c.notes) {
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
    let (mut levels, note) = assign_levels(&c.sweep, &opts.cache_levels);
    if let Some(factor) = opts.overhead_bound_factor {
        let (kept, dropped) = overhead_bound(&c.sweep, factor);
        let (cached, _) = assign_levels(&kept, &opts.cache_levels);
        levels.retain(|l| l.level == MemLevel::Dram);
        levels.extend(cached.into_iter().filter(|l| l.level != MemLevel::Dram));
        if !dropped.is_empty() {
            c.notes.push(format!(
                "cache levels leave out points timed under {factor}x the smallest working \
                 set's time of their pattern (launch overhead, not bandwidth): {}",
                dropped.join("; ")
            ));
        }
        for &(level, _) in &opts.cache_levels {
            if !levels.iter().any(|l| l.level == level) {
                c.notes.push(format!(
                    "{}: no bandwidth figure: every working set that fits it is launch-overhead \
                     bound",
                    level.as_str()
                ));
            }
        }
    }
    c.bandwidth = levels;
    c.notes.push(note);
    Ok(())
}

/// Memory levels from the nearest to the farthest: a nearer level is never slower.
const LEVEL_ORDER: [MemLevel; 4] = [MemLevel::L1, MemLevel::L2, MemLevel::Llc, MemLevel::Dram];

/// The first level (farthest first) whose best figure is below the next farther level's
/// that has one: `(level, its best GB/s, the farther level, its best GB/s)`.
pub(crate) fn inversion(bw: &[BandwidthCeiling]) -> Option<(MemLevel, f64, MemLevel, f64)> {
    let best = |level: MemLevel| {
        bw.iter().filter(|b| b.level == level).map(|b| b.gbs).max_by(f64::total_cmp)
    };
    let mut farther: Option<(MemLevel, f64)> = None;
    for &level in LEVEL_ORDER.iter().rev() {
        let Some(g) = best(level) else { continue };
        if let Some((f, fg)) = farther {
            if g < fg {
                return Some((level, g, f, fg));
            }
        }
        farther = Some((level, g));
    }
    None
}

/// Keeps the levels monotone (L1 >= L2 >= LLC >= DRAM). A level measured below the next
/// farther one was overhead-bound (small working sets split over every core, little work
/// per call): it is measured again at the largest working set of its range (all cores,
/// as every sweep point) with at least 20 ms per sample; if still below, its figures are
/// dropped (never written as calibrated) and a note says it is uncertain and why.
pub(crate) fn monotone(
    run: &mut Runner<'_, '_>,
    opts: &CeilingOptions,
    c: &mut Ceilings,
) -> Result<(), BenchError> {
    let longer =
        TimingOptions { min_sample_s: run.opts.min_sample_s.max(0.02), ..run.opts.clone() };
    let mut retried: Vec<MemLevel> = Vec::new();
    while let Some((level, g, farther, fg)) = inversion(&c.bandwidth) {
        if run.stopped() {
            break;
        }
        let cap = opts.cache_levels.iter().find(|(l, _)| *l == level).map(|&(_, b)| b);
        if let (Some(cap), false) = (cap, retried.contains(&level)) {
            retried.push(level);
            let mut again = Runner {
                ws: &mut *run.ws,
                backend: &mut *run.backend,
                opts: &longer,
                stop: run.stop,
                progress: &mut *run.progress,
            };
            let patterns: Vec<Pattern> =
                c.bandwidth.iter().filter(|b| b.level == level).map(|b| b.pattern).collect();
            for pattern in patterns {
                if let Some(p) = again.point(pattern, cap / 2, &mut c.notes)? {
                    if let Some(b) =
                        c.bandwidth.iter_mut().find(|b| b.level == level && b.pattern == pattern)
                    {
                        if p.gbs > b.gbs {
                            b.gbs = p.gbs;
                            b.working_set_bytes = p.working_set_bytes;
                        }
                    }
                }
            }
            continue;
        }
        c.bandwidth.retain(|b| b.level != level);
        c.notes.push(format!(
            "{}: uncertain, not written: {} measured below the {} roof of {}{} (a nearer \
             level cannot be slower: the working sets that fit it are dominated by the cost \
             of each call)",
            level.as_str(),
            gbs_label(g),
            farther.as_str(),
            gbs_label(fg),
            if retried.contains(&level) {
                " even re-measured at the top of its range with 20 ms samples on every core"
            } else {
                ""
            }
        ));
    }
    Ok(())
}

fn gbs_label(g: f64) -> String {
    rooftop_core::units::si(g * 1e9, "B/s")
}

/// Splits sweep points into those timed at least `factor` x the time of their pattern's
/// smallest working set and those under it; the second list as `pattern: up to SIZE`.
/// The smallest point's time is mostly the fixed cost of a run (a kernel launch), so a
/// point under the bound measures that cost more than bandwidth.
fn overhead_bound(sweep: &[SweepPoint], factor: f64) -> (Vec<SweepPoint>, Vec<String>) {
    let mut kept = Vec::new();
    let mut dropped = Vec::new();
    for pattern in [Pattern::Read, Pattern::Write, Pattern::Copy, Pattern::Triad] {
        let pts: Vec<&SweepPoint> = sweep.iter().filter(|p| p.pattern == pattern).collect();
        let time = |p: &SweepPoint| p.working_set_bytes as f64 / (p.gbs * 1e9);
        let Some(t0) = pts.iter().min_by_key(|p| p.working_set_bytes).map(|p| time(p)) else {
            continue;
        };
        let mut largest_dropped = None;
        for p in pts {
            if time(p) >= factor * t0 {
                kept.push(p.clone());
            } else {
                largest_dropped = largest_dropped.max(Some(p.working_set_bytes));
            }
        }
        if let Some(ws) = largest_dropped {
            dropped.push(format!("{} up to {}", pattern.as_str(), bytes_label(ws)));
        }
    }
    (kept, dropped)
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
) -> Case {
    let by_ws = stream_case(kernel_of(pattern).def(), ws);
    if simulated || opts.max_working_set.is_some() {
        return by_ws;
    }
    let mut suite_size = by_ws.clone();
    suite_size.sizes = vec![("n", suite::stream::DEFAULT_N)];
    if suite_size.size("n") > by_ws.size("n") {
        suite_size
    } else {
        by_ws
    }
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
    if simulated || !run.has(KernelId::Read, notes) {
        return Ok(None);
    }
    // Half a cache larger than the run's largest working set (a software adapter's
    // binding limit under a host cache of hundreds of MiB) is not measured: no roof.
    if let Some(max) = opts.max_working_set.filter(|&m| llc / 2 > m) {
        notes.push(format!(
            "quick: no last-level cache roof: half the {} cache is more than this run's \
             largest working set ({})",
            bytes_label(llc),
            bytes_label(max)
        ));
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

/// The suite kernel that measures `pattern`.
pub(crate) fn kernel_of(pattern: Pattern) -> KernelId {
    match pattern {
        Pattern::Read => KernelId::Read,
        Pattern::Write => KernelId::Write,
        Pattern::Copy => KernelId::Copy,
        Pattern::Triad => KernelId::Triad,
    }
}

/// The fp32 case of a 1-D kernel whose buffers add up to about `ws` bytes.
pub(crate) fn stream_case(kernel: &dyn Kernel, ws: u64) -> Case {
    const PROBE: u64 = 1 << 16;
    let case = |n: u64| Case {
        kernel: kernel.id(),
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
pub(crate) fn bytes_label(b: u64) -> String {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ceilings::measure;
    use crate::ceilings::measure::tests::fast;
    use crate::mock::{MockBackend, MockConfig, MOCK_BW, MOCK_FP32, MOCK_LAUNCH_S};
    use std::sync::atomic::AtomicBool;

    /// The mock's GB/s for a case of `bytes` per run: bytes / (bytes/BW + launch), the
    /// jitter pattern's median being 1.
    fn mock_gbs(bytes: f64) -> f64 {
        bytes / (bytes / MOCK_BW + MOCK_LAUNCH_S) / 1e9
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

    /// L1 223 GB/s and L2 206 GB/s below the LLC's 243 GB/s (overhead-bound small sets):
    /// the L2 is the first inversion found (farthest first), then the L1 below the L2.
    #[test]
    fn inversions_by_hand() {
        let b = |level, gbs| BandwidthCeiling {
            level,
            pattern: Pattern::Read,
            gbs,
            working_set_bytes: 1,
        };
        let mut bw = vec![
            b(MemLevel::L1, 223.0),
            b(MemLevel::L2, 206.0),
            b(MemLevel::Llc, 243.0),
            b(MemLevel::Dram, 84.8),
        ];
        assert_eq!(inversion(&bw), Some((MemLevel::L2, 206.0, MemLevel::Llc, 243.0)));
        bw.retain(|x| x.level != MemLevel::L2);
        // Without an L2, the L1 is compared with the LLC.
        assert_eq!(inversion(&bw), Some((MemLevel::L1, 223.0, MemLevel::Llc, 243.0)));
        bw.retain(|x| x.level != MemLevel::L1);
        assert_eq!(inversion(&bw), None);
        // Equal is monotone.
        assert_eq!(inversion(&[b(MemLevel::Llc, 84.8), b(MemLevel::Dram, 84.8)]), None);
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
        // fp32 vector FMA: 2*368640*1024 FLOPs at 1 TFLOP/s + 2 us; fp64 at 0.5 TFLOP/s.
        let flops = 2.0 * 368_640.0 * 1024.0;
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
        // The sweep's points go to L1 {16, 32 KiB}, L2 {128 KiB}, LLC {512 KiB}, DRAM
        // {4 MiB} (assign_levels_by_hand), but the mock has no caches: its fixed 2 µs
        // launch makes every smaller working set slower (mock_gbs grows with the bytes),
        // so each cache level measures below DRAM, stays below when re-measured at the
        // top of its range, and is dropped as uncertain, never written as calibrated.
        for pattern in [Pattern::Read, Pattern::Write, Pattern::Copy, Pattern::Triad] {
            let lv: Vec<MemLevel> =
                c.bandwidth.iter().filter(|b| b.pattern == pattern).map(|b| b.level).collect();
            assert_eq!(lv, vec![MemLevel::Dram], "{pattern:?}");
        }
        for level in ["l1", "l2", "llc"] {
            assert!(
                c.notes.iter().any(|n| n.starts_with(&format!("{level}: uncertain"))
                    && n.contains("even re-measured")),
                "{level}: {:?}",
                c.notes
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

    /// A launch costing 2 µs on top of 3 TB/s: points under 8 x the 16 KiB point's time
    /// (about 2 µs) are left out; from 64 MiB (22 µs + 2 µs) on they stay.
    #[test]
    fn overhead_bound_points_leave_the_cache_levels() {
        let pts: Vec<SweepPoint> = (14..=30)
            .map(|e| {
                let ws = 1u64 << e;
                let t = 2e-6 + ws as f64 / 3e12;
                SweepPoint {
                    pattern: Pattern::Read,
                    working_set_bytes: ws,
                    gbs: ws as f64 / t / 1e9,
                }
            })
            .collect();
        let (kept, dropped) = overhead_bound(&pts, 8.0);
        // t(16 KiB) = 2.0055 µs; 8x = 16.04 µs; 32 MiB takes 13.2 µs, 64 MiB 24.4 µs.
        assert_eq!(kept.first().map(|p| p.working_set_bytes), Some(64 << 20));
        assert_eq!(kept.len(), 5);
        assert_eq!(dropped, vec!["read up to 32 MiB".to_string()]);
    }

    #[test]
    fn bytes_labels() {
        assert_eq!(bytes_label(16 << 10), "16 KiB");
        assert_eq!(bytes_label(3 << 19), "1.500 MiB");
        assert_eq!(bytes_label(100), "100 B");
    }
}
