//! `rooftop devices [NAME]`: the catalog, or one device with every figure's source;
//! `rooftop devices --local`: this machine's CPU and GPUs (wgpu adapters in builds with
//! the `wgpu` feature), each with the catalog entry it matches. The devices are detected
//! here (the CPU through `rooftop_bench::cpu::info`; CUDA and wgpu devices depending on
//! this build's features) into `rooftop_core::schema::devices` records, which
//! `rooftop_report::local_devices` renders.

use super::find_device;
use crate::args::DevicesArgs;
use crate::error::{CliError, Result};
use rooftop_core::device::{Catalog, DeviceSpec, Vendor};
use rooftop_core::schema::devices::LocalDevice;
use rooftop_report::local_devices;
use rooftop_report::Format;

pub fn run(catalog: &Catalog, args: &DevicesArgs, fmt: Format) -> Result<String> {
    if fmt == Format::Perfetto {
        return Err(crate::output::no_perfetto("devices"));
    }
    if args.local {
        return local(catalog, fmt);
    }
    if let Some(name) = &args.name {
        let d = find_device(catalog, name)?;
        return Ok(rooftop_report::device_detail(fmt, d)?);
    }
    let vendor = match args.vendor.as_deref() {
        None => None,
        Some(v) => Some(v.parse::<Vendor>().map_err(|_| {
            CliError::input(format!(
                "unknown vendor `{v}` for --vendor: expected nvidia, amd, apple, intel or cpu"
            ))
        })?),
    };
    let list: Vec<DeviceSpec> =
        catalog.devices.iter().filter(|d| vendor.is_none_or(|v| d.vendor == v)).cloned().collect();
    if list.is_empty() && vendor == Some(Vendor::Cpu) {
        // CPUs differ machine by machine: the catalog holds none; a device file adds one.
        return Err(CliError::input(
            "the built-in catalog has no CPUs (their roofs differ machine by machine): \
             `rooftop ceilings -o cpu.toml` measures this one, and `--device-file cpu.toml` \
             adds it (`rooftop devices --local` shows what this machine reports)",
        ));
    }
    Ok(rooftop_report::device_list(fmt, &list)?)
}

fn local(catalog: &Catalog, fmt: Format) -> Result<String> {
    if fmt == Format::Html {
        return Err(CliError::input(
            "rooftop devices --local has no HTML page: use --format table, json, csv or md",
        ));
    }
    let mut notes = Vec::new();
    let devs: Vec<LocalDevice> = std::iter::once(cpu_device(catalog))
        .chain(cuda_devices(&mut notes))
        .chain(wgpu_devices(catalog))
        .collect();
    if cfg!(not(feature = "wgpu")) {
        notes.push(
            "GPUs: this rooftop was built without the `wgpu` feature (rebuild with \
             `--features wgpu` to list Vulkan/Metal/DX12 adapters)"
                .to_string(),
        );
    } else if !devs.iter().any(|d| d.id.starts_with("wgpu:")) {
        notes.push(
            "GPUs: wgpu found no adapter (on Linux without a GPU, Mesa's mesa-vulkan-drivers \
             provides a software one)"
                .to_string(),
        );
    }
    Ok(local_devices::render(fmt, &devs, &notes))
}

/// This machine's CPU (model name, vector ISA of the kernels), with the catalog entry its
/// model name matches.
fn cpu_device(catalog: &Catalog) -> LocalDevice {
    let cpu = rooftop_bench::cpu::info::CpuInfo::detect();
    LocalDevice {
        id: "cpu".to_string(),
        name: cpu.display_name(),
        kind: "CPU".to_string(),
        api: cpu.kernel_isa.clone(),
        driver: "-".to_string(),
        timestamps: None,
        shader_f16: None,
        max_workgroup_invocations: None,
        max_workgroup_size: None,
        workgroup_memory_bytes: None,
        catalog: catalog.lookup(&cpu.model_name).ok().map(|d| d.id.clone()),
    }
}

#[cfg(not(feature = "cuda"))]
fn cuda_devices(notes: &mut Vec<String>) -> Vec<LocalDevice> {
    notes.push(
        "CUDA: this rooftop was built without the `cuda` feature (rebuild with \
         `--features cuda` to list NVIDIA GPUs through the CUDA driver)"
            .to_string(),
    );
    Vec::new()
}

/// NVIDIA GPUs through the CUDA driver; none (with the reason in a note) without one.
#[cfg(feature = "cuda")]
fn cuda_devices(notes: &mut Vec<String>) -> Vec<LocalDevice> {
    match rooftop_bench::cuda::list_devices() {
        Ok(list) => list
            .into_iter()
            .map(|d| {
                let a = &d.attributes;
                LocalDevice {
                    id: format!("cuda:{}", d.ordinal),
                    name: d.name,
                    kind: format!(
                        "NVIDIA GPU (CC {}.{}, {} SMs)",
                        a.compute_capability.0, a.compute_capability.1, a.sm_count
                    ),
                    api: "CUDA".to_string(),
                    driver: d.driver_version,
                    timestamps: Some(true),
                    shader_f16: Some(a.compute_capability.0 >= 6),
                    max_workgroup_invocations: Some(a.max_threads_per_block),
                    max_workgroup_size: Some([a.max_threads_per_block, 1024, 64]),
                    workgroup_memory_bytes: u32::try_from(a.smem_per_block_optin_bytes).ok(),
                    catalog: d.catalog_id,
                }
            })
            .collect(),
        Err(e) => {
            notes.push(format!("CUDA: {e}"));
            Vec::new()
        }
    }
}

#[cfg(not(feature = "wgpu"))]
fn wgpu_devices(_catalog: &Catalog) -> Vec<LocalDevice> {
    Vec::new()
}

#[cfg(feature = "wgpu")]
fn wgpu_devices(catalog: &Catalog) -> Vec<LocalDevice> {
    rooftop_bench::wgpu::adapter::list_adapters(catalog)
        .into_iter()
        .map(|a| LocalDevice {
            id: format!("wgpu:{}", a.index),
            name: a.name,
            kind: a.device_type,
            api: a.backend,
            driver: a.driver,
            timestamps: Some(a.timestamps),
            shader_f16: Some(a.shader_f16),
            max_workgroup_invocations: Some(a.max_workgroup_invocations),
            max_workgroup_size: Some(a.max_workgroup_size),
            workgroup_memory_bytes: Some(a.workgroup_storage_bytes),
            catalog: a.catalog_id,
        })
        .collect()
}
