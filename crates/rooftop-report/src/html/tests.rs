//! Structural tests of the HTML reports: every chart parses as XML, every kernel has a
//! mark, the axes have ticks and labels, the page is self-contained, and the numbers in
//! it are the analysis's own.

#![allow(clippy::unwrap_used)]

use quick_xml::events::Event;
use quick_xml::Reader;
use rooftop_core::analysis::{analyze, Analysis, KernelRequest};
use rooftop_core::device::{Catalog, MemLevel};
use rooftop_core::ops::gemm::GemmSpec;
use rooftop_core::ops::quant::{QuantGemmSpec, WeightFormat};
use rooftop_core::schema::ceilings::{
    BandwidthCeiling, Ceilings, ComputeCeiling, Pattern, SweepPoint,
};
use rooftop_core::trace::model::{CpuOp, Dims, GpuEvent, OpArgs, TraceModel};
use rooftop_core::trace::report::{analyze as analyze_trace, TraceOptions};
use rooftop_core::units::Precision;

/// Elements of one SVG: (name, attributes), after checking it is well-formed XML.
pub(crate) fn parse_svg(svg: &str) -> Vec<(String, Vec<(String, String)>)> {
    let mut r = Reader::from_str(svg);
    r.config_mut().check_end_names = true;
    let mut out = Vec::new();
    let mut depth = 0i32;
    loop {
        let ev = r.read_event().unwrap_or_else(|e| {
            panic!("SVG is not well-formed XML at {}: {e}", r.buffer_position())
        });
        match ev {
            Event::Start(ref e) | Event::Empty(ref e) => {
                if matches!(ev, Event::Start(_)) {
                    depth += 1;
                }
                let name = String::from_utf8(e.name().as_ref().to_vec()).unwrap();
                let attrs = e
                    .attributes()
                    .map(|a| {
                        let a = a.unwrap();
                        (
                            String::from_utf8(a.key.as_ref().to_vec()).unwrap(),
                            a.unescape_value().unwrap().into_owned(),
                        )
                    })
                    .collect();
                out.push((name, attrs));
            }
            Event::End(_) => depth -= 1,
            Event::Text(t) => {
                t.unescape().unwrap();
            }
            Event::Eof => break,
            _ => {}
        }
    }
    assert_eq!(depth, 0, "unclosed elements");
    out
}

/// The charts (`<svg class="chart ...">`) of a page.
pub(crate) fn charts(html: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = html;
    while let Some(start) = rest.find("<svg xmlns=") {
        let from = &rest[start..];
        let end = from.find("</svg>").unwrap() + "</svg>".len();
        out.push(&from[..end]);
        rest = &from[end..];
    }
    out
}

fn class_has(attrs: &[(String, String)], class: &str) -> bool {
    attrs.iter().any(|(k, v)| k == "class" && v.split(' ').any(|c| c == class))
}

fn count_class(els: &[(String, Vec<(String, String)>)], class: &str) -> usize {
    els.iter().filter(|(_, a)| class_has(a, class)).count()
}

/// No network: the only URL is the SVG namespace.
fn self_contained(html: &str) {
    let stripped = html.replace("http://www.w3.org/2000/svg", "");
    for bad in ["http://", "https://", "src=", "@import", "url(http"] {
        assert!(!stripped.contains(bad), "external reference `{bad}`");
    }
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert!(html.contains("<script>") && html.contains("<style>"));
}

fn decode(time: Option<u64>) -> Analysis {
    let spec = QuantGemmSpec {
        m: 1,
        n: 4096,
        k: 4096,
        act_dtype: Precision::Fp16,
        format: WeightFormat::Affine {
            bits: 3,
            group_size: 128,
            scale_dtype: Precision::Fp16,
            zero_point: false,
        },
        out_dtype: None,
    };
    let mut req = KernelRequest::new(spec.work().unwrap());
    req.time_ns = time;
    let cat = Catalog::builtin();
    analyze(cat.lookup("m4-max").unwrap(), &req).unwrap()
}

