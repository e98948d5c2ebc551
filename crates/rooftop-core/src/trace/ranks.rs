//! Multi-rank runs as map/reduce. The map step turns one rank's trace into what the
//! reduce needs: its [`RankMeta`] (rank, world size, clock base, timeline totals) and
//! its collectives ([`super::comm::CollectiveRecord`]) — in memory here, or as Parquet
//! tables (`rooftop-tables`) on another machine. The reduce ([`MultiRank`]) takes ranks
//! one at a time in any order and gives the cross-rank report ([`CrossRank`]): the rank
//! table, the collectives, stragglers, all-to-all traffic, findings and warnings.
//!
//! Invariant: the report depends only on the metas and records, never on the order they
//! were added in, so the report from traces equals the report from their tables.

use super::comm::reduce::{RankInfo, ReduceOptions, Reducer};
use super::comm::{CollectiveRecord, CommReport};
use super::model::TraceModel;
use super::report::TraceReport;
use super::timeline::{is_comm, is_comm_name, timeline, Timeline};
use serde::Serialize;
use std::collections::BTreeMap;

/// What the reduce needs of one rank besides its collectives (the `meta` table).
#[derive(Debug, Clone, PartialEq, Serialize, Default)]
pub struct RankMeta {
    /// The trace's file name.
    pub name: String,
    /// `distributedInfo.rank`.
    pub rank: Option<i64>,
    /// `distributedInfo.world_size`.
    pub world_size: Option<i64>,
    /// `baseTimeNanoseconds`: added to `ts` to compare ranks.
    pub base_time_ns: Option<i64>,
    /// `deviceProperties[0].name`.
    pub device_name: Option<String>,
    /// Catalog id of the device the rank was analysed with.
    pub catalog_id: Option<String>,
    /// Distinct `ProfilerStep#N` annotations.
    pub steps: u64,
    /// Timeline totals (the rank table).
    pub total_ms: f64,
    pub busy_ms: f64,
    pub idle_ms: f64,
    pub computation_ms: f64,
    pub communication_ms: f64,
    pub exposed_communication_ms: f64,
    /// NCCL/RCCL kernels and their summed duration.
    pub collective_kernel_count: u64,
    pub collective_kernel_time_ms: f64,
    pub gpu_events: u64,
    pub cpu_ops: u64,
}

impl RankMeta {
    /// The meta of one rank from its trace alone (no full analysis: the map step of a
    /// thousand ranks needs only the timeline): `catalog_id` is the device it is
    /// analysed with, `include_unlinked` the timeline setting
    /// ([`super::report::TraceOptions`]).
    pub fn of(
        name: &str,
        model: &TraceModel,
        catalog_id: Option<&str>,
        include_unlinked: bool,
    ) -> RankMeta {
        let (tl, _) = timeline(model, include_unlinked);
        Self::with_timeline(name, model, catalog_id, &tl)
    }

    /// [`RankMeta::of`] with the rank's timeline computed already (a full report's,
    /// analysed with the same `include_unlinked`).
    pub fn with_timeline(
        name: &str,
        model: &TraceModel,
        catalog_id: Option<&str>,
        tl: &Timeline,
    ) -> RankMeta {
        let t = &tl.all;
        let (count, time_ns) = model
            .gpu
            .iter()
            .filter(|g| is_comm(g))
            .fold((0u64, 0i64), |(c, s), g| (c + 1, s.saturating_add(g.dur_ns)));
        let mut steps: Vec<&str> = model
            .annotations
            .iter()
            .filter(|a| a.name.starts_with("ProfilerStep#"))
            .map(|a| a.name.as_str())
            .collect();
        steps.sort_unstable();
        steps.dedup();
        RankMeta {
            name: name.to_string(),
            rank: model.rank,
            world_size: model.world_size,
            base_time_ns: model.base_time_ns,
            device_name: model.devices.first().map(|d| d.name.clone()),
            catalog_id: catalog_id.map(str::to_string),
            steps: steps.len() as u64,
            total_ms: t.total.time_ms,
            busy_ms: t.busy.time_ms,
            idle_ms: t.idle.time_ms,
            computation_ms: t.computation.time_ms,
            communication_ms: t.communication.time_ms,
            exposed_communication_ms: t.exposed_communication.time_ms,
            collective_kernel_count: count,
            collective_kernel_time_ms: time_ns as f64 / 1e6,
            gpu_events: model.gpu.len() as u64,
            cpu_ops: model.ops.len() as u64,
        }
    }

