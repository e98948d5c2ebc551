//! One Chrome-trace event as it is read from the bytes: a hand-written serde visitor
//! that borrows strings from the input where it can and never fails on an unexpected
//! value type (a field of the wrong type reads as absent; the caller counts it).
//!
//! Only syntax errors (the bytes are not JSON) make a parse fail. Keys are matched
//! without allocating; values the analysis does not use are skipped with
//! [`IgnoredAny`], which validates them without building anything.
//!
//! Field names are the libkineto ones (`output_json.cpp`) and the 2021 legacy ones
//! (`external id`, `Input dims`), see
//! docs/reference/input-formats.md#pytorch-profiler-kineto-trace-json.

use super::collect::{keep_named, skippable, Partial};
use super::hash::FxSet;
use rooftop_core::trace::{CommArgs, Dims, OpArgs};
use serde::de::{
    self, Deserialize, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor,
};
use serde_json::value::RawValue;
use std::borrow::Cow;
use std::cell::RefCell;
use std::fmt;
use std::sync::Arc;

/// The `ph` (phase) of an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum Phase {
    /// `X`: a complete event with `ts` and `dur`.
    Complete,
    /// `s`: a flow start.
    FlowStart,
    /// `f`: a flow end.
    FlowEnd,
    /// `t`: a flow step.
    FlowStep,
    /// `B` / `E`: begin/end pairs, which Kineto does not write.
    BeginEnd,
    /// `i` / `I`: an instant event (the allocator's `[memory]` events).
    Instant,
    /// Metadata, instants, counters and everything else we do not read.
    Other,
    /// No `ph`, or one that is not a string.
    #[default]
    Missing,
}

/// One event, with the fields the reader uses.
#[derive(Debug, Default)]
pub(crate) struct Event<'a> {
    pub ph: Phase,
    pub cat: Option<Cow<'a, str>>,
    pub name: Option<Cow<'a, str>>,
    pub pid: Option<i64>,
    pub tid: Option<i64>,
    /// `ts` in ns; `Err` when present but not a number we can read, and why.
    pub ts_ns: Option<Result<i64, BadTime>>,
    pub dur_ns: Option<Result<i64, BadTime>>,
    /// Flow id (`id`).
    pub id: Option<i64>,
    pub args: Args<'a>,
}

/// The `args` of an event that the model uses.
#[derive(Debug, Default)]
pub(crate) struct Args<'a> {
    pub external_id: Option<i64>,
    pub correlation: Option<i64>,
    pub ev_idx: Option<i64>,
    pub record_function_id: Option<i64>,
    pub sequence_number: Option<i64>,
    pub device: Option<i64>,
    pub stream: Option<i64>,
    pub grid: Option<[u32; 3]>,
    pub block: Option<[u32; 3]>,
    pub shared_memory: Option<u64>,
    pub registers_per_thread: Option<u32>,
    /// `bytes` (memcpy/memset activities) or `size` (ROCm copy runtime calls).
    pub bytes: Option<u64>,
    /// `wait_on_stream` of a `cuda_sync` event.
    pub wait_on_stream: Option<i64>,
    /// `wait_on_cuda_event_record_corr_id` of a `cuda_sync` event.
    pub wait_on_record: Option<i64>,
    /// `[memory]` events: `Bytes`, `Addr`, `Total Allocated`, `Total Reserved`,
    /// `Device Type`, `Device Id`.
    pub mem_bytes: Option<i64>,
    pub addr: Option<i64>,
    pub total_allocated: Option<i64>,
    pub total_reserved: Option<i64>,
    pub device_type: Option<i64>,
    pub device_id: Option<i64>,
    /// The raw text of `Input Dims`, `Input type`, `Input Strides`, `Concrete Inputs`
    /// (indices [`DIMS`], [`TYPES`], [`STRIDES`], [`CONCRETE`]): ops repeat the same
    /// few argument lists, so they are parsed once per distinct text ([`op_args`]).
    pub shapes: [Option<&'a str>; 4],
    /// Collective arguments (`Collective name`, `In msg nelems`, ...), boxed when the
    /// first one appears: most events have none.
    pub comm: Option<Box<CommArgs>>,
}

pub(crate) const DIMS: usize = 0;
pub(crate) const TYPES: usize = 1;
pub(crate) const STRIDES: usize = 2;
pub(crate) const CONCRETE: usize = 3;

/// Parses the raw argument lists of an op (anything unexpected reads as empty).
pub(crate) fn op_args(shapes: &[Option<&str>; 4]) -> OpArgs {
    fn dims(r: Option<&str>) -> Vec<Dims> {
        r.and_then(|r| serde_json::from_str::<Lenient<DimsList>>(r).ok())
            .and_then(|l| l.0)
            .map(|d| d.0)
            .unwrap_or_default()
    }
    fn strs(r: Option<&str>) -> Vec<String> {
        r.and_then(|r| serde_json::from_str::<Lenient<StrList>>(r).ok())
            .and_then(|l| l.0)
            .map(|d| d.0)
            .unwrap_or_default()
    }
    OpArgs {
        input_dims: dims(shapes[DIMS]),
        input_types: strs(shapes[TYPES]),
        input_strides: dims(shapes[STRIDES]),
        concrete_inputs: strs(shapes[CONCRETE]),
    }
}

pub(crate) enum EventKey {
    Ph,
    Cat,
    Name,
    Pid,
    Tid,
    Ts,
    Dur,
    Id,
    Args,
    Other,
}

