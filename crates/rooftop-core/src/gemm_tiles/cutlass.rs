//! CUTLASS procedural kernel names, 3.x (`cutlass3x_sm90_...`) and 2.x (`cutlass_80_...`).
//!
//! From `GemmOperation.procedural_name` in CUTLASS's `python/cutlass_library/gemm_operation.py`
//! (CUTLASS's `python/cutlass_library/gemm_operation.py`, docs/reference/kernel-names.md):
//!
//! * 3.x: `cutlass3x_sm{arch}_{opclass}_{ext}_{tileM}x{tileN}x{tileK}_{cM}x{cN}x{cK}_{stages}_
//!   {abc}_align{n}{tile_sched}{kernel_sched}{epi_sched}`; the cluster group may be missing or
//!   dynamic (`0x0x1`), `stages` 0 means auto, `_stream_k` selects the stream-K scheduler and
//!   `_2sm` a Blackwell 2-SM kernel whose tile spans the SM pair. These kernels reach traces
//!   through Inductor's CUTLASS backend or direct use with row-major operands, so the tile M
//!   is the caller's M (`blas_column_major` false).
//! * 2.x: `cutlass[_{cc}]_{opclass}_{ext}_{M}x{N}[_{K}x{stages}]_{ab}_align{n}`, also wrapped
//!   as `void cutlass::Kernel2<NAME>(NAME::Params)` and, for cuDNN convolutions,
//!   `cutlass__5x_cudnn::Kernel<NAME>`. The procedural names seen in traces are the instances
//!   cuBLAS ships, so a GEMM's tile M is the BLAS M (`blas_column_major` true); convolutions
//!   (`fprop`/`dgrad`/`wgrad`, tensor-format layout) are implicit GEMMs.
//!
//! Layout letters are CUTLASS's `ShortLayoutTypeNames`: column-major `n`, row-major `t`.

use std::sync::LazyLock;

use regex::Regex;

use super::{cap_u32, layout_from_letters, regex, set_tile, GemmKernelInfo, KernelFamily};

static CUTLASS3: LazyLock<Regex> = LazyLock::new(|| {
    regex(
        r"cutlass3x_sm(?P<arch>[0-9]+)_(?P<op>[a-z]+)_(?P<ex>[0-9A-Za-z_]+?)_(?P<m>[0-9]+)x(?P<n>[0-9]+)x(?P<k>[0-9]+)_(?:(?P<cm>[0-9]+)x(?P<cn>[0-9]+)x(?P<ck>[0-9]+)_)?(?P<st>[0-9]+)_(?P<lay>[nt]{3})_align(?P<al>[0-9]+)(?P<rest>[0-9A-Za-z_]*)",
    )
});
static CUTLASS2: LazyLock<Regex> = LazyLock::new(|| {
    regex(
        r"cutlass_(?:(?P<cc>[0-9]+)_)?(?P<op>tensorop|simt|wmma_tensorop)_(?P<ex>[0-9A-Za-z_]*?(?:gemm|fprop|dgrad|wgrad)[0-9A-Za-z_]*?)_(?P<m>[0-9]+)x(?P<n>[0-9]+)(?:_(?P<k>[0-9]+)x(?P<st>[0-9]+))?_(?P<lay>[nt]{2}|[a-z0-9]*hw[a-z0-9]*)_align(?P<al>[0-9]+)",
    )
});

pub(super) fn parse_cutlass3(name: &str) -> Option<GemmKernelInfo> {
    // A literal every match contains: most names fail here, before the regex is compiled.
    if !name.contains("cutlass3x_sm") {
        return None;
    }
    let caps = CUTLASS3.captures(name)?;
    let mut info = GemmKernelInfo::new(KernelFamily::Cutlass3, false);
    set_tile(&mut info, &caps, "m", "n", Some("k"));
    info.stages = cap_u32(&caps, "st");
    if info.stages == Some(0) {
        info.note("stages 0: chosen automatically from shared memory (count not in the name)");
    }
    let arch = caps.name("arch").map_or("", |a| a.as_str());
    info.arch = Some(format!("sm{arch}"));
    if let (Some(x), Some(y), Some(z)) =
        (cap_u32(&caps, "cm"), cap_u32(&caps, "cn"), cap_u32(&caps, "ck"))
    {
        info.cluster = Some([x, y, z]);
        if x == 0 || y == 0 {
            info.note("dynamic cluster shape (chosen at run time)");
        }
    }
    info.layout = caps.name("lay").and_then(|l| layout_from_letters(l.as_str()));
    let rest = caps.name("rest").map_or("", |r| r.as_str());
    if rest.contains("_stream_k") {
        info.stream_k = true;
        info.persistent = true;
        info.note("stream-K tile scheduler: wave quantization does not apply");
    }
    if rest.contains("_2sm") {
        info.two_sm = true;
        info.note("2-SM kernel: the tile spans the SM pair (per-SM M = mt_m / 2)");
    }
    if rest.contains("warpspecialized_cooperative") || rest.contains("warpspecialized_pingpong") {
        // Cooperative and ping-pong sm90 kernels run a persistent tile scheduler: about one
        // CTA per SM, each looping over output tiles. Tiles still quantize into waves.
        info.persistent = true;
        info.note("persistent warp-specialized kernel: grid follows the SM count");
    } else if arch.parse::<u32>().is_ok_and(|a| a >= 100) && !info.stream_k {
        info.note("sm100 CUTLASS kernels usually run a persistent scheduler: check the grid");
    }
    info.note("CUTLASS 3 procedural name: tile M is the caller's (row-major) M");
    Some(info)
}

