//! Blocking synchronisations and pageable copies: where the CPU stopped to wait for the
//! GPU, and for how long.
//!
//! A runtime call blocks the calling thread until GPU work finishes when it is a device,
//! stream or event synchronisation (`cudaDeviceSynchronize`, `cudaStreamSynchronize`,
//! `cudaEventSynchronize`, their HIP and driver-API twins), a synchronous copy
//! (`cudaMemcpy`, `hipMemcpy`, `hipMemcpyWithStream`), or an asynchronous copy whose
//! host side is pageable memory (CUDA's API synchronisation rules: a device-to-pageable
//! copy returns only when it is done — the `.item()` / `.cpu()` pattern, which shows as
//! `aten::_local_scalar_dense` or `aten::to` around the copy). The time at stake is the
//! call's duration: the CPU could not enqueue anything meanwhile, so the GPU drains and
//! then idles.
//!
//! Pageable copies (`Memcpy … (Pageable …)` GPU events) are listed apart with their
//! bytes: pinning the host buffer makes them asynchronous and faster.

use super::super::model::{GpuKind, TraceModel};
use super::{op_name, top_op};
use serde::Serialize;
use std::collections::BTreeMap;
use std::sync::Arc;

/// A sync table row's key: the call, its kind, its op and that op's top-level op.
type RowKey = (Arc<str>, SyncCallKind, Option<u32>, Option<u32>);

/// What a blocking call waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SyncCallKind {
    /// Every stream of the device.
    Device,
    /// One stream.
    Stream,
    /// One recorded event.
    Event,
    /// A synchronous copy (`cudaMemcpy`, `hipMemcpy`, `hipMemcpyWithStream`).
    SyncCopy,
    /// An asynchronous copy to or from pageable host memory.
    PageableCopy,
}

impl SyncCallKind {
    pub fn as_str(self) -> &'static str {
        match self {
            SyncCallKind::Device => "device",
            SyncCallKind::Stream => "stream",
            SyncCallKind::Event => "event",
            SyncCallKind::SyncCopy => "sync_copy",
            SyncCallKind::PageableCopy => "pageable_copy",
        }
    }
}

/// The kind of a runtime call by name alone (`None`: not blocking by name).
pub fn blocking_kind(name: &str) -> Option<SyncCallKind> {
    let k = match name {
        "cudaDeviceSynchronize" | "hipDeviceSynchronize" | "cuCtxSynchronize" => {
            SyncCallKind::Device
        }
        "cudaStreamSynchronize" | "hipStreamSynchronize" | "cuStreamSynchronize" => {
            SyncCallKind::Stream
        }
        "cudaEventSynchronize" | "hipEventSynchronize" | "cuEventSynchronize" => {
            SyncCallKind::Event
        }
        "cudaMemcpy"
        | "hipMemcpy"
        | "hipMemcpyWithStream"
        | "cudaMemcpy2D"
        | "hipMemcpy2D"
        | "cuMemcpyDtoH_v2"
        | "cuMemcpyHtoD_v2" => SyncCallKind::SyncCopy,
        _ => return None,
    };
    Some(k)
}

/// Blocking calls of one kind at one place.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SyncRow {
    pub call: String,
    pub kind: SyncCallKind,
    /// The innermost op around the call (`aten::_local_scalar_dense`, ...).
    pub op: Option<String>,
    /// The outermost op around the call (`aten::item`, a module's forward, ...).
    pub top_op: Option<String>,
    pub count: u64,
    /// CPU time blocked, µs.
    pub total_us: f64,
    pub max_us: f64,
    /// Start of the first such call on the trace's clock, µs.
    pub first_ts_us: f64,
}

/// Pageable copies in one direction.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PageableRow {
    /// The GPU event's name (`Memcpy DtoH (Device -> Pageable)`).
    pub name: String,
    pub count: u64,
    pub bytes: u64,
    pub gpu_us: f64,
    /// CPU time of the runtime calls that issued them, µs.
    pub cpu_us: f64,
}

/// The synchronisation section of the report.
#[derive(Debug, Clone, PartialEq, Serialize, Default)]
pub struct Syncs {
    /// Blocking calls.
    pub calls: u64,
    /// CPU time blocked in them, µs.
    pub blocked_us: f64,
    /// By (call, op), most blocked time first.
    pub rows: Vec<SyncRow>,
    pub pageable: Vec<PageableRow>,
}

/// Whether a memcpy event's name says its host side is pageable memory.
pub fn is_pageable(name: &str) -> bool {
    name.contains("Pageable")
}

