//! Sorts parsed events by what they are (CPU op, runtime call, GPU activity, flow,
//! annotation) into one [`Partial`] per parsed stretch of the event array, counting the
//! events it cannot use. Partials of consecutive stretches are concatenated in file
//! order; `link` turns the result into a `TraceModel`.

use super::error::Warnings;
use super::event::{op_args, BadTime, Event, Phase};
use super::hash::{FxMap, FxSet};
use rooftop_core::trace::{
    Annotation, CpuOp, GpuEvent, GpuKind, LaunchDims, LaunchPool, MemoryEvent, ModuleCall, OpArgs,
    SyncEvent, SyncKind,
};
use std::borrow::Cow;
use std::sync::Arc;

/// A CUDA/HIP runtime or driver call (`cuda_runtime`, `cuda_driver`, legacy `Runtime`).
#[derive(Debug, Clone)]
pub(crate) struct Runtime {
    pub name: Arc<str>,
    pub pid: i64,
    pub tid: i64,
    pub ts_ns: i64,
    pub dur_ns: i64,
    pub correlation: Option<i64>,
    pub external_id: Option<i64>,
    pub grid: Option<[u32; 3]>,
    pub block: Option<[u32; 3]>,
    pub shared_memory: Option<u64>,
    pub bytes: Option<u64>,
}

/// One end of a launch flow (`ac2g`, legacy `async`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct FlowEnd {
    pub id: i64,
    pub pid: i64,
    pub tid: i64,
    pub ts_ns: i64,
}

/// What a category is to the reader.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Class {
    Op {
        legacy: bool,
    },
    Runtime {
        legacy: bool,
    },
    Gpu {
        kind: GpuKind,
        legacy: bool,
    },
    Annotation {
        on_gpu: bool,
    },
    /// `cuda_sync`: the GPU side of a synchronisation.
    Sync,
    /// `python_function` frames named `nn.Module: …` (the reader skips the others).
    Module,
    /// Known categories the model does not carry (Python stack, memory instants,
    /// synchronisation, CUPTI counters, ...).
    Ignored,
    Unknown,
}

/// Category names: libkineto's `ActivityType` strings, the 2021 legacy names (see the
/// TensorBoard plugin's legacy test traces) and the spans Kineto adds.
fn classify(cat: &str) -> Class {
    match cat {
        "cpu_op" => Class::Op { legacy: false },
        "Operator" => Class::Op { legacy: true },
        "cuda_runtime"
        | "cuda_driver"
        | "xpu_runtime"
        | "privateuse1_runtime"
        | "privateuse1_driver"
        | "mtia_runtime" => Class::Runtime { legacy: false },
        "Runtime" => Class::Runtime { legacy: true },
        "kernel" => Class::Gpu { kind: GpuKind::Kernel, legacy: false },
        "gpu_memcpy" => Class::Gpu { kind: GpuKind::Memcpy, legacy: false },
        "gpu_memset" => Class::Gpu { kind: GpuKind::Memset, legacy: false },
        "Kernel" => Class::Gpu { kind: GpuKind::Kernel, legacy: true },
        "Memcpy" => Class::Gpu { kind: GpuKind::Memcpy, legacy: true },
        "Memset" => Class::Gpu { kind: GpuKind::Memset, legacy: true },
        "user_annotation" => Class::Annotation { on_gpu: false },
        "gpu_user_annotation" => Class::Annotation { on_gpu: true },
        "cuda_sync" => Class::Sync,
        "python_function" => Class::Module,
        "cpu_instant_event"
        | "cuda_event"
        | "cuda_profiler_range"
        | "collective_comm"
        | "Trace"
        | "overhead"
        | "Overhead"
        | "external_correlation"
        | "glow_runtime"
        | "mtia_ccp_events"
        | "hpu_op"
        | "Python function"
        | "Python"
        | "ac2g"
        | "async"
        | "fwdbwd" => Class::Ignored,
        _ => Class::Unknown,
    }
}

/// Categories whose events the reader never uses, whatever their phase: read past
/// without looking inside.
pub(crate) fn skippable(cat: &str) -> bool {
    matches!(cat, "Python function" | "cuda_profiler_range" | "fwdbwd")
}

/// The prefix of `python_function` frames that are `nn.Module` calls.
pub(crate) const MODULE_PREFIX: &str = "nn.Module: ";

