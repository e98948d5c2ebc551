//! Which catalog device a profile's own device description names, for reports that
//! resolve it themselves (`rooftop counters`).
//!
//! Rule: a device is judged only on **its own** roofs. The name the files give wins;
//! a name the catalog lacks gives no device and a note saying so and how to add it,
//! never the closest or a sibling entry (an MI350X is not an MI355X: same chip, lower
//! clocks, ~9% lower peaks). The architecture (`gfx942`, compute capability `8.0`) is
//! used only when the files give no usable name, and only when exactly one catalog
//! device has it (the lookup's ambiguity rule).

use super::{Catalog, DeviceSpec, LookupError};

/// The device a profile names, or why there is none.
#[derive(Debug, Clone)]
pub struct Resolved<'a> {
    pub device: Option<&'a DeviceSpec>,
    /// Why there is no device (or how it was chosen), for the report.
    pub note: Option<String>,
}

/// Names some ROCm versions print for every AMD GPU: not a device name.
fn generic(name: &str) -> bool {
    super::lookup::normalize(name) == "graphics"
}

/// The note for a device the catalog lacks: no roofs, and how to add it.
pub fn unknown_note(name: &str, e: &LookupError) -> String {
    let closest = match e {
        LookupError::Unknown { suggestions, .. } if !suggestions.is_empty() => format!(
            " (closest catalog ids: {})",
            suggestions.iter().map(|s| format!("`{s}`")).collect::<Vec<_>>().join(", ")
        ),
        LookupError::Ambiguous { candidates, .. } => {
            return format!(
                "the files name the device `{name}`, which matches several catalog devices \
                 ({}): no roofs; pass --device with the right id",
                candidates.iter().map(|s| format!("`{s}`")).collect::<Vec<_>>().join(", ")
            );
        }
        LookupError::Unknown { .. } => String::new(),
    };
    format!(
        "the files name the device `{name}`, which is not in rooftop's catalog: no roofs, \
         rather than another device's (a similar part differs in clocks, units or \
         bandwidth){closest}. If it is a catalog device under another name, pass --device \
         ID; otherwise describe it in a device file (docs/device-format.md: a `[[device]]` \
         with its id, name, the names tools print as `aliases`, and its datasheet peaks and \
         bandwidth, or `extends = \"<closest id>\"` with the figures that differ) and pass \
         --device-file FILE"
    )
}

/// Resolves the device a profile describes by `name` and `arch` (see the module docs).
pub fn resolve_named<'a>(
    catalog: &'a Catalog,
    name: Option<&str>,
    arch: Option<&str>,
) -> Resolved<'a> {
    let name = name.map(str::trim).filter(|n| !n.is_empty() && !generic(n));
    if let Some(n) = name {
        return match catalog.lookup(n) {
            Ok(d) => Resolved { device: Some(d), note: None },
            Err(e) => Resolved { device: None, note: Some(unknown_note(n, &e)) },
        };
    }
    let Some(a) = arch.map(str::trim).filter(|a| !a.is_empty()) else {
        return Resolved { device: None, note: None };
    };
    match catalog.lookup(a) {
        Ok(d) => Resolved {
            device: Some(d),
            note: Some(format!(
                "the files give no device name, only the architecture `{a}`, which only {} \
                 ({}) has in the catalog",
                d.id, d.name
            )),
        },
        Err(LookupError::Ambiguous { candidates, .. }) => Resolved {
            device: None,
            note: Some(format!(
                "the files give no device name, only the architecture `{a}`, which several \
                 catalog devices share ({}): no roofs; pass --device",
                candidates.join(", ")
            )),
        },
        Err(_) => Resolved {
            device: None,
            note: Some(format!(
                "the files give no device name, only the architecture `{a}`: no roofs; pass \
                 --device"
            )),
        },
    }
}

/// What a profile states about its device beyond the name: enough, sometimes, to tell
/// apart the catalog devices a name or gfx target shares.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct DeviceFacts {
    /// SMs / CUs.
    pub units: Option<u32>,
    /// Peak (boost) clock in MHz.
    pub clock_mhz: Option<f64>,
    /// Device memory in bytes (XPlane `memory_size`, Kineto `totalGlobalMem`): tells apart
    /// parts with the same units and clock (MI300X 192 GiB, MI325X 256 GiB).
    pub memory_bytes: Option<u64>,
}

/// Relative tolerance on a stated memory size against the catalog's `size_gb`: drivers
/// report slightly less than the marketed size, and the catalog's figure is GB for some
/// parts and GiB for others (192 "GB" of MI300X is 192 GiB).
const MEMORY_TOLERANCE: f64 = 0.1;

