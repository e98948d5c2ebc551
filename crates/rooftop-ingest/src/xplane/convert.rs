//! XSpace → `TraceModel` (with its `XlaInfo`): device activities, XLA op executions,
//! devices, host threads, step markers, modules.
//!
//! - Planes: `/device:GPU:N` (also `/device:TPU:N`, `/device:ROCM:N`) are devices;
//!   `/device:CUSTOM:*`, `/host:metadata` and `Task Environment` are not. Every other
//!   `/host:*` plane holds host threads, whose events with a `correlation_id` are the
//!   runtime calls that launched device work (`cuLaunchKernel`, `hipModuleLaunchKernel`).
//! - Device activities are the events of a device's `Stream #N...` lines; lines XProf
//!   derives (`XLA Modules`, `XLA Ops`, `Steps`, `Framework Ops`, `Launch Stats`, ...) are
//!   not activities, except that a device with no stream line at all (TPU) uses its
//!   `XLA Ops` line.
//! - Stats are resolved from the event's metadata first, then the event (the event
//!   wins); string stats may be interned (`ref_value` → the name of that stat
//!   metadata).
//! - Times: `line.timestamp_ns * 1000 + offset_ps` in ps, converted to whole ns by
//!   flooring start and end, so ends stay consistent; durations are never negative.
//! - An XLA op execution is a maximal run of consecutive activities on one (device,
//!   stream) with the same (module, `hlo_op`, module execution). Module executions come
//!   from `run_id` stats, else from the host's `<module>:XLA GPU module` spans containing
//!   the launch (found by correlation id), else restart when the module's first op recurs.
//!
//! Arithmetic on file values is checked or saturating: no input makes this panic.

use super::hlo;
use super::proto::{
    decode_event, line_event_bytes, x_event, DecodeFailure, EventHead, StatRef, StatValue, XEvent,
    XLineHead, XPlaneLazy, XSpaceLazy, XStat,
};
use prost::Message;
use rayon::prelude::*;
use rooftop_core::trace::model::{
    Annotation, CpuOp, Dims, GpuEvent, GpuKind, LaunchDims, LaunchPool, OpArgs, TraceDevice,
    TraceModel, TraceWarning,
};
use rooftop_core::trace::xla::hlo::HloInstr;
use rooftop_core::trace::xla::{
    HostThread, StepMarker, XlaDevice, XlaInfo, XlaModule, XlaOp, XplaneLayout,
};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

/// A resolved stat value.
#[derive(Clone, Copy, Debug)]
enum Val<'a> {
    Str(&'a str),
    Int(i64),
    Uint(u64),
    Float(f64),
    Bytes(&'a [u8]),
}

impl<'a> Val<'a> {
    fn str(self) -> Option<&'a str> {
        match self {
            Val::Str(s) => Some(s),
            _ => None,
        }
    }

    fn int(self) -> Option<i64> {
        match self {
            Val::Int(i) => Some(i),
            Val::Uint(u) => i64::try_from(u).ok(),
            Val::Float(f) if f.is_finite() && f.fract() == 0.0 && f.abs() < 9.0e18 => {
                Some(f as i64)
            }
            Val::Str(s) => s.trim().parse().ok(),
            _ => None,
        }
    }

    fn float(self) -> Option<f64> {
        match self {
            Val::Int(i) => Some(i as f64),
            Val::Uint(u) => Some(u as f64),
            Val::Float(f) if f.is_finite() => Some(f),
            Val::Str(s) => s.trim().parse().ok(),
            _ => None,
        }
    }
}

/// A map keyed by metadata id: a vector where the ids are dense (as the profiler writes
/// them, 1, 2, 3, ...), a hash map for the rest.
struct IdMap<T> {
    dense: Vec<Option<T>>,
    sparse: HashMap<i64, T, foldhash::fast::RandomState>,
}

impl<T> IdMap<T> {
    fn new(items: impl ExactSizeIterator<Item = (i64, T)>) -> IdMap<T> {
        let limit = items.len().saturating_mul(2).saturating_add(64);
        let mut m = IdMap { dense: Vec::new(), sparse: HashMap::default() };
        for (id, v) in items {
            match usize::try_from(id).ok().filter(|&i| i < limit) {
                Some(i) => {
                    if m.dense.len() <= i {
                        m.dense.resize_with(i + 1, || None);
                    }
                    m.dense[i] = Some(v);
                }
                None => {
                    m.sparse.insert(id, v);
                }
            }
        }
        m
    }

    #[inline]
    fn get(&self, id: i64) -> Option<&T> {
        match usize::try_from(id) {
            Ok(i) if i < self.dense.len() => self.dense[i].as_ref(),
            _ => self.sparse.get(&id),
        }
    }
}

/// The stats the analysis reads, by the name of their stat metadata.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum StatKind {
    HloOp,
    HloModule,
    ProgramId,
    CorrelationId,
    KernelDetails,
    Name,
    TfOp,
    RunId,
    MemcpyDetails,
    MemsetDetails,
    Flops,
    BytesAccessed,
    StepNum,
    ModuleName,
    Other,
}

impl StatKind {
    fn of(name: &str) -> StatKind {
        match name {
            "hlo_op" => StatKind::HloOp,
            "hlo_module" => StatKind::HloModule,
            "program_id" => StatKind::ProgramId,
            "correlation_id" => StatKind::CorrelationId,
            "kernel_details" => StatKind::KernelDetails,
            "name" | "long_name" => StatKind::Name,
            "tf_op" => StatKind::TfOp,
            "run_id" => StatKind::RunId,
            "memcpy_details" => StatKind::MemcpyDetails,
            "Memset_details" | "memset_details" => StatKind::MemsetDetails,
            "flops" | "model_flops" => StatKind::Flops,
            "bytes_accessed" => StatKind::BytesAccessed,
            "step_num" | "iter_num" => StatKind::StepNum,
            "module_name" => StatKind::ModuleName,
            _ => StatKind::Other,
        }
    }
}

/// An event metadata resolved once per plane: the event name and the stats it carries.
struct EvMeta<'a> {
    name: &'a str,
    stats: EvStats<'a>,
}

/// A plane with its metadata indexed once (stat names and kinds, event names and their
/// metadata's stats); its lines are decoded one at a time.
struct Plane<'a> {
    p: &'a XPlaneLazy,
    /// Stat metadata id → (name, kind).
    stat_meta: IdMap<(&'a str, StatKind)>,
    events: IdMap<EvMeta<'a>>,
    /// Told the bytes of each stretch of a line whose events have been read.
    release: &'a (dyn Fn(&[u8]) + Sync),
}

impl<'a> Plane<'a> {
    fn new(p: &'a XPlaneLazy, release: &'a (dyn Fn(&[u8]) + Sync)) -> Plane<'a> {
        let stat_meta = IdMap::new(
            p.stat_metadata.iter().map(|(&id, m)| (id, (m.name.as_str(), StatKind::of(&m.name)))),
        );
        let mut pl = Plane { p, stat_meta, events: IdMap::new(std::iter::empty()), release };
        let events = IdMap::new(p.event_metadata.iter().map(|(&id, m)| {
            let mut stats = EvStats::default();
            for st in &m.stats {
                if let Some(v) = st.value.as_ref() {
                    if let Some((kind, v)) = pl.resolve(st.metadata_id, StatValue::of(v)) {
                        stats.set(kind, v, true);
                    }
                }
            }
            let name = if m.display_name.is_empty() { m.name.as_str() } else { &m.display_name };
            (id, EvMeta { name, stats })
        }));
        pl.events = events;
        pl
    }

    /// Each line's head (events skipped) with its encoded bytes, in turn.
    fn lines(
        &self,
    ) -> impl Iterator<Item = Result<(XLineHead, &'a bytes::Bytes), DecodeFailure>> + 'a {
        self.p
            .lines
            .iter()
            .map(|b| XLineHead::decode_line(b).map(|h| (h, b)).map_err(DecodeFailure::from))
    }

    /// The kind and value of a stat; `None` when its metadata is unknown or a reference
    /// does not resolve.
    #[inline]
    fn resolve<'b>(&self, metadata_id: i64, v: StatValue<'b>) -> Option<(StatKind, Val<'b>)>
    where
        'a: 'b,
    {
        let &(_, kind) = self.stat_meta.get(metadata_id)?;
        let v = match v {
            StatValue::Double(f) => Val::Float(f),
            StatValue::Uint64(u) => Val::Uint(u),
            StatValue::Int64(i) => Val::Int(i),
            StatValue::Str(s) => Val::Str(s),
            StatValue::Bytes(b) => Val::Bytes(b),
            StatValue::Ref(r) => Val::Str(self.stat_meta.get(i64::try_from(r).ok()?)?.0),
        };
        Some((kind, v))
    }

    /// The name and value of a decoded stat (plane and metadata stats).
    fn stat<'b>(&'b self, s: &'b XStat) -> Option<(&'b str, Val<'b>)> {
        let &(name, _) = self.stat_meta.get(s.metadata_id)?;
        let (_, v) = self.resolve(s.metadata_id, StatValue::of(s.value.as_ref()?))?;
        Some((name, v))
    }

    /// Name and stats of an event: its metadata's, then its own (which win).
    #[inline]
    fn event<'b>(&self, metadata_id: i64, stats: &[StatRef<'b>]) -> (&'a str, EvStats<'b>)
    where
        'a: 'b,
    {
        let (name, mut s) = match self.events.get(metadata_id) {
            Some(m) => (m.name, m.stats),
            None => ("", EvStats::default()),
        };
        for st in stats {
            if let Some((kind, v)) = st.value.and_then(|v| self.resolve(st.metadata_id, v)) {
                s.set(kind, v, false);
            }
        }
        (name, s)
    }

    /// [`Plane::event`] for a host line, which reads only the name, the correlation id
    /// and the step number: the same values, without resolving the other stats.
    #[inline]
    fn host_event(&self, metadata_id: i64, stats: &[StatRef<'_>]) -> HostEvent<'a> {
        let mut ev = match self.events.get(metadata_id) {
            Some(m) => HostEvent {
                name: m.name,
                correlation_id: m.stats.correlation_id,
                step_num: m.stats.step_num,
            },
            None => HostEvent { name: "", correlation_id: None, step_num: None },
        };
        for st in stats {
            let Some(v) = st.value else { continue };
            let slot = match self.stat_meta.get(st.metadata_id) {
                Some(&(_, StatKind::CorrelationId)) => &mut ev.correlation_id,
                Some(&(_, StatKind::StepNum)) => &mut ev.step_num,
                _ => continue,
            };
            if let Some((_, v)) = self.resolve(st.metadata_id, v) {
                *slot = v.int().or(*slot);
            }
        }
        ev
    }

    /// The name of an event's metadata (empty when unknown), as [`Plane::event`] gives it.
    fn event_name(&self, metadata_id: i64) -> &'a str {
        self.events.get(metadata_id).map_or("", |m| m.name)
    }

    fn plane_stats(&self) -> HashMap<&str, Val<'_>> {
        self.p.stats.iter().filter_map(|s| self.stat(s)).collect()
    }
}