/// For categories whose events the model keeps by name only: whether an event with this
/// `name` is kept (`Some(true)` while the name is not read yet). `None` for the other
/// categories.
pub(crate) fn keep_named(cat: &str, name: Option<&str>) -> Option<bool> {
    match cat {
        "python_function" => Some(name.is_none_or(|n| n.starts_with(MODULE_PREFIX))),
        "cpu_instant_event" => Some(name.is_none_or(|n| n == "[memory]")),
        _ => None,
    }
}

/// Flow categories that link a launch to its GPU activity.
fn is_launch_flow(cat: &str) -> bool {
    matches!(cat, "ac2g" | "async")
}

/// The events of one stretch of `traceEvents`, in file order.
#[derive(Debug, Default)]
pub(crate) struct Partial {
    pub ops: Vec<CpuOp>,
    pub runtimes: Vec<Runtime>,
    pub gpu: Vec<GpuEvent>,
    pub flow_starts: Vec<FlowEnd>,
    pub flow_ends: Vec<FlowEnd>,
    pub annotations: Vec<Annotation>,
    pub syncs: Vec<SyncEvent>,
    pub modules: Vec<ModuleCall>,
    pub memory: Vec<MemoryEvent>,
    pub warnings: Warnings,
    pub legacy_events: u64,
    pub current_events: u64,
    pub events: u64,
    /// Distinct op argument lists seen in this stretch, by their raw JSON text (ops
    /// share them).
    args_pool: FxMap<Box<[u8]>, Arc<OpArgs>>,
    /// The argument lists of every stretch of the file, consulted when this stretch's
    /// pool has no copy: each list is parsed once per file, not once per stretch.
    shared_args: Option<Arc<SharedArgs>>,
    /// One shared copy of each GPU activity and runtime call name in this stretch (a
    /// trace launches the same few hundred kernels, with names of hundreds of bytes,
    /// through a few runtime calls, over and over).
    names: FxSet<Arc<str>>,
    /// One shared copy of each GPU activity's launch configuration in this stretch.
    launches: LaunchPool,
    /// The lookup key being built (reused to avoid an allocation per op).
    key: Vec<u8>,
    /// While the argument texts lie in one buffer that does not change
    /// ([`Partial::texts_fixed`]): the argument lists by where their texts are. The
    /// scanner hands an op the texts of an earlier call when the bytes repeat them,
    /// so most ops are found here without their texts being hashed.
    by_place: Option<FxMap<[usize; 4], Arc<OpArgs>>>,
    /// Likewise the shared names ([`Partial::shared_name`]) by where their texts are
    /// (the scanner hands a repeated name the text of its earlier event).
    names_by_place: Option<FxMap<(usize, usize), Arc<str>>>,
}

/// Op argument lists parsed by any stretch of one file, by their raw JSON text.
pub(crate) type SharedArgs = std::sync::Mutex<FxMap<Box<[u8]>, Arc<OpArgs>>>;

/// The most argument lists [`SharedArgs`] holds (a step repeats tens to hundreds).
const SHARED_ARGS: usize = 1 << 14;

/// Keeps `value` at `place` in a map of texts by place, while there is one (started
/// over beyond [`SHARED_ARGS`] entries).
fn remember_at<K: std::hash::Hash + Eq, V: Clone>(
    map: &mut Option<FxMap<K, V>>,
    place: K,
    value: &V,
) {
    if let Some(m) = map {
        if m.len() >= SHARED_ARGS {
            m.clear();
        }
        m.insert(place, value.clone());
    }
}

/// Moves `from`'s elements to the end of `into`: without a copy when `into` is empty
/// and has no more room than `from` (the first stretch appended to a new sink).
fn join<T>(into: &mut Vec<T>, from: &mut Vec<T>) {
    if into.is_empty() && into.capacity() <= from.capacity() {
        std::mem::swap(into, from);
    } else {
        into.append(from);
    }
}

impl Partial {
    /// The shared copy of a GPU activity's or runtime call's name.
    fn shared_name(&mut self, name: &str) -> Arc<str> {
        if let Some(n) = self.names.get(name) {
            return Arc::clone(n);
        }
        let n: Arc<str> = name.into();
        self.names.insert(Arc::clone(&n));
        n
    }

