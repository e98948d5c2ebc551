//! Finding wgpu adapters, choosing one (`--adapter`), describing it, and matching it to
//! a catalog entry.
//!
//! Adapter names differ by backend and driver: Metal says `Apple M2 Max`, Vulkan on
//! NVIDIA `NVIDIA GeForce RTX 4090`, Mesa's RADV `AMD Radeon RX 7900 XTX (RADV NAVI31)`,
//! Intel's ANV `Intel(R) Arc(tm) A770 Graphics (DG2)`. [`catalog_match`] tries the name
//! as given, then without a trailing parenthesised driver tag; the catalog's own
//! normalisation (`Catalog::lookup`) takes care of case, `(R)`/`(TM)` and brand words.
//! CPU adapters (lavapipe, llvmpipe, WARP) never match a catalog GPU.

use crate::error::BackendError;
use rooftop_core::device::{Catalog, DeviceSpec};
use serde::Serialize;

/// What `rooftop devices --local` shows about one adapter.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AdapterSummary {
    /// Position in wgpu's enumeration (what `--adapter N` takes).
    pub index: usize,
    pub name: String,
    /// `Vulkan`, `Metal`, `DX12`, `GL`.
    pub backend: String,
    /// `discrete GPU`, `integrated GPU`, `virtual GPU`, `CPU (software)`, `other`.
    pub device_type: String,
    /// True for software rasterisers (lavapipe, llvmpipe, WARP).
    pub software: bool,
    /// Driver name and version, as the driver reports them.
    pub driver: String,
    pub timestamps: bool,
    pub shader_f16: bool,
    /// `SHADER_F64`: the fp64 `fma` probe can run.
    pub shader_f64: bool,
    pub max_workgroup_invocations: u32,
    pub max_workgroup_size: [u32; 3],
    pub workgroup_storage_bytes: u32,
    pub max_storage_binding_bytes: u64,
    pub max_buffer_bytes: u64,
    /// Id of the catalog device this adapter is, if any.
    pub catalog_id: Option<String>,
}

/// Every adapter wgpu finds (Vulkan, Metal, DX12 and GL, as built), in wgpu's order.
pub fn enumerate(instance: &wgpu::Instance) -> Vec<wgpu::Adapter> {
    pollster::block_on(instance.enumerate_adapters(wgpu::Backends::all()))
}

/// A wgpu instance without a window, honouring `WGPU_BACKEND` and friends.
pub fn instance() -> wgpu::Instance {
    wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle_from_env())
}

/// The backend's display name.
pub fn backend_name(b: wgpu::Backend) -> &'static str {
    match b {
        wgpu::Backend::Vulkan => "Vulkan",
        wgpu::Backend::Metal => "Metal",
        wgpu::Backend::Dx12 => "DX12",
        wgpu::Backend::Gl => "GL",
        wgpu::Backend::BrowserWebGpu => "WebGPU",
        wgpu::Backend::Noop => "noop",
    }
}

/// The device type's display name.
pub fn device_type_name(t: wgpu::DeviceType) -> &'static str {
    match t {
        wgpu::DeviceType::DiscreteGpu => "discrete GPU",
        wgpu::DeviceType::IntegratedGpu => "integrated GPU",
        wgpu::DeviceType::VirtualGpu => "virtual GPU",
        wgpu::DeviceType::Cpu => "CPU (software)",
        wgpu::DeviceType::Other => "other",
    }
}

/// Preference of an adapter for the default choice (higher first): real GPUs before
/// software ones, native APIs before GL.
fn rank(info: &wgpu::AdapterInfo) -> u32 {
    let t = match info.device_type {
        wgpu::DeviceType::DiscreteGpu => 40,
        wgpu::DeviceType::IntegratedGpu => 30,
        wgpu::DeviceType::VirtualGpu => 20,
        wgpu::DeviceType::Other => 10,
        wgpu::DeviceType::Cpu => 0,
    };
    let api = match info.backend {
        wgpu::Backend::Vulkan | wgpu::Backend::Metal | wgpu::Backend::Dx12 => 2,
        _ => 0,
    };
    t + api
}

