//! The cross-rank reduce of collectives: ranks are added one at a time (from traces or
//! from their Parquet tables, in any order), each rank's records kept as compact slots
//! with interned strings, so a thousand ranks' collectives fit in little memory; then
//! [`Reducer::finish`] validates the rank set, matches each collective across the
//! members of its process group and hands the complete instances to [`super::metrics`]
//! and [`super::alltoall`].
//!
//! Matching, per `Process Group Name` (TraceLens `NcclAnalyser.build_df_long` keys by
//! group and start order; we prefer the recorded `Seq` when every record has one):
//! - by `Seq` when every record of the group carries one: an instance is the records
//!   with the same number (two kernels of one rank with the same number are one
//!   instance spanning both);
//! - else by start order, after aligning the ranks' lists at the anchor instance (the
//!   first of the rank whose profiling started last, found on the others as the record
//!   of the same kind and size that ends nearest to it: members of one instance end
//!   together, however late each arrived), since profiling windows rarely start at the
//!   same collective; matching stops at the first instance whose members disagree.
//!
//! An instance is used only when every member is present and all agree on kind, dtype
//! and element counts (counts may differ in all-to-all-v); everything skipped is
//! counted in a warning naming the ranks. Never a number from a partial instance.

use super::alltoall::AllToAllAcc;
use super::interconnect::{Interconnects, Link, LinkChoice, Scope};
use super::kind::CollectiveKind;
use super::metrics::{InstanceView, Metrics, Part};
use super::record::CollectiveRecord;
use super::{CommReport, GroupRow};
use crate::trace::model::TraceWarning;
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// Interned string id; 0 is "absent".
pub(crate) type Sym = u32;

/// Strings seen in the records, stored once.
#[derive(Debug, Default)]
pub(crate) struct Interner {
    ids: HashMap<String, Sym>,
    names: Vec<String>,
}

impl Interner {
    fn id(&mut self, s: Option<&str>) -> Sym {
        let Some(s) = s else { return 0 };
        if let Some(&i) = self.ids.get(s) {
            return i;
        }
        self.names.push(s.to_string());
        let i = self.names.len() as Sym;
        self.ids.insert(s.to_string(), i);
        i
    }

    pub(crate) fn get(&self, id: Sym) -> Option<&str> {
        id.checked_sub(1).and_then(|i| self.names.get(i as usize)).map(String::as_str)
    }
}

/// One record, compact.
#[derive(Debug, Clone)]
pub(crate) struct Slot {
    pub group: Sym,
    pub seq: Option<i64>,
    pub kind: CollectiveKind,
    pub name: Sym,
    pub dtype: Sym,
    pub in_nelems: Option<u64>,
    pub out_nelems: Option<u64>,
    pub group_size: Option<u32>,
    pub pg_desc: Sym,
    pub pg_ranks: Sym,
    pub in_split: Sym,
    /// Start on the common clock (trace `ts` + `base_time_ns`).
    pub start_ns: i64,
    pub dur_ns: i64,
    pub compute_before_ns: i64,
    pub compute_before: Sym,
    /// Point-to-point: whether this side sends (`send`) or receives (`recv`), and the
    /// peer's global rank (`Dst Rank` / `Src Rank`); `None` otherwise or unrecorded.
    pub sends: Option<bool>,
    pub peer: Option<i64>,
}

impl Slot {
    fn end_ns(&self) -> i64 {
        self.start_ns.saturating_add(self.dur_ns)
    }
}

/// What the reduce knows of one rank besides its collectives.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RankInfo {
    /// The trace's file name.
    pub name: String,
    /// Its label in the report (`rank 3 (rank3.json)`).
    pub label: String,
    pub rank: Option<i64>,
    pub world_size: Option<i64>,
    pub base_time_ns: Option<i64>,
    pub steps: u64,
}

struct RankEntry {
    info: RankInfo,
    slots: Vec<Slot>,
}

/// Settings of the reduce.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ReduceOptions {
    /// GPUs per node, for intra- vs inter-node (`None`: unknown).
    pub gpus_per_node: Option<u32>,
    /// Links that replace the catalog's for the ranks' device (`--intra-link`,
    /// `--inter-link`).
    pub intra_link: Option<Link>,
    pub inter_link: Option<Link>,
}

impl ReduceOptions {
    /// The options with the links named by interconnect-catalog id
    /// ([`Interconnects::builtin`](super::Interconnects::builtin)): `nvlink4-h100`,
    /// `ib-ndr`, ...
    ///
    /// # Errors
    /// An id the catalog does not have: the sentence lists the ids it has.
    pub fn with_links(
        gpus_per_node: Option<u32>,
        intra_link: Option<&str>,
        inter_link: Option<&str>,
    ) -> Result<ReduceOptions, crate::InputError> {
        let find = |id: Option<&str>| id.map(builtin_link).transpose();
        Ok(ReduceOptions {
            gpus_per_node,
            intra_link: find(intra_link)?,
            inter_link: find(inter_link)?,
        })
    }
}

/// The link `id` of the built-in interconnect catalog.
///
/// # Errors
/// `unknown link `ID`; the interconnect catalog has: ...`.
pub fn builtin_link(id: &str) -> Result<Link, crate::InputError> {
    let ic = super::Interconnects::builtin();
    ic.link(id).cloned().ok_or_else(|| {
        crate::InputError(format!(
            "unknown link `{id}`; the interconnect catalog has: {}",
            ic.link_ids().join(", ")
        ))
    })
}

