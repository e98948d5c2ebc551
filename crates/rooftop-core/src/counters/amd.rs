//! AMD counter formulas (rocprof / rocprofv3 / rocprof-compute counter names).
//!
//! The formulas are rocprof-compute's (`src/utils/roofline_calc.py` for the roofline
//! bytes and FLOPs, the `gfx9xx` analysis YAMLs for hit rates and occupancy) and
//! rocprofiler-sdk's `counter_defs.yaml` for `FETCH_SIZE` / `WRITE_SIZE`. The constants
//! that differ between architectures live in one table, [`ARCHS`], each with its source.
//!
//! Counter lookups accept both spellings a tool may write for a block counter summed over
//! its instances: `TCC_HIT_sum` (rocprof v1/v2, rocprof-compute) and `TCC_HIT` (rocprofv3,
//! which sums dimensions by default). `FETCH_SIZE` / `WRITE_SIZE` are kept in the unit the
//! tool defines them in (kilobytes of 1024) and converted here.

use super::{Derived, DeviceInfo, Dispatch};

/// How device-memory bytes are counted at the L2 → memory (EA) interface.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HbmCounters {
    /// `TCC_EA_RDREQ{,_32B}`, `TCC_EA_WRREQ{,_64B}` (gfx908, gfx90a).
    TccEa,
    /// `TCC_EA0_*` plus `TCC_BUBBLE` (128 B reads) (gfx940–942, gfx950).
    TccEa0Bubble,
    /// `GL2C_EA_RDREQ_{32,64,96,128}B` (RDNA gfx10/11).
    Gl2c,
}

/// Per-architecture constants of the AMD formulas.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ArchConstants {
    /// Family label (`gfx90a`, `gfx942`, `rdna3`).
    pub family: &'static str,
    /// LLVM targets it covers, as prefixes of the `gfx…` name.
    pub targets: &'static [&'static str],
    /// Default wave size of compute dispatches.
    pub wave_size: u32,
    pub hbm: HbmCounters,
    /// Bytes per vL1D (TCP) cache access for the L1 byte count.
    pub l1_bytes_per_access: f64,
    /// Bytes per TCP → TCC (L2) request.
    pub l2_bytes_per_request: f64,
    /// LDS banks per CU (4 bytes each per cycle), when known for the family.
    pub lds_banks_per_cu: Option<u32>,
    /// Max resident waves per CU.
    pub max_waves_per_cu: Option<u32>,
    /// Whether the family has MFMA units (and `SQ_INSTS_VALU_MFMA_MOPS_*` counters).
    pub has_mfma: bool,
    /// Where these numbers come from.
    pub source: &'static str,
}

/// The per-architecture table. Unknown targets fall back to inference from counter names
/// (`TCC_EA0_*` / `TCC_BUBBLE` ⇒ gfx942 family, `GL2C_*` ⇒ RDNA).
pub const ARCHS: &[ArchConstants] = &[
    ArchConstants {
        family: "gfx908",
        targets: &["gfx908"],
        wave_size: 64,
        hbm: HbmCounters::TccEa,
        l1_bytes_per_access: 64.0,
        l2_bytes_per_request: 64.0,
        lds_banks_per_cu: Some(32),
        max_waves_per_cu: Some(40),
        has_mfma: true,
        source: "rocprof-compute roofline_calc.py (x64 L1/L2 bytes, MI200-style EA formula, \
                 32 LDS banks); max waves 40 = 4 SIMD x 10 (docs/reference/occupancy.md, CDNA1)",
    },
    ArchConstants {
        family: "gfx90a",
        targets: &["gfx90a"],
        wave_size: 64,
        hbm: HbmCounters::TccEa,
        l1_bytes_per_access: 64.0,
        l2_bytes_per_request: 64.0,
        lds_banks_per_cu: Some(32),
        max_waves_per_cu: Some(32),
        has_mfma: true,
        source: "rocprof-compute roofline_calc.py (MI200: x64 L1/L2 bytes, TCC_EA 32/64 B \
                 formula, L2_BANKS = 32 for LDS); sysinfo.csv of the MI200 vcopy workload \
                 (lds_banks_per_cu 32, max_waves_per_cu 32)",
    },
    ArchConstants {
        family: "gfx942",
        targets: &["gfx940", "gfx941", "gfx942"],
        wave_size: 64,
        hbm: HbmCounters::TccEa0Bubble,
        l1_bytes_per_access: 128.0,
        l2_bytes_per_request: 64.0,
        lds_banks_per_cu: Some(32),
        max_waves_per_cu: Some(32),
        has_mfma: true,
        source: "rocprof-compute roofline_calc.py (MI300: 128 B TCC_BUBBLE reads, x64 L2 \
                 bytes), gfx942 speed-of-light YAML (vL1D x128 B per TCP access; the roofline \
                 code uses x64), sysinfo.csv of the MI300X vcopy workload (32 LDS banks, \
                 32 waves/CU)",
    },
    ArchConstants {
        family: "gfx950",
        targets: &["gfx950"],
        wave_size: 64,
        hbm: HbmCounters::TccEa0Bubble,
        l1_bytes_per_access: 128.0,
        l2_bytes_per_request: 64.0,
        lds_banks_per_cu: None,
        max_waves_per_cu: Some(32),
        has_mfma: true,
        source: "rocprof-compute gfx950 analysis YAMLs (same TCC_EA0/BUBBLE and TCP counters \
                 as gfx942); LDS grew to 160 KiB and its bank count is not stated in the \
                 sources read, so LDS bytes need lds_banks_per_cu from sysinfo",
    },
    ArchConstants {
        family: "rdna",
        targets: &["gfx10", "gfx11", "gfx12"],
        wave_size: 32,
        hbm: HbmCounters::Gl2c,
        l1_bytes_per_access: 128.0,
        l2_bytes_per_request: 128.0,
        lds_banks_per_cu: None,
        max_waves_per_cu: Some(32),
        has_mfma: false,
        source: "rocprofiler-sdk counter_defs.yaml gfx10/gfx11 FETCH_SIZE (GL2C_EA_RDREQ \
                 32/64/96/128 B); HIP compute on RDNA defaults to wave32; \
                 max waves 32 per CU = 2 SIMD x 16 (docs/reference/occupancy.md, RDNA3)",
    },
];

