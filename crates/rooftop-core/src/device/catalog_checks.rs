//! Checks of the catalog's figures against datasheet arithmetic, written out here
//! (never taken from rooftop's output): peak = units x clock x FLOP per clock per unit,
//! with the per-unit rates of the vendors' architecture documents, and the printed
//! figures of the datasheets the entries cite.

use super::{Catalog, DeviceSpec, Vendor};
use crate::units::{Confidence, ExecUnit, Precision};

fn dev<'a>(c: &'a Catalog, id: &str) -> &'a DeviceSpec {
    match c.get(id) {
        Some(d) => d,
        None => panic!("no device `{id}` in the catalog"),
    }
}

fn peak(d: &DeviceSpec, p: Precision, u: ExecUnit) -> f64 {
    d.peak(p, u).map_or(f64::NAN, |r| r.tflops)
}

/// `units x MHz x FLOP/clk` in TFLOP/s.
fn arith(units: f64, mhz: f64, flop_per_clk: f64) -> f64 {
    units * mhz * 1e6 * flop_per_clk / 1e12
}

fn close(got: f64, want: f64, rel: f64) -> bool {
    (got - want).abs() <= rel * want.abs()
}

#[track_caller]
fn check(id: &str, what: &str, got: f64, want: f64, rel: f64) {
    assert!(close(got, want, rel), "{id} {what}: catalog {got}, datasheet arithmetic {want}");
}

#[test]
fn spot_checks_against_datasheet_arithmetic() {
    let c = Catalog::builtin();
    let (v, m) = (ExecUnit::Vector, ExecUnit::Matrix);
    // A100 40 GB: 108 SM x 1.41 GHz x 2048 FP16 tensor FLOP/clk = 311.9 (datasheet 312);
    // HBM2 at 1555 GB/s (datasheet), not the 80 GB part's 2039.
    for id in ["a100-sxm-40gb", "a100-pcie-40gb"] {
        let d = dev(c, id);
        check(id, "fp16 matrix", peak(d, Precision::Fp16, m), arith(108.0, 1410.0, 2048.0), 0.005);
        assert_eq!(d.peak_bw_gbs, 1555.0, "{id}");
        assert_eq!(d.mem_gb, Some(40.0), "{id}");
    }
    // A10: 72 SM x 1.695 GHz x 256 FP32 = 31.2 TF, x 1024 FP16 tensor = 125 TF.
    let a10 = dev(c, "a10");
    check("a10", "fp32", peak(a10, Precision::Fp32, v), 31.2, 0.005);
    check("a10", "fp16 matrix", peak(a10, Precision::Fp16, m), 125.0, 0.005);
    // A40: 84 SM x 1.74 GHz x 2048 INT8 = 299.3 TOPS (datasheet).
    check("a40", "int8", peak(dev(c, "a40"), Precision::Int8, m), 299.3, 0.005);
    // L40: 142 SM x 2.49 GHz x 256 = 90.5 TF FP32 (datasheet 90.5).
    check(
        "l40",
        "fp32",
        peak(dev(c, "l40"), Precision::Fp32, v),
        arith(142.0, 2490.0, 256.0),
        0.005,
    );
    // H100 NVL: 1671 TF FP16 with sparsity -> 835.5 dense.
    check(
        "h100-nvl",
        "fp16 matrix",
        peak(dev(c, "h100-nvl"), Precision::Fp16, m),
        1671.0 / 2.0,
        0.001,
    );
    // GH200: 96 GB HBM3 at 4 TB/s, or 144 GB HBM3e at 4.9 TB/s.
    assert_eq!(dev(c, "gh200").peak_bw_gbs, 4000.0);
    assert_eq!(dev(c, "gh200-144gb").peak_bw_gbs, 4900.0);
    // RTX 6000 Ada: 1457 TF FP8 with sparsity = 142 SM x 2.505 GHz x 4096 (sparse FP8).
    check(
        "rtx-6000-ada",
        "fp8",
        peak(dev(c, "rtx-6000-ada"), Precision::Fp8, m),
        1457.0 / 2.0,
        0.005,
    );
    // RTX 2080 Ti (Turing whitepaper, reference clocks): 107.6 TF FP16 tensor with FP16
    // accumulate = 68 SM x 1.545 GHz x 1024; GeForce FP32 accumulate is half.
    let ti = dev(c, "rtx-2080-ti");
    let fp16acc = ti.variant_peaks.iter().find(|(n, _)| n == "fp16_matrix_fp16acc").map(|x| x.1);
    check("rtx-2080-ti", "fp16 acc", fp16acc.unwrap_or(f64::NAN), 107.6, 0.005);
    check("rtx-2080-ti", "fp32 acc", peak(ti, Precision::Fp16, m), 107.6 / 2.0, 0.005);
    // RTX 5090: 3352 "AI TOPS" = FP4 with sparsity -> 1676 dense = 170 SM x 2.407 GHz x 4096.
    check("rtx-5090", "fp4", peak(dev(c, "rtx-5090"), Precision::Fp4, m), 3352.0 / 2.0, 0.005);
    check("rtx-5090", "fp32", peak(dev(c, "rtx-5090"), Precision::Fp32, v), 104.8, 0.005);
    // MI350X: 256 CU x 2.2 GHz x 4096 FP16 FLOP/clk/CU = 2306.9 (AMD: 2.3 PF); MI355X at
    // 2.4 GHz is 2516.6: the two are different devices.
    let mi350 = peak(dev(c, "mi350x"), Precision::Fp16, m);
    check("mi350x", "fp16 matrix", mi350, arith(256.0, 2200.0, 4096.0), 0.001);
    check(
        "mi355x / mi350x",
        "clock ratio",
        peak(dev(c, "mi355x"), Precision::Fp16, m) / mi350,
        2400.0 / 2200.0,
        0.002,
    );
    // MI250: 208 CU x 1.7 GHz x 1024 FP16 MFMA = 362.1 TF (AMD).
    check("mi250", "fp16 matrix", peak(dev(c, "mi250"), Precision::Fp16, m), 362.1, 0.001);
    // MI50: 60 CU x 1.725 GHz x 128 = 13.3 TF FP32 (datasheet).
    check(
        "mi50",
        "fp32",
        peak(dev(c, "mi50"), Precision::Fp32, v),
        arith(60.0, 1725.0, 128.0),
        0.005,
    );
    // RX 9070 XT: 64 CU x 2.97 GHz x 256 (dual issue) = 48.7 TF (AMD).
    check("rx-9070-xt", "fp32", peak(dev(c, "rx-9070-xt"), Precision::Fp32, v), 48.7, 0.005);
    // Max 1100: 56 Xe-cores x 1.55 GHz x 256 FP64 = 22.2 TF.
    check(
        "intel-max-1100",
        "fp64",
        peak(dev(c, "intel-max-1100"), Precision::Fp64, v),
        22.2,
        0.005,
    );
    // M3 Ultra: two M3 Max dies.
    check(
        "m3-ultra",
        "fp32",
        peak(dev(c, "m3-ultra"), Precision::Fp32, v),
        2.0 * peak(dev(c, "m3-max"), Precision::Fp32, v),
        0.001,
    );
}