/// The collectives of all ranks, added one rank at a time.
#[derive(Default)]
pub struct Reducer {
    opts: ReduceOptions,
    strings: Interner,
    ranks: Vec<RankEntry>,
    kernels: u64,
}

impl std::fmt::Debug for Reducer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reducer").field("ranks", &self.ranks.len()).finish_non_exhaustive()
    }
}

/// Bus bandwidth above this share of the link says the link or the node layout is
/// wrong, not that the collective is fast.
const ABOVE_LINK_PCT: f64 = 150.0;

/// The warning kind of ranks that do not fill their last node (`uneven_last_node`).
pub const UNEVEN_LAST_NODE: &str = "uneven_last_node";

/// The group of records without a `Process Group Name`.
const NO_GROUP: &str = "(no process group)";

impl Reducer {
    pub fn new(opts: ReduceOptions) -> Reducer {
        Reducer { opts, ..Reducer::default() }
    }

    /// Adds one rank's collectives.
    pub fn add(&mut self, info: RankInfo, records: &[CollectiveRecord]) {
        let base = info.base_time_ns.unwrap_or(0);
        let s = &mut self.strings;
        let slots = records
            .iter()
            .map(|r| {
                let a = &r.args;
                let is_a2a = matches!(r.kind, CollectiveKind::AllToAll | CollectiveKind::AllToAllV);
                let (sends, peer) = match (r.kind, a.collective.as_deref()) {
                    (CollectiveKind::SendRecv, Some(c)) if c.starts_with("send") => {
                        (Some(true), a.dst_rank)
                    }
                    (CollectiveKind::SendRecv, Some(c)) if c.starts_with("recv") => {
                        (Some(false), a.src_rank)
                    }
                    _ => (None, None),
                };
                Slot {
                    group: s.id(Some(a.pg_name.as_deref().unwrap_or(NO_GROUP))),
                    seq: a.seq,
                    kind: r.kind,
                    name: s.id(Some(a.collective.as_deref().unwrap_or(r.kind.as_str()))),
                    dtype: s.id(a.dtype.as_deref()),
                    in_nelems: a.in_nelems,
                    out_nelems: a.out_nelems,
                    group_size: a.group_size,
                    pg_desc: s.id(a.pg_desc.as_deref()),
                    pg_ranks: s.id(a.pg_ranks.as_deref()),
                    in_split: if is_a2a { s.id(a.in_split.as_deref()) } else { 0 },
                    start_ns: r.ts_ns.saturating_add(base),
                    dur_ns: r.dur_ns,
                    compute_before_ns: r.compute_before_ns,
                    compute_before: s.id(r.compute_before.as_deref()),
                    sends,
                    peer,
                }
            })
            .collect();
        self.kernels += records.len() as u64;
        self.ranks.push(RankEntry { info, slots });
    }

    /// Validates the rank set, matches and analyses. `device_id` (catalog id of the
    /// ranks' GPU) picks the links bus bandwidth is compared with; `window_ms` of each
    /// rank (by label) is used for the findings' percentages.
    pub fn finish(
        mut self,
        device_id: Option<&str>,
        window_ms: &dyn Fn(&str) -> f64,
    ) -> CommReport {
        let links = LinkChoice::resolve(
            Interconnects::builtin(),
            device_id,
            self.opts.intra_link.as_ref(),
            self.opts.inter_link.as_ref(),
        );
        let mut warnings = Warnings::default();
        // Order never depends on the order ranks were added.
        self.ranks.sort_by(|a, b| {
            (a.info.rank.is_none(), a.info.rank, &a.info.name).cmp(&(
                b.info.rank.is_none(),
                b.info.rank,
                &b.info.name,
            ))
        });
        let ranks = validate(std::mem::take(&mut self.ranks), &mut warnings);
        if let Some(note) =
            self.opts.gpus_per_node.zip(ranks.job_size()).and_then(|(g, n)| uneven_last_node(n, g))
        {
            warnings.add(UNEVEN_LAST_NODE, 1, note);
        }
        let mut metrics = Metrics::new(links.clone(), ranks.len());
        let mut a2a = AllToAllAcc::default();
        let groups =
            match_groups(&ranks, &self.strings, &self.opts, &mut metrics, &mut a2a, &mut warnings);
        let infos: Vec<&RankInfo> = ranks.iter().map(|r| &r.info).collect();
        let mut report = CommReport::default();
        report.collectives.gpus_per_node = self.opts.gpus_per_node;
        report.collectives.links = links;
        report.collectives.kernels = self.kernels;
        report.collectives.matched = metrics.matched();
        report.collectives.groups = groups;
        report.collectives.rows = metrics.rows(&self.strings);
        let above: Vec<String> = report
            .collectives
            .rows
            .iter()
            .filter(|r| r.busbw_pct_of_peak.is_some_and(|p| p > ABOVE_LINK_PCT))
            .map(|r| format!("{} {} in {}", r.collective, r.scope.as_str(), r.process_group))
            .collect();
        if !above.is_empty() {
            warnings.add(
                "bus_bandwidth_above_link",
                above.len() as u64,
                format!(
                    "{} reach more than {ABOVE_LINK_PCT}% of the catalog link: check \
                     --gpus-per-node (which collectives are inter-node) and the links \
                     (--intra-link, --inter-link); NVLink SHARP can pass the link figure a little",
                    above.join(", ")
                ),
            );
        }
        report.stragglers = metrics.stragglers(&infos, &self.strings);
        report.all_to_all = a2a.groups(&self.strings);
        if a2a.unknown > 0 {
            warnings.add(
                "all_to_all_sizes_unknown",
                a2a.unknown,
                format!(
                    "{} all-to-all instances have split sizes that cannot be read (lists of more \
                     than 30 ranks are truncated by PyTorch, or the dtype is unknown): left out \
                     of the all-to-all matrix",
                    a2a.unknown
                ),
            );
        }
        report.findings = super::findings::findings(&report, window_ms);
        let unknown: u64 = ranks
            .iter()
            .flat_map(|r| &r.slots)
            .filter(|s| s.kind.is_synchronising() && s.in_nelems.is_none())
            .count() as u64;
        if unknown > 0 {
            warnings.add(
                "collective_sizes_unknown",
                unknown,
                format!(
                    "{unknown} collective kernels carry no `In msg nelems`/`dtype` (traces before \
                     PyTorch 2.1, or kernels outside `record_param_comms`): their timing and skew \
                     are reported, their bandwidth is not"
                ),
            );
        }
        report.warnings = warnings.0;
        report
    }
}

