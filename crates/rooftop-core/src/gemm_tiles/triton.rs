//! Triton kernel names: AITER-style names that embed their constexprs, and PyTorch Inductor
//! template kernels.
//!
//! A Triton kernel's name is its Python function name and normally carries no tile
//! (docs/reference/kernel-names.md). AITER appends the specialisation:
//! `_gemm_a8w8_blockscale_kernel_..._BLOCK_SIZE_M_128_BLOCK_SIZE_N_128_BLOCK_SIZE_K_128_..._
//! NUM_KSPLIT_1_..._GRID_MN_17_...`; each field is read on its own, as TraceLens's branch
//! does, since other constexprs sit between them. Inductor names are
//! `triton_{tem|poi|red|per}_fused_{ops}_{n}`; only `tem` (template: mm/bmm/addmm, flex
//! attention) can be a GEMM, and its tile is not in the name ("tile unknown": infer it from
//! the grid and the autotune configs). Triton is called with row-major operands, so the tile M
//! is the caller's M.

use std::sync::LazyLock;

use regex::Regex;

use super::{cap_u32, regex, GemmKernelInfo, KernelFamily};

static BLOCK_M: LazyLock<Regex> = LazyLock::new(|| regex(r"BLOCK_SIZE_M_(?P<v>[0-9]+)"));
static BLOCK_N: LazyLock<Regex> = LazyLock::new(|| regex(r"BLOCK_SIZE_N_(?P<v>[0-9]+)"));
static BLOCK_K: LazyLock<Regex> = LazyLock::new(|| regex(r"BLOCK_SIZE_K_(?P<v>[0-9]+)"));
static NUM_KSPLIT: LazyLock<Regex> =
    LazyLock::new(|| regex(r"(?:^|_)(?:NUM_KSPLIT|SPLIT_K)_(?P<v>[0-9]+)(?:_|$)"));
static GRID_MN: LazyLock<Regex> = LazyLock::new(|| regex(r"(?:^|_)GRID_MN_(?P<v>[0-9]+)(?:_|$)"));
static INDUCTOR: LazyLock<Regex> =
    LazyLock::new(|| regex(r"^triton_tem_fused_(?P<ops>[0-9A-Za-z_]+?)_(?P<idx>[0-9]+)$"));

pub(super) fn parse(name: &str) -> Option<GemmKernelInfo> {
    // Literals every match contains: most names fail them, before a regex is compiled.
    let blocks = (name.contains("BLOCK_SIZE_M_") && name.contains("BLOCK_SIZE_N_"))
        .then(|| BLOCK_M.captures(name).zip(BLOCK_N.captures(name)))
        .flatten();
    if let Some((m, n)) = blocks {
        let mut info = GemmKernelInfo::new(KernelFamily::Triton, false);
        match (cap_u32(&m, "v").filter(|&v| v > 0), cap_u32(&n, "v").filter(|&v| v > 0)) {
            (Some(bm), Some(bn)) => {
                info.mt_m = Some(bm);
                info.mt_n = Some(bn);
            }
            _ => info.note("tile unknown: BLOCK_SIZE values zero or out of range"),
        }
        info.mt_k = BLOCK_K.captures(name).and_then(|k| cap_u32(&k, "v")).filter(|&v| v > 0);
        if let Some(split) = NUM_KSPLIT.captures(name).and_then(|s| cap_u32(&s, "v")) {
            if split > 1 {
                info.split_k = Some(split);
                info.split_k_flag = true;
            }
        }
        if let Some(grid) = GRID_MN.captures(name).and_then(|g| cap_u32(&g, "v")) {
            info.note(format!("name gives GRID_MN = {grid} output tiles"));
        }
        info.note("Triton (AITER) kernel: layout not in the name; tile M is the caller's M");
        return Some(info);
    }
    // Only template kernels are GEMMs (pointwise, reduction and persistent-reduction
    // kernels are not): the rest fail here, before the regex.
    if !name.starts_with("triton_tem_") {
        return None;
    }
    let caps = INDUCTOR.captures(name)?;
    let mut info = GemmKernelInfo::new(KernelFamily::Triton, false);
    let ops = caps.name("ops").map_or("", |o| o.as_str());
    info.note(format!(
        "tile unknown: Inductor template kernel (fused {ops}); infer the tile from the grid and \
         the autotune configs"
    ));
    Some(info)
}

#[cfg(test)]
mod tests {
    use crate::gemm_tiles::{parse_kernel_name, GemmKernelInfo, KernelFamily};

    fn p(name: &str) -> GemmKernelInfo {
        parse_kernel_name(name).expect("parses")
    }

    #[test]
    fn aiter_blockscale() {
        let i = p("_gemm_a8w8_blockscale_kernel_GROUP_K_128_GROUP_N_128_BLOCK_SIZE_M_128_BLOCK_SIZE_N_128_BLOCK_SIZE_K_128_GROUP_SIZE_M_1_NUM_KSPLIT_1_SPLITK_BLOCK_SIZE_7168_EVEN_K_1_GRID_MN_17_cache_modifier_CG");
        assert_eq!(i.family, KernelFamily::Triton);
        assert_eq!((i.mt_m, i.mt_n, i.mt_k), (Some(128), Some(128), Some(128)));
        assert_eq!(i.split_k, None);
        assert!(!i.blas_column_major);
        assert!(i.notes.iter().any(|n| n.contains("GRID_MN = 17")));
    }

    #[test]
    fn aiter_split_k() {
        let i = p("_gemm_a16_w16_kernel_BLOCK_SIZE_M_32_BLOCK_SIZE_N_64_BLOCK_SIZE_K_256_GROUP_SIZE_M_1_NUM_KSPLIT_4_SPLITK_BLOCK_SIZE_1024_EVEN_K_1");
        assert_eq!((i.mt_m, i.mt_n, i.mt_k), (Some(32), Some(64), Some(256)));
        assert_eq!(i.split_k, Some(4));
        assert!(i.split_k_flag);
    }

    #[test]
    fn inductor_kinds() {
        let i = p("triton_tem_fused__to_copy_addmm_gelu_t_view_9");
        assert_eq!(i.family, KernelFamily::Triton);
        assert!(!i.has_tile());
        assert!(i.notes.iter().any(|n| n.contains("tile unknown")));
        assert_eq!(parse_kernel_name("triton_red_fused_add_mean_mul_pow_rsqrt_0"), None);
        assert_eq!(parse_kernel_name("triton_poi_fused__unsafe_view_mul_silu_2"), None);
        assert_eq!(parse_kernel_name("triton_per_fused_native_layer_norm_3"), None);
    }
}
