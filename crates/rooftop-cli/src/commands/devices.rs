//! `rooftop devices [NAME]`: the catalog, or one device with every figure's source;
//! `rooftop devices --local`: this machine's CPU and GPUs (wgpu adapters in builds with
//! the `wgpu` feature), each with the catalog entry it matches.

use super::find_device;
use crate::args::DevicesArgs;
use crate::error::{CliError, Result};
use rooftop_core::device::{Catalog, DeviceSpec, Vendor};
use rooftop_report::Format;
use std::fmt::Write as _;

pub fn run(catalog: &Catalog, args: &DevicesArgs, fmt: Format) -> Result<String> {
    if fmt == Format::Perfetto {
        return Err(crate::output::no_perfetto("devices"));
    }
    if args.local {
        return local(catalog, fmt);
    }
    if let Some(name) = &args.name {
        let d = find_device(catalog, name)?;
        return Ok(rooftop_report::device_detail(fmt, d));
    }
    let vendor = match args.vendor.as_deref() {
        None => None,
        Some(v) => Some(parse_vendor(v)?),
    };
    let list: Vec<DeviceSpec> =
        catalog.devices.iter().filter(|d| vendor.is_none_or(|v| d.vendor == v)).cloned().collect();
    Ok(rooftop_report::device_list(fmt, &list))
}

fn parse_vendor(v: &str) -> Result<Vendor> {
    match v.to_ascii_lowercase().as_str() {
        "nvidia" => Ok(Vendor::Nvidia),
        "amd" => Ok(Vendor::Amd),
        "apple" => Ok(Vendor::Apple),
        "intel" => Ok(Vendor::Intel),
        "cpu" => Ok(Vendor::Cpu),
        _ => Err(CliError::input(format!(
            "unknown vendor `{v}` for --vendor: expected nvidia, amd, apple, intel or cpu"
        ))),
    }
}

/// One device of this machine, as `--local` lists it.
#[derive(Debug, Clone, PartialEq)]
struct LocalDevice {
    /// What `--backend`/`--adapter` call it: `cpu`, `wgpu:0`.
    id: String,
    name: String,
    /// `CPU`, `discrete GPU`, `integrated GPU`, `CPU (software)`, ...
    kind: String,
    /// `Vulkan`, `Metal`, `DX12`, `GL`; the vector ISA for the CPU.
    api: String,
    driver: String,
    /// GPU timestamp queries (`-` for the CPU).
    timestamps: Option<bool>,
    shader_f16: Option<bool>,
    /// Largest workgroup: invocations, and the x/y/z limits.
    max_workgroup: Option<(u32, [u32; 3])>,
    workgroup_memory_bytes: Option<u32>,
    /// Id of the catalog entry this device matches.
    catalog: Option<String>,
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
    if devs.iter().any(|d| d.kind == "CPU (software)") {
        notes.push(
            "CPU (software) adapters emulate a GPU on the CPU: their timings are not GPU results"
                .to_string(),
        );
    }
    Ok(match fmt {
        Format::Json | Format::Perfetto => local_json(&devs, &notes),
        Format::Csv => local_csv(&devs),
        Format::Markdown => local_markdown(&devs, &notes),
        _ => local_table(&devs, &notes),
    })
}

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
        max_workgroup: None,
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
                    max_workgroup: Some((
                        a.max_threads_per_block,
                        [a.max_threads_per_block, 1024, 64],
                    )),
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
            max_workgroup: Some((a.max_workgroup_invocations, a.max_workgroup_size)),
            workgroup_memory_bytes: Some(a.workgroup_storage_bytes),
            catalog: a.catalog_id,
        })
        .collect()
}

fn yes_no(v: Option<bool>) -> &'static str {
    match v {
        Some(true) => "yes",
        Some(false) => "no",
        None => "-",
    }
}

fn workgroup_cell(d: &LocalDevice) -> String {
    d.max_workgroup.map_or_else(|| "-".to_string(), |(n, [x, y, z])| format!("{n} ({x}x{y}x{z})"))
}

fn smem_cell(d: &LocalDevice) -> String {
    d.workgroup_memory_bytes.map_or_else(|| "-".to_string(), |b| format!("{} KiB", b / 1024))
}

/// The columns every format shows, in order.
const HEADER: [&str; 10] = [
    "id",
    "name",
    "type",
    "api",
    "driver",
    "timestamps",
    "shader-f16",
    "max workgroup",
    "workgroup memory",
    "catalog",
];

fn cells(d: &LocalDevice) -> [String; 10] {
    [
        d.id.clone(),
        d.name.clone(),
        d.kind.clone(),
        d.api.clone(),
        d.driver.clone(),
        yes_no(d.timestamps).to_string(),
        yes_no(d.shader_f16).to_string(),
        workgroup_cell(d),
        smem_cell(d),
        d.catalog.clone().unwrap_or_else(|| "-".to_string()),
    ]
}

