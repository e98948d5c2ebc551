//! What matched instances show (definitions in [`super`]): one [`super::CollectiveRow`]
//! per (group, kind, name, dtype, size, members, scope), one [`super::Straggler`] per
//! rank.
//!
//! Sums are kept in integer nanoseconds (`i128`, no overflow for any realistic run) and
//! converted once, so the same instances give the same numbers whatever the order the
//! ranks were read in.

use super::interconnect::{LinkChoice, Scope};
use super::reduce::{Interner, RankInfo, Slot, Sym};
use super::{CollectiveKind, CollectiveRow, Straggler};
use std::collections::{BTreeMap, HashMap};

/// One member's part in an instance.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Part {
    /// Position of the rank in the reduce's rank list.
    pub pos: usize,
    pub start_ns: i64,
    pub end_ns: i64,
    pub dur_ns: i64,
    pub compute_before_ns: i64,
    pub compute_before: Sym,
}

/// One matched instance (every member present and consistent).
pub(crate) struct InstanceView<'a> {
    /// The group's label (description, else name).
    pub label: &'a str,
    /// Global ranks, in `parts` order.
    pub members: &'a [i64],
    pub scope: Scope,
    pub parts: Vec<Part>,
    /// Member 0's record (kind, dtype, sizes: the same on all members).
    pub slot: &'a Slot,
}

/// (group label, kind, name, dtype, in elements, out elements, members, scope); the
/// element counts are `None` for all-to-all-v, whose counts differ per rank.
type RowKey = (String, CollectiveKind, Sym, Sym, Option<u64>, Option<u64>, u32, Scope);

#[derive(Default)]
struct RowAcc {
    count: u64,
    transfer_ns: i128,
    transfer_min_ns: i64,
    transfer_max_ns: i64,
    start_skew_ns: i128,
    start_skew_max_ns: i64,
    end_skew_ns: i128,
    end_skew_max_ns: i64,
    wait_ns: i128,
}

#[derive(Default, Clone)]
struct RankAcc {
    collectives: u64,
    last: u64,
    first: u64,
    suffered_ns: i128,
    /// Shared equally among ranks tied for last.
    caused_ns: f64,
    compute_when_last_ns: i128,
    /// Sum over the instances it was last of the others' mean compute before.
    others_compute_ns: f64,
    /// Longest computation label before the instances it was last: (times, compute ns).
    late_after: HashMap<Sym, (u64, i128)>,
}

/// Accumulates instances.
pub(crate) struct Metrics {
    links: LinkChoice,
    rows: BTreeMap<RowKey, RowAcc>,
    ranks: Vec<RankAcc>,
    matched: u64,
}

impl Metrics {
    pub fn new(links: LinkChoice, ranks: usize) -> Metrics {
        Metrics { links, rows: BTreeMap::new(), ranks: vec![RankAcc::default(); ranks], matched: 0 }
    }

    pub fn matched(&self) -> u64 {
        self.matched
    }

    pub fn add(&mut self, inst: &InstanceView<'_>) {
        let p = &inst.parts;
        let (Some(first), true) = (p.first(), p.len() == inst.members.len()) else { return };
        self.matched += 1;
        let s = inst.slot;
        let even = s.kind != CollectiveKind::AllToAllV;
        let mut latest = first;
        let mut earliest = first;
        let (mut end_min, mut end_max, mut dur_min) = (first.end_ns, first.end_ns, first.dur_ns);
        for q in p {
            // Ties go to the lower position (lower rank): deterministic.
            if q.start_ns > latest.start_ns {
                latest = q;
            }
            if q.start_ns < earliest.start_ns {
                earliest = q;
            }
            end_min = end_min.min(q.end_ns);
            end_max = end_max.max(q.end_ns);
            dur_min = dur_min.min(q.dur_ns);
        }
        let start_skew = latest.start_ns - earliest.start_ns;
        let end_skew = end_max - end_min;
        let mut wait_sum: i128 = 0;
        for q in p {
            let wait = i128::from(latest.start_ns - q.start_ns);
            wait_sum += wait;
            let r = &mut self.ranks[q.pos];
            r.collectives += 1;
            r.suffered_ns += wait;
        }
        if start_skew > 0 {
            // Ranks that start at the same latest (earliest) time are all last (first);
            // the waiting they cause is shared equally.
            let last: Vec<&Part> = p.iter().filter(|q| q.start_ns == latest.start_ns).collect();
            let share = wait_sum as f64 / last.len() as f64;
            for l in &last {
                let others: Vec<&Part> =
                    p.iter().filter(|q| q.start_ns != latest.start_ns).collect();
                let others_mean = if others.is_empty() {
                    0.0
                } else {
                    others.iter().map(|q| q.compute_before_ns as f64).sum::<f64>()
                        / others.len() as f64
                };
                let r = &mut self.ranks[l.pos];
                r.last += 1;
                r.caused_ns += share;
                r.compute_when_last_ns += i128::from(l.compute_before_ns);
                r.others_compute_ns += others_mean;
                if l.compute_before != 0 {
                    let e = r.late_after.entry(l.compute_before).or_default();
                    e.0 += 1;
                    e.1 += i128::from(l.compute_before_ns);
                }
            }
            for q in p.iter().filter(|q| q.start_ns == earliest.start_ns) {
                self.ranks[q.pos].first += 1;
            }
        }
        let key: RowKey = (
            inst.label.to_string(),
            s.kind,
            s.name,
            s.dtype,
            s.in_nelems.filter(|_| even),
            s.out_nelems.filter(|_| even),
            p.len() as u32,
            inst.scope,
        );
        let acc = self.rows.entry(key).or_insert_with(|| RowAcc {
            transfer_min_ns: i64::MAX,
            transfer_max_ns: i64::MIN,
            ..RowAcc::default()
        });
        acc.count += 1;
        acc.transfer_ns += i128::from(dur_min);
        acc.transfer_min_ns = acc.transfer_min_ns.min(dur_min);
        acc.transfer_max_ns = acc.transfer_max_ns.max(dur_min);
        acc.start_skew_ns += i128::from(start_skew);
        acc.start_skew_max_ns = acc.start_skew_max_ns.max(start_skew);
        acc.end_skew_ns += i128::from(end_skew);
        acc.end_skew_max_ns = acc.end_skew_max_ns.max(end_skew);
        acc.wait_ns += wait_sum;
    }

