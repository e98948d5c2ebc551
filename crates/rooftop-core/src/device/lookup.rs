//! Finding a device by the name a user types or a tool prints.
//!
//! Rules (documented in `docs/device-format.md`):
//! - names compare after [`normalize`]: lower case; `(R)`, `(TM)`, `®`, `™`, spaces, `-`
//!   and `_` removed; leading vendor/brand words (`nvidia`, `amd`, `apple`, `intel`,
//!   `tesla`, `geforce`, `instinct`, `radeon`) stripped, so `NVIDIA GeForce RTX 4090`,
//!   `rtx-4090` and `RTX_4090` are one name;
//! - an id match wins; otherwise aliases, full names and LLVM targets are searched, and a
//!   name that several devices share (`gfx942`, rocprof-compute's `MI200`) is
//!   [`LookupError::Ambiguous`] rather than a guess;
//! - matching is exact after normalisation: `A100-SXM4-40GB` never resolves to the 80 GB
//!   part (the 40 GB parts have 1555 GB/s, not 2039; docs/reference/devices.md#nvidia-58-devices);
//! - an unknown name gets the three closest ids by Jaro-Winkler similarity to ids and
//!   aliases (a prefix relation counts extra), plus a hint for known gaps of the catalog.

use super::{Catalog, DeviceSpec};
use std::collections::{BTreeSet, HashMap};
use std::fmt;

/// A name that matched no device, or several.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LookupError {
    /// No device has this id, alias, name or LLVM target.
    Unknown {
        query: String,
        /// Up to three closest ids, best first.
        suggestions: Vec<String>,
        /// What to do when the name is a known device the catalog lacks (A100 40 GB) or a
        /// generic name (`AMD Radeon Graphics`).
        hint: Option<String>,
    },
    /// Several devices share this name (a gfx target, a series name).
    Ambiguous {
        query: String,
        /// Ids of the matching devices, in catalog order.
        candidates: Vec<String>,
    },
}

impl fmt::Display for LookupError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LookupError::Unknown { query, suggestions, hint } => {
                write!(f, "unknown device `{query}`")?;
                if !suggestions.is_empty() {
                    write!(f, "; did you mean {}?", or_list(suggestions))?;
                }
                match hint {
                    // A question mark already ends the sentence before the hint.
                    Some(h) if !suggestions.is_empty() => write!(f, " {h}"),
                    Some(h) => write!(f, ": {}", lower_first(h)),
                    None => Ok(()),
                }
            }
            LookupError::Ambiguous { query, candidates } => write!(
                f,
                "device name `{query}` matches several devices ({}): name one of them by id",
                candidates.iter().map(|c| format!("`{c}`")).collect::<Vec<_>>().join(", ")
            ),
        }
    }
}

impl std::error::Error for LookupError {}

/// `text` with its first letter in lower case (a hint continuing a sentence), unless
/// it starts with a code span or a name.
fn lower_first(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(c) if c.is_ascii_uppercase() && chars.next().is_some_and(char::is_lowercase) => {
            c.to_ascii_lowercase().to_string() + &text[1..]
        }
        _ => text.to_string(),
    }
}

/// "`a`, `b` or `c`"
fn or_list(items: &[String]) -> String {
    let quoted: Vec<String> = items.iter().map(|s| format!("`{s}`")).collect();
    match quoted.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
        Some((last, _)) => last.clone(),
        None => String::new(),
    }
}

/// Vendor and brand words that tools put in front of a model name.
const BRAND_WORDS: [&str; 8] =
    ["nvidia", "amd", "apple", "intel", "tesla", "geforce", "instinct", "radeon"];

/// The comparison key of a device name (see the module docs).
pub(crate) fn normalize(name: &str) -> String {
    let lower = name.to_lowercase().replace("(r)", "").replace("(tm)", "");
    let mut key: String = lower
        .chars()
        .filter(|c| !c.is_whitespace() && !matches!(c, '-' | '_' | '®' | '™'))
        .collect();
    loop {
        let before = key.len();
        for word in BRAND_WORDS {
            if key.len() > word.len() && key.starts_with(word) {
                key.drain(..word.len());
            }
        }
        if key.len() == before {
            return key;
        }
    }
}