/// For every high-confidence NVIDIA entry the FP32 peak is the SM count x boost clock x
/// the architecture's FP32 FLOP/clk per SM (128 on Volta, Turing and GA100, 256 since
/// GA10x / Hopper), to 3%: the datasheets print rounded values of this product.
#[test]
fn nvidia_fp32_peaks_are_sms_times_clock() {
    let c = Catalog::builtin();
    let mut checked = 0;
    for d in c.devices.iter().filter(|d| d.vendor == Vendor::Nvidia) {
        let Some(p) = d.peak(Precision::Fp32, ExecUnit::Vector) else { continue };
        if p.meta.confidence != Confidence::High || d.meta.confidence != Confidence::High {
            continue;
        }
        let Some(mhz) = d.boost_clock_mhz else { continue };
        let per_sm = match d.compute_capability.as_deref() {
            Some("7.0" | "7.5" | "8.0") => 128.0,
            _ => 256.0,
        };
        check(
            &d.id,
            "fp32 = SMs x clock x FLOP/clk",
            p.tflops,
            arith(f64::from(d.num_cu), mhz, per_sm),
            0.03,
        );
        checked += 1;
    }
    assert!(checked >= 30, "only {checked} devices checked");
}

#[test]
fn the_catalog_covers_the_gpus_people_profile() {
    let c = Catalog::builtin();
    assert!(c.devices.len() >= 90, "{}", c.devices.len());
    for d in &c.devices {
        // Every device says where its figures come from; new entries cite a URL.
        assert!(!d.meta.source.is_empty(), "{}", d.id);
    }
    // URLs are written without the scheme (`www.nvidia.com/...`): the HTML reports
    // quote sources and must load nothing from the network.
    let with_url = c
        .devices
        .iter()
        .filter(|d| [".com/", ".cn/", ".net/"].iter().any(|x| d.meta.source.contains(x)))
        .count();
    assert!(with_url >= 60, "{with_url}");
    assert!(c.devices.iter().all(|d| !d.meta.source.contains("://")));
}

