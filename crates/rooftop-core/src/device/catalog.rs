//! The device catalog: the embedded `data/devices.toml` and `data/catalog/*.toml` plus
//! any user device files.
//!
//! `data/devices.toml` holds the figures docs/reference/devices.md explains (how each
//! peak is built, the conventions, each figure's public source in its `source` field);
//! the files of `data/catalog/` add the GPUs people profile most, each entry with its
//! vendor datasheet URL. Format, conversion rules and the parts: `docs/device-format.md`.
//! Checks of the figures against datasheet arithmetic: `catalog_checks.rs`.
//!
//! Invariants: ids are unique in a [`Catalog`] (comparing as [`Catalog::lookup`] does:
//! case, spaces, `-` and `_` ignored); every device satisfies the [`DeviceSpec`]
//! invariants of `device/mod.rs`. Merging keeps both: a device whose id (or, failing that,
//! one alias) matches an existing device replaces it in place.

use super::{DeviceEntry, DeviceFile, DeviceSpec, FigureMeta};
use std::fmt;
use std::sync::OnceLock;

/// The catalog's text: part 1 (`data/devices.toml`, converted from the hardware
/// reference) and the parts under `data/catalog/` (one file per vendor family, each entry
/// with its datasheet URL), read as one file in this order. The source of truth; the
/// binary embeds its resolution ([`BUILTIN_JSON`]).
#[cfg(test)]
const BUILTIN_TOML: &str = concat!(
    include_str!("../../data/devices.toml"),
    "\n",
    include_str!("../../data/catalog/nvidia-datacenter.toml"),
    "\n",
    include_str!("../../data/catalog/nvidia-hopper-blackwell.toml"),
    "\n",
    include_str!("../../data/catalog/nvidia-workstation.toml"),
    "\n",
    include_str!("../../data/catalog/nvidia-geforce.toml"),
    "\n",
    include_str!("../../data/catalog/amd.toml"),
    "\n",
    include_str!("../../data/catalog/intel-apple.toml"),
);

/// The devices [`BUILTIN_TOML`] resolves to (`extends` applied, every figure converted),
/// as three JSON arrays, one element per line: each device's id and the names a lookup
/// compares ([`Head`]), the figures' distinct sources ([`FigureMeta`]s), then the
/// devices, each figure's source written as its index in the second array. Reading all
/// the devices ([`Catalog::builtin`]) takes 5.6 M instructions (the devices with every
/// source written out took 8.0 M, parsing and resolving the TOML about 6 ms); finding
/// one by name ([`Catalog::builtin_named`]) reads the first array and that device's
/// line.
/// The test `embedded_json_is_the_resolved_toml` keeps it equal, text and values, to
/// the TOML; after editing the TOML, rewrite it with
/// `ROOFTOP_BLESS_CATALOG=1 cargo test -p rooftop-core embedded_json`.
const BUILTIN_JSON: &str = include_str!("../../data/catalog.resolved.json");

thread_local! {
    /// While this thread reads [`BUILTIN_JSON`]'s devices ([`parse_embedded`]): its
    /// table of figure sources.
    static METAS: std::cell::RefCell<Vec<FigureMeta>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Figure source `i` of the embedded catalog's table, while its devices are read; `None`
/// at any other time (a [`FigureMeta`] is then written out).
pub(super) fn shared_meta(i: u32) -> Option<FigureMeta> {
    METAS.with(|m| m.borrow().get(i as usize).cloned())
}

/// Empties the table of figure sources when the devices are read, or fail to be.
struct Table;

impl Table {
    /// Installs `metas` as this thread's table until the guard is dropped.
    fn install(metas: Vec<FigureMeta>) -> Table {
        METAS.with(|m| *m.borrow_mut() = metas);
        Table
    }
}

impl Drop for Table {
    fn drop(&mut self) {
        METAS.with(|m| m.borrow_mut().clear());
    }
}

/// The devices of text in the layout of [`BUILTIN_JSON`] after its first array: the
/// table of figure sources, then the devices.
fn parse_embedded(text: &str) -> Result<Vec<DeviceSpec>, serde_json::Error> {
    use serde::Deserialize;
    let mut de = serde_json::Deserializer::from_str(text);
    let metas = Vec::<FigureMeta>::deserialize(&mut de)?;
    let _table = Table::install(metas);
    let devices = Vec::<DeviceSpec>::deserialize(&mut de)?;
    de.end()?;
    Ok(devices)
}

/// What finding an embedded device by name reads of it ([`Catalog::builtin_named`]):
/// its id and the names [`Catalog::lookup`] compares with a query.
#[derive(Debug, PartialEq, serde::Serialize, serde::Deserialize)]
struct Head {
    id: String,
    name: String,
    aliases: Vec<String>,
    llvm_target: Option<String>,
}

#[cfg(test)]
impl Head {
    fn of(d: &DeviceSpec) -> Head {
        Head {
            id: d.id.clone(),
            name: d.name.clone(),
            aliases: d.aliases.clone(),
            llvm_target: d.llvm_target.clone(),
        }
    }
}

/// [`BUILTIN_JSON`]'s three arrays, each from its `[` to its `]`.
fn sections(text: &str) -> Option<[&str; 3]> {
    let mut rest = text;
    let mut take = || {
        let end = memchr::memmem::find(rest.as_bytes(), b"\n]\n")? + 2;
        let (array, after) = rest.split_at(end);
        rest = after.strip_prefix('\n')?;
        Some(array)
    };
    let out = [take()?, take()?, take()?];
    rest.is_empty().then_some(out)
}

/// The elements of a JSON array of one element per line ([`sections`]).
fn elements(array: &str) -> impl Iterator<Item = &str> {
    let inner = array.strip_prefix("[\n").and_then(|a| a.strip_suffix("\n]")).unwrap_or("");
    inner.lines().map(|l| l.strip_suffix(',').unwrap_or(l))
}

/// The embedded devices for reading one at a time: their [`Head`]s, each device's line,
/// and each device once read.
struct OneByOne {
    heads: Vec<Head>,
    /// The table of figure sources, parsed once: each device read installs a copy.
    metas: Vec<FigureMeta>,
    lines: Vec<&'static str>,
    read: Vec<OnceLock<DeviceSpec>>,
}

/// The embedded catalog as [`OneByOne`] reads it.
fn one_by_one() -> &'static OneByOne {
    static ONE_BY_ONE: OnceLock<OneByOne> = OnceLock::new();
    ONE_BY_ONE.get_or_init(|| {
        let read = || -> Result<OneByOne, String> {
            let [heads, metas, devices] =
                sections(BUILTIN_JSON).ok_or("not three arrays of one element per line")?;
            let heads: Vec<Head> = serde_json::from_str(heads).map_err(|e| e.to_string())?;
            let metas: Vec<FigureMeta> = serde_json::from_str(metas).map_err(|e| e.to_string())?;
            let lines: Vec<&str> = elements(devices).collect();
            if lines.len() != heads.len() {
                return Err(format!("{} heads for {} devices", heads.len(), lines.len()));
            }
            let read = lines.iter().map(|_| OnceLock::new()).collect();
            Ok(OneByOne { heads, metas, lines, read })
        };
        // Our own data, checked by `embedded_json_is_the_resolved_toml`: not user input.
        read().unwrap_or_else(|e| {
            panic!("the embedded device catalog is stale or invalid ({e}): run `{BLESS}`")
        })
    })
}

