//! Ops summary (per op name and per category), kernel summary and short kernels, as
//! TraceLens computes them (`TraceLens/TreePerf/tree_perf.py`:
//! `get_kernel_launchers`, `get_df_kernel_launchers_summary`,
//! `get_df_kernel_launchers_summary_by_category`; `Reporting/generate_perf_report_pytorch.py`:
//! `kernel_summary`, `get_dfs_short_kernels`).
//!
//! Definitions:
//! - A *launcher* is the innermost CPU op around the runtime call that launched a GPU
//!   event (kernel, memcpy or memset), skipping pass-through ops named `execute`; a GPU
//!   event with a runtime call but no enclosing op belongs to no op: its row is
//!   `(no op)` (TraceLens names it after the runtime call, `cudaLaunchKernel`, which is
//!   not an op). Unlinked GPU events have no launcher. Communication kernels (NCCL/RCCL,
//!   custom and symmetric-memory all-reduce) count at their op, category `Comm`
//!   (TraceLens leaves them out, `include_nccl=False`). A CUDA/HIP graph replay's
//!   kernels belong to the ops that launched them during the graph's capture, when the
//!   capture is in the trace ([`super::gaps::graphs::capture_map`]); the op's `count`
//!   is its calls (the capture), its times include every replay.
//! - An op instance's *direct* kernel time is the union of the intervals of the GPU
//!   events it launched; its *subtree* time the union over all GPU events launched
//!   inside it and its descendants (NCCL included). The ops summary groups instances by
//!   op name: `count` is the number of instances, times are sums over instances, `%` is
//!   of the sum of all direct times.
//! - The kernel summary groups `kernel` events (not memcpy/memset; unlinked ones
//!   included) by (category, innermost CPU op of the launch, kernel name, stream).
//! - Short kernels are `kernel` events shorter than the threshold (10 µs by default);
//!   the histogram has `bins` equal bins between the shortest and longest of them
//!   (numpy's `histogram`), the last bin closed.
//!
//! Percent-of-total figures use the GPU timeline's window (`timeline.total`).

use super::model::{Dims, GpuEvent, GpuKind, OpArgs, TraceModel};
use super::timeline::union_ns;
use foldhash::HashMap;
use serde::Serialize;
use std::fmt::Write as _;
use std::sync::Arc;

/// One row of the ops summary: all instances of one op name.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OpSummaryRow {
    pub name: String,
    /// The op's category (the categories of its instances, joined by `/` if several).
    pub category: String,
    /// Number of launcher instances.
    pub count: u64,
    /// GPU events these instances launched directly.
    pub kernel_count: u64,
    /// Sum over instances of the union of their directly launched GPU events.
    pub direct_kernel_time_ms: f64,
    /// Sum over instances of the union of all GPU events in their subtree.
    pub subtree_kernel_time_ms: f64,
    /// Share of the sum of all direct times.
    pub percent: f64,
    pub cumulative_percent: f64,
}

/// One row of the by-category summary.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CategoryRow {
    pub category: String,
    /// Number of launcher instances.
    pub count: u64,
    pub direct_kernel_time_ms: f64,
    pub percent: f64,
    pub cumulative_percent: f64,
}

/// The ops summary: per op name and per category, both sorted by direct time.
#[derive(Debug, Clone, PartialEq, Serialize, Default)]
pub struct OpsSummary {
    /// Sum of all launchers' direct kernel time.
    pub total_direct_kernel_time_ms: f64,
    pub ops: Vec<OpSummaryRow>,
    pub by_category: Vec<CategoryRow>,
}

/// A launch configuration and how many of a kernel row's launches used it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LaunchConfig {
    pub grid: Option<[u32; 3]>,
    pub block: Option<[u32; 3]>,
    pub shared_memory_bytes: Option<u64>,
    pub registers_per_thread: Option<u32>,
    pub count: u64,
}

/// One row of the kernel summary.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct KernelRow {
    pub name: String,
    /// Innermost CPU op around the launch; the runtime call's name when there is none;
    /// `None` for unlinked kernels.
    pub parent_op: Option<String>,
    /// Category of `parent_op` (`graph` / `runtime` for launches without an op).
    pub category: String,
    pub stream: i64,
    pub count: u64,
    pub total_us: f64,
    pub mean_us: f64,
    pub median_us: f64,
    /// Sample standard deviation (n - 1); 0 for one launch.
    pub std_us: f64,
    pub min_us: f64,
    pub max_us: f64,
    /// Share of the summed duration of all kernels.
    pub percent_of_kernel_time: f64,
    /// Share of the timeline window.
    pub percent_of_total_time: f64,
    /// Distinct launch configurations, most used first.
    pub launch_configs: Vec<LaunchConfig>,
}

