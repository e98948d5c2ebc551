//! The device-file format (`docs/device-format.md`): TOML deserialisation, validation and
//! conversion of one `[[device]]` entry into a [`DeviceSpec`].
//!
//! Role: everything that turns file text into checked `DeviceSpec`s lives here; the
//! [`Catalog`](super::Catalog) decides what to do with them (merge, replace, extend).
//!
//! Invariants of what this module returns (the [`DeviceSpec`] invariants of `device/mod.rs`
//! plus): every number is finite; peaks, bandwidths, clocks, sizes are `> 0`; counts and
//! limits are whole numbers; `figure(key)` gives the right meta for every figure and
//! `PeakRate::meta` / `BandwidthRoof::meta` agree with it; ids are unique within a file.
//! Every error carries the file, the line and column of the offending key or value (or of
//! the device's `[[device]]` header), and one sentence saying what was expected. No input
//! can make this module panic: the TOML parser reports syntax errors with a span, and every
//! value is checked before it is converted.
//!
//! Units are those of the embedded catalog (`data/devices.toml`,
//! docs/reference/devices.md#conventions): TFLOP/s, decimal GB/s, binary KiB/MiB for caches
//! and shared memory; sizes are converted to bytes.

use super::{
    ArchFamily, BandwidthRoof, Catalog, DeviceFileError, DeviceSpec, FigureMeta, MemLevel,
    PeakRate, ResourceLimits, Vendor,
};
use crate::limits::Limit;
use crate::units::{Confidence, ExecUnit, Precision, Provenance};
use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::{Deserialize, Serialize, Serializer};
use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::fmt;
use std::ops::Range;
use toml::Spanned;

/// The only schema version this build reads.
pub(super) const SCHEMA_VERSION: i64 = 1;

const KIB: f64 = 1024.0;
const MIB: f64 = 1024.0 * 1024.0;

// ---------------------------------------------------------------------------------------
// The file's types: what is read (`toml::from_str`) and written (`toml::to_string`)
// ---------------------------------------------------------------------------------------

/// A device file as written: `schema_version` and its `[[device]]` entries.
///
/// Read with [`DeviceFile::from_toml`], written with [`DeviceFile::to_toml`]; turned
/// into checked [`DeviceSpec`]s by [`Catalog::resolve`](super::Catalog::resolve). The
/// positions (`Spanned`) are where a value was in the file, for error messages; values
/// built in code carry none ([`unplaced`]).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeviceFile {
    /// The format version (1); absent means 1.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub schema_version: Option<Spanned<i64>>,
    /// The `[[device]]` entries, in file order.
    #[serde(default)]
    pub device: Vec<Spanned<DeviceEntry>>,
}

/// Named figures of one section (`[device.peak_tflops]`): key, then the figure.
pub type FigureMap = BTreeMap<Spanned<String>, Spanned<Figure>>;

/// One `[[device]]` entry as written (docs/device-format.md, "Keys"): a device from
/// scratch (`id`, `name`, `vendor`, compute, memory and a peak required) or changes to
/// the device it `extends`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeviceEntry {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<Spanned<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub extends: Option<Spanned<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<Spanned<String>>,
    /// `nvidia`, `amd`, `apple`, `intel`, `cpu` or `other`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vendor: Option<Spanned<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub arch: Option<String>,
    /// `smXY`, `cdna3`, `rdna3`, `apple9`, `xe`, `cpu`, `unknown`, ...
    #[serde(skip_serializing_if = "Option::is_none")]
    pub family: Option<Spanned<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub chip: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compute_capability: Option<Spanned<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub llvm_target: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub aliases: Option<Vec<String>>,
    /// Default source of every figure without its own.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// Default confidence of every figure without its own.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub confidence: Option<Confidence>,
    /// Default provenance of every figure without its own.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provenance: Option<Provenance>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unsupported: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compute: Option<ComputeSection>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub peak_tflops: Option<FigureMap>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub variant_peaks_tflops: Option<FigureMap>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub achievable_tflops: Option<FigureMap>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory: Option<MemorySection>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limits: Option<LimitsSection>,
    /// `[device.sources]`: the source of each section's figures (below a figure's own).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sources: Option<SectionSources>,
}

/// `[device.sources]`: the source of every figure of one section this entry sets (a
/// figure's own inline `source` still wins); the device-level `source` stays the default
/// of the sections not named here.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SectionSources {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compute: Option<Spanned<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub peak_tflops: Option<Spanned<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub achievable_tflops: Option<Spanned<String>>,
    /// Memory size and device-memory bandwidth.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory: Option<Spanned<String>>,
    /// Cache sizes and cache-level bandwidths of `[device.memory]`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub caches: Option<Spanned<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limits: Option<Spanned<String>>,
}

/// `[device.compute]`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ComputeSection {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub num_cu: Option<Spanned<Figure>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cu_kind: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub warp_size: Option<Spanned<Figure>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub alt_warp_size: Option<Spanned<Figure>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub boost_clock_mhz: Option<Spanned<Figure>>,
}

/// `[device.memory]`: sizes in decimal GB and binary KiB/MiB, bandwidths in decimal GB/s.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MemorySection {
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    pub mem_type: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size_gb: Option<Spanned<Figure>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bandwidth_gbs: Option<Spanned<Figure>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub l2_mib: Option<Spanned<Figure>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub l2_kib: Option<Spanned<Figure>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub llc_mib: Option<Spanned<Figure>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub llc_kib: Option<Spanned<Figure>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub l2_bandwidth_gbs: Option<Spanned<Figure>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub llc_bandwidth_gbs: Option<Spanned<Figure>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub l1_bandwidth_gbs: Option<Spanned<Figure>>,
}

/// `[device.limits]`: per-SM/CU resource limits (shared memory in KiB or bytes as the
/// key says).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LimitsSection {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub smem_kib_per_cu: Option<Spanned<Figure>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub smem_kib_per_wgp: Option<Spanned<Figure>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub smem_kib_per_block_max: Option<Spanned<Figure>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub smem_kib_per_block_default: Option<Spanned<Figure>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub smem_alloc_granularity_bytes: Option<Spanned<Figure>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub smem_reserved_per_block_bytes: Option<Spanned<Figure>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_threads_per_block: Option<Spanned<Figure>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_threads_per_cu: Option<Spanned<Figure>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub regs_32bit_per_cu: Option<Spanned<Figure>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reg_file_kib_per_cu: Option<Spanned<Figure>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_regs_per_thread: Option<Spanned<Figure>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_warps_per_cu: Option<Spanned<Figure>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_blocks_per_cu: Option<Spanned<Figure>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub simds_per_cu: Option<Spanned<Figure>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_waves_per_simd: Option<Spanned<Figure>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vgpr_per_lane_per_simd: Option<Spanned<Figure>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agpr_per_lane_per_simd: Option<Spanned<Figure>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vgpr_alloc_granule: Option<Spanned<Figure>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sgpr_per_simd: Option<Spanned<Figure>>,
}

