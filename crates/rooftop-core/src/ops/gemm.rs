//! Dense GEMM: `C[M×N] = A[M×K] · B[K×N] (+ bias[N])`, optionally batched.
//!
//! FLOPs: `2*M*N*K*batch` (one multiply-add = 2 FLOPs, docs/reference/formulas.md), plus
//! `M*N*batch` bias adds when there is a bias (TraceLens `GEMM.flops_func` counts them the
//! same way, which is what makes our numbers equal its goldens).
//!
//! Bytes (minimum DRAM traffic): `(M*K + K*N)*in*batch` read, `M*N*out*batch` written, plus
//! `N*out` read once for a bias vector — docs/reference/formulas.md#work-models and
//! TraceLens `GEMM.bytes_func`.
//!
//! Unit: the matrix unit except for FP32, which cuBLAS SGEMM runs on CUDA cores (FFMA)
//! unless TF32 is enabled; `unit` overrides this (CDNA FP32 GEMMs use MFMA).

use super::count::{self, bpe, default_matmul_unit, dim, Terms};
use super::{OpClass, OpError, Work};
use crate::units::{ExecUnit, Precision};
use serde::{Deserialize, Serialize};
use std::fmt::Write as _;

/// A dense (optionally batched) matrix multiply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct GemmSpec {
    /// Rows of A and C.
    pub m: u64,
    /// Columns of B and C.
    pub n: u64,
    /// The reduction dimension.
    pub k: u64,
    /// Independent GEMMs of this shape (1 for a plain GEMM); each has its own A, B, C.
    pub batch: u64,
    /// Storage precision of A and B; also the precision whose roof applies.
    pub dtype: Precision,
    /// Storage precision of C (and of the bias); `None` means `dtype`.
    pub out_dtype: Option<Precision>,
    /// Adds a bias vector of N elements (`aten::addmm`, `nn.Linear` with bias).
    pub bias: bool,
    /// Execution unit override; `None` picks matrix, except vector for FP32.
    pub unit: Option<ExecUnit>,
}

impl GemmSpec {
    /// A plain GEMM: batch 1, output in `dtype`, no bias, default unit.
    pub fn new(m: u64, n: u64, k: u64, dtype: Precision) -> GemmSpec {
        GemmSpec { m, n, k, batch: 1, dtype, out_dtype: None, bias: false, unit: None }
    }