impl OneByOne {
    /// [`Catalog::builtin_named`], reading only the device found.
    fn named(&self, query: &str) -> Option<&DeviceSpec> {
        let key = super::lookup::normalize(query);
        if key.is_empty() {
            return None;
        }
        let named = |h: &Head| {
            super::lookup::normalizes_to(&h.name, &key)
                || h.aliases.iter().any(|a| super::lookup::normalizes_to(a, &key))
                || h.llvm_target.as_deref().is_some_and(|t| super::lookup::normalizes_to(t, &key))
        };
        let by_id = self.heads.iter().position(|h| super::lookup::normalizes_to(&h.id, &key));
        let i = by_id.or_else(|| {
            let mut hits = self.heads.iter().enumerate().filter(|(_, h)| named(h));
            match (hits.next(), hits.next()) {
                (Some((i, _)), None) => Some(i),
                _ => None,
            }
        })?;
        Some(self.device(i))
    }

    /// Device `i`, read from its line when first asked for.
    fn device(&self, i: usize) -> &DeviceSpec {
        self.read[i].get_or_init(|| {
            let read = || -> Result<DeviceSpec, serde_json::Error> {
                let _table = Table::install(self.metas.clone());
                serde_json::from_str(self.lines[i])
            };
            read().unwrap_or_else(|e| {
                panic!("the embedded device catalog is stale or invalid ({e}): run `{BLESS}`")
            })
        })
    }
}

/// The command that rewrites [`BUILTIN_JSON`] from the TOML.
const BLESS: &str = "ROOFTOP_BLESS_CATALOG=1 cargo test -p rooftop-core embedded_json";

/// The embedded catalog, all of it ([`Catalog::builtin`]).
static BUILTIN: OnceLock<Catalog> = OnceLock::new();

/// Name of the embedded catalog in errors.
pub(crate) const BUILTIN_ORIGIN: &str = "<embedded catalog>";

/// A set of devices: the embedded catalog, optionally extended by user device files.
#[derive(Debug, Clone)]
pub struct Catalog {
    pub devices: Vec<DeviceSpec>,
}

/// A device file that could not be read: where, and what was expected.
///
/// Displays as `file:line:column: message` (or `file: message` when no position is known).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceFileError {
    /// File name (or `<embedded catalog>`).
    pub origin: String,
    /// 1-based line of the offending key or value, or of the device's `[[device]]` header.
    pub line: Option<usize>,
    /// 1-based column (in characters) on that line.
    pub column: Option<usize>,
    /// One sentence: which device and key, and what was expected.
    pub message: String,
}

impl fmt::Display for DeviceFileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.line, self.column) {
            (Some(l), Some(c)) => write!(f, "{}:{l}:{c}: {}", self.origin, self.message),
            (Some(l), None) => write!(f, "{}:{l}: {}", self.origin, self.message),
            _ => write!(f, "{}: {}", self.origin, self.message),
        }
    }
}

impl std::error::Error for DeviceFileError {}

/// Parses a device file in rooftop's format; `origin` names it in errors.
///
/// `extends = "<id or alias>"` entries resolve against the embedded catalog and earlier
/// entries of the same file; use [`Catalog::parse_file`] to resolve them against a catalog
/// that already holds other user devices.
pub fn parse_device_file(text: &str, origin: &str) -> Result<Vec<DeviceSpec>, DeviceFileError> {
    super::file::parse_with_base(text, origin, Catalog::builtin())
}