    /// The rank-table part of a report (for callers that only have reports).
    fn of_report(name: &str, report: &TraceReport) -> RankMeta {
        let t = &report.timeline.all;
        let (count, time_us) = report
            .kernels
            .iter()
            .filter(|k| is_comm_name(&k.name))
            .fold((0, 0.0), |(c, s), k| (c + k.count, s + k.total_us));
        RankMeta {
            name: name.to_string(),
            catalog_id: report.device.catalog_id.clone(),
            total_ms: t.total.time_ms,
            busy_ms: t.busy.time_ms,
            idle_ms: t.idle.time_ms,
            computation_ms: t.computation.time_ms,
            communication_ms: t.communication.time_ms,
            exposed_communication_ms: t.exposed_communication.time_ms,
            collective_kernel_count: count,
            collective_kernel_time_ms: time_us / 1e3,
            ..RankMeta::default()
        }
    }

    /// Its label in the report: `rank 3 (rank3.json)`, or the file name alone.
    pub fn label(&self) -> String {
        match self.rank {
            Some(r) => format!("rank {r} ({})", self.name),
            None => self.name.clone(),
        }
    }
}

/// One rank of a multi-rank run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RankRow {
    /// The rank's label (`rank 3 (rank3.json)`).
    pub name: String,
    pub rank: Option<i64>,
    /// Timeline window.
    pub total_ms: f64,
    pub busy_ms: f64,
    pub idle_ms: f64,
    pub computation_ms: f64,
    pub communication_ms: f64,
    pub exposed_communication_ms: f64,
    /// NCCL/RCCL kernels launched and their summed duration.
    pub collective_kernel_count: u64,
    pub collective_kernel_time_ms: f64,
}

impl RankRow {
    fn of(m: &RankMeta) -> RankRow {
        RankRow {
            name: m.label(),
            rank: m.rank,
            total_ms: m.total_ms,
            busy_ms: m.busy_ms,
            idle_ms: m.idle_ms,
            computation_ms: m.computation_ms,
            communication_ms: m.communication_ms,
            exposed_communication_ms: m.exposed_communication_ms,
            collective_kernel_count: m.collective_kernel_count,
            collective_kernel_time_ms: m.collective_kernel_time_ms,
        }
    }
}

/// The cross-rank report.
#[derive(Debug, Clone, PartialEq, Serialize, Default)]
pub struct CrossRank {
    pub ranks: Vec<RankRow>,
    /// The rank with the most computation time.
    pub slowest: Option<String>,
    /// The waiting the slowest rank caused in matched collectives and point-to-point
    /// transfers (the others started and waited for it), ms; `None` when no matched
    /// instance shows it — then the report does not claim that the others wait.
    pub slowest_wait_caused_ms: Option<f64>,
    /// Why these traces are not one job (different GPUs, or neither a rank number nor a
    /// matched collective ties them together); `None` when they are.
    pub not_one_job: Option<String>,
    /// Largest minus smallest computation time across ranks.
    pub computation_spread_ms: f64,
    /// Largest minus smallest timeline window across ranks.
    pub total_spread_ms: f64,
    /// The world size most traces state.
    pub world_size: Option<i64>,
    /// Collectives, stragglers, all-to-all, findings, warnings.
    #[serde(flatten)]
    pub comm: CommReport,
}

/// The rank table of per-rank reports `(name, report)` in the order given, without
/// collectives (kept for callers that only have reports).
pub fn cross_rank(reports: &[(String, TraceReport)]) -> CrossRank {
    let metas: Vec<RankMeta> =
        reports.iter().map(|(name, r)| RankMeta::of_report(name, r)).collect();
    rank_table(metas.iter().map(RankRow::of).collect())
}

fn rank_table(ranks: Vec<RankRow>) -> CrossRank {
    let spread = |f: fn(&RankRow) -> f64| {
        let (lo, hi) = ranks
            .iter()
            .map(f)
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), v| (l.min(v), h.max(v)));
        if ranks.is_empty() {
            0.0
        } else {
            hi - lo
        }
    };
    let slowest = ranks
        .iter()
        .max_by(|a, b| a.computation_ms.total_cmp(&b.computation_ms))
        .map(|r| r.name.clone());
    CrossRank {
        computation_spread_ms: spread(|r| r.computation_ms),
        total_spread_ms: spread(|r| r.total_ms),
        slowest,
        ranks,
        ..CrossRank::default()
    }
}

