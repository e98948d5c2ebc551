//! cuBLASLt `nvjet_*` names (CUDA 12.4+ on Hopper and Blackwell).
//!
//! `nvjet_[sm{arch}_]{t3}_{M}x{N}_{Kblk}x{stages}_{CM}x{CN}[_2cta]_{h|v}_bz[_coopA|_coopB]
//! [_splitK][_bias|_gelu...]_{lay3}` (docs/reference/kernel-names.md). NVIDIA does not document the
//! grammar; this is the community reading that all public examples agree with. Every group is
//! anchored in order, which avoids TraceLens's greedy `nvjet_\w+_(\d+)x(\d+)_(\d+)x\d+` bug
//! (it reads `nvjet_tst_64x64_64x16_2x1_...` as 64x16 with K 2). The last three letters
//! are op(A), op(B) and the D layout; the tile M is the BLAS M.

use std::sync::LazyLock;

use regex::Regex;

use super::{cap_u32, layout_from_letters, regex, set_tile, GemmKernelInfo, KernelFamily};

static FULL: LazyLock<Regex> = LazyLock::new(|| {
    regex(
        r"^nvjet_(?:sm(?P<arch>[0-9]+)_)?(?P<types>[a-z][a-z0-9]*)_(?P<m>[0-9]+)x(?P<n>[0-9]+)_(?P<k>[0-9]+)x(?P<st>[0-9]+)_(?P<cm>[0-9]+)x(?P<cn>[0-9]+)(?P<flags>(?:_[A-Za-z0-9]+)*?)_(?P<lay>[NT]{2,3})$",
    )
});
/// The leading groups only, for names whose tail does not follow the expected form.
static HEAD: LazyLock<Regex> = LazyLock::new(|| {
    regex(
        r"^nvjet_(?:sm(?P<arch>[0-9]+)_)?[a-z][a-z0-9]*_(?P<m>[0-9]+)x(?P<n>[0-9]+)_(?P<k>[0-9]+)x(?P<st>[0-9]+)(?:_|$)",
    )
});

pub(super) fn parse(name: &str) -> Option<GemmKernelInfo> {
    if !name.starts_with("nvjet_") {
        return None;
    }
    let mut info = GemmKernelInfo::new(KernelFamily::Nvjet, true);
    if let Some(caps) = FULL.captures(name) {
        set_tile(&mut info, &caps, "m", "n", Some("k"));
        info.stages = cap_u32(&caps, "st");
        if let (Some(cm), Some(cn)) = (cap_u32(&caps, "cm"), cap_u32(&caps, "cn")) {
            info.cluster = Some([cm, cn, 1]);
        }
        info.arch = caps.name("arch").map(|a| format!("sm{}", a.as_str()));
        info.layout = caps.name("lay").and_then(|l| layout_from_letters(l.as_str()));
        let flags = caps.name("flags").map_or("", |f| f.as_str());
        for flag in flags.split('_').filter(|f| !f.is_empty()) {
            match flag {
                "2cta" => info.two_sm = true,
                "splitK" => {
                    info.split_k_flag = true;
                    info.note(
                        "split-K (factor not in the name; a cublasLt::splitKreduce_kernel \
                         follows): compare the grid with the tile count",
                    );
                }
                "coopA" | "coopB" => info.note(format!("cooperative schedule ({flag})")),
                _ => {}
            }
        }
    } else if let Some(caps) = HEAD.captures(name) {
        set_tile(&mut info, &caps, "m", "n", Some("k"));
        info.stages = cap_u32(&caps, "st");
        info.arch = caps.name("arch").map(|a| format!("sm{}", a.as_str()));
        info.note("nvjet name tail not in the known form: only tile and stages were read");
    } else {
        info.note("tile unknown: nvjet name not in the known form");
        return Some(info);
    }
    if info.two_sm {
        info.note(
            "2cta: the tile is taken to span the SM pair (per-SM M = mt_m / 2); unverified for \
             nvjet",
        );
        if info.mt_m.is_some_and(|m| m < 128) {
            // tcgen05 2-CTA MMAs have M = 128 or 256 over the pair, so a smaller M suggests
            // this name gives the per-CTA tile instead.
            info.note("2cta with tile M < 128: the name may give the per-CTA tile, not the pair's");
        }
    }
    info.note(
        "nvjet grammar is undocumented (community reading); nvjet kernels are often persistent \
         (grid = SM count)",
    );
    Some(info)
}

#[cfg(test)]
mod tests {
    use crate::gemm_tiles::{parse_kernel_name, GemmKernelInfo, KernelFamily, Transpose};

    fn p(name: &str) -> GemmKernelInfo {
        parse_kernel_name(name).expect("parses")
    }

    #[test]
    fn greedy_regex_bug_avoided() {
        let i = p("nvjet_tst_64x64_64x16_2x1_2cta_v_bz_bias_TNT");
        assert_eq!(i.family, KernelFamily::Nvjet);
        assert_eq!((i.mt_m, i.mt_n, i.mt_k, i.stages), (Some(64), Some(64), Some(64), Some(16)));
        assert_eq!(i.cluster, Some([2, 1, 1]));
        assert!(i.two_sm);
        assert_eq!(i.per_cta_tile(), Some((32, 64)));
        assert_eq!(i.layout, Some((Transpose::T, Transpose::N)));
    }

    #[test]
    fn arch_tag_and_split_k() {
        let i = p("nvjet_sm103_hsh_64x8_64x16_1x1_h_bz_splitK_NNT");
        assert_eq!(i.arch.as_deref(), Some("sm103"));
        assert_eq!((i.mt_m, i.mt_n, i.mt_k, i.stages), (Some(64), Some(8), Some(64), Some(16)));
        assert!(i.split_k_flag);
        assert_eq!(i.split_k, None);
        assert_eq!(i.layout, Some((Transpose::N, Transpose::N)));
    }

    #[test]
    fn unusual_tail_still_gives_tile() {
        let i = p("nvjet_tst_128x256_64x4_1x2_h_bz_new-flag");
        assert_eq!((i.mt_m, i.mt_n), (Some(128), Some(256)));
        assert_eq!(i.layout, None);
        let j = p("nvjet_garbage");
        assert!(!j.has_tile());
    }
}
