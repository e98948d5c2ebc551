//! The per-kernel aggregate of [`super`], built one dispatch at a time.
//!
//! Role: a kernel's [`Derived`] (means of extensive quantities, duration-weighted means
//! of percentages, the formulas and what no dispatch gave) without keeping every
//! dispatch's [`Derived`]: a system trace has millions of launches of a few kernels, and
//! their derived values are needed only long enough to be added in.
//!
//! Invariant: [`Acc::finish`] equals what the definition over the list of all the
//! kernel's dispatches gives (the module docs of [`super`]), bit for bit: every sum adds
//! the same values in the same (dispatch) order, from the same start as `Iterator::sum`
//! (`-0.0`), and divides by the same count.

use super::super::derive::{ByteSource, Coalescing, SpeedOfLight, NO_COUNTERS};
use super::super::{Derived, FlopCounts, Missing};
use std::collections::BTreeMap;

/// A plain mean: the sum and the number of values.
#[derive(Debug, Clone, Copy)]
struct Mean {
    sum: f64,
    n: usize,
}

impl Default for Mean {
    fn default() -> Self {
        // `Iterator::sum` of f64 starts from -0.0.
        Mean { sum: -0.0, n: 0 }
    }
}

impl Mean {
    fn add(&mut self, v: Option<f64>) {
        if let Some(v) = v {
            self.sum += v;
            self.n += 1;
        }
    }

    fn get(self) -> Option<f64> {
        (self.n > 0).then(|| self.sum / self.n as f64)
    }
}

/// A duration-weighted mean over the dispatches with the value and a positive duration,
/// else the plain mean.
#[derive(Debug, Clone, Copy, Default)]
struct Weighted {
    plain: Mean,
    products: Mean,
    weights: Mean,
}

impl Weighted {
    fn add(&mut self, v: Option<f64>, w: Option<f64>) {
        self.plain.add(v);
        if let (Some(v), Some(w)) = (v, w) {
            self.products.add(Some(v * w));
            self.weights.add(Some(w));
        }
    }

    /// The mean, and whether it is a plain one for want of weights.
    fn get(self) -> (Option<f64>, bool) {
        if self.weights.n == 0 {
            let v = self.plain.get();
            return (v, v.is_some());
        }
        (Some(self.products.sum / self.weights.sum), false)
    }
}

/// The first `missing` list of a set of dispatches, each entry kept while every
/// dispatch since has it too.
#[derive(Debug, Clone, Default)]
struct Common {
    first: Option<Vec<(Missing, bool)>>,
}

impl Common {
    fn add(&mut self, missing: &[Missing]) {
        match &mut self.first {
            None => self.first = Some(missing.iter().map(|m| (m.clone(), true)).collect()),
            Some(list) => {
                for (m, alive) in list.iter_mut().filter(|(_, a)| *a) {
                    *alive = missing.iter().any(|x| x.quantity == m.quantity);
                }
            }
        }
    }

    fn get(&self) -> Option<Vec<Missing>> {
        self.first.as_ref().map(|l| l.iter().filter(|(_, a)| *a).map(|(m, _)| m.clone()).collect())
    }
}

/// The running aggregate of one kernel's dispatches.
#[derive(Debug, Clone, Default)]
pub(super) struct Acc {
    parts: usize,
    duration_ns: Mean,
    dram_bytes_read: Mean,
    dram_bytes_written: Mean,
    dram_bytes_total: Mean,
    l2_bytes: Mean,
    l1_bytes: Mean,
    lds_bytes: Mean,
    waves_launched: Mean,
    grid_waves: Mean,
    l1_hit_rate_pct: Weighted,
    l2_hit_rate_pct: Weighted,
    lds_bank_conflict_pct: Weighted,
    achieved_occupancy_pct: Weighted,
    theoretical_occupancy_pct: Weighted,
    sol: [Weighted; 5],
    flops: FlopCounts,
    flops_counted: usize,
    coalescing: Option<Coalescing>,
    coalescing_sum: Mean,
    byte_sources: BTreeMap<crate::device::MemLevel, ByteSource>,
    formulas: Vec<String>,
    /// What every dispatch lacks, and what every dispatch with counters lacks.
    missing_all: Common,
    missing_counted: Common,
}

/// The measured durations of a kernel's dispatches.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Timed {
    /// Sum of the durations that were measured, ns (`None` when none was).
    pub total_ns: Option<f64>,
    /// Dispatches with a measured duration.
    pub measured: usize,
    /// All dispatches.
    pub dispatches: usize,
}

impl Acc {
    /// The sum of the measured durations, and how many dispatches have one: a
    /// dispatch without a measured duration adds nothing to the total (never the
    /// mean of the others).
    pub(super) fn timed(&self) -> Timed {
        let d = self.duration_ns;
        Timed { total_ns: (d.n > 0).then_some(d.sum), measured: d.n, dispatches: self.parts }
    }