/// The reduce: ranks added one at a time, in any order.
#[derive(Debug, Default)]
pub struct MultiRank {
    reducer: Reducer,
    metas: Vec<RankMeta>,
}

impl MultiRank {
    pub fn new(opts: ReduceOptions) -> MultiRank {
        MultiRank { reducer: Reducer::new(opts), metas: Vec::new() }
    }

    /// Adds one rank.
    pub fn add(&mut self, meta: RankMeta, records: &[CollectiveRecord]) {
        let info = RankInfo {
            name: meta.name.clone(),
            label: meta.label(),
            rank: meta.rank,
            world_size: meta.world_size,
            base_time_ns: meta.base_time_ns,
            steps: meta.steps,
        };
        self.reducer.add(info, records);
        self.metas.push(meta);
    }

    /// Ranks added so far.
    pub fn len(&self) -> usize {
        self.metas.len()
    }

    pub fn is_empty(&self) -> bool {
        self.metas.is_empty()
    }

    /// The cross-rank report, ranks by `distributedInfo.rank` (where stated), then name.
    pub fn finish(mut self) -> CrossRank {
        self.metas.sort_by(|a, b| {
            (a.rank.is_none(), a.rank, &a.name).cmp(&(b.rank.is_none(), b.rank, &b.name))
        });
        // The device most ranks were analysed with picks the links.
        let mut ids: BTreeMap<&str, usize> = BTreeMap::new();
        for m in &self.metas {
            if let Some(id) = m.catalog_id.as_deref() {
                *ids.entry(id).or_default() += 1;
            }
        }
        let device = ids
            .into_iter()
            .max_by_key(|(id, n)| (*n, std::cmp::Reverse(*id)))
            .map(|(id, _)| id.to_string());
        let windows: BTreeMap<String, f64> =
            self.metas.iter().map(|m| (m.label(), m.total_ms)).collect();
        let comm = self
            .reducer
            .finish(device.as_deref(), &|label| windows.get(label).copied().unwrap_or(0.0));
        let mut sizes: BTreeMap<i64, usize> = BTreeMap::new();
        for ws in self.metas.iter().filter_map(|m| m.world_size) {
            *sizes.entry(ws).or_default() += 1;
        }
        let mut out = rank_table(self.metas.iter().map(RankRow::of).collect());
        out.world_size = sizes.into_iter().max_by_key(|(ws, n)| (*n, *ws)).map(|(ws, _)| ws);
        out.slowest_wait_caused_ms = out.slowest.as_ref().and_then(|s| {
            comm.stragglers
                .iter()
                .find(|x| &x.name == s)
                .map(|x| x.wait_caused_ms)
                .filter(|&w| w > 0.0)
        });
        out.not_one_job = not_one_job(&self.metas, &comm);
        out.comm = comm;
        out
    }
}

/// Why ranks are not one job, if they are not: their traces name different GPUs, or
/// none states its rank (`distributedInfo`) and no collective or transfer was matched
/// across them (nothing ties them together: separate runs side by side).
pub fn not_one_job(metas: &[RankMeta], comm: &CommReport) -> Option<String> {
    if metas.len() < 2 {
        return None;
    }
    let mut devices: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for m in metas {
        if let Some(d) = m.device_name.as_deref() {
            devices.entry(d).or_default().push(&m.name);
        }
    }
    if devices.len() > 1 {
        let list: Vec<String> =
            devices.iter().map(|(d, files)| format!("{d} ({})", files.join(", "))).collect();
        return Some(format!("the traces were taken on different GPUs: {}", list.join("; ")));
    }
    let ranked = metas.iter().any(|m| m.rank.is_some());
    // A JAX run writes one profile per host into one run folder: the folder ties them.
    let per_host = metas.iter().all(|m| m.name.ends_with(".xplane.pb"));
    if !ranked && !per_host && comm.collectives.matched == 0 {
        return Some(
            "no trace states its rank (`distributedInfo`) and no collective or transfer is \
             matched across them"
                .to_string(),
        );
    }
    None
}

