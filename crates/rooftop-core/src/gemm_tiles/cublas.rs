//! Legacy cuBLAS SIMT / HMMA names (pre-Hopper): `ampere_sgemm_128x64_tn`,
//! `volta_h884gemm_256x128_ldg8_nn`, `turing_fp16_s1688gemm_fp16_256x128_ldg8_f2f_stages_32x1_nn`.
//!
//! `{arch}_[{intype}_]{core}gemm[_{outtype}]_{M}x{N}[_mods...][_stages_{K}x{S}]_{ab}`
//! (docs/reference/kernel-names.md): `M x N` is the CTA tile, `stages_{K}x{S}` the K tile and pipeline
//! depth, `ab` op(A) op(B) in BLAS terms. The core is matched as `[a-z]{0,3}\d*gemm`, wider
//! than the narrower `[a-z]?\d*gemm`, so that the cuDNN FFT helper `ampere_gcgemm_64x64_nt` (HTA
//! A100 fixture) is read too.

use std::sync::LazyLock;

use regex::Regex;

use super::{cap_u32, layout_from_letters, regex, set_tile, GemmKernelInfo, KernelFamily};

static LEGACY: LazyLock<Regex> = LazyLock::new(|| {
    regex(
        r"^(?P<arch>maxwell|pascal|volta|turing|ampere|ada|hopper|sm[0-9]+)_(?:(?P<pre>[a-z0-9]+)_)?(?P<core>[a-z]{0,3}[0-9]*gemm)(?:_(?P<out>fp16|bf16|fp32|tf32|int8|i8))?_(?P<m>[0-9]+)x(?P<n>[0-9]+)(?P<mods>(?:_[a-z0-9]+)*?)(?:_stages_(?P<k>[0-9]+)x(?P<st>[0-9]+))?_(?P<lay>[nt]{2})(?:_v[0-9]+)?$",
    )
});

pub(super) fn parse(name: &str) -> Option<GemmKernelInfo> {
    // A literal every match contains: most names fail here, before the regex is compiled.
    if !name.contains("gemm") {
        return None;
    }
    let caps = LEGACY.captures(name)?;
    let mut info = GemmKernelInfo::new(KernelFamily::CublasLegacy, true);
    set_tile(&mut info, &caps, "m", "n", Some("k"));
    info.stages = cap_u32(&caps, "st");
    info.layout = caps.name("lay").and_then(|l| layout_from_letters(l.as_str()));
    info.arch = caps.name("arch").map(|a| a.as_str().to_owned());
    let mods = caps.name("mods").map_or("", |m| m.as_str());
    if let Some(sliced) = mods.split('_').find(|m| m.starts_with("sliced")) {
        info.note(format!("warp-sliced K ({sliced})"));
    }
    if caps.name("k").is_none() {
        info.note("no stages_{K}x{S} field: K tile not in the name");
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
    fn stages_are_not_swallowed_by_mods() {
        let i = p("ampere_fp16_s16816gemm_fp16_64x64_sliced1x2_ldg8_relu_f2f_stages_64x5_tn");
        assert_eq!(i.family, KernelFamily::CublasLegacy);
        assert_eq!((i.mt_m, i.mt_n, i.mt_k, i.stages), (Some(64), Some(64), Some(64), Some(5)));
        assert_eq!(i.layout, Some((Transpose::T, Transpose::N)));
        assert!(i.notes.iter().any(|n| n.contains("sliced1x2")));
    }

    #[test]
    fn hta_a100_names() {
        let i = p("ampere_sgemm_32x32_sliced1x4_tn");
        assert_eq!((i.mt_m, i.mt_n, i.mt_k), (Some(32), Some(32), None));
        let j = p("ampere_gcgemm_64x64_nt");
        assert_eq!((j.mt_m, j.mt_n), (Some(64), Some(64)));
        assert_eq!(j.layout, Some((Transpose::N, Transpose::T)));
    }

    #[test]
    fn cudnn_conv_names_are_not_legacy_gemms() {
        assert_eq!(parse_kernel_name("cudnn_ampere_scudnn_128x64_relu_xregs_large_nn_v1"), None);
        assert_eq!(parse_kernel_name("maxwell_scudnn_128x128_relu_small_nn"), None);
    }
}
