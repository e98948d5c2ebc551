//! Weight-quantized GEMM / matvec (`C = A · dequant(Wq)`) and the traffic saved by fusing
//! the dequantization into the matmul.
//!
//! Bytes (docs/reference/formulas.md#quantized-weights-q4_0-q8_0-int-g):
//! `bytes = M*K*2 + K*N*bits/8 + (K/group)*N*2 + M*N*2` for fp16 activations, scales and
//! output. We generalise it: activations and output in their own precisions,
//! `ceil(K/group)` groups when K is not a multiple of the group, zero points (packed at
//! `bits` bits, the GPTQ/AWQ `qzeros` layout) adding `ceil(K/group)*N*bits/8`. GGML blocks
//! are 32 weights along K with one fp16 scale: Q4_0 = 2 + 16 = 18 bytes per 32 weights (4.5
//! bits/weight), Q8_0 = 2 + 32 = 34 bytes (8.5 bits/weight) — ggml `block_q4_0` /
//! `block_q8_0`.
//!
//! FLOPs (one multiply-add = 2, docs/reference/formulas.md): `2*M*N*K`, on the matrix unit
//! in the activation precision for M > 1 and on the vector unit in FP32 for M = 1 (matvec
//! kernels are SIMT dot products accumulating in float). The ALU work of unpacking and
//! scaling weights is not counted (it is not part of the roofline's FLOPs, but it is why
//! quantized matvec has a lower usual bandwidth band than element-wise ops,
//! docs/reference/formulas.md#diagnosis-thresholds-rooftops-conventions).
//!
//! Fusion (docs/reference/formulas.md#fusing-dequantization-into-the-matmul):
//! [`QuantGemmSpec::dequant_fusion`] compares a dequantize-then-matmul pair of kernels with
//! one fused kernel, both under the counting of the "~17×" example in circulation and under
//! the physically minimal counting.

use super::count::{self, bpe, ceil_div, default_matmul_unit, dim, Terms};
use super::{OpClass, OpError, Work};
use crate::units::{ExecUnit, Precision};
use serde::{Deserialize, Serialize};
use std::fmt::Write as _;

/// Weights per GGML Q4_0 / Q8_0 block.
pub const GGML_BLOCK: u64 = 32;

/// How the weight matrix (K×N) is stored.
#[allow(non_camel_case_types)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WeightFormat {
    /// `bits`-bit integers with one scale per `group_size` weights along K (GPTQ, AWQ,
    /// MLX, HQQ-style group quantization).
    Affine {
        /// Bits per weight, 1 to 8.
        bits: u32,
        /// Weights along K sharing one scale (K itself for per-channel quantization).
        group_size: u64,
        /// Storage precision of the scales (fp16 in the decode-GEMM example of
        /// docs/reference/formulas.md).
        scale_dtype: Precision,
        /// One zero point per group, packed at `bits` bits (GPTQ/AWQ `qzeros`).
        zero_point: bool,
    },
    /// GGML Q4_0: blocks of 32 weights, 4-bit quants + one fp16 scale = 18 bytes.
    #[serde(rename = "q4_0")]
    Q4_0,
    /// GGML Q8_0: blocks of 32 weights, 8-bit quants + one fp16 scale = 34 bytes.
    #[serde(rename = "q8_0")]
    Q8_0,
}

/// The storage parameters every format reduces to.
struct Layout {
    bits: u32,
    group: u64,
    scale: Precision,
    zero_point: bool,
    ggml: Option<&'static str>,
}

impl WeightFormat {
    fn layout(self) -> Layout {
        match self {
            WeightFormat::Affine { bits, group_size, scale_dtype, zero_point } => {
                Layout { bits, group: group_size, scale: scale_dtype, zero_point, ggml: None }
            }
            WeightFormat::Q4_0 => Layout {
                bits: 4,
                group: GGML_BLOCK,
                scale: Precision::Fp16,
                zero_point: false,
                ggml: Some("Q4_0"),
            },
            WeightFormat::Q8_0 => Layout {
                bits: 8,
                group: GGML_BLOCK,
                scale: Precision::Fp16,
                zero_point: false,
                ggml: Some("Q8_0"),
            },
        }
    }