impl EventKey {
    pub(crate) fn of(s: &[u8]) -> EventKey {
        match s {
            b"ph" => EventKey::Ph,
            b"cat" => EventKey::Cat,
            b"name" => EventKey::Name,
            b"pid" => EventKey::Pid,
            b"tid" => EventKey::Tid,
            b"ts" => EventKey::Ts,
            b"dur" => EventKey::Dur,
            b"id" => EventKey::Id,
            b"args" => EventKey::Args,
            _ => EventKey::Other,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ArgKey {
    ExternalId,
    Correlation,
    EvIdx,
    RecordFunctionId,
    SequenceNumber,
    Device,
    Stream,
    Grid,
    Block,
    SharedMemory,
    Registers,
    Bytes,
    InputDims,
    InputType,
    InputStrides,
    ConcreteInputs,
    WaitOnStream,
    WaitOnRecord,
    MemBytes,
    Addr,
    TotalAllocated,
    TotalReserved,
    DeviceType,
    DeviceId,
    Comm(CommKey),
    Other,
}

/// The collective arguments of `record_param_comms` and NCCL kernels (libkineto
/// `output_json.cpp`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum CommKey {
    Collective,
    InNelems,
    OutNelems,
    GroupSize,
    Dtype,
    PgName,
    PgDesc,
    PgRanks,
    InSplit,
    OutSplit,
    Seq,
    SrcRank,
    DstRank,
}

impl CommKey {
    /// How many keys there are (`key as usize` is below it).
    pub(crate) const COUNT: usize = CommKey::DstRank as usize + 1;
}

/// Every argument key the reader names, by first byte, as `$callback! { first =>
/// [name => key, ...], ... }`: the one list behind [`ArgKey::of`] and the scanner's
/// byte-wise recognition (`fast::known_arg_key`). The keys libkineto and PyTorch write
/// on most events whose values the model ignores are listed as [`ArgKey::Other`], so
/// that the scanner recognizes them too. Each name is plain ASCII without `"` or `\`.
macro_rules! arg_keys {
    ($callback:ident) => {
        $callback! {
            b'E' => [b"External id" => ArgKey::ExternalId, b"Ev Idx" => ArgKey::EvIdx],
            b'e' => [b"external id" => ArgKey::ExternalId],
            b'R' => [b"Record function id" => ArgKey::RecordFunctionId],
            b'S' => [
                b"Sequence number" => ArgKey::SequenceNumber,
                b"Seq" => ArgKey::Comm(CommKey::Seq),
                b"Src Rank" => ArgKey::Comm(CommKey::SrcRank),
            ],
            b'I' => [
                b"Input Dims" => ArgKey::InputDims,
                b"Input type" => ArgKey::InputType,
                b"Input Strides" => ArgKey::InputStrides,
                b"Input dims" => ArgKey::InputDims,
                b"In msg nelems" => ArgKey::Comm(CommKey::InNelems),
                b"In split size" => ArgKey::Comm(CommKey::InSplit),
            ],
            b'C' => [
                b"Concrete Inputs" => ArgKey::ConcreteInputs,
                b"Collective name" => ArgKey::Comm(CommKey::Collective),
            ],
            b'c' => [
                b"correlation" => ArgKey::Correlation,
                b"cid" => ArgKey::Other,
                b"cbid" => ArgKey::Other,
                b"context" => ArgKey::Other,
            ],
            b'd' => [b"device" => ArgKey::Device, b"dtype" => ArgKey::Comm(CommKey::Dtype)],
            b's' => [
                b"stream" => ArgKey::Stream,
                b"shared memory" => ArgKey::SharedMemory,
                b"size" => ArgKey::Bytes,
            ],
            b'g' => [b"grid" => ArgKey::Grid],
            b'b' => [
                b"block" => ArgKey::Block,
                b"bytes" => ArgKey::Bytes,
                b"blocks per SM" => ArgKey::Other,
            ],
            b'r' => [b"registers per thread" => ArgKey::Registers],
            b'T' => [
                b"Total Allocated" => ArgKey::TotalAllocated,
                b"Total Reserved" => ArgKey::TotalReserved,
            ],
            b'B' => [b"Bytes" => ArgKey::MemBytes],
            b'A' => [b"Addr" => ArgKey::Addr],
            b'D' => [
                b"Device Type" => ArgKey::DeviceType,
                b"Device Id" => ArgKey::DeviceId,
                b"Dst Rank" => ArgKey::Comm(CommKey::DstRank),
            ],
            // Python frames' keys first: a trace has far more frames than collectives.
            b'P' => [
                b"Python parent id" => ArgKey::Other,
                b"Python id" => ArgKey::Other,
                b"Python module id" => ArgKey::Other,
                b"Process Group Name" => ArgKey::Comm(CommKey::PgName),
                b"Process Group Description" => ArgKey::Comm(CommKey::PgDesc),
                b"Process Group Ranks" => ArgKey::Comm(CommKey::PgRanks),
                b"Profiler Event Index" => ArgKey::EvIdx,
            ],
            b'G' => [b"Group size" => ArgKey::Comm(CommKey::GroupSize)],
            b'O' => [
                b"Out msg nelems" => ArgKey::Comm(CommKey::OutNelems),
                b"Out split size" => ArgKey::Comm(CommKey::OutSplit),
            ],
            b'F' => [b"Fwd thread id" => ArgKey::Other],
            b'f' => [b"finished" => ArgKey::Other],
            b'k' => [b"kind" => ArgKey::Other, b"kernel" => ArgKey::Other],
            b'q' => [b"queued" => ArgKey::Other],
            b'w' => [
                b"warps per SM" => ArgKey::Other,
                b"wait_on_stream" => ArgKey::WaitOnStream,
                b"wait_on_cuda_event_record_corr_id" => ArgKey::WaitOnRecord,
            ],
        }
    };
}
pub(crate) use arg_keys;

/// [`ArgKey::of`]'s body: a match of the key's bytes against every name.
macro_rules! match_arg_key {
    ($($first:literal => [$($name:literal => $key:expr),+ $(,)?]),+ $(,)?) => {
        |s: &[u8]| match s {
            $($($name => $key,)+)+
            _ => ArgKey::Other,
        }
    };
}

impl ArgKey {
    pub(crate) fn of(s: &[u8]) -> ArgKey {
        (arg_keys!(match_arg_key))(s)
    }
}

/// Map keys matched against a fixed set without allocating.
macro_rules! key_deserialize {
    ($ty:ident) => {
        impl<'de> Deserialize<'de> for $ty {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                struct V;
                impl Visitor<'_> for V {
                    type Value = $ty;
                    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                        f.write_str("a key")
                    }
                    fn visit_bytes<E: de::Error>(self, s: &[u8]) -> Result<$ty, E> {
                        Ok($ty::of(s))
                    }
                    fn visit_str<E: de::Error>(self, s: &str) -> Result<$ty, E> {
                        Ok($ty::of(s.as_bytes()))
                    }
                }
                // Bytes: serde_json then skips the UTF-8 check of keys, which are only
                // compared with ASCII names.
                d.deserialize_bytes(V)
            }
        }
    };
}