/// The catalog's data files as written, for checks of what the parsed specs no longer
/// show (the `[device.sources]` tables are spread over the figures when parsed).
const DATA_FILES: [(&str, &str); 7] = [
    ("devices.toml", include_str!("../../data/devices.toml")),
    ("nvidia-datacenter.toml", include_str!("../../data/catalog/nvidia-datacenter.toml")),
    (
        "nvidia-hopper-blackwell.toml",
        include_str!("../../data/catalog/nvidia-hopper-blackwell.toml"),
    ),
    ("nvidia-workstation.toml", include_str!("../../data/catalog/nvidia-workstation.toml")),
    ("nvidia-geforce.toml", include_str!("../../data/catalog/nvidia-geforce.toml")),
    ("amd.toml", include_str!("../../data/catalog/amd.toml")),
    ("intel-apple.toml", include_str!("../../data/catalog/intel-apple.toml")),
];

#[test]
fn every_section_source_of_the_catalog_names_a_document() {
    // A section source names the document its figures come from: a bracketed or
    // parenthesised reference, or an address (`host.tld/path`), never bare words.
    let names_a_document = |s: &str| {
        s.contains('[')
            || s.contains('(')
            || s.split_whitespace().any(|w| w.contains('.') && w.contains('/'))
    };
    let mut seen = 0;
    for (file, text) in DATA_FILES {
        let doc: toml::Value = match toml::from_str(text) {
            Ok(v) => v,
            Err(e) => panic!("{file}: {e}"),
        };
        let devices =
            doc.get("device").and_then(toml::Value::as_array).cloned().unwrap_or_default();
        for d in devices {
            let id = d.get("id").and_then(toml::Value::as_str).unwrap_or("?").to_string();
            let Some(sources) = d.get("sources").and_then(toml::Value::as_table) else { continue };
            for (section, v) in sources {
                let s = v.as_str().unwrap_or_default();
                assert!(
                    names_a_document(s),
                    "{file}: {id}: sources.{section} names nothing: {s:?}"
                );
                seen += 1;
            }
        }
    }
    assert!(seen >= 90, "only {seen} section sources in the catalog");
}

#[test]
fn section_sources_naming_nothing_are_refused() {
    let base = "[[device]]\nid = \"x\"\nname = \"X\"\nvendor = \"other\"\n[device.compute]\nnum_cu = 2\nwarp_size = 32\n[device.memory]\nbandwidth_gbs = 100\n[device.peak_tflops]\nfp32_vector = 1.5\n";
    let err = |extra: &str| match super::parse_device_file(&format!("{base}{extra}"), "x.toml") {
        Ok(_) => panic!("accepted: {extra}"),
        Err(e) => e.to_string(),
    };
    let e = err("[device.sources]\nmemory = \"  \"\n");
    assert!(e.contains("sources.memory is empty"), "{e}");
    // No limit is set, so a limits source would be the source of nothing.
    let e = err("[device.sources]\nlimits = \"CUDA C++ Programming Guide\"\n");
    assert!(e.contains("sources.limits is the source of no figure"), "{e}");
    let own = base.replace("fp32_vector = 1.5", "fp32_vector = { value = 1.5, source = \"own\" }");
    match super::parse_device_file(
        &format!("{own}[device.sources]\npeak_tflops = \"P\"\n"),
        "x.toml",
    ) {
        Ok(_) => panic!("a section source whose figures all have their own was accepted"),
        Err(e) => assert!(e.to_string().contains("has its own `source`"), "{e}"),
    }
    let e = err("[device.sources]\nclocks = \"a page\"\n");
    assert!(e.contains("clocks"), "{e}");
}

