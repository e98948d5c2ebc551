//! MIOpen implicit-GEMM convolution names (docs/reference/kernel-names.md):
//! `igemm_{fwd|bwd|wrw}_gtc..._bt{M}x{N}x{K}_wt{..}_ws{..}_wr{..}_...`, where `bt` is the block
//! (workgroup) tile of the implicit GEMM. The tile's M/N are the implicit GEMM's, not a
//! matmul's, so no BLAS swap applies.

use std::sync::LazyLock;

use regex::Regex;

use super::{regex, scan, set_tile_from, GemmKernelInfo, KernelFamily};

static IGEMM: LazyLock<Regex> = LazyLock::new(|| {
    regex(
        r"^igemm_(?P<dir>fwd|bwd|wrw)_[0-9A-Za-z_]*?_bt(?P<m>[0-9]+)x(?P<n>[0-9]+)x(?P<k>[0-9]+)(?:_|$)",
    )
});

pub(super) fn parse(name: &str) -> Option<GemmKernelInfo> {
    if !name.starts_with("igemm_") {
        return None;
    }
    let mut info = GemmKernelInfo::new(KernelFamily::MiopenIgemm, false);
    info.implicit_conv = true;
    // ASCII names (all real ones) are read by hand (`scan` docs); the regex is for others.
    let found = if name.is_ascii() {
        scan::igemm(name)
    } else {
        IGEMM.captures(name).map(|c| {
            let g = |n| c.name(n).map_or("", |m| m.as_str());
            (g("dir"), [g("m"), g("n"), g("k")])
        })
    };
    if let Some((dir, [m, n, k])) = found {
        set_tile_from(&mut info, m, n, k);
        info.note(format!("MIOpen implicit-GEMM convolution ({dir})"));
    } else {
        info.note("tile unknown: no bt{M}x{N}x{K} field in this igemm name");
    }
    Some(info)
}

#[cfg(test)]
mod tests {
    use crate::gemm_tiles::{parse_kernel_name, KernelFamily};

    #[test]
    fn mi300_fixture_name() {
        let i = parse_kernel_name("igemm_fwd_gtcx3_nhwc_bf16_bx0_ex1_bt64x64x16_wt16x16x4_ws1x1_wr2x2_ta1x1x4x1_1x16x1x16_tb1x1x4x1_1x16x1x16_me").expect("parses");
        assert_eq!(i.family, KernelFamily::MiopenIgemm);
        assert_eq!((i.mt_m, i.mt_n, i.mt_k), (Some(64), Some(64), Some(16)));
        assert!(i.implicit_conv);
        assert!(!i.blas_column_major);
    }
}