/// One number as written: a bare number, or a table
/// `{ value = ..., source = "...", confidence = "...", provenance = "..." }` whose meta
/// overrides the device's defaults for this figure. Written bare when it has no meta
/// (whole numbers as TOML integers), else as a table.
#[derive(Debug, Clone, PartialEq)]
pub struct Figure {
    pub value: f64,
    pub source: Option<String>,
    pub confidence: Option<Confidence>,
    pub provenance: Option<Provenance>,
}

impl Figure {
    /// A bare number (the device's default meta).
    pub fn new(value: f64) -> Figure {
        Figure { value, source: None, confidence: None, provenance: None }
    }

    /// This figure with its own source.
    #[must_use]
    pub fn with_source(mut self, source: impl Into<String>) -> Figure {
        self.source = Some(source.into());
        self
    }

    /// This figure with its own confidence.
    #[must_use]
    pub fn with_confidence(mut self, confidence: Confidence) -> Figure {
        self.confidence = Some(confidence);
        self
    }

    /// This figure with its own provenance.
    #[must_use]
    pub fn with_provenance(mut self, provenance: Provenance) -> Figure {
        self.provenance = Some(provenance);
        self
    }

    fn has_meta(&self) -> bool {
        self.source.is_some() || self.confidence.is_some() || self.provenance.is_some()
    }
}

/// A value built in code, with no position in a file (for the fields of [`DeviceEntry`]).
pub fn unplaced<T>(value: T) -> Spanned<T> {
    Spanned::new(0..0, value)
}

const FIGURE_FIELDS: &[&str] = &["value", "source", "confidence", "provenance"];

/// Whole numbers up to 2^53 are written as TOML integers (they read back exactly).
fn write_number<S: Serializer>(v: f64, s: S) -> Result<S::Ok, S::Error> {
    if v.fract() == 0.0 && v.abs() < 9.007_199_254_740_992e15 {
        s.serialize_i64(v as i64)
    } else {
        s.serialize_f64(v)
    }
}

/// A figure's value inside its table, written as [`write_number`] does.
struct Number(f64);

impl Serialize for Number {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        write_number(self.0, s)
    }
}

impl Serialize for Figure {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        if !self.has_meta() {
            return write_number(self.value, serializer);
        }
        let mut m = serializer.serialize_map(None)?;
        m.serialize_entry("value", &Number(self.value))?;
        if let Some(v) = &self.source {
            m.serialize_entry("source", v)?;
        }
        if let Some(v) = &self.confidence {
            m.serialize_entry("confidence", v)?;
        }
        if let Some(v) = &self.provenance {
            m.serialize_entry("provenance", v)?;
        }
        m.end()
    }
}

impl<'de> Deserialize<'de> for Figure {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct FigureVisitor;

        impl<'de> Visitor<'de> for FigureVisitor {
            type Value = Figure;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a number or an inline table { value = <number>, source = \"...\", confidence = \"...\", provenance = \"...\" }")
            }

            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Figure, E> {
                Ok(Figure::new(v as f64))
            }

            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Figure, E> {
                Ok(Figure::new(v as f64))
            }

            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Figure, E> {
                Ok(Figure::new(v))
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Figure, A::Error> {
                let mut fig = Figure::new(f64::NAN);
                let mut have_value = false;
                while let Some(key) = map.next_key::<String>()? {
                    match key.as_str() {
                        "value" => {
                            fig.value = map.next_value::<NumberOnly>()?.0;
                            have_value = true;
                        }
                        "source" => fig.source = Some(map.next_value()?),
                        "confidence" => fig.confidence = Some(map.next_value()?),
                        "provenance" => fig.provenance = Some(map.next_value()?),
                        other => return Err(de::Error::unknown_field(other, FIGURE_FIELDS)),
                    }
                }
                if !have_value {
                    return Err(de::Error::missing_field("value"));
                }
                Ok(fig)
            }
        }

        deserializer.deserialize_any(FigureVisitor)
    }
}

/// A number (integer or float) and nothing else.
struct NumberOnly(f64);

impl<'de> Deserialize<'de> for NumberOnly {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct NumVisitor;
        impl Visitor<'_> for NumVisitor {
            type Value = NumberOnly;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a number")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<NumberOnly, E> {
                Ok(NumberOnly(v as f64))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<NumberOnly, E> {
                Ok(NumberOnly(v as f64))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<NumberOnly, E> {
                Ok(NumberOnly(v))
            }
        }
        deserializer.deserialize_any(NumVisitor)
    }
}

// ---------------------------------------------------------------------------------------
// Positions and errors
// ---------------------------------------------------------------------------------------

/// The text being parsed and its name, for error positions.
struct Source<'a> {
    text: &'a str,
    origin: &'a str,
}

impl Source<'_> {
    /// 1-based line and column (in characters) of a byte offset.
    fn line_col(&self, offset: usize) -> (usize, usize) {
        let mut off = offset.min(self.text.len());
        while !self.text.is_char_boundary(off) {
            off -= 1;
        }
        let before = &self.text[..off];
        let line = before.matches('\n').count() + 1;
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        let column = before[line_start..].chars().count() + 1;
        (line, column)
    }

    /// An error at `span` (no position for values built in code: `text` is empty).
    fn error(&self, span: Option<&Range<usize>>, message: String) -> DeviceFileError {
        let (line, column) = match span.filter(|_| !self.text.is_empty()) {
            Some(s) => {
                let (l, c) = self.line_col(s.start);
                (Some(l), Some(c))
            }
            None => (None, None),
        };
        DeviceFileError { origin: self.origin.to_string(), line, column, message }
    }
}

/// Context of one `[[device]]` entry: where it is and what to call it in messages.
struct Entry<'a, 'b> {
    src: &'b Source<'a>,
    /// Span of the `[[device]]` header (errors about missing keys point there).
    header: Range<usize>,
    /// Id used in messages (`#3` while the id is unknown).
    label: String,
}