    /// The collectives table, largest total transfer time first.
    pub fn rows(&self, strings: &Interner) -> Vec<CollectiveRow> {
        let mut out: Vec<CollectiveRow> = self
            .rows
            .iter()
            .map(|((label, kind, name, dtype, in_n, out_n, n, scope), a)| {
                let dtype_s = strings.get(*dtype).map(str::to_string);
                let count = a.count.max(1) as f64;
                let mean_ns = a.transfer_ns as f64 / count;
                let bytes = super::kind::message_bytes(*in_n, *out_n, dtype_s.as_deref());
                // Bytes per nanosecond are GB/s (10^9 bytes per second).
                let algbw = bytes.filter(|_| mean_ns > 0.0).map(|b| b as f64 / mean_ns);
                let busbw = algbw.and_then(|a| Some(a * kind.bus_factor(*n)?));
                let link = self.links.for_scope(*scope);
                let peak = link.map(|l| l.per_gpu_gbs).filter(|p| *p > 0.0);
                CollectiveRow {
                    process_group: label.clone(),
                    kind: *kind,
                    collective: strings.get(*name).unwrap_or(kind.as_str()).to_string(),
                    dtype: dtype_s,
                    message_bytes: bytes,
                    algbw_gbs: algbw,
                    busbw_gbs: busbw,
                    peak_link: link.filter(|_| busbw.is_some()).map(|l| l.id.clone()),
                    peak_busbw_gbs: peak.filter(|_| busbw.is_some()),
                    busbw_pct_of_peak: busbw.zip(peak).map(|(b, p)| b / p * 100.0),
                    group_size: *n,
                    scope: *scope,
                    count: a.count,
                    transfer_total_ms: a.transfer_ns as f64 / 1e6,
                    transfer_mean_us: mean_ns / 1e3,
                    transfer_min_us: a.transfer_min_ns as f64 / 1e3,
                    transfer_max_us: a.transfer_max_ns as f64 / 1e3,
                    start_skew_mean_us: a.start_skew_ns as f64 / count / 1e3,
                    start_skew_max_us: a.start_skew_max_ns as f64 / 1e3,
                    end_skew_mean_us: a.end_skew_ns as f64 / count / 1e3,
                    end_skew_max_us: a.end_skew_max_ns as f64 / 1e3,
                    wait_total_ms: a.wait_ns as f64 / 1e6,
                    wait_mean_us: a.wait_ns as f64 / (count * f64::from((*n).max(1))) / 1e3,
                }
            })
            .collect();
        out.sort_by(|a, b| {
            b.transfer_total_ms
                .total_cmp(&a.transfer_total_ms)
                .then_with(|| a.process_group.cmp(&b.process_group))
                .then_with(|| a.kind.cmp(&b.kind))
                .then_with(|| a.collective.cmp(&b.collective))
                .then_with(|| a.dtype.cmp(&b.dtype))
                .then_with(|| a.message_bytes.cmp(&b.message_bytes))
        });
        out
    }

    /// One entry per rank that took part in a matched instance, the one that caused the
    /// most waiting first.
    pub fn stragglers(&self, infos: &[&RankInfo], strings: &Interner) -> Vec<Straggler> {
        let mut out: Vec<(f64, Straggler)> = self
            .ranks
            .iter()
            .enumerate()
            .filter(|(_, r)| r.collectives > 0)
            .map(|(pos, r)| {
                let info = infos.get(pos);
                let steps = info.map_or(0, |i| i.steps);
                let caused_ms = r.caused_ns / 1e6;
                let late_after = r
                    .late_after
                    .iter()
                    .filter_map(|(sym, (n, ns))| Some((strings.get(*sym)?, *n, *ns)))
                    .max_by(|a, b| (a.1, a.2).cmp(&(b.1, b.2)).then_with(|| b.0.cmp(a.0)))
                    .map(|(s, _, _)| s.to_string());
                let last = r.last as f64;
                (
                    r.caused_ns,
                    Straggler {
                        rank: info
                            .and_then(|i| i.rank)
                            .unwrap_or(i64::try_from(pos).unwrap_or(i64::MAX)),
                        name: info.map(|i| i.label.clone()).unwrap_or_default(),
                        collectives: r.collectives,
                        times_last: r.last,
                        times_first: r.first,
                        pct_last: r.last as f64 / r.collectives as f64 * 100.0,
                        wait_suffered_ms: r.suffered_ns as f64 / 1e6,
                        wait_caused_ms: caused_ms,
                        steps,
                        wait_caused_per_step_ms: (steps > 0).then(|| caused_ms / steps as f64),
                        compute_before_when_last_us: (r.last > 0)
                            .then(|| r.compute_when_last_ns as f64 / last / 1e3),
                        others_compute_before_us: (r.last > 0)
                            .then(|| r.others_compute_ns / last / 1e3),
                        late_after,
                    },
                )
            })
            .collect();
        out.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.rank.cmp(&b.1.rank)));
        out.into_iter().map(|(_, s)| s).collect()
    }
}