/// Picks an adapter: `query` is an index (`0`) or a case-insensitive part of the name;
/// `None` takes the highest-performance one (discrete, then integrated, then virtual
/// GPUs, then software; Vulkan/Metal/DX12 before GL). Returns its index too.
pub fn select(
    adapters: Vec<wgpu::Adapter>,
    query: Option<&str>,
) -> Result<(usize, wgpu::Adapter), BackendError> {
    if adapters.is_empty() {
        return Err(BackendError::Other(
            "wgpu found no adapter (no Vulkan, Metal or DX12 driver); on Linux without a GPU, \
             install Mesa's software Vulkan driver (Debian/Ubuntu: mesa-vulkan-drivers)"
                .to_string(),
        ));
    }
    let listing = || {
        adapters
            .iter()
            .enumerate()
            .map(|(i, a)| {
                let info = a.get_info();
                format!("{i}: {} ({})", info.name, backend_name(info.backend))
            })
            .collect::<Vec<_>>()
            .join("; ")
    };
    let idx = match query.map(str::trim) {
        None | Some("") => {
            let mut best = 0;
            for (i, a) in adapters.iter().enumerate() {
                if rank(&a.get_info()) > rank(&adapters[best].get_info()) {
                    best = i;
                }
            }
            best
        }
        Some(q) => {
            if let Ok(i) = q.parse::<usize>() {
                if i >= adapters.len() {
                    return Err(BackendError::Other(format!(
                        "--adapter {i}: there are {} adapters ({})",
                        adapters.len(),
                        listing()
                    )));
                }
                i
            } else {
                let ql = q.to_lowercase();
                let hits: Vec<usize> = adapters
                    .iter()
                    .enumerate()
                    .filter(|(_, a)| a.get_info().name.to_lowercase().contains(&ql))
                    .map(|(i, _)| i)
                    .collect();
                match hits.as_slice() {
                    [i] => *i,
                    [] => {
                        return Err(BackendError::Other(format!(
                            "--adapter `{q}` matches no adapter ({})",
                            listing()
                        )))
                    }
                    many => {
                        // Several backends expose the same GPU: prefer the best-ranked.
                        let mut best = many[0];
                        for &i in many {
                            if rank(&adapters[i].get_info()) > rank(&adapters[best].get_info()) {
                                best = i;
                            }
                        }
                        best
                    }
                }
            }
        }
    };
    let adapter = adapters.into_iter().nth(idx).ok_or_else(|| {
        BackendError::Other(format!("adapter {idx} disappeared during enumeration"))
    })?;
    Ok((idx, adapter))
}

/// The names to look up in the catalog, best first.
fn candidate_names(name: &str) -> Vec<String> {
    let mut v = vec![name.trim().to_string()];
    let mut s = name.trim();
    // Strip trailing "(RADV NAVI31)", "(DG2)", "(LLVM 15.0.6, 256 bits)".
    while let Some(open) = s.rfind(" (") {
        if !s.ends_with(')') {
            break;
        }
        s = s[..open].trim_end();
        v.push(s.to_string());
    }
    v
}

/// The catalog device an adapter is, if any. Software adapters match nothing.
pub fn catalog_match<'a>(catalog: &'a Catalog, info: &wgpu::AdapterInfo) -> Option<&'a DeviceSpec> {
    if info.device_type == wgpu::DeviceType::Cpu {
        return None;
    }
    candidate_names(&info.name).iter().find_map(|n| catalog.lookup(n).ok())
}