    /// Storage bits per weight when K is a multiple of the group: 4.5 for Q4_0, 8.5 for
    /// Q8_0, `bits + scale_bits/group (+ bits/group)` for affine formats.
    pub fn bits_per_weight(self) -> f64 {
        let l = self.layout();
        if l.group == 0 {
            return f64::from(l.bits);
        }
        let per_group =
            f64::from(l.scale.bits()) + if l.zero_point { f64::from(l.bits) } else { 0.0 };
        f64::from(l.bits) + per_group / l.group as f64
    }

    /// Short name for shapes and tables: `3-bit g128` (fp16 scales), `4-bit g64 bf16-scales
    /// zp`, `Q4_0`.
    pub fn label(self) -> String {
        let l = self.layout();
        if let Some(name) = l.ggml {
            return name.to_string();
        }
        let mut s = format!("{}-bit g{}", l.bits, l.group);
        if l.scale != Precision::Fp16 {
            let _ = write!(s, " {}-scales", l.scale);
        }
        if l.zero_point {
            s.push_str(" zp");
        }
        s
    }

    fn validate(self, k: u64) -> Result<Layout, OpError> {
        let l = self.layout();
        if l.bits == 0 {
            return Err(OpError::ZeroDim { name: "bits", value: 0 });
        }
        if l.bits > 8 {
            return Err(OpError::Invalid(format!(
                "quantized weights must have 1 to 8 bits, got {}; use a plain GEMM for wider weights",
                l.bits
            )));
        }
        if l.group == 0 {
            return Err(OpError::ZeroDim { name: "group_size", value: 0 });
        }
        if let Some(name) = l.ggml {
            if !k.is_multiple_of(GGML_BLOCK) {
                return Err(OpError::Invalid(format!(
                    "{name} stores K in blocks of {GGML_BLOCK} weights, so K must be a multiple of {GGML_BLOCK}, got K={k}"
                )));
            }
        }
        Ok(l)
    }
}

impl std::str::FromStr for WeightFormat {
    type Err = String;

    /// A GGML block format by name: `q4_0` or `q8_0` (`-` for `_` too, any case).
    fn from_str(s: &str) -> Result<WeightFormat, String> {
        match s.to_ascii_lowercase().as_str() {
            "q4_0" | "q4-0" => Ok(WeightFormat::Q4_0),
            "q8_0" | "q8-0" => Ok(WeightFormat::Q8_0),
            other => Err(format!("`{other}` is not a known block format: expected q4_0 or q8_0")),
        }
    }
}

/// A GEMM whose weight matrix (K×N) is quantized; `m == 1` is a matvec (decode).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct QuantGemmSpec {
    /// Rows of the activations and the output (tokens); 1 for single-token decode.
    pub m: u64,
    /// Output features (columns of W).
    pub n: u64,
    /// Input features (the reduction dimension).
    pub k: u64,
    /// Storage precision of the activations; the matrix roof's precision when M > 1.
    pub act_dtype: Precision,
    /// How the weights are stored.
    pub format: WeightFormat,
    /// Storage precision of the output; `None` means `act_dtype`.
    pub out_dtype: Option<Precision>,
}

/// Traffic of one dequantize-then-matmul comparison.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FusionTraffic {
    /// Bytes moved by a dequantize kernel followed by a matmul kernel.
    pub unfused_bytes: f64,
    /// Bytes moved by one fused dequantize+matmul kernel.
    pub fused_bytes: f64,
    /// `unfused_bytes / fused_bytes`.
    pub saving: f64,
    /// Unfused byte formula with numbers substituted.
    pub unfused_formula: String,
    /// Fused byte formula with numbers substituted.
    pub fused_formula: String,
    /// What the counting assumes.
    pub assumptions: Vec<String>,
}

/// Fused vs unfused dequantize+matmul traffic, counted two ways.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DequantFusion {
    /// Physically minimal: real storage sizes, every tensor read once per kernel.
    pub minimal: FusionTraffic,
    /// The counting of the "~17×" fusion example in circulation, reproduced as stated
    /// (Q4_0 only; `None` otherwise;
    /// docs/reference/formulas.md#fusing-dequantization-into-the-matmul).
    pub as_circulated: Option<FusionTraffic>,
}