    /// Whether argument texts lie, from now on, in one buffer that does not change
    /// while they are read (`true`), or may not (`false`, and forgets the texts'
    /// places): the same place then holds the same text ([`Partial::intern`]).
    pub fn texts_fixed(&mut self, fixed: bool) {
        self.by_place = fixed.then(FxMap::default);
        self.names_by_place = fixed.then(FxMap::default);
    }

    /// [`Partial::shared_name`] of an event's name (`""` when it has none): looked up
    /// by where its text lies when borrowed from the buffer while that does not change.
    fn shared_event_name(&mut self, name: Option<&Cow<'_, str>>) -> Arc<str> {
        let Some(Cow::Borrowed(text)) = name else {
            return self.shared_name(name.map_or("", |n| n.as_ref()));
        };
        // A borrowed text is a whole string's content: where it starts and its length
        // say which.
        let place = (text.as_ptr() as usize, text.len());
        if let Some(n) = self.names_by_place.as_ref().and_then(|m| m.get(&place)) {
            return Arc::clone(n);
        }
        let n = self.shared_name(text);
        remember_at(&mut self.names_by_place, place, &n);
        n
    }

    /// One shared copy of each distinct argument list, parsed once.
    fn intern(&mut self, shapes: &[Option<&str>; 4]) -> Arc<OpArgs> {
        let Some(by_place) = &self.by_place else { return self.intern_text(shapes) };
        // A list's text is one JSON value: where it starts says where it ends. No text
        // starts at address 0: a missing list is told from any text.
        let place = shapes.map(|s| s.map_or(0, |s| s.as_ptr() as usize));
        if let Some(a) = by_place.get(&place) {
            return Arc::clone(a);
        }
        let a = self.intern_text(shapes);
        remember_at(&mut self.by_place, place, &a);
        a
    }

    /// [`Partial::intern`] by the lists' texts.
    fn intern_text(&mut self, shapes: &[Option<&str>; 4]) -> Arc<OpArgs> {
        self.key.clear();
        for s in shapes {
            // 0xff never occurs in UTF-8 text: an unambiguous separator.
            self.key.extend_from_slice(s.map_or(&b""[..], str::as_bytes));
            self.key.push(0xff);
        }
        if let Some(a) = self.args_pool.get(&self.key[..]) {
            return Arc::clone(a);
        }
        let a = match &self.shared_args {
            Some(shared) => {
                let mut shared = shared.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                if let Some(a) = shared.get(&self.key[..]) {
                    Arc::clone(a)
                } else {
                    let a = Arc::new(op_args(shapes));
                    // Bounded: a trace whose every op has new shapes keeps its lists
                    // per stretch only, as before.
                    if shared.len() < SHARED_ARGS {
                        shared.insert(self.key.clone().into_boxed_slice(), Arc::clone(&a));
                    }
                    a
                }
            }
            None => Arc::new(op_args(shapes)),
        };
        self.args_pool.insert(self.key.clone().into_boxed_slice(), Arc::clone(&a));
        a
    }

    /// Empties the scratch space of [`Partial::intern_text`] (its last key), which the
    /// tests' comparisons of whole partials should not see: which lists are looked up
    /// by text depends on the scanner's memo, not on the events.
    #[cfg(test)]
    pub(crate) fn forget_scratch(&mut self) {
        self.key.clear();
    }

    /// A stretch's empty partial whose op argument lists are shared with the other
    /// stretches' through `shared`.
    pub fn sharing_args(shared: &Arc<SharedArgs>) -> Partial {
        Partial { shared_args: Some(Arc::clone(shared)), ..Partial::default() }
    }