/// One histogram bin of short-kernel durations.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HistogramBin {
    pub bin_start_us: f64,
    pub bin_end_us: f64,
    pub count: u64,
}

/// Short kernels grouped by (parent op, its input shapes, kernel name).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ShortKernelRow {
    pub name: String,
    pub parent_op: Option<String>,
    /// The parent op's `Input Dims`, written as TraceLens writes them (Python tuples).
    pub input_dims: Option<String>,
    pub input_strides: Option<String>,
    pub concrete_inputs: Option<String>,
    pub count: u64,
    pub total_us: f64,
    pub mean_us: f64,
    /// Share of the timeline window.
    pub percent_of_total_time: f64,
}

/// Kernels shorter than the threshold: launch-overhead territory (a launch costs
/// microseconds on every GPU API, so kernels of a few µs are dominated by it).
#[derive(Debug, Clone, PartialEq, Serialize, Default)]
pub struct ShortKernels {
    pub threshold_us: f64,
    /// Number of `kernel` events in the trace.
    pub kernel_count: u64,
    /// Summed duration of all `kernel` events.
    pub kernel_time_us: f64,
    pub short_count: u64,
    pub short_time_us: f64,
    /// `short_count / kernel_count`.
    pub percent_of_kernels: f64,
    /// `short_time_us / kernel_time_us`.
    pub percent_of_kernel_time: f64,
    /// `short_time_us` over the timeline window.
    pub percent_of_total_time: f64,
    pub histogram: Vec<HistogramBin>,
    pub rows: Vec<ShortKernelRow>,
}

/// The ops-summary name of GPU work launched outside every CPU op (a runtime call is
/// not an op).
pub const NO_OP: &str = "(no op)";

/// Who launched a GPU event, for the ops summary.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum Launcher {
    Op(u32),
    /// A runtime call with no enclosing op, keyed by its correlation id.
    Runtime(i64),
    /// A runtime call with no op and no correlation id: keyed by its GPU event's index.
    Event(usize),
}

/// Per-name accumulator of the ops summary.
struct OpAcc {
    categories: Vec<&'static str>,
    count: u64,
    kernels: u64,
    direct_ns: i64,
    subtree_ns: i64,
}

/// The launching op of `ev` (TraceLens's `get_kernel_launchers`): its innermost CPU
/// op, skipping pass-through `execute` ops; `None` when the launch has no op. Read from
/// compact tables of each op's parent and whether it is an `execute` (the walks up from
/// every GPU event would otherwise miss the cache at each op's large record).
fn launcher_op(parents: &[Option<u32>], pass_through: &[bool], ev: &GpuEvent) -> Option<u32> {
    let mut cur = ev.op?;
    loop {
        if !*pass_through.get(cur as usize)? {
            return Some(cur);
        }
        cur = parents[cur as usize]?;
    }
}

/// Where a shared text's bytes are: the key of the caches that find a name by its
/// address before its text.
fn text_at(t: &str) -> (usize, usize) {
    (t.as_ptr() as usize, t.len())
}

/// Ancestors of op `i`, itself first, by a table of each op's parent.
fn ancestors_in(parents: &[Option<u32>], i: u32) -> impl Iterator<Item = u32> + '_ {
    let mut next = Some(i);
    let mut guard = parents.len() + 1;
    std::iter::from_fn(move || {
        let cur = next?;
        guard = guard.checked_sub(1)?;
        next = parents.get(cur as usize).copied().flatten();
        Some(cur)
    })
}

fn interval(ev: &GpuEvent) -> (i64, i64) {
    (ev.ts_ns, ev.ts_ns + ev.dur_ns.max(0))
}

fn has_launch(ev: &GpuEvent) -> bool {
    ev.launcher.is_some() || ev.op.is_some()
}

