//! Chrome-trace JSON of the analysed GPU activity (`rooftop trace --format perfetto`),
//! for ui.perfetto.dev or chrome://tracing: one process per device, one thread (track)
//! per stream, every kernel, memcpy and memset as a complete (`"ph": "X"`) event whose
//! `args` carry the analysis of the op that launched it.
//!
//! A last process, `critical path`, carries the critical path of the report's window as
//! one track ([`crate::perfetto_cp`]).
//!
//! Format: the Trace Event Format (Google, "Trace Event Format" document): `ts` and
//! `dur` in microseconds (fractions keep the nanoseconds), process and thread names as
//! `"ph": "M"` metadata events.
//!
//! Which analysis a kernel gets: that of the roofline-table row of the innermost
//! modelled op enclosing its launch (walking up from the launching op), matched by the
//! row's own key (op name and model parameters, as `trace::tables` groups calls). The
//! op's model is the one the tables used (the same [`ModelMemo`], with the same model
//! config): an XLA op's from its HLO instruction, a tensor list's with the element size
//! its kernel names. The FLOPs and bytes are the op's per call, shared by all the
//! kernels one call launches; attainment, bound and rates are the row's (over all its
//! calls). Nothing is recomputed: every number is the report's.
//!
//! Written as it is made: each row's members are rendered once, each event's text on
//! the thread pool, a run of events at a time. The text is what serde writes for the
//! document as one value (compact, every object's keys in sorted order, as
//! `serde_json`'s map keeps them); `crates/rooftop-cli/tests/html.rs` holds it to that.

use crate::json::write_str;
use rooftop_core::model::ModelConfig;
use rooftop_core::trace::inference::Context;
use rooftop_core::trace::model::{GpuEvent, GpuKind, TraceModel};
use rooftop_core::trace::ops::{op_table_in, ModelMemo, ParamValue};
use rooftop_core::trace::report::TraceReport;
use rooftop_core::trace::tables::OpRow;
use serde::Serialize;
use serde_json::json;
use std::collections::{BTreeSet, HashMap};
use std::io::{self, Write};
use std::sync::Arc;

/// Deepest op nesting followed when looking for a modelled ancestor.
const MAX_DEPTH: usize = 512;

/// Events rendered per task at most.
const EVENTS_PER_TASK: usize = 1024;

fn params_text(row: &OpRow) -> String {
    row.params
        .0
        .iter()
        .filter(|(k, v)| !k.starts_with("stride") && *v != ParamValue::Null)
        .map(|(k, v)| format!("{k}={}", v.tracelens_repr().replace("c10::", "").replace('\'', "")))
        .collect::<Vec<_>>()
        .join(" ")
}

/// `v` as compact JSON.
fn json_text<T: Serialize + ?Sized>(v: &T) -> Vec<u8> {
    // Our own values (strings, numbers, options and arrays of them) cannot fail to
    // serialise; a non-finite number is written as `null`, as serde writes it.
    serde_json::to_vec(v).unwrap_or_else(|_| b"null".to_vec())
}

