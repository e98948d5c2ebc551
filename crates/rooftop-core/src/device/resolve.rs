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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stated_clock_and_units_tell_apart_parts_that_share_a_target() {
        let c = Catalog::builtin();
        // gfx950 is both the MI350X (2200 MHz) and the MI355X (2400 MHz), 256 CUs each.
        assert!(matches!(c.lookup("gfx950"), Err(LookupError::Ambiguous { .. })));
        let at = |mhz| DeviceFacts { units: Some(256), clock_mhz: Some(mhz), memory_bytes: None };
        let pick = |f| lookup_with_facts(&c, "gfx950", f).map(|(d, _)| d.id.clone());
        assert_eq!(pick(at(2400.0)), Ok("mi355x".to_string()));
        assert_eq!(pick(at(2200.0)), Ok("mi350x".to_string()));
        // A clock neither has, no facts, or units alone: still ambiguous, never a guess.
        assert!(pick(at(2300.0)).is_err());
        assert!(pick(DeviceFacts::default()).is_err());
        assert!(pick(DeviceFacts { units: Some(256), ..DeviceFacts::default() }).is_err());
        let (_, why) = lookup_with_facts(&c, "gfx950", at(2400.0)).unwrap();
        let why = why.unwrap_or_default();
        assert!(why.contains("2400 MHz") && why.contains("mi355x"), "{why}");
        // A plain match needs no facts and says nothing.
        let (d, why) = lookup_with_facts(&c, "h100-sxm", at(1.0)).unwrap();
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
        let pick = |f| lookup_with_facts(&c, "gfx942", f).map(|(d, _)| d.id.clone());
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
        let r = resolve_named(&c, Some("AMD Instinct MI399X"), Some("gfx908"));
        assert!(r.device.is_none());
        let note = r.note.unwrap_or_default();
        assert!(note.contains("MI399X") && note.contains("device file"), "{note}");
        assert!(note.contains("--device-file"), "{note}");
    }

    #[test]
    fn names_and_arch_only() {
        let c = Catalog::builtin();
        let r = resolve_named(&c, Some("NVIDIA H100 80GB HBM3"), None);
        assert_eq!(r.device.map(|d| d.id.as_str()), Some("h100-sxm"));
        assert!(r.note.is_none());
        // gfx908 is only the MI100.
        let r = resolve_named(&c, None, Some("gfx908"));
        assert_eq!(r.device.map(|d| d.id.as_str()), Some("mi100"));
        // A generic ROCm name counts as no name.
        let r = resolve_named(&c, Some("AMD Radeon Graphics"), Some("gfx942"));
        assert!(r.device.is_none());
        assert!(r.note.unwrap_or_default().contains("several"));
        let r = resolve_named(&c, None, None);
        assert!(r.device.is_none() && r.note.is_none());
    }
}