key_deserialize!(EventKey);
key_deserialize!(ArgKey);

impl<'de: 'a, 'a> Deserialize<'de> for Event<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(EventVisitor(std::marker::PhantomData))
    }
}

struct EventVisitor<'a>(std::marker::PhantomData<&'a ()>);

impl<'de: 'a, 'a> Visitor<'de> for EventVisitor<'a> {
    type Value = Event<'a>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a trace event object")
    }

    fn visit_map<M: MapAccess<'de>>(self, map: M) -> Result<Self::Value, M::Error> {
        read_event(map)
    }
}

/// Reads an event's members.
fn read_event<'de: 'a, 'a, M: MapAccess<'de>>(mut map: M) -> Result<Event<'a>, M::Error> {
    let mut ev = Event::default();
    // Python stack frames and allocator instants are most of a trace's events; the
    // model keeps only `nn.Module` frames and `[memory]` instants. Such an event is read
    // up to its name (Kineto writes `cat` before `name`) and the rest skipped unread
    // when the name is not one the model keeps.
    let mut by_name = false;
    while let Some(k) = map.next_key::<EventKey>()? {
        match k {
            EventKey::Ph => {
                ev.ph = map.next_value::<Lenient<PhaseValue>>()?.0.unwrap_or_default().0;
            }
            EventKey::Cat => {
                ev.cat = map.next_value::<Lenient<Str<'a>>>()?.0.map(|s| s.0);
                if let Some(cat) = ev.cat.as_deref() {
                    if skippable(cat) {
                        return skip_rest(map, ev);
                    }
                    by_name = keep_named(cat, None).is_some();
                    if by_name && keep_named(cat, ev.name.as_deref()) == Some(false) {
                        return skip_rest(map, ev);
                    }
                }
            }
            EventKey::Name => {
                ev.name = map.next_value::<Lenient<Str<'a>>>()?.0.map(|s| s.0);
                if by_name {
                    let cat = ev.cat.as_deref().unwrap_or_default();
                    if keep_named(cat, ev.name.as_deref()) == Some(false) {
                        return skip_rest(map, ev);
                    }
                }
            }
            EventKey::Pid => ev.pid = map.next_value::<Lenient<Id>>()?.0.map(|i| i.0),
            EventKey::Tid => ev.tid = map.next_value::<Lenient<Id>>()?.0.map(|i| i.0),
            EventKey::Ts => ev.ts_ns = Some(micros_or_why(map.next_value::<&'a RawValue>()?.get())),
            EventKey::Dur => {
                ev.dur_ns = Some(micros_or_why(map.next_value::<&'a RawValue>()?.get()));
            }
            EventKey::Id => ev.id = map.next_value::<Lenient<Id>>()?.0.map(|i| i.0),
            EventKey::Args => {
                if let Some(a) = map.next_value::<Lenient<Args<'a>>>()?.0 {
                    ev.args = a;
                }
            }
            EventKey::Other => {
                map.next_value::<IgnoredAny>()?;
            }
        }
    }
    Ok(ev)
}

/// Consumes the rest of an event the model does not keep.
fn skip_rest<'de, 'a, M: MapAccess<'de>>(
    mut map: M,
    mut ev: Event<'a>,
) -> Result<Event<'a>, M::Error> {
    while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
    ev.ph = Phase::Other;
    Ok(ev)
}

/// Reads one element of `traceEvents` straight into a [`Partial`], so that the event
/// is never moved through serde's return values. `offset` is where the element starts.
pub(crate) struct EventSeed<'s> {
    pub sink: &'s mut Partial,
    pub offset: usize,
}

impl<'de> DeserializeSeed<'de> for EventSeed<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for EventSeed<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a trace event object")
    }

    fn visit_map<M: MapAccess<'de>>(self, map: M) -> Result<(), M::Error> {
        let mut ev = read_event(map)?;
        self.sink.push(&mut ev, self.offset);
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, s: A) -> Result<(), A::Error> {
        drain_seq(s)?;
        self.sink.not_an_object(self.offset);
        Ok(())
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<(), E> {
        self.sink.not_an_object(self.offset);
        Ok(())
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<(), E> {
        self.sink.not_an_object(self.offset);
        Ok(())
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<(), E> {
        self.sink.not_an_object(self.offset);
        Ok(())
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<(), E> {
        self.sink.not_an_object(self.offset);
        Ok(())
    }

    fn visit_str<E: de::Error>(self, _: &str) -> Result<(), E> {
        self.sink.not_an_object(self.offset);
        Ok(())
    }

    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        self.sink.not_an_object(self.offset);
        Ok(())
    }
}

fn int<'de, M: MapAccess<'de>>(map: &mut M) -> Result<Option<i64>, M::Error> {
    Ok(map.next_value::<Lenient<Id>>()?.0.map(|i| i.0))
}

/// Reads a `T` when the value has the shape `T` expects, and consumes anything else,
/// giving `None`. Never fails on a well-formed value: wrong types are absent fields.
///
/// Implemented per type through [`LenientVisit`], whose visitor returns `None` from the
/// callbacks that do not fit.
pub(crate) struct Lenient<T>(pub Option<T>);

trait LenientVisit<'de>: Sized {
    fn visit<D: Deserializer<'de>>(d: D) -> Result<Option<Self>, D::Error>;
}

impl<'de, T: LenientVisit<'de>> Deserialize<'de> for Lenient<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        T::visit(d).map(Lenient)
    }
}

