//! The rows (metric, value, source) that the table and Markdown renderers both lay
//! out, so the two formats always say the same thing.

use crate::devices::headline_peak;
use rooftop_core::analysis::Analysis;
use rooftop_core::device::{DeviceSpec, FigureMeta};
use rooftop_core::units::{as_given, pct, si, sig3, us};

/// One row: metric, value, where the value comes from.
pub type Row = [String; 3];

fn row(a: impl Into<String>, b: impl Into<String>, c: impl Into<String>) -> Row {
    [a.into(), b.into(), c.into()]
}

fn meta_label(meta: &FigureMeta) -> String {
    format!("{} ({} confidence)", provenance_label(meta), meta.confidence)
}

/// A figure's provenance, with "calibrated (file)" for a roof read from a device file
/// that `rooftop ceilings -o` wrote (its source: `measured by rooftop ceilings on
/// <date>`), so that a user sees the file's roofs were used.
pub fn provenance_label(meta: &FigureMeta) -> String {
    if meta.provenance == rooftop_core::units::Provenance::Calibrated
        && meta.source.starts_with("measured by rooftop ceilings on ")
    {
        "calibrated (file)".to_string()
    } else {
        meta.provenance.to_string()
    }
}

fn rate_unit(integer: bool) -> &'static str {
    if integer {
        "OP/s"
    } else {
        "FLOP/s"
    }
}

/// The title line of an analysis.
pub fn analysis_title(a: &Analysis) -> String {
    format!("{} {} on {} [{}]", a.work.class.as_str(), a.work.shape, a.device.name, a.device.id)
}

/// The rows of one analysis.
pub fn analysis_rows(a: &Analysis) -> Vec<Row> {
    let r = &a.roofline;
    let w = &a.work;
    let mut rows = vec![
        row("FLOPs", si(r.flops, "FLOP"), format!("model: {}", w.flops_formula)),
        row("bytes (DRAM, minimum)", si(r.bytes, "B"), format!("model: {}", w.bytes_formula)),
        row(
            "arithmetic intensity",
            if r.arithmetic_intensity.is_finite() {
                format!("{} FLOP/B", sig3(r.arithmetic_intensity))
            } else {
                "∞ (no bytes)".to_string()
            },
            "model",
        ),
    ];
    if let Some(c) = &r.compute_roof {
        let note = c.note.as_deref().map(|n| format!("; {n}")).unwrap_or_default();
        rows.push(row(
            "compute roof",
            format!(
                "{} {} {}",
                si(c.tflops * 1e12, rate_unit(c.precision.is_integer())),
                c.precision,
                c.unit
            ),
            format!("{}{note}", meta_label(&c.meta)),
        ));
    }
    rows.push(row("memory roof", si(r.bandwidth_gbs * 1e9, "B/s"), meta_label(&r.bandwidth_meta)));
    if let Some(p) = r.ridge_point {
        rows.push(row("ridge point", format!("{} FLOP/B", sig3(p)), "compute roof ÷ memory roof"));
    }
    rows.push(row(
        "floor time",
        us(r.floor_time_us),
        format!("compute {} / memory {}", us(r.compute_floor_us), us(r.memory_floor_us)),
    ));
    rows.push(row(
        "attainable",
        si(r.attainable_tflops * 1e12, "FLOP/s"),
        "min(peak, intensity × bandwidth)",
    ));
    rows.push(row("bound", r.bound.as_str(), "balanced = within ±20% of the ridge"));
    if let Some(m) = &r.achieved {
        rows.push(row("time", us(m.time_us), "measured"));
        rows.push(row(
            "achieved",
            format!(
                "{}, {}",
                si(m.achieved_tflops * 1e12, "FLOP/s"),
                si(m.achieved_gbs * 1e9, "B/s")
            ),
            "model ÷ measured time",
        ));
        rows.push(row(
            "compute utilization",
            pct(m.compute_utilization_pct),
            "of the compute roof",
        ));
        rows.push(row("memory utilization", pct(m.memory_utilization_pct), "of the memory roof"));
        rows.push(row("roofline attainment", pct(m.roofline_attainment_pct), "floor time ÷ time"));
    }
    for l in &r.levels {
        let util = l.utilization_pct.map_or_else(String::new, |u| {
            format!("{} of {}", pct(u), si(l.bandwidth_gbs * 1e9, "B/s"))
        });
        rows.push(row(format!("{} traffic", l.level.as_str()), si(l.bytes, "B"), util));
    }
    if let Some(tr) = &a.tiles {
        let e = &tr.efficiency;
        let view = if tr.swapped { " (swapped from the PyTorch view)" } else { "" };
        rows.push(row(
            "GEMM tiles",
            format!("{}x{} tile, {} tiles", e.mt_m, e.mt_n, e.num_tiles),
            format!("kernel view M={} N={}{view}", tr.kernel_m, tr.kernel_n),
        ));
        rows.push(row("tile efficiency", sig3(e.tile_eff), "M·N ÷ padded M·N"));
        match (e.wq_eff, e.waves) {
            (Some(wq), Some(waves)) => rows.push(row(
                "wave efficiency",
                sig3(wq),
                format!("{waves} waves on {} {}s", a.device.num_cu, a.device.cu_kind),
            )),
            _ => rows.push(row("wave efficiency", "n/a", e.notes.join("; "))),
        }
        rows.push(row("dim efficiency", sig3(e.dim_eff), "tile × wave"));
    } else if let Some(k) = &a.gemm_kernel {
        rows.push(row(
            "GEMM tiles",
            "unknown",
            format!("{} kernel name carries no macro tile", k.family.label()),
        ));
    }
    if let Some(o) = &a.occupancy {
        let est = if o.estimate { " (estimate)" } else { "" };
        rows.push(row(
            "occupancy",
            format!("{}{est}", pct(o.occupancy_pct)),
            format!(
                "{} blocks, {}/{} warps per {}; limited by {}",
                o.blocks_per_cu,
                o.active_warps_per_cu,
                o.max_warps_per_cu,
                o.scope.as_str(),
                o.limiter
            ),
        ));
    } else if let Some(n) = &a.occupancy_note {
        rows.push(row("occupancy", "n/a", n.clone()));
    }
    rows
}