/// The constants for an LLVM target name (`gfx90a`, `gfx942:sramecc+:xnack-`).
pub fn arch_constants(arch: &str) -> Option<&'static ArchConstants> {
    let a = arch.trim().to_ascii_lowercase();
    let base = a.split(':').next().unwrap_or("");
    ARCHS.iter().find(|c| c.targets.iter().any(|t| base.starts_with(t)))
}

/// A dispatch with its counters in a hash map by name, built once per dispatch: the
/// formulas look up some ninety names (two spellings each), most of them absent, and the
/// ordered map's compares of names with long common prefixes were most of the time an
/// AMD dispatch took to derive. Everything else of the dispatch through `Deref`.
struct Counters<'a> {
    d: &'a Dispatch,
    by_name: foldhash::HashMap<&'a str, f64>,
}

impl<'a> Counters<'a> {
    fn new(d: &'a Dispatch) -> Self {
        Counters { d, by_name: d.counters.iter().map(|(k, v)| (&**k, *v)).collect() }
    }

    /// The value of counter `name` (as [`Dispatch::counter`]).
    fn counter(&self, name: &str) -> Option<f64> {
        self.by_name.get(name).copied()
    }
}

impl std::ops::Deref for Counters<'_> {
    type Target = Dispatch;
    fn deref(&self) -> &Dispatch {
        self.d
    }
}

/// A counter under its `_sum` spelling or its plain one.
fn ctr(d: &Counters<'_>, base: &str) -> Option<f64> {
    super::joined(&[base, "_sum"], |name| d.counter(name))
        .or_else(|| d.counter(base))
        .filter(|v| v.is_finite())
}

/// Several counters, all present, or `None`.
fn all<const N: usize>(d: &Counters<'_>, names: &[&str; N]) -> Option<[f64; N]> {
    let mut out = [0.0; N];
    for (o, n) in out.iter_mut().zip(names) {
        *o = ctr(d, n)?;
    }
    Some(out)
}

fn pct(num: f64, den: f64) -> Option<f64> {
    if den > 0.0 {
        Some(100.0 * num / den)
    } else {
        None
    }
}

/// Picks the constants: from the device's arch, else inferred from counter names.
fn constants_for(
    d: &Counters<'_>,
    device: &DeviceInfo,
    out: &mut Derived,
) -> Option<ArchConstants> {
    if let Some(c) = device.arch.as_deref().and_then(arch_constants) {
        return Some(*c);
    }
    let has = |p: &str| d.counters.keys().any(|k| k.starts_with(p));
    let inferred = if has("TCC_EA0_") || has("TCC_BUBBLE") {
        arch_constants("gfx942")
    } else if has("GL2C_") {
        arch_constants("gfx11")
    } else if has("TCC_EA_") {
        arch_constants("gfx90a")
    } else {
        None
    };
    if let Some(c) = inferred {
        out.formula(format!(
            "architecture constants of the {} family, inferred from the counter names \
             (device arch not given)",
            c.family
        ));
    }
    inferred.copied()
}

/// Derives bytes, FLOPs, hit rates and occupancy from an AMD dispatch's counters.
pub fn derive(d: &Dispatch, device: &DeviceInfo) -> Derived {
    let d = &Counters::new(d);
    let mut out = Derived { duration_ns: d.duration_ns, ..Derived::default() };
    let arch = constants_for(d, device, &mut out);
    dram_bytes(d, arch.as_ref(), &mut out);
    cache_bytes(d, device, arch.as_ref(), &mut out);
    flops(d, device, arch.as_ref(), &mut out);
    rates(d, &mut out);
    occupancy(d, device, arch.as_ref(), &mut out);
    out
}

