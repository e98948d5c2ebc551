//! The interconnect catalog (`data/interconnects.toml`): NVLink, Infinity Fabric
//! (xGMI), PCIe, InfiniBand and Ethernet generations with one GPU's bandwidth in one
//! direction and its source, and which links each catalog device uses inside a node
//! (`intra`) and between nodes (`inter`).
//!
//! The bus bandwidth of a collective (NCCL-tests' definitions,
//! <https://github.com/NVIDIA/nccl-tests/blob/master/doc/PERFORMANCE.md>;
//! docs/reference/formulas.md#collective-bandwidth-algbw-and-busbw) is compared with
//! `per_gpu_gbs` of the link its ranks span: `intra` when every member is on one node,
//! `inter` otherwise. Device ids are `devices.toml` ids; a test checks that each one
//! resolves in the device catalog, so a renamed device fails loudly.

use serde::{Deserialize, Serialize};
use std::sync::OnceLock;

const BUILTIN_TOML: &str = include_str!("../../../data/interconnects.toml");

/// One link generation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Link {
    pub id: String,
    pub name: String,
    /// `nvlink`, `xgmi`, `pcie`, `infiniband`, `ethernet`.
    pub kind: String,
    /// One GPU's bandwidth in one direction, decimal GB/s.
    pub per_gpu_gbs: f64,
    /// How `per_gpu_gbs` follows from the source's figure.
    pub derivation: String,
    pub source: String,
}

/// The links of one catalog device.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeviceLinks {
    /// `devices.toml` id.
    pub device: String,
    pub intra: Option<String>,
    pub inter: Option<String>,
    /// The reference system the mapping assumes.
    pub note: Option<String>,
}

/// The whole catalog.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct Interconnects {
    #[serde(default)]
    pub link: Vec<Link>,
    #[serde(default)]
    pub device: Vec<DeviceLinks>,
}

impl Interconnects {
    /// The embedded catalog, parsed once (the unit tests check it parses and is
    /// consistent; an invalid embedded file gives an empty catalog, never a panic).
    pub fn builtin() -> &'static Interconnects {
        static BUILTIN: OnceLock<Interconnects> = OnceLock::new();
        BUILTIN.get_or_init(|| toml::from_str(BUILTIN_TOML).unwrap_or_default())
    }

    /// A link by id.
    pub fn link(&self, id: &str) -> Option<&Link> {
        self.link.iter().find(|l| l.id.eq_ignore_ascii_case(id.trim()))
    }

    /// The links of a device (catalog id).
    pub fn for_device(&self, device_id: &str) -> Option<&DeviceLinks> {
        self.device.iter().find(|d| d.device == device_id)
    }

    /// Every link id, for error messages.
    pub fn link_ids(&self) -> Vec<&str> {
        self.link.iter().map(|l| l.id.as_str()).collect()
    }
}

/// Whether a collective's members share one node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Scope {
    IntraNode,
    InterNode,
    /// `--gpus-per-node` not given, or the members are not known.
    #[default]
    Unknown,
}

impl Scope {
    pub fn as_str(self) -> &'static str {
        match self {
            Scope::IntraNode => "intra_node",
            Scope::InterNode => "inter_node",
            Scope::Unknown => "unknown",
        }
    }

    /// The scope of a set of global ranks with `gpus_per_node` GPUs per node (node of
    /// rank `r` = `r / gpus_per_node`, the usual launcher numbering).
    pub fn of(ranks: &[i64], gpus_per_node: Option<u32>) -> Scope {
        let Some(g) = gpus_per_node.filter(|g| *g > 0) else { return Scope::Unknown };
        let node = |r: i64| r.div_euclid(i64::from(g));
        match ranks.split_first() {
            None => Scope::Unknown,
            Some((first, rest)) if rest.iter().all(|r| node(*r) == node(*first)) => {
                Scope::IntraNode
            }
            Some(_) => Scope::InterNode,
        }
    }
}

/// The links the report compares bus bandwidth with.
#[derive(Debug, Clone, PartialEq, Serialize, Default)]
pub struct LinkChoice {
    /// The catalog device the links were chosen for (`None`: given by flags).
    pub device: Option<String>,
    pub intra: Option<Link>,
    pub inter: Option<Link>,
    /// Whether `intra` / `inter` were chosen by `--intra-link` / `--inter-link` rather
    /// than taken from the device's catalog entry.
    pub intra_by_flag: bool,
    pub inter_by_flag: bool,
    /// The catalog's note on the device's reference system (its network ports, or for a
    /// card without one its node link); `None` when a flag replaced the link it is about.
    pub note: Option<String>,
}