#[cfg(test)]
#[allow(clippy::many_single_char_names, clippy::cast_possible_wrap)]
mod tests {
    use super::*;
    use crate::trace::comm::{CollectiveKind, Scope};
    use crate::trace::model::CommArgs;
    use crate::trace::report::tests::model;
    use crate::trace::report::{analyze, TraceOptions};

    #[test]
    fn cross_rank_names_the_slowest() {
        let opts = TraceOptions::default();
        let reports = vec![
            ("rank0".to_string(), analyze(&model(60, 80), None, &opts)),
            ("rank1".to_string(), analyze(&model(75, 80), None, &opts)),
        ];
        let c = cross_rank(&reports);
        assert_eq!(c.slowest.as_deref(), Some("rank1"));
        assert_eq!(c.ranks[0].collective_kernel_count, 2);
        assert!((c.ranks[0].collective_kernel_time_ms - 0.090).abs() < 1e-12);
        assert!((c.computation_spread_ms - 0.015).abs() < 1e-12);
        assert_eq!(c.total_spread_ms, 0.0);
        assert_eq!(cross_rank(&[]), CrossRank::default());
    }

    /// A collective kernel of `kind` in group `pg` with `Seq` `seq`, at `ts_us` for
    /// `dur_us`, of `nelems` elements of `dtype`.
    #[allow(clippy::too_many_arguments)]
    fn rec(
        pg: &str,
        ranks: &str,
        seq: Option<i64>,
        name: &str,
        nelems: u64,
        dtype: &str,
        ts_us: i64,
        dur_us: i64,
    ) -> CollectiveRecord {
        let kind = CollectiveKind::from_collective_name(name).unwrap_or_default();
        CollectiveRecord {
            kernel: format!("ncclDevKernel_{name}"),
            ts_ns: ts_us * 1000,
            dur_ns: dur_us * 1000,
            kind,
            args: CommArgs {
                collective: Some(name.into()),
                in_nelems: Some(nelems),
                out_nelems: Some(nelems),
                group_size: Some(ranks.split(',').count() as u32),
                dtype: Some(dtype.into()),
                pg_name: Some(pg.into()),
                pg_desc: Some(format!("pg{pg}").into()),
                pg_ranks: Some(ranks.into()),
                seq,
                ..CommArgs::default()
            },
            ..CollectiveRecord::default()
        }
    }

    fn meta(rank: i64, world: i64, base_ns: Option<i64>) -> RankMeta {
        RankMeta {
            name: format!("rank{rank}.json"),
            rank: Some(rank),
            world_size: Some(world),
            base_time_ns: base_ns,
            steps: 2,
            total_ms: 1.0,
            ..RankMeta::default()
        }
    }

    /// `--gpus-per-node 3` with a world of 4: the report notes that the last node holds
    /// one rank (4 mod 3), and still scopes the all-reduce over ranks 0-3 as
    /// inter-node; with nodes of 2 (4 mod 2 = 0) there is no such note.
    #[test]
    fn ranks_that_do_not_fill_the_last_node_are_noted() {
        let reduce = |gpus_per_node: u32| {
            let mut mr = MultiRank::new(ReduceOptions {
                gpus_per_node: Some(gpus_per_node),
                ..ReduceOptions::default()
            });
            for r in 0..4 {
                let recs = [rec("0", "[0, 1, 2, 3]", Some(1), "allreduce", 1024, "Float", 100, 10)];
                mr.add(meta(r, 4, None), &recs);
            }
            mr.finish()
        };
        let c = reduce(3);
        let notes: Vec<_> =
            c.comm.warnings.iter().filter(|w| w.kind == "uneven_last_node").collect();
        assert_eq!(notes.len(), 1, "{:?}", c.comm.warnings);
        assert_eq!(notes[0].count, 1);
        assert!(
            notes[0].example.starts_with("4 ranks over nodes of 3 GPUs: the last node has 1 rank"),
            "{}",
            notes[0].example
        );
        assert_eq!(c.comm.collectives.rows[0].scope, Scope::InterNode);
        let c = reduce(2);
        assert!(
            c.comm.warnings.iter().all(|w| w.kind != "uneven_last_node"),
            "{:?}",
            c.comm.warnings
        );
    }