/// Members of an object: keys with their values' JSON text.
type Members = Vec<(&'static str, Vec<u8>)>;

/// A row's members of its kernels' `args`, sorted by key.
fn row_members(table: &str, row: &OpRow) -> Members {
    let mut m: Members = vec![
        ("op", json_text(&row.name)),
        ("table", json_text(table)),
        ("shape", json_text(&params_text(row))),
        ("op_flops_per_call", json_text(&row.flops)),
        ("op_bytes_per_call", json_text(&row.bytes)),
        ("flops_per_byte", json_text(&row.flops_per_byte)),
        ("roofline_attainment_pct", json_text(&row.roofline_attainment_pct)),
        ("bound", json_text(&row.bound.map(rooftop_core::roofline::Bound::as_str))),
        ("achieved_tflops_mean", json_text(&row.achieved_tflops.as_ref().map(|s| s.mean))),
        ("achieved_tbs_mean", json_text(&row.achieved_tbs.as_ref().map(|s| s.mean))),
        ("floor_time_us", json_text(&row.floor_time_us)),
        ("op_calls", json_text(&row.count)),
        ("op_time_us_mean", json_text(&row.kernel_time_us.mean)),
    ];
    if let Some(f) = &row.top_finding {
        m.push(("top_finding", json_text(&format!("{} ({})", f.title, f.severity.as_str()))));
    }
    m.sort_unstable_by_key(|&(k, _)| k);
    m
}

/// The members of a kernel whose launching op has no row, `why` (sorted by key).
fn no_row_members(why: &str) -> Members {
    vec![("model", json_text(&format!("none: {why} (times only)"))), ("op", b"null".to_vec())]
}

/// Why a kernel launched outside any CPU op has no row.
const NO_OP: &str = "no CPU op around its launch in the trace";

/// An op whose row is not looked up yet.
const UNSEEN: u32 = u32::MAX;
/// An op without a row (itself or any ancestor).
const NO_ROW: u32 = u32::MAX - 1;

/// For each CPU op, the row of its innermost modelled ancestor (itself included),
/// memoised; the rows' members rendered once, and those of each reason a kernel has no
/// row.
struct Rows<'a> {
    model: &'a TraceModel,
    memo: ModelMemo<'a>,
    /// Row index by the tables' key (op name and model parameters).
    by_key: HashMap<String, u32>,
    /// Each row's members, then those of each reason for none.
    members: Vec<Members>,
    /// Per op: its row, [`NO_ROW`] or [`UNSEEN`].
    of_op: Vec<u32>,
    /// Per op without a row: the members saying why ([`UNSEEN`] until asked).
    why_of: Vec<u32>,
    /// The members' index of each reason.
    by_why: HashMap<String, u32>,
    /// The members of [`NO_OP`] ([`UNSEEN`] until asked).
    no_op: u32,
}