/// Whether `normalize(name) == key`, without building `name`'s key when it is ASCII
/// with no `(` and at most [`PLAIN_NAME_MAX`] bytes (every id, name and alias of the
/// catalog): then `(R)`/`(TM)` cannot occur and lower-casing is per byte, so the key is
/// its bytes lower-cased, blanks, `-` and `_` dropped, brand words stripped as
/// [`normalize`] strips them. A lookup compares the query with every device's names:
/// one `String` and four allocations per name before, 1.0 M instructions per
/// `rooftop trace` run.
pub(crate) fn normalizes_to(name: &str, key: &str) -> bool {
    if !name.is_ascii() || name.len() > PLAIN_NAME_MAX || name.contains('(') {
        return normalize(name) == key;
    }
    let mut buf = [0u8; PLAIN_NAME_MAX];
    let mut n = 0;
    for b in name.bytes() {
        // `char::is_whitespace`, not `u8::is_ascii_whitespace` (which leaves out U+000B).
        if !char::from(b).is_whitespace() && !matches!(b, b'-' | b'_') {
            buf[n] = b.to_ascii_lowercase();
            n += 1;
        }
    }
    let mut k = &buf[..n];
    loop {
        let before = k.len();
        for word in BRAND_WORDS {
            if k.len() > word.len() && k.starts_with(word.as_bytes()) {
                k = &k[word.len()..];
            }
        }
        if k.len() == before {
            return k == key.as_bytes();
        }
    }
}

/// The longest name [`normalizes_to`] keys on the stack.
const PLAIN_NAME_MAX: usize = 96;

/// A suggestion must be at least this close to the query (Jaro–Winkler similarity, with
/// a bonus for a prefix): a typo of a name (`h100-sxm4`, `mi300`) stays above it, an
/// unrelated word (`bogus` against `b300`) falls below and gets no suggestion.
const SUGGEST_MIN_SCORE: f64 = 0.8;

/// Similarity of a query key to a device key, for suggestions.
fn score(query: &str, key: &str) -> f64 {
    if key.is_empty() {
        return 0.0;
    }
    let mut s = strsim::jaro_winkler(query, key);
    // An id that goes on from what was typed (`a100` → `a100-sxm-80gb`) before one that
    // stops short of it (`a10`, another part).
    if key.starts_with(query) {
        s += 0.5;
    } else if query.starts_with(key) {
        s += 0.3;
    }
    s
}

/// Advice for names the catalog deliberately does not resolve, and how to add a device
/// it lacks.
fn hint(key: &str) -> Option<String> {
    if key == "a100" {
        return Some(
            "`a100` names four parts with different memory: a100-sxm-40gb, a100-pcie-40gb \
             (1555 GB/s), a100-sxm-80gb (2039 GB/s), a100-pcie-80gb (1935 GB/s)."
                .to_string(),
        );
    }
    if key == "h100" {
        return Some(
            "`h100` names three parts with different memory and clocks: h100-sxm (3.35 TB/s), \
             h100-nvl (3.9 TB/s) and h100-pcie (2.0 TB/s)."
                .to_string(),
        );
    }
    if key == "graphics" {
        return Some(
            "`AMD Radeon Graphics` is the generic name some ROCm versions report for any AMD GPU: \
             name the device by id (`rooftop devices` lists them)."
                .to_string(),
        );
    }
    if key.starts_with("gfx") {
        return Some(
            "A gfx target names a device only when a single catalog device has it \
             (gfx908 is mi100)."
                .to_string(),
        );
    }
    if key.is_empty() {
        return None;
    }
    Some(
        "If it is not in the catalog, describe it in a device file (docs/device-format.md) \
         and pass --device-file."
            .to_string(),
    )
}

/// The normalised names of a list of devices, built once so that many lookups and merges
/// (a device file of thousands of entries, each `extends`-ing an earlier one) cost one
/// hash probe each instead of a scan of every device and alias. Kept in step with the
/// list by [`Index::merge`]; positions in the sets are catalog order.
#[derive(Debug, Default)]
pub(crate) struct Index {
    /// Id key -> position (ids are unique after merging).
    ids: HashMap<String, usize>,
    /// Alias key -> positions (what [`Catalog::merge`] replaces by).
    aliases_of: HashMap<String, BTreeSet<usize>>,
    /// Full name, alias and LLVM target keys -> positions (what a lookup finds).
    names_of: HashMap<String, BTreeSet<usize>>,
}

