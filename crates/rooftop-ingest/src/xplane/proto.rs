//! Protobuf messages of a JAX profile, written by hand as `prost` structs (no `protoc`
//! at build time).
//!
//! - XSpace, XPlane, XLine, XEvent, XStat, XEventMetadata, XStatMetadata: the public
//!   `xplane.proto` (package `tensorflow.profiler`; `tsl/profiler/protobuf/xplane.proto`
//!   in openxla/xla, `tensorflow/core/profiler/protobuf/xplane.proto` in older
//!   TensorFlow), every field with its number. `XSpace.hostnames` (4) and
//!   `XEventMetadata.child_id` (6) are the newer fields.
//! - HloProto and the messages under it: the subset of `xla/service/hlo.proto` and
//!   `xla/xla_data.proto` (openxla/xla) the analysis reads. Field numbers are the
//!   proto's; fields not declared here (literals, shardings, schedules, buffer
//!   assignments, ...) are skipped by the decoder, so newer and older HLO protos decode
//!   alike.
//!
//! Integer types follow the `.proto` (`int64` → `i64`, `uint64` → `u64`); `repeated`
//! scalars accept both packed and unpacked encodings, as protobuf decoders must.

#![allow(missing_docs)]

use prost::Message;
use std::collections::HashMap;

/// Why encoded bytes did not decode (the reader then finds where with its wire walk).
#[derive(Debug)]
pub enum DecodeFailure {
    Prost(prost::DecodeError),
    /// A field key or length of an `XLine` runs past its end.
    Malformed(&'static str),
}

impl From<prost::DecodeError> for DecodeFailure {
    fn from(e: prost::DecodeError) -> Self {
        DecodeFailure::Prost(e)
    }
}

impl std::fmt::Display for DecodeFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DecodeFailure::Prost(e) => write!(f, "{e}"),
            DecodeFailure::Malformed(m) => f.write_str(m),
        }
    }
}

// ----- xplane.proto ---------------------------------------------------------------------

/// `XSpace` with its planes left encoded (zero-copy slices of the file): the reader
/// decodes one plane, then one line, at a time, so memory holds the file and one line.
#[derive(Clone, PartialEq, prost::Message)]
pub struct XSpaceLazy {
    #[prost(bytes = "bytes", repeated, tag = "1")]
    pub planes: Vec<bytes::Bytes>,
    #[prost(string, repeated, tag = "2")]
    pub errors: Vec<String>,
    #[prost(string, repeated, tag = "3")]
    pub warnings: Vec<String>,
    #[prost(string, repeated, tag = "4")]
    pub hostnames: Vec<String>,
}

/// An `XPlane`'s name alone (everything else skipped while decoding).
#[derive(Clone, PartialEq, prost::Message)]
pub struct XPlaneName {
    #[prost(string, tag = "2")]
    pub name: String,
}