#[test]
fn analyze_report_has_one_mark_ticks_roofs_and_the_analysis_numbers() {
    let cat = Catalog::builtin();
    let dev = cat.lookup("m4-max").unwrap();
    let a = decode(Some(42_000));
    let html = super::analyses(std::slice::from_ref(&a), Some(dev));
    self_contained(&html);
    let svgs = charts(&html);
    assert_eq!(svgs.len(), 1);
    let els = parse_svg(svgs[0]);
    assert_eq!(count_class(&els, "mark"), 1);
    // Log axes over whole decades, each labelled: at least 3 ticks on x and 2 on y.
    let ticks = count_class(&els, "tick-label");
    assert!(ticks >= 5, "{ticks} tick labels");
    assert_eq!(count_class(&els, "axis-title"), 2);
    // A roof per distinct (value, style): every device peak is in the roofs table.
    assert!(count_class(&els, "roof") >= 2);
    assert_eq!(count_class(&els, "roofline-primary"), 1);
    for p in &dev.peaks {
        assert!(
            html.contains(&format!("{} {} peak", p.precision, p.unit)),
            "{} {}",
            p.precision,
            p.unit
        );
    }
    // The mark sits at the analysis's own intensity and rate: its tooltip says them.
    let m = a.roofline.achieved.as_ref().unwrap();
    let tip = rooftop_core::units::pct(m.roofline_attainment_pct);
    assert!(html.contains(&format!("roofline attainment: {tip}")));
    // The same rows as the terminal, findings with evidence and recommendation.
    for [metric, value, _] in crate::rows::analysis_rows(&a) {
        assert!(
            html.contains(&super::esc(&metric)) && html.contains(&super::esc(&value)),
            "{metric}"
        );
    }
    for f in &a.findings {
        assert!(html.contains(&super::esc(&f.evidence)));
        assert!(html.contains(&super::esc(&f.recommendation)));
    }
    assert!(html.contains("Device spec used"));
}

#[test]
fn analysis_without_a_time_is_a_hollow_mark() {
    let html = super::analyses(&[decode(None)], None);
    let els = parse_svg(charts(&html)[0]);
    assert_eq!(count_class(&els, "mark"), 1);
    assert_eq!(count_class(&els, "hollow"), 1);
    assert!(html.contains("no measured time"));
}

#[test]
fn many_analyses_share_one_chart() {
    let cat = Catalog::builtin();
    let dev = cat.lookup("h100-sxm").unwrap();
    let items: Vec<Analysis> = (1..=40u64)
        .map(|i| {
            let mut req = KernelRequest::new(
                GemmSpec::new(64 * i, 4096, 4096, Precision::Bf16).work().unwrap(),
            );
            req.time_ns = Some(10_000 + 1000 * i);
            analyze(dev, &req).unwrap()
        })
        .collect();
    let html = super::analyses(&items, Some(dev));
    let els = parse_svg(charts(&html)[0]);
    assert_eq!(count_class(&els, "mark"), 40);
    // Every mark points at a row that exists.
    for (_, a) in els.iter().filter(|(_, a)| class_has(a, "mark")) {
        let row = &a.iter().find(|(k, _)| k == "data-row").unwrap().1;
        assert!(html.contains(&format!("id=\"{row}\"")), "{row}");
    }
}

#[test]
fn device_pages_parse() {
    let cat = Catalog::builtin();
    let html = super::devices(&cat.devices);
    self_contained(&html);
    assert!(html.contains("h100-sxm"));
    let html = super::device_detail(cat.lookup("mi300x").unwrap());
    let els = parse_svg(charts(&html)[0]);
    assert_eq!(count_class(&els, "mark"), 0);
    assert!(count_class(&els, "roof") >= 2);
}

/// Two GEMM shapes and one add: three modelled rows, three marks.
fn trace_model() -> TraceModel {
    let op = |name: &str, dims: Vec<Dims>| CpuOp {
        name: name.into(),
        args: OpArgs {
            input_dims: dims,
            input_types: vec!["c10::BFloat16".into(); 3],
            ..OpArgs::default()
        }
        .into(),
        ..CpuOp::default()
    };
    let mm = |m: i64| {
        vec![Dims::Tensor(vec![512]), Dims::Tensor(vec![m, 512]), Dims::Tensor(vec![512, 512])]
    };
    let add = vec![Dims::Tensor(vec![1, 141, 512]), Dims::Tensor(vec![1, 141, 512])];
    let k = |name: &str, ts: i64, dur: i64, op: u32| GpuEvent {
        name: name.into(),
        ts_ns: ts * 1000,
        dur_ns: dur * 1000,
        stream: 7,
        launcher: Some("cudaLaunchKernel".into()),
        op: Some(op),
        ..GpuEvent::default()
    };
    let mut m = TraceModel {
        ops: vec![op("aten::addmm", mm(141)), op("aten::addmm", mm(4096)), op("aten::add", add)],
        gpu: vec![k("gemm_<T>&", 0, 50, 0), k("gemm_b", 50, 300, 1), k("add_kernel", 400, 3, 2)],
        ..TraceModel::default()
    };
    for (i, o) in m.ops.iter_mut().enumerate() {
        o.launched = vec![i as u32];
    }
    m
}