impl Entry<'_, '_> {
    fn err(&self, span: Option<&Range<usize>>, what: impl fmt::Display) -> DeviceFileError {
        self.src
            .error(Some(span.unwrap_or(&self.header)), format!("device `{}`: {what}", self.label))
    }
}

// ---------------------------------------------------------------------------------------
// Parsing a file
// ---------------------------------------------------------------------------------------

impl DeviceFile {
    /// A file of `entries` at the current schema version.
    pub fn new(entries: Vec<DeviceEntry>) -> DeviceFile {
        DeviceFile {
            schema_version: Some(unplaced(SCHEMA_VERSION)),
            device: entries.into_iter().map(unplaced).collect(),
        }
    }

    /// Reads a device file (`toml::from_str`); `origin` names it in errors. Only the
    /// syntax and the types of values are checked here: [`Catalog::resolve`] checks the
    /// rest.
    ///
    /// # Errors
    /// A TOML syntax error, an unknown key or a value of the wrong type, with its
    /// position.
    pub fn from_toml(text: &str, origin: &str) -> Result<DeviceFile, DeviceFileError> {
        let src = Source { text, origin };
        toml::from_str(text).map_err(|e| {
            let mut msg = e.message().trim().to_string();
            if let Some(first) = msg.lines().next() {
                msg = first.to_string();
            }
            src.error(e.span().as_ref(), msg)
        })
    }

    /// The file as TOML (`toml::to_string`): figures without meta of their own are bare
    /// numbers, the others tables (`[device.peak_tflops.fp32_vector]` with `value`,
    /// `source`, ...), which read back the same as the inline tables of the docs.
    ///
    /// # Errors
    /// A value TOML cannot hold (never for files built from checked figures).
    pub fn to_toml(&self) -> Result<String, DeviceFileError> {
        toml::to_string(self).map_err(|e| DeviceFileError {
            origin: "<device file being written>".to_string(),
            line: None,
            column: None,
            message: e.to_string(),
        })
    }
}

/// Parses `text` (named `origin` in errors); `extends` resolves against `base` and against
/// earlier entries of the same file.
pub(super) fn parse_with_base(
    text: &str,
    origin: &str,
    base: &Catalog,
) -> Result<Vec<DeviceSpec>, DeviceFileError> {
    let file = DeviceFile::from_toml(text, origin)?;
    resolve_file(&file, &Source { text, origin }, base)
}

/// [`parse_with_base`] of a file built in code (errors carry no position).
pub(super) fn resolve_built(
    file: &DeviceFile,
    origin: &str,
    base: &Catalog,
) -> Result<Vec<DeviceSpec>, DeviceFileError> {
    resolve_file(file, &Source { text: "", origin }, base)
}

/// Checks and converts every entry of `file`.
fn resolve_file(
    file: &DeviceFile,
    src: &Source<'_>,
    base: &Catalog,
) -> Result<Vec<DeviceSpec>, DeviceFileError> {
    if let Some(v) = &file.schema_version {
        if *v.get_ref() != SCHEMA_VERSION {
            return Err(src.error(
                Some(&v.span()),
                format!(
                    "schema_version {} is not supported: expected {SCHEMA_VERSION}",
                    v.get_ref()
                ),
            ));
        }
    }

    let limit = Limit::Devices.usize();
    if file.device.len() > limit {
        return Err(src.error(
            None,
            Limit::Devices.exceeded_here(&format!("{} `[[device]]` entries", file.device.len())),
        ));
    }
    if file.device.is_empty() && src.origin != super::catalog::BUILTIN_ORIGIN {
        return Err(src.error(
            None,
            "no devices: expected at least one `[[device]]` entry (docs/device-format.md)"
                .to_string(),
        ));
    }
    // Earlier entries of this file are visible to later `extends`; the index makes each
    // `extends` and each merge one hash probe (linear in the file, not quadratic).
    let mut working = base.clone();
    let mut names = super::lookup::Index::build(&working.devices);
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut out = Vec::new();
    for (index, spanned) in file.device.iter().enumerate() {
        let header = spanned.span();
        let dev = spanned.get_ref();
        let label = match (&dev.id, &dev.extends) {
            (Some(id), _) => id.get_ref().clone(),
            (None, Some(ext)) => ext.get_ref().clone(),
            (None, None) => format!("#{}", index + 1),
        };
        let entry = Entry { src, header, label };
        // `[device.sources]` gives its sections' figures their source first.
        let with_sources;
        let dev = if dev.sources.is_some() {
            let mut d = dev.clone();
            section_sources(&entry, &mut d)?;
            with_sources = d;
            &with_sources
        } else {
            dev
        };
        let spec = resolve(&entry, dev, &working, &names)?;
        let key = super::lookup::normalize(&spec.id);
        if let Some(first) = seen.get(&key) {
            return Err(entry.err(
                None,
                format!(
                    "duplicate id `{}` (device #{first} of this file has it): expected each id once per file",
                    spec.id
                ),
            ));
        }
        seen.insert(key, index + 1);
        names.merge(&mut working, spec.clone());
        out.push(spec);
    }
    Ok(out)
}

/// Gives every figure of a section named in `[device.sources]` that has no inline `source`
/// of its own that section's source. Refuses a source that names nothing: an empty one, or
/// one for a section in which this entry sets no figure.
fn section_sources(entry: &Entry<'_, '_>, dev: &mut DeviceEntry) -> Result<(), DeviceFileError> {
    let Some(sources) = dev.sources.take() else { return Ok(()) };
    let sections = [
        ("compute", sources.compute, "[device.compute]"),
        ("peak_tflops", sources.peak_tflops, "[device.peak_tflops]"),
        ("achievable_tflops", sources.achievable_tflops, "[device.achievable_tflops]"),
        ("memory", sources.memory, "memory.size_gb or memory.bandwidth_gbs"),
        ("caches", sources.caches, "a cache size or cache bandwidth of [device.memory]"),
        ("limits", sources.limits, "[device.limits]"),
    ];
    for (name, src, what) in sections {
        let Some(src) = src else { continue };
        let text = src.get_ref().trim();
        if text.is_empty() {
            return Err(entry.err(
                Some(&src.span()),
                format!("sources.{name} is empty: expected the document its figures come from"),
            ));
        }
        let figures = section_figures(dev, name);
        if figures.is_empty() {
            return Err(entry.err(
                Some(&src.span()),
                format!("sources.{name} is the source of no figure: this entry sets no {what}"),
            ));
        }
        let mut covered = 0;
        for fig in figures.into_iter().filter(|f| f.source.is_none()) {
            fig.source = Some(text.to_string());
            covered += 1;
        }
        if covered == 0 {
            return Err(entry.err(
                Some(&src.span()),
                format!(
                    "sources.{name} is the source of no figure: every figure of {what} here \
                     has its own `source`"
                ),
            ));
        }
    }
    Ok(())
}