    /// The FLOPs and minimum DRAM bytes of this GEMM.
    // M, N, K are the names the formulas use.
    #[allow(clippy::many_single_char_names)]
    pub fn work(&self) -> Result<Work, OpError> {
        let m = dim("m", self.m)?;
        let n = dim("n", self.n)?;
        let k = dim("k", self.k)?;
        let b = dim("batch", self.batch)?;
        let inp = self.dtype;
        let out = self.out_dtype.unwrap_or(inp);
        let (mv, nv, kv, bv) = (self.m, self.n, self.k, self.batch);

        let mut flops = Terms::new();
        flops.push(
            "matmul",
            "2*M*N*K*batch",
            format!("2*{mv}*{nv}*{kv}*{bv}"),
            count::mul("FLOPs", &[2, m, n, k, b])?,
        );
        if self.bias {
            flops.push(
                "bias",
                "M*N*batch",
                format!("{mv}*{nv}*{bv}"),
                count::mul("FLOPs", &[m, n, b])?,
            );
        }

        let (bi, bo) = (u128::from(inp.bits()), u128::from(out.bits()));
        let (si, so) = (bpe(inp), bpe(out));
        let mut read = Terms::new();
        read.push(
            "A",
            format!("M*K*{si}*batch"),
            format!("{mv}*{kv}*{si}*{bv}"),
            count::mul("bytes of A", &[m, k, bi, b])?,
        );
        read.push(
            "B",
            format!("K*N*{si}*batch"),
            format!("{kv}*{nv}*{si}*{bv}"),
            count::mul("bytes of B", &[k, n, bi, b])?,
        );
        if self.bias {
            read.push(
                "bias",
                format!("N*{so}"),
                format!("{nv}*{so}"),
                count::mul("bytes of bias", &[n, bo])?,
            );
        }
        let mut write = Terms::new();
        write.push(
            "C",
            format!("M*N*{so}*batch"),
            format!("{mv}*{nv}*{so}*{bv}"),
            count::mul("bytes of C", &[m, n, bo, b])?,
        );

        let unit = self.unit.unwrap_or_else(|| default_matmul_unit(inp));
        let mut assumptions = vec![
            "A, B and C each cross DRAM exactly once per batch entry (perfect on-chip reuse); \
             kernels whose tiles miss in L2 re-read A and B"
                .to_string(),
            "C is written, not read (beta = 0)".to_string(),
        ];
        if self.batch > 1 {
            assumptions.push(
                "every batch entry has its own A and B (bmm); a weight shared across the batch \
                 is read once: model that as one GEMM with M*batch rows"
                    .to_string(),
            );
        }
        if self.bias {
            assumptions.push(
                "the bias is one N-vector in the output precision, read once; its M*N adds are \
                 counted as FLOPs (as TraceLens does)"
                    .to_string(),
            );
        }
        match (self.unit, inp) {
            (None, Precision::Fp32) => assumptions.push(
                "fp32 runs on the vector unit: cuBLAS SGEMM uses FFMA unless TF32 is allowed \
                 (PyTorch default off since 1.12); use dtype tf32 for tensor cores, or the matrix \
                 units for MFMA fp32 GEMMs on CDNA (--matrix-units)"
                    .to_string(),
            ),
            (Some(u), _) => assumptions.push(format!("execution unit set to {u} by the caller")),
            (None, _) => {}
        }

        let mut shape = format!("M={mv} N={nv} K={kv}");
        if self.batch > 1 {
            let _ = write!(shape, " batch={bv}");
        }
        let _ = write!(shape, " {inp}");
        if out != inp {
            let _ = write!(shape, "->{out}");
        }
        if self.bias {
            shape.push_str(" +bias");
        }

        Ok(Work {
            class: OpClass::Gemm,
            shape,
            flops: count::to_f64(flops.total("FLOPs")?),
            precision: inp,
            unit,
            bytes_read: count::bits_to_bytes(read.total("bytes read")?),
            bytes_written: count::bits_to_bytes(write.total("bytes written")?),
            flops_formula: flops.flops_formula("FLOPs")?,
            bytes_formula: count::rw_formula(&read, &write)?,
            assumptions,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// TraceLens writes "Data Moved (MB)" in MiB.
    const MIB: f64 = 1_048_576.0;

    fn addmm_bf16(m: u64, n: u64, k: u64) -> Work {
        GemmSpec { bias: true, ..GemmSpec::new(m, n, k, Precision::Bf16) }.work().unwrap()
    }

    #[test]
    fn decode_shape_fp16() {
        // The decode shape M=1 N=4096 K=4096 unquantized: fp16, no bias.
        let w = GemmSpec::new(1, 4096, 4096, Precision::Fp16).work().unwrap();
        assert_eq!(w.flops, 2.0 * 4096.0 * 4096.0); // 33,554,432
                                                    // read (1*4096 + 4096*4096)*2 = 8192 + 33,554,432 = 33,562,624
        assert_eq!(w.bytes_read, 33_562_624.0);
        // write 1*4096*2 = 8192
        assert_eq!(w.bytes_written, 8192.0);
        assert_eq!(w.class, OpClass::Gemm);
        assert_eq!(w.unit, ExecUnit::Matrix);
        assert_eq!(w.precision, Precision::Fp16);
        assert_eq!(w.shape, "M=1 N=4096 K=4096 fp16");
        assert_eq!(w.flops_formula, "2*M*N*K*batch (matmul) = 2*1*4096*4096*1 = 33554432");
        assert!(w.bytes_formula.contains("= 33562624 B"), "{}", w.bytes_formula);
    }

    #[test]
    fn batch_bias_and_out_dtype() {
        // batch 3, M=2 N=5 K=7, fp16 in, fp32 out, bias.
        let w = GemmSpec {
            m: 2,
            n: 5,
            k: 7,
            batch: 3,
            dtype: Precision::Fp16,
            out_dtype: Some(Precision::Fp32),
            bias: true,
            unit: None,
        }
        .work()
        .unwrap();
        // 2*2*5*7*3 + 2*5*3 = 420 + 30
        assert_eq!(w.flops, 450.0);
        // (2*7 + 7*5)*2*3 + 5*4 = 294 + 20
        assert_eq!(w.bytes_read, 314.0);
        // 2*5*4*3
        assert_eq!(w.bytes_written, 120.0);
        assert_eq!(w.shape, "M=2 N=5 K=7 batch=3 fp16->fp32 +bias");
    }

    #[test]
    fn fp32_defaults_to_vector_and_can_be_overridden() {
        let w = GemmSpec::new(64, 64, 64, Precision::Fp32).work().unwrap();
        assert_eq!(w.unit, ExecUnit::Vector);
        let w =
            GemmSpec { unit: Some(ExecUnit::Matrix), ..GemmSpec::new(64, 64, 64, Precision::Fp32) }
                .work()
                .unwrap();
        assert_eq!(w.unit, ExecUnit::Matrix);
        assert_eq!(GemmSpec::new(8, 8, 8, Precision::Tf32).work().unwrap().unit, ExecUnit::Matrix);
    }

    #[test]
    fn sub_byte_inputs_are_exact() {
        // int4 A, B and C (output defaults to the input precision): M=N=K=3
        let w = GemmSpec::new(3, 3, 3, Precision::Int4).work().unwrap();
        // (9 + 9) * 0.5 = 9 bytes read, 9 * 0.5 = 4.5 written
        assert_eq!(w.bytes_read, 9.0);
        assert_eq!(w.bytes_written, 4.5);
        assert!(w.bytes_formula.contains("= 4.5 B"), "{}", w.bytes_formula);
    }

    #[test]
    fn zero_dims_are_named() {
        let e = GemmSpec::new(0, 1, 1, Precision::Fp16).work().unwrap_err();
        assert_eq!(e, OpError::ZeroDim { name: "m", value: 0 });
        let e =
            GemmSpec { batch: 0, ..GemmSpec::new(1, 1, 1, Precision::Fp16) }.work().unwrap_err();
        assert_eq!(e, OpError::ZeroDim { name: "batch", value: 0 });
    }

    #[test]
    fn huge_shapes_overflow_cleanly() {
        let e = GemmSpec {
            batch: u64::MAX,
            ..GemmSpec::new(u64::MAX, u64::MAX, u64::MAX, Precision::Fp64)
        }
        .work()
        .unwrap_err();
        assert!(matches!(e, OpError::Overflow(_)));
    }

    // TraceLens goldens: `aten::addmm` rows (bias=True, bf16) of GEMM.csv. TraceLens
    // counts 2*M*N*K + M*N FLOPs and (M*K + K*N + M*N + N)*2 bytes, as we do.

    #[test]
    fn tracelens_h100_bert_addmm_141x512x512() {
        // tracelens_h100/gaunernst_bert-small-uncased__1016001_perf_report_csvs/GEMM.csv:
        // M=141 N=512 K=512 bias=True bf16, GFLOPS_first=0.0739968,
        // Data Moved (MB)_first=0.7763671875
        let w = addmm_bf16(141, 512, 512);
        // 2*141*512*512 + 141*512 = 73,924,608 + 72,192
        assert_eq!(w.flops, 73_996_800.0);
        assert_eq!(w.flops, 0.073_996_8e9);
        // (141*512 + 512*512 + 512)*2 read = 669,696; 141*512*2 written = 144,384
        assert_eq!(w.bytes_read, 669_696.0);
        assert_eq!(w.bytes_written, 144_384.0);
        assert_eq!(w.bytes() / MIB, 0.776_367_187_5);
    }

    #[test]
    fn tracelens_h100_bert_addmm_vocab_projection() {
        // tracelens_h100/gaunernst_bert-small-uncased__1016001_perf_report_csvs/GEMM.csv:
        // M=141 N=30522 K=512 bias=True bf16, GFLOPS_first=4.41119205,
        // Data Moved (MB)_first=38.211021423339844
        let w = addmm_bf16(141, 30522, 512);
        // 2*141*30522*512 + 141*30522 = 4,406,888,448 + 4,303,602
        assert_eq!(w.flops, 4_411_192_050.0);
        // (141*512 + 512*30522 + 30522 + 141*30522)*2 = 40,067,160
        assert_eq!(w.bytes(), 40_067_160.0);
        assert_eq!(w.bytes() / MIB, 38.211_021_423_339_844);
    }

    #[test]
    fn tracelens_falconsai_addmm_rows() {
        // tracelens_h100/Falconsai_nsfw_image_detection__1016002_perf_report_csvs/GEMM.csv
        // (identical rows in tracelens_mi300/…/GEMM.csv):
        // M=788 N=768 K=768: GFLOPS_first=0.930167808, MB=3.43505859375
        let w = addmm_bf16(788, 768, 768);
        assert_eq!(w.flops, 930_167_808.0);
        assert_eq!(w.bytes() / MIB, 3.435_058_593_75);
        // M=788 N=3072 K=768: GFLOPS_first=3.720671232, MB=10.27734375
        let w = addmm_bf16(788, 3072, 768);
        assert_eq!(w.flops, 3_720_671_232.0);
        assert_eq!(w.bytes() / MIB, 10.277_343_75);
        // M=788 N=768 K=3072: GFLOPS_first=3.71885568, MB=10.27294921875
        let w = addmm_bf16(788, 768, 3072);
        assert_eq!(w.flops, 3_718_855_680.0);
        assert_eq!(w.bytes() / MIB, 10.272_949_218_75);
        // M=4 N=768 K=768: GFLOPS_first=0.004721664, MB=1.13818359375
        let w = addmm_bf16(4, 768, 768);
        assert_eq!(w.flops, 4_721_664.0);
        assert_eq!(w.bytes() / MIB, 1.138_183_593_75);
    }

    #[test]
    fn tracelens_mi300_bert_addmm_2048() {
        // tracelens_mi300/gaunernst_bert-small-uncased__1016001_perf_report_csvs/GEMM.csv:
        // M=141 N=2048 K=512: GFLOPS_first=0.2959872, MB=2.6923828125
        let w = addmm_bf16(141, 2048, 512);
        assert_eq!(w.flops, 295_987_200.0);
        assert_eq!(w.bytes() / MIB, 2.692_382_812_5);
        // M=141 N=512 K=2048: GFLOPS_first=0.295770624, MB=2.689453125
        let w = addmm_bf16(141, 512, 2048);
        assert_eq!(w.flops, 295_770_624.0);
        assert_eq!(w.bytes() / MIB, 2.689_453_125);
    }
}