fn kib(b: u64) -> String {
    if b.is_multiple_of(1024) {
        format!("{} KiB", b / 1024)
    } else {
        format!("{b} B")
    }
}

fn mib(b: u64) -> String {
    // A cache size is a catalog figure: `as_given` keeps its whole digits.
    let m = b as f64 / (1024.0 * 1024.0);
    if m >= 1.0 {
        format!("{} MiB", as_given(m))
    } else {
        kib(b)
    }
}

/// One line of `rooftop devices ID`: a figure with its own meta, or a fact with a note.
#[derive(Debug, Clone, serde::Serialize)]
pub struct DeviceFigure {
    pub metric: String,
    pub value: String,
    /// Where the figure comes from; `None` for a line that is not a catalogued figure
    /// (the chip name, the ridge point, a special issue mode).
    #[serde(flatten)]
    pub meta: Option<FigureMeta>,
    /// What the line is when it has no meta (`peak ÷ bandwidth`, the chip).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub note: String,
}

fn fact(
    metric: impl Into<String>,
    value: impl Into<String>,
    note: impl Into<String>,
) -> DeviceFigure {
    DeviceFigure { metric: metric.into(), value: value.into(), meta: None, note: note.into() }
}

fn figure(metric: impl Into<String>, value: impl Into<String>, meta: &FigureMeta) -> DeviceFigure {
    DeviceFigure {
        metric: metric.into(),
        value: value.into(),
        meta: Some(meta.clone()),
        note: String::new(),
    }
}

/// The rows of one device, every figure with the number of its source in
/// [`device_sources`] and its provenance and confidence.
pub fn device_rows(d: &DeviceSpec) -> Vec<Row> {
    let sources = device_sources(d);
    device_figures(d)
        .into_iter()
        .map(|f| {
            let cell = match &f.meta {
                Some(m) => meta_cell(&sources, m),
                None => f.note,
            };
            [f.metric, f.value, cell]
        })
        .collect()
}

/// The distinct sources of a device's figures in row order, the device's default first:
/// the rows name them by number (`[2]`), the footer lists them.
pub fn device_sources(d: &DeviceSpec) -> Vec<String> {
    let mut out = vec![d.meta.source.clone()];
    for f in device_figures(d) {
        if let Some(m) = f.meta {
            if !out.contains(&m.source) {
                out.push(m.source);
            }
        }
    }
    out
}