/// The ops summary. `category` names the category of the op at an index of
/// `model.ops` (e.g. [`super::ops::categorize_in`]).
pub fn ops_summary(model: &TraceModel, category: &dyn Fn(u32) -> &'static str) -> OpsSummary {
    // 1. Direct GPU events per launcher instance: (launcher, event) sorted by launcher,
    //    each launcher's events in trace order (one vector, not one per launcher).
    let mut direct: Vec<(Launcher, usize)> = Vec::with_capacity(model.gpu.len());
    // A graph-replayed kernel whose capture is in the trace belongs to the op that
    // launched its position during the capture.
    let captured = super::gaps::graphs::capture_map(model);
    // Each op's parent and whether it is a pass-through `execute`, in compact tables.
    let (parents, pass_through): (Vec<Option<u32>>, Vec<bool>) =
        model.ops.iter().map(|o| (o.parent, &*o.name == "execute")).unzip();
    for (i, ev) in model.gpu.iter().enumerate() {
        // Communication kernels count too (TraceLens leaves them out by default): an
        // all-reduce is time its op takes.
        if !has_launch(ev) {
            continue;
        }
        let l = match captured
            .get(&(i as u32))
            .copied()
            .or_else(|| launcher_op(&parents, &pass_through, ev))
        {
            Some(op) => Launcher::Op(op),
            None => ev.correlation.map_or(Launcher::Event(i), Launcher::Runtime),
        };
        direct.push((l, i));
    }
    // Each pair is distinct and a launcher's events were pushed in trace order: sorted
    // by the pair, the order a stable sort by launcher gives, without its buffer.
    direct.sort_unstable();
    let groups = || direct.chunk_by(|a, b| a.0 == b.0).map(|g| (g[0].0, g));
    // 2. Subtree GPU events of launcher ops: every linked GPU event, NCCL included,
    //    counted at each launcher among its op's ancestors.
    let mut is_launcher = vec![false; model.ops.len()];
    for (l, _) in groups() {
        if let Launcher::Op(op) = l {
            if let Some(x) = is_launcher.get_mut(op as usize) {
                *x = true;
            }
        }
    }
    let mut subtree: Vec<(u32, usize)> = Vec::new();
    for (i, ev) in model.gpu.iter().enumerate() {
        let Some(op) = ev.op else { continue };
        for a in ancestors_in(&parents, op) {
            if is_launcher.get(a as usize).copied().unwrap_or(false) {
                subtree.push((a, i));
            }
        }
    }
    // As `direct`: sorted by the pair, the order of a stable sort by launcher.
    subtree.sort_unstable();
    let subtree_of = |op: u32| {
        let from = subtree.partition_point(|&(a, _)| a < op);
        let to = subtree.partition_point(|&(a, _)| a <= op);
        subtree.get(from..to).filter(|s| !s.is_empty())
    };
    // 3. Aggregate per name.
    // Hash maps: both lists are sorted below, names breaking ties. A name is found by
    // its address first (the ops of one name share one copy, or a few), by its text
    // when the address is new.
    let mut by_name: foldhash::HashMap<&str, usize> = foldhash::HashMap::default();
    let mut by_address: foldhash::HashMap<(usize, usize), usize> = foldhash::HashMap::default();
    let mut accs: Vec<(&str, OpAcc)> = Vec::new();
    let mut by_cat: foldhash::HashMap<&'static str, (u64, i64)> = foldhash::HashMap::default();
    // The parts of one launcher by category: (category, direct time).
    let mut parts: Vec<(&'static str, i64)> = Vec::new();
    for (l, evs) in groups() {
        let direct_ns = union_ns(evs.iter().map(|&(_, i)| interval(&model.gpu[i])));
        let (name, cat, subtree_ns) = match l {
            Launcher::Op(op) => {
                let o = &model.ops[op as usize];
                let sub = subtree_of(op).map_or(direct_ns, |v| {
                    union_ns(v.iter().map(|&(_, i)| interval(&model.gpu[i])))
                });
                (o.name.as_ref(), category(op), sub)
            }
            // A runtime call is not an op: its kernels launched outside every op are
            // `(no op)`, by the category of the kernel.
            Launcher::Runtime(_) | Launcher::Event(_) => {
                let ev = &model.gpu[evs[0].1];
                let cat = match runtime_category(ev.launcher.as_deref()) {
                    "graph" => "graph",
                    _ => super::ops::categorize_kernel(&ev.name).map_or("runtime", |c| c.as_str()),
                };
                (NO_OP, cat, direct_ns)
            }
        };
        let at = *by_address.entry(text_at(name)).or_insert_with(|| {
            *by_name.entry(name).or_insert_with(|| {
                let acc = OpAcc {
                    categories: Vec::new(),
                    count: 0,
                    kernels: 0,
                    direct_ns: 0,
                    subtree_ns: 0,
                };
                accs.push((name, acc));
                accs.len() - 1
            })
        });
        // An XLA command buffer's execution holds kernels of several categories, each
        // its own (`xla::own_category`): its time goes to each category by the union of
        // that category's events; memsets and copies go with the op's category.
        parts.clear();
        match l {
            Launcher::Op(op) if super::xla::is_command_buffer(model, op as usize) => {
                let own = |i: usize| {
                    super::xla::own_category(model, &model.gpu[i])
                        .map_or(cat, super::ops::Category::as_str)
                };
                let mut cats: Vec<&'static str> = evs.iter().map(|&(_, i)| own(i)).collect();
                cats.sort_unstable();
                cats.dedup();
                for c in cats {
                    let of_c = evs.iter().filter(|&&(_, i)| own(i) == c);
                    parts.push((c, union_ns(of_c.map(|&(_, i)| interval(&model.gpu[i])))));
                }
            }
            _ => parts.push((cat, direct_ns)),
        }
        let acc = &mut accs[at].1;
        for &(c, _) in &parts {
            if !acc.categories.contains(&c) {
                acc.categories.push(c);
            }
        }
        acc.count += 1;
        acc.kernels += evs.len() as u64;
        acc.direct_ns += direct_ns;
        acc.subtree_ns += subtree_ns;
        for &(c, ns) in &parts {
            let e = by_cat.entry(c).or_default();
            e.0 += 1;
            e.1 += ns;
        }
    }
    let total_ns: i64 = accs.iter().map(|a| a.1.direct_ns).sum();
    let pct = |ns: i64| if total_ns > 0 { ns as f64 / total_ns as f64 * 100.0 } else { 0.0 };
    let mut ops = accs;
    ops.sort_by(|a, b| b.1.direct_ns.cmp(&a.1.direct_ns).then_with(|| a.0.cmp(b.0)));
    let mut cum = 0.0;
    let ops = ops
        .into_iter()
        .map(|(name, a)| {
            cum += pct(a.direct_ns);
            OpSummaryRow {
                name: name.to_string(),
                category: a.categories.join("/"),
                count: a.count,
                kernel_count: a.kernels,
                direct_kernel_time_ms: a.direct_ns as f64 / 1e6,
                subtree_kernel_time_ms: a.subtree_ns as f64 / 1e6,
                percent: pct(a.direct_ns),
                cumulative_percent: cum,
            }
        })
        .collect();
    let mut cats: Vec<(&str, (u64, i64))> = by_cat.into_iter().collect();
    cats.sort_by(|a, b| b.1 .1.cmp(&a.1 .1).then_with(|| a.0.cmp(b.0)));
    let mut cum = 0.0;
    let by_category = cats
        .into_iter()
        .map(|(category, (count, ns))| {
            cum += pct(ns);
            CategoryRow {
                category: category.to_string(),
                count,
                direct_kernel_time_ms: ns as f64 / 1e6,
                percent: pct(ns),
                cumulative_percent: cum,
            }
        })
        .collect();
    OpsSummary { total_direct_kernel_time_ms: total_ns as f64 / 1e6, ops, by_category }
}

/// TraceLens's category for launches without an op: `graph` for graph launches,
/// `runtime` otherwise.
fn runtime_category(launcher: Option<&str>) -> &'static str {
    let l = launcher.unwrap_or("").as_bytes();
    // Case-insensitive `contains` without lower-casing a copy (called per kernel).
    let has = |pat: &[u8]| l.windows(pat.len()).any(|w| w.eq_ignore_ascii_case(pat));
    if has(b"cudagraph") || has(b"graphlaunch") {
        "graph"
    } else {
        "runtime"
    }
}