    #[test]
    fn allreduce_bandwidth_skew_and_stragglers_by_hand() {
        // Four ranks, two all-reduces of 1,048,576 bf16 (S = 2,097,152 bytes).
        // Starts (µs) and durations:   r0      r1      r2      r3
        //   seq 1                      100/80  110/70  130/50  100/80
        //   seq 2                      300/60  300/60  340/20  310/50
        // Rank 3's clock base is 1 ms later: its `ts` are 1,000 µs smaller.
        let g = "[0, 1, 2, 3]";
        let starts = [[100, 110, 130, 100], [300, 300, 340, 310]];
        let durs = [[80, 70, 50, 80], [60, 60, 20, 50]];
        let mut mr =
            MultiRank::new(ReduceOptions { gpus_per_node: Some(8), ..ReduceOptions::default() });
        // Added out of order: the report does not depend on it.
        for r in [2usize, 0, 3, 1] {
            let shift = if r == 3 { 1000 } else { 0 };
            let recs: Vec<CollectiveRecord> = (0..2)
                .map(|i| {
                    let mut x = rec(
                        "0",
                        g,
                        Some(i as i64 + 1),
                        "allreduce",
                        1 << 20,
                        "BFloat16",
                        starts[i][r] - shift,
                        durs[i][r],
                    );
                    x.compute_before_ns = if r == 2 { 200_000 } else { 100_000 };
                    x.compute_before =
                        Some(if r == 2 { "aten::mm" } else { "aten::add" }.to_string());
                    x
                })
                .collect();
            let base = if r == 3 { Some(1_000_000) } else { None };
            mr.add(meta(r as i64, 4, base), &recs);
        }
        let mut m = meta(9, 4, None);
        m.rank = None;
        let c = mr.finish();
        assert!(c.comm.warnings.is_empty(), "{:?}", c.comm.warnings);
        assert_eq!(c.world_size, Some(4));
        assert_eq!(c.comm.collectives.matched, 2);
        let row = &c.comm.collectives.rows[0];
        assert_eq!(
            (row.kind, row.count, row.group_size, row.scope),
            (CollectiveKind::AllReduce, 2, 4, Scope::IntraNode)
        );
        assert_eq!(row.message_bytes, Some(2_097_152));
        // Transfer = shortest duration: 50 and 20 µs; mean 35 µs.
        assert_eq!(
            (row.transfer_min_us, row.transfer_max_us, row.transfer_mean_us),
            (20.0, 50.0, 35.0)
        );
        assert!((row.transfer_total_ms - 0.070).abs() < 1e-12);
        // algbw = 2,097,152 B / 35,000 ns = 59.918… GB/s; busbw × 2·3/4 = 1.5.
        let alg = 2_097_152.0 / 35_000.0;
        assert!((row.algbw_gbs.unwrap_or(0.0) - alg).abs() < 1e-9);
        assert!((row.busbw_gbs.unwrap_or(0.0) - alg * 1.5).abs() < 1e-9);
        // No device: no peak.
        assert_eq!(row.peak_busbw_gbs, None);
        // Start skew 30 and 40 µs; ends all at 180 / 360 µs: no end skew.
        assert_eq!((row.start_skew_mean_us, row.start_skew_max_us), (35.0, 40.0));
        assert_eq!((row.end_skew_mean_us, row.end_skew_max_us), (0.0, 0.0));
        // Waits: 30+20+0+30 = 80 and 40+40+0+30 = 110 µs; mean 190 / 8.
        assert!((row.wait_total_ms - 0.190).abs() < 1e-12);
        assert_eq!(row.wait_mean_us, 23.75);
        let s = &c.comm.stragglers;
        assert_eq!(s[0].rank, 2);
        assert_eq!((s[0].times_last, s[0].pct_last, s[0].times_first), (2, 100.0, 0));
        assert!((s[0].wait_caused_ms - 0.190).abs() < 1e-12);
        assert_eq!(s[0].wait_suffered_ms, 0.0);
        assert_eq!(s[0].wait_caused_per_step_ms, Some(0.095));
        assert_eq!(
            (s[0].compute_before_when_last_us, s[0].others_compute_before_us),
            (Some(200.0), Some(100.0))
        );
        assert_eq!(s[0].late_after.as_deref(), Some("aten::mm"));
        // Rank 0 started first both times (tied with rank 3 at 100 µs: lower rank).
        let r0 = s.iter().find(|x| x.rank == 0).map(|x| (x.times_first, x.wait_suffered_ms));
        assert_eq!(r0.map(|x| x.0), Some(2));
        assert!((r0.map_or(0.0, |x| x.1) - 0.070).abs() < 1e-12);
        let f = &c.comm.findings[0];
        assert_eq!(f.id, "collectives.straggler");
        assert!(
            f.evidence.contains("It starts last at 100% of its 2 collectives"),
            "{}",
            f.evidence
        );
        assert!(f.evidence.contains("95.0 µs per step"), "{}", f.evidence);
    }