/// Warnings by kind, in the order first added.
#[derive(Default)]
struct Warnings(Vec<TraceWarning>);

impl Warnings {
    fn add(&mut self, kind: &str, count: u64, example: String) {
        if let Some(w) = self.0.iter_mut().find(|w| w.kind == kind) {
            w.count += count;
            return;
        }
        self.0.push(TraceWarning { kind: kind.to_string(), count, example });
    }
}

/// `0, 1, 2, 5, 7, 8` as `0-2, 5, 7-8`; at most 12 runs, then `…`.
pub(crate) fn rank_list(ranks: &[i64]) -> String {
    let mut v: Vec<i64> = ranks.to_vec();
    v.sort_unstable();
    v.dedup();
    let mut runs: Vec<String> = Vec::new();
    let mut i = 0;
    while i < v.len() {
        let mut j = i;
        while j + 1 < v.len() && v[j + 1] == v[j] + 1 {
            j += 1;
        }
        runs.push(if j > i { format!("{}-{}", v[i], v[j]) } else { v[i].to_string() });
        i = j + 1;
    }
    if runs.len() > 12 {
        runs.truncate(12);
        runs.push("…".to_string());
    }
    runs.join(", ")
}

/// The ranks of `0..world_size` not in `present`: their count and their runs as
/// [`rank_list`] writes them, found from the gaps between the present ranks — linear in
/// the ranks present, whatever world size a file claims.
fn missing_ranks(present: &BTreeSet<i64>, world_size: i64) -> (u64, String) {
    let mut runs: Vec<String> = Vec::new();
    let mut count: u64 = 0;
    let mut next = 0i64;
    let gaps = present
        .iter()
        .copied()
        .filter(|r| (0..world_size).contains(r))
        .chain(std::iter::once(world_size));
    for r in gaps {
        if r > next {
            count = count.saturating_add(u64::try_from(r - next).unwrap_or(u64::MAX));
            if runs.len() <= 12 {
                runs.push(if r - 1 > next {
                    format!("{next}-{}", r - 1)
                } else {
                    next.to_string()
                });
            }
        }
        next = r.saturating_add(1);
    }
    if runs.len() > 12 {
        runs.truncate(12);
        runs.push("…".to_string());
    }
    (count, runs.join(", "))
}

/// Ranks with a number, each number once, and the world size they agree on.
struct Ranks {
    entries: Vec<RankEntry>,
    /// The world size most traces state (`None`: none states one).
    world: Option<i64>,
}

impl Ranks {
    /// How many ranks the job has: the world size, else the highest rank plus one.
    fn job_size(&self) -> Option<i64> {
        self.world.or_else(|| {
            self.entries.iter().filter_map(|e| e.info.rank).max().map(|r| r.saturating_add(1))
        })
    }
}

/// The note on `ranks` ranks that do not fill their last node of `gpus_per_node` GPUs
/// (rank r on node r / N, as [`Scope::of`] places them), e.g. `4 ranks over nodes of 3
/// GPUs: the last node has 1 rank (rank 3, node 1; rank r is on node r / 3)`. `None`
/// when they fill whole nodes, or fit on one node: a job on part of one node has no
/// last node to speak of. An uneven last node happens (a job sized by something other
/// than nodes), so it is a note, not an error; but it is also what a wrong
/// `--gpus-per-node` looks like.
fn uneven_last_node(ranks: i64, gpus_per_node: u32) -> Option<String> {
    let g = i64::from(gpus_per_node);
    if g == 0 || ranks <= g || ranks % g == 0 {
        return None;
    }
    let last = ranks % g;
    let first = ranks - last;
    let held =
        if last == 1 { format!("rank {first}") } else { format!("ranks {first}-{}", ranks - 1) };
    Some(format!(
        "{ranks} ranks over nodes of {g} GPUs: the last node has {last} {} ({held}, node {}; \
         rank r is on node r / {g})",
        ranks_word(usize::try_from(last).unwrap_or(usize::MAX)),
        ranks / g
    ))
}

impl std::ops::Deref for Ranks {
    type Target = Vec<RankEntry>;
    fn deref(&self) -> &Vec<RankEntry> {
        &self.entries
    }
}