#[test]
fn a_section_source_covers_its_section_and_an_inline_source_wins() {
    let text = "[[device]]\nid = \"x\"\nname = \"X\"\nvendor = \"other\"\nsource = \"S\"\n\
                [device.sources]\nmemory = \"M\"\ncaches = \"C\"\n\
                [device.compute]\nnum_cu = 2\nwarp_size = 32\n\
                [device.memory]\nbandwidth_gbs = 100\nsize_gb = { value = 8, source = \"own\" }\nl2_mib = 4\n\
                [device.peak_tflops]\nfp32_vector = 1.5\n";
    let d = match super::parse_device_file(text, "x.toml") {
        Ok(mut v) => v.remove(0),
        Err(e) => panic!("{e}"),
    };
    assert_eq!(d.figure("memory.bandwidth_gbs").source, "M");
    assert_eq!(d.figure("memory.size_gb").source, "own");
    assert_eq!(d.figure("memory.l2_mib").source, "C");
    assert_eq!(d.figure("compute.num_cu").source, "S");
    assert_eq!(d.peaks[0].meta.source, "S");
}

#[test]
fn catalog_figures_carry_the_source_of_their_section() {
    // Hand-read from the entries' citations: the H100 SXM's memory is the datasheet's,
    // its limits are cuda_occupancy.h's for CC 9.0; the A100 40 GB limits are the CUDA
    // C++ Programming Guide's table; the B200's L2 is what deviceQuery reports.
    let c = Catalog::builtin();
    let h100 = dev(c, "h100-sxm");
    let mem = &h100.figure("memory.bandwidth_gbs").source;
    assert!(mem.contains("resources.nvidia.com/en-us-tensor-core/nvidia-tensor-core-gpu-datasheet"));
    assert!(!mem.contains("cuda_occupancy"), "{mem}");
    let lim = &h100.figure("limits.max_blocks_per_cu").source;
    assert!(lim.contains("cuda_occupancy.h CC9.0"), "{lim}");
    assert!(!lim.contains("datasheet"), "{lim}");
    let a100 = dev(c, "a100-sxm-40gb");
    let lim = &a100.figure("limits.smem_kib_per_cu").source;
    assert!(lim.starts_with("CUDA C++ Programming Guide, Compute Capabilities table"), "{lim}");
    assert!(lim.ends_with("CC 8.0"), "{lim}");
    assert!(!a100.meta.source.contains("Programming Guide"), "{}", a100.meta.source);
    let b200 = dev(c, "b200");
    assert!(b200.figure("memory.l2_mib").source.contains("L2 132644864 B"));
    assert!(b200
        .figure("memory.bandwidth_gbs")
        .source
        .contains("www.nvidia.com/en-us/data-center/hgx/"));
    // The B200 block limit keeps its own inline source over the device default.
    assert!(b200
        .figure("limits.max_blocks_per_cu")
        .source
        .starts_with("CUDA C++ Programming Guide, CC 10.0"));
}

/// A CPU has no half-precision matrix unit: a BF16 or FP16 GEMM on it is held to the
/// vector roof of its precision, else the FP32 vector roof (how CPU kernels without AMX
/// run it), and says so; an FP16 vector peak, where given, comes first.
#[test]
fn half_precision_matmuls_on_a_cpu_fall_back_to_its_vector_roofs() {
    let text = r#"
[[device]]
id = "test-cpu"
name = "Test CPU (16 cores, AVX-512)"
vendor = "cpu"
family = "cpu"
source = "test"
[device.compute]
num_cu = 16
warp_size = 1
boost_clock_mhz = 3800
[device.peak_tflops]
fp64_vector = 1.95
fp32_vector = 3.9
[device.memory]
size_gb = 128
bandwidth_gbs = 179.2
"#;
    let cpu = &super::parse_device_file(text, "cpu.toml").unwrap()[0];
    for p in [Precision::Bf16, Precision::Fp16] {
        let roof = cpu.compute_roof(p, ExecUnit::Matrix).expect("a fallback roof");
        assert_eq!((roof.peak.precision, roof.peak.unit), (Precision::Fp32, ExecUnit::Vector));
        assert_eq!(roof.peak.tflops, 3.9);
        assert!(roof.note.is_some_and(|n| n.contains("FP32 vector roof")), "{:?}", roof.note);
    }
    let with_half = text.replace("fp32_vector = 3.9", "fp32_vector = 3.9\nfp16_vector = 7.8");
    let cpu = &super::parse_device_file(&with_half, "cpu.toml").unwrap()[0];
    let roof = cpu.compute_roof(Precision::Fp16, ExecUnit::Matrix).unwrap();
    assert_eq!(roof.peak.tflops, 7.8);
    // A GPU's BF16 matrix work still finds its own roof first.
    let h100 = Catalog::builtin().lookup("h100-sxm").unwrap();
    assert!(h100.compute_roof(Precision::Bf16, ExecUnit::Matrix).unwrap().note.is_none());
}