    #[test]
    fn missing_duplicate_and_mismatched_ranks_are_named() {
        let mut mr = MultiRank::new(ReduceOptions::default());
        // World size 5, no trace of rank 4; group "1" is ranks 0 and 4.
        for r in 0..4 {
            mr.add(
                meta(r, if r == 3 { 8 } else { 5 }, None),
                &[rec("1", "[0, 4]", Some(1), "allreduce", 8, "Float", 10, 5)],
            );
        }
        let mut dup = meta(1, 5, None);
        dup.name = "rank1b.json".into();
        mr.add(dup, &[]);
        let c = mr.finish();
        let w = |k: &str| {
            c.comm
                .warnings
                .iter()
                .find(|w| w.kind == k)
                .map(|w| w.example.clone())
                .unwrap_or_default()
        };
        assert!(
            w("duplicate_rank").contains("rank 1 appears twice (rank1.json and rank1b.json)"),
            "{}",
            w("duplicate_rank")
        );
        assert!(
            w("world_size_mismatch").contains("world size 5 on ranks 0-2; world size 8 on ranks 3"),
            "{}",
            w("world_size_mismatch")
        );
        assert!(w("missing_ranks").contains("no trace for rank 4"), "{}", w("missing_ranks"));
        assert!(
            w("incomplete_collectives").contains("no trace for member rank 4"),
            "{}",
            w("incomplete_collectives")
        );
        // Nothing is reported from the incomplete collective.
        assert_eq!(c.comm.collectives.matched, 0);
        assert!(c.comm.collectives.rows.is_empty() && c.comm.stragglers.is_empty());
        // The duplicate is not in the collectives analysis, but the rank table keeps
        // every trace.
        assert_eq!(c.ranks.len(), 5);
    }

    #[test]
    fn order_matching_aligns_profiling_windows_and_stops_on_divergence() {
        let g = "[0, 1]";
        let mut mr = MultiRank::new(ReduceOptions::default());
        // Rank 0 caught an extra all-reduce before rank 1 started profiling.
        mr.add(
            meta(0, 2, None),
            &[
                rec("0", g, None, "allreduce", 256, "Float", 0, 10),
                rec("0", g, None, "allreduce", 256, "Float", 200, 10),
                rec("0", g, None, "_allgather_base", 64, "Float", 400, 10),
            ],
        );
        mr.add(
            meta(1, 2, None),
            &[
                rec("0", g, None, "allreduce", 256, "Float", 205, 5),
                rec("0", g, None, "_allgather_base", 64, "Float", 401, 9),
            ],
        );
        let c = mr.finish();
        assert_eq!(c.comm.collectives.matched, 2);
        assert_eq!(c.comm.collectives.groups[0].matched_by, "order");
        let un = c.comm.warnings.iter().find(|w| w.kind == "unmatched_collectives");
        assert_eq!(un.map(|w| w.count), Some(1));
        assert!(un.is_some_and(|w| w.example.contains("rank 0 could not be paired")), "{un:?}");
        // Divergence: the second instance disagrees; matching stops there.
        let mut mr = MultiRank::new(ReduceOptions::default());
        mr.add(
            meta(0, 2, None),
            &[
                rec("0", g, None, "allreduce", 4, "Float", 0, 1),
                rec("0", g, None, "allreduce", 4, "Float", 10, 1),
                rec("0", g, None, "allreduce", 4, "Float", 20, 1),
            ],
        );
        mr.add(
            meta(1, 2, None),
            &[
                rec("0", g, None, "allreduce", 4, "Float", 0, 1),
                rec("0", g, None, "allreduce", 8, "Float", 10, 1),
                rec("0", g, None, "allreduce", 4, "Float", 20, 1),
            ],
        );
        let c = mr.finish();
        assert_eq!(c.comm.collectives.matched, 1);
        let bad = c.comm.warnings.iter().find(|w| w.kind == "inconsistent_collectives");
        assert!(
            bad.is_some_and(|w| w.example.contains(
                "rank 1 has all_reduce 8 elements of Float where rank 0 has all_reduce 4"
            )),
            "{bad:?}"
        );
    }