impl Catalog {
    /// The embedded catalog (103 devices: 38 from the hardware reference, 65 from
    /// vendor datasheets).
    ///
    /// Read once per process (from its resolved form, `data/catalog.resolved.json`) and
    /// shared: a lookup borrows from it, and a caller that adds user devices clones it
    /// first (`Catalog::builtin().clone()`). The unit tests guarantee the embedded data is
    /// valid and equal to the catalog's TOML.
    pub fn builtin() -> &'static Catalog {
        BUILTIN.get_or_init(|| {
            let after_heads =
                sections(BUILTIN_JSON).map(|[heads, ..]| &BUILTIN_JSON[heads.len()..]);
            match after_heads.map(parse_embedded) {
                Some(Ok(devices)) => Catalog { devices },
                // Our own data, checked by `embedded_json_is_the_resolved_toml`: not user
                // input.
                Some(Err(e)) => {
                    panic!("the embedded device catalog is stale or invalid ({e}): run `{BLESS}`")
                }
                None => panic!("the embedded device catalog is not in its layout: run `{BLESS}`"),
            }
        })
    }

    /// Reads the embedded devices' names and the table of their figure sources, which
    /// [`Catalog::builtin_named`] reads first, ahead of the first name: a command that
    /// learns its device's name late (`rooftop trace` from the trace) calls this on
    /// another thread while it reads, and the lookup then reads one line.
    pub fn warm_named() {
        one_by_one();
    }

    /// The embedded device [`Catalog::lookup`] finds for `query` when the name alone
    /// decides it (a device's id, or a name, alias or LLVM target of exactly one
    /// device), without reading the whole catalog: the names are compared as `lookup`
    /// compares them, and only the device found is read (a trace's run needs one
    /// device: reading all 103 took 5.6 M instructions, as much as the rest of a small
    /// trace's run). `None` where the name does not decide: no device has it, or
    /// several do; [`Catalog::builtin`]'s `lookup` then says why, or the facts of a
    /// profile choose ([`super::lookup_with_facts`]).
    pub fn builtin_named(query: &str) -> Option<&'static DeviceSpec> {
        match BUILTIN.get() {
            Some(all) => all.lookup(query).ok(),
            None => one_by_one().named(query),
        }
    }

    /// A catalog without devices.
    pub fn empty() -> Catalog {
        Catalog { devices: Vec::new() }
    }

    /// Parses a device file, resolving `extends` against this catalog (and earlier entries
    /// of the same file). Does not change the catalog; see [`Catalog::merge_file`].
    pub fn parse_file(&self, text: &str, origin: &str) -> Result<Vec<DeviceSpec>, DeviceFileError> {
        super::file::parse_with_base(text, origin, self)
    }

    /// Checks and converts a device file built in code (see [`DeviceFile`]), resolving
    /// `extends` against this catalog as [`Catalog::parse_file`] does; `origin` names it
    /// in errors (which carry no line: there is no text).
    ///
    /// # Errors
    /// A figure out of range, a missing required key, an unknown `extends`, ... as for
    /// a file.
    pub fn resolve(
        &self,
        file: &DeviceFile,
        origin: &str,
    ) -> Result<Vec<DeviceSpec>, DeviceFileError> {
        super::file::resolve_built(file, origin, self)
    }

    /// [`Catalog::resolve`] of one entry.
    ///
    /// # Errors
    /// As [`Catalog::resolve`].
    pub fn resolve_entry(
        &self,
        entry: DeviceEntry,
        origin: &str,
    ) -> Result<DeviceSpec, DeviceFileError> {
        let mut v = self.resolve(&DeviceFile::new(vec![entry]), origin)?;
        v.pop().ok_or_else(|| DeviceFileError {
            origin: origin.to_string(),
            line: None,
            column: None,
            message: "no device".to_string(),
        })
    }

    /// Parses a device file against this catalog and merges its devices.
    pub fn merge_file(&mut self, text: &str, origin: &str) -> Result<(), DeviceFileError> {
        let devices = self.parse_file(text, origin)?;
        self.merge(devices);
        Ok(())
    }

    /// Adds devices; a device whose id matches an existing id, or else exactly one existing
    /// alias, replaces that device in place. When it replaces a device under another id,
    /// the old id becomes an alias of the new device, so both names keep working.
    pub fn merge(&mut self, devices: Vec<DeviceSpec>) {
        // One index for the whole batch: each device costs a hash probe, not a scan.
        let mut index = super::lookup::Index::build(&self.devices);
        for dev in devices {
            index.merge(self, dev);
        }
    }

    /// The device with exactly this id (after normalisation), without alias matching.
    pub fn get(&self, id: &str) -> Option<&DeviceSpec> {
        let key = super::lookup::normalize(id);
        self.devices.iter().find(|d| super::lookup::normalizes_to(&d.id, &key))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::{ArchFamily, MemLevel, Vendor};
    use crate::units::{Confidence, ExecUnit, Precision, Provenance};

    fn dev<'a>(c: &'a Catalog, id: &str) -> &'a DeviceSpec {
        match c.get(id) {
            Some(d) => d,
            None => panic!("no device `{id}` in the catalog"),
        }
    }

    fn peak(d: &DeviceSpec, p: Precision, u: ExecUnit) -> f64 {
        d.peak(p, u).map_or(f64::NAN, |r| r.tflops)
    }

    fn variant(d: &DeviceSpec, name: &str) -> Option<f64> {
        d.variant_peaks.iter().find(|(n, _)| n == name).map(|(_, v)| *v)
    }

    fn achievable(d: &DeviceSpec, p: Precision, u: ExecUnit) -> Option<f64> {
        d.achievable.iter().find(|r| r.precision == p && r.unit == u).map(|r| r.tflops)
    }

    const IDS: [&str; 103] = [
        "v100-sxm",
        "a100-sxm-80gb",
        "a100-pcie-80gb",
        "h100-sxm",
        "h100-pcie",
        "h200-sxm",
        "b200",
        "l40s",
        "l4",
        "rtx-4090",
        "rtx-3090",
        "t4",
        "mi100",
        "mi210",
        "mi250x",
        "mi300x",
        "mi300a",
        "mi325x",
        "mi355x",
        "rx-7900-xtx",
        "rx-7900-xt",
        "radeon-pro-w7900",
        "m1",
        "m1-pro",
        "m1-max",
        "m1-ultra",
        "m2",
        "m2-pro",
        "m2-max",
        "m2-ultra",
        "m3",
        "m3-pro",
        "m3-max",
        "m4",
        "m4-pro",
        "m4-max",
        "intel-max-1550",
        "arc-a770",
        "v100-pcie",
        "a100-sxm-40gb",
        "a100-pcie-40gb",
        "a800-sxm-80gb",
        "a800-pcie-80gb",
        "a30",
        "a10",
        "a10g",
        "a16",
        "a40",
        "l40",
        "l20",
        "h800-sxm",
        "h20",
        "h100-nvl",
        "gh200",
        "gh200-144gb",
        "h200-nvl",
        "b100",
        "gb200",
        "b300",
        "gb300",
        "rtx-a6000",
        "rtx-a5000",
        "rtx-a4500",
        "rtx-a4000",
        "rtx-6000-ada",
        "rtx-5000-ada",
        "rtx-4500-ada",
        "rtx-4000-ada",
        "rtx-2000-ada",
        "rtx-pro-6000-blackwell",
        "rtx-2080-ti",
        "titan-rtx",
        "rtx-3070",
        "rtx-3080",
        "rtx-3080-ti",
        "rtx-3090-ti",
        "rtx-4070",
        "rtx-4070-ti",
        "rtx-4080",
        "rtx-4080-super",
        "rtx-5070",
        "rtx-5070-ti",
        "rtx-5080",
        "rtx-5090",
        "mi50",
        "mi60",
        "mi250",
        "mi350x",
        "radeon-pro-w6800",
        "rx-6800",
        "rx-6800-xt",
        "rx-6900-xt",
        "rx-6950-xt",
        "radeon-pro-w7800",
        "rx-7900-gre",
        "rx-7800-xt",
        "rx-7700-xt",
        "rx-9070-xt",
        "rx-9070",
        "intel-max-1100",
        "intel-flex-170",
        "arc-b580",
        "m3-ultra",
    ];

    /// The resolved TOML in [`BUILTIN_JSON`]'s layout: the distinct figure sources in
    /// order of first use, one per line, then the devices, one per line, each source
    /// replaced by its index.
    fn resolved_json(devices: &[DeviceSpec]) -> String {
        use serde_json::Value;
        /// Replaces every figure source under `v` (an object of exactly its three
        /// fields) by its index in `table`.
        fn index_sources(v: &mut Value, table: &mut Vec<String>) {
            match v {
                Value::Object(m) => {
                    let fields = ["source", "confidence", "provenance"];
                    if m.len() == fields.len() && fields.iter().all(|f| m.contains_key(*f)) {
                        let text = serde_json::to_string(m).unwrap();
                        let i = table.iter().position(|t| *t == text).unwrap_or_else(|| {
                            table.push(text);
                            table.len() - 1
                        });
                        *v = Value::from(i);
                    } else {
                        m.values_mut().for_each(|c| index_sources(c, table));
                    }
                }
                Value::Array(a) => a.iter_mut().for_each(|c| index_sources(c, table)),
                _ => {}
            }
        }
        let mut table = Vec::new();
        let lines: Vec<String> = devices
            .iter()
            .map(|d| {
                let mut v = serde_json::to_value(d).unwrap();
                index_sources(&mut v, &mut table);
                serde_json::to_string(&v).unwrap()
            })
            .collect();
        let heads: Vec<String> =
            devices.iter().map(|d| serde_json::to_string(&Head::of(d)).unwrap()).collect();
        format!(
            "[\n{}\n]\n[\n{}\n]\n[\n{}\n]\n",
            heads.join(",\n"),
            table.join(",\n"),
            lines.join(",\n")
        )
    }

    #[test]
    fn embedded_json_is_the_resolved_toml() {
        let r =
            super::super::file::parse_with_base(BUILTIN_TOML, BUILTIN_ORIGIN, &Catalog::empty());
        let devices = r.unwrap_or_else(|e| panic!("the catalog's TOML is invalid: {e}"));
        let want = resolved_json(&devices);
        if std::env::var_os("ROOFTOP_BLESS_CATALOG").is_some() {
            let path = concat!(env!("CARGO_MANIFEST_DIR"), "/data/catalog.resolved.json");
            std::fs::write(path, &want).unwrap();
            return;
        }
        assert!(want == BUILTIN_JSON, "data/catalog.resolved.json is stale: run `{BLESS}`");
        // The values, not only the text: every float read back to the same bits.
        let [heads, ..] = sections(BUILTIN_JSON).unwrap();
        let read = parse_embedded(&BUILTIN_JSON[heads.len()..]).unwrap();
        // Figures share sources (the table is what makes the text short).
        let metas = BUILTIN_JSON.split("\n]\n").nth(1).unwrap().lines().count() - 1;
        assert!(metas < 200, "{metas} distinct figure sources");
        assert_eq!(read.len(), devices.len());
        for (r, d) in read.iter().zip(&devices) {
            assert_eq!(r, d, "{}", d.id);
        }
        assert_eq!(Catalog::builtin().devices, devices);
    }

    #[test]
    fn a_device_found_by_name_alone_is_what_the_whole_catalog_finds() {
        let all = Catalog::builtin();
        let alone = one_by_one();
        // Each device read from its own line equals the one read with the others, and
        // its head holds its names.
        assert_eq!(alone.heads.len(), all.devices.len());
        for (i, d) in all.devices.iter().enumerate() {
            assert_eq!(alone.device(i), d, "{}", d.id);
            assert_eq!(alone.heads[i], Head::of(d), "{}", d.id);
        }
        // Every id, name, alias and LLVM target (some shared by several devices), and
        // names of no device: found, or not, as `lookup` finds them.
        let mut queries: Vec<String> = ["", " - ", "nvidia", "AMD Instinct MI300X VF", "gfx90a"]
            .iter()
            .chain(&["NVIDIA H100 80GB HBM3", "Tesla T4", "no such gpu", "H100"])
            .map(ToString::to_string)
            .collect();
        for d in &all.devices {
            queries.extend([d.id.clone(), d.name.clone(), d.id.to_uppercase().replace('-', " ")]);
            queries.extend(d.aliases.iter().cloned().chain(d.llvm_target.clone()));
        }
        let mut found = 0;
        for q in &queries {
            let want = all.lookup(q).ok().map(|d| d.id.as_str());
            assert_eq!(alone.named(q).map(|d| d.id.as_str()), want, "{q:?}");
            assert_eq!(Catalog::builtin_named(q).map(|d| d.id.as_str()), want, "{q:?}");
            found += usize::from(want.is_some());
        }
        // Both outcomes are covered.
        assert!(found > 300 && found < queries.len(), "{found} of {} found", queries.len());
    }

    #[test]
    fn the_embedded_layout_is_three_arrays_of_one_element_per_line() {
        let text = "[\n{\"a\":1},\n{\"b\":2}\n]\n[\n3\n]\n[\n[]\n]\n";
        let [a, b, c] = sections(text).unwrap();
        assert_eq!(elements(a).collect::<Vec<_>>(), [r#"{"a":1}"#, r#"{"b":2}"#]);
        assert_eq!(
            (elements(b).collect::<Vec<_>>(), elements(c).collect::<Vec<_>>()),
            (vec!["3"], vec!["[]"])
        );
        // Two arrays, four, or text after the third are not the layout.
        assert_eq!(sections("[\n1\n]\n[\n2\n]\n"), None);
        assert_eq!(sections(&format!("{text}[\n4\n]\n")), None);
        assert_eq!(sections(&format!("{text} ")), None);
        assert_eq!(sections(BUILTIN_JSON).map(|s| elements(s[2]).count()), Some(IDS.len()));
    }

    #[test]
    fn figure_sources_are_indices_only_inside_the_embedded_catalog() {
        // Written out, anywhere.
        let m: FigureMeta = serde_json::from_str(
            r#"{"source": "a datasheet", "confidence": "high", "provenance": "catalog"}"#,
        )
        .unwrap();
        assert_eq!(m.source, "a datasheet");
        // An index outside the embedded catalog's reading is refused, with why.
        let e = serde_json::from_str::<FigureMeta>("0").unwrap_err().to_string();
        assert!(e.contains("not in the embedded catalog's table"), "{e}");
        // Inside it, an index names its table's entry; one past the end is refused and
        // the table is emptied either way.
        let table = r#"[{"source": "s0", "confidence": "low", "provenance": "measured"}]"#;
        let device = |meta: u32| {
            let mut v = serde_json::to_value(dev(Catalog::builtin(), "h100-sxm")).unwrap();
            v["meta"] = serde_json::Value::from(meta);
            format!("{table}\n[{v}]")
        };
        let read = parse_embedded(&device(0)).unwrap();
        assert_eq!(read[0].meta.source, "s0");
        assert_eq!(read[0].meta.provenance, Provenance::Measured);
        assert_eq!(shared_meta(0), None);
        let e = parse_embedded(&device(1)).unwrap_err().to_string();
        assert!(e.contains("figure source 1 is not in"), "{e}");
        assert_eq!(shared_meta(0), None);
        // Trailing text is an error too.
        assert!(parse_embedded(&format!("{} []", device(0))).is_err());
    }

    #[test]
    fn all_103_devices_load_with_their_ids() {
        let c = Catalog::builtin();
        let ids: Vec<&str> = c.devices.iter().map(|d| d.id.as_str()).collect();
        assert_eq!(ids, IDS);
    }

    #[test]
    fn every_device_satisfies_the_spec_invariants() {
        let c = Catalog::builtin();
        for d in &c.devices {
            assert!(d.peak_bw_gbs.is_finite() && d.peak_bw_gbs > 0.0, "{}", d.id);
            assert!(d.num_cu > 0 && d.warp_size > 0, "{}", d.id);
            assert!(!d.peaks.is_empty(), "{}", d.id);
            for list in [&d.peaks, &d.achievable] {
                for (i, p) in list.iter().enumerate() {
                    assert!(p.tflops.is_finite() && p.tflops > 0.0, "{} {p:?}", d.id);
                    assert!(
                        !list[..i].iter().any(|q| q.precision == p.precision && q.unit == p.unit),
                        "{}: duplicate {:?}",
                        d.id,
                        p
                    );
                }
            }
            // An achievable ceiling never exceeds the datasheet peak of the same roof.
            for a in &d.achievable {
                assert!(a.tflops <= peak(d, a.precision, a.unit), "{} {a:?}", d.id);
                assert_eq!(a.meta.provenance, Provenance::Measured, "{}", d.id);
            }
            for (name, v) in &d.variant_peaks {
                assert!(v.is_finite() && *v > 0.0, "{} {name}", d.id);
            }
            for b in &d.bandwidths {
                assert!(b.gbs.is_finite() && b.gbs > 0.0);
            }
            assert!(!d.meta.source.is_empty(), "{}", d.id);
            assert_eq!(d.meta.provenance, Provenance::Catalog, "{}", d.id);
            // Per-peak meta is what `figure` reports.
            for p in &d.peaks {
                assert_eq!(&p.meta, d.figure(&format!("peak_tflops.{}_{}", p.precision, p.unit)));
            }
            // Families agree with vendors.
            let ok = match d.vendor {
                Vendor::Nvidia => {
                    matches!(d.family, ArchFamily::NvidiaCc { .. })
                        && d.compute_capability.is_some()
                }
                // GCN 5, RDNA2 and RDNA4 have no occupancy rules: family unknown.
                Vendor::Amd => {
                    matches!(
                        d.family,
                        ArchFamily::Cdna1
                            | ArchFamily::Cdna2
                            | ArchFamily::Cdna3
                            | ArchFamily::Cdna4
                            | ArchFamily::Rdna3
                            | ArchFamily::Unknown
                    ) && d.llvm_target.is_some()
                }
                Vendor::Apple => matches!(d.family, ArchFamily::Apple78 | ArchFamily::Apple9),
                Vendor::Intel => d.family == ArchFamily::IntelXe,
                Vendor::Cpu | Vendor::Other => false,
            };
            assert!(ok, "{}: vendor {:?} family {:?}", d.id, d.vendor, d.family);
        }
    }

    #[test]
    fn spot_check_numbers_against_the_reference() {
        let c = Catalog::builtin();
        let h100 = dev(c, "h100-sxm");
        assert_eq!(peak(h100, Precision::Fp16, ExecUnit::Matrix), 989.4);
        assert_eq!(h100.peak_bw_gbs, 3350.0);
        assert_eq!(h100.l2_bytes, Some(50 * 1024 * 1024));
        assert_eq!(h100.family, ArchFamily::NvidiaCc { major: 9, minor: 0 });
        assert_eq!(h100.limits.smem_bytes_per_cu, Some(228 * 1024));
        assert_eq!(h100.limits.smem_reserved_per_block_bytes, Some(1024));
        assert_eq!(h100.boost_clock_mhz, Some(1980.0));

        let mi300x = dev(c, "mi300x");
        assert_eq!(peak(mi300x, Precision::Fp32, ExecUnit::Vector), 163.4);
        assert_eq!(variant(mi300x, "fp32_vector_nonpacked"), Some(81.7));
        assert_eq!(achievable(mi300x, Precision::Fp16, ExecUnit::Matrix), Some(654.0));
        assert_eq!(achievable(mi300x, Precision::Bf16, ExecUnit::Matrix), Some(708.0));
        assert_eq!(achievable(mi300x, Precision::Fp8, ExecUnit::Matrix), Some(1273.0));
        assert_eq!(mi300x.llc_bytes, Some(256 * 1024 * 1024));
        assert_eq!(mi300x.family, ArchFamily::Cdna3);
        // The MAF vector FP32 entry equals the non-packed peak: flagged, low confidence.
        let v = mi300x.achievable.iter().find(|r| r.precision == Precision::Fp32);
        assert_eq!(v.map(|r| (r.tflops, r.meta.confidence)), Some((81.0, Confidence::Low)));

        // MI210 and MI250X: the reference stores non-packed in fp32_tflops; we normalise.
        let mi210 = dev(c, "mi210");
        assert_eq!(peak(mi210, Precision::Fp32, ExecUnit::Vector), 45.3);
        assert_eq!(variant(mi210, "fp32_vector_nonpacked"), Some(22.6));
        let mi250x = dev(c, "mi250x");
        assert_eq!(peak(mi250x, Precision::Fp32, ExecUnit::Vector), 95.7);
        assert_eq!(variant(mi250x, "fp32_vector_nonpacked"), Some(47.9));

        let xtx = dev(c, "rx-7900-xtx");
        assert_eq!(peak(xtx, Precision::Fp32, ExecUnit::Vector), 61.4);
        assert_eq!(variant(xtx, "fp32_vector_nondual"), Some(30.7));
        assert_eq!(xtx.limits.smem_bytes_per_wgp, Some(128 * 1024));
        assert_eq!(xtx.alt_warp_size, Some(64));
        assert_eq!(dev(c, "rx-7900-xt").peak_bw_gbs, 800.0);

        let m1 = dev(c, "m1");
        assert_eq!(peak(m1, Precision::Fp16, ExecUnit::Vector), 2.6);
        assert_eq!(m1.l2_bytes, Some(768 * 1024));
        assert_eq!(m1.family, ArchFamily::Apple78);
        assert_eq!(m1.figure("limits.smem_kib_per_cu").confidence, Confidence::Medium);
        assert!(m1
            .figure("limits.smem_kib_per_cu")
            .source
            .contains("github.com/philipturner/metal-benchmarks"));
        assert_eq!(m1.figure("memory.bandwidth_gbs"), &m1.meta);

        let rtx = dev(c, "rtx-4090");
        assert_eq!(peak(rtx, Precision::Fp16, ExecUnit::Matrix), 165.2);
        assert_eq!(variant(rtx, "fp16_matrix_fp16acc"), Some(330.3));
        assert_eq!(variant(rtx, "fp8_matrix_fp16acc"), Some(660.6));
        assert_eq!(
            rtx.peak(Precision::Fp8, ExecUnit::Matrix).map(|p| p.meta.confidence),
            Some(Confidence::Medium)
        );

        let v100 = dev(c, "v100-sxm");
        assert_eq!(peak(v100, Precision::Int8, ExecUnit::Vector), 62.7);
        assert!(v100.peak(Precision::Int8, ExecUnit::Matrix).is_none());

        let b200 = dev(c, "b200");
        assert_eq!(b200.l2_bytes, Some(132_644_864));
        assert_eq!(b200.family, ArchFamily::NvidiaCc { major: 10, minor: 0 });
        assert_eq!(peak(b200, Precision::Fp4, ExecUnit::Matrix), 9000.0);

        // Apple M3/M4: low-confidence estimates except what Apple publishes.
        let m4max = dev(c, "m4-max");
        assert_eq!(
            m4max.peak(Precision::Fp32, ExecUnit::Vector).map(|p| p.meta.confidence),
            Some(Confidence::Low)
        );
        assert_eq!(m4max.figure("memory.bandwidth_gbs").confidence, Confidence::High);
        assert_eq!(m4max.family, ArchFamily::Apple9);

        assert_eq!(dev(c, "mi355x").limits.smem_bytes_per_cu, Some(160 * 1024));
        assert_eq!(dev(c, "intel-max-1550").peak_bw_gbs, 3276.8);
        assert_eq!(dev(c, "t4").family, ArchFamily::NvidiaCc { major: 7, minor: 5 });
    }

    #[test]
    fn ridge_point_of_h100() {
        let c = Catalog::builtin();
        let r =
            dev(c, "h100-sxm").ridge_point(Precision::Fp16, ExecUnit::Matrix).unwrap_or(f64::NAN);
        assert!((r - 989.4e12 / 3350e9).abs() < 1e-9);
        assert!((r - 295.3).abs() < 0.05, "{r}");
    }

    const USER: &str = r#"
schema_version = 1

[[device]]
extends = "h100-sxm"
provenance = "calibrated"
source = "measured by rooftop ceilings on 2025-01-01"
confidence = "medium"
[device.memory]
bandwidth_gbs = 3010
l2_bandwidth_gbs = 9000
[device.peak_tflops]
fp16_matrix = 720

[[device]]
id = "my-box"
extends = "h100-sxm5"
name = "My box"
[device.compute]
boost_clock_mhz = 1755

[[device]]
id = "tiny-cpu"
name = "Tiny CPU"
vendor = "cpu"
family = "cpu"
[device.compute]
num_cu = 4
warp_size = 1
[device.memory]
bandwidth_gbs = 40
[device.peak_tflops]
fp32_vector = { value = 0.5, source = "vendor sheet", confidence = "low" }
"#;

    #[test]
    fn merge_with_extends_overrides_only_what_is_given() {
        let mut cat = Catalog::builtin().clone();
        let merged = cat.merge_file(USER, "user.toml");
        assert!(merged.is_ok(), "{merged:?}");
        assert_eq!(cat.devices.len(), IDS.len() + 2);

        // Same id: replaced in place, lookups by every old name still work.
        let h100 = match cat.lookup("NVIDIA H100 80GB HBM3") {
            Ok(d) => d,
            Err(e) => panic!("{e}"),
        };
        assert_eq!(h100.id, "h100-sxm");
        assert_eq!(h100.peak_bw_gbs, 3010.0);
        assert_eq!(h100.meta.provenance, Provenance::Calibrated);
        assert_eq!(h100.figure("memory.bandwidth_gbs").provenance, Provenance::Calibrated);
        assert_eq!(h100.figure("memory.bandwidth_gbs").confidence, Confidence::Medium);
        assert_eq!(h100.bandwidth(MemLevel::L2), Some(9000.0));
        let f16 = h100.peak(Precision::Fp16, ExecUnit::Matrix);
        assert_eq!(
            f16.map(|p| (p.tflops, p.meta.provenance)),
            Some((720.0, Provenance::Calibrated))
        );
        // Inherited figures keep their catalog meta and value.
        let bf16 = h100.peak(Precision::Bf16, ExecUnit::Matrix);
        assert_eq!(bf16.map(|p| (p.tflops, p.meta.provenance)), Some((989.4, Provenance::Catalog)));
        assert_eq!(h100.figure("limits.smem_kib_per_cu").provenance, Provenance::Catalog);
        assert_eq!(h100.figure("limits.smem_kib_per_cu").confidence, Confidence::High);
        assert_eq!(h100.limits.smem_bytes_per_cu, Some(228 * 1024));
        assert_eq!(h100.name, "NVIDIA H100 SXM5 80GB");

        // New id: a new device starting from the (already calibrated) h100-sxm.
        let mybox = match cat.lookup("my-box") {
            Ok(d) => d,
            Err(e) => panic!("{e}"),
        };
        assert_eq!(mybox.name, "My box");
        assert_eq!(mybox.boost_clock_mhz, Some(1755.0));
        assert_eq!(mybox.peak_bw_gbs, 3010.0);
        assert_eq!(mybox.num_cu, 132);
        assert!(mybox.aliases.is_empty());

        let tiny = match cat.lookup("tiny cpu") {
            Ok(d) => d,
            Err(e) => panic!("{e}"),
        };
        assert_eq!(tiny.vendor, Vendor::Cpu);
        assert_eq!(tiny.family, ArchFamily::Cpu);
        let fp32 = tiny.peak(Precision::Fp32, ExecUnit::Vector);
        assert_eq!(
            fp32.map(|p| (p.meta.source.as_str(), p.meta.confidence)),
            Some(("vendor sheet", Confidence::Low))
        );
    }

    #[test]
    fn the_documented_example_file_parses() {
        let doc = include_str!("../../../../docs/device-format.md");
        let example = doc
            .split_once("```toml\n")
            .and_then(|(_, rest)| rest.split_once("```"))
            .map(|(toml, _)| toml);
        let mut cat = Catalog::builtin().clone();
        let merged = example.map(|text| cat.merge_file(text, "docs/device-format.md"));
        assert_eq!(merged, Some(Ok(())));
        assert_eq!(cat.lookup("rtx-3080-12gb").map(|d| (d.num_cu, d.peak_bw_gbs)), Ok((70, 912.0)));
        // The 10 GB card keeps its own entry and name.
        assert_eq!(cat.lookup("NVIDIA GeForce RTX 3080").map(|d| d.num_cu), Ok(68));
        assert_eq!(cat.lookup("h100-sxm").map(|d| d.peak_bw_gbs), Ok(3010.0));
        assert_eq!(cat.lookup("my-cpu").map(|d| d.num_cu), Ok(16));
    }

    #[test]
    fn merge_by_alias_keeps_the_old_id_as_alias() {
        let mut c = Catalog::builtin().clone();
        let user = r#"
[[device]]
id = "h100-sxm5"
extends = "h100-sxm"
[device.memory]
bandwidth_gbs = 3000
"#;
        assert!(c.merge_file(user, "u.toml").is_ok());
        assert_eq!(c.devices.len(), IDS.len());
        let d = c.lookup("h100-sxm").map(|d| (d.id.as_str(), d.peak_bw_gbs));
        assert_eq!(d, Ok(("h100-sxm5", 3000.0)));
    }

    #[test]
    fn parse_device_file_resolves_extends_against_the_builtin_catalog() {
        let text = "[[device]]\nid = \"slow-mi300x\"\nextends = \"AMD Instinct MI300X VF\"\n[device.memory]\nbandwidth_gbs = 4000\n";
        let r = parse_device_file(text, "x.toml");
        let d = r.as_ref().ok().and_then(|v| v.first());
        assert_eq!(
            d.map(|d| (d.id.as_str(), d.peak_bw_gbs, d.num_cu)),
            Some(("slow-mi300x", 4000.0, 304))
        );
    }

    fn err(text: &str) -> DeviceFileError {
        match parse_device_file(text, "bad.toml") {
            Ok(v) => panic!("expected an error, parsed {} devices", v.len()),
            Err(e) => e,
        }
    }

    const GOOD: &str = "[[device]]\nid = \"x\"\nname = \"X\"\nvendor = \"other\"\n[device.compute]\nnum_cu = 2\nwarp_size = 32\n[device.memory]\nbandwidth_gbs = 100\n[device.peak_tflops]\nfp32_vector = 1.5\n";

    #[test]
    fn good_minimal_file_parses() {
        let r = parse_device_file(GOOD, "good.toml");
        assert_eq!(r.map(|v| v.len()), Ok(1));
    }

    #[test]
    fn syntax_error_reports_line_and_column() {
        let e = err("[[device]]\nid = \"x\"\nname = \"unterminated\n");
        assert_eq!((e.origin.as_str(), e.line), ("bad.toml", Some(3)));
        assert!(e.column.is_some());
        assert!(e.to_string().starts_with("bad.toml:3:"), "{e}");
    }

    #[test]
    fn negative_bandwidth_is_rejected_at_its_line() {
        let e = err(&GOOD.replace("bandwidth_gbs = 100", "bandwidth_gbs = -5"));
        assert_eq!(e.line, Some(9), "{e}");
        assert!(e.message.contains("memory.bandwidth_gbs") && e.message.contains("> 0"), "{e}");
        assert!(e.message.contains("`x`"), "{e}");
        let e = err(&GOOD.replace("bandwidth_gbs = 100", "bandwidth_gbs = nan"));
        assert_eq!(e.line, Some(9), "{e}");
        let e =
            err(&GOOD.replace("fp32_vector = 1.5", "fp32_vector = { value = 0, source = \"s\" }"));
        assert_eq!(e.line, Some(11), "{e}");
    }

    #[test]
    fn unknown_keys_are_rejected_with_the_valid_ones() {
        let e = err(&GOOD.replace("num_cu = 2", "num_cu = 2\nnum_sm = 2"));
        assert_eq!(e.line, Some(7), "{e}");
        assert!(e.message.contains("num_sm") && e.message.contains("warp_size"), "{e}");
        let e = err(&GOOD.replace("fp32_vector = 1.5", "fp32_vector = 1.5\nfp16_matrx = 3"));
        assert_eq!(e.line, Some(12), "{e}");
        assert!(e.message.contains("fp16_matrx") && e.message.contains("fp16_matrix"), "{e}");
        let e = err(&GOOD.replace("name = \"X\"", "name = \"X\"\ncolour = \"red\""));
        assert!(e.message.contains("colour") && e.message.contains("vendor"), "{e}");
        let e =
            err(&GOOD.replace("fp32_vector = 1.5", "fp32_vector = { value = 1.5, sauce = \"s\" }"));
        assert!(e.message.contains("sauce") && e.message.contains("confidence"), "{e}");
        let e = err(&GOOD.replace(
            "[device.peak_tflops]",
            "[device.variant_peaks_tflops]\nfast = 2\n[device.peak_tflops]",
        ));
        assert!(e.message.contains("fast"), "{e}");
    }

    #[test]
    fn semantic_errors_name_what_was_expected() {
        let e = err(&GOOD.replace("num_cu = 2", "num_cu = 0"));
        assert!(e.message.contains("compute.num_cu") && e.message.contains(">= 1"), "{e}");
        let e = err(&GOOD.replace("num_cu = 2", "num_cu = 2.5"));
        assert!(e.message.contains("whole number"), "{e}");
        let e = err(&GOOD.replace("vendor = \"other\"", "vendor = \"nvidea\""));
        assert_eq!(e.line, Some(4));
        assert!(e.message.contains("nvidia"), "{e}");
        let e = err(&GOOD.replace("vendor = \"other\"", "vendor = \"other\"\nfamily = \"sm9x\""));
        assert!(e.message.contains("family"), "{e}");
        let e = err(&GOOD.replace(
            "vendor = \"other\"",
            "vendor = \"other\"\nfamily = \"sm80\"\ncompute_capability = \"9.0\"",
        ));
        assert!(e.message.contains("contradicts"), "{e}");
        let e =
            err(&GOOD
                .replace("[device.peak_tflops]", "l2_mib = 1\nl2_kib = 3\n[device.peak_tflops]"));
        assert!(e.message.contains("l2_kib"), "{e}");
        let e = err(&format!("schema_version = 2\n{GOOD}"));
        assert_eq!(e.line, Some(1));
        let e = err("[[device]]\nextends = \"h100-sxm4\"\n");
        assert_eq!(e.line, Some(2));
        assert!(e.message.contains("h100-sxm"), "{e}");
    }

    #[test]
    fn missing_required_fields_point_at_the_device() {
        let e = err(&format!("{GOOD}\n[[device]]\nid = \"y\"\nname = \"Y\"\n"));
        assert_eq!(e.line, Some(13), "{e}");
        assert!(e.message.contains("vendor") && e.message.contains("compute.num_cu"), "{e}");
        assert!(e.message.contains("`y`"), "{e}");
    }

    #[test]
    fn duplicate_ids_in_one_file_are_rejected() {
        let e = err(&format!("{GOOD}\n{}", GOOD.replace("id = \"x\"", "id = \"X\"")));
        assert_eq!(e.line, Some(13), "{e}");
        assert!(e.message.contains("duplicate"), "{e}");
    }

    #[test]
    fn parsing_never_panics_on_mangled_input() {
        // Every prefix and a few byte-level corruptions of the real catalog and a user file.
        for (text, cuts) in [(BUILTIN_TOML, 20), (USER, 200), (GOOD, 200)] {
            let step = (text.len() / cuts).max(1);
            for cut in (0..text.len()).step_by(step) {
                if text.is_char_boundary(cut) {
                    let _ = parse_device_file(&text[..cut], "p.toml");
                    let mangled = format!("{}= ] -1e999 {{\n{}", &text[..cut], &text[cut..]);
                    let _ = parse_device_file(&mangled, "p.toml");
                }
            }
        }
    }

    proptest::proptest! {
        #[test]
        fn parsing_never_panics_on_assembled_fragments(parts in proptest::collection::vec(0usize..FRAGMENTS.len(), 0..24)) {
            let text: String = parts.iter().map(|i| FRAGMENTS[*i]).collect();
            let _ = parse_device_file(&text, "prop.toml");
        }

        #[test]
        fn lookup_never_panics(q in "\\PC{0,24}") {
            let c = Catalog::builtin();
            let _ = c.lookup(&q);
        }
    }

    /// Pieces of device files, valid and not, that the property test strings together.
    const FRAGMENTS: [&str; 26] = [
        "[[device]]\n",
        "id = \"x\"\n",
        "id = \"y\"\n",
        "name = \"X\"\n",
        "vendor = \"amd\"\n",
        "extends = \"mi300x\"\n",
        "extends = \"x\"\n",
        "[device.compute]\n",
        "num_cu = 4\n",
        "warp_size = 0\n",
        "warp_size = 64\n",
        "[device.memory]\n",
        "bandwidth_gbs = 1e400\n",
        "bandwidth_gbs = 5\n",
        "l2_kib = 0.5\n",
        "l2_mib = 1e30\n",
        "[device.peak_tflops]\n",
        "fp16_matrix = { value = 3, confidence = \"low\" }\n",
        "fp32_vector = -inf\n",
        "[device.limits]\n",
        "smem_kib_per_cu = 1.0001\n",
        "max_warps_per_cu = 4294967296\n",
        "[device.variant_peaks_tflops]\n",
        "fp32_vector_ = 1\n",
        "family = \"sm\"\n",
        "compute_capability = \"99999999999.1\"\n",
    ];
}