fn dram_bytes(d: &Counters<'_>, arch: Option<&ArchConstants>, out: &mut Derived) {
    let hbm = arch.map(|a| a.hbm);
    // Reads.
    let ea0 = all(d, &["TCC_EA0_RDREQ", "TCC_EA0_RDREQ_32B", "TCC_BUBBLE"]);
    let ea = all(d, &["TCC_EA_RDREQ", "TCC_EA_RDREQ_32B"]);
    let gl2c = all(
        d,
        &["GL2C_EA_RDREQ_32B", "GL2C_EA_RDREQ_64B", "GL2C_EA_RDREQ_96B", "GL2C_EA_RDREQ_128B"],
    );
    if let (Some(v), true) = (&ea0, hbm != Some(HbmCounters::TccEa)) {
        let (rd, rd32, bubble) = (v[0], v[1], v[2]);
        out.dram_bytes_read = Some(128.0 * bubble + 32.0 * rd32 + 64.0 * (rd - bubble - rd32));
        out.formula(
            "HBM read bytes = 128*TCC_BUBBLE + 32*TCC_EA0_RDREQ_32B + \
             64*(TCC_EA0_RDREQ - TCC_BUBBLE - TCC_EA0_RDREQ_32B) [rocprof-compute \
             roofline_calc.py, MI300]",
        );
    } else if let (Some(v), true) = (&ea, hbm != Some(HbmCounters::TccEa0Bubble)) {
        let (rd, rd32) = (v[0], v[1]);
        out.dram_bytes_read = Some(32.0 * rd32 + 64.0 * (rd - rd32));
        out.formula(
            "HBM read bytes = 32*TCC_EA_RDREQ_32B + 64*(TCC_EA_RDREQ - TCC_EA_RDREQ_32B) \
             [rocprof-compute roofline_calc.py, MI200]",
        );
    } else if let Some(v) = &gl2c {
        out.dram_bytes_read = Some(32.0 * v[0] + 64.0 * v[1] + 96.0 * v[2] + 128.0 * v[3]);
        out.formula(
            "memory read bytes = 32*GL2C_EA_RDREQ_32B + 64*_64B + 96*_96B + 128*_128B \
             [rocprofiler-sdk counter_defs.yaml FETCH_SIZE, gfx10/11]",
        );
    } else if let Some(kb) = d.counter("FETCH_SIZE").filter(|v| v.is_finite()) {
        out.dram_bytes_read = Some(kb * 1024.0);
        out.formula(
            "memory read bytes = FETCH_SIZE * 1024 (FETCH_SIZE is in kilobytes) \
             [rocprofiler-sdk counter_defs.yaml]",
        );
    } else {
        let needs = match hbm {
            Some(HbmCounters::TccEa0Bubble) => {
                "TCC_EA0_RDREQ_sum, TCC_EA0_RDREQ_32B_sum, TCC_BUBBLE_sum (or FETCH_SIZE)"
            }
            Some(HbmCounters::Gl2c) => "GL2C_EA_RDREQ_{32B,64B,96B,128B} (or FETCH_SIZE)",
            _ => "TCC_EA_RDREQ_sum, TCC_EA_RDREQ_32B_sum (or FETCH_SIZE)",
        };
        out.miss("dram_bytes_read", needs);
    }

    // Writes.
    let w0 = all(d, &["TCC_EA0_WRREQ", "TCC_EA0_WRREQ_64B"]);
    let w = all(d, &["TCC_EA_WRREQ", "TCC_EA_WRREQ_64B"]);
    let pick = match hbm {
        Some(HbmCounters::TccEa) => w.map(|v| (v, "TCC_EA")),
        Some(HbmCounters::TccEa0Bubble) => w0.map(|v| (v, "TCC_EA0")),
        _ => w0.map(|v| (v, "TCC_EA0")).or_else(|| w.map(|v| (v, "TCC_EA"))),
    };
    if let Some((v, p)) = pick {
        let (wr, wr64) = (v[0], v[1]);
        out.dram_bytes_written = Some(32.0 * (wr - wr64) + 64.0 * wr64);
        out.formula(format!(
            "HBM write bytes = 32*({p}_WRREQ - {p}_WRREQ_64B) + 64*{p}_WRREQ_64B \
             [rocprof-compute roofline_calc.py]"
        ));
    } else if let Some(kb) = d.counter("WRITE_SIZE").filter(|v| v.is_finite()) {
        out.dram_bytes_written = Some(kb * 1024.0);
        out.formula(
            "memory write bytes = WRITE_SIZE * 1024 (WRITE_SIZE is in kilobytes) \
             [rocprofiler-sdk counter_defs.yaml]",
        );
    } else {
        let needs = match hbm {
            Some(HbmCounters::TccEa0Bubble) => {
                "TCC_EA0_WRREQ_sum, TCC_EA0_WRREQ_64B_sum (or WRITE_SIZE)"
            }
            Some(HbmCounters::Gl2c) => "WRITE_SIZE",
            _ => "TCC_EA_WRREQ_sum, TCC_EA_WRREQ_64B_sum (or WRITE_SIZE)",
        };
        out.miss("dram_bytes_written", needs);
    }
}

fn cache_bytes(
    d: &Counters<'_>,
    device: &DeviceInfo,
    arch: Option<&ArchConstants>,
    out: &mut Derived,
) {
    // L2: requests from the vL1D.
    let reqs = [
        "TCP_TCC_READ_REQ",
        "TCP_TCC_WRITE_REQ",
        "TCP_TCC_ATOMIC_WITH_RET_REQ",
        "TCP_TCC_ATOMIC_WITHOUT_RET_REQ",
    ];
    match (all(d, &reqs), arch) {
        (Some(v), Some(a)) => {
            let b = a.l2_bytes_per_request;
            out.l2_bytes = Some(b * v.iter().sum::<f64>());
            out.formula(format!(
                "L2 bytes = {b} * (TCP_TCC_READ_REQ + TCP_TCC_WRITE_REQ + \
                 TCP_TCC_ATOMIC_WITH_RET_REQ + TCP_TCC_ATOMIC_WITHOUT_RET_REQ) \
                 [rocprof-compute roofline_calc.py; {} constants]",
                a.family
            ));
        }
        (Some(_), None) => out.miss("l2_bytes", "device arch (bytes per TCP->TCC request)"),
        (None, _) => out.miss(
            "l2_bytes",
            "TCP_TCC_READ_REQ_sum, TCP_TCC_WRITE_REQ_sum, TCP_TCC_ATOMIC_WITH_RET_REQ_sum, \
             TCP_TCC_ATOMIC_WITHOUT_RET_REQ_sum",
        ),
    }

    // vL1D.
    match (ctr(d, "TCP_TOTAL_CACHE_ACCESSES"), arch) {
        (Some(acc), Some(a)) => {
            let b = a.l1_bytes_per_access;
            out.l1_bytes = Some(b * acc);
            out.formula(format!(
                "vL1D bytes = {b} * TCP_TOTAL_CACHE_ACCESSES [{} constants: {}]",
                a.family,
                if b == 64.0 {
                    "rocprof-compute roofline_calc.py"
                } else {
                    "rocprof-compute gfx942 speed-of-light YAML (roofline_calc.py uses 64)"
                }
            ));
        }
        (Some(_), None) => out.miss("l1_bytes", "device arch (bytes per TCP cache access)"),
        (None, _) => out.miss("l1_bytes", "TCP_TOTAL_CACHE_ACCESSES_sum"),
    }

    // LDS.
    let banks = device.lds_banks_per_cu.or(arch.and_then(|a| a.lds_banks_per_cu));
    match (all(d, &["SQ_LDS_IDX_ACTIVE", "SQ_LDS_BANK_CONFLICT"]), banks) {
        (Some(v), Some(banks)) => {
            out.lds_bytes = Some((v[0] - v[1]) * 4.0 * f64::from(banks));
            out.formula(format!(
                "LDS bytes = (SQ_LDS_IDX_ACTIVE - SQ_LDS_BANK_CONFLICT) * 4 * {banks} \
                 (lds_banks_per_cu) [rocprof-compute roofline_calc.py]"
            ));
        }
        (Some(_), None) => out.miss("lds_bytes", "lds_banks_per_cu (sysinfo.csv)"),
        (None, _) => out.miss("lds_bytes", "SQ_LDS_IDX_ACTIVE, SQ_LDS_BANK_CONFLICT"),
    }
}