/// Whether `bytes` is the catalog's `gb`, read as GB or as GiB.
pub(crate) fn memory_fits(bytes: u64, gb: f64) -> bool {
    let b = bytes as f64;
    [b / 1e9, b / f64::from(1u32 << 30)].iter().any(|&x| (x - gb).abs() <= MEMORY_TOLERANCE * gb)
}

/// Relative tolerance on a stated clock against a catalog boost clock: profiles state the
/// clock the driver reports (2400 MHz), datasheets round (2.4 GHz); 2% keeps MI350X
/// (2200 MHz) and MI355X (2400 MHz) apart.
const CLOCK_TOLERANCE: f64 = 0.02;

/// Looks `name` up; when several catalog devices share it, keeps those whose unit count
/// and boost clock agree with what the profile states, and succeeds only when exactly one
/// is left. The `String` says which facts chose the device (for the report); it is `None`
/// for a plain name match. Never guesses: a fact the catalog entry lacks rules it out.
pub fn lookup_with_facts<'a>(
    catalog: &'a Catalog,
    name: &str,
    facts: DeviceFacts,
) -> Result<(&'a DeviceSpec, Option<String>), LookupError> {
    let candidates = match catalog.lookup(name) {
        Ok(d) => return Ok((d, None)),
        Err(LookupError::Ambiguous { candidates, .. }) => candidates,
        Err(e) => return Err(e),
    };
    if facts.units.is_none() && facts.clock_mhz.is_none() && facts.memory_bytes.is_none() {
        return Err(LookupError::Ambiguous { query: name.to_string(), candidates });
    }
    let fits = |d: &DeviceSpec| {
        facts.units.is_none_or(|u| d.num_cu == u)
            && facts.clock_mhz.is_none_or(|c| {
                d.boost_clock_mhz.is_some_and(|b| (c - b).abs() <= CLOCK_TOLERANCE * b)
            })
            && facts.memory_bytes.is_none_or(|m| d.mem_gb.is_some_and(|g| memory_fits(m, g)))
    };
    let left: Vec<&DeviceSpec> =
        candidates.iter().filter_map(|id| catalog.lookup(id).ok()).filter(|d| fits(d)).collect();
    match left.as_slice() {
        [one] => {
            let mut stated = Vec::new();
            if let Some(u) = facts.units {
                stated.push(format!("{u} units"));
            }
            if let Some(c) = facts.clock_mhz {
                stated.push(format!("a {c:.0} MHz clock"));
            }
            if let Some(m) = facts.memory_bytes {
                stated.push(format!("{:.0} GiB of memory", m as f64 / f64::from(1u32 << 30)));
            }
            Ok((
                one,
                Some(format!(
                    "`{name}` is shared by {}; the profile states {}, which only {} has",
                    candidates.join(", "),
                    stated.join(" and "),
                    one.id
                )),
            ))
        }
        _ => Err(LookupError::Ambiguous { query: name.to_string(), candidates }),
    }
}

/// What a profile states about its device when it may name none (an Nsight Compute
/// details page gives the compute capability and "# SMs", not the device name).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ProfileFacts {
    /// NVIDIA compute capability (`8.0`) or AMD LLVM target (`gfx942`).
    pub arch: Option<String>,
    /// SMs / CUs.
    pub units: Option<u32>,
    /// The maximum (boost) clock the driver reports, MHz (not the clock measured while
    /// profiling: Nsight Compute locks clocks to base by default).
    pub clock_mhz: Option<f64>,
    /// The DRAM peak the profile's own figures imply, GB/s (bytes per second over the
    /// throughput as a share of the peak), and how it was obtained. Used only to choose
    /// among devices the stated facts leave, never as a roof.
    pub dram_peak_gbs: Option<(f64, String)>,
}

/// The catalog devices a profile's description fits.
#[derive(Debug, Clone)]
pub struct Identified<'a> {
    /// None (unknown or no facts), one (identified) or several (the facts do not decide;
    /// only the figures they share may be used).
    pub candidates: Vec<&'a DeviceSpec>,
    /// How the device was chosen, or why none was, for the report.
    pub note: Option<String>,
}

/// Relative tolerance of an implied DRAM peak against a catalog bandwidth: the profile
/// prints the throughput percentage with two decimals.
const DRAM_TOLERANCE: f64 = 0.03;

fn same_arch(d: &DeviceSpec, arch: &str) -> bool {
    let a = super::lookup::normalize(arch);
    d.compute_capability.as_deref().is_some_and(|c| super::lookup::normalize(c) == a)
        || d.llvm_target.as_deref().is_some_and(|t| super::lookup::normalize(t) == a)
}