    #[test]
    fn all_to_all_v_matrix_and_imbalance_by_hand() {
        // Float (4 bytes). In split sizes (elements to members 0..3):
        //   r0 [10, 20, 30, 40] → 400 B; r1 [1, 1, 1, 1] → 16 B; r2 zeros; r3 [5,5,5,5] → 80 B.
        // Mean send 124 B, max 400 B: imbalance 400/124.
        let g = "[0, 1, 2, 3]";
        let splits = ["[10, 20, 30, 40]", "[1, 1, 1, 1]", "[0, 0, 0, 0]", "[5, 5, 5, 5]"];
        let totals = [100, 4, 0, 20];
        let mut mr = MultiRank::new(ReduceOptions::default());
        for r in 0..4 {
            let mut x = rec("2", g, Some(7), "all_to_allv", totals[r], "Float", 50, 10 + r as i64);
            x.args.in_split = Some(splits[r].into());
            mr.add(meta(r as i64, 4, None), &[x]);
        }
        let c = mr.finish();
        let a = &c.comm.all_to_all[0];
        assert_eq!((a.count, a.total_bytes, a.heaviest_sender), (1, 496, Some(0)));
        assert_eq!(a.send_bytes, vec![400, 16, 0, 80]);
        assert_eq!(a.recv_bytes, vec![64, 104, 144, 184]);
        assert!((a.imbalance_mean - 400.0 / 124.0).abs() < 1e-12);
        assert_eq!(a.matrix_bytes.as_ref().map(|m| m[0].clone()), Some(vec![40, 80, 120, 160]));
        // No bandwidth for uneven splits; timing still there.
        let row = &c.comm.collectives.rows[0];
        assert_eq!(
            (row.kind, row.message_bytes, row.busbw_gbs),
            (CollectiveKind::AllToAllV, None, None)
        );
        assert_eq!(row.transfer_min_us, 10.0);
        assert_eq!(c.comm.findings[0].id, "collectives.all_to_all_imbalance");
    }

    #[test]
    fn ranks_tied_for_last_share_the_waiting_they_cause() {
        // Rank 0 starts at 0 µs, ranks 1 and 2 at 30 µs: 30 µs of waiting, 15 each.
        let g = "[0, 1, 2]";
        let mut mr = MultiRank::new(ReduceOptions::default());
        for (r, start) in [(0, 0), (1, 30), (2, 30)] {
            mr.add(meta(r, 3, None), &[rec("0", g, Some(1), "allreduce", 8, "Float", start, 50)]);
        }
        let c = mr.finish();
        let by =
            |r: i64| c.comm.stragglers.iter().find(|s| s.rank == r).cloned().unwrap_or_default();
        assert_eq!((by(1).times_last, by(2).times_last, by(0).times_last), (1, 1, 0));
        assert!((by(1).wait_caused_ms - 0.015).abs() < 1e-12);
        assert!((by(2).wait_caused_ms - 0.015).abs() < 1e-12);
        assert_eq!(by(0).times_first, 1);
    }

    #[test]
    fn analyze_then_meta_keeps_the_rank_table() {
        let opts = TraceOptions::default();
        let m = model(60, 80);
        let r = analyze(&m, None, &opts);
        let meta = RankMeta::of("a.json", &m, None, opts.include_unlinked);
        assert_eq!(meta.collective_kernel_count, 2);
        // The report's timeline gives the meta computing its own gives.
        assert_eq!(RankMeta::with_timeline("a.json", &m, None, &r.timeline), meta);
        // The same rank-table numbers as the full report gives.
        let from_report = RankMeta::of_report("a.json", &r);
        assert_eq!(
            (meta.total_ms, meta.communication_ms),
            (from_report.total_ms, from_report.communication_ms)
        );
        assert!(
            (meta.collective_kernel_time_ms - from_report.collective_kernel_time_ms).abs() < 1e-12
        );
        let mut mr = MultiRank::new(ReduceOptions::default());
        mr.add(meta, &crate::trace::comm::collectives(&m));
        let c = mr.finish();
        assert_eq!(c.ranks[0].name, "a.json");
        assert_eq!(c.comm.collectives.kernels, 2);
    }
}