fn validate(mut entries: Vec<RankEntry>, w: &mut Warnings) -> Ranks {
    // No rank numbers at all (no `distributedInfo`): number them in file order, as
    // TraceLens's rank-to-file mapping does, and say so.
    if !entries.is_empty() && entries.iter().all(|e| e.info.rank.is_none()) {
        entries.sort_by(|a, b| a.info.name.cmp(&b.info.name));
        for (i, e) in entries.iter_mut().enumerate() {
            e.info.rank = Some(i64::try_from(i).unwrap_or(i64::MAX));
        }
        w.add(
            "ranks_from_file_order",
            entries.len() as u64,
            "no trace states its rank (`distributedInfo.rank`): ranks are numbered in file-name \
             order; process-group members are matched to those numbers"
                .to_string(),
        );
    }
    let (numbered, unnumbered): (Vec<RankEntry>, Vec<RankEntry>) =
        entries.into_iter().partition(|e| e.info.rank.is_some());
    if !unnumbered.is_empty() {
        let names: Vec<&str> = unnumbered.iter().map(|e| e.info.name.as_str()).collect();
        w.add(
            "rank_unknown",
            unnumbered.len() as u64,
            format!(
                "{} state no rank (`distributedInfo.rank`) while others do: their collectives \
                 are left out of the cross-rank analysis",
                names.join(", ")
            ),
        );
    }
    // World size: the value most traces state (duplicates included: they are traces of
    // this run too, or a sign that they are not).
    let mut sizes: BTreeMap<i64, Vec<i64>> = BTreeMap::new();
    for e in &numbered {
        if let (Some(ws), Some(r)) = (e.info.world_size, e.info.rank) {
            sizes.entry(ws).or_default().push(r);
        }
    }
    let mut kept: Vec<RankEntry> = Vec::new();
    for e in numbered {
        if let Some(k) = kept.iter().find(|k| k.info.rank == e.info.rank) {
            w.add(
                "duplicate_rank",
                1,
                format!(
                    "rank {} appears twice ({} and {}): {} is used, {} is left out of the \
                     cross-rank analysis",
                    e.info.rank.unwrap_or_default(),
                    k.info.name,
                    e.info.name,
                    k.info.name,
                    e.info.name
                ),
            );
            continue;
        }
        kept.push(e);
    }
    let world = sizes.iter().max_by_key(|(ws, rs)| (rs.len(), **ws)).map(|(ws, _)| *ws);
    if sizes.len() > 1 {
        let parts: Vec<String> = sizes
            .iter()
            .map(|(ws, rs)| format!("world size {ws} on ranks {}", rank_list(rs)))
            .collect();
        w.add(
            "world_size_mismatch",
            sizes.len() as u64,
            format!(
                "the traces disagree on the world size ({}): {} is assumed; are these traces \
                 from one run?",
                parts.join("; "),
                world.unwrap_or_default()
            ),
        );
    }
    if let Some(ws) = world {
        let present: BTreeSet<i64> = kept.iter().filter_map(|e| e.info.rank).collect();
        let (count, missing) = missing_ranks(&present, ws);
        if count > 0 {
            w.add(
                "missing_ranks",
                count,
                format!(
                    "world size {ws} but no trace for {} {missing}: collectives they take \
                     part in are not analysed",
                    ranks_word(usize::try_from(count).unwrap_or(usize::MAX))
                ),
            );
        }
        let outside: Vec<i64> = present.iter().copied().filter(|r| *r < 0 || *r >= ws).collect();
        if !outside.is_empty() {
            w.add(
                "rank_out_of_range",
                outside.len() as u64,
                format!(
                    "{} {} {} outside world size {ws}",
                    ranks_word(outside.len()),
                    rank_list(&outside),
                    if outside.len() == 1 { "is" } else { "are" }
                ),
            );
        }
    }
    Ranks { entries: kept, world }
}

/// A rank list as written: whole, or cut by PyTorch (`"[0, 1, ..., 28, 63]"`) into the
/// ranks before and after the ellipsis.
enum RankList {
    Whole(Vec<i64>),
    Cut(Vec<i64>, Vec<i64>),
}

/// `"[0, 1, 2]"` (or a JSON array's text) as ranks; `None` when it is not a list.
fn parse_ranks(s: &str) -> Option<RankList> {
    let inner = s.trim().strip_prefix('[')?.strip_suffix(']')?;
    let (mut head, mut tail, mut cut) = (Vec::new(), Vec::new(), false);
    for tok in inner.split(',').map(str::trim).filter(|t| !t.is_empty()) {
        if tok == "..." || tok == "…" {
            cut = true;
            continue;
        }
        let v = tok.parse::<i64>().ok()?;
        if cut {
            tail.push(v);
        } else {
            head.push(v);
        }
    }
    Some(if cut { RankList::Cut(head, tail) } else { RankList::Whole(head) })
}

/// Members of a group from its recorded ranks: the list itself, or a truncated list
/// rebuilt when its head is an arithmetic progression that ends on its last rank.
fn members_of(recorded: Option<&str>, size: Option<u32>) -> Option<Vec<i64>> {
    match parse_ranks(recorded?)? {
        RankList::Whole(v) => Some(v),
        RankList::Cut(head, tail) => {
            let n = i64::from(size?);
            let (&a, &b) = (head.first()?, head.get(1)?);
            let d = b - a;
            let ok = d > 0
                && head.windows(2).all(|w| w[1] - w[0] == d)
                && tail.last().is_some_and(|&l| l == a + d * (n - 1));
            ok.then(|| (0..n).map(|i| a + d * i).collect())
        }
    }
}