impl Index {
    /// The index of `devices`.
    pub(crate) fn build(devices: &[DeviceSpec]) -> Index {
        let mut ix = Index::default();
        for (i, d) in devices.iter().enumerate() {
            ix.add(i, d);
        }
        ix
    }

    fn names(d: &DeviceSpec) -> impl Iterator<Item = String> + '_ {
        std::iter::once(normalize(&d.name))
            .chain(d.aliases.iter().map(|a| normalize(a)))
            .chain(d.llvm_target.iter().map(|t| normalize(t)))
    }

    fn add(&mut self, i: usize, d: &DeviceSpec) {
        self.ids.entry(normalize(&d.id)).or_insert(i);
        for a in &d.aliases {
            self.aliases_of.entry(normalize(a)).or_default().insert(i);
        }
        for k in Index::names(d) {
            self.names_of.entry(k).or_default().insert(i);
        }
    }

    fn remove(&mut self, i: usize, d: &DeviceSpec) {
        let id = normalize(&d.id);
        if self.ids.get(&id) == Some(&i) {
            self.ids.remove(&id);
        }
        for a in &d.aliases {
            if let Some(set) = self.aliases_of.get_mut(&normalize(a)) {
                set.remove(&i);
            }
        }
        for k in Index::names(d) {
            if let Some(set) = self.names_of.get_mut(&k) {
                set.remove(&i);
            }
        }
    }

    /// [`Catalog::lookup`] over `catalog`, whose devices this index describes.
    pub(crate) fn lookup<'a>(
        &self,
        catalog: &'a Catalog,
        query: &str,
    ) -> Result<&'a DeviceSpec, LookupError> {
        let key = normalize(query);
        if !key.is_empty() {
            if let Some(&i) = self.ids.get(&key) {
                return Ok(&catalog.devices[i]);
            }
            let hits: Vec<&DeviceSpec> = self
                .names_of
                .get(&key)
                .into_iter()
                .flatten()
                .map(|&i| &catalog.devices[i])
                .collect();
            return catalog.hits_or_error(query, &key, &hits);
        }
        catalog.hits_or_error(query, &key, &[])
    }

    /// [`Catalog::merge`] of one device into `catalog`, keeping the index in step.
    pub(crate) fn merge(&mut self, catalog: &mut Catalog, mut dev: DeviceSpec) {
        let key = normalize(&dev.id);
        let target = self.ids.get(&key).copied().or_else(|| {
            let set = self.aliases_of.get(&key)?;
            let mut it = set.iter();
            match (it.next(), it.next()) {
                (Some(&i), None) => Some(i),
                _ => None,
            }
        });
        if let Some(i) = target {
            let old_id = &catalog.devices[i].id;
            if normalize(old_id) != key
                && !dev.aliases.iter().any(|a| normalize(a) == normalize(old_id))
            {
                dev.aliases.push(old_id.clone());
            }
            let old = std::mem::replace(&mut catalog.devices[i], dev);
            self.remove(i, &old);
            self.add(i, &catalog.devices[i]);
        } else {
            self.add(catalog.devices.len(), &dev);
            catalog.devices.push(dev);
        }
    }
}

impl Catalog {
    /// Finds a device by id, alias, full name, LLVM target, or a name a real tool prints
    /// (`nvidia-smi`, PyTorch `deviceProperties`, `rocminfo`, rocprof-compute `gpu_model`).
    pub fn lookup(&self, query: &str) -> Result<&DeviceSpec, LookupError> {
        let key = normalize(query);
        if !key.is_empty() {
            if let Some(d) = self.devices.iter().find(|d| normalizes_to(&d.id, &key)) {
                return Ok(d);
            }
            let hits: Vec<&DeviceSpec> = self
                .devices
                .iter()
                .filter(|d| {
                    normalizes_to(&d.name, &key)
                        || d.aliases.iter().any(|a| normalizes_to(a, &key))
                        || d.llvm_target.as_deref().is_some_and(|t| normalizes_to(t, &key))
                })
                .collect();
            return self.hits_or_error(query, &key, &hits);
        }
        self.hits_or_error(query, &key, &[])
    }