/// The figures this entry sets in one `[device.sources]` section.
fn section_figures<'a>(dev: &'a mut DeviceEntry, section: &str) -> Vec<&'a mut Figure> {
    fn figs<'a>(
        list: impl IntoIterator<Item = &'a mut Option<Spanned<Figure>>>,
    ) -> Vec<&'a mut Figure> {
        list.into_iter().flatten().map(Spanned::get_mut).collect()
    }
    fn map(m: Option<&mut FigureMap>) -> Vec<&mut Figure> {
        m.into_iter().flat_map(|m| m.values_mut()).map(Spanned::get_mut).collect()
    }
    match section {
        "compute" => dev.compute.as_mut().map_or_else(Vec::new, |c| {
            figs([&mut c.num_cu, &mut c.warp_size, &mut c.alt_warp_size, &mut c.boost_clock_mhz])
        }),
        "peak_tflops" => map(dev.peak_tflops.as_mut()),
        "achievable_tflops" => map(dev.achievable_tflops.as_mut()),
        "memory" => dev
            .memory
            .as_mut()
            .map_or_else(Vec::new, |m| figs([&mut m.size_gb, &mut m.bandwidth_gbs])),
        "caches" => dev.memory.as_mut().map_or_else(Vec::new, |m| {
            figs([
                &mut m.l2_mib,
                &mut m.l2_kib,
                &mut m.llc_mib,
                &mut m.llc_kib,
                &mut m.l2_bandwidth_gbs,
                &mut m.llc_bandwidth_gbs,
                &mut m.l1_bandwidth_gbs,
            ])
        }),
        "limits" => dev.limits.as_mut().map_or_else(Vec::new, |l| {
            figs([
                &mut l.smem_kib_per_cu,
                &mut l.smem_kib_per_wgp,
                &mut l.smem_kib_per_block_max,
                &mut l.smem_kib_per_block_default,
                &mut l.smem_alloc_granularity_bytes,
                &mut l.smem_reserved_per_block_bytes,
                &mut l.max_threads_per_block,
                &mut l.max_threads_per_cu,
                &mut l.regs_32bit_per_cu,
                &mut l.reg_file_kib_per_cu,
                &mut l.max_regs_per_thread,
                &mut l.max_warps_per_cu,
                &mut l.max_blocks_per_cu,
                &mut l.simds_per_cu,
                &mut l.max_waves_per_simd,
                &mut l.vgpr_per_lane_per_simd,
                &mut l.agpr_per_lane_per_simd,
                &mut l.vgpr_alloc_granule,
                &mut l.sgpr_per_simd,
            ])
        }),
        _ => Vec::new(),
    }
}

/// Builds one device from its raw entry (from scratch, or from its `extends` base).
fn resolve(
    entry: &Entry<'_, '_>,
    dev: &DeviceEntry,
    catalog: &Catalog,
    names: &super::lookup::Index,
) -> Result<DeviceSpec, DeviceFileError> {
    let mut spec = if let Some(ext) = &dev.extends {
        let base = names.lookup(catalog, ext.get_ref()).map_err(|e| {
            entry.err(Some(&ext.span()), format!("`extends` must name a known device: {e}"))
        })?;
        inherit(base, dev.id.as_ref().map(Spanned::get_ref))
    } else {
        check_required(entry, dev)?;
        skeleton(dev.id.as_ref().map(|s| s.get_ref().clone()).unwrap_or_default())
    };
    if let Some(id) = &dev.id {
        if id.get_ref().trim().is_empty() {
            return Err(entry.err(Some(&id.span()), "`id` must not be empty"));
        }
    }

    // Device-level default meta. Under `extends`, figures inherited from the base keep the
    // meta they had, so freeze them before the default changes.
    let mut default = spec.meta.clone();
    if let Some(s) = &dev.source {
        default.source.clone_from(s);
    }
    if let Some(c) = dev.confidence {
        default.confidence = c;
    }
    if let Some(p) = dev.provenance {
        default.provenance = p;
    }
    if default != spec.meta {
        for key in figure_keys(&spec) {
            if !spec.figure_meta.contains_key(&key) {
                spec.figure_meta.insert(key, spec.meta.clone());
            }
        }
        spec.meta = default;
    }

    apply_identity(entry, dev, &mut spec)?;
    if let Some(c) = &dev.compute {
        apply_compute(entry, c, &mut spec)?;
    }
    if let Some(m) = &dev.peak_tflops {
        apply_peaks(entry, "peak_tflops", m, &mut spec)?;
    }
    if let Some(m) = &dev.achievable_tflops {
        apply_peaks(entry, "achievable_tflops", m, &mut spec)?;
    }
    if let Some(m) = &dev.variant_peaks_tflops {
        apply_variants(entry, m, &mut spec)?;
    }
    if let Some(m) = &dev.memory {
        apply_memory(entry, m, &mut spec)?;
    }
    if let Some(l) = &dev.limits {
        apply_limits(entry, l, &mut spec)?;
    }
    finish(&mut spec);
    Ok(spec)
}

/// A new device without `extends`: an empty starting value whose required fields
/// `check_required` guarantees are then set from the file.
fn skeleton(id: String) -> DeviceSpec {
    DeviceSpec {
        id,
        name: String::new(),
        vendor: Vendor::Other,
        arch: "unknown".to_string(),
        family: ArchFamily::Unknown,
        chip: None,
        compute_capability: None,
        llvm_target: None,
        aliases: Vec::new(),
        num_cu: 0,
        cu_kind: "CU".to_string(),
        warp_size: 0,
        alt_warp_size: None,
        boost_clock_mhz: None,
        peaks: Vec::new(),
        achievable: Vec::new(),
        variant_peaks: Vec::new(),
        mem_type: None,
        mem_gb: None,
        peak_bw_gbs: 0.0,
        bandwidths: Vec::new(),
        l2_bytes: None,
        llc_bytes: None,
        limits: ResourceLimits::default(),
        unsupported: Vec::new(),
        meta: FigureMeta::default(),
        figure_meta: BTreeMap::new(),
        note: None,
    }
}