fn wave_size(
    d: &Dispatch,
    device: &DeviceInfo,
    arch: Option<&ArchConstants>,
) -> Option<(u32, &'static str)> {
    d.wave_size
        .filter(|w| *w > 0)
        .map(|w| (w, "the dispatch's wave size"))
        .or(device.wave_size.filter(|w| *w > 0).map(|w| (w, "the device's wave size")))
        .or(arch.map(|a| (a.wave_size, "the architecture's default wave size")))
}

/// Counters whose non-zero value says the MFMA units ran: instruction counts and busy
/// cycles (rocprof-compute's `gfx9xx` compute-pipeline panels), which are not FLOPs.
const MFMA_ACTIVITY: [&str; 8] = [
    "SQ_INSTS_MFMA",
    "SQ_VALU_MFMA_BUSY_CYCLES",
    "SQ_INSTS_VALU_MFMA_F16",
    "SQ_INSTS_VALU_MFMA_BF16",
    "SQ_INSTS_VALU_MFMA_F32",
    "SQ_INSTS_VALU_MFMA_F64",
    "SQ_INSTS_VALU_MFMA_F8",
    "SQ_INSTS_VALU_MFMA_I8",
];

/// The VALU instruction counters of each precision: ADD, MUL, TRANS, FMA.
const VALU: [(&str, [&str; 4]); 3] = [
    (
        "fp16",
        [
            "SQ_INSTS_VALU_ADD_F16",
            "SQ_INSTS_VALU_MUL_F16",
            "SQ_INSTS_VALU_TRANS_F16",
            "SQ_INSTS_VALU_FMA_F16",
        ],
    ),
    (
        "fp32",
        [
            "SQ_INSTS_VALU_ADD_F32",
            "SQ_INSTS_VALU_MUL_F32",
            "SQ_INSTS_VALU_TRANS_F32",
            "SQ_INSTS_VALU_FMA_F32",
        ],
    ),
    (
        "fp64",
        [
            "SQ_INSTS_VALU_ADD_F64",
            "SQ_INSTS_VALU_MUL_F64",
            "SQ_INSTS_VALU_TRANS_F64",
            "SQ_INSTS_VALU_FMA_F64",
        ],
    ),
];

/// The MFMA operation counters (in units of 512 FLOPs) of each data type.
const MFMA_MOPS: [(&str, &str); 6] = [
    ("fp16", "SQ_INSTS_VALU_MFMA_MOPS_F16"),
    ("bf16", "SQ_INSTS_VALU_MFMA_MOPS_BF16"),
    ("fp32", "SQ_INSTS_VALU_MFMA_MOPS_F32"),
    ("fp64", "SQ_INSTS_VALU_MFMA_MOPS_F64"),
    ("fp8", "SQ_INSTS_VALU_MFMA_MOPS_F8"),
    ("int8", "SQ_INSTS_VALU_MFMA_MOPS_I8"),
];