/// The terminal table: one block per device (ten columns do not fit 100 characters).
fn local_table(devs: &[LocalDevice], notes: &[String]) -> String {
    let width = HEADER.iter().map(|h| h.len()).max().unwrap_or(0);
    let mut out = String::new();
    for d in devs {
        for (h, v) in HEADER.iter().zip(cells(d)) {
            let _ = writeln!(out, "{h:>width$}  {v}");
        }
        out.push('\n');
    }
    let summary = format!(
        "{} local device{}. `--backend cuda|wgpu --adapter N` picks cuda:N / wgpu:N; \
         `rooftop devices ID` shows a catalog entry.",
        devs.len(),
        if devs.len() == 1 { "" } else { "s" }
    );
    out.push_str(&rooftop_report::wrap_text(&summary, 100, "", ""));
    for n in notes {
        out.push_str(&rooftop_report::wrap_text(n, 100, "note: ", "      "));
    }
    out
}

fn local_markdown(devs: &[LocalDevice], notes: &[String]) -> String {
    let esc = |s: &str| s.replace('|', "\\|");
    let mut out = format!("| {} |\n|{}\n", HEADER.join(" | "), "---|".repeat(HEADER.len()));
    for d in devs {
        let row: Vec<String> = cells(d).iter().map(|c| esc(c)).collect();
        let _ = writeln!(out, "| {} |", row.join(" | "));
    }
    for n in notes {
        let _ = writeln!(out, "\n> {n}");
    }
    out
}

fn local_csv(devs: &[LocalDevice]) -> String {
    let quote = |s: &str| {
        if s.contains([',', '"', '\n']) {
            format!("\"{}\"", s.replace('"', "\"\""))
        } else {
            s.to_string()
        }
    };
    let mut out = HEADER.iter().map(|h| h.replace(' ', "_")).collect::<Vec<_>>().join(",");
    out.push('\n');
    for d in devs {
        out.push_str(&cells(d).iter().map(|c| quote(c)).collect::<Vec<_>>().join(","));
        out.push('\n');
    }
    out
}

fn local_json(devs: &[LocalDevice], notes: &[String]) -> String {
    let items: Vec<serde_json::Value> = devs
        .iter()
        .map(|d| {
            serde_json::json!({
                "id": d.id,
                "name": d.name,
                "type": d.kind,
                "api": d.api,
                "driver": d.driver,
                "timestamps": d.timestamps,
                "shader_f16": d.shader_f16,
                "max_workgroup_invocations": d.max_workgroup.map(|(n, _)| n),
                "max_workgroup_size": d.max_workgroup.map(|(_, s)| s),
                "workgroup_memory_bytes": d.workgroup_memory_bytes,
                "catalog": d.catalog,
            })
        })
        .collect();
    let v = serde_json::json!({ "devices": items, "notes": notes });
    let mut s = serde_json::to_string_pretty(&v).unwrap_or_else(|_| "{}".to_string());
    s.push('\n');
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gpu() -> LocalDevice {
        LocalDevice {
            id: "wgpu:0".into(),
            name: "Apple M2 Max".into(),
            kind: "integrated GPU".into(),
            api: "Metal".into(),
            driver: "unknown".into(),
            timestamps: Some(true),
            shader_f16: Some(true),
            max_workgroup: Some((1024, [1024, 1024, 1024])),
            workgroup_memory_bytes: Some(32768),
            catalog: Some("m2-max".into()),
        }
    }

    #[test]
    fn every_format_shows_every_field() {
        let devs = [gpu()];
        let t = local_table(&devs, &[]);
        for s in ["wgpu:0", "Apple M2 Max", "Metal", "1024 (1024x1024x1024)", "32 KiB", "m2-max"] {
            assert!(t.contains(s), "{s} missing from\n{t}");
        }
        let csv = local_csv(&devs);
        assert_eq!(csv.lines().count(), 2);
        assert!(csv.lines().nth(1).unwrap().ends_with(",m2-max"), "{csv}");
        let md = local_markdown(&devs, &["n".into()]);
        assert!(md.starts_with("| id | name |") && md.contains("> n"), "{md}");
        let j: serde_json::Value = serde_json::from_str(&local_json(&devs, &[])).unwrap();
        assert_eq!(j["devices"][0]["catalog"], "m2-max");
        assert_eq!(j["devices"][0]["max_workgroup_size"][2], 1024);
    }

    #[test]
    fn csv_quotes_commas() {
        let mut d = gpu();
        d.name = "llvmpipe (LLVM 15.0.6, 256 bits)".into();
        assert!(local_csv(&[d]).contains("\"llvmpipe (LLVM 15.0.6, 256 bits)\""));
    }
}