#[test]
fn trace_report_has_a_mark_per_modelled_row() {
    let m = trace_model();
    let cat = Catalog::builtin();
    let dev = cat.lookup("h100-sxm").unwrap();
    let r = analyze_trace(&m, Some(dev), &TraceOptions::default());
    let modelled: usize = r
        .categories
        .values()
        .flatten()
        .filter(|row| row.unmodelled.is_none() && row.flops.is_some_and(|f| f > 0.0))
        .count();
    assert!(modelled >= 2, "{:?}", r.categories.keys().collect::<Vec<_>>());
    let html = super::trace(&r);
    self_contained(&html);
    let els = parse_svg(charts(&html)[0]);
    assert_eq!(count_class(&els, "mark"), modelled);
    // The roofs and spec are those of the device the report was analysed with: the
    // renderer is not told the device again.
    assert!(count_class(&els, "roof") > 0);
    assert!(html.contains(&format!("Roofs and device spec: {}", dev.name)));
    // Kernel names with markup are escaped, and every section of the terminal is there.
    assert!(html.contains("gemm_&lt;T&gt;&amp;"));
    for s in [
        "GPU timeline",
        "Ops by direct kernel time",
        "Ops by category",
        "Roofline tables",
        "Kernels",
        "Short kernels",
        "Findings",
    ] {
        assert!(html.contains(s), "{s}");
    }
    // Without a device: marks, no roofs.
    let r = analyze_trace(&m, None, &TraceOptions::default());
    let html = super::trace(&r);
    let els = parse_svg(charts(&html)[0]);
    assert_eq!(count_class(&els, "roof"), 0);
    assert!(html.contains("No device"));
    assert!(!html.contains("Roofs and device spec"));
}

#[test]
fn ceilings_report_has_the_sweep_and_the_roofs() {
    let mut sweep = Vec::new();
    for (p, scale) in [(Pattern::Read, 1.0), (Pattern::Triad, 0.8)] {
        for e in 12..=28 {
            let ws = 1u64 << e;
            let gbs = if e < 16 {
                400.0
            } else if e < 21 {
                150.0
            } else {
                40.0
            } * scale;
            sweep.push(SweepPoint { pattern: p, working_set_bytes: ws, gbs });
        }
    }
    let c = Ceilings {
        backend: "cpu".into(),
        device_name: "test cpu".into(),
        method: "full".into(),
        parallelism: 4,
        bandwidth: vec![
            BandwidthCeiling {
                level: MemLevel::L1,
                pattern: Pattern::Read,
                gbs: 400.0,
                working_set_bytes: 1 << 14,
            },
            BandwidthCeiling {
                level: MemLevel::Dram,
                pattern: Pattern::Read,
                gbs: 40.0,
                working_set_bytes: 1 << 28,
            },
        ],
        sweep,
        compute: vec![ComputeCeiling {
            precision: Precision::Fp32,
            variant: "vector".into(),
            gflops: 250.0,
            theoretical_gflops: Some(300.0),
            theoretical_formula: Some("4 cores x 2.4 GHz x 16 lanes x 2".into()),
        }],
        notes: vec!["levels by plateau".into()],
        caches: Vec::new(),
        adjustments: Vec::new(),
    };
    let html = super::ceilings(&c);
    self_contained(&html);
    let svgs = charts(&html);
    assert_eq!(svgs.len(), 2);
    let sweep_els = parse_svg(svgs[0]);
    assert_eq!(count_class(&sweep_els, "series-line"), 2);
    assert_eq!(count_class(&sweep_els, "point"), 34);
    assert_eq!(count_class(&sweep_els, "marker"), 2, "one per level");
    assert!(count_class(&sweep_els, "tick-label") >= 5);
    let roof_els = parse_svg(svgs[1]);
    // DRAM and L1 measured, fp32 measured and theoretical.
    assert_eq!(count_class(&roof_els, "roof"), 4);
    assert!(html.contains("4 cores x 2.4 GHz x 16 lanes x 2"));
}

#[test]
fn five_hundred_marks_stay_readable() {
    let cat = Catalog::builtin();
    let dev = cat.lookup("h100-sxm").unwrap();
    // Intensities from 0.05 to 2000 FLOP/B, times spread over three decades.
    let items: Vec<Analysis> = (0..500u32)
        .map(|i| {
            let k = 8 + u64::from(i) * 16;
            let mut req = KernelRequest::new(
                GemmSpec::new(1 + u64::from(i % 97) * 40, 4096, k, Precision::Bf16).work().unwrap(),
            );
            let floor = (req.work.flops / 989e12).max(req.work.bytes() / 3.35e12);
            req.time_ns = Some(((floor * 1e9) * (1.2 + f64::from(i % 13))) as u64 + 1);
            analyze(dev, &req).unwrap()
        })
        .collect();
    let html = super::analyses(&items, Some(dev));
    let svg = charts(&html)[0];
    let els = parse_svg(svg);
    assert_eq!(count_class(&els, "mark"), 500);
    // Names on at most 8 marks, none overlapping (checked when placed).
    assert!(count_class(&els, "mark-label") <= 8);
    if let Ok(dir) = std::env::var("ROOFTOP_HTML_DUMP") {
        std::fs::write(std::path::Path::new(&dir).join("analyze_500.html"), &html).unwrap();
    }
}