/// The starting point of an `extends` entry: the base, under the new id when one is given.
/// A device with a new id does not inherit the base's aliases (they would become
/// ambiguous); one that keeps the base id keeps them.
fn inherit(base: &DeviceSpec, id: Option<&String>) -> DeviceSpec {
    let mut spec = base.clone();
    if let Some(id) = id {
        if super::lookup::normalize(id) != super::lookup::normalize(&base.id) {
            spec.id.clone_from(id);
            spec.aliases.clear();
        }
    }
    spec
}

fn check_required(entry: &Entry<'_, '_>, dev: &DeviceEntry) -> Result<(), DeviceFileError> {
    let compute = dev.compute.as_ref();
    let missing: Vec<&str> = [
        ("id", dev.id.is_some()),
        ("name", dev.name.is_some()),
        ("vendor", dev.vendor.is_some()),
        ("compute.num_cu", compute.is_some_and(|c| c.num_cu.is_some())),
        ("compute.warp_size", compute.is_some_and(|c| c.warp_size.is_some())),
        ("memory.bandwidth_gbs", dev.memory.as_ref().is_some_and(|m| m.bandwidth_gbs.is_some())),
        (
            "peak_tflops (at least one peak)",
            dev.peak_tflops.as_ref().is_some_and(|p| !p.is_empty()),
        ),
    ]
    .iter()
    .filter(|(_, present)| !present)
    .map(|(k, _)| *k)
    .collect();
    if missing.is_empty() {
        return Ok(());
    }
    Err(entry.err(
        None,
        format!(
            "missing {}: a device without `extends` needs id, name, vendor, compute.num_cu, \
             compute.warp_size, memory.bandwidth_gbs and at least one peak in [device.peak_tflops]",
            missing.join(", ")
        ),
    ))
}

// ---------------------------------------------------------------------------------------
// Applying sections
// ---------------------------------------------------------------------------------------

fn apply_identity(
    entry: &Entry<'_, '_>,
    dev: &DeviceEntry,
    spec: &mut DeviceSpec,
) -> Result<(), DeviceFileError> {
    if let Some(name) = &dev.name {
        if name.get_ref().trim().is_empty() {
            return Err(entry.err(Some(&name.span()), "`name` must not be empty"));
        }
        spec.name.clone_from(name.get_ref());
    }
    if let Some(v) = &dev.vendor {
        spec.vendor = parse_vendor(v.get_ref()).ok_or_else(|| {
            entry.err(
                Some(&v.span()),
                format!(
                    "unknown vendor `{}`: expected one of nvidia, amd, apple, intel, cpu, other",
                    v.get_ref()
                ),
            )
        })?;
    }
    if let Some(a) = &dev.arch {
        spec.arch.clone_from(a);
    }
    if let Some(c) = &dev.chip {
        spec.chip = Some(c.clone());
    }
    if let Some(t) = &dev.llvm_target {
        spec.llvm_target = Some(t.clone());
    }
    let cc_family = match &dev.compute_capability {
        Some(cc) => {
            let fam = parse_cc(cc.get_ref()).ok_or_else(|| {
                entry.err(
                    Some(&cc.span()),
                    format!(
                        "compute_capability `{}` is not a CUDA compute capability: expected MAJOR.MINOR such as \"9.0\"",
                        cc.get_ref()
                    ),
                )
            })?;
            spec.compute_capability = Some(cc.get_ref().clone());
            Some(fam)
        }
        None => None,
    };
    match &dev.family {
        Some(f) => {
            let fam = parse_family(f.get_ref()).ok_or_else(|| {
                entry.err(
                    Some(&f.span()),
                    format!(
                        "unknown family `{}`: expected smXY (NVIDIA compute capability X.Y), cdna1, cdna2, \
                         cdna3, cdna4, rdna3, apple7, apple8, apple9, xe, cpu or unknown",
                        f.get_ref()
                    ),
                )
            })?;
            if let Some(cc) = cc_family {
                if cc != fam {
                    return Err(entry.err(
                        Some(&f.span()),
                        format!(
                            "family `{}` contradicts compute_capability `{}`: expected them to name the same compute capability",
                            f.get_ref(),
                            spec.compute_capability.as_deref().unwrap_or_default()
                        ),
                    ));
                }
            }
            spec.family = fam;
        }
        None => {
            if let Some(cc) = cc_family {
                spec.family = cc;
            }
        }
    }
    if let Some(aliases) = &dev.aliases {
        let limit = Limit::Aliases.usize();
        if aliases.len() > limit {
            return Err(entry
                .err(None, Limit::Aliases.exceeded_here(&format!("{} aliases", aliases.len()))));
        }
        // A set of the keys so far: linear in the aliases, not quadratic.
        let mut keys: HashSet<String> =
            spec.aliases.iter().map(|x| super::lookup::normalize(x)).collect();
        for a in aliases {
            let key = super::lookup::normalize(a);
            if !key.is_empty() && keys.insert(key) {
                spec.aliases.push(a.clone());
            }
        }
    }
    if let Some(u) = &dev.unsupported {
        spec.unsupported.clone_from(u);
    }
    if let Some(n) = &dev.note {
        spec.note = Some(n.clone());
    }
    Ok(())
}

fn parse_vendor(s: &str) -> Option<Vendor> {
    Some(match s.trim().to_ascii_lowercase().as_str() {
        "nvidia" => Vendor::Nvidia,
        "amd" => Vendor::Amd,
        "apple" => Vendor::Apple,
        "intel" => Vendor::Intel,
        "cpu" => Vendor::Cpu,
        "other" => Vendor::Other,
        _ => return None,
    })
}

/// `"9.0"` -> `NvidiaCc { 9, 0 }`.
fn parse_cc(s: &str) -> Option<ArchFamily> {
    let (major, minor) = s.trim().split_once('.')?;
    let major: u32 = major.parse().ok()?;
    let minor: u32 = minor.parse().ok()?;
    (minor < 10).then_some(ArchFamily::NvidiaCc { major, minor })
}