    /// Room for the events of `parts`, appended next: each is then copied once, into
    /// vectors allocated once, rather than into vectors that grow by doubling.
    pub fn reserve_for<'p>(&mut self, parts: impl IntoIterator<Item = &'p Partial>) {
        self.reserve_scaled(parts, 1.0);
    }

    /// [`Partial::reserve_for`] `scale` times the events of `parts` (an estimate of
    /// what is still to come from a sample of it).
    pub fn reserve_scaled<'p>(&mut self, parts: impl IntoIterator<Item = &'p Partial>, scale: f64) {
        self.reserve_counts(Partial::lens_of(parts), scale);
    }

    /// The events of each kind in all of `parts` ([`Partial::lens`]' order).
    pub fn lens_of<'p>(parts: impl IntoIterator<Item = &'p Partial>) -> [usize; 9] {
        let mut n = [0usize; 9];
        for p in parts {
            for (total, len) in n.iter_mut().zip(p.lens()) {
                *total += len;
            }
        }
        n
    }

    /// The number of events of each kind, in [`Partial::reserve_counts`]'s order.
    pub fn lens(&self) -> [usize; 9] {
        [
            self.ops.len(),
            self.runtimes.len(),
            self.gpu.len(),
            self.flow_starts.len(),
            self.flow_ends.len(),
            self.annotations.len(),
            self.syncs.len(),
            self.modules.len(),
            self.memory.len(),
        ]
    }

    /// Room for `scale` times `n` more events of each kind ([`Partial::lens`]' order).
    pub fn reserve_counts(&mut self, n: [usize; 9], scale: f64) {
        // Rounded up. An estimate is only a hint: one too small means the vectors grow,
        // and room that cannot be had (an estimate far too large) is not reserved.
        let n = n.map(|k| (k as f64 * scale).ceil() as usize);
        let _ = self.ops.try_reserve(n[0]);
        let _ = self.runtimes.try_reserve(n[1]);
        let _ = self.gpu.try_reserve(n[2]);
        let _ = self.flow_starts.try_reserve(n[3]);
        let _ = self.flow_ends.try_reserve(n[4]);
        let _ = self.annotations.try_reserve(n[5]);
        let _ = self.syncs.try_reserve(n[6]);
        let _ = self.modules.try_reserve(n[7]);
        let _ = self.memory.try_reserve(n[8]);
    }

    /// Appends `other` (the stretch after this one).
    pub fn append(&mut self, mut other: Partial) {
        self.take_counts(&mut other);
        self.append_events(other);
    }

    /// Takes `other`'s warnings and counts (the stretch after this one), leaving its
    /// events: the streaming reader needs the counts and warnings at once, and appends
    /// the events later ([`Partial::append_events`]), while the next batch is parsed.
    pub fn take_counts(&mut self, other: &mut Partial) {
        self.warnings.merge(std::mem::take(&mut other.warnings));
        self.legacy_events += std::mem::take(&mut other.legacy_events);
        self.current_events += std::mem::take(&mut other.current_events);
        self.events += std::mem::take(&mut other.events);
    }

    /// Appends `other`'s events; its warnings and counts must have been taken
    /// ([`Partial::take_counts`]).
    pub fn append_events(&mut self, mut other: Partial) {
        debug_assert_eq!(other.events, 0, "counts taken first");
        join(&mut self.ops, &mut other.ops);
        join(&mut self.runtimes, &mut other.runtimes);
        join(&mut self.gpu, &mut other.gpu);
        join(&mut self.flow_starts, &mut other.flow_starts);
        join(&mut self.flow_ends, &mut other.flow_ends);
        join(&mut self.annotations, &mut other.annotations);
        join(&mut self.syncs, &mut other.syncs);
        join(&mut self.modules, &mut other.modules);
        join(&mut self.memory, &mut other.memory);
        // Later stretches keep sharing within themselves; merging pools is not needed.
        other.args_pool.clear();
        other.names.clear();
    }

    /// Counts an element of `traceEvents` that is not an object.
    pub fn not_an_object(&mut self, offset: usize) {
        self.events += 1;
        self.warnings.add("bad_event", Some(offset), || {
            "an element of `traceEvents` is not an object: skipped".to_string()
        });
    }

    /// Sorts one event into its vector. `offset` is where its `{` is.
    pub fn push(&mut self, ev: &mut Event<'_>, offset: usize) {
        self.events += 1;
        match ev.ph {
            Phase::Complete => self.complete(ev, offset),
            Phase::FlowStart | Phase::FlowEnd | Phase::FlowStep => self.flow(ev, offset),
            Phase::BeginEnd => self.warnings.add("unsupported_phase", Some(offset), || {
                "a `B`/`E` event (Kineto writes complete `X` events): skipped".to_string()
            }),
            Phase::Instant => self.instant(ev),
            Phase::Other => {}
            Phase::Missing => self.warnings.add("missing_field", Some(offset), || {
                "an event without `ph`: skipped".to_string()
            }),
        }
    }

    fn flow(&mut self, ev: &Event<'_>, offset: usize) {
        let Some(cat) = ev.cat.as_deref() else { return };
        if !is_launch_flow(cat) {
            return;
        }
        let (Some(id), Some(pid), Some(tid), Some(Ok(ts_ns))) = (ev.id, ev.pid, ev.tid, ev.ts_ns)
        else {
            self.warnings.add("missing_field", Some(offset), || {
                format!(
                    "a `{cat}` flow event without `id`, `pid`, `tid` or a numeric `ts`: skipped"
                )
            });
            return;
        };
        let end = FlowEnd { id, pid, tid, ts_ns };
        match ev.ph {
            Phase::FlowStart => self.flow_starts.push(end),
            Phase::FlowEnd => self.flow_ends.push(end),
            _ => {}
        }
    }

    /// An instant event: the allocator's `[memory]` events are kept (the reader skips
    /// other `cpu_instant_event`s); anything incomplete is left out silently, as the
    /// other instants are.
    fn instant(&mut self, ev: &Event<'_>) {
        if ev.cat.as_deref() != Some("cpu_instant_event") || ev.name.as_deref() != Some("[memory]")
        {
            return;
        }
        let (Some(Ok(ts_ns)), Some(bytes)) = (ev.ts_ns, ev.args.mem_bytes) else { return };
        let a = &ev.args;
        self.memory.push(MemoryEvent {
            ts_ns,
            pid: ev.pid.unwrap_or_default(),
            tid: ev.tid.unwrap_or_default(),
            bytes,
            addr: a.addr,
            total_allocated: a.total_allocated,
            total_reserved: a.total_reserved,
            device_type: a.device_type,
            device_id: a.device_id,
        });
    }

    fn complete(&mut self, ev: &mut Event<'_>, offset: usize) {
        let Some(cat) = ev.cat.as_deref() else {
            self.warnings.add("unknown_category", Some(offset), || {
                "an `X` event without `cat`: skipped".to_string()
            });
            return;
        };
        let class = classify(cat);
        // Python frames other than `nn.Module` calls were skipped while reading; one
        // without a name is left out silently, as they are.
        if class == Class::Module && ev.name.is_none() {
            return;
        }
        match class {
            Class::Ignored => return,
            Class::Unknown => {
                self.warnings.add("unknown_category", Some(offset), || {
                    format!("events of category `{cat}` are not read: skipped")
                });
                return;
            }
            Class::Op { legacy: true }
            | Class::Runtime { legacy: true }
            | Class::Gpu { legacy: true, .. } => self.legacy_events += 1,
            _ => self.current_events += 1,
        }
        let Some(name) = ev.name.as_deref() else {
            self.warnings.add("missing_field", Some(offset), || {
                format!("a `{cat}` event without `name`: skipped")
            });
            return;
        };
        let (ts_ns, dur_ns) = match (ev.ts_ns, ev.dur_ns) {
            (Some(Ok(ts)), Some(Ok(dur))) => (ts, dur),
            (None, _) | (_, None) => {
                self.warnings.add("missing_field", Some(offset), || {
                    let which = if ev.ts_ns.is_none() { "ts" } else { "dur" };
                    format!("`{name}` ({cat}) has no `{which}`: skipped")
                });
                return;
            }
            (Some(ts), Some(dur)) => {
                // Not both read (the first arm): `ts` when it failed, else `dur`.
                let (field, why) = match ts {
                    Err(why) => ("ts", why),
                    Ok(_) => ("dur", dur.err().unwrap_or(BadTime::NotANumber)),
                };
                self.warnings.add("bad_timestamp", Some(offset), || match why {
                    BadTime::NotANumber => {
                        format!("`{name}` ({cat}) has a `{field}` that is not a number: skipped")
                    }
                    BadTime::OutOfRange => format!(
                        "`{name}` ({cat}) has a `{field}` that is a number but out of range \
                         (beyond the ±292 years that nanoseconds in 64 bits hold): skipped"
                    ),
                });
                return;
            }
        };
        if dur_ns < 0 {
            self.warnings.add("negative_duration", Some(offset), || {
                format!("`{name}` ({cat}) has a negative duration ({dur_ns} ns): skipped")
            });
            return;
        }
        let args = &mut ev.args;
        match class {
            Class::Op { legacy } => {
                let (Some(pid), Some(tid)) = (ev.pid, ev.tid) else {
                    self.missing_thread(name, cat, offset);
                    return;
                };
                // The legacy schema recorded profiler steps as operators; the current
                // one as `user_annotation`. Keep them where the current schema puts them.
                if legacy && name.starts_with("ProfilerStep#") {
                    self.annotations.push(Annotation {
                        name: name.to_string(),
                        ts_ns,
                        dur_ns,
                        on_gpu: false,
                    });
                    return;
                }
                let op_args = self.intern(&args.shapes);
                let name = self.shared_event_name(ev.name.as_ref());
                self.ops.push(CpuOp {
                    name,
                    ts_ns,
                    dur_ns,
                    pid,
                    tid,
                    external_id: args.external_id,
                    seq: args.ev_idx.or(args.record_function_id),
                    sequence_number: args.sequence_number,
                    args: op_args,
                    parent: None,
                    children: Vec::new(),
                    launched: Vec::new(),
                    comm: args.comm.take(),
                });
            }
            Class::Runtime { .. } => {
                let (Some(pid), Some(tid)) = (ev.pid, ev.tid) else {
                    self.missing_thread(name, cat, offset);
                    return;
                };
                let name = self.shared_event_name(ev.name.as_ref());
                self.runtimes.push(Runtime {
                    name,
                    pid,
                    tid,
                    ts_ns,
                    dur_ns,
                    correlation: args.correlation,
                    external_id: args.external_id,
                    grid: args.grid,
                    block: args.block,
                    shared_memory: args.shared_memory,
                    bytes: args.bytes,
                });
            }
            Class::Gpu { kind, .. } => {
                let (Some(device), Some(stream)) = (args.device.or(ev.pid), args.stream.or(ev.tid))
                else {
                    self.warnings.add("missing_field", Some(offset), || {
                        format!("`{name}` ({cat}) has neither `pid`/`tid` nor `device`/`stream`: skipped")
                    });
                    return;
                };
                let name = self.shared_event_name(ev.name.as_ref());
                self.gpu.push(GpuEvent {
                    kind,
                    name,
                    ts_ns,
                    dur_ns,
                    device,
                    stream,
                    correlation: args.correlation,
                    external_id: args.external_id,
                    launch: self.launches.get(LaunchDims {
                        grid: args.grid,
                        block: args.block,
                        shared_memory_bytes: args.shared_memory,
                        registers_per_thread: args.registers_per_thread,
                    }),
                    bytes: args.bytes,
                    launcher: None,
                    op: None,
                    runtime: None,
                    comm: args.comm.take(),
                });
            }
            Class::Annotation { on_gpu } => self.annotations.push(Annotation {
                name: into_string(ev.name.take()),
                ts_ns,
                dur_ns,
                on_gpu,
            }),
            Class::Sync => {
                let kind = match name {
                    "Context Sync" => SyncKind::Context,
                    "Stream Sync" => SyncKind::Stream,
                    "Event Sync" => SyncKind::Event,
                    "Stream Wait Event" => SyncKind::StreamWaitEvent,
                    _ => SyncKind::Other,
                };
                self.syncs.push(SyncEvent {
                    kind,
                    ts_ns,
                    dur_ns,
                    device: args.device.or(ev.pid).unwrap_or_default(),
                    stream: args.stream.or(ev.tid).unwrap_or(-1),
                    correlation: args.correlation,
                    wait_on_stream: args.wait_on_stream,
                    wait_on_record_correlation: args.wait_on_record,
                    runtime: None,
                });
            }
            Class::Module => {
                let (Some(pid), Some(tid)) = (ev.pid, ev.tid) else {
                    self.missing_thread(name, cat, offset);
                    return;
                };
                let short = name.strip_prefix(MODULE_PREFIX).unwrap_or(name);
                self.modules.push(ModuleCall { name: short.to_string(), ts_ns, dur_ns, pid, tid });
            }
            Class::Ignored | Class::Unknown => {}
        }
    }

    fn missing_thread(&mut self, name: &str, cat: &str, offset: usize) {
        self.warnings.add("missing_field", Some(offset), || {
            format!("`{name}` ({cat}) has no `pid` or `tid`: skipped")
        });
    }
}

fn into_string(s: Option<Cow<'_, str>>) -> String {
    s.map(Cow::into_owned).unwrap_or_default()
}
