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

#[cfg(test)]
mod tests {
    use super::*;

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