/// Every figure of one device with its own source, confidence and provenance, in the
/// order `rooftop devices ID` prints them.
pub fn device_figures(d: &DeviceSpec) -> Vec<DeviceFigure> {
    let src = |key: &str| d.figure(key);
    let mut rows = vec![fact(
        "vendor / arch",
        format!("{} {}", d.vendor.as_str(), d.arch),
        d.chip.clone().unwrap_or_default(),
    )];
    if let Some(cc) = &d.compute_capability {
        rows.push(fact("compute capability", cc.clone(), ""));
    }
    if let Some(l) = &d.llvm_target {
        rows.push(fact("LLVM target", l.clone(), ""));
    }
    rows.push(figure(format!("{}s", d.cu_kind), d.num_cu.to_string(), src("compute.num_cu")));
    let width = match d.alt_warp_size {
        Some(alt) => format!("{} (alt {alt})", d.warp_size),
        None => d.warp_size.to_string(),
    };
    rows.push(fact("warp / wave / SIMD width", width, ""));
    if let Some(c) = d.boost_clock_mhz {
        rows.push(figure("boost clock", si(c * 1e6, "Hz"), src("compute.boost_clock_mhz")));
    }
    for p in &d.peaks {
        rows.push(figure(
            format!("peak {} {}", p.precision, p.unit),
            si(p.tflops * 1e12, rate_unit(p.precision.is_integer())),
            &p.meta,
        ));
    }
    for (name, v) in &d.variant_peaks {
        rows.push(fact(format!("variant {name}"), si(v * 1e12, "FLOP/s"), "special issue mode"));
    }
    for p in &d.achievable {
        rows.push(figure(
            format!("achievable {} {}", p.precision, p.unit),
            si(p.tflops * 1e12, rate_unit(p.precision.is_integer())),
            &p.meta,
        ));
    }
    rows.push(figure(
        "memory bandwidth",
        si(d.peak_bw_gbs * 1e9, "B/s"),
        src("memory.bandwidth_gbs"),
    ));
    for b in &d.bandwidths {
        rows.push(figure(
            format!("{} bandwidth", b.level.as_str()),
            si(b.gbs * 1e9, "B/s"),
            &b.meta,
        ));
    }
    if let Some(gb) = d.mem_gb {
        // The vendor's memory size, a catalog figure: `as_given` keeps its whole digits.
        rows.push(figure(
            "memory",
            format!("{} GB {}", as_given(gb), d.mem_type.clone().unwrap_or_default()),
            src("memory.size_gb"),
        ));
    }
    if let Some(l2) = d.l2_bytes {
        rows.push(figure("L2 cache", mib(l2), src("memory.l2_mib")));
    }
    if let Some(llc) = d.llc_bytes {
        rows.push(figure("last-level cache", mib(llc), src("memory.llc_mib")));
    }
    if let Some((p, u)) = headline_peak(d) {
        if let Some(r) = d.ridge_point(p, u) {
            rows.push(fact(
                format!("ridge point ({p} {u})"),
                format!("{} FLOP/B", sig3(r)),
                "peak ÷ bandwidth",
            ));
        }
    }
    let l = &d.limits;
    let limits: [(&str, &str, Option<String>); 18] = [
        ("shared memory per CU", "smem_kib_per_cu", l.smem_bytes_per_cu.map(kib)),
        ("shared memory per WGP", "smem_kib_per_wgp", l.smem_bytes_per_wgp.map(kib)),
        (
            "shared memory per block (max)",
            "smem_kib_per_block_max",
            l.smem_bytes_per_block_max.map(kib),
        ),
        (
            "shared memory per block (default)",
            "smem_kib_per_block_default",
            l.smem_bytes_per_block_default.map(kib),
        ),
        (
            "shared memory granularity",
            "smem_alloc_granularity_bytes",
            l.smem_alloc_granularity_bytes.map(|b| format!("{b} B")),
        ),
        (
            "shared memory reserved per block",
            "smem_reserved_per_block_bytes",
            l.smem_reserved_per_block_bytes.map(|b| format!("{b} B")),
        ),
        (
            "max threads per block",
            "max_threads_per_block",
            l.max_threads_per_block.map(|v| v.to_string()),
        ),
        ("max threads per CU", "max_threads_per_cu", l.max_threads_per_cu.map(|v| v.to_string())),
        (
            "32-bit registers per CU",
            "regs_32bit_per_cu",
            l.regs_32bit_per_cu.map(|v| v.to_string()),
        ),
        (
            "register file per CU",
            "reg_file_kib_per_cu",
            l.reg_file_kib_per_cu.map(|v| format!("{v} KiB")),
        ),
        (
            "max registers per thread",
            "max_regs_per_thread",
            l.max_regs_per_thread.map(|v| v.to_string()),
        ),
        ("max warps per CU", "max_warps_per_cu", l.max_warps_per_cu.map(|v| v.to_string())),
        ("max blocks per CU", "max_blocks_per_cu", l.max_blocks_per_cu.map(|v| v.to_string())),
        ("SIMDs per CU", "simds_per_cu", l.simds_per_cu.map(|v| v.to_string())),
        ("max waves per SIMD", "max_waves_per_simd", l.max_waves_per_simd.map(|v| v.to_string())),
        (
            "VGPRs per lane per SIMD",
            "vgpr_per_lane_per_simd",
            l.vgpr_per_lane_per_simd.map(|v| v.to_string()),
        ),
        (
            "VGPR allocation granule",
            "vgpr_alloc_granule",
            l.vgpr_alloc_granule.map(|v| v.to_string()),
        ),
        ("SGPRs per SIMD", "sgpr_per_simd", l.sgpr_per_simd.map(|v| v.to_string())),
    ];
    for (name, key, value) in limits {
        if let Some(v) = value {
            rows.push(figure(name, v, src(&format!("limits.{key}"))));
        }
    }
    rows
}

