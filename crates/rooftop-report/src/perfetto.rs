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
//! FLOPs and bytes are the op's per call, shared by all the kernels one call launches;
//! attainment, bound and rates are the row's (over all its calls). Nothing is
//! recomputed: every number is the report's.

use rooftop_core::trace::model::{GpuKind, TraceModel};
use rooftop_core::trace::ops::{model_op, op_table, ParamValue};
use rooftop_core::trace::report::TraceReport;
use rooftop_core::trace::tables::OpRow;
use serde_json::{json, Map, Value};
use std::collections::{BTreeSet, HashMap};

/// Deepest op nesting followed when looking for a modelled ancestor.
const MAX_DEPTH: usize = 512;

fn params_text(row: &OpRow) -> String {
    row.params
        .0
        .iter()
        .filter(|(k, v)| !k.starts_with("stride") && *v != ParamValue::Null)
        .map(|(k, v)| format!("{k}={}", v.tracelens_repr().replace("c10::", "").replace('\'', "")))
        .collect::<Vec<_>>()
        .join(" ")
}

/// For each CPU op, the (table, row) of its innermost modelled ancestor (itself
/// included), memoised.
struct Rows<'a> {
    model: &'a TraceModel,
    /// Inference ops whose model needs the trace around them (MoE layers, attention).
    inference: rooftop_core::trace::inference::Context,
    by_key: HashMap<String, (&'a str, &'a OpRow)>,
    memo: HashMap<usize, Option<(&'a str, &'a OpRow)>>,
}

impl<'a> Rows<'a> {
    fn new(model: &'a TraceModel, report: &'a TraceReport) -> Rows<'a> {
        let mut by_key = HashMap::new();
        for (table, rows) in &report.categories {
            for row in rows.iter().filter(|r| r.unmodelled.is_none()) {
                by_key.insert(
                    format!("{}|{}", row.name, row.params.group_key()),
                    (table.as_str(), row),
                );
            }
        }
        let inference = rooftop_core::trace::inference::Context::new(model);
        Rows { model, inference, by_key, memo: HashMap::new() }
    }

    fn own(&self, i: usize) -> Option<(&'a str, &'a OpRow)> {
        let op = self.model.ops.get(i)?;
        op_table(&op.name)?;
        let m = self
            .inference
            .model(self.model, i)
            .unwrap_or_else(|| model_op(&op.name, &op.args))
            .ok()?;
        self.by_key.get(&format!("{}|{}", op.name, m.params.group_key())).copied()
    }

    fn of(&mut self, start: usize) -> Option<(&'a str, &'a OpRow)> {
        let mut path = Vec::new();
        let mut cur = Some(start);
        let mut found = None;
        while let Some(i) = cur {
            if let Some(hit) = self.memo.get(&i) {
                found = *hit;
                break;
            }
            path.push(i);
            if let Some(r) = self.own(i) {
                found = Some(r);
                break;
            }
            let parent = self.model.ops.get(i).and_then(|o| o.parent).map(|p| p as usize);
            // Parents come before their children; anything else is a broken link.
            cur = parent.filter(|&p| p < i && path.len() < MAX_DEPTH);
        }
        for i in path {
            self.memo.insert(i, found);
        }
        found
    }
}

fn us(ns: i64) -> f64 {
    ns as f64 / 1e3
}