/// What a host line's reading takes from an event ([`Plane::host_event`]).
struct HostEvent<'a> {
    name: &'a str,
    correlation_id: Option<i64>,
    step_num: Option<i64>,
}

/// The events of one encoded line, decoded in turn without allocating: the fast path of
/// [`decode_event`], and `prost` for what it leaves (which also gives the error). Every
/// 16 MiB read, and at the end, the bytes read are handed to the plane's `release`.
struct LineEvents<'a> {
    line: &'a [u8],
    release: &'a (dyn Fn(&[u8]) + Sync),
}

impl<'a> LineEvents<'a> {
    fn new(pl: &Plane<'a>, line: &'a [u8]) -> LineEvents<'a> {
        LineEvents { line, release: pl.release }
    }

    /// Calls `f` with the head and stats of every event, in order; stops at the first
    /// error of either.
    fn each(
        self,
        mut f: impl FnMut(&EventHead, &[StatRef<'_>]) -> Result<(), DecodeFailure>,
    ) -> Result<(), DecodeFailure> {
        const STRETCH: usize = 16 << 20;
        let mut stats: Vec<StatRef<'a>> = Vec::new();
        let base = self.line.as_ptr() as usize;
        let mut released = 0usize;
        for bytes in line_event_bytes(self.line) {
            let bytes = bytes?;
            let done = (bytes.as_ptr() as usize - base).min(self.line.len());
            if done - released >= STRETCH {
                (self.release)(&self.line[released..done]);
                released = done;
            }
            if let Some(head) = decode_event(bytes, &mut stats) {
                f(&head, &stats)?;
            } else {
                let owned = XEvent::decode(bytes)?;
                let mut owned_stats = Vec::new();
                let head = EventHead::of(&owned, &mut owned_stats);
                f(&head, &owned_stats)?;
            }
        }
        (self.release)(&self.line[released..]);
        Ok(())
    }
}

/// The stats the analysis reads.
#[derive(Default, Debug, Clone, Copy)]
struct EvStats<'a> {
    hlo_op: Option<&'a str>,
    hlo_module: Option<&'a str>,
    program_id: Option<i64>,
    correlation_id: Option<i64>,
    kernel_details: Option<&'a str>,
    name: Option<&'a str>,
    tf_op: Option<&'a str>,
    run_id: Option<i64>,
    memcpy_details: Option<&'a str>,
    memset_details: Option<&'a str>,
    flops: Option<f64>,
    bytes_accessed: Option<f64>,
    step_num: Option<i64>,
    module_name: Option<&'a str>,
    /// The `hlo_op` stat was on the event metadata (layout detection).
    hlo_op_on_metadata: bool,
}

impl<'a> EvStats<'a> {
    #[inline]
    fn set(&mut self, kind: StatKind, v: Val<'a>, from_metadata: bool) {
        match kind {
            StatKind::HloOp => {
                self.hlo_op = v.str().or(self.hlo_op);
                self.hlo_op_on_metadata = from_metadata;
            }
            StatKind::HloModule => self.hlo_module = v.str().or(self.hlo_module),
            StatKind::ProgramId => self.program_id = v.int().or(self.program_id),
            StatKind::CorrelationId => self.correlation_id = v.int().or(self.correlation_id),
            StatKind::KernelDetails => self.kernel_details = v.str().or(self.kernel_details),
            StatKind::Name => self.name = v.str().or(self.name),
            StatKind::TfOp => self.tf_op = v.str().or(self.tf_op),
            StatKind::RunId => self.run_id = v.int().or(self.run_id),
            StatKind::MemcpyDetails => self.memcpy_details = v.str().or(self.memcpy_details),
            StatKind::MemsetDetails => self.memset_details = v.str().or(self.memset_details),
            StatKind::Flops => self.flops = v.float().or(self.flops),
            StatKind::BytesAccessed => self.bytes_accessed = v.float().or(self.bytes_accessed),
            StatKind::StepNum => self.step_num = v.int().or(self.step_num),
            StatKind::ModuleName => self.module_name = v.str().or(self.module_name),
            StatKind::Other => {}
        }
    }
}

/// Counted problems, first example kept.
#[derive(Default)]
struct Warn {
    map: BTreeMap<&'static str, (u64, String)>,
}

impl Warn {
    fn add(&mut self, kind: &'static str, example: impl FnOnce() -> String) {
        self.add_n(kind, 1, example);
    }

    /// `n` warnings of `kind`; the first example of a kind is kept.
    fn add_n(&mut self, kind: &'static str, n: u64, example: impl FnOnce() -> String) {
        let e = self.map.entry(kind).or_insert_with(|| (0, String::new()));
        if e.0 == 0 {
            e.1 = example();
        }
        e.0 += n;
    }

    /// Adds `later`'s counts; an example of `self` (read first) wins.
    fn append(&mut self, later: Warn) {
        for (kind, (count, example)) in later.map {
            self.add_n(kind, count, || example);
        }
    }

    fn finish(self) -> Vec<TraceWarning> {
        self.map
            .into_iter()
            .map(|(k, (count, example))| TraceWarning { kind: k.to_string(), count, example })
            .collect()
    }
}

/// `/device:GPU:3` → 3 (also `TPU`, `ROCM`); `None` for other planes.
fn device_index(name: &str) -> Option<i64> {
    let rest = name.strip_prefix("/device:")?;
    if rest.starts_with("CUSTOM") {
        return None;
    }
    let (_, n) = rest.split_once(':')?;
    n.trim().parse().ok()
}

/// Lines XProf derives from the activities: not activities themselves.
fn is_derived_line(name: &str) -> bool {
    matches!(
        name,
        "XLA Modules"
            | "XLA Ops"
            | "Async XLA Ops"
            | "Steps"
            | "Framework Name Scope"
            | "Framework Ops"
            | "Source code"
            | "Launch Stats"
            | "CUPTI overhead"
            | "Host Offload Ops"
            | "_counters_"
            | "XLA TraceMe"
    ) || name.starts_with("Sparse Core")
        || name.starts_with("Tensor Core")
}

/// Start and duration in ns of an event on a line starting at `line_ns`; `None` for
/// aggregated events or times out of range.
fn times(line_ns: i64, e: &EventHead) -> Option<(i64, i64)> {
    let Some(x_event::Data::OffsetPs(off)) = e.data else { return None };
    // In 64 bits when nothing overflows (a 128-bit division per event was 3% of a
    // profile's read); the same values as the 128-bit sums below, which take the rest.
    let dur = e.duration_ps.max(0);
    let narrow = line_ns
        .checked_mul(1000)
        .and_then(|l| l.checked_add(off))
        .and_then(|start| Some((start.div_euclid(1000), start.checked_add(dur)?.div_euclid(1000))));
    if let Some((ts, end)) = narrow {
        return Some((ts, end.checked_sub(ts)?));
    }
    let start_ps = i128::from(line_ns) * 1000 + i128::from(off);
    let end_ps = start_ps + i128::from(e.duration_ps.max(0));
    let ts = i64::try_from(start_ps.div_euclid(1000)).ok()?;
    let end = i64::try_from(end_ps.div_euclid(1000)).ok()?;
    Some((ts, end.checked_sub(ts)?))
}

/// `grid:32,16,2 block:256,1,1 group_mem:30240 regs:64 static_shared:0 dynamic_shared:0`
/// (CUPTI `regs:.. static_shared:.. dynamic_shared:.. grid:x,y,z block:x,y,z occ_pct:..`,
/// ROCm `grid:.. block:.. private_mem:.. group_mem:.. occ_pct:..`): the grid, the
/// block, the registers and the shared memory (`read_device_events` reads each
/// distinct text once).
fn kernel_details(s: &str) -> LaunchDims {
    let mut dims = LaunchDims::default();
    let mut shared: Option<u64> = None;
    for tok in s.split_whitespace() {
        let Some((k, v)) = tok.split_once(':') else { continue };
        let dim3 = |v: &str| -> Option<[u32; 3]> {
            let mut it = v.split(',').map(|x| x.trim().parse::<u32>().ok());
            Some([it.next()??, it.next().flatten().unwrap_or(1), it.next().flatten().unwrap_or(1)])
        };
        match k {
            "grid" => dims.grid = dim3(v),
            "block" => dims.block = dim3(v),
            "regs" | "registers_per_thread" => dims.registers_per_thread = v.parse().ok(),
            "static_shared" | "dynamic_shared" | "group_mem" | "shm" | "shared_mem" => {
                if let Ok(b) = v.parse::<u64>() {
                    shared = Some(shared.unwrap_or(0).saturating_add(b));
                }
            }
            _ => {}
        }
    }
    dims.shared_memory_bytes = shared;
    dims
}

