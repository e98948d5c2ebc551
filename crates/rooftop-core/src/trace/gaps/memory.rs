//! Memory from the caching allocator's `[memory]` events (`profile_memory=True`): the
//! timeline per device, the peak, and what was alive at the peak.
//!
//! - Each event states the block's size (`Bytes`, negative when freed), its address and
//!   the allocator's `Total Allocated` and `Total Reserved` after it. The peak is the
//!   largest `Total Allocated` (the allocator's own number).
//! - **Alive at the peak**: blocks allocated in the trace and not yet freed when the peak
//!   event happened, grouped by the op that allocated them (the innermost CPU op around
//!   the event on its thread) and by phase: `backward` (inside
//!   `autograd::engine::evaluate_function`), `optimizer` (inside an `Optimizer.` op or
//!   annotation), `forward` (inside any other op) or `outside ops`. What the peak holds
//!   beyond those blocks was allocated before the trace began (weights, caches, earlier
//!   steps): **before the trace**.
//! - The timeline is thinned to at most [`TIMELINE_POINTS`] points, each the largest
//!   `Total Allocated` of its stretch of time.

use super::super::model::{MemoryEvent, TraceModel};
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};

/// Points of the thinned timeline.
pub const TIMELINE_POINTS: usize = 400;

/// One point of the timeline.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct MemoryPoint {
    pub ts_us: f64,
    pub allocated_bytes: i64,
    pub reserved_bytes: i64,
}

/// Bytes alive at the peak in one group.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AliveGroup {
    pub name: String,
    pub bytes: i64,
    pub blocks: u64,
}

/// One device's memory.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DeviceMemory {
    /// `cuda`, `cpu`, or the allocator's device-type number.
    pub device_type: String,
    pub device_id: i64,
    pub allocations: u64,
    pub frees: u64,
    pub allocated_bytes_total: i64,
    pub peak_allocated_bytes: i64,
    pub peak_ts_us: f64,
    pub peak_reserved_bytes: i64,
    /// Bytes at the peak allocated before the trace began.
    pub before_trace_bytes: i64,
    /// By allocating op, largest first (at most 20; the rest summed as `(other ops)`).
    pub alive_by_op: Vec<AliveGroup>,
    /// By phase: forward, backward, optimizer, outside ops.
    pub alive_by_phase: Vec<AliveGroup>,
    pub timeline: Vec<MemoryPoint>,
}

/// The memory section of the report.
#[derive(Debug, Clone, PartialEq, Serialize, Default)]
pub struct Memory {
    pub events: u64,
    pub devices: Vec<DeviceMemory>,
}

fn device_type(t: Option<i64>) -> String {
    match t {
        Some(0) => "cpu".to_string(),
        Some(1) => "cuda".to_string(),
        Some(n) => n.to_string(),
        None => "unknown".to_string(),
    }
}

/// The innermost op on `(pid, tid)` containing `ts` (ops are sorted by (pid, tid, ts)).
fn op_at(model: &TraceModel, pid: i64, tid: i64, ts: i64) -> Option<u32> {
    let hi = model.ops.partition_point(|o| (o.pid, o.tid, o.ts_ns) <= (pid, tid, ts));
    let mut k = if hi > 0 { Some((hi - 1) as u32) } else { None };
    while let Some(i) = k {
        let o = model.ops.get(i as usize)?;
        if (o.pid, o.tid) != (pid, tid) {
            return None;
        }
        if o.ts_ns + o.dur_ns >= ts {
            return Some(i);
        }
        k = o.parent.filter(|&p| p < i);
    }
    None
}

fn phase(model: &TraceModel, op: Option<u32>) -> &'static str {
    let Some(mut i) = op else { return "outside ops" };
    loop {
        let Some(o) = model.ops.get(i as usize) else { return "forward" };
        if o.name.starts_with("autograd::engine::evaluate_function") {
            return "backward";
        }
        if o.name.starts_with("Optimizer.") {
            return "optimizer";
        }
        match o.parent.filter(|&p| p < i) {
            Some(p) => i = p,
            None => return "forward",
        }
    }
}

fn in_optimizer_annotation(model: &TraceModel, ts: i64) -> bool {
    model.annotations.iter().any(|a| {
        !a.on_gpu && a.name.starts_with("Optimizer.") && a.ts_ns <= ts && ts <= a.ts_ns + a.dur_ns
    })
}

fn thin(evs: &[&MemoryEvent]) -> Vec<MemoryPoint> {
    let (Some(first), Some(last)) = (evs.first(), evs.last()) else { return Vec::new() };
    let span = last.ts_ns.saturating_sub(first.ts_ns).max(1);
    let mut out: Vec<MemoryPoint> = Vec::new();
    let mut bucket = usize::MAX;
    for e in evs {
        let b = ((i128::from(e.ts_ns) - i128::from(first.ts_ns)) * (TIMELINE_POINTS as i128 - 1)
            / span as i128) as usize;
        let p = MemoryPoint {
            ts_us: e.ts_ns as f64 / 1e3,
            allocated_bytes: e.total_allocated.unwrap_or(0),
            reserved_bytes: e.total_reserved.unwrap_or(0),
        };
        if b != bucket || out.is_empty() {
            out.push(p);
            bucket = b;
        } else if let Some(x) = out.last_mut() {
            if p.allocated_bytes > x.allocated_bytes {
                *x = p;
            }
        }
    }
    out
}

/// The sum of byte counts, saturating: a damaged trace must not overflow it.
fn sum(it: impl Iterator<Item = i64>) -> i64 {
    it.fold(0, i64::saturating_add)
}