/// Identifies the device a profile describes: by its name when it gives one (the rules
/// of [`resolve_named`]: a name the catalog lacks is no device, never a sibling), else by
/// its facts — the catalog devices with its architecture, unit count and boost clock.
/// When several remain, the implied DRAM peak chooses among them if it fits some and
/// not others; otherwise all remain, and the caller uses only the figures they share.
pub fn identify<'a>(
    catalog: &'a Catalog,
    name: Option<&str>,
    facts: &ProfileFacts,
) -> Identified<'a> {
    let name = name.map(str::trim).filter(|n| !n.is_empty() && !generic(n));
    let (pool, what): (Vec<&'a DeviceSpec>, String) = if let Some(n) = name {
        match catalog.lookup(n) {
            Ok(d) => return Identified { candidates: vec![d], note: None },
            Err(LookupError::Ambiguous { candidates, .. }) => (
                candidates.iter().filter_map(|id| catalog.lookup(id).ok()).collect(),
                format!("the name `{n}`"),
            ),
            Err(e) => {
                return Identified { candidates: Vec::new(), note: Some(unknown_note(n, &e)) }
            }
        }
    } else {
        let Some(a) = facts.arch.as_deref().map(str::trim).filter(|a| !a.is_empty()) else {
            return Identified { candidates: Vec::new(), note: None };
        };
        let kind = if a.starts_with("gfx") { "LLVM target" } else { "compute capability" };
        (catalog.devices.iter().filter(|d| same_arch(d, a)).collect(), format!("{kind} {a}"))
    };
    let mut stated = vec![what];
    let mut left = pool;
    if let (Some(a), true) = (facts.arch.as_deref(), name.is_some()) {
        left.retain(|d| same_arch(d, a));
    }
    if let Some(u) = facts.units {
        left.retain(|d| d.num_cu == u);
        let nvidia = facts.arch.as_deref().is_some_and(|a| !a.starts_with("gfx"));
        stated.push(format!("{u} {}", if nvidia { "SMs" } else { "SMs/CUs" }));
    }
    if let Some(c) = facts.clock_mhz {
        left.retain(|d| d.boost_clock_mhz.is_some_and(|b| (c - b).abs() <= CLOCK_TOLERANCE * b));
        stated.push(format!("a {c:.0} MHz boost clock"));
    }
    let stated = stated.join(", ");
    if left.is_empty() {
        return Identified {
            candidates: Vec::new(),
            note: Some(format!(
                "no catalog device has {stated}: no roofs; pass --device, or describe the \
                 device in a device file (docs/device-format.md) and pass --device-file"
            )),
        };
    }
    let mut how = format!("{stated} fit {}", ids(&left));
    if left.len() > 1 {
        if let Some((bw, basis)) = &facts.dram_peak_gbs {
            let fits: Vec<&DeviceSpec> = left
                .iter()
                .copied()
                .filter(|d| (d.peak_bw_gbs - bw).abs() <= DRAM_TOLERANCE * d.peak_bw_gbs)
                .collect();
            if !fits.is_empty() && fits.len() < left.len() {
                how = format!(
                    "{how}; {basis} implies a {bw:.0} GB/s DRAM peak, which only {} {}",
                    ids(&fits),
                    if fits.len() == 1 { "has" } else { "have" }
                );
                left = fits;
            }
        }
    }
    let note = if let [one] = left.as_slice() {
        format!("device: {} ({}), identified from the files: {how}", one.id, one.name)
    } else {
        format!(
            "device: one of {}, from the files: {how}; the report uses only the figures they \
             share (pass --device to choose one)",
            ids(&left)
        )
    };
    Identified { candidates: left, note: Some(note) }
}

