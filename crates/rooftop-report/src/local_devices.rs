//! This machine's devices, as `rooftop devices --local` lists them: the renderers
//! (terminal table, Markdown, CSV, JSON) of the records
//! ([`LocalDevice`]).
//!
//! The CLI detects the devices (the CPU, CUDA GPUs and wgpu adapters in builds with
//! those features) and says what its build cannot see in notes; [`render`] writes them.
//! Nothing here probes the machine. The same ten columns appear in every format.

use crate::Format;
use crate::MISSING;
use rooftop_core::schema::devices::{LocalDevice, LocalDevices, SCHEMA_VERSION};
use std::fmt::Write as _;

/// `devs` with `notes` in `format` (JSON for Perfetto; the terminal table for HTML,
/// which has no page of its own). A software adapter (`CPU (software)`) adds a note
/// that its timings are not GPU results.
///
/// ```
/// use rooftop_core::schema::devices::LocalDevice;
/// use rooftop_report::local_devices::render;
/// use rooftop_report::Format;
///
/// let gpu = LocalDevice {
///     id: "wgpu:0".into(),
///     name: "llvmpipe (LLVM 15.0.6, 256 bits)".into(),
///     kind: "CPU (software)".into(),
///     api: "Vulkan".into(),
///     driver: "Mesa".into(),
///     timestamps: Some(true),
///     shader_f16: Some(false),
///     max_workgroup_invocations: Some(1024),
///     max_workgroup_size: Some([1024, 1024, 1024]),
///     workgroup_memory_bytes: Some(32768),
///     catalog: None,
/// };
/// let csv = render(Format::Csv, &[gpu.clone()], &[]);
/// assert!(csv.ends_with("Mesa,yes,no,1024 (1024x1024x1024),32 KiB,\n"), "{csv}");
/// assert!(render(Format::Table, &[gpu], &[]).contains("not GPU results"));
/// ```
pub fn render(format: Format, devs: &[LocalDevice], notes: &[String]) -> String {
    let mut notes = notes.to_vec();
    if devs.iter().any(|d| d.kind == "CPU (software)") {
        notes.push(
            "CPU (software) adapters emulate a GPU on the CPU: their timings are not GPU results"
                .to_string(),
        );
    }
    match format {
        Format::Json | Format::Perfetto => local_json(devs, &notes),
        Format::Csv => local_csv(devs),
        Format::Markdown => local_markdown(devs, &notes),
        _ => local_table(devs, &notes),
    }
}

fn yes_no(v: Option<bool>) -> &'static str {
    match v {
        Some(true) => "yes",
        Some(false) => "no",
        None => MISSING,
    }
}

fn workgroup_cell(dev: &LocalDevice) -> String {
    let size = dev.max_workgroup_size.map(|[x, y, z]| format!("{x}x{y}x{z}"));
    match (dev.max_workgroup_invocations, size) {
        (Some(n), Some(s)) => format!("{n} ({s})"),
        (Some(n), None) => n.to_string(),
        (None, Some(s)) => s,
        (None, None) => MISSING.to_string(),
    }
}

fn smem_cell(d: &LocalDevice) -> String {
    d.workgroup_memory_bytes.map_or_else(|| MISSING.to_string(), |b| format!("{} KiB", b / 1024))
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
        d.catalog.clone().unwrap_or_else(|| MISSING.to_string()),
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
    out.push_str(&crate::wrap_text(&summary, 100, "", ""));
    for n in notes {
        out.push_str(&crate::wrap_text(n, 100, "note: ", "      "));
    }
    out
}

fn local_markdown(devs: &[LocalDevice], notes: &[String]) -> String {
    let esc = crate::markdown::cell;
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
    // A missing value is an empty CSV cell, not the tables' dash.
    let quote = |s: &str| {
        if s == MISSING {
            String::new()
        } else if s.contains([',', '"', '\n']) {
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
    let all = LocalDevices {
        schema_version: SCHEMA_VERSION,
        devices: devs.to_vec(),
        notes: notes.to_vec(),
    };
    // Through a `Value`: its keys are sorted, as this output has always printed them.
    let v = serde_json::to_value(&all).unwrap_or_default();
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
            max_workgroup_invocations: Some(1024),
            max_workgroup_size: Some([1024, 1024, 1024]),
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