/// The memory section of `model`.
pub fn memory(model: &TraceModel) -> Memory {
    // CUDA devices first, then by id and type.
    let mut by_dev: BTreeMap<(bool, i64, i64), Vec<&MemoryEvent>> = BTreeMap::new();
    for e in &model.memory {
        let t = e.device_type.unwrap_or(-1);
        by_dev.entry((t != 1, e.device_id.unwrap_or(-1), t)).or_default().push(e);
    }
    let devices = by_dev
        .into_values()
        .filter_map(|evs| {
            let first = evs.first()?;
            let (peak_i, peak) = evs
                .iter()
                .enumerate()
                .map(|(i, e)| (i, e.total_allocated.unwrap_or(i64::MIN)))
                .fold((0, i64::MIN), |b, x| if x.1 > b.1 { x } else { b });
            // Blocks alive at the peak: (addr → bytes, op).
            let mut live: HashMap<i64, (i64, Option<u32>, i64)> = HashMap::new();
            for e in &evs[..=peak_i] {
                let Some(a) = e.addr else { continue };
                if e.bytes > 0 {
                    live.insert(a, (e.bytes, op_at(model, e.pid, e.tid, e.ts_ns), e.ts_ns));
                } else {
                    live.remove(&a);
                }
            }
            let tracked = sum(live.values().map(|v| v.0));
            let mut by_op: HashMap<String, (i64, u64)> = HashMap::new();
            let mut by_phase: HashMap<&'static str, (i64, u64)> = HashMap::new();
            for (bytes, op, ts) in live.values() {
                let name = op
                    .and_then(|o| model.ops.get(o as usize))
                    .map_or_else(|| "(outside ops)".to_string(), |o| o.name.to_string());
                let e = by_op.entry(name).or_default();
                e.0 = e.0.saturating_add(*bytes);
                e.1 += 1;
                let mut ph = phase(model, *op);
                if ph == "forward" && in_optimizer_annotation(model, *ts) {
                    ph = "optimizer";
                }
                let p = by_phase.entry(ph).or_default();
                p.0 = p.0.saturating_add(*bytes);
                p.1 += 1;
            }
            let group = |m: Vec<(String, (i64, u64))>| {
                let mut v: Vec<AliveGroup> = m
                    .into_iter()
                    .map(|(name, (bytes, blocks))| AliveGroup { name, bytes, blocks })
                    .collect();
                v.sort_by(|a, b| b.bytes.cmp(&a.bytes).then(a.name.cmp(&b.name)));
                v
            };
            let mut alive_by_op = group(by_op.into_iter().collect());
            if alive_by_op.len() > 20 {
                let rest = alive_by_op.split_off(19);
                alive_by_op.push(AliveGroup {
                    name: "(other ops)".to_string(),
                    bytes: sum(rest.iter().map(|g| g.bytes)),
                    blocks: rest.iter().map(|g| g.blocks).sum(),
                });
            }
            let alive_by_phase =
                group(by_phase.into_iter().map(|(k, v)| (k.to_string(), v)).collect());
            Some(DeviceMemory {
                device_type: device_type(first.device_type),
                device_id: first.device_id.unwrap_or(-1),
                allocations: evs.iter().filter(|e| e.bytes > 0).count() as u64,
                frees: evs.iter().filter(|e| e.bytes < 0).count() as u64,
                allocated_bytes_total: sum(evs.iter().filter(|e| e.bytes > 0).map(|e| e.bytes)),
                peak_allocated_bytes: peak.max(0),
                peak_ts_us: evs[peak_i].ts_ns as f64 / 1e3,
                peak_reserved_bytes: evs[..=peak_i]
                    .iter()
                    .filter_map(|e| e.total_reserved)
                    .max()
                    .unwrap_or(0),
                before_trace_bytes: peak.saturating_sub(tracked).max(0),
                alive_by_op,
                alive_by_phase,
                timeline: thin(&evs),
            })
        })
        .collect();
    Memory { events: model.memory.len() as u64, devices }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::model::CpuOp;

    fn ev(ts: i64, bytes: i64, addr: i64, total: i64) -> MemoryEvent {
        MemoryEvent {
            ts_ns: ts,
            bytes,
            addr: Some(addr),
            total_allocated: Some(total),
            total_reserved: Some(4096),
            device_type: Some(1),
            device_id: Some(0),
            ..MemoryEvent::default()
        }
    }

    #[test]
    fn peak_and_alive() {
        // 1000 bytes allocated before the trace; aten::empty allocates 100 @A (10) and
        // 200 @B (20); 100 freed (30); backward allocates 50 @C (40): peak 1300 at 20.
        let m = TraceModel {
            ops: vec![
                CpuOp { name: "aten::empty".into(), ts_ns: 5, dur_ns: 20, ..CpuOp::default() },
                CpuOp {
                    name: "autograd::engine::evaluate_function: XBackward0".into(),
                    ts_ns: 35,
                    dur_ns: 10,
                    ..CpuOp::default()
                },
            ],
            memory: vec![
                ev(10, 100, 0xA, 1100),
                ev(20, 200, 0xB, 1300),
                ev(30, -100, 0xA, 1200),
                ev(40, 50, 0xC, 1250),
            ],
            ..TraceModel::default()
        };
        let r = memory(&m);
        let d = &r.devices[0];
        assert_eq!(d.device_type, "cuda");
        assert_eq!((d.allocations, d.frees), (3, 1));
        assert_eq!((d.peak_allocated_bytes, d.peak_ts_us), (1300, 0.02));
        assert_eq!(d.before_trace_bytes, 1000);
        assert_eq!(d.alive_by_op[0].name, "aten::empty");
        assert_eq!(d.alive_by_op[0].bytes, 300);
        assert_eq!(d.alive_by_phase[0].name, "forward");
        assert_eq!(d.timeline.len(), 4);
        assert_eq!(d.peak_reserved_bytes, 4096);
    }
}
