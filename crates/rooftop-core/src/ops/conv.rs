//! 2-D convolution (NCHW input, KCRS weights, cross-correlation as in PyTorch/cuDNN).
//!
//! Output size (PyTorch `Conv2d` docs):
//! `P = floor((H + 2*pad_h - dilation_h*(R-1) - 1) / stride_h) + 1`, likewise Q from W.
//!
//! FLOPs: `2*N*K*P*Q*(C/groups)*R*S` (one multiply-add per weight per output element),
//! plus `N*K*P*Q` bias adds — TraceLens `CONV.flops_func`.
//!
//! Bytes (minimum DRAM traffic): input `N*C*H*W`, weights `K*(C/groups)*R*S` and the bias
//! `K` read once, output `N*K*P*Q` written once — TraceLens `CONV.bytes_func`.
//!
//! Unit: the matrix unit (implicit GEMM). FP32 convolutions are modelled as TF32 on the
//! matrix unit because PyTorch's `torch.backends.cudnn.allow_tf32` defaults to True; a
//! device without TF32 falls back to its FP32 roofs.

use super::count::{self, bpe, dim, Terms};
use super::{OpClass, OpError, Work};
use crate::units::{ExecUnit, Precision};
use serde::{Deserialize, Serialize};

/// A 2-D convolution.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Conv2dSpec {
    /// Batch N.
    pub n: u64,
    /// Input channels C.
    pub c: u64,
    /// Input height H.
    pub h: u64,
    /// Input width W.
    pub w: u64,
    /// Output channels K.
    pub k: u64,
    /// Filter height R.
    pub r: u64,
    /// Filter width S.
    pub s: u64,
    /// Stride (height, width).
    pub stride: (u64, u64),
    /// Zero padding on each side (height, width).
    pub pad: (u64, u64),
    /// Dilation (height, width).
    pub dilation: (u64, u64),
    /// Groups (1 dense, C depthwise); divides C and K.
    pub groups: u64,
    /// Storage precision of input, weights, bias and output.
    pub dtype: Precision,
    /// Adds a bias of K elements.
    pub bias: bool,
}

/// Output extent along one axis, or why the kernel does not fit.
fn out_extent(
    axis: &str,
    input: u128,
    pad: u128,
    filter: u128,
    stride: u128,
    dilation: u128,
) -> Result<u128, OpError> {
    // Every operand is below 2^64, so these cannot overflow u128.
    let padded = input + 2 * pad;
    let span = dilation * (filter - 1) + 1;
    if span > padded {
        return Err(OpError::Invalid(format!(
            "the dilated filter spans {span} {axis} elements (dilation*(filter-1)+1) but the padded \
             input has only {padded} (input + 2*pad)"
        )));
    }
    Ok((padded - span) / stride + 1)
}

impl Conv2dSpec {
    /// Output height and width `(P, Q)`.
    // N, C, H, W, K, R, S, P, Q are the names the formulas use.
    #[allow(clippy::many_single_char_names)]
    pub fn output_hw(&self) -> Result<(u64, u64), OpError> {
        let h = dim("h", self.h)?;
        let w = dim("w", self.w)?;
        let r = dim("r", self.r)?;
        let s = dim("s", self.s)?;
        let sh = dim("stride_h", self.stride.0)?;
        let sw = dim("stride_w", self.stride.1)?;
        let dh = dim("dilation_h", self.dilation.0)?;
        let dw = dim("dilation_w", self.dilation.1)?;
        let p = out_extent("rows", h, u128::from(self.pad.0), r, sh, dh)?;
        let q = out_extent("columns", w, u128::from(self.pad.1), s, sw, dw)?;
        // P <= H + 2*pad < 3*2^64 may exceed u64 only for absurd padding.
        let p = u64::try_from(p).map_err(|_| count::overflow("output height"))?;
        let q = u64::try_from(q).map_err(|_| count::overflow("output width"))?;
        Ok((p, q))
    }