fn flops(d: &Counters<'_>, device: &DeviceInfo, arch: Option<&ArchConstants>, out: &mut Derived) {
    let wave = wave_size(d, device, arch);
    let mut any_vector = false;
    // Work the counters show but no FLOP count covers: the total would undercount it.
    let mut uncounted: Vec<String> = Vec::new();
    for (prec, names) in VALU {
        let each = names.map(|n| ctr(d, n));
        let vals = match each {
            [Some(add), Some(mul), Some(trans), Some(fma)] => Some([add, mul, trans, fma]),
            _ => None,
        };
        let present = each.iter().any(Option::is_some);
        let work = each.iter().flatten().any(|v| *v > 0.0);
        match (vals, wave) {
            (Some(v), Some((w, _))) => {
                any_vector = true;
                let insts = v[0] + v[1] + v[2] + 2.0 * v[3];
                out.flops.vector.insert(prec.to_string(), f64::from(w) * insts);
            }
            (Some(_), None) => {
                out.miss(format!("flops.vector.{prec}"), "wave size (dispatch or device)");
                if work {
                    uncounted.push(format!(
                        "{prec} VALU instructions were counted but the wave size is unknown"
                    ));
                }
            }
            (None, _) if present => {
                out.miss(format!("flops.vector.{prec}"), names.join(", "));
                if work {
                    uncounted.push(format!(
                        "{prec} VALU instructions were counted but not all of {}",
                        names.join(", ")
                    ));
                }
            }
            (None, _) => {}
        }
    }
    if let (true, Some((w, from))) = (any_vector, wave) {
        out.formula(format!(
            "VALU FLOPs per precision = {w} * (ADD + MUL + TRANS + 2*FMA) of \
             SQ_INSTS_VALU_*_{{F16,F32,F64}} ({w} = {from}) [rocprof-compute roofline_calc.py]"
        ));
    } else if !any_vector && out.missing.iter().all(|m| !m.quantity.starts_with("flops.vector")) {
        out.miss("flops.vector", "SQ_INSTS_VALU_{ADD,MUL,TRANS,FMA}_{F16,F32,F64}");
    }

    let mut any_matrix = false;
    for (prec, name) in MFMA_MOPS {
        if let Some(mops) = ctr(d, name) {
            any_matrix = true;
            out.flops.matrix.insert(prec.to_string(), 512.0 * mops);
        }
    }
    if any_matrix {
        out.formula(
            "MFMA FLOPs per type = 512 * SQ_INSTS_VALU_MFMA_MOPS_<type> \
             [rocprof-compute roofline_calc.py]",
        );
    } else if arch.is_none_or(|a| a.has_mfma) {
        out.miss("flops.matrix", "SQ_INSTS_VALU_MFMA_MOPS_{F16,BF16,F32,F64,F8,I8}");
        if let Some((name, v)) =
            MFMA_ACTIVITY.iter().find_map(|n| ctr(d, n).filter(|v| *v > 0.0).map(|v| (n, v)))
        {
            uncounted.push(format!(
                "the MFMA units ran ({name} = {}) but SQ_INSTS_VALU_MFMA_MOPS_<type> was not \
                 collected",
                crate::units::as_given(v)
            ));
        }
    }
    // "Missing, never undercounted": a partial sum of the FLOPs is withdrawn.
    if !uncounted.is_empty() && !out.flops.is_empty() {
        out.flops = super::FlopCounts::default();
        out.miss(
            super::derive::FLOPS_INCOMPLETE,
            format!("a complete count: {}", uncounted.join("; ")),
        );
    }
}

fn rates(d: &Counters<'_>, out: &mut Derived) {
    // L2 hit rate.
    let l2 = all(d, &["TCC_HIT", "TCC_MISS"])
        .map(|v| (v, "TCC"))
        .or_else(|| all(d, &["GL2C_HIT", "GL2C_MISS"]).map(|v| (v, "GL2C")));
    match l2 {
        Some((v, p)) => {
            out.l2_hit_rate_pct = pct(v[0], v[0] + v[1]);
            out.formula(format!(
                "L2 hit % = 100 * {p}_HIT / ({p}_HIT + {p}_MISS) [rocprof-compute gfx9xx \
                 analysis YAML; rocprofiler-sdk counter_defs.yaml L2CacheHit]"
            ));
        }
        None => out.miss("l2_hit_rate_pct", "TCC_HIT_sum, TCC_MISS_sum"),
    }

    // vL1D hit rate.
    let reqs = [
        "TCP_TOTAL_CACHE_ACCESSES",
        "TCP_TCC_READ_REQ",
        "TCP_TCC_WRITE_REQ",
        "TCP_TCC_ATOMIC_WITH_RET_REQ",
        "TCP_TCC_ATOMIC_WITHOUT_RET_REQ",
    ];
    match all(d, &reqs) {
        Some(v) => {
            let to_l2 = v[1] + v[2] + v[3] + v[4];
            out.l1_hit_rate_pct = pct(v[0] - to_l2, v[0]);
            out.formula(
                "vL1D hit % = 100 - 100 * (TCP_TCC_READ_REQ + TCP_TCC_WRITE_REQ + \
                 TCP_TCC_ATOMIC_WITH_RET_REQ + TCP_TCC_ATOMIC_WITHOUT_RET_REQ) / \
                 TCP_TOTAL_CACHE_ACCESSES [rocprof-compute gfx9xx analysis YAML, vL1D panel]",
            );
        }
        None => out.miss("l1_hit_rate_pct", format!("{}_sum", reqs.join("_sum, "))),
    }

    // LDS bank conflicts.
    match all(d, &["SQ_LDS_BANK_CONFLICT", "SQ_LDS_IDX_ACTIVE"]) {
        Some(v) => {
            out.lds_bank_conflict_pct = pct(v[0], v[1]);
            out.formula(
                "LDS bank conflict % = 100 * SQ_LDS_BANK_CONFLICT / SQ_LDS_IDX_ACTIVE \
                 (cycles lost to conflicts over LDS-active cycles; undefined when the kernel \
                 uses no LDS) [rocprof-compute LDS panel, bank conflict rate]",
            );
        }
        None => out.miss("lds_bank_conflict_pct", "SQ_LDS_BANK_CONFLICT, SQ_LDS_IDX_ACTIVE"),
    }
}