/// The source cell of a figure: provenance and confidence, after the number of its
/// source in the footer's list when the device has more than one.
fn meta_cell(sources: &[String], m: &FigureMeta) -> String {
    let label = format!("{}, {}", provenance_label(m), m.confidence);
    match sources.iter().position(|s| *s == m.source) {
        Some(i) if sources.len() > 1 => format!("[{}] {label}", i + 1),
        _ => label,
    }
}

/// Lines after a device's rows: sources, unsupported formats, aliases, note.
pub fn device_footer(d: &DeviceSpec) -> Vec<String> {
    let sources = device_sources(d);
    let mut out = if sources.len() == 1 {
        vec![format!(
            "sources: {} ({}, {} confidence)",
            d.meta.source, d.meta.provenance, d.meta.confidence
        )]
    } else {
        sources
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let what = if i == 0 { " (every figure without its own)" } else { "" };
                format!("source [{}]{what}: {s}", i + 1)
            })
            .collect()
    };
    if !d.unsupported.is_empty() {
        out.push(format!("not supported natively: {}", d.unsupported.join(", ")));
    }
    if !d.aliases.is_empty() {
        out.push(format!("also found as: {}", d.aliases.join(", ")));
    }
    if let Some(n) = &d.note {
        out.push(format!("note: {n}"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use rooftop_core::analysis::{analyze, KernelRequest};
    use rooftop_core::device::{BandwidthRoof, Catalog, MemLevel};
    use rooftop_core::ops::gemm::GemmSpec;
    use rooftop_core::units::Precision;

    /// Computed figures print three significant digits, never more. A 4096³ bf16 GEMM:
    /// 2·4096³ = 137,438,953,472 FLOP over 100,663,296 B = 1365.3 FLOP/B. Timed at 1 ms
    /// with 5,875,200,000 B through an L2 of 546 GB/s: 5875.2 GB/s = 1076.0% of it.
    #[test]
    fn large_computed_figures_have_three_significant_digits() {
        let mut h100 = Catalog::builtin().lookup("h100-sxm").unwrap().clone();
        let meta = h100.meta.clone();
        h100.bandwidths.push(BandwidthRoof { level: MemLevel::L2, gbs: 546.0, meta });
        let w = GemmSpec::new(4096, 4096, 4096, Precision::Bf16).work().unwrap();
        let mut req = KernelRequest::new(w);
        req.time_ns = Some(1_000_000);
        req.level_bytes = vec![(MemLevel::L2, 5_875_200_000.0)];
        let rows = analysis_rows(&analyze(&h100, &req).unwrap());
        let find = |m: &str| rows.iter().find(|r| r[0] == m).unwrap().clone();
        assert_eq!(find("arithmetic intensity")[1], "1370 FLOP/B");
        let l2 = rows.iter().find(|r| r[0].ends_with("traffic")).unwrap();
        assert_eq!(l2[2], "1080% of 546 GB/s");
    }
}