/// Drains a sequence or a map the visitor does not want.
fn drain_seq<'de, A: SeqAccess<'de>>(mut seq: A) -> Result<(), A::Error> {
    while seq.next_element::<IgnoredAny>()?.is_some() {}
    Ok(())
}

fn drain_map<'de, A: MapAccess<'de>>(mut map: A) -> Result<(), A::Error> {
    while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
    Ok(())
}

/// A visitor skeleton: every callback not overridden consumes the value and yields
/// `None`.
macro_rules! lenient_visitor {
    ($name:ident, $out:ty, $expect:literal, { $($body:tt)* }) => {
        struct $name;
        impl<'de> Visitor<'de> for $name {
            type Value = Option<$out>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str($expect)
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> { Ok(None) }
            fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> { Ok(None) }
            fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> { Ok(None) }
            $($body)*
        }
    };
}

impl<'de: 'a, 'a> LenientVisit<'de> for Args<'a> {
    fn visit<D: Deserializer<'de>>(d: D) -> Result<Option<Self>, D::Error> {
        struct V<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = Option<Args<'a>>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an args object")
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
                Ok(None)
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
                Ok(None)
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
                Ok(None)
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
                Ok(None)
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
                Ok(None)
            }
            fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(None)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, s: A) -> Result<Self::Value, A::Error> {
                drain_seq(s)?;
                Ok(None)
            }
            fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<Self::Value, M::Error> {
                let mut a = Args::default();
                while let Some(k) = map.next_key::<ArgKey>()? {
                    match k {
                        ArgKey::ExternalId => a.external_id = int(&mut map)?,
                        ArgKey::Correlation => a.correlation = int(&mut map)?,
                        ArgKey::EvIdx => a.ev_idx = int(&mut map)?,
                        ArgKey::RecordFunctionId => a.record_function_id = int(&mut map)?,
                        ArgKey::SequenceNumber => a.sequence_number = int(&mut map)?,
                        ArgKey::Device => a.device = int(&mut map)?,
                        ArgKey::Stream => a.stream = int(&mut map)?,
                        ArgKey::Grid => a.grid = map.next_value::<Lenient<Dim3>>()?.0.map(|d| d.0),
                        ArgKey::Block => {
                            a.block = map.next_value::<Lenient<Dim3>>()?.0.map(|d| d.0);
                        }
                        ArgKey::SharedMemory => {
                            a.shared_memory = int(&mut map)?.and_then(|v| u64::try_from(v).ok());
                        }
                        ArgKey::Registers => {
                            a.registers_per_thread =
                                int(&mut map)?.and_then(|v| u32::try_from(v).ok());
                        }
                        ArgKey::Bytes => {
                            a.bytes = int(&mut map)?.and_then(|v| u64::try_from(v).ok());
                        }
                        ArgKey::InputDims => {
                            a.shapes[DIMS] = Some(map.next_value::<&'a RawValue>()?.get());
                        }
                        ArgKey::InputType => {
                            a.shapes[TYPES] = Some(map.next_value::<&'a RawValue>()?.get());
                        }
                        ArgKey::InputStrides => {
                            a.shapes[STRIDES] = Some(map.next_value::<&'a RawValue>()?.get());
                        }
                        ArgKey::ConcreteInputs => {
                            a.shapes[CONCRETE] = Some(map.next_value::<&'a RawValue>()?.get());
                        }
                        ArgKey::WaitOnStream => a.wait_on_stream = int(&mut map)?,
                        ArgKey::WaitOnRecord => a.wait_on_record = int(&mut map)?,
                        ArgKey::MemBytes => a.mem_bytes = int(&mut map)?,
                        ArgKey::Addr => a.addr = int(&mut map)?,
                        ArgKey::TotalAllocated => a.total_allocated = int(&mut map)?,
                        ArgKey::TotalReserved => a.total_reserved = int(&mut map)?,
                        ArgKey::DeviceType => a.device_type = int(&mut map)?,
                        ArgKey::DeviceId => a.device_id = int(&mut map)?,
                        ArgKey::Comm(key) => {
                            let raw = map.next_value::<&'a RawValue>()?.get();
                            comm_arg(a.comm.get_or_insert_with(Box::default), key, raw);
                        }
                        ArgKey::Other => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                Ok(Some(a))
            }
        }
        d.deserialize_any(V(std::marker::PhantomData))
    }
}

/// Stores one collective argument. Values of an unexpected type read as absent: a
/// string where a number is expected is parsed when it holds one; lists may be JSON
/// arrays or the strings PyTorch writes (`"[0, 1]"`) and are kept as text.
pub(crate) fn comm_arg(c: &mut CommArgs, key: CommKey, raw: &str) {
    set_comm(c, key, comm_value(key, raw));
}

/// A collective argument as read from its raw JSON ([`comm_value`]): a shared text, a
/// count or a signed number, by key.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum CommValue {
    Text(Option<Arc<str>>),
    Count(Option<u64>),
    Signed(Option<i64>),
}

/// The value of collective argument `key` in `raw` (a pure function of the two: the
/// scanner keeps the last value of each key and reuses it for the same raw text).
pub(crate) fn comm_value(key: CommKey, raw: &str) -> CommValue {
    let text = raw_text(raw);
    match key {
        CommKey::Collective
        | CommKey::Dtype
        | CommKey::PgName
        | CommKey::PgDesc
        | CommKey::PgRanks
        | CommKey::InSplit
        | CommKey::OutSplit => CommValue::Text(text.map(|t| shared_text(&t))),
        CommKey::InNelems | CommKey::OutNelems | CommKey::GroupSize => {
            CommValue::Count(text.and_then(|t| {
                let t = t.trim();
                t.parse::<u64>().ok().or_else(|| {
                    let f = t.parse::<f64>().ok()?;
                    (f.is_finite() && f >= 0.0 && f.fract() == 0.0 && f < 1.8e19)
                        .then_some(f as u64)
                })
            }))
        }
        CommKey::Seq | CommKey::SrcRank | CommKey::DstRank => {
            CommValue::Signed(text.and_then(|t| t.trim().parse::<i64>().ok()))
        }
    }
}

/// Stores `v`, read for `key` by [`comm_value`], in its field.
pub(crate) fn set_comm(c: &mut CommArgs, key: CommKey, v: CommValue) {
    match (key, v) {
        (CommKey::Collective, CommValue::Text(t)) => c.collective = t,
        (CommKey::Dtype, CommValue::Text(t)) => c.dtype = t,
        (CommKey::PgName, CommValue::Text(t)) => c.pg_name = t,
        (CommKey::PgDesc, CommValue::Text(t)) => c.pg_desc = t,
        (CommKey::PgRanks, CommValue::Text(t)) => c.pg_ranks = t,
        (CommKey::InSplit, CommValue::Text(t)) => c.in_split = t,
        (CommKey::OutSplit, CommValue::Text(t)) => c.out_split = t,
        (CommKey::InNelems, CommValue::Count(n)) => c.in_nelems = n,
        (CommKey::OutNelems, CommValue::Count(n)) => c.out_nelems = n,
        (CommKey::GroupSize, CommValue::Count(n)) => {
            c.group_size = n.and_then(|v| u32::try_from(v).ok());
        }
        (CommKey::Seq, CommValue::Signed(n)) => c.seq = n,
        (CommKey::SrcRank, CommValue::Signed(n)) => c.src_rank = n,
        (CommKey::DstRank, CommValue::Signed(n)) => c.dst_rank = n,
        // `comm_value` gives each key its kind of value.
        _ => {}
    }
}

/// Distinct collective argument texts kept per thread before the pool starts over
/// (all-to-all split lists can all differ; groups, types and names repeat).
const SHARED_TEXTS: usize = 4096;

/// `t` as a shared text: the copy this thread made last time, when it made one. A
/// trace writes the same groups, types and collective names on every collective, and
/// each collective's record copies them.
fn shared_text(t: &str) -> Arc<str> {
    thread_local! {
        static POOL: RefCell<FxSet<Arc<str>>> = RefCell::new(FxSet::default());
    }
    POOL.with_borrow_mut(|pool| {
        if let Some(s) = pool.get(t) {
            return Arc::clone(s);
        }
        if pool.len() >= SHARED_TEXTS {
            pool.clear();
        }
        let s: Arc<str> = t.into();
        pool.insert(Arc::clone(&s));
        s
    })
}

/// A JSON value as text: a string's content, a number's or an array's JSON text;
/// `None` for `null`, booleans and objects. `raw` is valid JSON, so a string without a
/// backslash is its content between the quotes (borrowed: numbers are parsed, not kept).
fn raw_text(raw: &str) -> Option<Cow<'_, str>> {
    let t = raw.trim();
    match t.as_bytes().first()? {
        b'"' => match t.strip_prefix('"').and_then(|s| s.strip_suffix('"')) {
            Some(content) if !content.contains('\\') => Some(Cow::Borrowed(content)),
            _ => serde_json::from_str::<String>(t).ok().map(Cow::Owned),
        },
        b'-' | b'0'..=b'9' | b'[' => Some(Cow::Borrowed(t)),
        _ => None,
    }
}

/// An integer id: a JSON integer, an integral float, or a string holding a decimal or
/// `0x` hexadecimal integer. Legacy traces write GPU thread ids as `"stream 7"`; other
/// non-numeric strings (`"Spans"`) map to a stable negative id (FNV-1a hash).
pub(crate) struct Id(pub i64);

fn id_of_str(s: &str) -> i64 {
    let t = s.trim();
    if let Ok(v) = t.parse::<i64>() {
        return v;
    }
    if let Some(h) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        if let Ok(v) = u64::from_str_radix(h, 16) {
            // Hexadecimal ids are bit patterns: keep all 64 bits.
            return i64::from_ne_bytes(v.to_ne_bytes());
        }
    }
    if let Some(n) = t.strip_prefix("stream ").and_then(|r| r.trim().parse::<i64>().ok()) {
        return n;
    }
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in t.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    // Negative and distinct from every real pid/tid/stream.
    i64::from_ne_bytes((h | (1 << 63)).to_ne_bytes())
}