/// Per group: its records on each rank, matched into instances.
fn match_groups(
    ranks: &Ranks,
    strings: &Interner,
    opts: &ReduceOptions,
    metrics: &mut Metrics,
    a2a: &mut AllToAllAcc,
    w: &mut Warnings,
) -> Vec<GroupRow> {
    // group → rank position → slot indices (start order).
    let mut by_group: BTreeMap<&str, BTreeMap<usize, Vec<usize>>> = BTreeMap::new();
    for (p, e) in ranks.iter().enumerate() {
        for (i, s) in e.slots.iter().enumerate() {
            if !s.kind.is_synchronising() {
                continue;
            }
            let g = strings.get(s.group).unwrap_or(NO_GROUP);
            by_group.entry(g).or_default().entry(p).or_default().push(i);
        }
    }
    match_p2p(ranks, strings, opts, metrics, w);
    let unknown: u64 =
        ranks.iter().flat_map(|r| &r.slots).filter(|s| s.kind == CollectiveKind::Unknown).count()
            as u64;
    if unknown > 0 {
        w.add(
            "collective_kind_unknown",
            unknown,
            format!(
                "{unknown} communication kernels have neither a `Collective name` nor a kernel \
                 name that says their kind (e.g. RCCL `ncclDevKernel_Generic`): not matched"
            ),
        );
    }
    let rank_of = |p: usize| ranks[p].info.rank.unwrap_or(i64::try_from(p).unwrap_or(i64::MAX));
    let pos_of: HashMap<i64, usize> = (0..ranks.len()).map(|p| (rank_of(p), p)).collect();
    let mut rows = Vec::new();
    for (name, per_rank) in by_group {
        let first = per_rank.iter().find_map(|(p, v)| v.first().map(|&i| &ranks[*p].slots[i]));
        let Some(first) = first else { continue };
        let size = mode(
            per_rank
                .iter()
                .flat_map(|(p, v)| v.iter().filter_map(|&i| ranks[*p].slots[i].group_size)),
        );
        let recorded = strings.get(first.pg_ranks);
        let no_group = name == NO_GROUP;
        let members: Option<Vec<i64>> = if no_group {
            // No group recorded: the traces' collectives are taken to span all ranks,
            // as TraceLens's simplified mode does.
            Some((0..ranks.len()).map(rank_of).collect())
        } else {
            members_of(recorded, size)
        };
        if recorded.is_some() && members.is_none() && !no_group {
            w.add(
                "group_members_unknown",
                1,
                format!(
                    "process group {name}: its rank list is truncated in the trace \
                     ({}) and cannot be rebuilt; members are the ranks seen with it",
                    recorded.unwrap_or_default()
                ),
            );
        }
        let members: Vec<i64> =
            members.unwrap_or_else(|| per_rank.keys().map(|&p| rank_of(p)).collect());
        let group_size = size.unwrap_or(members.len() as u32);
        let mut row = GroupRow {
            name: name.to_string(),
            description: strings.get(first.pg_desc).map(str::to_string),
            group_size,
            members: Some(members.clone()),
            ..GroupRow::default()
        };
        if members.len() as u32 != group_size {
            w.add(
                "group_size_mismatch",
                1,
                format!(
                    "process group {name}: `Group size` {group_size} but {} members ({}): not \
                     matched",
                    members.len(),
                    rank_list(&members)
                ),
            );
            rows.push(row);
            continue;
        }
        // Members' positions; a member without a trace makes every instance incomplete.
        let member_pos: Vec<Option<usize>> =
            members.iter().map(|r| pos_of.get(r).copied()).collect();
        let absent: Vec<i64> =
            members.iter().zip(&member_pos).filter(|(_, p)| p.is_none()).map(|(r, _)| *r).collect();
        let label = strings.get(first.pg_desc).map_or_else(|| name.to_string(), str::to_string);
        let ctx = GroupCtx {
            label: &label,
            members: &members,
            scope: Scope::of(&members, opts.gpus_per_node),
        };
        let all_seq =
            per_rank.iter().all(|(p, v)| v.iter().all(|&i| ranks[*p].slots[i].seq.is_some()));
        let lists: Vec<Vec<usize>> = member_pos
            .iter()
            .map(|p| p.and_then(|p| per_rank.get(&p)).cloned().unwrap_or_default())
            .collect();
        if !absent.is_empty() {
            let n = lists.iter().map(Vec::len).max().unwrap_or(0) as u64;
            row.incomplete = n;
            w.add(
                "incomplete_collectives",
                n,
                format!(
                    "process group {label}: no trace for member {} {}: its {} not analysed",
                    ranks_word(absent.len()),
                    rank_list(&absent),
                    if n == 1 {
                        "1 collective is".to_string()
                    } else {
                        format!("{n} collectives are")
                    }
                ),
            );
            row.matched_by = if all_seq { "seq" } else { "order" }.to_string();
            rows.push(row);
            continue;
        }
        let member_pos: Vec<usize> = member_pos.into_iter().flatten().collect();
        let mut sink = Sink { ranks, strings, ctx: &ctx, metrics, a2a, row: &mut row, w };
        if all_seq {
            sink.row.matched_by = "seq".to_string();
            match_by_seq(&member_pos, &lists, &mut sink);
        } else {
            sink.row.matched_by = "order".to_string();
            match_by_order(&member_pos, &lists, &mut sink);
        }
        rows.push(row);
    }
    rows
}