/// `sm90` -> `NvidiaCc { 9, 0 }`, `sm100` -> `{ 10, 0 }`, `cdna3` -> `Cdna3`, ...
pub(super) fn parse_family(s: &str) -> Option<ArchFamily> {
    let s = s.trim().to_ascii_lowercase();
    Some(match s.as_str() {
        "cdna1" => ArchFamily::Cdna1,
        "cdna2" => ArchFamily::Cdna2,
        "cdna3" => ArchFamily::Cdna3,
        "cdna4" => ArchFamily::Cdna4,
        "rdna3" => ArchFamily::Rdna3,
        "apple7" | "apple8" => ArchFamily::Apple78,
        "apple9" => ArchFamily::Apple9,
        "xe" => ArchFamily::IntelXe,
        "cpu" => ArchFamily::Cpu,
        "unknown" => ArchFamily::Unknown,
        other => {
            let digits = other.strip_prefix("sm")?;
            if digits.len() < 2 || !digits.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            let (major, minor) = digits.split_at(digits.len() - 1);
            ArchFamily::NvidiaCc { major: major.parse().ok()?, minor: minor.parse().ok()? }
        }
    })
}

/// Records the meta of a figure just set: its own inline meta over the device default, or
/// the default (by removing any inherited entry).
fn set_meta(spec: &mut DeviceSpec, key: String, fig: &Figure) {
    if fig.has_meta() {
        let meta = FigureMeta {
            source: fig.source.clone().unwrap_or_else(|| spec.meta.source.clone()),
            confidence: fig.confidence.unwrap_or(spec.meta.confidence),
            provenance: fig.provenance.unwrap_or(spec.meta.provenance),
        };
        spec.figure_meta.insert(key, meta);
    } else {
        spec.figure_meta.remove(&key);
    }
}