/// The summary of an adapter.
pub fn summarize(index: usize, adapter: &wgpu::Adapter, catalog: &Catalog) -> AdapterSummary {
    let info = adapter.get_info();
    let limits = adapter.limits();
    let features = adapter.features();
    let driver = match (info.driver.trim(), info.driver_info.trim()) {
        ("", "") => "unknown".to_string(),
        (d, "") | ("", d) => d.to_string(),
        (d, i) => format!("{d} {i}"),
    };
    AdapterSummary {
        index,
        name: info.name.clone(),
        backend: backend_name(info.backend).to_string(),
        device_type: device_type_name(info.device_type).to_string(),
        software: info.device_type == wgpu::DeviceType::Cpu,
        driver,
        timestamps: features.contains(wgpu::Features::TIMESTAMP_QUERY),
        shader_f16: features.contains(wgpu::Features::SHADER_F16),
        shader_f64: features.contains(wgpu::Features::SHADER_F64),
        max_workgroup_invocations: limits.max_compute_invocations_per_workgroup,
        max_workgroup_size: [
            limits.max_compute_workgroup_size_x,
            limits.max_compute_workgroup_size_y,
            limits.max_compute_workgroup_size_z,
        ],
        workgroup_storage_bytes: limits.max_compute_workgroup_storage_size,
        max_storage_binding_bytes: limits.max_storage_buffer_binding_size,
        max_buffer_bytes: limits.max_buffer_size,
        catalog_id: catalog_match(catalog, &info).map(|d| d.id.clone()),
    }
}

/// Every adapter on this machine, summarised (for `rooftop devices --local`).
pub fn list_adapters(catalog: &Catalog) -> Vec<AdapterSummary> {
    let inst = instance();
    enumerate(&inst).iter().enumerate().map(|(i, a)| summarize(i, a, catalog)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(name: &str, t: wgpu::DeviceType) -> wgpu::AdapterInfo {
        wgpu::AdapterInfo {
            name: name.to_string(),
            vendor: 0,
            device: 0,
            device_type: t,
            device_pci_bus_id: String::new(),
            driver: String::new(),
            driver_info: String::new(),
            backend: wgpu::Backend::Vulkan,
            subgroup_min_size: 32,
            subgroup_max_size: 32,
            transient_saves_memory: None,
            limit_bucket: None,
        }
    }

    #[test]
    fn adapter_names_match_catalog_entries() {
        let c = Catalog::builtin();
        let gpu = wgpu::DeviceType::DiscreteGpu;
        let cases = [
            ("Apple M2 Max", Some("m2-max")),
            ("NVIDIA GeForce RTX 4090", Some("rtx-4090")),
            ("AMD Radeon RX 7900 XTX (RADV NAVI31)", Some("rx-7900-xtx")),
            ("Intel(R) Arc(tm) A770 Graphics (DG2)", Some("arc-a770")),
            ("Some Unknown GPU", None),
        ];
        for (name, want) in cases {
            let got = catalog_match(c, &info(name, gpu)).map(|d| d.id.as_str());
            assert_eq!(got, want, "{name}");
        }
        // A software adapter never matches, whatever its name.
        let sw = info("NVIDIA GeForce RTX 4090", wgpu::DeviceType::Cpu);
        assert!(catalog_match(c, &sw).is_none());
    }

    #[test]
    fn candidate_names_strip_driver_tags() {
        assert_eq!(
            candidate_names("llvmpipe (LLVM 15.0.6, 256 bits)"),
            vec!["llvmpipe (LLVM 15.0.6, 256 bits)", "llvmpipe"]
        );
        assert_eq!(candidate_names("Apple M1"), vec!["Apple M1"]);
    }

    #[test]
    fn discrete_gpus_rank_above_software_and_gl() {
        let d = info("x", wgpu::DeviceType::DiscreteGpu);
        let cpu = info("y", wgpu::DeviceType::Cpu);
        let mut gl = info("z", wgpu::DeviceType::DiscreteGpu);
        gl.backend = wgpu::Backend::Gl;
        assert!(rank(&d) > rank(&cpu));
        assert!(rank(&d) > rank(&gl));
    }
}