fn dur_us(ev: &GpuEvent) -> f64 {
    ev.dur_ns.max(0) as f64 / 1e3
}

/// The kernel summary, sorted by total time. `category` names the category of the op
/// at an index of `model.ops`; `total_window_us` is the timeline's window.
pub fn kernel_summary(
    model: &TraceModel,
    category: &dyn Fn(u32) -> &'static str,
    total_window_us: f64,
) -> Vec<KernelRow> {
    // Keys borrow from the model and from one category per op, computed once per op
    // rather than per kernel, kept with the op's name (a kernel does not read its op's
    // large record again).
    type Key<'a> = (&'a str, Option<&'a str>, &'a str, i64);
    let mut cats: Vec<Option<(&'static str, &str)>> = vec![None; model.ops.len()];
    for ev in model.gpu.iter().filter(|e| e.kind == GpuKind::Kernel) {
        let Some(o) = ev.op else { continue };
        if let Some(c) = cats.get_mut(o as usize) {
            if c.is_none() {
                *c = Some((category(o), model.ops[o as usize].name.as_ref()));
            }
        }
    }
    // The groups in order of first kernel, found by their key's texts; each kernel first
    // by the addresses of those texts. The names are shared (one copy per distinct
    // name), so a kernel is mostly found by hashing seven words instead of hundreds of
    // bytes of name; texts at the same addresses are the same texts, so the group is the
    // one the texts give.
    let mut groups: Vec<(Key<'_>, Vec<usize>)> = Vec::new();
    let mut by_text: foldhash::HashMap<Key<'_>, usize> = foldhash::HashMap::default();
    let mut by_address: foldhash::HashMap<[usize; 7], usize> = foldhash::HashMap::default();
    let address = |(cat, parent, name, stream): Key<'_>| {
        let ((c, cn), (p, pn), (n, nn)) =
            (text_at(cat), parent.map_or((0, 0), text_at), text_at(name));
        [c, cn, p, pn, n, nn, stream as usize]
    };
    let mut all_us = 0.0;
    for (i, ev) in model.gpu.iter().enumerate() {
        if ev.kind != GpuKind::Kernel {
            continue;
        }
        all_us += dur_us(ev);
        let linked = ev.op.and_then(|o| cats.get(o as usize).copied().flatten());
        let (parent, cat) = match linked {
            Some((cat, op)) => (Some(op), cat),
            None => match &ev.launcher {
                Some(l) => (Some(l.as_ref()), runtime_category(Some(l))),
                None => (None, "unlinked"),
            },
        };
        // A kernel of an XLA command buffer is known by its own name, not its thunk's.
        let cat = super::xla::own_category(model, ev).map_or(cat, super::ops::Category::as_str);
        let key = (cat, parent, ev.name.as_ref(), ev.stream);
        let g = *by_address.entry(address(key)).or_insert_with(|| {
            *by_text.entry(key).or_insert_with(|| {
                groups.push((key, Vec::new()));
                groups.len() - 1
            })
        });
        groups[g].1.push(i);
    }
    // In key order, as the rows' sort below keeps equal totals.
    groups.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    let mut rows: Vec<KernelRow> = groups
        .into_iter()
        .map(|((category, parent_op, name, stream), idx)| {
            let (category, parent_op, name) =
                (category.to_string(), parent_op.map(str::to_string), name.to_string());
            let mut d: Vec<f64> = idx.iter().map(|&i| dur_us(&model.gpu[i])).collect();
            let total: f64 = d.iter().sum();
            d.sort_by(f64::total_cmp);
            // Non-empty: every group has a kernel. One call has no spread: 0, as before.
            let s = crate::stats::Stats::of_sorted(&d).unwrap_or(crate::stats::Stats {
                mean: 0.0,
                median: 0.0,
                std: None,
                min: 0.0,
                max: 0.0,
            });
            let (mean, median, std, min, max) =
                (s.mean, s.median, s.std.unwrap_or(0.0), s.min, s.max);
            let mut cfgs: Vec<LaunchConfig> = Vec::new();
            for &i in &idx {
                let ev = &model.gpu[i];
                let same = |c: &&mut LaunchConfig| {
                    c.grid == ev.grid()
                        && c.block == ev.block()
                        && c.shared_memory_bytes == ev.shared_memory_bytes()
                        && c.registers_per_thread == ev.registers_per_thread()
                };
                match cfgs.iter_mut().find(same) {
                    Some(c) => c.count += 1,
                    None => cfgs.push(LaunchConfig {
                        grid: ev.grid(),
                        block: ev.block(),
                        shared_memory_bytes: ev.shared_memory_bytes(),
                        registers_per_thread: ev.registers_per_thread(),
                        count: 1,
                    }),
                }
            }
            cfgs.sort_by_key(|c| std::cmp::Reverse(c.count));
            KernelRow {
                name,
                parent_op,
                category,
                stream,
                count: idx.len() as u64,
                total_us: total,
                mean_us: mean,
                median_us: median,
                std_us: std,
                min_us: min,
                max_us: max,
                percent_of_kernel_time: if all_us > 0.0 { total / all_us * 100.0 } else { 0.0 },
                percent_of_total_time: if total_window_us > 0.0 {
                    total / total_window_us * 100.0
                } else {
                    0.0
                },
                launch_configs: cfgs,
            }
        })
        .collect();
    rows.sort_by(|a, b| b.total_us.total_cmp(&a.total_us).then_with(|| a.name.cmp(&b.name)));
    rows
}