/// What a number must be.
#[derive(Clone, Copy)]
enum Expect {
    /// Finite and > 0.
    Positive(&'static str),
    /// A whole number >= 1 that fits in u32.
    Count,
    /// A whole number >= 0 that fits in u32.
    Whole,
}

fn check(
    entry: &Entry<'_, '_>,
    key: &str,
    fig: &Spanned<Figure>,
    expect: Expect,
) -> Result<f64, DeviceFileError> {
    let v = fig.get_ref().value;
    let ok = v.is_finite()
        && match expect {
            Expect::Positive(_) => v > 0.0,
            Expect::Count => v >= 1.0 && v.fract() == 0.0 && v <= f64::from(u32::MAX),
            Expect::Whole => v >= 0.0 && v.fract() == 0.0 && v <= f64::from(u32::MAX),
        };
    if ok {
        return Ok(v);
    }
    let wanted = match expect {
        Expect::Positive(unit) => format!("a finite number > 0 ({unit})"),
        Expect::Count => "a whole number >= 1".to_string(),
        Expect::Whole => "a whole number >= 0".to_string(),
    };
    Err(entry.err(Some(&fig.span()), format!("{key} must be {wanted}, found {v}")))
}

fn apply_compute(
    entry: &Entry<'_, '_>,
    c: &ComputeSection,
    spec: &mut DeviceSpec,
) -> Result<(), DeviceFileError> {
    if let Some(f) = &c.num_cu {
        spec.num_cu = check(entry, "compute.num_cu", f, Expect::Count)? as u32;
        set_meta(spec, "compute.num_cu".into(), f.get_ref());
    }
    if let Some(k) = &c.cu_kind {
        spec.cu_kind.clone_from(k);
    }
    if let Some(f) = &c.warp_size {
        spec.warp_size = check(entry, "compute.warp_size", f, Expect::Count)? as u32;
        set_meta(spec, "compute.warp_size".into(), f.get_ref());
    }
    if let Some(f) = &c.alt_warp_size {
        spec.alt_warp_size = Some(check(entry, "compute.alt_warp_size", f, Expect::Count)? as u32);
        set_meta(spec, "compute.alt_warp_size".into(), f.get_ref());
    }
    if let Some(f) = &c.boost_clock_mhz {
        spec.boost_clock_mhz =
            Some(check(entry, "compute.boost_clock_mhz", f, Expect::Positive("MHz"))?);
        set_meta(spec, "compute.boost_clock_mhz".into(), f.get_ref());
    }
    Ok(())
}

/// Splits a peak key `<precision>_<unit>`; precision names must be the canonical ones.
pub(super) fn parse_peak_key(key: &str) -> Option<(Precision, ExecUnit)> {
    let (p, u) = key.rsplit_once('_')?;
    let precision = Precision::ALL.into_iter().find(|x| x.as_str() == p)?;
    let unit = match u {
        "vector" => ExecUnit::Vector,
        "matrix" => ExecUnit::Matrix,
        _ => return None,
    };
    Some((precision, unit))
}

const PEAK_KEY_HELP: &str = "expected <precision>_<unit> with precision one of fp64, fp32, tf32, \
                             fp16, bf16, fp8, fp6, fp4, int8, int4 and unit vector or matrix (e.g. fp16_matrix)";

fn apply_peaks(
    entry: &Entry<'_, '_>,
    section: &str,
    map: &FigureMap,
    spec: &mut DeviceSpec,
) -> Result<(), DeviceFileError> {
    for (key, fig) in map {
        let k = key.get_ref();
        let (precision, unit) = parse_peak_key(k).ok_or_else(|| {
            entry.err(
                Some(&key.span()),
                format!("unknown key `{k}` in [device.{section}]: {PEAK_KEY_HELP}"),
            )
        })?;
        let full = format!("{section}.{k}");
        let tflops = check(entry, &full, fig, Expect::Positive("TFLOP/s"))?;
        let list = if section == "peak_tflops" { &mut spec.peaks } else { &mut spec.achievable };
        let rate = PeakRate { precision, unit, tflops, meta: FigureMeta::default() };
        match list.iter_mut().find(|p| p.precision == precision && p.unit == unit) {
            Some(existing) => *existing = rate,
            None => list.push(rate),
        }
        set_meta(spec, full, fig.get_ref());
    }
    Ok(())
}

fn apply_variants(
    entry: &Entry<'_, '_>,
    map: &FigureMap,
    spec: &mut DeviceSpec,
) -> Result<(), DeviceFileError> {
    for (key, fig) in map {
        let k = key.get_ref();
        // `<precision>_<unit>_<mode>`: the peak it is a variant of, then the issue mode.
        let valid = k.match_indices('_').any(|(i, _)| {
            parse_peak_key(&k[..i]).is_some()
                && k[i + 1..]
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
                && !k[i + 1..].is_empty()
        });
        if !valid {
            return Err(entry.err(
                Some(&key.span()),
                format!(
                    "unknown key `{k}` in [device.variant_peaks_tflops]: expected <precision>_<unit>_<mode> \
                     such as fp32_vector_nonpacked, fp32_vector_nondual or fp16_matrix_fp16acc"
                ),
            ));
        }
        let full = format!("variant_peaks_tflops.{k}");
        let v = check(entry, &full, fig, Expect::Positive("TFLOP/s"))?;
        match spec.variant_peaks.iter_mut().find(|(name, _)| name == k) {
            Some(existing) => existing.1 = v,
            None => spec.variant_peaks.push((k.clone(), v)),
        }
        set_meta(spec, full, fig.get_ref());
    }
    Ok(())
}

/// A cache size in MiB or KiB, converted to whole bytes.
fn cache_bytes(
    entry: &Entry<'_, '_>,
    level: &str,
    mib: Option<&Spanned<Figure>>,
    kib: Option<&Spanned<Figure>>,
) -> Result<Option<(u64, Figure)>, DeviceFileError> {
    let (fig, key, scale) = match (mib, kib) {
        (Some(_), Some(k)) => {
            return Err(entry.err(
                Some(&k.span()),
                format!(
                "memory.{level}_mib and memory.{level}_kib are both given: expected one of them"
            ),
            ))
        }
        (Some(m), None) => (m, format!("memory.{level}_mib"), MIB),
        (None, Some(k)) => (k, format!("memory.{level}_kib"), KIB),
        (None, None) => return Ok(None),
    };
    let unit = if scale == MIB { "MiB" } else { "KiB" };
    let v = check(entry, &key, fig, Expect::Positive(unit))?;
    let bytes = v * scale;
    if bytes.fract() != 0.0 || bytes > 1e18 {
        return Err(
            entry.err(Some(&fig.span()), format!("{key} = {v} is not a whole number of bytes"))
        );
    }
    Ok(Some((bytes as u64, fig.get_ref().clone())))
}

fn apply_memory(
    entry: &Entry<'_, '_>,
    m: &MemorySection,
    spec: &mut DeviceSpec,
) -> Result<(), DeviceFileError> {
    if let Some(t) = &m.mem_type {
        spec.mem_type = Some(t.clone());
    }
    if let Some(f) = &m.size_gb {
        spec.mem_gb = Some(check(entry, "memory.size_gb", f, Expect::Positive("GB"))?);
        set_meta(spec, "memory.size_gb".into(), f.get_ref());
    }
    if let Some(f) = &m.bandwidth_gbs {
        spec.peak_bw_gbs =
            check(entry, "memory.bandwidth_gbs", f, Expect::Positive("decimal GB/s"))?;
        set_meta(spec, "memory.bandwidth_gbs".into(), f.get_ref());
    }
    // The meta key of a cache size is always `_mib`, whichever unit the file used.
    if let Some((bytes, fig)) = cache_bytes(entry, "l2", m.l2_mib.as_ref(), m.l2_kib.as_ref())? {
        spec.l2_bytes = Some(bytes);
        set_meta(spec, "memory.l2_mib".into(), &fig);
    }
    if let Some((bytes, fig)) = cache_bytes(entry, "llc", m.llc_mib.as_ref(), m.llc_kib.as_ref())? {
        spec.llc_bytes = Some(bytes);
        set_meta(spec, "memory.llc_mib".into(), &fig);
    }
    for (level, fig) in [
        (MemLevel::Llc, &m.llc_bandwidth_gbs),
        (MemLevel::L2, &m.l2_bandwidth_gbs),
        (MemLevel::L1, &m.l1_bandwidth_gbs),
    ] {
        let Some(fig) = fig else { continue };
        let key = bandwidth_key(level);
        let gbs = check(entry, &key, fig, Expect::Positive("decimal GB/s"))?;
        let roof = BandwidthRoof { level, gbs, meta: FigureMeta::default() };
        match spec.bandwidths.iter_mut().find(|b| b.level == level) {
            Some(existing) => *existing = roof,
            None => spec.bandwidths.push(roof),
        }
        set_meta(spec, key, fig.get_ref());
    }
    Ok(())
}

fn bandwidth_key(level: MemLevel) -> String {
    format!("memory.{}_bandwidth_gbs", level.as_str())
}

/// A limit key of the file, its value, and the `ResourceLimits` field it sets.
type LimitField<'a, T> =
    (&'static str, &'a Option<Spanned<Figure>>, fn(&mut ResourceLimits) -> &mut Option<T>);

fn apply_limits(
    entry: &Entry<'_, '_>,
    l: &LimitsSection,
    spec: &mut DeviceSpec,
) -> Result<(), DeviceFileError> {
    // Shared-memory sizes in KiB, converted to bytes.
    let kib_fields: [LimitField<'_, u64>; 4] = [
        ("smem_kib_per_cu", &l.smem_kib_per_cu, |r| &mut r.smem_bytes_per_cu),
        ("smem_kib_per_wgp", &l.smem_kib_per_wgp, |r| &mut r.smem_bytes_per_wgp),
        ("smem_kib_per_block_max", &l.smem_kib_per_block_max, |r| &mut r.smem_bytes_per_block_max),
        ("smem_kib_per_block_default", &l.smem_kib_per_block_default, |r| {
            &mut r.smem_bytes_per_block_default
        }),
    ];
    for (name, fig, field) in kib_fields {
        let Some(fig) = fig else { continue };
        let key = format!("limits.{name}");
        let kib = check(entry, &key, fig, Expect::Positive("KiB"))?;
        let bytes = kib * KIB;
        if bytes.fract() != 0.0 || bytes > 1e18 {
            return Err(entry
                .err(Some(&fig.span()), format!("{key} = {kib} is not a whole number of bytes")));
        }
        *field(&mut spec.limits) = Some(bytes as u64);
        set_meta(spec, key, fig.get_ref());
    }
    let byte_fields: [LimitField<'_, u64>; 2] = [
        ("smem_alloc_granularity_bytes", &l.smem_alloc_granularity_bytes, |r| {
            &mut r.smem_alloc_granularity_bytes
        }),
        ("smem_reserved_per_block_bytes", &l.smem_reserved_per_block_bytes, |r| {
            &mut r.smem_reserved_per_block_bytes
        }),
    ];
    for (name, fig, field) in byte_fields {
        let Some(fig) = fig else { continue };
        let key = format!("limits.{name}");
        let v = check(entry, &key, fig, Expect::Whole)?;
        *field(&mut spec.limits) = Some(v as u64);
        set_meta(spec, key, fig.get_ref());
    }
    let count_fields: [LimitField<'_, u32>; 13] = [
        ("max_threads_per_block", &l.max_threads_per_block, |r| &mut r.max_threads_per_block),
        ("max_threads_per_cu", &l.max_threads_per_cu, |r| &mut r.max_threads_per_cu),
        ("regs_32bit_per_cu", &l.regs_32bit_per_cu, |r| &mut r.regs_32bit_per_cu),
        ("reg_file_kib_per_cu", &l.reg_file_kib_per_cu, |r| &mut r.reg_file_kib_per_cu),
        ("max_regs_per_thread", &l.max_regs_per_thread, |r| &mut r.max_regs_per_thread),
        ("max_warps_per_cu", &l.max_warps_per_cu, |r| &mut r.max_warps_per_cu),
        ("max_blocks_per_cu", &l.max_blocks_per_cu, |r| &mut r.max_blocks_per_cu),
        ("simds_per_cu", &l.simds_per_cu, |r| &mut r.simds_per_cu),
        ("max_waves_per_simd", &l.max_waves_per_simd, |r| &mut r.max_waves_per_simd),
        ("vgpr_per_lane_per_simd", &l.vgpr_per_lane_per_simd, |r| &mut r.vgpr_per_lane_per_simd),
        ("agpr_per_lane_per_simd", &l.agpr_per_lane_per_simd, |r| &mut r.agpr_per_lane_per_simd),
        ("vgpr_alloc_granule", &l.vgpr_alloc_granule, |r| &mut r.vgpr_alloc_granule),
        ("sgpr_per_simd", &l.sgpr_per_simd, |r| &mut r.sgpr_per_simd),
    ];
    for (name, fig, field) in count_fields {
        let Some(fig) = fig else { continue };
        let key = format!("limits.{name}");
        let v = check(entry, &key, fig, Expect::Count)?;
        *field(&mut spec.limits) = Some(v as u32);
        set_meta(spec, key, fig.get_ref());
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------
// Finishing
// ---------------------------------------------------------------------------------------

/// Names (as `figure_meta` keys) of every figure `spec` holds.
pub(super) fn figure_keys(spec: &DeviceSpec) -> Vec<String> {
    let mut keys: Vec<String> =
        vec!["compute.num_cu".into(), "compute.warp_size".into(), "memory.bandwidth_gbs".into()];
    let optional = [
        ("compute.alt_warp_size", spec.alt_warp_size.is_some()),
        ("compute.boost_clock_mhz", spec.boost_clock_mhz.is_some()),
        ("memory.size_gb", spec.mem_gb.is_some()),
        ("memory.l2_mib", spec.l2_bytes.is_some()),
        ("memory.llc_mib", spec.llc_bytes.is_some()),
    ];
    keys.extend(optional.iter().filter(|(_, present)| *present).map(|(k, _)| (*k).to_string()));
    keys.extend(spec.peaks.iter().map(|p| format!("peak_tflops.{}_{}", p.precision, p.unit)));
    keys.extend(
        spec.achievable.iter().map(|p| format!("achievable_tflops.{}_{}", p.precision, p.unit)),
    );
    keys.extend(spec.variant_peaks.iter().map(|(name, _)| format!("variant_peaks_tflops.{name}")));
    keys.extend(spec.bandwidths.iter().map(|b| bandwidth_key(b.level)));
    let l = &spec.limits;
    let limits = [
        ("smem_kib_per_cu", l.smem_bytes_per_cu.is_some()),
        ("smem_kib_per_wgp", l.smem_bytes_per_wgp.is_some()),
        ("smem_kib_per_block_max", l.smem_bytes_per_block_max.is_some()),
        ("smem_kib_per_block_default", l.smem_bytes_per_block_default.is_some()),
        ("smem_alloc_granularity_bytes", l.smem_alloc_granularity_bytes.is_some()),
        ("smem_reserved_per_block_bytes", l.smem_reserved_per_block_bytes.is_some()),
        ("max_threads_per_block", l.max_threads_per_block.is_some()),
        ("max_threads_per_cu", l.max_threads_per_cu.is_some()),
        ("regs_32bit_per_cu", l.regs_32bit_per_cu.is_some()),
        ("reg_file_kib_per_cu", l.reg_file_kib_per_cu.is_some()),
        ("max_regs_per_thread", l.max_regs_per_thread.is_some()),
        ("max_warps_per_cu", l.max_warps_per_cu.is_some()),
        ("max_blocks_per_cu", l.max_blocks_per_cu.is_some()),
        ("simds_per_cu", l.simds_per_cu.is_some()),
        ("max_waves_per_simd", l.max_waves_per_simd.is_some()),
        ("vgpr_per_lane_per_simd", l.vgpr_per_lane_per_simd.is_some()),
        ("agpr_per_lane_per_simd", l.agpr_per_lane_per_simd.is_some()),
        ("vgpr_alloc_granule", l.vgpr_alloc_granule.is_some()),
        ("sgpr_per_simd", l.sgpr_per_simd.is_some()),
    ];
    keys.extend(limits.iter().filter(|(_, present)| *present).map(|(k, _)| format!("limits.{k}")));
    keys
}

/// Canonical order, lean `figure_meta` (entries equal to the default dropped, entries of
/// figures that no longer exist dropped) and per-rate meta in step with it.
fn finish(spec: &mut DeviceSpec) {
    let order = |p: &PeakRate| {
        let i = Precision::ALL.iter().position(|x| *x == p.precision).unwrap_or(usize::MAX);
        (i, p.unit)
    };
    spec.peaks.sort_by_key(order);
    spec.achievable.sort_by_key(order);
    spec.bandwidths.sort_by_key(|b| b.level);

    let present: BTreeSet<String> = figure_keys(spec).into_iter().collect();
    let default = spec.meta.clone();
    spec.figure_meta.retain(|k, m| *m != default && present.contains(k));

    let metas: Vec<FigureMeta> = spec
        .peaks
        .iter()
        .map(|p| spec.figure(&format!("peak_tflops.{}_{}", p.precision, p.unit)).clone())
        .collect();
    for (p, m) in spec.peaks.iter_mut().zip(metas) {
        p.meta = m;
    }
    let metas: Vec<FigureMeta> = spec
        .achievable
        .iter()
        .map(|p| spec.figure(&format!("achievable_tflops.{}_{}", p.precision, p.unit)).clone())
        .collect();
    for (p, m) in spec.achievable.iter_mut().zip(metas) {
        p.meta = m;
    }
    let metas: Vec<FigureMeta> =
        spec.bandwidths.iter().map(|b| spec.figure(&bandwidth_key(b.level)).clone()).collect();
    for (b, m) in spec.bandwidths.iter_mut().zip(metas) {
        b.meta = m;
    }
}