/// `XPlane` with its lines left encoded.
#[derive(Clone, PartialEq, prost::Message)]
pub struct XPlaneLazy {
    #[prost(int64, tag = "1")]
    pub id: i64,
    #[prost(string, tag = "2")]
    pub name: String,
    #[prost(bytes = "bytes", repeated, tag = "3")]
    pub lines: Vec<bytes::Bytes>,
    #[prost(map = "int64, message", tag = "4")]
    pub event_metadata: HashMap<i64, XEventMetadata>,
    #[prost(map = "int64, message", tag = "5")]
    pub stat_metadata: HashMap<i64, XStatMetadata>,
    #[prost(message, repeated, tag = "6")]
    pub stats: Vec<XStat>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct XSpace {
    #[prost(message, repeated, tag = "1")]
    pub planes: Vec<XPlane>,
    #[prost(string, repeated, tag = "2")]
    pub errors: Vec<String>,
    #[prost(string, repeated, tag = "3")]
    pub warnings: Vec<String>,
    #[prost(string, repeated, tag = "4")]
    pub hostnames: Vec<String>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct XPlane {
    #[prost(int64, tag = "1")]
    pub id: i64,
    #[prost(string, tag = "2")]
    pub name: String,
    #[prost(message, repeated, tag = "3")]
    pub lines: Vec<XLine>,
    #[prost(map = "int64, message", tag = "4")]
    pub event_metadata: HashMap<i64, XEventMetadata>,
    #[prost(map = "int64, message", tag = "5")]
    pub stat_metadata: HashMap<i64, XStatMetadata>,
    #[prost(message, repeated, tag = "6")]
    pub stats: Vec<XStat>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct XLine {
    #[prost(int64, tag = "1")]
    pub id: i64,
    #[prost(int64, tag = "10")]
    pub display_id: i64,
    #[prost(string, tag = "2")]
    pub name: String,
    #[prost(string, tag = "11")]
    pub display_name: String,
    /// Start of the line, ns; `XEvent.offset_ps` is relative to it.
    #[prost(int64, tag = "3")]
    pub timestamp_ns: i64,
    #[prost(int64, tag = "9")]
    pub duration_ps: i64,
    #[prost(message, repeated, tag = "4")]
    pub events: Vec<XEvent>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct XEvent {
    #[prost(int64, tag = "1")]
    pub metadata_id: i64,
    #[prost(oneof = "x_event::Data", tags = "2, 5")]
    pub data: Option<x_event::Data>,
    #[prost(int64, tag = "3")]
    pub duration_ps: i64,
    #[prost(message, repeated, tag = "4")]
    pub stats: Vec<XStat>,
}

pub mod x_event {
    #[derive(Clone, Copy, PartialEq, prost::Oneof)]
    pub enum Data {
        /// Start, ps after the line's `timestamp_ns`.
        #[prost(int64, tag = "2")]
        OffsetPs(i64),
        /// An aggregated event (no time of its own).
        #[prost(int64, tag = "5")]
        NumOccurrences(i64),
    }
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct XStat {
    #[prost(int64, tag = "1")]
    pub metadata_id: i64,
    #[prost(oneof = "x_stat::Value", tags = "2, 3, 4, 5, 6, 7")]
    pub value: Option<x_stat::Value>,
}

pub mod x_stat {
    #[derive(Clone, PartialEq, prost::Oneof)]
    pub enum Value {
        #[prost(double, tag = "2")]
        DoubleValue(f64),
        #[prost(uint64, tag = "3")]
        Uint64Value(u64),
        #[prost(int64, tag = "4")]
        Int64Value(i64),
        #[prost(string, tag = "5")]
        StrValue(String),
        #[prost(bytes = "vec", tag = "6")]
        BytesValue(Vec<u8>),
        /// A string interned as the name of the `XStatMetadata` with this id.
        #[prost(uint64, tag = "7")]
        RefValue(u64),
    }
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct XEventMetadata {
    #[prost(int64, tag = "1")]
    pub id: i64,
    #[prost(string, tag = "2")]
    pub name: String,
    #[prost(string, tag = "4")]
    pub display_name: String,
    #[prost(bytes = "vec", tag = "3")]
    pub metadata: Vec<u8>,
    #[prost(message, repeated, tag = "5")]
    pub stats: Vec<XStat>,
    #[prost(int64, repeated, tag = "6")]
    pub child_id: Vec<i64>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct XStatMetadata {
    #[prost(int64, tag = "1")]
    pub id: i64,
    #[prost(string, tag = "2")]
    pub name: String,
    #[prost(string, tag = "3")]
    pub description: String,
}

/// An `XLine` without its events (skipped while decoding); [`line_events`] decodes them
/// one at a time, so a line of millions of host events never sits in memory at once.
#[derive(Clone, PartialEq, prost::Message)]
pub struct XLineHead {
    #[prost(int64, tag = "1")]
    pub id: i64,
    #[prost(string, tag = "2")]
    pub name: String,
    #[prost(string, tag = "11")]
    pub display_name: String,
    #[prost(int64, tag = "3")]
    pub timestamp_ns: i64,
}

impl XLineHead {
    /// The display name, else the name.
    pub fn label(&self) -> &str {
        if self.display_name.is_empty() {
            &self.name
        } else {
            &self.display_name
        }
    }
}

/// Reads a varint at `pos` of `buf`: the value and the position after it.
fn varint_at(buf: &[u8], pos: usize) -> Option<(u64, usize)> {
    let mut v: u64 = 0;
    for i in 0..10 {
        let b = *buf.get(pos + i)?;
        v |= u64::from(b & 0x7f) << (7 * i);
        if b < 0x80 {
            return Some((v, pos + i + 1));
        }
    }
    None
}

/// The `events` (field 4) of an encoded `XLine`, each decoded when reached (zero-copy
/// slices of `line`). Other fields are skipped; malformed bytes end the iteration with an
/// error.
pub fn line_events(
    line: &bytes::Bytes,
) -> impl Iterator<Item = Result<XEvent, DecodeFailure>> + '_ {
    let mut pos = 0usize;
    std::iter::from_fn(move || {
        while pos < line.len() {
            let Some((key, next)) = varint_at(line, pos) else {
                pos = line.len();
                return Some(Err(DecodeFailure::Malformed("XLine: truncated field key")));
            };
            let (field, wire) = (key >> 3, key & 7);
            // The field's value: `[body, stop)`.
            let span = match wire {
                0 => varint_at(line, next).map(|(_, stop)| (next, stop)),
                1 => next.checked_add(8).map(|stop| (next, stop)),
                5 => next.checked_add(4).map(|stop| (next, stop)),
                2 => varint_at(line, next).and_then(|(len, body)| {
                    Some((body, body.checked_add(usize::try_from(len).ok()?)?))
                }),
                _ => None,
            };
            let Some((body, stop)) = span.filter(|&(_, stop)| stop <= line.len()) else {
                pos = line.len();
                return Some(Err(DecodeFailure::Malformed("XLine: a field runs past the end")));
            };
            pos = stop;
            if field == 4 && wire == 2 {
                return Some(XEvent::decode(line.slice(body..stop)).map_err(DecodeFailure::from));
            }
        }
        None
    })
}

// ----- hlo.proto / xla_data.proto (subset) ----------------------------------------------

#[derive(Clone, PartialEq, prost::Message)]
pub struct HloProto {
    #[prost(message, optional, tag = "1")]
    pub hlo_module: Option<HloModuleProto>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct HloModuleProto {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(string, tag = "2")]
    pub entry_computation_name: String,
    #[prost(int64, tag = "6")]
    pub entry_computation_id: i64,
    #[prost(message, repeated, tag = "3")]
    pub computations: Vec<HloComputationProto>,
    #[prost(int64, tag = "5")]
    pub id: i64,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct HloComputationProto {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(message, repeated, tag = "2")]
    pub instructions: Vec<HloInstructionProto>,
    #[prost(int64, tag = "5")]
    pub id: i64,
    #[prost(int64, tag = "6")]
    pub root_id: i64,
    #[prost(bool, tag = "7")]
    pub is_fusion_computation: bool,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct HloInstructionProto {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(string, tag = "2")]
    pub opcode: String,
    #[prost(message, optional, tag = "3")]
    pub shape: Option<ShapeProto>,
    #[prost(message, optional, tag = "7")]
    pub metadata: Option<OpMetadata>,
    #[prost(string, tag = "11")]
    pub fusion_kind: String,
    #[prost(message, optional, tag = "15")]
    pub window: Option<Window>,
    #[prost(message, optional, tag = "16")]
    pub convolution_dimension_numbers: Option<ConvolutionDimensionNumbers>,
    #[prost(int64, tag = "50")]
    pub feature_group_count: i64,
    #[prost(int64, tag = "58")]
    pub batch_group_count: i64,
    #[prost(int64, tag = "26")]
    pub channel_id: i64,
    #[prost(string, tag = "28")]
    pub custom_call_target: String,
    #[prost(message, optional, tag = "30")]
    pub dot_dimension_numbers: Option<DotDimensionNumbers>,
    #[prost(int64, tag = "35")]
    pub id: i64,
    #[prost(int64, repeated, tag = "36")]
    pub operand_ids: Vec<i64>,
    #[prost(int64, repeated, tag = "38")]
    pub called_computation_ids: Vec<i64>,
    #[prost(bytes = "vec", tag = "43")]
    pub backend_config: Vec<u8>,
    #[prost(message, repeated, tag = "49")]
    pub replica_groups: Vec<ReplicaGroup>,
    #[prost(message, optional, tag = "87")]
    pub collective_device_list: Option<CollectiveDeviceListProto>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct ShapeProto {
    /// `PrimitiveType`, kept as its number (new types decode without a schema change).
    #[prost(int32, tag = "2")]
    pub element_type: i32,
    #[prost(int64, repeated, tag = "3")]
    pub dimensions: Vec<i64>,
    #[prost(message, repeated, tag = "4")]
    pub tuple_shapes: Vec<ShapeProto>,
    #[prost(message, optional, tag = "5")]
    pub layout: Option<LayoutProto>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct LayoutProto {
    #[prost(int64, repeated, tag = "1")]
    pub minor_to_major: Vec<i64>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct OpMetadata {
    #[prost(string, tag = "1")]
    pub op_type: String,
    #[prost(string, tag = "2")]
    pub op_name: String,
    #[prost(string, tag = "3")]
    pub source_file: String,
    #[prost(int32, tag = "4")]
    pub source_line: i32,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct DotDimensionNumbers {
    #[prost(int64, repeated, tag = "1")]
    pub lhs_contracting_dimensions: Vec<i64>,
    #[prost(int64, repeated, tag = "2")]
    pub rhs_contracting_dimensions: Vec<i64>,
    #[prost(int64, repeated, tag = "3")]
    pub lhs_batch_dimensions: Vec<i64>,
    #[prost(int64, repeated, tag = "4")]
    pub rhs_batch_dimensions: Vec<i64>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct WindowDimension {
    #[prost(int64, tag = "1")]
    pub size: i64,
    #[prost(int64, tag = "2")]
    pub stride: i64,
    #[prost(int64, tag = "3")]
    pub padding_low: i64,
    #[prost(int64, tag = "4")]
    pub padding_high: i64,
    #[prost(int64, tag = "5")]
    pub window_dilation: i64,
    #[prost(int64, tag = "6")]
    pub base_dilation: i64,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Window {
    #[prost(message, repeated, tag = "1")]
    pub dimensions: Vec<WindowDimension>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct ConvolutionDimensionNumbers {
    #[prost(int64, tag = "7")]
    pub input_batch_dimension: i64,
    #[prost(int64, tag = "8")]
    pub input_feature_dimension: i64,
    #[prost(int64, repeated, tag = "11")]
    pub input_spatial_dimensions: Vec<i64>,
    #[prost(int64, tag = "3")]
    pub kernel_input_feature_dimension: i64,
    #[prost(int64, tag = "4")]
    pub kernel_output_feature_dimension: i64,
    #[prost(int64, repeated, tag = "6")]
    pub kernel_spatial_dimensions: Vec<i64>,
    #[prost(int64, tag = "9")]
    pub output_batch_dimension: i64,
    #[prost(int64, tag = "10")]
    pub output_feature_dimension: i64,
    #[prost(int64, repeated, tag = "12")]
    pub output_spatial_dimensions: Vec<i64>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct ReplicaGroup {
    #[prost(int64, repeated, tag = "1")]
    pub replica_ids: Vec<i64>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct IotaReplicaGroupListProto {
    #[prost(int64, tag = "1")]
    pub num_replica_groups: i64,
    #[prost(int64, tag = "2")]
    pub num_devices_per_group: i64,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct CollectiveDeviceListProto {
    #[prost(message, repeated, tag = "1")]
    pub replica_groups: Vec<ReplicaGroup>,
    #[prost(message, optional, tag = "2")]
    pub iota_replica_group_list: Option<IotaReplicaGroupListProto>,
}

/// XLA `PrimitiveType` numbers (`xla/xla_data.proto`) → HLO text names.
pub fn primitive_type_name(t: i32) -> &'static str {
    match t {
        1 => "pred",
        2 => "s8",
        3 => "s16",
        4 => "s32",
        5 => "s64",
        6 => "u8",
        7 => "u16",
        8 => "u32",
        9 => "u64",
        10 => "f16",
        11 => "f32",
        12 => "f64",
        13 => "tuple",
        14 => "opaque",
        15 => "c64",
        16 => "bf16",
        17 => "token",
        18 => "c128",
        19 => "f8e5m2",
        20 => "f8e4m3fn",
        21 => "s4",
        22 => "u4",
        23 => "f8e4m3b11fnuz",
        24 => "f8e5m2fnuz",
        25 => "f8e4m3fnuz",
        26 => "s2",
        27 => "u2",
        28 => "f8e4m3",
        29 => "f8e3m4",
        30 => "s1",
        31 => "u1",
        32 => "f4e2m1fn",
        33 => "f8e8m0fnu",
        _ => "unknown",
    }
}