/// Point-to-point transfers matched across ranks: the `send` of rank A to B and the
/// `recv` of B from A (`Dst Rank` / `Src Rank`, global ranks as PyTorch records them),
/// paired in start order per (A, B); a pair is one transfer when the two kernels
/// overlap in time (a send completes only once its receive is posted, and the receive
/// once the data arrived), which skips the kernels one trace holds outside the other's
/// profiling window. Each transfer is an instance of two members in [`Metrics`]:
/// transfer time, bandwidth (NCCL-tests `sendrecv`: bus = algorithm bandwidth), skew and
/// who waited for whom.
#[allow(clippy::many_single_char_names)]
fn match_p2p(
    ranks: &Ranks,
    strings: &Interner,
    opts: &ReduceOptions,
    metrics: &mut Metrics,
    w: &mut Warnings,
) {
    type Sides = (Vec<(usize, usize)>, Vec<(usize, usize)>);
    let rank_of = |p: usize| ranks[p].info.rank.unwrap_or(i64::try_from(p).unwrap_or(i64::MAX));
    let mut pairs: BTreeMap<(i64, i64), Sides> = BTreeMap::new();
    let mut no_peer = 0u64;
    for (p, e) in ranks.iter().enumerate() {
        for (i, s) in e.slots.iter().enumerate() {
            if s.kind != CollectiveKind::SendRecv {
                continue;
            }
            match (s.sends, s.peer) {
                (Some(true), Some(peer)) => {
                    pairs.entry((rank_of(p), peer)).or_default().0.push((p, i));
                }
                (Some(false), Some(peer)) => {
                    pairs.entry((peer, rank_of(p))).or_default().1.push((p, i));
                }
                _ => no_peer += 1,
            }
        }
    }
    let slot = |(p, i): (usize, usize)| &ranks[p].slots[i];
    let part = |(p, i): (usize, usize)| {
        let s = &ranks[p].slots[i];
        Part {
            pos: p,
            start_ns: s.start_ns,
            end_ns: s.end_ns(),
            dur_ns: s.dur_ns,
            compute_before_ns: s.compute_before_ns,
            compute_before: s.compute_before,
        }
    };
    let mut unmatched = 0u64;
    for ((src, dst), (mut sends, mut recvs)) in pairs {
        sends.sort_by_key(|&x| slot(x).start_ns);
        recvs.sort_by_key(|&x| slot(x).start_ns);
        let members = [src, dst];
        let (mut i, mut j) = (0, 0);
        while i < sends.len() && j < recvs.len() {
            let (a, b) = (slot(sends[i]), slot(recvs[j]));
            if a.end_ns() < b.start_ns {
                i += 1;
                unmatched += 1;
            } else if b.end_ns() < a.start_ns {
                j += 1;
                unmatched += 1;
            } else {
                let label = strings
                    .get(a.pg_desc)
                    .or_else(|| strings.get(a.group))
                    .unwrap_or(NO_GROUP)
                    .to_string();
                metrics.add(&InstanceView {
                    label: &label,
                    members: &members,
                    scope: Scope::of(&members, opts.gpus_per_node),
                    parts: vec![part(sends[i]), part(recvs[j])],
                    slot: a,
                });
                i += 1;
                j += 1;
            }
        }
        unmatched += (sends.len() - i + recvs.len() - j) as u64;
    }
    if no_peer > 0 {
        w.add(
            "point_to_point_without_peer",
            no_peer,
            format!(
                "{no_peer} point-to-point kernels (send/recv) record no peer (`Dst Rank` / \
                 `Src Rank`, written by PyTorch with its collective arguments): not matched \
                 across ranks"
            ),
        );
    }
    if unmatched > 0 {
        w.add(
            "point_to_point_unmatched",
            unmatched,
            format!(
                "{unmatched} sends or receives have no overlapping counterpart on their peer \
                 (its trace is missing, or the transfer is outside its profiling window): not \
                 matched"
            ),
        );
    }
}

/// The most common value (ties: the largest).
fn mode<T: Ord + Copy>(it: impl Iterator<Item = T>) -> Option<T> {
    let mut counts: BTreeMap<T, usize> = BTreeMap::new();
    for v in it {
        *counts.entry(v).or_default() += 1;
    }
    counts.into_iter().max_by_key(|(v, c)| (*c, *v)).map(|(v, _)| v)
}

struct GroupCtx<'a> {
    label: &'a str,
    members: &'a [i64],
    scope: Scope,
}

/// Where matched instances go.
struct Sink<'a> {
    ranks: &'a Ranks,
    strings: &'a Interner,
    ctx: &'a GroupCtx<'a>,
    metrics: &'a mut Metrics,
    a2a: &'a mut AllToAllAcc,
    row: &'a mut GroupRow,
    w: &'a mut Warnings,
}