impl<'de> LenientVisit<'de> for Id {
    fn visit<D: Deserializer<'de>>(d: D) -> Result<Option<Self>, D::Error> {
        lenient_visitor!(V, Id, "an integer", {
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
                Ok(Some(Id(v)))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
                Ok(i64::try_from(v).ok().map(Id))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
                Ok((v.is_finite() && v.fract() == 0.0 && v.abs() < 9.2e18).then_some(Id(v as i64)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Some(Id(id_of_str(v))))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, s: A) -> Result<Self::Value, A::Error> {
                drain_seq(s)?;
                Ok(None)
            }
            fn visit_map<A: MapAccess<'de>>(self, m: A) -> Result<Self::Value, A::Error> {
                drain_map(m)?;
                Ok(None)
            }
        });
        d.deserialize_any(V)
    }
}

/// A string borrowed from the input when it has no escapes.
pub(crate) struct Str<'a>(pub Cow<'a, str>);

impl<'de: 'a, 'a> LenientVisit<'de> for Str<'a> {
    fn visit<D: Deserializer<'de>>(d: D) -> Result<Option<Self>, D::Error> {
        struct V<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = Option<Str<'a>>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(Some(Str(Cow::Borrowed(v))))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Some(Str(Cow::Owned(v.to_owned()))))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
                Ok(Some(Str(Cow::Owned(v))))
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
                Ok(None)
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
                Ok(None)
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
                Ok(None)
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
                Ok(None)
            }
            fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(None)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, s: A) -> Result<Self::Value, A::Error> {
                drain_seq(s)?;
                Ok(None)
            }
            fn visit_map<A: MapAccess<'de>>(self, m: A) -> Result<Self::Value, A::Error> {
                drain_map(m)?;
                Ok(None)
            }
        }
        d.deserialize_any(V(std::marker::PhantomData))
    }
}