/// Writes dims as Python writes the tuple TraceLens groups by: `((512,), (141, 512), ())`.
pub fn py_dims(dims: &[Dims]) -> String {
    // Python's tuple: `(a,)` for one item, `(a, b)` otherwise; written in place.
    fn tuple<T>(out: &mut String, items: &[T], item: impl Fn(&mut String, &T)) {
        out.push('(');
        for (k, x) in items.iter().enumerate() {
            if k > 0 {
                out.push_str(", ");
            }
            item(out, x);
        }
        if items.len() == 1 {
            out.push(',');
        }
        out.push(')');
    }
    fn ints(out: &mut String, v: &[i64]) {
        tuple(out, v, |o, n| {
            let _ = write!(o, "{n}");
        });
    }
    let mut out = String::new();
    tuple(&mut out, dims, |o, d| match d {
        Dims::Tensor(v) => ints(o, v),
        Dims::List(vs) => tuple(o, vs, |o, v| ints(o, v)),
    });
    out
}

/// Writes concrete inputs as a Python tuple of strings: `('', '1')`.
pub fn py_strings(items: &[String]) -> String {
    let mut out = String::from("(");
    for (k, s) in items.iter().enumerate() {
        if k > 0 {
            out.push_str(", ");
        }
        out.push('\'');
        out.push_str(s);
        out.push('\'');
    }
    if items.len() == 1 {
        out.push(',');
    }
    out.push(')');
    out
}