impl Sink<'_> {
    /// One instance: `parts[k]` is member `k`'s (position, slot, end override).
    fn instance(&mut self, parts: &[(usize, usize, Option<i64>)]) {
        let slots: Vec<&Slot> = parts.iter().map(|&(p, i, _)| &self.ranks[p].slots[i]).collect();
        let Some(first) = slots.first() else { return };
        let even = first.kind != CollectiveKind::AllToAllV;
        let disagree = slots.iter().find(|s| {
            s.kind != first.kind
                || s.dtype != first.dtype
                || (even && (s.in_nelems != first.in_nelems || s.out_nelems != first.out_nelems))
        });
        if let Some(bad) = disagree {
            self.row.inconsistent += 1;
            let who = |s: &Slot| {
                format!(
                    "{} {} elements of {}",
                    s.kind.as_str(),
                    s.in_nelems.map_or_else(|| "?".to_string(), |v| v.to_string()),
                    self.strings.get(s.dtype).unwrap_or("?")
                )
            };
            let k = slots.iter().position(|s| std::ptr::eq(*s, *bad)).unwrap_or(0);
            self.w.add(
                "inconsistent_collectives",
                1,
                format!(
                    "process group {}: rank {} has {} where rank {} has {}: instance skipped",
                    self.ctx.label,
                    self.ctx.members.get(k).copied().unwrap_or_default(),
                    who(bad),
                    self.ctx.members.first().copied().unwrap_or_default(),
                    who(first)
                ),
            );
            return;
        }
        self.row.matched += 1;
        let view = InstanceView {
            label: self.ctx.label,
            members: self.ctx.members,
            scope: self.ctx.scope,
            parts: parts
                .iter()
                .zip(&slots)
                .map(|(&(p, _, end), s)| Part {
                    pos: p,
                    start_ns: s.start_ns,
                    end_ns: end.unwrap_or_else(|| s.end_ns()),
                    dur_ns: end.map_or(s.dur_ns, |e| e - s.start_ns),
                    compute_before_ns: s.compute_before_ns,
                    compute_before: s.compute_before,
                })
                .collect(),
            slot: first,
        };
        if matches!(first.kind, CollectiveKind::AllToAll | CollectiveKind::AllToAllV) {
            let splits: Vec<(Sym, Option<u64>)> =
                slots.iter().map(|s| (s.in_split, s.in_nelems)).collect();
            self.a2a.add(&view, &splits, self.strings);
        }
        self.metrics.add(&view);
    }
}

fn match_by_seq(member_pos: &[usize], lists: &[Vec<usize>], sink: &mut Sink<'_>) {
    // seq → per member: (slot of the earliest kernel, latest end).
    let members = member_pos.len();
    let mut by_seq: BTreeMap<i64, Vec<Option<(usize, i64)>>> = BTreeMap::new();
    for (k, list) in lists.iter().enumerate() {
        let pos = member_pos[k];
        for &idx in list {
            let slot = &sink.ranks[pos].slots[idx];
            let Some(seq) = slot.seq else { continue };
            let entry = by_seq.entry(seq).or_insert_with(|| vec![None; members]);
            entry[k] = Some(match entry[k] {
                // Lists are in start order: the first kernel starts earliest.
                Some((first, end)) => (first, end.max(slot.end_ns())),
                None => (idx, slot.end_ns()),
            });
        }
    }
    let mut incomplete_on: BTreeMap<i64, u64> = BTreeMap::new();
    for (_, per) in by_seq {
        if per.iter().any(Option::is_none) {
            sink.row.incomplete += 1;
            for (k, x) in per.iter().enumerate() {
                if x.is_none() {
                    *incomplete_on.entry(sink.ctx.members[k]).or_default() += 1;
                }
            }
            continue;
        }
        let parts: Vec<(usize, usize, Option<i64>)> = per
            .iter()
            .enumerate()
            .filter_map(|(k, x)| {
                let (i, end) = (*x)?;
                let s = &sink.ranks[member_pos[k]].slots[i];
                Some((member_pos[k], i, (end != s.end_ns()).then_some(end)))
            })
            .collect();
        sink.instance(&parts);
    }
    if !incomplete_on.is_empty() {
        let ranks: Vec<i64> = incomplete_on.keys().copied().collect();
        let total = sink.row.incomplete;
        sink.w.add(
            "unmatched_collectives",
            total,
            format!(
                "process group {}: {} missing on {} {} (outside their profiling window): \
                 not analysed",
                sink.ctx.label,
                if total == 1 {
                    "1 collective is".to_string()
                } else {
                    format!("{total} collectives are")
                },
                ranks_word(ranks.len()),
                rank_list(&ranks)
            ),
        );
    }
}

/// `rank` or `ranks`, for a list of `n` ranks.
fn ranks_word(n: usize) -> &'static str {
    if n == 1 {
        "rank"
    } else {
        "ranks"
    }
}