/// `size:1024` / `num_bytes:1024` in memcpy/memset details.
fn detail_bytes(s: &str) -> Option<u64> {
    s.split_whitespace().find_map(|t| {
        let (k, v) = t.split_once(':')?;
        matches!(k, "size" | "num_bytes").then(|| v.parse().ok()).flatten()
    })
}

/// `gfx950` in a kernel name (`ck_tile::gfx950_t`), when present.
fn llvm_target(name: &str) -> Option<String> {
    let i = name.find("gfx")?;
    let t: String = name[i..].chars().take_while(char::is_ascii_alphanumeric).collect();
    (t.len() >= 6 && t[3..].chars().next().is_some_and(|c| c.is_ascii_digit())).then_some(t)
}

/// `jit_loss_fn(17)` → (`jit_loss_fn`, 17).
fn split_program_id(name: &str) -> (&str, Option<i64>) {
    if let Some(open) = name.rfind('(') {
        if let Some(id) = name[open + 1..].strip_suffix(')').and_then(|s| s.parse().ok()) {
            return (&name[..open], Some(id));
        }
    }
    (name, None)
}

/// One device activity before sorting and grouping.
struct Raw {
    gpu: GpuEvent,
    /// In `Strings`.
    hlo_op: Option<u32>,
    /// Index in `modules`.
    module: Option<u32>,
    run_id: Option<i64>,
    /// In `Strings`.
    framework_op: Option<u32>,
    flops: Option<f64>,
    bytes: Option<f64>,
    /// Start of the launching host call (by correlation id), when the host planes have it.
    launch_ns: Option<i64>,
}

/// Interned op names: one shared copy of each, looked up by content.
#[derive(Default)]
struct Strings {
    index: FastMap<Arc<str>, u32>,
    list: Vec<Arc<str>>,
}

impl Strings {
    fn id(&mut self, s: &str) -> u32 {
        if let Some(&i) = self.index.get(s) {
            return i;
        }
        let i = u32::try_from(self.list.len()).unwrap_or(u32::MAX);
        let shared: Arc<str> = s.into();
        self.list.push(Arc::clone(&shared));
        self.index.insert(shared, i);
        i
    }

    fn get(&self, i: u32) -> &str {
        self.list.get(i as usize).map_or("", |s| s)
    }

    /// The shared copy of string `i`.
    fn shared(&self, i: u32) -> Arc<str> {
        self.list.get(i as usize).map_or_else(|| Arc::from(""), Arc::clone)
    }
}

/// A hash map with a fast, keyed hash (`foldhash`).
type FastMap<K, V> = HashMap<K, V, foldhash::fast::RandomState>;

/// Everything read from the host planes (names borrowed from the planes' metadata).
#[derive(Default)]
struct Host<'a> {
    /// correlation id → (runtime call name, start ns).
    launches: Launches<'a>,
    /// module name → sorted (start, end) of its host-side executions.
    module_spans: FastMap<&'a str, Vec<(i64, i64)>>,
    threads: Vec<HostThread>,
    markers: Vec<StepMarker>,
}

/// Host lines are read in pieces of about this many bytes, on every thread: one line of
/// a JAX profile (the Python thread's) often holds most of the file.
const HOST_PIECE: usize = 4 << 20;

/// A launching call: (correlation id, runtime call name, start ns).
type Launch<'a> = (i64, &'a str, i64);

/// The launching calls by correlation id, the first of each id.
enum Launches<'a> {
    /// Ids `base..base + slots.len()`: profilers number them densely, so most profiles
    /// take this form, a lookup being an index.
    Dense {
        base: i64,
        slots: Vec<Option<(&'a str, i64)>>,
    },
    Map(FastMap<i64, (&'a str, i64)>),
}

impl Default for Launches<'_> {
    fn default() -> Self {
        Launches::Map(FastMap::default())
    }
}

impl<'a> Launches<'a> {
    /// From lists in reading order (the first launch of an id wins).
    fn of(lists: &[Vec<Launch<'a>>]) -> Launches<'a> {
        let all = || lists.iter().flatten();
        let (n, lo, hi) =
            all().fold((0, i64::MAX, i64::MIN), |(n, lo, hi), l| (n + 1, lo.min(l.0), hi.max(l.0)));
        if n == 0 {
            return Launches::default();
        }
        let span = i128::from(hi) - i128::from(lo) + 1;
        if let Some(len) = usize::try_from(span).ok().filter(|&s| s <= 2 * n + 4096) {
            let mut slots = vec![None; len];
            for &(c, name, ts) in all() {
                // `c - lo` is in `0..len`: `lo` and `hi` bound every id.
                if let Some(slot) = slots.get_mut(c.abs_diff(lo) as usize) {
                    slot.get_or_insert((name, ts));
                }
            }
            return Launches::Dense { base: lo, slots };
        }
        let mut map = FastMap::default();
        map.reserve(n);
        for &(c, name, ts) in all() {
            map.entry(c).or_insert((name, ts));
        }
        Launches::Map(map)
    }

    fn get(&self, c: i64) -> Option<(&'a str, i64)> {
        match self {
            Launches::Dense { base, slots } => {
                let i = usize::try_from(i128::from(c) - i128::from(*base)).ok()?;
                slots.get(i).copied().flatten()
            }
            Launches::Map(map) => map.get(&c).copied(),
        }
    }
}

fn read_host<'a>(
    planes: &[&Plane<'a>],
    piece: usize,
    warn: &mut Warn,
) -> Result<Host<'a>, DecodeFailure> {
    // Each line's head and the places it may be cut (one walk over its fields); then the
    // pieces' events, on every thread; then each line from its pieces, in plane and line
    // order, the first failure in that order being the one returned.
    let lines: Vec<(&Plane<'a>, &'a bytes::Bytes)> =
        planes.iter().flat_map(|pl| pl.p.lines.iter().map(move |b| (*pl, b))).collect();
    let heads: Vec<Result<(XLineHead, Vec<usize>), DecodeFailure>> = lines
        .par_iter()
        .map(|&(_, b)| XLineHead::decode_line_cut(b, piece).map_err(DecodeFailure::from))
        .collect();
    let pieces: Vec<(&Plane<'a>, &XLineHead, &'a [u8])> = lines
        .iter()
        .zip(&heads)
        .filter_map(|(&(pl, b), h)| Some((pl, b, h.as_ref().ok()?)))
        .flat_map(|(pl, b, (head, cuts))| pieces_of(b, cuts).map(move |p| (pl, head, p)))
        .collect();
    let read: Vec<Result<HostPiece<'a>, DecodeFailure>> = pieces
        .par_iter()
        .with_max_len(1)
        .map(|&(pl, head, bytes)| read_host_piece(pl, head, bytes))
        .collect();
    drop(pieces);
    let mut read = read.into_iter();
    let mut h = Host::default();
    let mut launches: Vec<Vec<Launch<'a>>> = Vec::new();
    for (&(pl, bytes), head) in lines.iter().zip(heads) {
        let (head, cuts) = head?;
        let mut sweeps = Vec::with_capacity(cuts.len());
        for p in read.by_ref().take(cuts.len()) {
            let p = p?;
            warn.append(p.warn);
            for (m, spans) in p.module_spans {
                h.module_spans.entry(m).or_default().extend(spans);
            }
            h.markers.extend(p.markers);
            launches.push(p.launches);
            sweeps.push(p.sweep);
        }
        let joined = join_sweeps(sweeps, |k, sweep| {
            let piece = pieces_of(bytes, &cuts).nth(k).unwrap_or_default();
            LineEvents::new(pl, piece).each(|e, _| {
                if let Some((ts, dur)) = times(head.timestamp_ns, e) {
                    sweep.push(ts, ts.saturating_add(dur), pl.event_name(e.metadata_id));
                }
                Ok(())
            })
        })?;
        let sweep = match joined {
            Some(s) => s,
            None => sorted_sweep(pl, &head, bytes)?,
        };
        if sweep.events > 0 {
            h.threads.push(sweep.finish(&pl.p.name, head.label()));
        }
    }
    h.launches = Launches::of(&launches);
    for v in h.module_spans.values_mut() {
        v.sort_unstable();
    }
    h.markers.sort_by_key(|m| m.ts_ns);
    Ok(h)
}

/// The pieces of a line between its cuts (the first cut is 0).
fn pieces_of<'a, 'c>(line: &'a [u8], cuts: &'c [usize]) -> impl Iterator<Item = &'a [u8]> + 'c
where
    'a: 'c,
{
    let ends = cuts.iter().skip(1).copied().chain([line.len()]);
    cuts.iter().zip(ends).map(move |(&from, to)| &line[from..to])
}

/// What one piece of a host line adds to [`Host`].
struct HostPiece<'a> {
    launches: Vec<Launch<'a>>,
    module_spans: FastMap<&'a str, Vec<(i64, i64)>>,
    markers: Vec<StepMarker>,
    sweep: PieceSweep<'a>,
    warn: Warn,
}

fn read_host_piece<'a>(
    pl: &Plane<'a>,
    head: &XLineHead,
    bytes: &'a [u8],
) -> Result<HostPiece<'a>, DecodeFailure> {
    let mut h = HostPiece {
        launches: Vec::new(),
        module_spans: FastMap::default(),
        markers: Vec::new(),
        sweep: PieceSweep::new(RAISED),
        warn: Warn::default(),
    };
    LineEvents::new(pl, bytes).each(|e, stats| {
        let Some((ts, dur)) = times(head.timestamp_ns, e) else {
            h.warn.add("aggregated_or_bad_time", || {
                format!("an event on {} / {} has no start time", pl.p.name, head.label())
            });
            return Ok(());
        };
        let HostEvent { name, correlation_id, step_num } = pl.host_event(e.metadata_id, stats);
        if let Some(c) = correlation_id {
            h.launches.push((c, name, ts));
        }
        if let Some(m) = name.strip_suffix(":XLA GPU module") {
            h.module_spans.entry(m).or_default().push((ts, ts.saturating_add(dur)));
        }
        if let Some(step) = step_num {
            h.markers.push(StepMarker {
                name: name.to_string(),
                step: Some(step),
                ts_ns: ts,
                dur_ns: dur,
            });
        }
        h.sweep.push(ts, ts.saturating_add(dur), name);
        Ok(())
    })?;
    Ok(h)
}