/// numpy's `histogram(values, bins)`: `bins` equal bins over [min, max] (a unit range
/// around the value when all are equal), the last bin closed.
pub fn histogram(values: &[f64], bins: usize) -> Vec<HistogramBin> {
    if values.is_empty() || bins == 0 {
        return Vec::new();
    }
    let (mut lo, mut hi) =
        values.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), &v| (l.min(v), h.max(v)));
    if lo == hi {
        lo -= 0.5;
        hi += 0.5;
    }
    let edge = |i: usize| lo + (hi - lo) * i as f64 / bins as f64;
    let edges: Vec<f64> = (0..=bins).map(edge).collect();
    let mut counts = vec![0u64; bins];
    for &v in values {
        let mut i = (((v - lo) / (hi - lo)) * bins as f64).floor() as usize;
        i = i.min(bins - 1);
        // Correct rounding at bin edges, as numpy does against the edges array.
        if v < edges[i] && i > 0 {
            i -= 1;
        } else if i + 1 < bins && v >= edges[i + 1] {
            i += 1;
        }
        counts[i] += 1;
    }
    counts
        .into_iter()
        .enumerate()
        .map(|(i, count)| HistogramBin { bin_start_us: edges[i], bin_end_us: edges[i + 1], count })
        .collect()
}