impl<'a> Rows<'a> {
    fn new(model: &'a TraceModel, report: &'a TraceReport, ctx: &'a Context) -> Rows<'a> {
        let mut by_key = HashMap::new();
        let mut members = Vec::new();
        for (table, rows) in &report.categories {
            for row in rows.iter().filter(|r| r.unmodelled.is_none()) {
                let at = u32::try_from(members.len()).unwrap_or(NO_ROW);
                members.push(row_members(table, row));
                by_key.insert(format!("{}|{}", row.name, row.params.group_key()), at);
            }
        }
        Rows {
            model,
            memo: ModelMemo::new(model, ctx),
            by_key,
            members,
            of_op: vec![UNSEEN; model.ops.len()],
            why_of: vec![UNSEEN; model.ops.len()],
            by_why: HashMap::new(),
            no_op: UNSEEN,
        }
    }

    /// The members saying `why` a kernel has no row.
    fn why_members(&mut self, why: String) -> u32 {
        if let Some(&at) = self.by_why.get(&why) {
            return at;
        }
        let at = u32::try_from(self.members.len()).unwrap_or(NO_ROW);
        self.members.push(no_row_members(&why));
        self.by_why.insert(why, at);
        at
    }

    /// Why op `i` (which has no row, nor any ancestor) has none, in the tables' words:
    /// why the model of the innermost op around it that has one (itself included) does
    /// not fit its arguments, else that its own name has no work model.
    fn why_none(&mut self, i: usize) -> u32 {
        if let Some(&at) = self.why_of.get(i).filter(|&&at| at != UNSEEN) {
            return at;
        }
        let modelled = std::iter::successors(Some(i), |&c| {
            let parent = self.model.ops.get(c).and_then(|o| o.parent).map(|p| p as usize);
            parent.filter(|&p| p < c)
        })
        .take(MAX_DEPTH)
        .find(|&c| op_table_in(self.model, c).is_some());
        let why = match (modelled, self.model.ops.get(i)) {
            (Some(c), _) => match &*self.memo.get(c) {
                Err(e) => e.to_string(),
                Ok(_) => "no roofline row for the launching op".to_string(),
            },
            (None, Some(o)) => format!("no work model for `{}`", o.name),
            (None, None) => NO_OP.to_string(),
        };
        let at = self.why_members(why);
        if let Some(w) = self.why_of.get_mut(i) {
            *w = at;
        }
        at
    }

    /// The row of op `i` itself, when it is modelled and has one.
    fn own(&mut self, i: usize) -> Option<u32> {
        op_table_in(self.model, i)?;
        let name = &self.model.ops.get(i)?.name;
        let model = self.memo.get(i);
        let m = model.as_ref().as_ref().ok()?;
        self.by_key.get(&format!("{name}|{}", m.params.group_key())).copied()
    }

    /// The row of op `start` or of its innermost ancestor that has one.
    fn of(&mut self, start: usize) -> u32 {
        let mut path = Vec::new();
        let mut cur = Some(start);
        let mut found = NO_ROW;
        while let Some(i) = cur {
            match self.of_op.get(i) {
                Some(&UNSEEN) => {}
                Some(&hit) => {
                    found = hit;
                    break;
                }
                None => break,
            }
            path.push(i);
            if let Some(r) = self.own(i) {
                found = r;
                break;
            }
            let parent = self.model.ops.get(i).and_then(|o| o.parent).map(|p| p as usize);
            // Parents come before their children; anything else is a broken link.
            cur = parent.filter(|&p| p < i && path.len() < MAX_DEPTH);
        }
        for i in path {
            self.of_op[i] = found;
        }
        found
    }

    /// The members for a GPU event launched inside op `op`.
    fn members_of(&mut self, op: Option<u32>) -> u32 {
        match op.map(|o| (o as usize, self.of(o as usize))) {
            Some((_, r)) if r != NO_ROW => r,
            Some((o, _)) => self.why_none(o),
            None if self.no_op != UNSEEN => self.no_op,
            None => {
                self.no_op = self.why_members(NO_OP.to_string());
                self.no_op
            }
        }
    }
}

fn us(ns: i64) -> f64 {
    ns as f64 / 1e3
}

/// An event's own members: their values' text in one buffer, and where each is.
struct Own<'s> {
    text: &'s mut Vec<u8>,
    spans: [(&'static str, usize, usize); 5],
    n: usize,
}

impl Own<'_> {
    fn add<T: Serialize + ?Sized>(&mut self, key: &'static str, v: &T) -> io::Result<()> {
        let from = self.text.len();
        serde_json::to_writer(&mut *self.text, v)?;
        if let Some(s) = self.spans.get_mut(self.n) {
            *s = (key, from, self.text.len());
            self.n += 1;
        }
        Ok(())
    }
}

/// One GPU event's text (`{"args":{…},"cat":…,"ts":…}`), its `args` the event's own
/// members and `row`'s (sorted by key), merged in key order as serde's map writes them.
fn write_event(
    model: &TraceModel,
    ev: &GpuEvent,
    row: &Members,
    out: &mut Vec<u8>,
    scratch: &mut Vec<u8>,
) -> io::Result<()> {
    scratch.clear();
    let mut own = Own { text: scratch, spans: [("", 0, 0); 5], n: 0 };
    // In key order.
    if let Some(b) = ev.block() {
        own.add("block", &b)?;
    }
    if let Some(b) = ev.bytes {
        own.add("bytes", &b)?;
    }
    if let Some(c) = ev.correlation {
        own.add("correlation", &c)?;
    }
    if let Some(g) = ev.grid() {
        own.add("grid", &g)?;
    }
    let op = ev.op.and_then(|o| model.ops.get(o as usize));
    if let Some(name) = op.map(|o| &*o.name).or(ev.launcher.as_deref()) {
        own.add("launched_by", name)?;
    }
    let (spans, text) = (&own.spans[..own.n], &**own.text);
    out.extend_from_slice(b"{\"args\":{");
    let (mut a, mut b) = (row.iter().peekable(), spans.iter().peekable());
    let mut first = true;
    loop {
        let (key, value) = match (a.peek(), b.peek()) {
            (Some((ka, _)), Some((kb, _, _))) if ka < kb => a.next().map(|(k, v)| (*k, &v[..])),
            (Some(_), None) => a.next().map(|(k, v)| (*k, &v[..])),
            (_, Some(_)) => b.next().map(|&(k, from, to)| (k, &text[from..to])),
            (None, None) => None,
        }
        .unwrap_or_default();
        if key.is_empty() {
            break;
        }
        if !first {
            out.push(b',');
        }
        first = false;
        out.push(b'"');
        out.extend_from_slice(key.as_bytes());
        out.extend_from_slice(b"\":");
        out.extend_from_slice(value);
    }
    let cat = match ev.kind {
        GpuKind::Kernel => "kernel",
        GpuKind::Memcpy => "memcpy",
        GpuKind::Memset => "memset",
    };
    out.extend_from_slice(b"},\"cat\":\"");
    out.extend_from_slice(cat.as_bytes());
    out.extend_from_slice(b"\",\"dur\":");
    serde_json::to_writer(&mut *out, &us(ev.dur_ns.max(0)))?;
    out.extend_from_slice(b",\"name\":");
    write_str(out, &ev.name)?;
    out.extend_from_slice(b",\"ph\":\"X\",\"pid\":");
    serde_json::to_writer(&mut *out, &ev.device)?;
    out.extend_from_slice(b",\"tid\":");
    serde_json::to_writer(&mut *out, &ev.stream)?;
    out.extend_from_slice(b",\"ts\":");
    serde_json::to_writer(&mut *out, &us(ev.ts_ns))?;
    out.push(b'}');
    Ok(())
}

/// Writes the Chrome-trace JSON of `model`'s GPU events with `report`'s analysis, and a
/// line break, to `w`. `config`: the model config the report was analysed with
/// (`--model-config`; the ops' models depend on it).
pub fn write<W: Write + ?Sized>(
    model: &TraceModel,
    report: &TraceReport,
    config: Option<Arc<ModelConfig>>,
    w: &mut W,
) -> io::Result<()> {
    let ctx = Context::with_config(model, config);
    let mut rows = Rows::new(model, report, &ctx);
    // Which row's members each event gets: looked up in order (the memo is shared),
    // before the events are rendered on the pool.
    let row_of: Vec<u32> = model.gpu.iter().map(|ev| rows.members_of(ev.op)).collect();
    let members = &rows.members;

    let doc_head = json!({
        "generator": format!("rooftop {}", env!("CARGO_PKG_VERSION")),
        "roofline_device": report.device.catalog_name,
        "roofline_device_id": report.device.catalog_id,
        "note": "args: op_flops_per_call and op_bytes_per_call are per call of the launching op \
                 (shared by the kernels of one call); roofline_attainment_pct, bound and the \
                 rates are the op row's, over all its calls (rooftop trace --format json).",
    });
    w.write_all(b"{\"displayTimeUnit\":\"ns\",\"otherData\":")?;
    serde_json::to_writer(&mut *w, &doc_head)?;
    w.write_all(b",\"traceEvents\":[")?;
    let mut first = true;
    let mut sep = |w: &mut W| -> io::Result<()> {
        if !std::mem::take(&mut first) {
            w.write_all(b",")?;
        }
        Ok(())
    };

    let tracks: BTreeSet<(i64, i64)> = model.gpu.iter().map(|e| (e.device, e.stream)).collect();
    let mut seen_dev = BTreeSet::new();
    for &(dev, stream) in &tracks {
        if seen_dev.insert(dev) {
            let name = model
                .devices
                .iter()
                .find(|d| d.index == dev)
                .map_or_else(|| format!("GPU {dev}"), |d| format!("GPU {dev}: {}", d.name));
            sep(w)?;
            serde_json::to_writer(
                &mut *w,
                &json!({"name": "process_name", "ph": "M", "pid": dev, "args": {"name": name}}),
            )?;
            sep(w)?;
            serde_json::to_writer(
                &mut *w,
                &json!({"name": "process_sort_index", "ph": "M", "pid": dev, "args": {"sort_index": dev}}),
            )?;
        }
        sep(w)?;
        serde_json::to_writer(
            &mut *w,
            &json!({"name": "thread_name", "ph": "M", "pid": dev, "tid": stream, "args": {"name": format!("stream {stream}")}}),
        )?;
        sep(w)?;
        serde_json::to_writer(
            &mut *w,
            &json!({"name": "thread_sort_index", "ph": "M", "pid": dev, "tid": stream, "args": {"sort_index": stream}}),
        )?;
    }

    // Runs of events rendered on the pool, written in order.
    let render = |start: usize, run: &[GpuEvent], out: &mut Vec<u8>| {
        let mut scratch = Vec::new();
        let rows = &row_of[start..start + run.len()];
        for (j, (ev, &r)) in run.iter().zip(rows).enumerate() {
            if j > 0 {
                out.push(b',');
            }
            write_event(model, ev, &members[r as usize], out, &mut scratch)?;
        }
        Ok(())
    };
    crate::json::runs_on_pool(&model.gpu, EVENTS_PER_TASK, render, |part| {
        sep(w)?;
        w.write_all(part)
    })?;
    crate::perfetto_cp::write_track(report, w, &mut sep)?;
    w.write_all(b"]}\n")
}

/// [`write()`] into a string.
pub fn trace(model: &TraceModel, report: &TraceReport, config: Option<Arc<ModelConfig>>) -> String {
    crate::json::written(|out| write(model, report, config, out))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use rooftop_core::trace::model::{CpuOp, Dims, GpuEvent, OpArgs};
    use rooftop_core::trace::report::{analyze, TraceOptions};
    use serde_json::Value;

    /// Two addmm calls (one kernel each) on stream 7 and an unmodelled op's kernel on
    /// stream 9; the analysis against the H100 gives the addmm row attainment and bound.
    fn model() -> TraceModel {
        let mm = vec![
            Dims::Tensor(vec![512]),
            Dims::Tensor(vec![141, 512]),
            Dims::Tensor(vec![512, 512]),
        ];
        let op = |name: &str, dims: Vec<Dims>, ts: i64| CpuOp {
            name: name.into(),
            ts_ns: ts,
            dur_ns: 1000,
            args: OpArgs {
                input_dims: dims,
                input_types: vec!["c10::BFloat16".into(); 3],
                ..OpArgs::default()
            }
            .into(),
            launched: vec![],
            ..CpuOp::default()
        };
        let k = |name: &str, ts: i64, stream: i64, op: u32| GpuEvent {
            name: name.into(),
            ts_ns: ts,
            dur_ns: 10_000,
            stream,
            op: Some(op),
            launcher: Some("cudaLaunchKernel".into()),
            ..GpuEvent::default()
        };
        let mut m = TraceModel {
            ops: vec![
                op("aten::addmm", mm.clone(), 0),
                op("aten::addmm", mm, 20_000),
                op("aten::foo", vec![], 40_000),
            ],
            gpu: vec![
                k("gemm_a", 0, 7, 0),
                k("gemm_a", 20_000, 7, 1),
                k("foo_kernel", 40_000, 9, 2),
            ],
            ..TraceModel::default()
        };
        m.ops[0].launched = vec![0];
        m.ops[1].launched = vec![1];
        m.ops[2].launched = vec![2];
        m
    }

    #[test]
    fn one_x_event_per_gpu_event_with_the_rows_analysis() {
        let tm = model();
        let cat = rooftop_core::device::Catalog::builtin();
        let rep = analyze(&tm, cat.lookup("h100-sxm").ok(), &TraceOptions::default());
        let v: Value = serde_json::from_str(&trace(&tm, &rep, None)).unwrap();
        let evs = v["traceEvents"].as_array().unwrap();
        // The GPU events (the critical-path track is a process of its own).
        let gpu = |e: &&Value| e["pid"] != crate::perfetto_cp::PID;
        let x: Vec<&Value> = evs.iter().filter(|e| e["ph"] == "X").filter(gpu).collect();
        assert_eq!(x.len(), 3);
        // Tracks: device 0 with streams 7 and 9.
        let threads: Vec<&Value> =
            evs.iter().filter(|e| e["name"] == "thread_name").filter(gpu).collect();
        assert_eq!(threads.len(), 2);
        assert_eq!(threads[0]["args"]["name"], "stream 7");
        let gemm = x[0];
        assert_eq!(gemm["ts"], 0.0);
        assert_eq!(gemm["dur"], 10.0);
        assert_eq!(gemm["tid"], 7);
        let a = &gemm["args"];
        assert_eq!(a["op"], "aten::addmm");
        assert_eq!(a["table"], "GEMM");
        let row = &rep.categories["GEMM"][0];
        assert_eq!(a["op_flops_per_call"].as_f64(), row.flops);
        assert_eq!(a["op_bytes_per_call"].as_f64(), row.bytes);
        assert_eq!(a["roofline_attainment_pct"].as_f64(), row.roofline_attainment_pct);
        assert_eq!(a["bound"], row.bound.unwrap().as_str());
        assert!(row.roofline_attainment_pct.is_some());
        let foo = x[2];
        assert!(foo["args"]["op"].is_null());
        assert_eq!(foo["args"]["model"], "none: no work model for `aten::foo` (times only)");
        assert_eq!(foo["args"]["launched_by"], "aten::foo");
    }
}