fn occupancy(
    d: &Counters<'_>,
    device: &DeviceInfo,
    arch: Option<&ArchConstants>,
    out: &mut Derived,
) {
    match d.counter("SQ_WAVES") {
        Some(w) => {
            out.waves_launched = Some(w);
            out.formula("waves launched = SQ_WAVES");
        }
        None => out.miss("waves_launched", "SQ_WAVES"),
    }

    // Achieved occupancy: mean resident waves over the GPU-busy cycles of one XCD,
    // against the GPU's wave slots.
    let accum = d.counter("SQ_ACCUM_PREV_HIRES").filter(|_| d.counter("SQ_LEVEL_WAVES").is_some());
    let gui = d.counter("GRBM_GUI_ACTIVE@SQ_LEVEL_WAVES").or_else(|| d.counter("GRBM_GUI_ACTIVE"));
    let xcd =
        device.num_xcd.or(arch.filter(|a| !matches!(a.hbm, HbmCounters::TccEa0Bubble)).map(|_| 1));
    let slots = device
        .max_waves_per_cu
        .or(arch.and_then(|a| a.max_waves_per_cu))
        .zip(device.compute_units)
        .map(|(w, cu)| f64::from(w) * f64::from(cu));
    match (accum, gui, xcd, slots) {
        (Some(acc), Some(gui), Some(x), Some(slots)) if gui > 0.0 && slots > 0.0 && x > 0 => {
            let per_xcd = gui / f64::from(x);
            out.achieved_occupancy_pct = Some(100.0 * (acc / per_xcd) / slots);
            out.formula(format!(
                "achieved occupancy % = 100 * (SQ_ACCUM_PREV_HIRES / (GRBM_GUI_ACTIVE / {x} \
                 XCD)) / (max_waves_per_cu * CUs = {slots}), SQ_ACCUM_PREV_HIRES accumulating \
                 SQ_LEVEL_WAVES [rocprof-compute gfx9xx speed-of-light YAML, Wavefront \
                 Occupancy]"
            ));
        }
        (Some(_), Some(_), Some(_), Some(_)) => {}
        (None, ..) => out.miss(
            "achieved_occupancy_pct",
            "SQ_ACCUM_PREV_HIRES collected with SQ_LEVEL_WAVES, GRBM_GUI_ACTIVE",
        ),
        (_, None, ..) => out.miss("achieved_occupancy_pct", "GRBM_GUI_ACTIVE"),
        (_, _, None, _) => out.miss("achieved_occupancy_pct", "num_xcd (sysinfo.csv)"),
        (.., None) => {
            out.miss("achieved_occupancy_pct", "compute_units and max_waves_per_cu of the device");
        }
    }

    match (d.blocks(), device.compute_units) {
        (Some(b), Some(cu)) if cu > 0 => {
            out.grid_waves = Some(b as f64 / f64::from(cu));
            out.formula(
                "grid waves = workgroups / CUs (one workgroup per CU per wave; several \
                 resident workgroups per CU shorten the tail)",
            );
        }
        (None, _) => out.miss("grid_waves", "grid and workgroup size"),
        _ => out.miss("grid_waves", "compute_units of the device"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn disp(pairs: &[(&str, f64)]) -> Dispatch {
        Dispatch {
            counters: pairs.iter().map(|(k, v)| ((*k).into(), *v)).collect::<BTreeMap<_, _>>(),
            duration_ns: Some(1000.0),
            ..Dispatch::default()
        }
    }

    /// A counter is read under its `_sum` spelling when the file has it, else its plain
    /// one; a non-finite value is absent; a name too long for the stack is still found.
    #[test]
    fn counters_by_either_spelling() {
        let long = "X".repeat(200);
        let long_sum = format!("{long}_sum");
        let d = disp(&[
            ("TCC_HIT_sum", 5.0),
            ("TCC_HIT", 7.0),
            ("TCC_MISS", 3.0),
            ("TCC_EA_RDREQ_sum", f64::INFINITY),
            (&long_sum, 11.0),
        ]);
        let c = Counters::new(&d);
        assert_eq!(ctr(&c, "TCC_HIT"), Some(5.0));
        assert_eq!(ctr(&c, "TCC_MISS"), Some(3.0));
        assert_eq!(ctr(&c, "TCC_EA_RDREQ"), None);
        assert_eq!(ctr(&c, "TCC_EA_WRREQ"), None);
        assert_eq!(ctr(&c, &long), Some(11.0));
        assert_eq!(all(&c, &["TCC_HIT", "TCC_MISS"]), Some([5.0, 3.0]));
        assert_eq!(all(&c, &["TCC_HIT", "TCC_EA_RDREQ"]), None);
        assert_eq!(c.duration_ns, Some(1000.0), "the dispatch itself through Deref");
    }

    fn dev(arch: &str) -> DeviceInfo {
        DeviceInfo { arch: Some(arch.to_string()), ..DeviceInfo::default() }
    }

    fn missing(d: &Derived, q: &str) -> bool {
        d.missing.iter().any(|m| m.quantity == q)
    }

    #[test]
    fn arch_table_lookup() {
        assert_eq!(arch_constants("gfx90a").map(|a| a.family), Some("gfx90a"));
        assert_eq!(arch_constants("gfx942:sramecc+:xnack-").map(|a| a.family), Some("gfx942"));
        assert_eq!(arch_constants("gfx940").map(|a| a.family), Some("gfx942"));
        assert_eq!(arch_constants("gfx1151").map(|a| a.family), Some("rdna"));
        assert_eq!(arch_constants("gfx1030").map(|a| a.wave_size), Some(32));
        assert_eq!(arch_constants("gfx908").map(|a| a.max_waves_per_cu), Some(Some(40)));
        assert!(arch_constants("sm_80").is_none());
        for a in ARCHS {
            assert!(!a.source.is_empty());
        }
    }

    #[test]
    fn mi200_hbm_bytes() {
        let d = disp(&[
            ("TCC_EA_RDREQ_sum", 100.0),
            ("TCC_EA_RDREQ_32B_sum", 10.0),
            ("TCC_EA_WRREQ_sum", 50.0),
            ("TCC_EA_WRREQ_64B_sum", 40.0),
        ]);
        let r = derive(&d, &dev("gfx90a"));
        assert_eq!(r.dram_bytes_read, Some(32.0 * 10.0 + 64.0 * 90.0));
        assert_eq!(r.dram_bytes_written, Some(32.0 * 10.0 + 64.0 * 40.0));
        assert_eq!(r.duration_ns, Some(1000.0));
    }

    #[test]
    fn mi300_hbm_bytes_with_bubble() {
        let d = disp(&[
            ("TCC_EA0_RDREQ_sum", 100.0),
            ("TCC_EA0_RDREQ_32B_sum", 5.0),
            ("TCC_BUBBLE_sum", 20.0),
            ("TCC_EA0_WRREQ_sum", 30.0),
            ("TCC_EA0_WRREQ_64B_sum", 30.0),
        ]);
        let r = derive(&d, &dev("gfx942"));
        assert_eq!(r.dram_bytes_read, Some(128.0 * 20.0 + 32.0 * 5.0 + 64.0 * 75.0));
        assert_eq!(r.dram_bytes_written, Some(64.0 * 30.0));
        // Plain (rocprofv3) spelling, arch inferred from the names.
        let d = disp(&[("TCC_EA0_RDREQ", 10.0), ("TCC_EA0_RDREQ_32B", 0.0), ("TCC_BUBBLE", 10.0)]);
        let r = derive(&d, &DeviceInfo::default());
        assert_eq!(r.dram_bytes_read, Some(1280.0));
        assert!(r.formulas.iter().any(|f| f.contains("inferred")));
        assert!(missing(&r, "dram_bytes_written"));
    }

    #[test]
    fn fetch_size_is_kilobytes() {
        let d = disp(&[("FETCH_SIZE", 10.625), ("WRITE_SIZE", 2.0)]);
        let r = derive(&d, &dev("gfx1151"));
        assert_eq!(r.dram_bytes_read, Some(10.625 * 1024.0));
        assert_eq!(r.dram_bytes_written, Some(2048.0));
        let d = disp(&[("FETCH_SIZE", 1.0)]);
        let r = derive(&d, &DeviceInfo::default());
        assert_eq!(r.dram_bytes_read, Some(1024.0));
        assert_eq!(r.dram_bytes_written, None);
        assert!(missing(&r, "dram_bytes_written"));
    }

    #[test]
    fn nothing_present_means_missing_not_zero() {
        let r = derive(&disp(&[]), &DeviceInfo::default());
        assert_eq!(r.dram_bytes_read, None);
        assert_eq!(r.l2_bytes, None);
        assert_eq!(r.l2_hit_rate_pct, None);
        assert!(r.flops.is_empty());
        for q in [
            "dram_bytes_read",
            "dram_bytes_written",
            "l2_bytes",
            "l1_bytes",
            "lds_bytes",
            "flops.vector",
            "flops.matrix",
            "l2_hit_rate_pct",
            "l1_hit_rate_pct",
            "lds_bank_conflict_pct",
            "achieved_occupancy_pct",
            "waves_launched",
            "grid_waves",
        ] {
            assert!(missing(&r, q), "{q} not listed as missing");
        }
    }

    #[test]
    fn cache_bytes_and_rates() {
        let d = disp(&[
            ("TCP_TOTAL_CACHE_ACCESSES_sum", 1000.0),
            ("TCP_TCC_READ_REQ_sum", 200.0),
            ("TCP_TCC_WRITE_REQ_sum", 100.0),
            ("TCP_TCC_ATOMIC_WITH_RET_REQ_sum", 0.0),
            ("TCP_TCC_ATOMIC_WITHOUT_RET_REQ_sum", 0.0),
            ("TCC_HIT_sum", 30.0),
            ("TCC_MISS_sum", 70.0),
            ("SQ_LDS_IDX_ACTIVE", 500.0),
            ("SQ_LDS_BANK_CONFLICT", 100.0),
        ]);
        let r = derive(&d, &dev("gfx90a"));
        assert_eq!(r.l2_bytes, Some(64.0 * 300.0));
        assert_eq!(r.l1_bytes, Some(64.0 * 1000.0));
        assert_eq!(r.lds_bytes, Some(400.0 * 4.0 * 32.0));
        assert_eq!(r.l2_hit_rate_pct, Some(30.0));
        assert_eq!(r.l1_hit_rate_pct, Some(70.0));
        assert_eq!(r.lds_bank_conflict_pct, Some(20.0));
        let r = derive(&d, &dev("gfx942"));
        assert_eq!(r.l1_bytes, Some(128.0 * 1000.0));
        // sysinfo's bank count wins over the table.
        let mut dv = dev("gfx950");
        let r = derive(&d, &dv);
        assert_eq!(r.lds_bytes, None);
        assert!(missing(&r, "lds_bytes"));
        dv.lds_banks_per_cu = Some(64);
        assert_eq!(derive(&d, &dv).lds_bytes, Some(400.0 * 4.0 * 64.0));
    }

    #[test]
    fn zero_denominators_give_none() {
        let d = disp(&[
            ("TCC_HIT_sum", 0.0),
            ("TCC_MISS_sum", 0.0),
            ("SQ_LDS_IDX_ACTIVE", 0.0),
            ("SQ_LDS_BANK_CONFLICT", 0.0),
        ]);
        let r = derive(&d, &dev("gfx90a"));
        assert_eq!(r.l2_hit_rate_pct, None);
        assert_eq!(r.lds_bank_conflict_pct, None);
        assert!(!missing(&r, "l2_hit_rate_pct"));
        assert_eq!(r.lds_bytes, Some(0.0));
    }

    #[test]
    fn valu_and_mfma_flops() {
        let d = disp(&[
            ("SQ_INSTS_VALU_ADD_F32", 1.0),
            ("SQ_INSTS_VALU_MUL_F32", 2.0),
            ("SQ_INSTS_VALU_TRANS_F32", 3.0),
            ("SQ_INSTS_VALU_FMA_F32", 4.0),
            ("SQ_INSTS_VALU_MFMA_MOPS_BF16", 10.0),
            ("SQ_INSTS_VALU_MFMA_MOPS_F64", 1.0),
        ]);
        let r = derive(&d, &dev("gfx90a"));
        assert_eq!(r.flops.vector.get("fp32"), Some(&(64.0 * (1.0 + 2.0 + 3.0 + 8.0))));
        assert!(!r.flops.vector.contains_key("fp16"));
        assert_eq!(r.flops.matrix.get("bf16"), Some(&5120.0));
        assert_eq!(r.flops.matrix.get("fp64"), Some(&512.0));
        // RDNA: wave32 by default, no MFMA expected.
        let r = derive(&d, &dev("gfx1100"));
        assert_eq!(r.flops.vector.get("fp32"), Some(&(32.0 * 14.0)));
        // The dispatch's own wave size wins.
        let mut d64 = d.clone();
        d64.wave_size = Some(64);
        let r = derive(&d64, &dev("gfx1100"));
        assert_eq!(r.flops.vector.get("fp32"), Some(&(64.0 * 14.0)));
        // A partial precision is missing, not zero.
        let d = disp(&[("SQ_INSTS_VALU_ADD_F16", 1.0)]);
        let r = derive(&d, &dev("gfx90a"));
        assert!(r.flops.vector.is_empty());
        assert!(missing(&r, "flops.vector.fp16"));
        let r = derive(&disp(&[]), &dev("gfx1100"));
        assert!(!missing(&r, "flops.matrix"));
    }

    /// MFMA counted but the VALU counts not convertible (no wave size), or VALU counted
    /// while the MFMA units ran without their MOPS counters: the total is missing, not
    /// the partial sum. Oracle for the complete case: 64 · (1 + 2 + 3 + 2·4) = 896 VALU
    /// FLOPs + 512 · 10 = 5120 MFMA FLOPs = 6016.
    #[test]
    fn partial_valu_or_mfma_makes_the_total_missing() {
        let c = [
            ("SQ_INSTS_VALU_ADD_F32", 1.0),
            ("SQ_INSTS_VALU_MUL_F32", 2.0),
            ("SQ_INSTS_VALU_TRANS_F32", 3.0),
            ("SQ_INSTS_VALU_FMA_F32", 4.0),
            ("SQ_INSTS_VALU_MFMA_MOPS_BF16", 10.0),
        ];
        assert_eq!(derive(&disp(&c), &dev("gfx90a")).flops_total(), Some(6016.0));
        // No architecture, so no wave size: the VALU counts cannot be converted.
        let r = derive(&disp(&c), &DeviceInfo::default());
        assert!(r.flops.is_empty(), "{:?}", r.flops);
        assert!(r.flops_incomplete().unwrap().contains("wave size"), "{:?}", r.missing);
        // The reverse: VALU counted, MFMA instructions executed, no MOPS counter.
        let mut c2 = c[..4].to_vec();
        c2.push(("SQ_INSTS_VALU_MFMA_F16", 8.0));
        let r = derive(&disp(&c2), &dev("gfx90a"));
        assert_eq!(r.flops_total(), None);
        assert!(
            r.flops_incomplete().unwrap().contains("SQ_INSTS_VALU_MFMA_F16 = 8"),
            "{:?}",
            r.missing
        );
        // No MFMA work: the VALU count is the whole count.
        c2[4].1 = 0.0;
        assert_eq!(derive(&disp(&c2), &dev("gfx90a")).flops_total(), Some(896.0));
    }

    #[test]
    fn occupancy_and_grid_waves() {
        let mut d = disp(&[
            ("SQ_WAVES", 16384.0),
            ("SQ_LEVEL_WAVES", 0.0),
            ("SQ_ACCUM_PREV_HIRES", 1600.0 * 1000.0),
            ("GRBM_GUI_ACTIVE", 1000.0),
        ]);
        d.grid = Some([4096, 1, 1]);
        let mut dv = dev("gfx90a");
        dv.compute_units = Some(100);
        dv.max_waves_per_cu = Some(32);
        let r = derive(&d, &dv);
        assert_eq!(r.waves_launched, Some(16384.0));
        assert_eq!(r.achieved_occupancy_pct, Some(100.0 * 1600.0 / 3200.0));
        assert_eq!(r.grid_waves, Some(40.96));
        // MI300: per-XCD busy cycles; num_xcd required.
        let mut dv3 = dev("gfx942");
        dv3.compute_units = Some(100);
        let r = derive(&d, &dv3);
        assert_eq!(r.achieved_occupancy_pct, None);
        assert!(missing(&r, "achieved_occupancy_pct"));
        dv3.num_xcd = Some(8);
        let r = derive(&d, &dv3);
        assert_eq!(r.achieved_occupancy_pct, Some(100.0 * (1_600_000.0 / 125.0) / 3200.0));
        // An accumulator without SQ_LEVEL_WAVES may be any level counter's: not used.
        d.counters.remove("SQ_LEVEL_WAVES");
        let r = derive(&d, &dv);
        assert_eq!(r.achieved_occupancy_pct, None);
    }
}