/// The byte terms of the packed weights (quants, scales, zero points).
#[allow(clippy::many_single_char_names)]
fn weight_terms(
    l: &Layout,
    k: u128,
    n: u128,
    kv: u64,
    nv: u64,
    t: &mut Terms,
) -> Result<(), OpError> {
    let bits = u128::from(l.bits);
    let name = l.ggml.unwrap_or("weights");
    t.push(
        name,
        format!("K*N*{}/8", l.bits),
        format!("{kv}*{nv}*{}/8", l.bits),
        count::mul("bytes of the weights", &[k, n, bits])?,
    );
    let g = u128::from(l.group);
    let groups = ceil_div(k, g);
    let gsym = if k.is_multiple_of(g) {
        format!("(K/{})", l.group)
    } else {
        format!("ceil(K/{})", l.group)
    };
    let s = bpe(l.scale);
    let scale_label = if l.ggml.is_some() { "fp16 block scales" } else { "scales" };
    t.push(
        scale_label,
        format!("{gsym}*N*{s}"),
        format!("{groups}*{nv}*{s}"),
        count::mul("bytes of the scales", &[groups, n, u128::from(l.scale.bits())])?,
    );
    if l.zero_point {
        t.push(
            "zero points",
            format!("{gsym}*N*{}/8", l.bits),
            format!("{groups}*{nv}*{}/8", l.bits),
            count::mul("bytes of the zero points", &[groups, n, bits])?,
        );
    }
    Ok(())
}

impl QuantGemmSpec {
    /// The FLOPs and minimum DRAM bytes of this quantized GEMM.
    // M, N, K are the names the formulas use.
    #[allow(clippy::many_single_char_names)]
    pub fn work(&self) -> Result<Work, OpError> {
        let m = dim("m", self.m)?;
        let n = dim("n", self.n)?;
        let k = dim("k", self.k)?;
        let l = self.format.validate(self.k)?;
        let act = self.act_dtype;
        let out = self.out_dtype.unwrap_or(act);
        let (mv, nv, kv) = (self.m, self.n, self.k);

        let mut flops = Terms::new();
        flops.push("", "2*M*N*K", format!("2*{mv}*{nv}*{kv}"), count::mul("FLOPs", &[2, m, n, k])?);

        let (sa, so) = (bpe(act), bpe(out));
        let mut read = Terms::new();
        read.push(
            "A",
            format!("M*K*{sa}"),
            format!("{mv}*{kv}*{sa}"),
            count::mul("bytes of A", &[m, k, u128::from(act.bits())])?,
        );
        weight_terms(&l, k, n, kv, nv, &mut read)?;
        let mut write = Terms::new();
        write.push(
            "C",
            format!("M*N*{so}"),
            format!("{mv}*{nv}*{so}"),
            count::mul("bytes of C", &[m, n, u128::from(out.bits())])?,
        );

        let (class, unit, precision) = if self.m == 1 {
            (OpClass::QuantizedMatvec, ExecUnit::Vector, count::vector_precision(act))
        } else {
            (OpClass::QuantizedGemm, default_matmul_unit(act), act)
        };

        let mut assumptions = vec![
            "activations, packed weights, scales and output each cross DRAM once".to_string(),
            format!(
                "weights stored at {} bits/weight including scales{}",
                fmt_bits_per_weight(self.format),
                if l.zero_point { " and zero points" } else { "" }
            ),
            "FLOPs are the 2*M*N*K of the matmul; unpacking and scaling weights is not counted"
                .to_string(),
        ];
        if l.ggml.is_none() && k % u128::from(l.group) != 0 {
            assumptions.push(format!("K={kv} is not a multiple of the group {}: the last group is partial and still has a scale", l.group));
        }
        if l.zero_point {
            assumptions.push(
                "zero points are packed at the weight bit width (GPTQ/AWQ qzeros); float zero \
                 points or biases (MLX, HQQ) are the size of a scale"
                    .to_string(),
            );
        }
        if self.m == 1 {
            assumptions.push(format!(
                "M=1 is a matvec: SIMT dot products on the vector unit, accumulating in {}",
                count::vector_precision(act)
            ));
        }

        let mut shape = format!("M={mv} N={nv} K={kv} {act} x {}", self.format.label());
        if out != act {
            let _ = write!(shape, " ->{out}");
        }

        Ok(Work {
            class,
            shape,
            flops: count::to_f64(flops.total("FLOPs")?),
            precision,
            unit,
            bytes_read: count::bits_to_bytes(read.total("bytes read")?),
            bytes_written: count::bits_to_bytes(write.total("bytes written")?),
            flops_formula: flops.flops_formula("FLOPs")?,
            bytes_formula: count::rw_formula(&read, &write)?,
            assumptions,
        })
    }