fn ids(ds: &[&DeviceSpec]) -> String {
    ds.iter().map(|d| d.id.as_str()).collect::<Vec<_>>().join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stated_clock_and_units_tell_apart_parts_that_share_a_target() {
        let c = Catalog::builtin();
        // gfx950 is both the MI350X (2200 MHz) and the MI355X (2400 MHz), 256 CUs each.
        assert!(matches!(c.lookup("gfx950"), Err(LookupError::Ambiguous { .. })));
        let at = |mhz| DeviceFacts { units: Some(256), clock_mhz: Some(mhz), memory_bytes: None };
        let pick = |f| lookup_with_facts(c, "gfx950", f).map(|(d, _)| d.id.clone());
        assert_eq!(pick(at(2400.0)), Ok("mi355x".to_string()));
        assert_eq!(pick(at(2200.0)), Ok("mi350x".to_string()));
        // A clock neither has, no facts, or units alone: still ambiguous, never a guess.
        assert!(pick(at(2300.0)).is_err());
        assert!(pick(DeviceFacts::default()).is_err());
        assert!(pick(DeviceFacts { units: Some(256), ..DeviceFacts::default() }).is_err());
        let (_, why) = lookup_with_facts(c, "gfx950", at(2400.0)).unwrap();
        let why = why.unwrap_or_default();
        assert!(why.contains("2400 MHz") && why.contains("mi355x"), "{why}");
        // A plain match needs no facts and says nothing.
        let (d, why) = lookup_with_facts(c, "h100-sxm", at(1.0)).unwrap();
        assert_eq!((d.id.as_str(), why), ("h100-sxm", None));
    }

    #[test]
    fn stated_memory_tells_apart_mi300x_and_mi325x() {
        // gfx942 with 304 CUs at 2100 MHz is an MI300X (192 GiB, AMD's datasheet) or an
        // MI325X (256 GB): a profile stating 192 GiB (the MI300X JAX profile of the
        // issue) decides it.
        let c = Catalog::builtin();
        let f = |gib: u64| DeviceFacts {
            units: Some(304),
            clock_mhz: Some(2100.0),
            memory_bytes: Some(gib << 30),
        };
        let pick = |f| lookup_with_facts(c, "gfx942", f).map(|(d, _)| d.id.clone());
        assert_eq!(pick(f(192)), Ok("mi300x".to_string()));
        assert_eq!(pick(f(256)), Ok("mi325x".to_string()));
        assert!(pick(f(100)).is_err());
        let none = DeviceFacts { units: Some(304), clock_mhz: Some(2100.0), memory_bytes: None };
        assert!(pick(none).is_err());
    }

    #[test]
    fn a_named_device_is_never_replaced_by_a_sibling() {
        let c = Catalog::builtin();
        // A name that is not in the catalog, with an arch that one device has.
        let r = resolve_named(c, Some("AMD Instinct MI399X"), Some("gfx908"));
        assert!(r.device.is_none());
        let note = r.note.unwrap_or_default();
        assert!(note.contains("MI399X") && note.contains("device file"), "{note}");
        assert!(note.contains("--device-file"), "{note}");
    }

    #[test]
    fn a100_from_compute_capability_sms_and_implied_dram_peak() {
        let c = Catalog::builtin();
        // CC 8.0 with 108 SMs: the A100 and A800 parts (the A30 has 56 SMs).
        let facts = ProfileFacts {
            arch: Some("8.0".to_string()),
            units: Some(108),
            ..ProfileFacts::default()
        };
        let r = identify(c, None, &facts);
        let mut got: Vec<&str> = r.candidates.iter().map(|d| d.id.as_str()).collect();
        got.sort_unstable();
        assert_eq!(
            got,
            [
                "a100-pcie-40gb",
                "a100-pcie-80gb",
                "a100-sxm-40gb",
                "a100-sxm-80gb",
                "a800-pcie-80gb",
                "a800-sxm-80gb"
            ]
        );
        assert!(r.note.unwrap_or_default().contains("figures they share"));
        // 958.04 GB/s at 46.99% of the peak (an A100 details page) implies 2038.8 GB/s:
        // the 2039 GB/s SXM4 80 GB parts.
        let facts = ProfileFacts {
            dram_peak_gbs: Some((958.04 / 0.4699, "Memory Throughput / DRAM Throughput".into())),
            ..facts
        };
        let r = identify(c, None, &facts);
        let mut got: Vec<&str> = r.candidates.iter().map(|d| d.id.as_str()).collect();
        got.sort_unstable();
        assert_eq!(got, ["a100-sxm-80gb", "a800-sxm-80gb"]);
        // A peak no candidate has decides nothing.
        let facts = ProfileFacts { dram_peak_gbs: Some((700.0, "x".into())), ..facts };
        assert_eq!(identify(c, None, &facts).candidates.len(), 6);
        // CC 7.0 with 80 SMs: the V100s; a name wins over facts.
        let named = identify(c, Some("Tesla V100-SXM2-16GB"), &facts);
        assert_eq!(
            named.candidates.iter().map(|d| d.id.as_str()).collect::<Vec<_>>(),
            ["v100-sxm"]
        );
        // No facts: nothing, and nothing to say.
        let none = identify(c, None, &ProfileFacts::default());
        assert!(none.candidates.is_empty() && none.note.is_none());
    }

    #[test]
    fn names_and_arch_only() {
        let c = Catalog::builtin();
        let r = resolve_named(c, Some("NVIDIA H100 80GB HBM3"), None);
        assert_eq!(r.device.map(|d| d.id.as_str()), Some("h100-sxm"));
        assert!(r.note.is_none());
        // gfx908 is only the MI100.
        let r = resolve_named(c, None, Some("gfx908"));
        assert_eq!(r.device.map(|d| d.id.as_str()), Some("mi100"));
        // A generic ROCm name counts as no name.
        let r = resolve_named(c, Some("AMD Radeon Graphics"), Some("gfx942"));
        assert!(r.device.is_none());
        assert!(r.note.unwrap_or_default().contains("several"));
        let r = resolve_named(c, None, None);
        assert!(r.device.is_none() && r.note.is_none());
    }
}
