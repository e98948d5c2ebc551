//! cuBLAS / cuDNN `sm{arch}_xmma_*` names.
//!
//! `sm{arch}_xmma_{op}_{ABtypes}_{Ctype}{Acc}_{Epi}_{ab}_{c}_tilesize{M}x{N}x{K}[_stage{S}]
//! [_warpsize..][_warpgroupsize..]..._execute_segment_k_{on|off}_kernel__5x_cublas`
//! (docs/reference/kernel-names.md). `op` is `gemm` or `{fprop,dgrad,wgrad}_implicit_gemm` (cuDNN
//! convolutions, whose layout field is a tensor format such as `nhwckrsc_nchw`). The `tn_n`
//! letters are op(A), op(B) and C; the tile M is the BLAS M. The middle fields are matched
//! loosely (`\w*?`) because cuDNN adds words such as `indexed`, which a stricter pattern would
//! not accept.

use std::sync::LazyLock;

use regex::Regex;

use super::{cap_u32, layout_from_letters, regex, set_tile, triple, GemmKernelInfo, KernelFamily};

static XMMA: LazyLock<Regex> = LazyLock::new(|| {
    regex(
        r"(?:^|[^A-Za-z0-9])sm(?P<arch>[0-9]+)_xmma_(?P<op>gemm|fprop_implicit_gemm|dgrad_implicit_gemm|wgrad_implicit_gemm)_(?P<mid>[0-9A-Za-z_]*?)_?tilesize(?P<m>[0-9]+)x(?P<n>[0-9]+)x(?P<k>[0-9]+)(?P<rest>[0-9A-Za-z_]*)",
    )
});
static GEMM_LAYOUT: LazyLock<Regex> = LazyLock::new(|| regex(r"(?:^|_)(?P<ab>[nt]{2})_[nt]$"));
static STAGE: LazyLock<Regex> = LazyLock::new(|| regex(r"_stage(?P<v>[0-9]+)(?:_|$)"));
static WARPGROUP: LazyLock<Regex> =
    LazyLock::new(|| regex(r"_warpgroupsize(?P<v>[0-9]+x[0-9]+x[0-9]+)"));
static SEGMENT_K: LazyLock<Regex> = LazyLock::new(|| regex(r"_execute_segment_k_(?P<v>on|off)"));

pub(super) fn parse(name: &str) -> Option<GemmKernelInfo> {
    // A literal every match contains: most names fail here, before the regex is compiled.
    if !name.contains("_xmma_") {
        return None;
    }
    let caps = XMMA.captures(name)?;
    let conv = caps.name("op").is_some_and(|op| op.as_str() != "gemm");
    // cuBLAS xmma GEMMs are column-major BLAS; convolutions have no matmul M/N to swap.
    let mut info = GemmKernelInfo::new(KernelFamily::CublasXmma, !conv);
    info.implicit_conv = conv;
    let arch = caps.name("arch").map_or("", |a| a.as_str());
    info.arch = Some(format!("sm{arch}"));
    set_tile(&mut info, &caps, "m", "n", Some("k"));

    let mid = caps.name("mid").map_or("", |m| m.as_str());
    if !conv {
        info.layout = GEMM_LAYOUT
            .captures(mid)
            .and_then(|l| l.name("ab"))
            .and_then(|ab| layout_from_letters(ab.as_str()));
        if info.layout.is_none() {
            info.note("layout unknown: no {ab}_{c} field before tilesize");
        }
    }

    let rest = caps.name("rest").map_or("", |r| r.as_str());
    info.stages = STAGE.captures(rest).and_then(|s| cap_u32(&s, "v"));
    if let Some(wg) =
        WARPGROUP.captures(rest).and_then(|w| w.name("v")).and_then(|v| triple(v.as_str()))
    {
        // The field counts consumer warpgroups; the CTA's thread count is not derivable from
        // it (the H100 goldens launch `warpgroupsize1x1x1` kernels with 384 threads).
        if let Some(g) = wg.iter().try_fold(1u32, |acc, &x| acc.checked_mul(x)) {
            info.note(crate::diagnose::count(
                u64::from(g),
                "consumer warpgroup",
                "consumer warpgroups",
            ));
        }
    }
    if SEGMENT_K.captures(rest).and_then(|s| s.name("v")).is_some_and(|v| v.as_str() == "on") {
        info.note("execute_segment_k_on: K may be segmented (partial-K tiles possible)");
    }
    if arch.parse::<u32>().is_ok_and(|a| a >= 90) && !conv {
        // In the TraceLens H100 goldens none of the three sm90_xmma launches had a grid equal
        // to its tile count (30 CTAs for 24 tiles, 98 for 168, 98 for 78).
        info.persistent = true;
        info.note(
            "sm90 xmma: launch grid does not follow the tile count (persistent or K-segmented \
             scheduling observed in real traces)",
        );
    }
    Some(info)
}

#[cfg(test)]
mod tests {
    use crate::gemm_tiles::{parse_kernel_name, GemmKernelInfo, KernelFamily, Transpose};

    fn p(name: &str) -> GemmKernelInfo {
        parse_kernel_name(name).expect("parses")
    }

    #[test]
    fn sm80_gemm_with_stages() {
        let i = p("sm80_xmma_gemm_f16f16_f16f32_f32_nn_n_tilesize160x128x32_stage4_warpsize2x2x1_tensor16x8x16_kernel");
        assert_eq!(i.family, KernelFamily::CublasXmma);
        assert_eq!((i.mt_m, i.mt_n, i.mt_k, i.stages), (Some(160), Some(128), Some(32), Some(4)));
        assert_eq!(i.layout, Some((Transpose::N, Transpose::N)));
        assert!(i.blas_column_major);
        assert!(!i.persistent);
    }

    #[test]
    fn cudnn_fprop_is_implicit_conv() {
        let i = p("sm80_xmma_fprop_implicit_gemm_indexed_tf32f32_tf32f32_f32_nhwckrsc_nchw_tilesize128x128x16_stage4_warpsize2x2x1_g1_tensor16x8x8_alignc4_execute_kernel_cudnn");
        assert!(i.implicit_conv);
        assert!(!i.blas_column_major);
        assert_eq!((i.mt_m, i.mt_n, i.mt_k, i.stages), (Some(128), Some(128), Some(16), Some(4)));
        assert_eq!(i.layout, None);
    }

    #[test]
    fn segment_k_on_is_noted() {
        let i = p("sm90_xmma_gemm_f32f32_f32_nn_n_tilesize128x128x32_warpgroupsize1x1x1_execute_segment_k_on_kernel__5x_cublas");
        assert!(i.notes.iter().any(|n| n.contains("segment")));
        assert!(i.persistent);
    }
}