/// The summary of a line whose events are out of order: its timed events again, sorted
/// by start, longest first (stable), then swept.
fn sorted_sweep<'a>(
    pl: &Plane<'a>,
    head: &XLineHead,
    bytes: &'a [u8],
) -> Result<Sweep<'a>, DecodeFailure> {
    let mut iv: Vec<(i64, i64, &'a str)> = Vec::new();
    LineEvents::new(pl, bytes).each(|e, _| {
        if let Some((ts, dur)) = times(head.timestamp_ns, e) {
            iv.push((ts, ts.saturating_add(dur), pl.event_name(e.metadata_id)));
        }
        Ok(())
    })?;
    iv.sort_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
    let mut sweep = Sweep::default();
    for &(s, e, n) in &iv {
        sweep.push(s, e, n);
    }
    Ok(sweep)
}

/// Events, busy time and the outermost events' names of one host line, from its events
/// in (start, longest first) order. Sums are exact (`i128`) and end at `i64::MAX`.
#[derive(Default)]
struct Sweep<'a> {
    events: u64,
    busy: i128,
    cur_end: Option<i64>,
    start: i64,
    end: Option<i64>,
    last: Option<(i64, i64)>,
    /// Count and summed duration of the outermost events, by name.
    top: FastMap<ByAddress<'a>, (u64, i128)>,
}

impl<'a> Sweep<'a> {
    /// Takes the next event; `false` (and nothing taken) when it comes before the last.
    fn push(&mut self, s: i64, e: i64, n: &'a str) -> bool {
        if let Some((ls, le)) = self.last {
            if s < ls || (s == ls && e > le) {
                return false;
            }
        } else {
            self.start = s;
        }
        self.last = Some((s, e));
        self.events += 1;
        self.end = Some(self.end.map_or(e, |x| x.max(e)));
        let cur_end = self.cur_end.unwrap_or(i64::MIN);
        if s >= cur_end {
            // An outermost event.
            let dur = i128::from(e) - i128::from(s);
            self.busy += dur;
            let t = self.top.entry(ByAddress(n)).or_default();
            t.0 += 1;
            t.1 += dur;
            self.cur_end = Some(e);
        } else if e > cur_end {
            self.busy += i128::from(e) - i128::from(cur_end);
            self.cur_end = Some(e);
        }
        true
    }

    fn finish(self, plane: &str, name: &str) -> HostThread {
        let ns = |v: i128| i64::try_from(v).unwrap_or(i64::MAX);
        let mut by_name: FastMap<&str, (u64, i128)> = FastMap::default();
        for (n, (c, t)) in self.top {
            let x = by_name.entry(n.0).or_default();
            x.0 += c;
            x.1 += t;
        }
        let mut top: Vec<(String, u64, i64)> =
            by_name.into_iter().map(|(n, (c, t))| (n.to_string(), c, ns(t))).collect();
        top.sort_by(|a, b| b.2.cmp(&a.2).then_with(|| a.0.cmp(&b.0)));
        top.truncate(5);
        HostThread {
            plane: plane.to_string(),
            name: name.to_string(),
            events: self.events,
            busy_ns: ns(self.busy),
            start_ns: self.start,
            end_ns: self.end.unwrap_or(0),
            top,
        }
    }
}

/// A name told apart by where its bytes are, not by what they say: the names of a
/// plane's events are its event metadata's, one copy each, so hashing the address finds
/// them (a host line's counts of the same text at two addresses are added up at the end;
/// a device line looks a new address up by its text).
#[derive(Clone, Copy)]
struct ByAddress<'a>(&'a str);

impl PartialEq for ByAddress<'_> {
    fn eq(&self, other: &Self) -> bool {
        std::ptr::eq(self.0, other.0)
    }
}

impl Eq for ByAddress<'_> {}

impl std::hash::Hash for ByAddress<'_> {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        state.write_usize(self.0.as_ptr() as usize);
        state.write_usize(self.0.len());
    }
}

/// One shared copy of each distinct name of a plane's events: found by the address of
/// the metadata's name first ([`ByAddress`]: the same for every event of one metadata),
/// by its text when that address is new.
#[derive(Default)]
struct SharedNames<'a> {
    by_text: FastMap<&'a str, Arc<str>>,
    by_address: FastMap<ByAddress<'a>, Arc<str>>,
}

impl<'a> SharedNames<'a> {
    /// The shared copy of `name`; `new` is told each text seen for the first time.
    fn get(&mut self, name: &'a str, new: impl FnOnce(&str)) -> Arc<str> {
        let Self { by_text, by_address } = self;
        Arc::clone(by_address.entry(ByAddress(name)).or_insert_with(|| {
            Arc::clone(by_text.entry(name).or_insert_with(|| {
                new(name);
                name.into()
            }))
        }))
    }
}

/// The events that moved a piece's running end are kept up to this many: enough to
/// join a piece cut inside a long event's nest without reading it again.
const RAISED: usize = 4096;

/// One piece of a host line swept as if no event came before it, with what joining it
/// to the pieces before needs ([`join_sweeps`]).
struct PieceSweep<'a> {
    sweep: Sweep<'a>,
    /// An event came before the one ahead of it.
    unsorted: bool,
    first: Option<(i64, i64)>,
    /// The events that were outermost or moved the running end, in order (the first
    /// [`RAISED`]).
    raised: Vec<(i64, i64, &'a str)>,
    /// `raised` left some out.
    cut_short: bool,
    /// How many `raised` keeps.
    keep: usize,
}

impl<'a> PieceSweep<'a> {
    fn new(keep: usize) -> PieceSweep<'a> {
        PieceSweep {
            sweep: Sweep::default(),
            unsorted: false,
            first: None,
            raised: Vec::new(),
            cut_short: false,
            keep,
        }
    }

    fn push(&mut self, s: i64, e: i64, n: &'a str) {
        if self.unsorted {
            return;
        }
        let cur_end = self.sweep.cur_end.unwrap_or(i64::MIN);
        if !self.sweep.push(s, e, n) {
            self.unsorted = true;
            return;
        }
        self.first.get_or_insert((s, e));
        if s >= cur_end || e > cur_end {
            if self.raised.len() < self.keep {
                self.raised.push((s, e, n));
            } else {
                self.cut_short = true;
            }
        }
    }
}

/// The sweep of a line from its pieces' sweeps, in order; `None` when its events are
/// out of order (within a piece or across a cut).
///
/// A piece was swept from nothing, but the events before it leave a running end `c`.
/// The piece's own running end `l` never exceeds the true one, which is `max(c, l)`; so
/// an event that did nothing in the piece does nothing in the line, and once `l ≥ c`
/// both sweeps agree. Before that, the events that moved `l` are swept again both ways
/// and the difference (busy time, outermost names) is applied. When more of them are
/// needed than were kept, `reread(k, sweep)` pushes piece `k`'s events onto the line's
/// sweep itself.
fn join_sweeps<'a>(
    pieces: Vec<PieceSweep<'a>>,
    mut reread: impl FnMut(usize, &mut Sweep<'a>) -> Result<(), DecodeFailure>,
) -> Result<Option<Sweep<'a>>, DecodeFailure> {
    let mut line = Sweep::default();
    for (k, p) in pieces.into_iter().enumerate() {
        if p.unsorted {
            return Ok(None);
        }
        let Some((s0, e0)) = p.first else { continue };
        let Some((ls, le)) = line.last else {
            line = p.sweep;
            continue;
        };
        if s0 < ls || (s0 == ls && e0 > le) {
            return Ok(None);
        }
        let carried = line.cur_end.unwrap_or(i64::MIN);
        // (piece's running end, the line's, busy time: line minus piece, names' changes)
        let (mut l, mut t, mut busy) = (i64::MIN, carried, 0i128);
        let mut top: Vec<(&'a str, i64, i128)> = Vec::new();
        let mut agreed = false;
        for &(s, e, n) in &p.raised {
            let (s128, e128) = (i128::from(s), i128::from(e));
            if s >= l {
                busy -= e128 - s128;
                top.push((n, -1, s128 - e128));
            } else {
                busy -= e128 - i128::from(l);
            }
            l = e;
            if s >= t {
                busy += e128 - s128;
                top.push((n, 1, e128 - s128));
                t = e;
            } else if e > t {
                busy += e128 - i128::from(t);
                t = e;
            }
            if l >= carried {
                agreed = true;
                break;
            }
        }
        if !agreed && p.cut_short {
            reread(k, &mut line)?;
            continue;
        }
        let q = p.sweep;
        line.events += q.events;
        line.busy += q.busy + busy;
        line.end = line.end.max(q.end);
        line.last = q.last;
        line.cur_end = Some(carried.max(q.cur_end.unwrap_or(i64::MIN)));
        for (n, (c, d)) in q.top {
            let x = line.top.entry(n).or_default();
            x.0 += c;
            x.1 += d;
        }
        for (n, c, d) in top {
            let x = line.top.entry(ByAddress(n)).or_default();
            x.0 = x.0.saturating_add_signed(c);
            x.1 += d;
        }
        line.top.retain(|_, x| x.0 > 0);
    }
    Ok(Some(line))
}