    /// The one hit, or why there is not exactly one.
    fn hits_or_error<'a>(
        &self,
        query: &str,
        key: &str,
        hits: &[&'a DeviceSpec],
    ) -> Result<&'a DeviceSpec, LookupError> {
        if !key.is_empty() {
            match hits {
                [one] => return Ok(one),
                [] => {}
                many => {
                    return Err(LookupError::Ambiguous {
                        query: query.to_string(),
                        candidates: many.iter().map(|d| d.id.clone()).collect(),
                    })
                }
            }
        }
        Err(LookupError::Unknown {
            query: query.to_string(),
            suggestions: self.suggest(query, 3),
            hint: hint(key),
        })
    }

    /// The `n` device ids closest to `query` (compared with ids and aliases), best first;
    /// only those at least `SUGGEST_MIN_SCORE` (0.8) close.
    pub fn suggest(&self, query: &str, n: usize) -> Vec<String> {
        let key = normalize(query);
        if key.is_empty() {
            return Vec::new();
        }
        let mut scored: Vec<(f64, &str)> = self
            .devices
            .iter()
            .map(|d| {
                let best = std::iter::once(&d.id)
                    .chain(&d.aliases)
                    .map(|s| score(&key, &normalize(s)))
                    .fold(0.0, f64::max);
                (best, d.id.as_str())
            })
            .collect();
        // Stable: ties keep catalog order.
        scored.retain(|(s, _)| *s >= SUGGEST_MIN_SCORE);
        scored.sort_by(|a, b| b.0.total_cmp(&a.0));
        scored.into_iter().take(n).map(|(_, id)| id.to_string()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn id_of(c: &Catalog, q: &str) -> String {
        match c.lookup(q) {
            Ok(d) => d.id.clone(),
            Err(e) => panic!("`{q}`: {e}"),
        }
    }

    #[test]
    fn normalisation() {
        assert_eq!(normalize("NVIDIA GeForce RTX 4090"), "rtx4090");
        assert_eq!(normalize("rtx-4090"), "rtx4090");
        assert_eq!(normalize("Intel(R) Data Center GPU Max 1550"), "datacentergpumax1550");
        assert_eq!(normalize("AMD Instinct MI300X VF"), "mi300xvf");
        assert_eq!(normalize("Tesla T4"), "t4");
        assert_eq!(normalize("nvidia"), "nvidia");
        assert_eq!(normalize("  "), "");
    }

    #[test]
    fn names_compare_with_a_key_as_their_own_key_does() {
        let mut names: Vec<String> = vec![
            "NVIDIA GeForce RTX 4090".into(),
            "nvidia".into(),
            "nvidianvidia".into(),
            "NVIDIA nvidia H100".into(),
            "amdnvidia mi300x".into(),
            "Intel(R) Data Center GPU Max 1550".into(),
            "AMD Instinct™ MI300X".into(),
            "a\u{b}b\u{c}c\td\re\nf".into(),
            "  -_ ".into(),
            String::new(),
            "x".repeat(PLAIN_NAME_MAX),
            "x".repeat(PLAIN_NAME_MAX + 1),
            format!("nvidia{}", "y".repeat(PLAIN_NAME_MAX)),
        ];
        for d in &Catalog::builtin().devices {
            names.extend([d.id.clone(), d.name.clone(), d.id.to_uppercase().replace('-', " ")]);
            names.extend(d.aliases.iter().cloned());
            names.extend(d.llvm_target.iter().cloned());
        }
        let keys: BTreeSet<String> = names.iter().map(|n| normalize(n)).collect();
        for name in &names {
            for key in &keys {
                assert_eq!(normalizes_to(name, key), normalize(name) == *key, "`{name}` / `{key}`");
            }
        }
    }

    proptest::proptest! {
        #[test]
        fn any_name_compares_as_its_key_does(
            name in "[ -~\\t\u{b}\u{c}®™]{0,24}",
            other in "[ a-zA-Z0-9_()-]{0,12}",
        ) {
            for key in [normalize(&name), normalize(&other), other.clone()] {
                proptest::prop_assert_eq!(normalizes_to(&name, &key), normalize(&name) == key);
            }
        }
    }

    #[test]
    fn every_id_alias_and_name_finds_its_device() {
        let c = Catalog::builtin();
        for d in &c.devices {
            assert_eq!(id_of(c, &d.id), d.id);
            assert_eq!(id_of(c, &d.name), d.id);
            let shared = |a: &str| SHARED.iter().any(|(k, _)| *k == normalize(a));
            for a in d.aliases.iter().filter(|a| !shared(a)) {
                assert_eq!(id_of(c, a), d.id, "alias `{a}`");
            }
            assert_eq!(id_of(c, &d.id.to_uppercase().replace('-', "_")), d.id);
        }
    }

    /// Names several devices share on purpose, because the tools print them for
    /// several parts: a lookup by them is ambiguous, never a guess.
    const SHARED: [(&str, &[&str]); 3] = [
        ("mi200", &["mi210", "mi250x", "mi250"]),
        ("mi250x/mi250", &["mi250x", "mi250"]),
        ("vega20", &["mi50", "mi60"]),
    ];

    #[test]
    fn no_name_is_claimed_by_two_devices_by_accident() {
        let c = Catalog::builtin();
        let mut owners: BTreeMap<String, Vec<&str>> = BTreeMap::new();
        for d in &c.devices {
            let mut keys: Vec<String> = std::iter::once(&d.id)
                .chain(&d.aliases)
                .chain([&d.name])
                .map(|s| normalize(s))
                .collect();
            keys.sort();
            keys.dedup();
            for k in keys {
                owners.entry(k).or_default().push(&d.id);
            }
        }
        let shared: Vec<(&str, Vec<&str>)> = owners
            .iter()
            .filter(|(_, v)| v.len() > 1)
            .map(|(k, v)| (k.as_str(), v.clone()))
            .collect();
        let want: Vec<(&str, Vec<&str>)> = SHARED.iter().map(|(k, v)| (*k, v.to_vec())).collect();
        assert_eq!(shared, want);
    }

    #[test]
    fn names_real_tools_print() {
        let c = Catalog::builtin();
        let cases = [
            // nvidia-smi / torch.cuda.get_device_properties().name
            ("NVIDIA H100 80GB HBM3", "h100-sxm"),
            ("NVIDIA H100 PCIe", "h100-pcie"),
            ("NVIDIA H100 NVL", "h100-nvl"),
            ("NVIDIA H800", "h800-sxm"),
            ("NVIDIA H20", "h20"),
            ("NVIDIA GH200 480GB", "gh200"),
            ("NVIDIA GH200 144G HBM3e", "gh200-144gb"),
            ("NVIDIA H200", "h200-sxm"),
            ("NVIDIA H200 NVL", "h200-nvl"),
            ("NVIDIA A100-SXM4-80GB", "a100-sxm-80gb"),
            ("NVIDIA A100 80GB PCIe", "a100-pcie-80gb"),
            ("NVIDIA A100-SXM4-40GB", "a100-sxm-40gb"),
            ("NVIDIA A100-PCIE-40GB", "a100-pcie-40gb"),
            ("NVIDIA A100-PG509-200", "a100-sxm-40gb"),
            ("NVIDIA A800-SXM4-80GB", "a800-sxm-80gb"),
            ("NVIDIA A800 80GB PCIe", "a800-pcie-80gb"),
            ("NVIDIA A10", "a10"),
            ("NVIDIA A10G", "a10g"),
            ("NVIDIA A16", "a16"),
            ("NVIDIA A30", "a30"),
            ("NVIDIA A40", "a40"),
            ("NVIDIA L4", "l4"),
            ("NVIDIA L20", "l20"),
            ("NVIDIA L40", "l40"),
            ("NVIDIA L40S", "l40s"),
            ("NVIDIA B100", "b100"),
            ("NVIDIA B200", "b200"),
            ("NVIDIA B300 SXM6 AC", "b300"),
            ("NVIDIA GB200", "gb200"),
            ("NVIDIA GB300", "gb300"),
            ("Tesla V100-SXM2-32GB", "v100-sxm"),
            ("Tesla V100-SXM2-16GB", "v100-sxm"),
            ("Tesla V100-PCIE-32GB", "v100-pcie"),
            ("Tesla T4", "t4"),
            ("NVIDIA RTX A6000", "rtx-a6000"),
            ("NVIDIA RTX A4000", "rtx-a4000"),
            ("NVIDIA RTX 6000 Ada Generation", "rtx-6000-ada"),
            ("NVIDIA RTX 2000 Ada Generation", "rtx-2000-ada"),
            ("NVIDIA RTX PRO 6000 Blackwell Workstation Edition", "rtx-pro-6000-blackwell"),
            ("NVIDIA RTX PRO 6000 Blackwell Server Edition", "rtx-pro-6000-blackwell"),
            ("NVIDIA GeForce RTX 2080 Ti", "rtx-2080-ti"),
            ("GeForce RTX 2080 Ti", "rtx-2080-ti"),
            ("NVIDIA TITAN RTX", "titan-rtx"),
            ("NVIDIA GeForce RTX 3080 Ti", "rtx-3080-ti"),
            ("NVIDIA GeForce RTX 3090", "rtx-3090"),
            ("NVIDIA GeForce RTX 3090 Ti", "rtx-3090-ti"),
            ("NVIDIA GeForce RTX 4080 SUPER", "rtx-4080-super"),
            ("NVIDIA GeForce RTX 4090", "rtx-4090"),
            ("NVIDIA GeForce RTX 5090", "rtx-5090"),
            ("NVIDIA GeForce RTX 5070 Ti", "rtx-5070-ti"),
            // rocminfo / torch on ROCm / rocprof agents' product_name
            ("AMD Instinct MI300X", "mi300x"),
            ("AMD Instinct MI300X VF", "mi300x"),
            ("AMD MI300X VF", "mi300x"),
            ("MI300X_A1", "mi300x"),
            ("AMD Instinct MI325X", "mi325x"),
            ("AMD Instinct MI350X", "mi350x"),
            ("AMD Instinct MI355X", "mi355x"),
            ("AMD Instinct MI250X", "mi250x"),
            ("AMD Instinct MI250", "mi250"),
            ("AMD Instinct MI210", "mi210"),
            ("AMD Instinct MI100", "mi100"),
            ("AMD Radeon Instinct MI50", "mi50"),
            ("AMD Instinct MI60", "mi60"),
            ("AMD Radeon RX 7900 XTX", "rx-7900-xtx"),
            ("Radeon RX 7900 XT", "rx-7900-xt"),
            ("AMD Radeon RX 7900 GRE", "rx-7900-gre"),
            ("AMD Radeon RX 7800 XT", "rx-7800-xt"),
            ("AMD Radeon RX 6800 XT", "rx-6800-xt"),
            ("AMD Radeon RX 9070 XT", "rx-9070-xt"),
            ("AMD Radeon PRO W7900", "radeon-pro-w7900"),
            ("AMD Radeon PRO W7800", "radeon-pro-w7800"),
            ("AMD Radeon PRO W6800", "radeon-pro-w6800"),
            ("Apple M4 Max", "m4-max"),
            ("Apple M3 Ultra", "m3-ultra"),
            ("Apple M1", "m1"),
            ("Intel(R) Data Center GPU Max 1550", "intel-max-1550"),
            ("Intel(R) Data Center GPU Max 1100", "intel-max-1100"),
            ("Intel(R) Data Center GPU Flex 170", "intel-flex-170"),
            ("Intel(R) Arc(TM) A770 Graphics", "arc-a770"),
            ("Intel(R) Arc(TM) B580 Graphics", "arc-b580"),
            // Short names and reference ids.
            ("h100-sxm5", "h100-sxm"),
            ("H100_SXM", "h100-sxm"),
            ("nvidia_h100_sxm5", "h100-sxm"),
            ("amd_mi300x", "mi300x"),
            ("w7900", "radeon-pro-w7900"),
            ("max-1550", "intel-max-1550"),
            ("a770", "arc-a770"),
            ("v100", "v100-sxm"),
            ("h200", "h200-sxm"),
            ("rtx4080", "rtx-4080"),
            ("gfx908", "mi100"),
        ];
        for (name, id) in cases {
            assert_eq!(id_of(c, name), id, "{name}");
        }
    }

    #[test]
    fn ambiguous_names_list_the_candidates() {
        let c = Catalog::builtin();
        let cases: [(&str, &[&str]); 9] = [
            ("gfx90a", &["mi210", "mi250x", "mi250"]),
            ("gfx942", &["mi300x", "mi300a", "mi325x"]),
            ("gfx950", &["mi355x", "mi350x"]),
            ("gfx906", &["mi50", "mi60"]),
            (
                "gfx1100",
                &[
                    "rx-7900-xtx",
                    "rx-7900-xt",
                    "radeon-pro-w7900",
                    "radeon-pro-w7800",
                    "rx-7900-gre",
                ],
            ),
            ("gfx1201", &["rx-9070-xt", "rx-9070"]),
            // rocprof-compute's sysinfo.csv `gpu_model` for every gfx90a part.
            ("MI200", &["mi210", "mi250x", "mi250"]),
            // What some ROCm versions print for both OAM parts.
            ("AMD Instinct MI250X / MI250", &["mi250x", "mi250"]),
            ("Vega 20", &["mi50", "mi60"]),
        ];
        for (q, ids) in cases {
            let want = LookupError::Ambiguous {
                query: q.to_string(),
                candidates: ids.iter().map(|s| (*s).to_string()).collect(),
            };
            assert_eq!(c.lookup(q).map(|d| d.id.clone()), Err(want.clone()));
            assert!(want.to_string().contains(ids[0]));
        }
    }

    fn unknown(c: &Catalog, q: &str) -> (Vec<String>, Option<String>) {
        match c.lookup(q) {
            Err(LookupError::Unknown { suggestions, hint, .. }) => (suggestions, hint),
            other => panic!("`{q}`: expected Unknown, got {other:?}"),
        }
    }

    #[test]
    fn forty_gb_a100s_do_not_resolve_to_the_80gb_parts() {
        let c = Catalog::builtin();
        for (q, id, bw) in [
            ("NVIDIA A100-SXM4-40GB", "a100-sxm-40gb", 1555.0),
            ("NVIDIA A100-PCIE-40GB", "a100-pcie-40gb", 1555.0),
            ("NVIDIA A100-PG509-200", "a100-sxm-40gb", 1555.0),
            ("NVIDIA A100-SXM4-80GB", "a100-sxm-80gb", 2039.0),
        ] {
            assert_eq!(c.lookup(q).map(|d| (d.id.as_str(), d.peak_bw_gbs)), Ok((id, bw)), "{q}");
        }
        // `a100` alone names four parts: never one of them; the parts are suggested
        // before `a10`, another GPU.
        let (s, h) = unknown(c, "a100");
        assert!(s.iter().filter(|x| x.starts_with("a100")).count() >= 2, "{s:?}");
        assert!(s[0].starts_with("a100-"), "{s:?}");
        assert!(h.is_some_and(|h| h.contains("1555") && h.contains("2039")));
        // `h100` alone names the SXM, NVL and PCIe parts (3.35, 3.9 and 2.0 TB/s).
        let (s, h) = unknown(c, "h100");
        assert!(s.contains(&"h100-sxm".to_string()) && s.contains(&"h100-pcie".to_string()));
        assert!(h.is_some_and(|h| h.contains("3.35") && h.contains("2.0")));
    }

    #[test]
    fn typos_get_suggestions() {
        let c = Catalog::builtin();
        let (s, _) = unknown(c, "h100-sxm4");
        assert_eq!(s.len(), 3);
        assert_eq!(s[0], "h100-sxm");
        let (s, _) = unknown(c, "mi300");
        assert_eq!(s.len(), 3);
        assert!(s.contains(&"mi300x".to_string()) && s.contains(&"mi300a".to_string()), "{s:?}");
        let (s, _) = unknown(c, "rtx4060");
        assert!(s[0].starts_with("rtx-40"), "{s:?}");
        let (_, h) = unknown(c, "AMD Radeon Graphics");
        assert!(h.is_some_and(|h| h.contains("generic")));
        // A gfx target no single device has: the hint says why; no id is close to it.
        let (s, h) = unknown(c, "gfx1151");
        assert!(h.is_some() && s.is_empty(), "{s:?}");
        let (s, _) = unknown(c, "");
        assert!(s.is_empty());
        // A word unrelated to any device gets no suggestion (it used to get `b300`).
        let (s, _) = unknown(c, "bogus");
        assert!(s.is_empty(), "{s:?}");
        let msg = c.lookup("h100-sxm4").map(|d| d.id.clone()).err().map(|e| e.to_string());
        let msg = msg.unwrap_or_default();
        assert!(msg.starts_with("unknown device `h100-sxm4`; did you mean `h100-sxm`, "), "{msg}");
        assert!(
            msg.ends_with(
                "describe it in a device file (docs/device-format.md) and pass --device-file."
            ),
            "{msg}"
        );
    }
}
