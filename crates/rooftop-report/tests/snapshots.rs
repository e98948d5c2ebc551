//! Snapshots of every output format for two reference analyses, worked examples of
//! docs/reference/formulas.md: the 3-bit decode GEMM on an M4 Max (memory-bound, with
//! findings) and TraceLens's first GEMM example on an MI300X (tiles and waves). The numbers
//! inside are asserted against hand arithmetic in the core and CLI tests; these snapshots
//! pin the layout.

#![allow(clippy::unwrap_used)]

use rooftop_core::analysis::{analyze, Analysis, GemmShape, GemmView, KernelRequest};
use rooftop_core::device::Catalog;
use rooftop_core::ops::gemm::GemmSpec;
use rooftop_core::ops::quant::{QuantGemmSpec, WeightFormat};
use rooftop_core::units::Precision;
use rooftop_report::{analyses, device_detail, device_list, Format};

fn decode() -> Analysis {
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
    req.time_ns = Some(42_000);
    req.dequant_fusion = spec.dequant_fusion(Precision::Fp16).ok();
    let cat = Catalog::builtin();
    analyze(cat.lookup("m4-max").unwrap(), &req).unwrap()
}

fn tiled() -> Analysis {
    let mut req =
        KernelRequest::new(GemmSpec::new(10240, 2048, 2048, Precision::Bf16).work().unwrap());
    req.kernel_name = Some("Cijk_Alik_Bljk_BBS_BH_MT256x64x64_MI32x32x8x1_SN_WG32_8_1".into());
    req.gemm = Some(GemmShape { m: 10240, n: 2048, batch: 1, view: GemmView::Blas });
    let cat = Catalog::builtin();
    analyze(cat.lookup("mi300x").unwrap(), &req).unwrap()
}

#[test]
fn analysis_table() {
    insta::assert_snapshot!("decode_table", analyses(Format::Table, &[decode()]).unwrap());
    insta::assert_snapshot!("tiled_table", analyses(Format::Table, &[tiled()]).unwrap());
}

#[test]
fn analysis_json() {
    let text = analyses(Format::Json, &[decode()]).unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["schema_version"], 1);
    insta::assert_snapshot!("decode_json", text);
    let both = analyses(Format::Json, &[decode(), tiled()]).unwrap();
    let v: serde_json::Value = serde_json::from_str(&both).unwrap();
    assert_eq!(v.as_array().map(Vec::len), Some(2));
}

#[test]
fn analysis_markdown_and_csv() {
    insta::assert_snapshot!("decode_md", analyses(Format::Markdown, &[decode()]).unwrap());
    insta::assert_snapshot!("both_csv", analyses(Format::Csv, &[decode(), tiled()]).unwrap());
}

#[test]
fn devices() {
    let cat = Catalog::builtin();
    insta::assert_snapshot!("devices_table", device_list(Format::Table, &cat.devices).unwrap());
    insta::assert_snapshot!("devices_md", device_list(Format::Markdown, &cat.devices).unwrap());
    insta::assert_snapshot!(
        "h100_detail",
        device_detail(Format::Table, cat.lookup("h100-sxm").unwrap()).unwrap()
    );
    insta::assert_snapshot!(
        "mi300x_detail",
        device_detail(Format::Table, cat.lookup("mi300x").unwrap()).unwrap()
    );
}