fn match_by_order(member_pos: &[usize], lists: &[Vec<usize>], sink: &mut Sink<'_>) {
    let ranks = sink.ranks;
    let slot = |k: usize, j: usize| &ranks[member_pos[k]].slots[lists[k][j]];
    // Anchor: the first record of the member whose first record ends latest. Ends, not
    // starts: a synchronised collective ends at about the same time on every member,
    // however late each arrived, so the nearest end is the same instance even when the
    // skew is a large part of the time between collectives.
    let Some(anchor) = (0..lists.len())
        .filter(|&k| !lists[k].is_empty())
        .max_by_key(|&k| (slot(k, 0).end_ns(), std::cmp::Reverse(k)))
    else {
        return;
    };
    if lists.iter().any(Vec::is_empty) {
        let n = lists.iter().map(Vec::len).max().unwrap_or(0) as u64;
        sink.row.incomplete += n;
        let empty: Vec<i64> = (0..lists.len())
            .filter(|&k| lists[k].is_empty())
            .map(|k| sink.ctx.members[k])
            .collect();
        sink.w.add(
            "unmatched_collectives",
            n,
            format!(
                "process group {}: {} {} recorded none of its collectives: not analysed",
                sink.ctx.label,
                ranks_word(empty.len()),
                rank_list(&empty)
            ),
        );
        return;
    }
    let a = slot(anchor, 0);
    let same =
        |s: &Slot| s.kind == a.kind && s.in_nelems == a.in_nelems && s.out_nelems == a.out_nelems;
    let offsets: Vec<usize> = (0..lists.len())
        .map(|k| {
            (0..lists[k].len())
                .filter(|&j| same(slot(k, j)))
                .min_by_key(|&j| (slot(k, j).end_ns() - a.end_ns()).unsigned_abs())
                .unwrap_or(0)
        })
        .collect();
    let common = (0..lists.len()).map(|k| lists[k].len() - offsets[k]).min().unwrap_or(0);
    let mut done = 0;
    for i in 0..common {
        let parts: Vec<(usize, usize, Option<i64>)> =
            (0..lists.len()).map(|k| (member_pos[k], lists[k][offsets[k] + i], None)).collect();
        let before = sink.row.inconsistent;
        sink.instance(&parts);
        if sink.row.inconsistent > before {
            // The lists no longer line up: stop rather than pair unrelated collectives.
            break;
        }
        done = i + 1;
    }
    // An inconsistency ends matching at instance `done`, already counted as such.
    let stopped = usize::from(done < common);
    let left: Vec<(i64, u64)> = (0..lists.len())
        .map(|k| (sink.ctx.members[k], lists[k].len().saturating_sub(done + stopped) as u64))
        .filter(|(_, n)| *n > 0)
        .collect();
    let unmatched: u64 = left.iter().map(|(_, n)| n).sum();
    if unmatched > 0 {
        sink.row.incomplete += left.iter().map(|(_, n)| *n).max().unwrap_or(0);
        let who: Vec<i64> = left.iter().map(|(r, _)| *r).collect();
        sink.w.add(
            "unmatched_collectives",
            unmatched,
            format!(
                "process group {}: {} on {} {} could not be \
                 paired by start order (no `Seq` recorded; outside other ranks' profiling \
                 windows, or the ranks diverge): not analysed",
                sink.ctx.label,
                crate::diagnose::count(unmatched, "collective kernel", "collective kernels"),
                ranks_word(who.len()),
                rank_list(&who)
            ),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rank_lists_and_truncated_groups() {
        assert_eq!(rank_list(&[8, 0, 1, 2, 5, 7]), "0-2, 5, 7-8");
        // Ranks 3, 4, 6 and 9-11 of a world of 12 are missing: 6 ranks, as rank_list
        // would write them; a world of 2^62 with two ranks present counts without
        // enumerating (the fuzzer's hang).
        let present: BTreeSet<i64> = [8, 0, 1, 2, 5, 7].into_iter().collect();
        assert_eq!(missing_ranks(&present, 12), (6, "3-4, 6, 9-11".to_string()));
        let two: BTreeSet<i64> = [0, 1].into_iter().collect();
        assert_eq!(
            missing_ranks(&two, 1 << 62),
            ((1u64 << 62) - 2, "2-4611686018427387903".to_string())
        );
        assert_eq!(members_of(Some("[0, 1, 2, 3]"), Some(4)), Some(vec![0, 1, 2, 3]));
        assert_eq!(members_of(Some("[0,2]"), None), Some(vec![0, 2]));
        // PyTorch keeps the first 29 and the last: stride 2 from 1 to 127 is 64 ranks.
        let mut s: Vec<String> = (0..29).map(|i| (1 + 2 * i).to_string()).collect();
        s.push("...".into());
        s.push("127".into());
        let text = format!("[{}]", s.join(", "));
        let m = members_of(Some(&text), Some(64)).unwrap_or_default();
        assert_eq!((m.len(), m[0], m[63]), (64, 1, 127));
        // Not a progression, or the wrong size: unknown.
        assert_eq!(members_of(Some("[0, 1, 5, ..., 63]"), Some(64)), None);
        assert_eq!(members_of(Some(&text), Some(63)), None);
        assert_eq!(members_of(Some("not a list"), Some(2)), None);
        assert_eq!(mode([3, 3, 4, 4, 2].into_iter()), Some(4));
    }

    /// 4 ranks over nodes of 3 GPUs: node 0 holds ranks 0-2, node 1 rank 3 alone (4 mod
    /// 3 = 1). 8 over 3: nodes 0 and 1 full, node 2 holds 6-7 (8 mod 3 = 2). Whole nodes
    /// (8 over 4, 4 over 4) and one partly used node (4 over 8, 1 over 2) say nothing.
    #[test]
    fn an_uneven_last_node_is_noted() {
        assert_eq!(
            uneven_last_node(4, 3).as_deref(),
            Some(
                "4 ranks over nodes of 3 GPUs: the last node has 1 rank (rank 3, node 1; rank r \
                 is on node r / 3)"
            )
        );
        assert_eq!(
            uneven_last_node(8, 3).as_deref(),
            Some(
                "8 ranks over nodes of 3 GPUs: the last node has 2 ranks (ranks 6-7, node 2; \
                 rank r is on node r / 3)"
            )
        );
        for (ranks, g) in [(8, 4), (4, 4), (4, 8), (1, 2), (4, 1), (0, 3)] {
            assert_eq!(uneven_last_node(ranks, g), None, "{ranks} over {g}");
        }
    }
}