impl LinkChoice {
    /// The links of `device_id`, with `intra`/`inter` overriding the mapping.
    pub fn resolve(
        catalog: &Interconnects,
        device_id: Option<&str>,
        intra: Option<&Link>,
        inter: Option<&Link>,
    ) -> LinkChoice {
        let mapped = device_id.and_then(|d| catalog.for_device(d));
        let pick = |over: Option<&Link>, id: Option<&String>| {
            over.cloned().or_else(|| id.and_then(|i| catalog.link(i)).cloned())
        };
        // A note describes the reference system's network when the device has one
        // (`inter`), else its link inside the node: a flag that replaces that link makes
        // the note about another system.
        let note = mapped.and_then(|m| {
            let replaced = if m.inter.is_some() { inter.is_some() } else { intra.is_some() };
            m.note.clone().filter(|_| !replaced)
        });
        LinkChoice {
            device: device_id.map(str::to_string),
            intra: pick(intra, mapped.and_then(|m| m.intra.as_ref())),
            inter: pick(inter, mapped.and_then(|m| m.inter.as_ref())),
            intra_by_flag: intra.is_some(),
            inter_by_flag: inter.is_some(),
            note,
        }
    }

    /// The link a collective of this scope runs over.
    pub fn for_scope(&self, scope: Scope) -> Option<&Link> {
        match scope {
            Scope::IntraNode => self.intra.as_ref(),
            Scope::InterNode => self.inter.as_ref(),
            Scope::Unknown => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::Catalog;

    #[test]
    fn builtin_parses_and_every_reference_resolves() {
        let ic: Interconnects = match toml::from_str(BUILTIN_TOML) {
            Ok(i) => i,
            Err(e) => panic!("interconnects.toml: {e}"),
        };
        assert!(ic.link.len() >= 12);
        let devices = Catalog::builtin();
        for d in &ic.device {
            assert!(devices.lookup(&d.device).is_ok(), "{} is not a catalog device", d.device);
            for l in d.intra.iter().chain(d.inter.iter()) {
                assert!(ic.link(l).is_some(), "{}: unknown link {l}", d.device);
            }
        }
        for l in &ic.link {
            assert!(l.per_gpu_gbs > 0.0 && !l.source.is_empty(), "{}", l.id);
        }
        assert_eq!(Interconnects::builtin(), &ic);
    }

    #[test]
    fn per_direction_figures_from_the_datasheets() {
        let ic = Interconnects::builtin();
        let gbs = |id: &str| ic.link(id).map(|l| l.per_gpu_gbs);
        // H100 datasheet: NVLink 900 GB/s both directions → 450 one way.
        assert_eq!(gbs("nvlink4-h100"), Some(900.0 / 2.0));
        // MI300X: 7 links × 128 GB/s both directions → 448 one way.
        assert_eq!(gbs("xgmi-mi300"), Some(7.0 * 128.0 / 2.0));
        // NDR: 400 Gb/s / 8 = 50 GB/s.
        assert_eq!(gbs("ib-ndr"), Some(400.0 / 8.0));
        // PCIe 4.0 x16: 16 GT/s × 16 × 128/130 / 8 = 31.5 GB/s (to 3 digits).
        assert!((16.0 * 16.0 * 128.0 / 130.0 / 8.0 - 31.5_f64).abs() < 0.03);
        let h100 = LinkChoice::resolve(ic, Some("h100-sxm"), None, None);
        assert_eq!(h100.for_scope(Scope::IntraNode).map(|l| l.id.as_str()), Some("nvlink4-h100"));
        assert_eq!(h100.for_scope(Scope::InterNode).map(|l| l.id.as_str()), Some("ib-ndr"));
        assert_eq!(h100.for_scope(Scope::Unknown), None);
        let over = LinkChoice::resolve(ic, Some("h100-sxm"), None, ic.link("ib-xdr"));
        assert_eq!(over.inter.map(|l| l.per_gpu_gbs), Some(100.0));
        // The DGX H100 note is about the NDR ports the flag replaced.
        assert_eq!((over.intra_by_flag, over.inter_by_flag, over.note), (false, true, None));
        assert!(h100.note.as_deref().is_some_and(|n| n.starts_with("DGX H100")));
        // A PCIe card's note is about its node link: kept when only the network is chosen.
        let pcie = LinkChoice::resolve(ic, Some("h100-pcie"), None, ic.link("ib-ndr"));
        assert!(pcie.note.is_some() && pcie.inter_by_flag);
        let pcie = LinkChoice::resolve(ic, Some("h100-pcie"), ic.link("nvlink4-h100"), None);
        assert_eq!((pcie.intra_by_flag, pcie.note), (true, None));
        assert_eq!(LinkChoice::resolve(ic, Some("m4-max"), None, None).intra, None);
    }

    #[test]
    fn scopes() {
        assert_eq!(Scope::of(&[0, 1, 2, 7], Some(8)), Scope::IntraNode);
        assert_eq!(Scope::of(&[0, 8], Some(8)), Scope::InterNode);
        assert_eq!(Scope::of(&[0, 8], None), Scope::Unknown);
        assert_eq!(Scope::of(&[], Some(8)), Scope::Unknown);
        assert_eq!(Scope::of(&[3], Some(0)), Scope::Unknown);
    }
}