/// One execution of an XLA op before it becomes a `CpuOp`: (run, module, `hlo_op`), where
/// it ran, and its activities.
struct Inst {
    /// (run, module, `hlo_op` in `Strings`).
    key: (u32, Option<u32>, u32),
    device: i64,
    stream: i64,
    /// Start of its first activity (the earliest: activities come sorted by start) and
    /// the latest end among them, ns.
    ts_ns: i64,
    end_ns: i64,
    /// What its first activity states: the framework op (in `Strings`), XLA's FLOPs and
    /// bytes.
    framework_op: Option<u32>,
    flops: Option<f64>,
    bytes: Option<f64>,
    events: Vec<u32>,
}

/// What the executions of one op share.
struct Shared {
    /// The instruction, when the module's HLO has it.
    instr: Option<Arc<HloInstr>>,
    args: Arc<OpArgs>,
    /// The op's name in the model (qualified by its module when the name is not unique).
    display: Arc<str>,
    hlo_op: Arc<str>,
    /// The instruction's framework op (its metadata's `op_name`), when stated.
    framework_op: Option<Arc<str>>,
    /// Named after no instruction of its module's HLO, which the profile has.
    not_in_hlo: bool,
}

/// Module interning: (name, program id) → index.
#[derive(Default)]
struct Modules {
    list: Vec<XlaModule>,
    index: FastMap<(String, Option<i64>), u32>,
}

impl Modules {
    fn get(&mut self, name: &str, program_id: Option<i64>) -> u32 {
        let (base, pid) = split_program_id(name);
        let key = (base.to_string(), program_id.or(pid));
        if let Some(&i) = self.index.get(&key) {
            return i;
        }
        let i = u32::try_from(self.list.len()).unwrap_or(u32::MAX);
        self.list.push(XlaModule { name: key.0.clone(), program_id: key.1, has_hlo: false });
        self.index.insert(key, i);
        i
    }
}

/// What the device planes give: modules, interned op names and the activities.
#[derive(Default)]
struct DeviceOut {
    modules: Modules,
    strings: Strings,
    raws: Vec<Raw>,
}

/// Every device plane's events, the devices in plane order and their line layouts.
type Devices = (DeviceOut, Vec<(TraceDevice, XlaDevice)>, Vec<XplaneLayout>);