    /// DRAM traffic of dequantizing the weights to `dequant_dtype` in one kernel and
    /// multiplying in a second, against one fused kernel.
    ///
    /// `minimal` counts real storage sizes and every tensor read once per kernel.
    /// `as_circulated` (for [`WeightFormat::Q4_0`] only) reproduces the "~17×" example in
    /// circulation as written (docs/reference/formulas.md#fusing-dequantization-into-the-matmul):
    /// Q4_0 counted as `K*N/4` bytes, FP32 dequantized weights, activations and output,
    /// weights read twice by the fused kernel, and no activation/output traffic in the
    /// unfused total. For M=1, K=N=4096 its formulas give 138,412,032 vs 8,421,376 bytes
    /// (16.4×). The example prints 65,536 bytes for the output `M*N*4` (it is 16,384), hence
    /// its 8.47 MB and 16.3×, which it rounds to "~17x". The minimal counting gives 15.2×
    /// with FP32 and 8.1× with FP16 everywhere.
    #[allow(clippy::many_single_char_names)]
    pub fn dequant_fusion(&self, dequant_dtype: Precision) -> Result<DequantFusion, OpError> {
        let m = dim("m", self.m)?;
        let n = dim("n", self.n)?;
        let k = dim("k", self.k)?;
        let l = self.format.validate(self.k)?;
        let act = self.act_dtype;
        let out = self.out_dtype.unwrap_or(act);
        let (mv, nv, kv) = (self.m, self.n, self.k);
        let (sa, so, sd) = (bpe(act), bpe(out), bpe(dequant_dtype));
        let a_bits = count::mul("bytes of A", &[m, k, u128::from(act.bits())])?;
        let c_bits = count::mul("bytes of C", &[m, n, u128::from(out.bits())])?;
        let d_bits = count::mul(
            "bytes of the dequantized weights",
            &[k, n, u128::from(dequant_dtype.bits())],
        )?;

        let mut wq = Terms::new();
        weight_terms(&l, k, n, kv, nv, &mut wq)?;

        let mut unfused = wq.clone();
        unfused.push("write dequantized", format!("K*N*{sd}"), format!("{kv}*{nv}*{sd}"), d_bits);
        unfused.push("read dequantized", format!("K*N*{sd}"), format!("{kv}*{nv}*{sd}"), d_bits);
        unfused.push("A", format!("M*K*{sa}"), format!("{mv}*{kv}*{sa}"), a_bits);
        unfused.push("C", format!("M*N*{so}"), format!("{mv}*{nv}*{so}"), c_bits);
        let mut fused = wq;
        fused.push("A", format!("M*K*{sa}"), format!("{mv}*{kv}*{sa}"), a_bits);
        fused.push("C", format!("M*N*{so}"), format!("{mv}*{nv}*{so}"), c_bits);
        let minimal = traffic(
            &unfused,
            &fused,
            vec![
                format!(
                    "real {} storage ({} bits/weight), read once by each kernel that needs it",
                    self.format.label(),
                    fmt_bits_per_weight(self.format)
                ),
                format!("the unfused dequantize kernel writes K*N {dequant_dtype} weights that the matmul reads back (they do not stay in cache)"),
                "both versions read the activations and write the output once".to_string(),
            ],
        )?;

        let as_circulated = if self.format == WeightFormat::Q4_0 {
            let qw = count::mul("bytes of the weights", &[k, n, 2])?; // K*N/4 bytes = 2 bits each
            let f32_w = count::mul("bytes of the dequantized weights", &[k, n, 32])?;
            let mut un = Terms::new();
            un.push("read Q4_0", "K*N/4", format!("{kv}*{nv}/4"), qw);
            un.push("write FP32", "K*N*4", format!("{kv}*{nv}*4"), f32_w);
            un.push("read FP32", "K*N*4", format!("{kv}*{nv}*4"), f32_w);
            let mut fu = Terms::new();
            fu.push(
                "read Q4_0 (2x)",
                "K*N/4*2",
                format!("{kv}*{nv}/4*2"),
                count::mul("bytes of the weights", &[qw, 2])?,
            );
            fu.push(
                "read activations",
                "M*K*4",
                format!("{mv}*{kv}*4"),
                count::mul("bytes of A", &[m, k, 32])?,
            );
            fu.push(
                "write output",
                "M*N*4",
                format!("{mv}*{nv}*4"),
                count::mul("bytes of C", &[m, n, 32])?,
            );
            Some(traffic(
                &un,
                &fu,
                vec![
                    "the \"~17x\" example in circulation (docs/reference/formulas.md) counts \
                     Q4_0 at 2 bits/weight (K*N/4 bytes); real Q4_0 is \
                     18 bytes per 32 weights = 4.5 bits/weight = K*N*18/32 bytes"
                        .to_string(),
                    "its fused kernel reads the weights twice (\"Read Q4_0 (2x)\"); a \
                     kernel that streams each weight once reads them once"
                        .to_string(),
                    "it keeps FP32 activations and output and dequantizes to FP32, \
                     whatever the spec's precisions"
                        .to_string(),
                    "its unfused total leaves out the matmul's own activation read and \
                     output write"
                        .to_string(),
                    "evaluated by its own formulas: it prints 65,536 B for the output \
                     M*N*4 at M=1, N=4096 (it is 16,384 B), so its fused total of 8.47 MB and \
                     ratio of 16.3x (rounded to \"~17x\") become 8.42 MB and 16.4x here"
                        .to_string(),
                ],
            )?)
        } else {
            None
        };

        Ok(DequantFusion { minimal, as_circulated })
    }
}