    /// The FLOPs and minimum DRAM bytes of this convolution.
    #[allow(clippy::many_single_char_names)]
    pub fn work(&self) -> Result<Work, OpError> {
        let n = dim("n", self.n)?;
        let c = dim("c", self.c)?;
        let h = dim("h", self.h)?;
        let w = dim("w", self.w)?;
        let k = dim("k", self.k)?;
        let r = dim("r", self.r)?;
        let s = dim("s", self.s)?;
        let g = dim("groups", self.groups)?;
        if c % g != 0 || k % g != 0 {
            return Err(OpError::Invalid(format!(
                "groups ({}) must divide both input channels c ({}) and output channels k ({})",
                self.groups, self.c, self.k
            )));
        }
        let (pv, qv) = self.output_hw()?;
        let (p, q) = (u128::from(pv), u128::from(qv));
        let cg = c / g;
        let (nv, cv, hv, wv, kv, rv, sv, gv) =
            (self.n, self.c, self.h, self.w, self.k, self.r, self.s, self.groups);
        let cgv = self.c / self.groups;
        let x = self.dtype;
        let sx = bpe(x);
        let xb = u128::from(x.bits());

        let mut flops = Terms::new();
        flops.push(
            "conv",
            "2*N*K*P*Q*(C/groups)*R*S",
            format!("2*{nv}*{kv}*{pv}*{qv}*{cgv}*{rv}*{sv}"),
            count::mul("FLOPs", &[2, n, k, p, q, cg, r, s])?,
        );
        if self.bias {
            flops.push(
                "bias",
                "N*K*P*Q",
                format!("{nv}*{kv}*{pv}*{qv}"),
                count::mul("FLOPs", &[n, k, p, q])?,
            );
        }

        let mut read = Terms::new();
        read.push(
            "input",
            format!("N*C*H*W*{sx}"),
            format!("{nv}*{cv}*{hv}*{wv}*{sx}"),
            count::mul("bytes of the input", &[n, c, h, w, xb])?,
        );
        read.push(
            "weights",
            format!("K*(C/groups)*R*S*{sx}"),
            format!("{kv}*{cgv}*{rv}*{sv}*{sx}"),
            count::mul("bytes of the weights", &[k, cg, r, s, xb])?,
        );
        if self.bias {
            read.push(
                "bias",
                format!("K*{sx}"),
                format!("{kv}*{sx}"),
                count::mul("bytes of the bias", &[k, xb])?,
            );
        }
        let mut write = Terms::new();
        write.push(
            "output",
            format!("N*K*P*Q*{sx}"),
            format!("{nv}*{kv}*{pv}*{qv}*{sx}"),
            count::mul("bytes of the output", &[n, k, p, q, xb])?,
        );

        let (precision, unit) = if x == Precision::Fp32 {
            (Precision::Tf32, ExecUnit::Matrix)
        } else {
            (x, count::default_matmul_unit(x))
        };
        let mut assumptions = vec![
            format!(
                "output P×Q = {pv}×{qv} from P = floor((H + 2*pad - dilation*(R-1) - 1)/stride) + 1"
            ),
            "input, weights and output cross DRAM once (an im2col buffer, if the algorithm \
             materialises one, is extra traffic)"
                .to_string(),
        ];
        if self.bias {
            assumptions.push("bias: K values read once, N*K*P*Q adds counted as FLOPs".to_string());
        }
        if x == Precision::Fp32 {
            assumptions.push(
                "fp32 runs as TF32 on the matrix unit (torch.backends.cudnn.allow_tf32 defaults to \
                 True); devices without TF32 fall back to their fp32 roofs"
                    .to_string(),
            );
        }
        let shape = format!(
            "N={nv} C={cv} H={hv} W={wv} K={kv} R={rv} S={sv} stride={}x{} pad={}x{} dil={}x{} \
             groups={gv} {x}{} -> P={pv} Q={qv}",
            self.stride.0,
            self.stride.1,
            self.pad.0,
            self.pad.1,
            self.dilation.0,
            self.dilation.1,
            if self.bias { " +bias" } else { "" },
        );

        Ok(Work {
            class: OpClass::Conv,
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
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: f64 = 1_048_576.0;

    fn conv(n: u64, c: u64, hw: u64, k: u64, rs: u64, stride: u64, pad: u64) -> Conv2dSpec {
        Conv2dSpec {
            n,
            c,
            h: hw,
            w: hw,
            k,
            r: rs,
            s: rs,
            stride: (stride, stride),
            pad: (pad, pad),
            dilation: (1, 1),
            groups: 1,
            dtype: Precision::Bf16,
            bias: false,
        }
    }

    #[test]
    fn resnet_3x3_by_hand() {
        // N=1 C=64 56×56 K=64 3×3 stride 1 pad 1 fp16: P = (56 + 2 - 2 - 1)/1 + 1 = 56.
        let spec = Conv2dSpec { dtype: Precision::Fp16, ..conv(1, 64, 56, 64, 3, 1, 1) };
        assert_eq!(spec.output_hw(), Ok((56, 56)));
        let w = spec.work().unwrap();
        // 2*1*64*56*56*64*3*3 = 231,211,008
        assert_eq!(w.flops, 231_211_008.0);
        // input 64*56*56*2 = 401,408; weights 64*64*9*2 = 73,728
        assert_eq!(w.bytes_read, 401_408.0 + 73_728.0);
        // output 64*56*56*2 = 401,408
        assert_eq!(w.bytes_written, 401_408.0);
        assert_eq!(w.unit, ExecUnit::Matrix);
    }

    #[test]
    fn stride_dilation_and_groups() {
        // H=W=10, R=S=3, dilation 2, stride 2, pad 0: span 2*2+1 = 5; P = (10-5)/2 + 1 = 3.
        // Depthwise: C=K=groups=8, N=2, fp32 with bias.
        let spec = Conv2dSpec {
            dilation: (2, 2),
            groups: 8,
            dtype: Precision::Fp32,
            bias: true,
            ..conv(2, 8, 10, 8, 3, 2, 0)
        };
        assert_eq!(spec.output_hw(), Ok((3, 3)));
        let w = spec.work().unwrap();
        // 2*2*8*3*3*1*3*3 + 2*8*3*3 = 2,592 + 144
        assert_eq!(w.flops, 2_736.0);
        // input 2*8*10*10*4 = 6,400; weights 8*1*3*3*4 = 288; bias 8*4 = 32
        assert_eq!(w.bytes_read, 6_720.0);
        // output 2*8*3*3*4 = 576
        assert_eq!(w.bytes_written, 576.0);
        assert_eq!((w.precision, w.unit), (Precision::Tf32, ExecUnit::Matrix));
    }

    #[test]
    fn rectangular_output() {
        // H=7 W=12, R=3 S=5, stride (2, 3), pad (1, 2): P = (7+2-3)/2+1 = 4, Q = (12+4-5)/3+1 = 4.
        let spec = Conv2dSpec {
            h: 7,
            w: 12,
            r: 3,
            s: 5,
            stride: (2, 3),
            pad: (1, 2),
            ..conv(1, 1, 1, 1, 1, 1, 0)
        };
        assert_eq!(spec.output_hw(), Ok((4, 4)));
    }

    #[test]
    fn invalid_shapes() {
        // A 5×5 filter on a 3×3 input without padding does not fit.
        let e = conv(1, 1, 3, 1, 5, 1, 0).work().unwrap_err();
        assert!(matches!(e, OpError::Invalid(ref s) if s.contains("spans 5")), "{e}");
        let e = Conv2dSpec { groups: 3, ..conv(1, 4, 8, 4, 3, 1, 1) }.work().unwrap_err();
        assert!(matches!(e, OpError::Invalid(ref s) if s.contains("groups (3)")), "{e}");
        let e = Conv2dSpec { stride: (1, 0), ..conv(1, 4, 8, 4, 3, 1, 1) }.work().unwrap_err();
        assert_eq!(e, OpError::ZeroDim { name: "stride_w", value: 0 });
        let e = Conv2dSpec { dilation: (0, 1), ..conv(1, 4, 8, 4, 3, 1, 1) }.work().unwrap_err();
        assert_eq!(e, OpError::ZeroDim { name: "dilation_h", value: 0 });
    }

    #[test]
    fn tracelens_falconsai_patch_embedding() {
        // tracelens_h100/Falconsai_nsfw_image_detection__1016002_perf_report_csvs/CONV_fwd.csv
        // (same in tracelens_mi300): conv2d input (4, 3, 224, 224), filter (768, 3, 16, 16),
        // stride (16, 16), padding (0, 0), dilation (1, 1), groups 1, bf16, bias False,
        // GFLOPS_first=0.924844032, Data Moved (MB)_first=3.421875
        let spec = conv(4, 3, 224, 768, 16, 16, 0);
        assert_eq!(spec.output_hw(), Ok((14, 14)));
        let w = spec.work().unwrap();
        // 2*4*768*14*14*3*16*16 = 924,844,032
        assert_eq!(w.flops, 924_844_032.0);
        // input 4*3*224*224*2 = 1,204,224; weights 768*3*16*16*2 = 1,179,648;
        // output 4*768*14*14*2 = 1,204,224 -> 3,588,096 B = 3.421875 MiB
        assert_eq!(w.bytes(), 3_588_096.0);
        assert_eq!(w.bytes() / MIB, 3.421_875);
        // TraceLens's row says bias False, yet its Input Dims list a [768] bias tensor
        // (ViT patch embedding has one). With the bias: +768*2 B read, +4*768*14*14 adds.
        let wb = Conv2dSpec { bias: true, ..spec }.work().unwrap();
        assert_eq!(wb.bytes() - w.bytes(), 1_536.0);
        assert_eq!(wb.flops - w.flops, 602_112.0);
    }
}