    /// Adds one dispatch's derived values.
    pub(super) fn add(&mut self, d: &Derived) {
        self.parts += 1;
        let w = d.duration_ns.filter(|t| *t > 0.0);
        self.duration_ns.add(d.duration_ns);
        self.dram_bytes_read.add(d.dram_bytes_read);
        self.dram_bytes_written.add(d.dram_bytes_written);
        self.dram_bytes_total.add(d.dram_bytes_total);
        self.l2_bytes.add(d.l2_bytes);
        self.l1_bytes.add(d.l1_bytes);
        self.lds_bytes.add(d.lds_bytes);
        self.waves_launched.add(d.waves_launched);
        self.grid_waves.add(d.grid_waves);
        self.l1_hit_rate_pct.add(d.l1_hit_rate_pct, w);
        self.l2_hit_rate_pct.add(d.l2_hit_rate_pct, w);
        self.lds_bank_conflict_pct.add(d.lds_bank_conflict_pct, w);
        self.achieved_occupancy_pct.add(d.achieved_occupancy_pct, w);
        self.theoretical_occupancy_pct.add(d.theoretical_occupancy_pct, w);
        let s = &d.speed_of_light;
        for (acc, v) in
            self.sol.iter_mut().zip([s.sm_pct, s.memory_pct, s.dram_pct, s.l1_pct, s.l2_pct])
        {
            acc.add(v, w);
        }
        if !d.flops.is_empty() {
            self.flops.add(&d.flops);
            self.flops_counted += 1;
        }
        if let Some(c) = &d.coalescing {
            if self.coalescing.is_none() {
                self.coalescing = Some(c.clone());
            }
            self.coalescing_sum.add(Some(c.bytes_per_request));
        }
        // A level's bytes are derived when any dispatch's are.
        for (level, src) in &d.byte_sources {
            let e = self.byte_sources.entry(*level).or_insert(*src);
            if *src == ByteSource::Derived {
                *e = ByteSource::Derived;
            }
        }
        for f in &d.formulas {
            if !self.formulas.contains(f) {
                self.formulas.push(f.clone());
            }
        }
        self.missing_all.add(&d.missing);
        if !d.missing.iter().any(|m| m.quantity == NO_COUNTERS) {
            self.missing_counted.add(&d.missing);
        }
    }

    /// The kernel's derived values.
    pub(super) fn finish(self) -> Derived {
        let mut unweighted = false;
        let mut take = |w: Weighted| {
            let (v, plain) = w.get();
            unweighted |= plain;
            v
        };
        let l1_hit_rate_pct = take(self.l1_hit_rate_pct);
        let l2_hit_rate_pct = take(self.l2_hit_rate_pct);
        let lds_bank_conflict_pct = take(self.lds_bank_conflict_pct);
        let achieved_occupancy_pct = take(self.achieved_occupancy_pct);
        let theoretical_occupancy_pct = take(self.theoretical_occupancy_pct);
        let [sm, memory, dram, l1, l2] = self.sol;
        let speed_of_light = SpeedOfLight {
            sm_pct: take(sm),
            memory_pct: take(memory),
            dram_pct: take(dram),
            l1_pct: take(l1),
            l2_pct: take(l2),
        };
        let flops = if self.flops_counted > 0 {
            self.flops.scaled(1.0 / self.flops_counted as f64)
        } else {
            FlopCounts::default()
        };
        let coalescing = self.coalescing.map(|c0| Coalescing {
            level: c0.level,
            bytes_per_request: self.coalescing_sum.get().unwrap_or(c0.bytes_per_request),
            ideal_bytes_per_request: c0.ideal_bytes_per_request,
        });
        let mut formulas = self.formulas;
        if unweighted && self.parts > 1 {
            formulas.push(
                "percentages of a kernel = plain means over its dispatches (no dispatch has a \
                 duration to weight them by)"
                    .to_string(),
            );
        }
        // Dispatches with no counters at all (traced, not counted) gave nothing and do
        // not narrow the list; the first dispatch's wording says what it needs.
        let missing =
            self.missing_counted.get().or_else(|| self.missing_all.get()).unwrap_or_default();
        Derived {
            duration_ns: self.duration_ns.get(),
            dram_bytes_read: self.dram_bytes_read.get(),
            dram_bytes_written: self.dram_bytes_written.get(),
            dram_bytes_total: self.dram_bytes_total.get(),
            l2_bytes: self.l2_bytes.get(),
            l1_bytes: self.l1_bytes.get(),
            lds_bytes: self.lds_bytes.get(),
            flops,
            l1_hit_rate_pct,
            l2_hit_rate_pct,
            lds_bank_conflict_pct,
            achieved_occupancy_pct,
            theoretical_occupancy_pct,
            waves_launched: self.waves_launched.get(),
            grid_waves: self.grid_waves.get(),
            coalescing,
            speed_of_light,
            byte_sources: self.byte_sources,
            missing,
            formulas,
        }
    }
}