/// The synchronisation section of `model`.
pub fn syncs(model: &TraceModel) -> Syncs {
    // The first GPU event of each runtime call, by the call's index (a vector: a map
    // held an entry per launch).
    let mut gpu_of: Vec<Option<usize>> = vec![None; model.runtime.len()];
    for (i, g) in model.gpu.iter().enumerate() {
        if let Some(first) = g.runtime.and_then(|r| gpu_of.get_mut(r as usize)) {
            first.get_or_insert(i);
        }
    }
    let mut rows: BTreeMap<RowKey, SyncRow> = BTreeMap::new();
    let (mut calls, mut blocked) = (0u64, 0i64);
    for (ri, r) in model.runtime.iter().enumerate() {
        let copy = gpu_of[ri].map(|g| &model.gpu[g]);
        let kind = blocking_kind(&r.name).or_else(|| {
            let g = copy?;
            (g.kind == GpuKind::Memcpy && is_pageable(&g.name))
                .then_some(SyncCallKind::PageableCopy)
        });
        let Some(kind) = kind else { continue };
        calls += 1;
        blocked += r.dur_ns;
        let top = r.op.map(|o| top_op(model, o));
        let row = rows.entry((Arc::clone(&r.name), kind, r.op, top)).or_insert_with(|| SyncRow {
            call: r.name.to_string(),
            kind,
            op: op_name(model, r.op).map(str::to_string),
            top_op: op_name(model, top).map(str::to_string),
            count: 0,
            total_us: 0.0,
            max_us: 0.0,
            first_ts_us: r.ts_ns as f64 / 1e3,
        });
        row.count += 1;
        row.total_us += r.dur_ns as f64 / 1e3;
        row.max_us = row.max_us.max(r.dur_ns as f64 / 1e3);
    }
    // Merge rows that differ only by op index (same names).
    let mut by_name: BTreeMap<(String, SyncCallKind, Option<String>, Option<String>), SyncRow> =
        BTreeMap::new();
    for r in rows.into_values() {
        let key = (r.call.clone(), r.kind, r.op.clone(), r.top_op.clone());
        match by_name.get_mut(&key) {
            Some(x) => {
                x.count += r.count;
                x.total_us += r.total_us;
                x.max_us = x.max_us.max(r.max_us);
                x.first_ts_us = x.first_ts_us.min(r.first_ts_us);
            }
            None => {
                by_name.insert(key, r);
            }
        }
    }
    let mut rows: Vec<SyncRow> = by_name.into_values().collect();
    rows.sort_by(|a, b| b.total_us.total_cmp(&a.total_us).then(a.call.cmp(&b.call)));

    let mut pageable: BTreeMap<&str, PageableRow> = BTreeMap::new();
    for g in model.gpu.iter().filter(|g| g.kind == GpuKind::Memcpy && is_pageable(&g.name)) {
        let p = pageable.entry(g.name.as_ref()).or_insert_with(|| PageableRow {
            name: g.name.to_string(),
            count: 0,
            bytes: 0,
            gpu_us: 0.0,
            cpu_us: 0.0,
        });
        p.count += 1;
        p.bytes += g.bytes.unwrap_or(0);
        p.gpu_us += g.dur_ns as f64 / 1e3;
        p.cpu_us += g
            .runtime
            .and_then(|r| model.runtime.get(r as usize))
            .map_or(0.0, |r| r.dur_ns as f64 / 1e3);
    }
    let mut pageable: Vec<PageableRow> = pageable.into_values().collect();
    pageable.sort_by(|a, b| b.gpu_us.total_cmp(&a.gpu_us));
    Syncs { calls, blocked_us: blocked as f64 / 1e3, rows, pageable }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::model::{CpuOp, GpuEvent, RuntimeCall};

    #[test]
    fn item_and_device_sync() {
        // aten::item > aten::_local_scalar_dense > cudaMemcpyAsync (D2H pageable, 40 µs
        // blocked); a cudaDeviceSynchronize of 100 µs outside any op; a pinned copy is
        // not blocking.
        let op = |name: &str, parent: Option<u32>| CpuOp {
            name: name.into(),
            parent,
            ..CpuOp::default()
        };
        let rt = |name: &str, ts: i64, dur: i64, op: Option<u32>| RuntimeCall {
            name: name.into(),
            ts_ns: ts,
            dur_ns: dur,
            op,
            ..RuntimeCall::default()
        };
        let copy = |name: &str, r: u32| GpuEvent {
            kind: GpuKind::Memcpy,
            name: name.into(),
            dur_ns: 2_000,
            bytes: Some(4),
            runtime: Some(r),
            ..GpuEvent::default()
        };
        let m = TraceModel {
            ops: vec![op("aten::item", None), op("aten::_local_scalar_dense", Some(0))],
            runtime: vec![
                rt("cudaMemcpyAsync", 0, 40_000, Some(1)),
                rt("cudaDeviceSynchronize", 50_000, 100_000, None),
                rt("cudaMemcpyAsync", 200_000, 3_000, None),
            ],
            gpu: vec![
                copy("Memcpy DtoH (Device -> Pageable)", 0),
                copy("Memcpy DtoH (Device -> Pinned)", 2),
            ],
            ..TraceModel::default()
        };
        let s = syncs(&m);
        assert_eq!(s.calls, 2);
        assert_eq!(s.blocked_us, 140.0);
        assert_eq!(s.rows[0].call, "cudaDeviceSynchronize");
        assert_eq!(s.rows[0].kind, SyncCallKind::Device);
        assert_eq!(s.rows[1].kind, SyncCallKind::PageableCopy);
        assert_eq!(s.rows[1].op.as_deref(), Some("aten::_local_scalar_dense"));
        assert_eq!(s.rows[1].top_op.as_deref(), Some("aten::item"));
        assert_eq!(s.pageable.len(), 1);
        assert_eq!((s.pageable[0].bytes, s.pageable[0].cpu_us), (4, 40.0));
    }
}