/// The Chrome-trace JSON of `model`'s GPU events with `report`'s analysis.
pub fn trace(model: &TraceModel, report: &TraceReport) -> String {
    let mut rows = Rows::new(model, report);
    let mut events: Vec<Value> = Vec::with_capacity(model.gpu.len() + 16);
    let mut tracks: BTreeSet<(i64, i64)> = BTreeSet::new();
    for ev in &model.gpu {
        tracks.insert((ev.device, ev.stream));
        let mut args = Map::new();
        let op = ev.op.map(|o| o as usize);
        if let Some(name) = op.and_then(|o| model.ops.get(o)).map(|o| o.name.to_string()) {
            args.insert("launched_by".into(), Value::from(name));
        } else if let Some(l) = &ev.launcher {
            args.insert("launched_by".into(), Value::from(l.to_string()));
        }
        if let Some((table, row)) = op.and_then(|o| rows.of(o)) {
            {
                args.insert("op".into(), Value::from(row.name.clone()));
                args.insert("table".into(), Value::from(table));
                args.insert("shape".into(), Value::from(params_text(row)));
                args.insert("op_flops_per_call".into(), json!(row.flops));
                args.insert("op_bytes_per_call".into(), json!(row.bytes));
                args.insert("flops_per_byte".into(), json!(row.flops_per_byte));
                args.insert("roofline_attainment_pct".into(), json!(row.roofline_attainment_pct));
                args.insert(
                    "bound".into(),
                    json!(row.bound.map(rooftop_core::roofline::Bound::as_str)),
                );
                args.insert(
                    "achieved_tflops_mean".into(),
                    json!(row.achieved_tflops.as_ref().map(|s| s.mean)),
                );
                args.insert(
                    "achieved_tbs_mean".into(),
                    json!(row.achieved_tbs.as_ref().map(|s| s.mean)),
                );
                args.insert("floor_time_us".into(), json!(row.floor_time_us));
                args.insert("op_calls".into(), json!(row.count));
                args.insert("op_time_us_mean".into(), json!(row.kernel_time_us.mean));
                if let Some(f) = &row.top_finding {
                    args.insert(
                        "top_finding".into(),
                        Value::from(format!("{} ({})", f.title, f.severity.as_str())),
                    );
                }
            }
        } else {
            args.insert("op".into(), Value::Null);
            args.insert(
                "model".into(),
                Value::from("none: no roofline row for the launching op (times only)"),
            );
        }
        if let Some(g) = ev.grid() {
            args.insert("grid".into(), json!(g));
        }
        if let Some(b) = ev.block() {
            args.insert("block".into(), json!(b));
        }
        if let Some(b) = ev.bytes {
            args.insert("bytes".into(), json!(b));
        }
        if let Some(c) = ev.correlation {
            args.insert("correlation".into(), json!(c));
        }
        let cat = match ev.kind {
            GpuKind::Kernel => "kernel",
            GpuKind::Memcpy => "memcpy",
            GpuKind::Memset => "memset",
        };
        events.push(json!({
            "name": ev.name,
            "cat": cat,
            "ph": "X",
            "pid": ev.device,
            "tid": ev.stream,
            "ts": us(ev.ts_ns),
            "dur": us(ev.dur_ns.max(0)),
            "args": Value::Object(args),
        }));
    }
    let mut meta = Vec::new();
    let mut seen_dev = BTreeSet::new();
    for &(dev, stream) in &tracks {
        if seen_dev.insert(dev) {
            let name = model
                .devices
                .iter()
                .find(|d| d.index == dev)
                .map_or_else(|| format!("GPU {dev}"), |d| format!("GPU {dev}: {}", d.name));
            meta.push(
                json!({"name": "process_name", "ph": "M", "pid": dev, "args": {"name": name}}),
            );
            meta.push(json!({"name": "process_sort_index", "ph": "M", "pid": dev, "args": {"sort_index": dev}}));
        }
        meta.push(json!({"name": "thread_name", "ph": "M", "pid": dev, "tid": stream, "args": {"name": format!("stream {stream}")}}));
        meta.push(json!({"name": "thread_sort_index", "ph": "M", "pid": dev, "tid": stream, "args": {"sort_index": stream}}));
    }
    meta.extend(events);
    meta.extend(crate::perfetto_cp::track(report));
    let doc = json!({
        "traceEvents": meta,
        "displayTimeUnit": "ns",
        "otherData": {
            "generator": format!("rooftop {}", env!("CARGO_PKG_VERSION")),
            "roofline_device": report.device.catalog_name,
            "roofline_device_id": report.device.catalog_id,
            "note": "args: op_flops_per_call and op_bytes_per_call are per call of the launching op \
                     (shared by the kernels of one call); roofline_attainment_pct, bound and the \
                     rates are the op row's, over all its calls (rooftop trace --format json).",
        },
    });
    let mut s = serde_json::to_string(&doc).unwrap_or_default();
    s.push('\n');
    s
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use rooftop_core::trace::model::{CpuOp, Dims, GpuEvent, OpArgs};
    use rooftop_core::trace::report::{analyze, TraceOptions};

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
        let v: Value = serde_json::from_str(&trace(&tm, &rep)).unwrap();
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
        assert_eq!(foo["args"]["launched_by"], "aten::foo");
    }
}