/// The phase letter.
pub(crate) struct PhaseValue(pub Phase);

impl PhaseValue {
    /// The phase a `ph` string names.
    pub(crate) fn of(v: &[u8]) -> Phase {
        match v {
            b"X" => Phase::Complete,
            b"s" => Phase::FlowStart,
            b"f" => Phase::FlowEnd,
            b"t" => Phase::FlowStep,
            b"B" | b"E" => Phase::BeginEnd,
            b"i" | b"I" => Phase::Instant,
            _ => Phase::Other,
        }
    }
}

impl<'de> LenientVisit<'de> for PhaseValue {
    fn visit<D: Deserializer<'de>>(d: D) -> Result<Option<Self>, D::Error> {
        lenient_visitor!(V, PhaseValue, "a phase letter", {
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Some(PhaseValue(PhaseValue::of(v.as_bytes()))))
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
                Ok(None)
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
                Ok(None)
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
                Ok(None)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, s: A) -> Result<Self::Value, A::Error> {
                drain_seq(s)?;
                Ok(None)
            }
            fn visit_map<A: MapAccess<'de>>(self, m: A) -> Result<Self::Value, A::Error> {
                drain_map(m)?;
                Ok(None)
            }
        });
        d.deserialize_any(V)
    }
}

impl Default for PhaseValue {
    fn default() -> Self {
        PhaseValue(Phase::Missing)
    }
}

/// `grid` / `block`: `[x, y, z]` (missing trailing dims are 1), or a bare integer.
pub(crate) struct Dim3(pub [u32; 3]);

impl<'de> LenientVisit<'de> for Dim3 {
    fn visit<D: Deserializer<'de>>(d: D) -> Result<Option<Self>, D::Error> {
        lenient_visitor!(V, Dim3, "[x, y, z]", {
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
                Ok(u32::try_from(v).ok().map(|x| Dim3([x, 1, 1])))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
                Ok(u32::try_from(v).ok().map(|x| Dim3([x, 1, 1])))
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
                Ok(None)
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
                Ok(None)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut s: A) -> Result<Self::Value, A::Error> {
                let mut out = [1u32; 3];
                let mut ok = true;
                let mut i = 0;
                while let Some(Lenient(v)) = s.next_element::<Lenient<Id>>()? {
                    match v.and_then(|v| u32::try_from(v.0).ok()) {
                        Some(x) if i < 3 => out[i] = x,
                        _ => ok = false,
                    }
                    i += 1;
                }
                Ok((ok && i > 0).then_some(Dim3(out)))
            }
            fn visit_map<A: MapAccess<'de>>(self, m: A) -> Result<Self::Value, A::Error> {
                drain_map(m)?;
                Ok(None)
            }
        });
        d.deserialize_any(V)
    }
}

/// `Input Dims` / `Input Strides`: one entry per argument; a tensor's dims, a tensor
/// list's dims, or `[]` for scalars. Anything unexpected inside reads as `[]`.
pub(crate) struct DimsList(pub Vec<Dims>);

impl<'de> LenientVisit<'de> for DimsList {
    fn visit<D: Deserializer<'de>>(d: D) -> Result<Option<Self>, D::Error> {
        lenient_visitor!(V, DimsList, "a list of dims", {
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
                Ok(None)
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
                Ok(None)
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
                Ok(None)
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
                Ok(None)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut s: A) -> Result<Self::Value, A::Error> {
                let mut out = Vec::with_capacity(s.size_hint().unwrap_or(4));
                while let Some(Lenient(d)) = s.next_element::<Lenient<OneDims>>()? {
                    out.push(d.map_or(Dims::Tensor(Vec::new()), |d| d.0));
                }
                Ok(Some(DimsList(out)))
            }
            fn visit_map<A: MapAccess<'de>>(self, m: A) -> Result<Self::Value, A::Error> {
                drain_map(m)?;
                Ok(None)
            }
        });
        d.deserialize_any(V)
    }
}

/// One argument's dims: `[2, 3]` (tensor) or `[[2, 3], [4]]` (tensor list).
struct OneDims(Dims);

/// One element of a dims list: a number or a nested list of numbers.
enum DimItem {
    Num(i64),
    List(Vec<i64>),
}

impl<'de> LenientVisit<'de> for DimItem {
    fn visit<D: Deserializer<'de>>(d: D) -> Result<Option<Self>, D::Error> {
        lenient_visitor!(V, DimItem, "a dimension", {
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
                Ok(Some(DimItem::Num(v)))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
                Ok(i64::try_from(v).ok().map(DimItem::Num))
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
                Ok(None)
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
                Ok(None)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut s: A) -> Result<Self::Value, A::Error> {
                let mut out = Vec::new();
                while let Some(Lenient(v)) = s.next_element::<Lenient<Id>>()? {
                    if let Some(v) = v {
                        out.push(v.0);
                    }
                }
                Ok(Some(DimItem::List(out)))
            }
            fn visit_map<A: MapAccess<'de>>(self, m: A) -> Result<Self::Value, A::Error> {
                drain_map(m)?;
                Ok(None)
            }
        });
        d.deserialize_any(V)
    }
}

impl<'de> LenientVisit<'de> for OneDims {
    fn visit<D: Deserializer<'de>>(d: D) -> Result<Option<Self>, D::Error> {
        lenient_visitor!(V, OneDims, "dims", {
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
                Ok(None)
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
                Ok(None)
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
                Ok(None)
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
                Ok(None)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut s: A) -> Result<Self::Value, A::Error> {
                let mut nums = Vec::new();
                let mut lists = Vec::new();
                while let Some(Lenient(item)) = s.next_element::<Lenient<DimItem>>()? {
                    match item {
                        Some(DimItem::Num(n)) => nums.push(n),
                        Some(DimItem::List(l)) => lists.push(l),
                        None => {}
                    }
                }
                Ok(Some(OneDims(if lists.is_empty() {
                    Dims::Tensor(nums)
                } else {
                    Dims::List(lists)
                })))
            }
            fn visit_map<A: MapAccess<'de>>(self, m: A) -> Result<Self::Value, A::Error> {
                drain_map(m)?;
                Ok(None)
            }
        });
        d.deserialize_any(V)
    }
}