/// Bits per weight with at most 4 decimals and no trailing zeros: `3.125`, `4.5`, `8.3333`.
fn fmt_bits_per_weight(f: WeightFormat) -> String {
    let s = format!("{:.4}", f.bits_per_weight());
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

fn traffic(
    unfused: &Terms,
    fused: &Terms,
    assumptions: Vec<String>,
) -> Result<FusionTraffic, OpError> {
    let u = count::bits_to_bytes(unfused.total("unfused bytes")?);
    let f = count::bits_to_bytes(fused.total("fused bytes")?);
    Ok(FusionTraffic {
        unfused_bytes: u,
        fused_bytes: f,
        saving: u / f,
        unfused_formula: unfused.bytes_formula("unfused bytes")?,
        fused_formula: fused.bytes_formula("fused bytes")?,
        assumptions,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn affine(bits: u32, group_size: u64, zero_point: bool) -> WeightFormat {
        WeightFormat::Affine { bits, group_size, scale_dtype: Precision::Fp16, zero_point }
    }

    fn spec(m: u64, n: u64, k: u64, act: Precision, format: WeightFormat) -> QuantGemmSpec {
        QuantGemmSpec { m, n, k, act_dtype: act, format, out_dtype: None }
    }

    #[test]
    fn decode_3bit_g128_bytes() {
        // The decode-GEMM example of docs/reference/formulas.md:
        // M*K*2 + K*N*bits/8 + (K/group)*N*2 + M*N*2, M=1 N=K=4096, 3-bit, g128.
        let w = spec(1, 4096, 4096, Precision::Fp16, affine(3, 128, false)).work().unwrap();
        let a = 1.0 * 4096.0 * 2.0; // 8,192
        let wq = 4096.0 * 4096.0 * 3.0 / 8.0; // 6,291,456
        let scales = (4096.0 / 128.0) * 4096.0 * 2.0; // 32 * 4096 * 2 = 262,144
        let c = 1.0 * 4096.0 * 2.0; // 8,192
        assert_eq!(a + wq + scales + c, 6_569_984.0);
        assert_eq!(w.bytes_read, a + wq + scales);
        assert_eq!(w.bytes_written, c);
        assert_eq!(w.bytes(), 6_569_984.0);
        // 2*M*N*K = 2*1*4096*4096
        assert_eq!(w.flops, 33_554_432.0);
        assert_eq!(w.class, OpClass::QuantizedMatvec);
        assert_eq!(w.unit, ExecUnit::Vector);
        assert_eq!(w.precision, Precision::Fp32);
        assert_eq!(w.shape, "M=1 N=4096 K=4096 fp16 x 3-bit g128");
        let bf16_zp = WeightFormat::Affine {
            bits: 4,
            group_size: 64,
            scale_dtype: Precision::Bf16,
            zero_point: true,
        };
        assert_eq!(bf16_zp.label(), "4-bit g64 bf16-scales zp");
        assert_eq!(
            w.bytes_formula,
            "read M*K*2 (A) + K*N*3/8 (weights) + (K/128)*N*2 (scales) = 1*4096*2 + 4096*4096*3/8 \
             + 32*4096*2 = 6561792 B; write M*N*2 (C) = 1*4096*2 = 8192 B"
        );
    }

    #[test]
    fn prefill_m512_is_a_quantized_gemm() {
        // The same kernel at M=512 (docs/reference/formulas.md): M=512 N=K=4096 3-bit.
        let w = spec(512, 4096, 4096, Precision::Fp16, affine(3, 128, false)).work().unwrap();
        // 2*512*4096*4096 = 17,179,869,184
        assert_eq!(w.flops, 17_179_869_184.0);
        // 512*4096*2 + 6,291,456 + 262,144 + 512*4096*2 = 4,194,304*2 + 6,553,600
        assert_eq!(w.bytes(), 14_942_208.0);
        assert_eq!(w.class, OpClass::QuantizedGemm);
        assert_eq!(w.unit, ExecUnit::Matrix);
        // A worked example in circulation reports 0.85 ms -> 20.1 TFLOPS (17.18e9 / 0.85e-3
        // = 20.2e12: agrees) and 89 GB/s (14.94e6 / 0.85e-3 = 17.6e9: its bandwidth does not
        // follow from its own byte formula).
        assert!((w.flops / 0.85e-3 / 1e12 - 20.21).abs() < 0.01);
        assert!((w.bytes() / 0.85e-3 / 1e9 - 17.58).abs() < 0.01);
    }

    #[test]
    fn partial_groups_and_zero_points() {
        // K=300, group 128 -> ceil(300/128) = 3 groups; 4-bit with zero points; N=10, M=2.
        let w = spec(2, 10, 300, Precision::Bf16, affine(4, 128, true)).work().unwrap();
        let a = 2.0 * 300.0 * 2.0; // 1200
        let wq = 300.0 * 10.0 * 4.0 / 8.0; // 1500
        let scales = 3.0 * 10.0 * 2.0; // 60
        let zp = 3.0 * 10.0 * 4.0 / 8.0; // 15
        assert_eq!(w.bytes_read, a + wq + scales + zp);
        assert_eq!(w.bytes_written, 2.0 * 10.0 * 2.0);
        assert!(w.bytes_formula.contains("ceil(K/128)*N*2 (scales)"), "{}", w.bytes_formula);
        assert!(w.bytes_formula.contains("ceil(K/128)*N*4/8 (zero points)"), "{}", w.bytes_formula);
    }

    #[test]
    fn ggml_block_sizes() {
        // Q4_0: 18 bytes per 32 weights; K=N=4096 -> 4096*4096/32*18 = 9,437,184
        let w = spec(1, 4096, 4096, Precision::Fp16, WeightFormat::Q4_0).work().unwrap();
        assert_eq!(w.bytes_read, 8192.0 + 9_437_184.0);
        assert_eq!(WeightFormat::Q4_0.bits_per_weight(), 4.5);
        // Q8_0: 34 bytes per 32 weights -> 4096*4096/32*34 = 17,825,792
        let w = spec(1, 4096, 4096, Precision::Fp16, WeightFormat::Q8_0).work().unwrap();
        assert_eq!(w.bytes_read, 8192.0 + 17_825_792.0);
        assert_eq!(WeightFormat::Q8_0.bits_per_weight(), 8.5);
        assert_eq!(affine(3, 128, false).bits_per_weight(), 3.125);
        assert_eq!(fmt_bits_per_weight(affine(3, 128, false)), "3.125");
        assert_eq!(fmt_bits_per_weight(affine(2, 3, false)), "7.3333");
        assert_eq!(fmt_bits_per_weight(affine(8, 16, false)), "9");
    }

    #[test]
    fn invalid_formats_are_rejected() {
        let e = spec(1, 64, 100, Precision::Fp16, WeightFormat::Q4_0).work().unwrap_err();
        assert!(matches!(e, OpError::Invalid(ref s) if s.contains("multiple of 32")), "{e}");
        let e = spec(1, 64, 64, Precision::Fp16, affine(0, 64, false)).work().unwrap_err();
        assert_eq!(e, OpError::ZeroDim { name: "bits", value: 0 });
        let e = spec(1, 64, 64, Precision::Fp16, affine(16, 64, false)).work().unwrap_err();
        assert!(matches!(e, OpError::Invalid(_)));
        let e = spec(1, 64, 64, Precision::Fp16, affine(4, 0, false)).work().unwrap_err();
        assert_eq!(e, OpError::ZeroDim { name: "group_size", value: 0 });
        let e = spec(1, 0, 64, Precision::Fp16, affine(4, 64, false)).work().unwrap_err();
        assert_eq!(e, OpError::ZeroDim { name: "n", value: 0 });
    }

    #[test]
    fn circulated_17x_fusion_example_as_stated() {
        // The "~17×" example in circulation
        // (docs/reference/formulas.md#fusing-dequantization-into-the-matmul): M=1, K=N=4096, Q4_0.
        let s = QuantGemmSpec {
            m: 1,
            n: 4096,
            k: 4096,
            act_dtype: Precision::Fp32,
            format: WeightFormat::Q4_0,
            out_dtype: None,
        };
        let f = s.dequant_fusion(Precision::Fp32).unwrap();
        let circ = f.as_circulated.unwrap();
        // Unfused: K*N/4 + K*N*4 + K*N*4 = 4,194,304 + 67,108,864 + 67,108,864
        assert_eq!(circ.unfused_bytes, 138_412_032.0);
        // Fused: K*N/4*2 + M*K*4 + M*N*4 = 8,388,608 + 16,384 + 16,384 = 8,421,376.
        // The example prints "Write Output: M*N*4 = 65,536 bytes" and "~8.5 MB"; its own
        // formula gives 1*4096*4 = 16,384. With its 65,536 the total is 8,470,528 B
        // (8.47 MB) and the ratio 16.34; by the formula 16.44. Neither is 17.
        assert_eq!(circ.fused_bytes, 8_421_376.0);
        assert!((circ.saving - 16.4358).abs() < 1e-4);
        assert!((138_412_032.0 / (8_388_608.0 + 16_384.0 + 65_536.0) - 16.3404_f64).abs() < 1e-4);
        assert!(circ.assumptions.iter().any(|a| a.contains("2 bits/weight")));
        assert!(circ.assumptions.iter().any(|a| a.contains("twice")));
        assert!(circ.assumptions.iter().any(|a| a.contains("FP32")));
    }

    #[test]
    fn minimal_fusion_counts_real_q4_0_once() {
        let s = QuantGemmSpec {
            m: 1,
            n: 4096,
            k: 4096,
            act_dtype: Precision::Fp32,
            format: WeightFormat::Q4_0,
            out_dtype: None,
        };
        let f = s.dequant_fusion(Precision::Fp32).unwrap();
        // Q4_0 = 4096*4096*18/32 = 9,437,184 (quants 8,388,608 + scales 1,048,576)
        // unfused = 9,437,184 + 2*67,108,864 + 16,384 + 16,384 = 143,687,680
        assert_eq!(f.minimal.unfused_bytes, 143_687_680.0);
        // fused = 9,437,184 + 16,384 + 16,384 = 9,469,952
        assert_eq!(f.minimal.fused_bytes, 9_469_952.0);
        assert!((f.minimal.saving - 15.1730).abs() < 1e-4);
        // FP16 everywhere: unfused 9,437,184 + 2*33,554,432 + 8,192 + 8,192 = 76,562,432;
        // fused 9,437,184 + 8,192 + 8,192 = 9,453,568; 8.10x
        let s16 = QuantGemmSpec { act_dtype: Precision::Fp16, ..s };
        let f = s16.dequant_fusion(Precision::Fp16).unwrap();
        assert_eq!(f.minimal.unfused_bytes, 76_562_432.0);
        assert_eq!(f.minimal.fused_bytes, 9_453_568.0);
        assert!((f.minimal.saving - 8.0988).abs() < 1e-4);
        // No circulated counting for formats that example does not describe.
        let g = QuantGemmSpec { format: WeightFormat::Q8_0, ..s }
            .dequant_fusion(Precision::Fp32)
            .unwrap();
        assert!(g.as_circulated.is_none());
    }
}