/// The short-kernel study. `total_window_us` is the timeline's window.
pub fn short_kernels(
    model: &TraceModel,
    threshold_us: f64,
    bins: usize,
    total_window_us: f64,
) -> ShortKernels {
    type Key = (Option<String>, Option<String>, Option<String>, Option<String>, String);
    // (op name and argument record, kernel name) → group, by the addresses of the
    // shared texts and record (hashing a few words, not the names' bytes; equal texts
    // at two addresses meet in `index`).
    type Memo = (Option<(usize, usize, *const OpArgs)>, (usize, usize));
    // Groups in first-seen order, found by their written key. The key is written once
    // per distinct (op name, argument record, kernel name): the reader shares one
    // argument record between ops with equal arguments, so this is per distinct shape,
    // not per kernel; records with equal contents still meet in `index`.
    let mut groups: Vec<(Key, (u64, f64))> = Vec::new();
    let mut index: HashMap<Key, usize> = HashMap::default();
    let mut seen: HashMap<Memo, usize> = HashMap::default();
    let (mut kernel_count, mut kernel_time, mut short) = (0u64, 0.0, Vec::new());
    for ev in model.gpu.iter().filter(|e| e.kind == GpuKind::Kernel) {
        let d = dur_us(ev);
        kernel_count += 1;
        kernel_time += d;
        if d >= threshold_us {
            continue;
        }
        short.push(d);
        let op = ev.op.and_then(|o| model.ops.get(o as usize));
        let memo = (
            op.map(|o| {
                let (name, len) = text_at(&o.name);
                (name, len, Arc::as_ptr(&o.args))
            }),
            text_at(&ev.name),
        );
        let g = *seen.entry(memo).or_insert_with(|| {
            let key = (
                op.map(|o| o.name.to_string()),
                op.map(|o| py_dims(&o.args.input_dims)),
                op.map(|o| py_dims(&o.args.input_strides)),
                op.map(|o| py_strings(&o.args.concrete_inputs)),
                ev.name.to_string(),
            );
            *index.entry(key.clone()).or_insert_with(|| {
                groups.push((key, (0, 0.0)));
                groups.len() - 1
            })
        });
        let g = &mut groups[g].1;
        g.0 += 1;
        g.1 += d;
    }
    let of_window = |t: f64| if total_window_us > 0.0 { t / total_window_us * 100.0 } else { 0.0 };
    let mut rows: Vec<ShortKernelRow> = groups
        .into_iter()
        .map(|((parent_op, input_dims, input_strides, concrete_inputs, name), (count, total))| {
            ShortKernelRow {
                name,
                parent_op,
                input_dims,
                input_strides,
                concrete_inputs,
                count,
                total_us: total,
                mean_us: total / count as f64,
                percent_of_total_time: of_window(total),
            }
        })
        .collect();
    rows.sort_by(|a, b| {
        b.total_us
            .total_cmp(&a.total_us)
            .then_with(|| a.parent_op.cmp(&b.parent_op))
            .then_with(|| a.name.cmp(&b.name))
            .then_with(|| a.input_dims.cmp(&b.input_dims))
    });
    let short_time: f64 = short.iter().sum();
    ShortKernels {
        threshold_us,
        kernel_count,
        kernel_time_us: kernel_time,
        short_count: short.len() as u64,
        short_time_us: short_time,
        percent_of_kernels: if kernel_count > 0 {
            short.len() as f64 / kernel_count as f64 * 100.0
        } else {
            0.0
        },
        percent_of_kernel_time: if kernel_time > 0.0 {
            short_time / kernel_time * 100.0
        } else {
            0.0
        },
        percent_of_total_time: of_window(short_time),
        histogram: histogram(&short, bins),
        rows,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::model::CpuOp;

    fn op(name: &str, parent: Option<u32>) -> CpuOp {
        CpuOp { name: name.into(), dur_ns: 1_000_000, parent, ..CpuOp::default() }
    }

    fn k(name: &str, ts_us: i64, dur_us: i64, op: Option<u32>, stream: i64) -> GpuEvent {
        GpuEvent {
            kind: GpuKind::Kernel,
            name: name.into(),
            ts_ns: ts_us * 1000,
            dur_ns: dur_us * 1000,
            stream,
            launch: crate::trace::model::LaunchDims {
                grid: Some([4, 1, 1]),
                block: Some([128, 1, 1]),
                ..Default::default()
            }
            .shared(),
            launcher: Some("cudaLaunchKernel".into()),
            op,
            ..GpuEvent::default()
        }
    }

    fn cat(i: u32) -> &'static str {
        if [1, 2].contains(&i) {
            "GEMM"
        } else {
            "other"
        }
    }

    /// ops: 0 linear (root) → 1 addmm → 2 execute → kernel; 3 add (root) twice-called
    /// as ops 3 and 4; 5 conv (root) with child 6 fill whose kernel runs on another
    /// stream, overlapping conv's own kernel.
    fn model() -> TraceModel {
        let ops = vec![
            op("aten::linear", None),
            op("aten::addmm", Some(0)),
            op("execute", Some(1)),
            op("aten::add", None),
            op("aten::add", None),
            op("aten::conv", None),
            op("aten::fill_", Some(5)),
        ];
        let mut mc = k("Memcpy DtoD", 60, 2, Some(4), 7);
        mc.kind = GpuKind::Memcpy;
        let mut graph = k("graph_kernel", 80, 5, None, 7);
        graph.launcher = Some("cudaGraphLaunch".into());
        graph.correlation = Some(99);
        let mut unlinked = k("orphan", 90, 1, None, 7);
        unlinked.launcher = None;
        TraceModel {
            ops,
            gpu: vec![
                k("gemm", 0, 20, Some(2), 7),
                k("gemm", 20, 10, Some(1), 7),
                k("add_kernel", 40, 4, Some(3), 7),
                k("add_kernel", 50, 6, Some(4), 7),
                mc,
                k("conv_kernel", 100, 30, Some(5), 7),
                k("fill_kernel", 120, 20, Some(6), 9),
                k("ncclKernel_AllReduce", 150, 50, Some(5), 11),
                graph,
                unlinked,
            ],
            ..TraceModel::default()
        }
    }

    #[test]
    fn ops_summary_hand_computed() {
        let s = ops_summary(&model(), &cat);
        let row = |n: &str| s.ops.iter().find(|r| r.name == n).cloned();
        // addmm: its own kernel and the one through `execute`, one instance, 30 µs.
        let addmm = row("aten::addmm").unwrap();
        assert_eq!((addmm.count, addmm.kernel_count), (1, 2));
        assert_eq!(addmm.direct_kernel_time_ms, 0.030);
        assert!(row("execute").is_none() && row("aten::linear").is_none());
        // add: two instances, 4 + 6 µs of kernels and a 2 µs memcpy.
        let add = row("aten::add").unwrap();
        assert_eq!((add.count, add.kernel_count), (2, 3));
        assert_eq!(add.direct_kernel_time_ms, 0.012);
        // conv: direct = its kernel and its NCCL kernel (communication counts at its
        // op) = [100,130) ∪ [150,200) = 80 µs; subtree = conv ∪ fill ∪ nccl = [100,140)
        // ∪ [150,200) = 90 µs.
        let conv = row("aten::conv").unwrap();
        assert_eq!(conv.direct_kernel_time_ms, 0.080);
        assert_eq!(conv.subtree_kernel_time_ms, 0.090);
        assert_eq!(row("aten::fill_").unwrap().direct_kernel_time_ms, 0.020);
        // A graph launch outside every op is not an op: `(no op)`, category graph.
        assert!(row("cudaGraphLaunch").is_none());
        let g = row(NO_OP).unwrap();
        assert_eq!((g.category.as_str(), g.count), ("graph", 1));
        // Total direct = 30 + 12 + 80 + 20 + 5 = 147 µs; order by direct time.
        assert!((s.total_direct_kernel_time_ms - 0.147).abs() < 1e-12);
        assert_eq!(s.ops[0].name, "aten::conv");
        assert_eq!(s.ops[1].name, "aten::addmm");
        assert!((s.ops.last().unwrap().cumulative_percent - 100.0).abs() < 1e-9);
        let gemm = s.by_category.iter().find(|c| c.category == "GEMM").unwrap();
        assert_eq!((gemm.count, gemm.direct_kernel_time_ms), (1, 0.030));
        let other = s.by_category.iter().find(|c| c.category == "other").unwrap();
        // add ×2, conv, fill_ = 4 instances, 12 + 80 + 20 = 112 µs.
        assert_eq!(other.count, 4);
        assert!((other.direct_kernel_time_ms - 0.112).abs() < 1e-12);
        assert!((other.percent - 112.0 / 147.0 * 100.0).abs() < 1e-9);
    }

    #[test]
    fn kernel_summary_hand_computed() {
        let rows = kernel_summary(&model(), &cat, 200.0);
        // Kernels only (no memcpy): 20+10+4+6+30+20+50+5+1 = 146 µs.
        let nccl = &rows[0];
        assert_eq!(nccl.name, "ncclKernel_AllReduce");
        assert!((nccl.percent_of_kernel_time - 50.0 / 146.0 * 100.0).abs() < 1e-9);
        assert_eq!(nccl.percent_of_total_time, 25.0);
        // The two gemm launches have different parent ops (execute, addmm): two rows.
        assert_eq!(rows.iter().filter(|r| r.name == "gemm").count(), 2);
        let add = rows.iter().find(|r| r.name == "add_kernel").unwrap();
        assert_eq!((add.count, add.total_us, add.mean_us, add.median_us), (2, 10.0, 5.0, 5.0));
        assert_eq!((add.min_us, add.max_us), (4.0, 6.0));
        assert!((add.std_us - 2f64.sqrt()).abs() < 1e-12);
        assert_eq!(add.launch_configs.len(), 1);
        assert_eq!(add.launch_configs[0].count, 2);
        let orphan = rows.iter().find(|r| r.name == "orphan").unwrap();
        assert_eq!((orphan.parent_op.as_deref(), orphan.category.as_str()), (None, "unlinked"));
        let g = rows.iter().find(|r| r.name == "graph_kernel").unwrap();
        assert_eq!(g.parent_op.as_deref(), Some("cudaGraphLaunch"));
    }

    #[test]
    fn short_kernels_hand_computed() {
        let s = short_kernels(&model(), 10.0, 4, 200.0);
        // Short: 4, 6 (add), 5 (graph), 1 (orphan) µs; memcpy not a kernel.
        assert_eq!((s.kernel_count, s.short_count), (9, 4));
        assert_eq!(s.short_time_us, 16.0);
        assert_eq!(s.percent_of_total_time, 8.0);
        // Bins over [1, 6]: [1,2.25) [2.25,3.5) [3.5,4.75) [4.75,6].
        let counts: Vec<u64> = s.histogram.iter().map(|b| b.count).collect();
        assert_eq!(counts, vec![1, 0, 1, 2]);
        assert_eq!(s.histogram[3].bin_end_us, 6.0);
        // The two add instances have the same (empty) args: one row.
        assert_eq!(s.rows[0].parent_op.as_deref(), Some("aten::add"));
        assert_eq!((s.rows[0].count, s.rows[0].total_us), (2, 10.0));
    }

    #[test]
    fn numpy_histogram_conventions() {
        // All equal: a unit range around the value.
        let h = histogram(&[2.0, 2.0], 2);
        assert_eq!(h[0].bin_start_us, 1.5);
        assert_eq!(h.iter().map(|b| b.count).collect::<Vec<_>>(), vec![0, 2]);
        // Values on inner edges go to the upper bin.
        let h = histogram(&[0.0, 1.0, 2.0, 3.0, 4.0], 4);
        assert_eq!(h.iter().map(|b| b.count).collect::<Vec<_>>(), vec![1, 1, 1, 2]);
        assert!(histogram(&[], 10).is_empty());
    }

    #[test]
    fn python_tuple_formatting() {
        let d = vec![
            Dims::Tensor(vec![512]),
            Dims::Tensor(vec![141, 512]),
            Dims::Tensor(vec![]),
            Dims::List(vec![vec![2, 3], vec![4]]),
        ];
        assert_eq!(py_dims(&d), "((512,), (141, 512), (), ((2, 3), (4,)))");
        assert_eq!(py_dims(&[Dims::Tensor(vec![1, 141])]), "((1, 141),)");
        assert_eq!(py_strings(&[String::new(), "1".into()]), "('', '1')");
    }
}