/// `Input type` / `Concrete Inputs`: a list of strings; numbers are kept as their
/// decimal text, anything else as `""`.
pub(crate) struct StrList(pub Vec<String>);

struct AnyText(String);

impl<'de> LenientVisit<'de> for AnyText {
    fn visit<D: Deserializer<'de>>(d: D) -> Result<Option<Self>, D::Error> {
        lenient_visitor!(V, AnyText, "a string", {
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Some(AnyText(v.to_owned())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
                Ok(Some(AnyText(v)))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
                Ok(Some(AnyText(v.to_string())))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
                Ok(Some(AnyText(v.to_string())))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
                Ok(Some(AnyText(v.to_string())))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, s: A) -> Result<Self::Value, A::Error> {
                drain_seq(s)?;
                Ok(None)
            }
            fn visit_map<A: MapAccess<'de>>(self, m: A) -> Result<Self::Value, A::Error> {
                drain_map(m)?;
                Ok(None)
            }
        });
        d.deserialize_any(V)
    }
}

impl<'de> LenientVisit<'de> for StrList {
    fn visit<D: Deserializer<'de>>(d: D) -> Result<Option<Self>, D::Error> {
        lenient_visitor!(V, StrList, "a list of strings", {
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
                Ok(None)
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
                Ok(None)
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
                Ok(None)
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
                Ok(None)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut s: A) -> Result<Self::Value, A::Error> {
                let mut out = Vec::with_capacity(s.size_hint().unwrap_or(4));
                while let Some(Lenient(t)) = s.next_element::<Lenient<AnyText>>()? {
                    out.push(t.map(|t| t.0).unwrap_or_default());
                }
                Ok(Some(StrList(out)))
            }
            fn visit_map<A: MapAccess<'de>>(self, m: A) -> Result<Self::Value, A::Error> {
                drain_map(m)?;
                Ok(None)
            }
        });
        d.deserialize_any(V)
    }
}

/// Converts a Kineto time in microseconds, as written (`1419247332972.313`, an integer,
/// a quoted number, or exponent notation), to integer nanoseconds.
///
/// Plain decimals are converted exactly (digits shifted by three places, rounded half
/// away from zero at the fourth decimal): an `f64` cannot hold epoch microseconds with
/// nanosecond resolution. Exponent notation goes through `f64`.
pub(crate) fn micros_to_ns(raw: &str) -> Result<i64, ()> {
    let mut t = raw.trim().as_bytes();
    if t.len() >= 2 && t[0] == b'"' && t[t.len() - 1] == b'"' {
        t = t[1..t.len() - 1].trim_ascii();
    }
    decimal_us_to_ns(t)
}

/// Why a `ts` or `dur` could not be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BadTime {
    /// Not a number (`null`, a word, an object, a malformed number).
    NotANumber,
    /// A number, but beyond what nanoseconds in an `i64` hold (±9.2e18 ns, 292 years).
    OutOfRange,
}

/// [`micros_to_ns`], and when it fails, why ([`why_not_micros`]).
pub(crate) fn micros_or_why(raw: &str) -> Result<i64, BadTime> {
    micros_to_ns(raw).map_err(|()| why_not_micros(raw.as_bytes()))
}

/// Why [`micros_to_ns`] or [`decimal_us_to_ns`] refused `raw` (a JSON value's text,
/// perhaps a quoted one): a JSON number (sign, then a digit) that `f64` reads is out of
/// range, anything else is not a number. Only called on the error path.
pub(crate) fn why_not_micros(raw: &[u8]) -> BadTime {
    let mut t = raw.trim_ascii();
    if t.len() >= 2 && t[0] == b'"' && t[t.len() - 1] == b'"' {
        t = t[1..t.len() - 1].trim_ascii();
    }
    let digits = t.strip_prefix(b"-").or_else(|| t.strip_prefix(b"+")).unwrap_or(t);
    let number = digits.first().is_some_and(u8::is_ascii_digit)
        && std::str::from_utf8(t)
            .ok()
            .and_then(|s| s.parse::<f64>().ok())
            .is_some_and(|v| !v.is_nan());
    if number {
        BadTime::OutOfRange
    } else {
        BadTime::NotANumber
    }
}