pub(super) fn parse_cutlass2(name: &str) -> Option<GemmKernelInfo> {
    if !(name.contains("cutlass_") && name.contains("_align")) {
        return None;
    }
    let caps = CUTLASS2.captures(name)?;
    let ex = caps.name("ex").map_or("", |e| e.as_str());
    let conv = ["fprop", "dgrad", "wgrad"].iter().any(|c| ex.contains(c));
    let mut info = GemmKernelInfo::new(KernelFamily::Cutlass2, !conv);
    info.implicit_conv = conv;
    set_tile(&mut info, &caps, "m", "n", Some("k"));
    info.stages = cap_u32(&caps, "st");
    if caps.name("k").is_none() {
        info.note("no K-tile/stages field in this CUTLASS 2 name");
    }
    if let Some(cc) = caps.name("cc") {
        info.arch = Some(format!("sm{}", cc.as_str()));
    }
    let lay = caps.name("lay").map_or("", |l| l.as_str());
    if conv {
        info.note(format!("implicit-GEMM convolution, tensor layout {lay}"));
    } else {
        info.layout = layout_from_letters(lay);
        info.note(
            "CUTLASS 2 procedural name, taken as shipped inside cuBLAS (column-major); its grid \
             is swizzled, see check_launch_grid",
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
    fn cutlass3_stream_k_two_sm() {
        let i = p("cutlass3x_sm100_tensorop_gemm_bf16_bf16_f32_void_bf16_256x256x64_2x2x1_0_ttn_align8_stream_k_2sm");
        assert_eq!(i.family, KernelFamily::Cutlass3);
        assert_eq!((i.mt_m, i.mt_n, i.mt_k, i.stages), (Some(256), Some(256), Some(64), Some(0)));
        assert_eq!(i.cluster, Some([2, 2, 1]));
        assert!(i.stream_k && i.two_sm && i.persistent);
        assert_eq!(i.per_cta_tile(), Some((128, 256)));
        assert_eq!(i.layout, Some((Transpose::T, Transpose::T)));
        assert!(!i.blas_column_major);
    }

    #[test]
    fn cutlass3_inside_wrapper_and_dynamic_cluster() {
        let i = p("void cutlass::device_kernel<cutlass3x_sm100_tensorop_s128x128x16gemm_f16_f16_f32_f16_f16_128x128x64_0x0x1_0_tnn_align8_1sm>(Params)");
        assert_eq!((i.mt_m, i.mt_n), (Some(128), Some(128)));
        assert_eq!(i.cluster, Some([0, 0, 1]));
        assert!(!i.two_sm);
    }

    #[test]
    fn cutlass2_in_kernel2_wrapper() {
        let i = p("void cutlass::Kernel2<cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_32x32_128x2_tn_align8>(cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_32x32_128x2_tn_align8::Params)");
        assert_eq!(i.family, KernelFamily::Cutlass2);
        assert_eq!((i.mt_m, i.mt_n, i.mt_k, i.stages), (Some(32), Some(32), Some(128), Some(2)));
        assert_eq!(i.layout, Some((Transpose::T, Transpose::N)));
        assert!(i.blas_column_major);
    }

    #[test]
    fn cudnn_cutlass_fprop() {
        let i = p("void cutlass__5x_cudnn::Kernel<cutlass_tensorop_bf16_s16816fprop_optimized_bf16_256x64_32x4_nhwc_align8>(cutlass_tensorop_bf16_s16816fprop_optimized_bf16_256x64_32x4_nhwc_align8::Params)");
        assert!(i.implicit_conv);
        assert!(!i.blas_column_major);
        assert_eq!((i.mt_m, i.mt_n, i.mt_k, i.stages), (Some(256), Some(64), Some(32), Some(4)));
        assert_eq!(i.layout, None);
    }

    #[test]
    fn flash_attention_mentioning_cutlass_is_not_a_gemm() {
        let name = "void pytorch_flash::flash_fwd_kernel<pytorch_flash::Flash_fwd_kernel_traits<64, 128, 128, 4, false, false, cutlass::bfloat16_t, pytorch_flash::Flash_kernel_traits<64, 128, 128, 4, cutlass::bfloat16_t> >, false, false, false, false, false, true, false, false>(pytorch_flash::Flash_fwd_params)";
        assert_eq!(parse_kernel_name(name), None);
    }
}