fn read_devices(planes: &[Plane<'_>], warn: &mut Warn) -> Result<Devices, DecodeFailure> {
    let mut out = DeviceOut::default();
    let mut devices: Vec<(TraceDevice, XlaDevice)> = Vec::new();
    let mut layouts: Vec<XplaneLayout> = Vec::new();
    for pl in planes {
        let Some(index) = device_index(&pl.p.name) else { continue };
        let (layout, target) = read_device_events(pl, index, &mut out, warn)?;
        layouts.extend(layout);
        devices.push(plane_device(pl, index, target.as_deref()));
    }
    Ok((out, devices, layouts))
}

/// The activities of device plane `pl` (device `index`) into `out.raws`: the line heads
/// first (events skipped), then each chosen line's events in turn. Returns the plane's
/// layout when it had events, and the LLVM target its kernel names show.
fn read_device_events(
    pl: &Plane<'_>,
    index: i64,
    out: &mut DeviceOut,
    warn: &mut Warn,
) -> Result<(Option<XplaneLayout>, Option<String>), DecodeFailure> {
    let DeviceOut { modules, strings, raws } = out;
    // Line heads first (events skipped), then each chosen line's events in turn.
    let heads: Vec<(XLineHead, &bytes::Bytes)> = pl.lines().collect::<Result<_, _>>()?;
    let stream_lines: Vec<&(XLineHead, &bytes::Bytes)> =
        heads.iter().filter(|(h, _)| !is_derived_line(h.label())).collect();
    let (lines, layout) = if stream_lines.is_empty() {
        (heads.iter().filter(|(h, _)| h.label() == "XLA Ops").collect(), XplaneLayout::XlaOpsLine)
    } else {
        (stream_lines, XplaneLayout::EventStats)
    };
    let mut on_metadata = false;
    let mut target: Option<String> = None;
    let mut n_events = 0usize;
    // One shared copy of each activity name (a profile runs the same few dozen kernels,
    // with names of hundreds of bytes, thousands of times).
    let mut names = SharedNames::default();
    // The launch configuration of each distinct `kernel_details` text: a kernel runs
    // with the same few configurations thousands of times.
    let mut configs: FastMap<Box<str>, Option<Arc<LaunchDims>>> = FastMap::default();
    let mut launches = LaunchPool::default();
    for (head, bytes) in lines {
        let stream = head
            .label()
            .strip_prefix("Stream #")
            .and_then(|r| r.split(|c: char| !c.is_ascii_digit()).next())
            .and_then(|d| d.parse().ok())
            .unwrap_or(head.id);
        let mut ei = 0usize;
        LineEvents::new(pl, bytes).each(|e, stats| {
            ei += 1;
            let Some((ts, dur)) = times(head.timestamp_ns, e) else {
                warn.add("aggregated_or_bad_time", || {
                    format!(
                        "event {} on {} / {} has no start time",
                        ei - 1,
                        pl.p.name,
                        head.label()
                    )
                });
                return Ok(());
            };
            n_events += 1;
            let (name, st) = pl.event(e.metadata_id, stats);
            on_metadata |= st.hlo_op_on_metadata && st.hlo_op.is_some();
            let starts = |p: &str| name.get(..p.len()).is_some_and(|h| h.eq_ignore_ascii_case(p));
            let kind = if st.memset_details.is_some() || starts("memset") {
                GpuKind::Memset
            } else if st.memcpy_details.is_some()
                || starts("memcpy")
                || (st.hlo_op.is_none() && starts("copy"))
            {
                GpuKind::Memcpy
            } else {
                GpuKind::Kernel
            };
            let name_arc = names.get(name, |name| {
                // A name seen before had its target looked for then.
                if target.is_none() {
                    target = llvm_target(name);
                }
            });
            let mut g = GpuEvent {
                kind,
                name: name_arc,
                ts_ns: ts,
                dur_ns: dur,
                device: index,
                stream,
                correlation: st.correlation_id,
                ..GpuEvent::default()
            };
            if let Some(k) = st.kernel_details {
                g.launch = if let Some(c) = configs.get(k) {
                    c.clone()
                } else {
                    let c = launches.get(kernel_details(k));
                    configs.insert(k.into(), c.clone());
                    c
                };
            }
            g.bytes = st.memcpy_details.or(st.memset_details).and_then(detail_bytes);
            let hlo_op = match layout {
                XplaneLayout::XlaOpsLine => st.hlo_op.or(Some(name)),
                _ => st.hlo_op,
            }
            .filter(|s| !s.is_empty());
            let module =
                st.hlo_module.filter(|m| !m.is_empty()).map(|m| modules.get(m, st.program_id));
            let framework_op = st
                .name
                .filter(|n| !n.is_empty())
                .or(st.tf_op.filter(|t| !t.is_empty() && !t.ends_with(':')));
            raws.push(Raw {
                gpu: g,
                hlo_op: hlo_op.map(|s| strings.id(s)),
                module,
                run_id: st.run_id,
                framework_op: framework_op.map(|s| strings.id(s)),
                flops: st.flops,
                bytes: st.bytes_accessed,
                launch_ns: None,
            });
            Ok(())
        })?;
    }
    let layout = if layout == XplaneLayout::EventStats && on_metadata {
        XplaneLayout::MetadataStats
    } else {
        layout
    };
    Ok(((n_events > 0).then_some(layout), target))
}

/// The device of plane `pl` from its plane statistics (vendor, compute capability, core
/// count, clock, memory), with `target` the LLVM target its kernels named.
fn plane_device(pl: &Plane<'_>, index: i64, target: Option<&str>) -> (TraceDevice, XlaDevice) {
    let ps = pl.plane_stats();
    let vendor = ps.get("device_vendor").and_then(|v| v.str()).map(str::to_string);
    let major = ps.get("compute_cap_major").and_then(|v| v.int());
    let minor = ps.get("compute_cap_minor").and_then(|v| v.int());
    let cores = ps.get("core_count").and_then(|v| v.int()).and_then(|c| u64::try_from(c).ok());
    let gpu_name = ps.get("gpu_device_name").and_then(|v| v.str()).map(str::to_string);
    let xd = XlaDevice {
        index,
        plane: pl.p.name.clone(),
        vendor: vendor.clone(),
        clock_khz: ps.get("clock_rate").and_then(|v| v.int()).and_then(|c| u64::try_from(c).ok()),
        core_count: cores,
        memory_bandwidth_bps: ps.get("memory_bandwidth").and_then(|v| v.float()),
        memory_bytes: ps
            .get("memory_size")
            .and_then(|v| v.int())
            .and_then(|c| u64::try_from(c).ok()),
        llvm_target: target.map(str::to_string),
    };
    let amd = vendor.as_deref().is_some_and(|v| v.eq_ignore_ascii_case("amd"));
    let name = gpu_name.or_else(|| target.map(str::to_string)).unwrap_or_else(|| {
        let cc = major
            .zip(minor)
            .map(|(a, b)| format!(", compute capability {a}.{b}"))
            .unwrap_or_default();
        format!("{} device{cc}", vendor.as_deref().unwrap_or("unknown"))
    });
    (
        TraceDevice {
            index,
            name,
            num_sms: cores.and_then(|c| u32::try_from(c).ok()),
            compute_capability: major.zip(minor).map(|(a, b)| format!("{a}.{b}")),
            total_memory_bytes: xd.memory_bytes,
            clock_mhz: xd.clock_khz.map(|k| k as f64 / 1000.0),
            warp_size: match (vendor.as_deref(), major) {
                (Some(v), _) if v.eq_ignore_ascii_case("nvidia") => Some(32),
                (_, Some(9)) if amd => Some(64),
                _ => None,
            },
        },
        xd,
    )
}

/// The decoded HLO of the modules the device events name, from `/host:metadata`, by
/// index in `modules`; a module whose HLO does not decode is warned about and left out.
fn hlo_of_modules(
    planes: &[Plane<'_>],
    modules: &Modules,
    warn: &mut Warn,
) -> HashMap<u32, hlo::Module> {
    let mut hlo_modules: HashMap<u32, hlo::Module> = HashMap::new();
    if let Some(meta) = planes.iter().find(|p| p.p.name == "/host:metadata") {
        for m in meta.p.event_metadata.values() {
            let (base, pid) = split_program_id(&m.name);
            let Some(&mi) = modules.index.get(&(base.to_string(), pid)).or_else(|| {
                if pid.is_none() {
                    None
                } else {
                    modules.index.get(&(base.to_string(), None))
                }
            }) else {
                continue;
            };
            let Some(bytes) = m.stats.iter().find_map(|s| match meta.stat(s) {
                Some(("Hlo Proto", Val::Bytes(b))) => Some(b),
                _ => None,
            }) else {
                continue;
            };
            match hlo::decode(bytes) {
                Ok(h) => {
                    hlo_modules.insert(mi, h);
                }
                Err(e) => warn.add("hlo_undecodable", || {
                    format!("the HLO of module `{}` in /host:metadata does not decode: {e}", m.name)
                }),
            }
        }
    }
    hlo_modules
}

/// Gives the kernels XLA recorded under a command buffer's thunk back to the instruction
/// each is named after (see `build`); returns the kernel time recorded under thunks, ns.
fn back_to_fusions(
    raws: &mut [Raw],
    hlo_modules: &HashMap<u32, hlo::Module>,
    strings: &mut Strings,
) -> i64 {
    let mut command_buffer_kernel_ns = 0i64;
    for r in raws.iter_mut() {
        if !r.hlo_op.is_some_and(|o| strings.get(o).starts_with("command_buffer")) {
            continue;
        }
        if r.gpu.kind == GpuKind::Kernel {
            command_buffer_kernel_ns = command_buffer_kernel_ns.saturating_add(r.gpu.dur_ns.max(0));
        }
        if let Some(n) =
            r.module.and_then(|m| hlo_modules.get(&m)).and_then(|h| h.instr_of_kernel(&r.gpu.name))
        {
            r.hlo_op = Some(strings.id(n));
        }
    }
    command_buffer_kernel_ns
}

/// Consecutive activities of one (device, stream) with the same (module execution,
/// module, `hlo_op`) as one op execution each, ordered by (device, stream, start).
fn group_executions(raws: &[Raw], runs: &[u32]) -> Vec<Inst> {
    let mut insts: Vec<Inst> = Vec::new();
    let mut current: FastMap<(i64, i64), usize> = FastMap::default();
    for (k, r) in raws.iter().enumerate() {
        let Some(op) = r.hlo_op else { continue };
        let key = (runs[k], r.module, op);
        let Ok(ev) = u32::try_from(k) else { break };
        let slot = (r.gpu.device, r.gpu.stream);
        let end = r.gpu.ts_ns.saturating_add(r.gpu.dur_ns);
        match current.get(&slot) {
            Some(&i) if insts[i].key == key => {
                let inst = &mut insts[i];
                inst.events.push(ev);
                inst.end_ns = inst.end_ns.max(end);
            }
            _ => {
                current.insert(slot, insts.len());
                insts.push(Inst {
                    key,
                    device: r.gpu.device,
                    stream: r.gpu.stream,
                    ts_ns: r.gpu.ts_ns,
                    end_ns: end,
                    framework_op: r.framework_op,
                    flops: r.flops,
                    bytes: r.bytes,
                    events: vec![ev],
                });
            }
        }
    }
    insts.sort_by_key(|i| (i.device, i.stream, i.ts_ns));
    insts
}

/// The op and the XLA op of each execution (`shared_of`: its entry in `shared`), made on
/// the thread pool, in order.
fn ops_of(
    insts: Vec<Inst>,
    shared_of: Vec<u32>,
    shared: &[Shared],
    strings: &Strings,
) -> (Vec<CpuOp>, Vec<XlaOp>) {
    insts
        .into_par_iter()
        .zip(shared_of)
        .map(|(inst, s)| {
            let entry = &shared[s as usize];
            let op = CpuOp {
                name: Arc::clone(&entry.display),
                ts_ns: inst.ts_ns,
                dur_ns: inst.end_ns.saturating_sub(inst.ts_ns),
                pid: inst.device,
                tid: inst.stream,
                external_id: None,
                seq: None,
                sequence_number: None,
                args: Arc::clone(&entry.args),
                parent: None,
                children: Vec::new(),
                launched: inst.events,
                comm: None,
            };
            let xop = XlaOp {
                module: inst.key.1,
                run: inst.key.0,
                hlo_op: Arc::clone(&entry.hlo_op),
                instr: entry.instr.clone(),
                framework_op: inst
                    .framework_op
                    .map(|f| strings.shared(f))
                    .or_else(|| entry.framework_op.clone()),
                profile_flops: inst.flops,
                profile_bytes: inst.bytes,
            };
            (op, xop)
        })
        .unzip()
}

/// Devices of one host are alike: a device without kernels takes the gfx target seen on
/// a sibling with the same vendor and compute capability (and its name, when it had only
/// a generic one).
fn share_targets(devices: &mut [(TraceDevice, XlaDevice)]) {
    let seen: Vec<(Option<String>, Option<String>, String)> = devices
        .iter()
        .map(|(t, x)| {
            (
                x.vendor.clone(),
                t.compute_capability.clone(),
                x.llvm_target.clone().unwrap_or_default(),
            )
        })
        .collect();
    for (t, x) in devices.iter_mut() {
        if x.llvm_target.is_none() {
            if let Some((_, _, tgt)) = seen
                .iter()
                .find(|(v, c, tg)| !tg.is_empty() && *v == x.vendor && *c == t.compute_capability)
            {
                x.llvm_target = Some(tgt.clone());
                if t.name.ends_with(" device") || t.name.contains(" device, compute capability") {
                    t.name.clone_from(tgt);
                }
            }
        }
    }
}

/// Builds the model. `hlo_protos` are the `/host:metadata` entries `(module name with
/// program id, serialized HloProto)`.
///
/// # Errors
/// A plane or line that does not decode (the caller locates the bad bytes).
pub fn build(
    space: &XSpaceLazy,
    release: &(dyn Fn(&[u8]) + Sync),
) -> Result<TraceModel, DecodeFailure> {
    build_in_pieces(space, release, HOST_PIECE)
}

/// [`build`], host lines read in pieces of about `piece` bytes.
fn build_in_pieces(
    space: &XSpaceLazy,
    release: &(dyn Fn(&[u8]) + Sync),
    piece: usize,
) -> Result<TraceModel, DecodeFailure> {
    let mut warn = Warn::default();
    for e in &space.errors {
        warn.add("xspace_error", || format!("the profiler reported: {e}"));
    }
    for w in &space.warnings {
        warn.add("xspace_warning", || format!("the profiler reported: {w}"));
    }
    let decoded: Vec<XPlaneLazy> =
        space.planes.iter().map(|b| XPlaneLazy::decode(b.clone())).collect::<Result<_, _>>()?;
    let planes: Vec<Plane<'_>> = decoded.iter().map(|p| Plane::new(p, release)).collect();
    let host_planes: Vec<&Plane<'_>> = planes
        .iter()
        .filter(|p| p.p.name.starts_with("/host:") && p.p.name != "/host:metadata")
        .collect();
    // The host planes and the device planes are read at once (neither needs the
    // other's events); the device warnings count after the host's, as when read in turn.
    let mut device_warn = Warn::default();
    let (host, device) = rayon::join(
        || read_host(&host_planes, piece, &mut warn),
        || read_devices(&planes, &mut device_warn),
    );
    let host = host?;
    let (mut out, mut devices, layouts) = device?;
    warn.append(device_warn);
    // Each kernel's launching call, by its correlation id (one shared copy of each
    // call's name). The table is large and each lookup a cache miss: they are made once,
    // on every thread.
    let found: Vec<Option<(&str, i64)>> =
        out.raws.par_iter().map(|r| r.gpu.correlation.and_then(|c| host.launches.get(c))).collect();
    let mut calls = SharedNames::default();
    // The call before and its shared name, looked at first: most kernels are launched by
    // the same call as the one before.
    let mut last: Option<(&str, Arc<str>)> = None;
    for (r, l) in out.raws.iter_mut().zip(found) {
        if r.gpu.correlation.is_some() {
            r.gpu.launcher = l.map(|(name, _)| match &last {
                Some((n, shared)) if std::ptr::eq(*n, name) => Arc::clone(shared),
                _ => {
                    let shared = calls.get(name, |_| {});
                    last = Some((name, Arc::clone(&shared)));
                    shared
                }
            });
            r.launch_ns = l.map(|l| l.1);
        }
    }
    devices.sort_by_key(|d| d.0.index);
    share_targets(&mut devices);
    let DeviceOut { mut modules, mut strings, mut raws } = out;

    // HLO of the modules the device events name.
    let hlo_modules = hlo_of_modules(&planes, &modules, &mut warn);
    for (mi, m) in modules.list.iter_mut().enumerate() {
        m.has_hlo = u32::try_from(mi).is_ok_and(|mi| hlo_modules.contains_key(&mi));
    }

    // Sort activities as the model requires: (ts, device, stream), stable.
    raws.sort_by(|a, b| {
        (a.gpu.ts_ns, a.gpu.device, a.gpu.stream).cmp(&(b.gpu.ts_ns, b.gpu.device, b.gpu.stream))
    });
    let spans_of: Vec<Option<&Vec<(i64, i64)>>> =
        modules.list.iter().map(|x| host.module_spans.get(x.name.as_str())).collect();
    let runs = assign_runs(&raws, &spans_of);

    // XLA replays most of a step from command buffers (CUDA graphs) and records each
    // kernel under the buffer's thunk (`command_buffer_N`). A kernel XLA generated is
    // named after its instruction (a fusion): it goes back to that instruction, with its
    // shapes. Library kernels (cuBLAS, cuDNN) have no such name and stay under the thunk.
    let command_buffer_kernel_ns = back_to_fusions(&mut raws, &hlo_modules, &mut strings);

    // Group into op executions.
    let insts = group_executions(&raws, &runs);

    // Names used by more than one module are qualified with the module.
    let mut owners: FastMap<&str, Vec<Option<u32>>> = FastMap::default();
    for i in &insts {
        let o = owners.entry(strings.get(i.key.2)).or_default();
        if !o.contains(&i.key.1) {
            o.push(i.key.1);
        }
    }
    let qualified: FastMap<String, bool> =
        owners.iter().map(|(n, o)| ((*n).to_string(), o.len() > 1)).collect();

    // What the executions of each (module, instruction) share, made once, in order of
    // first execution.
    let mut instr_cache: FastMap<(Option<u32>, u32), u32> = FastMap::default();
    let mut shared: Vec<Shared> = Vec::new();
    let shared_of: Vec<u32> = insts
        .iter()
        .map(|inst| {
            let (module, name_id) = (inst.key.1, inst.key.2);
            *instr_cache.entry((module, name_id)).or_insert_with(|| {
                let name = strings.get(name_id);
                let instr = module
                    .and_then(|m| hlo_modules.get(&m))
                    .and_then(|h| h.instr(name))
                    .map(Arc::new);
                let args = instr.as_ref().map_or_else(OpArgs::default, |i| OpArgs {
                    input_dims: i.operands.iter().map(|s| Dims::Tensor(s.dims.clone())).collect(),
                    input_types: i.operands.iter().map(|s| s.dtype.clone()).collect(),
                    ..OpArgs::default()
                });
                let display: Arc<str> = match (qualified.get(name), module) {
                    (Some(true), Some(m)) => format!(
                        "{}/{name}",
                        modules.list.get(m as usize).map_or("?", |x| x.name.as_str())
                    )
                    .into(),
                    _ => name.into(),
                };
                let framework_op = instr
                    .as_ref()
                    .filter(|i| !i.op_name.is_empty())
                    .map(|i| i.op_name.as_str().into());
                // XLA records the kernels it replays from a command buffer under the
                // buffer's thunk (`command_buffer_N`), which is not an HLO instruction.
                let not_in_hlo = instr.is_none()
                    && !name.starts_with("command_buffer")
                    && module.is_some_and(|m| hlo_modules.contains_key(&m));
                shared.push(Shared {
                    instr,
                    args: Arc::new(args),
                    display,
                    hlo_op: strings.shared(name_id),
                    framework_op,
                    not_in_hlo,
                });
                u32::try_from(shared.len() - 1).unwrap_or(u32::MAX)
            })
        })
        .collect();
    let mut missing = insts.iter().zip(&shared_of).filter(|(_, &s)| shared[s as usize].not_in_hlo);
    if let Some((first, _)) = missing.next() {
        let name = strings.get(first.key.2);
        warn.add_n("op_not_in_hlo", 1 + missing.count() as u64, || {
            format!("`{name}` is not an instruction of its module's HLO")
        });
    }
    // Each activity's op: the execution it belongs to (ops are made one per execution,
    // in order).
    let mut gpu_op: Vec<Option<u32>> = vec![None; raws.len()];
    for (i, inst) in insts.iter().enumerate() {
        let op_index = u32::try_from(i).unwrap_or(u32::MAX);
        for &e in &inst.events {
            gpu_op[e as usize] = Some(op_index);
        }
    }
    // The ops on the thread pool; beside them, the activities become the model's events
    // in place (the activities' larger allocation; the bytes past the events go back).
    let (mut gpu, (ops, xops)): (Vec<GpuEvent>, (Vec<CpuOp>, Vec<XlaOp>)) = rayon::join(
        || raws.into_iter().zip(gpu_op).map(|(r, op)| GpuEvent { op, ..r.gpu }).collect(),
        || ops_of(insts, shared_of, &shared, &strings),
    );
    gpu.shrink_to_fit();
    if gpu.is_empty() {
        warn.add("no_gpu_events", || {
            "the profile has no device activity (no events on a device plane's stream lines)"
                .to_string()
        });
    }

    let mut annotations: Vec<Annotation> = host
        .markers
        .iter()
        .map(|m| Annotation {
            name: m.name.clone(),
            ts_ns: m.ts_ns,
            dur_ns: m.dur_ns,
            on_gpu: false,
        })
        .collect();
    for (m, spans) in &host.module_spans {
        for &(s, e) in spans {
            annotations.push(Annotation {
                name: format!("{m}:XLA GPU module"),
                ts_ns: s,
                dur_ns: e.saturating_sub(s),
                on_gpu: false,
            });
        }
    }
    annotations.sort_by(|a, b| a.ts_ns.cmp(&b.ts_ns).then_with(|| a.name.cmp(&b.name)));

    let layout = layouts.first().copied().unwrap_or_default();
    let (trace_devices, xla_devices): (Vec<TraceDevice>, Vec<XlaDevice>) =
        devices.into_iter().unzip();
    Ok(TraceModel {
        devices: trace_devices,
        ops,
        gpu,
        annotations,
        warnings: warn.finish(),
        xla: Some(Box::new(XlaInfo {
            layout,
            hostnames: space.hostnames.clone(),
            modules: modules.list,
            ops: xops,
            devices: xla_devices,
            host_threads: host.threads,
            step_markers: host.markers,
            command_buffer_kernel_us: command_buffer_kernel_ns as f64 * 1e-3,
        })),
        ..TraceModel::default()
    })
}

/// The module execution of every activity (module docs), numbered per (device, module).
/// `spans_of` holds each module's host-side executions, by the module's index.
fn assign_runs(raws: &[Raw], spans_of: &[Option<&Vec<(i64, i64)>>]) -> Vec<u32> {
    #[derive(Clone, Copy, PartialEq, Eq, Hash)]
    enum Key {
        RunId(i64),
        Span(usize),
        Seq(u32),
    }
    // Fallback state per (device, module): first op, whether another op was seen, count.
    let mut seq: FastMap<(i64, u32), (Option<u32>, bool, u32)> = FastMap::default();
    let mut dense: FastMap<(i64, u32, Key), u32> = FastMap::default();
    let mut next: FastMap<(i64, u32), u32> = FastMap::default();
    // The key before and its number, looked at first: an execution's activities mostly
    // come one after another.
    let mut last: Option<((i64, u32, Key), u32)> = None;
    let mut runs = Vec::with_capacity(raws.len());
    for r in raws {
        let Some(m) = r.module else {
            runs.push(0);
            continue;
        };
        let device = r.gpu.device;
        let spans = spans_of.get(m as usize).copied().flatten();
        let key = if let Some(id) = r.run_id {
            Key::RunId(id)
        } else if let Some(i) = r.launch_ns.zip(spans).and_then(|(t, spans)| {
            let i = spans.partition_point(|s| s.0 <= t);
            (i > 0 && t <= spans[i - 1].1).then(|| i - 1)
        }) {
            Key::Span(i)
        } else {
            let op = r.hlo_op;
            let s = seq.entry((device, m)).or_insert((op, false, 0));
            if op == s.0 {
                if s.1 {
                    s.2 += 1;
                    s.1 = false;
                }
            } else {
                s.1 = true;
            }
            Key::Seq(s.2)
        };
        let key = (device, m, key);
        if let Some((_, n)) = last.filter(|l| l.0 == key) {
            runs.push(n);
            continue;
        }
        let n = *dense.entry(key).or_insert_with(|| {
            let n = next.entry((device, m)).or_insert(0);
            *n += 1;
            *n - 1
        });
        last = Some((key, n));
        runs.push(n);
    }
    runs
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The 64-bit arithmetic of `times` against the 128-bit one it stands in for, at
    /// the edges of every operand (negative offsets, picoseconds that round towards
    /// minus infinity, sums past `i64`).
    #[test]
    fn event_times_agree_with_128_bit_arithmetic() {
        let wide = |line_ns: i64, off: i64, dur: i64| -> Option<(i64, i64)> {
            let start = i128::from(line_ns) * 1000 + i128::from(off);
            let end = start + i128::from(dur.max(0));
            let ts = i64::try_from(start.div_euclid(1000)).ok()?;
            let end = i64::try_from(end.div_euclid(1000)).ok()?;
            Some((ts, end.checked_sub(ts)?))
        };
        let edges = [i64::MIN, i64::MIN + 999, -1_000_001, -1001, -999, -1, 0, 1, 999, 1000, 1001];
        let values: Vec<i64> = edges
            .iter()
            .flat_map(|&v| [v, v.wrapping_neg(), v / 1000, v / 1000 + 1])
            .chain([i64::MAX, i64::MAX - 999, i64::MAX / 1000, 1_751_410_836_000_000_000])
            .collect();
        let mut checked = 0;
        for &line_ns in &values {
            for &off in &values {
                for &dur in &values {
                    let head = EventHead {
                        metadata_id: 1,
                        data: Some(x_event::Data::OffsetPs(off)),
                        duration_ps: dur,
                    };
                    assert_eq!(
                        times(line_ns, &head),
                        wide(line_ns, off, dur),
                        "{line_ns} {off} {dur}"
                    );
                    checked += 1;
                }
            }
        }
        assert!(checked > 50_000);
        let aggregated = EventHead { metadata_id: 1, data: None, duration_ps: 5 };
        assert_eq!(times(0, &aggregated), None);
    }

    #[test]
    fn kernel_details_of_both_vendors() {
        let g =
            kernel_details(" grid:16,16,2 block:256,1,1 private_mem:168 group_mem:30240 occ_pct:0");
        assert_eq!(
            (g.grid, g.block, g.shared_memory_bytes),
            (Some([16, 16, 2]), Some([256, 1, 1]), Some(30240))
        );
        let n = kernel_details("regs:64 static_shared:1024 dynamic_shared:49152 grid:132,1,1 block:384,1,1 occ_pct:12.5");
        assert_eq!(
            (n.registers_per_thread, n.shared_memory_bytes, n.grid),
            (Some(64), Some(50176), Some([132, 1, 1]))
        );
        let bad = kernel_details("grid:x,y block:: regs:-1 ::::");
        assert_eq!((bad.grid, bad.registers_per_thread), (None, None));
    }

    #[test]
    fn names_and_numbers() {
        assert_eq!(device_index("/device:GPU:3"), Some(3));
        assert_eq!(device_index("/device:TPU:0"), Some(0));
        assert_eq!(device_index("/device:CUSTOM:Megascale Trace"), None);
        assert_eq!(device_index("/host:CPU"), None);
        assert_eq!(split_program_id("jit_loss_fn(17)"), ("jit_loss_fn", Some(17)));
        assert_eq!(split_program_id("jit_f"), ("jit_f", None));
        assert_eq!(split_program_id("f(x)"), ("f(x)", None));
        assert_eq!(
            llvm_target("void ck_tile::kentry<ck_tile::gfx950_t, 1>"),
            Some("gfx950".to_string())
        );
        assert_eq!(llvm_target("gfx"), None);
        assert_eq!(detail_bytes("kind_src:device kind_dst:pinned size:8 dest:0 async:1"), Some(8));
        assert_eq!(detail_bytes("kind:device num_bytes:64 async:0"), Some(64));
    }

    /// A host line's summary as it was computed before lines were read in pieces: one
    /// sweep in `i64`, every sum saturating.
    fn swept_at_once(events: &[(i64, i64, &str)]) -> Option<HostThread> {
        let (mut busy, mut cur_end, mut end) = (0i64, i64::MIN, i64::MIN);
        let mut top: BTreeMap<&str, (u64, i64)> = BTreeMap::new();
        for (i, &(s, e, n)) in events.iter().enumerate() {
            if let Some(&(ls, le, _)) = i.checked_sub(1).and_then(|j| events.get(j)) {
                if s < ls || (s == ls && e > le) {
                    return None;
                }
            }
            end = end.max(e);
            if s >= cur_end {
                busy = busy.saturating_add(e.saturating_sub(s));
                let t = top.entry(n).or_default();
                t.0 += 1;
                t.1 = t.1.saturating_add(e.saturating_sub(s));
                cur_end = e;
            } else if e > cur_end {
                busy = busy.saturating_add(e.saturating_sub(cur_end));
                cur_end = e;
            }
        }
        let mut top: Vec<(String, u64, i64)> =
            top.into_iter().map(|(n, (c, t))| (n.to_string(), c, t)).collect();
        top.sort_by(|a, b| b.2.cmp(&a.2).then_with(|| a.0.cmp(&b.0)));
        top.truncate(5);
        Some(HostThread {
            plane: "p".to_string(),
            name: "l".to_string(),
            events: events.len() as u64,
            busy_ns: busy,
            start_ns: events.first().map_or(0, |e| e.0),
            end_ns: if events.is_empty() { 0 } else { end },
            top,
        })
    }

    proptest::proptest! {
        /// A line cut anywhere, each piece swept from nothing and the pieces joined, sums
        /// to the line swept at once: nested and overlapping events across the cuts, few
        /// or no moves of the running end kept (the pieces read again), times at the
        /// ends of `i64` (sums past it), a name at two addresses, and lines out of order.
        #[test]
        fn pieces_of_a_host_line_join_to_the_line_swept_at_once(
            raw in proptest::collection::vec((0i64..300, 0usize..4, 0usize..3), 0..80),
            mut cuts in proptest::collection::vec(0usize..80, 0..6),
            keep in 0usize..5,
            base in proptest::sample::select(vec![0, i64::MIN, i64::MAX - 400, -150]),
            sorted in proptest::bool::weighted(0.9),
        ) {
            // Two names of the same text at two addresses (counted as one name).
            let again = String::from("a");
            let names = ["a", "b", again.as_str()];
            let durs = [0, 7, 90, i64::MAX];
            let mut ev: Vec<(i64, i64, &str)> = raw
                .iter()
                .map(|&(s, d, n)| {
                    let s = base.saturating_add(s);
                    (s, s.saturating_add(durs[d]), names[n])
                })
                .collect();
            if sorted {
                ev.sort_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
            }
            cuts.retain(|&c| c < ev.len());
            cuts.push(0);
            cuts.sort_unstable();
            cuts.dedup();
            let ranges: Vec<std::ops::Range<usize>> = cuts
                .iter()
                .zip(cuts.iter().skip(1).copied().chain([ev.len()]))
                .map(|(&a, b)| a..b)
                .collect();
            let pieces: Vec<PieceSweep<'_>> = ranges
                .iter()
                .map(|r| {
                    let mut p = PieceSweep::new(keep);
                    for &(s, e, n) in &ev[r.clone()] {
                        p.push(s, e, n);
                    }
                    p
                })
                .collect();
            let joined = join_sweeps(pieces, |k, sweep| {
                for &(s, e, n) in &ev[ranges[k].clone()] {
                    assert!(sweep.push(s, e, n));
                }
                Ok(())
            });
            let joined = joined.ok().flatten().filter(|s| s.events > 0).map(|s| s.finish("p", "l"));
            let at_once = swept_at_once(&ev).filter(|t| t.events > 0);
            proptest::prop_assert_eq!(joined, at_once);
        }
    }

    /// Both JAX profiles of the fixtures (an H200 step, an MI355X step), decoded.
    fn profiles() -> Vec<(&'static str, XSpaceLazy)> {
        let root =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/jax");
        ["h200/h200_transformer_step.xplane.pb", "amd_gfx950_te_fused_attn.xplane.pb"]
            .into_iter()
            .map(|f| {
                let bytes = bytes::Bytes::from(std::fs::read(root.join(f)).unwrap());
                (f, XSpaceLazy::decode(bytes).unwrap())
            })
            .collect()
    }

    /// Host lines read in pieces of one field, of 64 and 1000 bytes, give the model
    /// read in one piece, on both profiles.
    #[test]
    fn host_lines_read_in_pieces_give_the_model_read_whole() {
        for (f, space) in profiles() {
            let whole = build_in_pieces(&space, &|_| {}, usize::MAX).unwrap();
            let threads = whole.xla.as_ref().map_or(0, |x| x.host_threads.len());
            assert!(threads > 0, "{f}: no host threads");
            for piece in [1, 64, 1000] {
                let cut = build_in_pieces(&space, &|_| {}, piece).unwrap();
                assert!(cut == whole, "{f}, pieces of {piece} bytes");
            }
        }
    }

    /// A host event's name, correlation id and step number read the short way are
    /// those of the full resolution, on every event of both profiles' host planes.
    #[test]
    fn host_events_resolve_as_every_event_does() {
        for (f, space) in profiles() {
            let (mut events, mut with_ids) = (0, 0);
            for p in &space.planes {
                let p = XPlaneLazy::decode(p.clone()).unwrap();
                let pl = Plane::new(&p, &|_| {});
                for line in &p.lines {
                    LineEvents::new(&pl, line)
                        .each(|e, stats| {
                            let (name, full) = pl.event(e.metadata_id, stats);
                            let short = pl.host_event(e.metadata_id, stats);
                            assert_eq!(short.name, name);
                            assert_eq!(short.correlation_id, full.correlation_id);
                            assert_eq!(short.step_num, full.step_num);
                            events += 1;
                            with_ids += usize::from(full.correlation_id.is_some());
                            Ok(())
                        })
                        .unwrap();
                }
            }
            assert!(events > 300 && with_ids > 100, "{f}: {events} events, {with_ids} ids");
        }
    }
}