/// [`micros_to_ns`] of a number's bytes, already trimmed and unquoted.
pub(crate) fn decimal_us_to_ns(t: &[u8]) -> Result<i64, ()> {
    let (neg, body) = match t.first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    if body.is_empty() {
        return Err(());
    }
    let mut int: i64 = 0;
    let mut i = 0;
    let mut digits = 0;
    while i < body.len() && body[i].is_ascii_digit() {
        int =
            int.checked_mul(10).and_then(|v| v.checked_add(i64::from(body[i] - b'0'))).ok_or(())?;
        i += 1;
        digits += 1;
    }
    let mut frac: i64 = 0; // the first three decimals, as ns
    let mut round_up = false;
    if i < body.len() && body[i] == b'.' {
        i += 1;
        let mut k = 0;
        while i < body.len() && body[i].is_ascii_digit() {
            let d = i64::from(body[i] - b'0');
            if k < 3 {
                frac = frac * 10 + d;
            } else if k == 3 {
                round_up = d >= 5;
            }
            k += 1;
            i += 1;
            digits += 1;
        }
        for _ in k..3 {
            frac *= 10;
        }
    }
    if digits == 0 {
        return Err(());
    }
    if i < body.len() {
        if body[i] == b'e' || body[i] == b'E' {
            let s = std::str::from_utf8(t).map_err(|_| ())?;
            let v: f64 = s.parse().map_err(|_| ())?;
            let ns = (v * 1000.0).round();
            return if ns.is_finite() && ns.abs() < 9.2e18 { Ok(ns as i64) } else { Err(()) };
        }
        return Err(());
    }
    let ns =
        int.checked_mul(1000).and_then(|v| v.checked_add(frac + i64::from(round_up))).ok_or(())?;
    Ok(if neg { -ns } else { ns })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A raw value's text: borrowed between the quotes when a string has no escape,
    /// as serde reads it otherwise; the same text serde's `String` gives for every string.
    #[test]
    fn raw_text_is_what_serde_reads() {
        for raw in [
            r#""allreduce""#,
            r#" "default_pg" "#,
            r#""""#,
            r#""a\"b""#,
            r#""caf\u00e9""#,
            r#""tab\tx""#,
            r#""[0, 1, 2]""#,
            r#""naïve""#,
        ] {
            let want: String = serde_json::from_str(raw.trim()).unwrap();
            assert_eq!(raw_text(raw).as_deref(), Some(want.as_str()), "{raw}");
        }
        assert_eq!(raw_text(" 4096 ").as_deref(), Some("4096"));
        assert_eq!(raw_text("[1, 2]").as_deref(), Some("[1, 2]"));
        assert_eq!(raw_text("-3").as_deref(), Some("-3"));
        for none in ["null", "true", "{}", ""] {
            assert_eq!(raw_text(none), None, "{none}");
        }
        let mut c = CommArgs::default();
        comm_arg(&mut c, CommKey::InNelems, r#""4096""#);
        comm_arg(&mut c, CommKey::OutNelems, "2048.0");
        comm_arg(&mut c, CommKey::Seq, r#"" 7 ""#);
        comm_arg(&mut c, CommKey::PgDesc, r#""mesh\u005ftp""#);
        assert_eq!((c.in_nelems, c.out_nelems, c.seq), (Some(4096), Some(2048), Some(7)));
        assert_eq!(c.pg_desc.as_deref(), Some("mesh_tp"));
    }

    fn ns(s: &str) -> Result<i64, ()> {
        decimal_us_to_ns(s.as_bytes())
    }

    #[test]
    fn micros_convert_exactly() {
        assert_eq!(ns("1419247332972.313"), Ok(1_419_247_332_972_313));
        assert_eq!(ns("1679055451546825"), Ok(1_679_055_451_546_825_000));
        assert_eq!(ns("22.51"), Ok(22_510));
        assert_eq!(ns("0.0004"), Ok(0));
        assert_eq!(ns("0.0005"), Ok(1));
        assert_eq!(ns("-3.5"), Ok(-3_500));
        assert_eq!(ns("1.5e3"), Ok(1_500_000));
        assert_eq!(ns("7."), Ok(7_000));
        assert_eq!(ns(""), Err(()));
        assert_eq!(ns("-"), Err(()));
        assert_eq!(ns("abc"), Err(()));
        assert_eq!(ns("1.2.3"), Err(()));
        assert_eq!(ns("99999999999999999999"), Err(()));
    }

    #[test]
    fn ids_from_strings() {
        assert_eq!(id_of_str("42"), 42);
        assert_eq!(id_of_str("0x10"), 16);
        assert_eq!(id_of_str("stream 7"), 7);
        assert!(id_of_str("Spans") < 0);
        assert_eq!(id_of_str("Spans"), id_of_str("Spans"));
        assert_ne!(id_of_str("Spans"), id_of_str("Traces"));
    }

    fn event(json: &str) -> Event<'_> {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn lenient_fields_read_as_absent() {
        let e = event(
            r#"{"ph":"X","cat":7,"name":["x"],"pid":"12","tid":{"a":1},"ts":"1.5","dur":2,
               "args":{"External id":"9","grid":[1,"a"],"block":256,"Input Dims":[[2,3],[[4],[5,6]],null,"x"],
                       "Input type":["float",3,null],"correlation":1.0,"unknown":{"deep":[1,2]}}}"#,
        );
        assert_eq!(e.ph, Phase::Complete);
        assert!(e.cat.is_none() && e.name.is_none());
        assert_eq!((e.pid, e.tid), (Some(12), None));
        assert_eq!((e.ts_ns, e.dur_ns), (Some(Ok(1500)), Some(Ok(2000))));
        assert_eq!(e.args.external_id, Some(9));
        assert_eq!(e.args.correlation, Some(1));
        assert_eq!(e.args.grid, None);
        assert_eq!(e.args.block, Some([256, 1, 1]));
        let args = op_args(&e.args.shapes);
        assert_eq!(
            args.input_dims,
            vec![
                Dims::Tensor(vec![2, 3]),
                Dims::List(vec![vec![4], vec![5, 6]]),
                Dims::Tensor(vec![]),
                Dims::Tensor(vec![])
            ]
        );
        assert_eq!(args.input_types, vec!["float", "3", ""]);
    }

    #[test]
    fn names_borrow_unless_escaped() {
        let e = event(r#"{"name":"plain","cat":"a\"b"}"#);
        assert!(matches!(e.name, Some(Cow::Borrowed("plain"))));
        assert_eq!(e.cat.as_deref(), Some("a\"b"));
    }

    /// Refused times are told apart: numbers too large for `i64` nanoseconds (1e18 µs
    /// = 1e21 ns, 2^63 ≈ 9.22e18) are out of range, anything else is not a number.
    #[test]
    fn refused_times_say_why() {
        for raw in ["1e18", "-1e18", "1e300", "1e400", "99999999999999999999", "\"1e18\""] {
            assert_eq!(micros_or_why(raw), Err(BadTime::OutOfRange), "{raw}");
        }
        for raw in ["null", "true", "\"abc\"", "{}", "[1]", "-", "", "1.2.3", "NaN", "inf", "-inf"]
        {
            assert_eq!(micros_or_why(raw), Err(BadTime::NotANumber), "{raw}");
        }
        assert_eq!(micros_or_why("1e15"), Ok(1_000_000_000_000_000_000));
        assert_eq!(micros_or_why("1.5"), Ok(1500));
    }
}
