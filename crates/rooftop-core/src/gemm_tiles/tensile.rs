//! Tensile names: rocBLAS, hipBLASLt (TensileLite) and hand-tuned `Custom_Cijk_` kernels, plus
//! the `PostGSU` split-K reduction kernels.
//!
//! Grammar (docs/reference/kernel-names.md, from Tensile's `ProblemType.__str__` and
//! `getParameterNameAbbreviation` in ROCm/Tensile): `C{ijk}_A{..}_B{..}_{types}_{flags}_` followed by
//! solution parameters, each an abbreviation plus its value: `MT{M}x{N}x{DepthU}` macro tile,
//! `GSU{n}` global split-U (split-K), `SK{n}` stream-K mode (0 = off), `WG{x}_{y}_{z}`
//! workgroup, `ISA{gfx}` target. In the A/B index strings the first letter is the stride-1
//! dimension: `Ailk` = A not transposed, `Alik` = A transposed, `Bljk` = B not transposed,
//! `Bjlk` = B transposed. Tile M runs along the BLAS M (PyTorch's N for a row-major matmul).

use std::sync::LazyLock;

use regex::Regex;

use super::{cap_u32, regex, scan, set_tile_from, GemmKernelInfo, KernelFamily, Transpose};

/// The problem-type prefix. `(?:^|[^A-Za-z0-9])` lets `Custom_` (or any `_`-joined prefix)
/// precede it, as TraceLens's `^.*C[a-z]{3}_A...` does, without matching inside a word.
static PREFIX: LazyLock<Regex> = LazyLock::new(|| {
    regex(r"(?:^|[^A-Za-z0-9])C(?P<c>[a-z]{2,4})_A(?P<a>[a-zA-Z]{2,5})_B(?P<b>[a-zA-Z]{2,5})_")
});
static MT: LazyLock<Regex> =
    LazyLock::new(|| regex(r"_MT(?P<m>[0-9]+)x(?P<n>[0-9]+)x(?P<k>[0-9]+)(?:_|$)"));
static GSU: LazyLock<Regex> = LazyLock::new(|| regex(r"_GSU(?P<v>n?[0-9]+)(?:_|$)"));
static SK: LazyLock<Regex> = LazyLock::new(|| regex(r"_SK(?P<v>[0-9]+)(?:_|$)"));
static WG: LazyLock<Regex> =
    LazyLock::new(|| regex(r"_WG(?P<x>[0-9]+)_(?P<y>[0-9]+)_(?P<z>[0-9]+)(?:_|$)"));
static ISA: LazyLock<Regex> = LazyLock::new(|| regex(r"_ISA(?P<v>[0-9]{2,4}[a-z]?)(?:_|$)"));
/// `Cijk_..._PostGSU{n}` and `Cijk_B_PostGSU{n}` (the `Cijk_` may carry a prefix).
static POST_GSU: LazyLock<Regex> = LazyLock::new(|| {
    regex(r"(?:^|[^A-Za-z0-9])C[a-z]{2,4}_(?:[0-9A-Za-z_]*?_)?PostGSU(?P<v>[0-9]+)")
});

/// Parses a Tensile GEMM name (not a PostGSU reduction).
pub(super) fn parse(name: &str) -> Option<GemmKernelInfo> {
    // Literals every match contains: most names fail here, before a regex is compiled.
    if !(name.contains("_A") && name.contains("_B")) {
        return None;
    }
    // ASCII names (all real ones) are read by hand; the regexes are for the others.
    let ascii = name.is_ascii();
    let (end, a, b) = if ascii {
        scan::tensile_prefix(name)?
    } else {
        let prefix = PREFIX.captures(name)?;
        let group = |g| prefix.name(g).map_or("", |m| m.as_str());
        (prefix.get(0).map_or(0, |m| m.end()), group("a"), group("b"))
    };
    if name.contains("PostGSU") && POST_GSU.is_match(name) {
        return None;
    }
    let mut info = GemmKernelInfo::new(KernelFamily::Tensile, true);
    // Keep the prefix's trailing `_` so that `_MT...` can follow it directly.
    let rest = name.get(end.saturating_sub(1)..).unwrap_or("");
    let fields = if ascii { Fields::scan(rest) } else { Fields::regex(rest) };

    let op_a = match a.chars().next().map(|c| c.to_ascii_lowercase()) {
        Some('i') => Some(Transpose::N),
        Some('l') => Some(Transpose::T),
        _ => None,
    };
    let op_b = match b.chars().next().map(|c| c.to_ascii_lowercase()) {
        Some('l') => Some(Transpose::N),
        Some('j') => Some(Transpose::T),
        _ => None,
    };
    match (op_a, op_b) {
        (Some(x), Some(y)) => info.layout = Some((x, y)),
        _ => info.note(format!("layout unknown: index strings A{a} B{b} not recognised")),
    }

    if let Some([m, n, k]) = fields.mt {
        set_tile_from(&mut info, m, n, k);
    } else {
        info.note("tile unknown: no MT{M}x{N}x{K} parameter in this Tensile name");
    }

    match fields.gsu {
        Some(v) if v.starts_with('n') => {
            info.note(
                "GSU is chosen at run time (negative GSU): the split-K factor shows in the grid",
            );
        }
        Some(v) => match v.parse::<u32>() {
            Ok(g) if g > 1 => {
                info.split_k = Some(g);
                info.split_k_flag = true;
            }
            Ok(_) => {}
            Err(_) => info.note(format!("GSU{v} out of range")),
        },
        None if rest.contains("_UserArgs_") || rest.contains("_GSUAMB") => {
            // hipBLASLt names carry the split-K algorithm (GSUAMB/GSUAMBSK) but the GSU value
            // is a run-time argument: the MI300X TraceLens golden shows MT16x16x256 launched
            // with 3x the tile count for M=4, N=768.
            info.note(
                "hipBLASLt may split K at run time (GSU is a user argument): compare the grid \
                 with the tile count",
            );
        }
        None => {}
    }

    if let Some(sk) = fields.sk {
        match sk.parse::<u32>().ok() {
            Some(0) => {}
            Some(_) => {
                info.stream_k = true;
                info.persistent = true;
                info.note("stream-K (SK > 0): wave quantization does not apply");
            }
            None => info.note("SK value out of range"),
        }
    }

    if let Some([x, y, z]) = fields.wg {
        let v = |s: &str| s.parse::<u32>().ok();
        info.block_threads = v(x)
            .zip(v(y))
            .and_then(|(x, y)| x.checked_mul(y))
            .zip(v(z))
            .and_then(|(xy, z)| xy.checked_mul(z));
    }
    if let Some(isa) = fields.isa {
        info.arch = Some(format!("gfx{isa}"));
    }
    if name.starts_with("Custom_") {
        info.note("hand-tuned hipBLASLt kernel (Custom_ prefix)");
    }
    Some(info)
}

/// The solution parameters after the prefix, as written.
struct Fields<'a> {
    mt: Option<[&'a str; 3]>,
    gsu: Option<&'a str>,
    sk: Option<&'a str>,
    wg: Option<[&'a str; 3]>,
    isa: Option<&'a str>,
}

impl<'a> Fields<'a> {
    /// By hand (ASCII text: the same matches as the regexes, `scan` docs).
    fn scan(rest: &'a str) -> Self {
        Fields {
            mt: scan::tensile_mt(rest),
            gsu: scan::tensile_gsu(rest),
            sk: scan::tensile_sk(rest),
            wg: scan::tensile_wg(rest),
            isa: scan::tensile_isa(rest),
        }
    }

    /// With the regexes (text that is not ASCII).
    fn regex(rest: &'a str) -> Self {
        let one =
            |re: &Regex, g: &str| re.captures(rest).and_then(|c| c.name(g)).map(|m| m.as_str());
        let three = |re: &Regex, g: [&str; 3]| {
            let c = re.captures(rest)?;
            let s = |n: &str| c.name(n).map_or("", |m| m.as_str());
            Some([s(g[0]), s(g[1]), s(g[2])])
        };
        Fields {
            mt: three(&MT, ["m", "n", "k"]),
            gsu: one(&GSU, "v"),
            sk: one(&SK, "v"),
            wg: three(&WG, ["x", "y", "z"]),
            isa: one(&ISA, "v"),
        }
    }
}

/// Parses a Tensile split-K reduction kernel (`..._PostGSU{n}...`): no tile; `split_k` is the
/// (power-of-two rounded, capped) split count in the name.
pub(super) fn parse_post_gsu(name: &str) -> Option<GemmKernelInfo> {
    if !name.contains("PostGSU") {
        return None;
    }
    let caps = POST_GSU.captures(name)?;
    let mut info = GemmKernelInfo::new(KernelFamily::TensilePostGsu, true);
    match cap_u32(&caps, "v") {
        Some(v) => {
            info.split_k = Some(v).filter(|&v| v > 1);
            info.split_k_flag = v > 1;
        }
        None => info.note("PostGSU value out of range"),
    }
    info.note(
        "split-K reduction kernel (no tile); the number is the split count rounded to a power \
         of two",
    );
    Some(info)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gemm_tiles::parse_kernel_name;

    fn p(name: &str) -> GemmKernelInfo {
        parse_kernel_name(name).expect("parses")
    }

    #[test]
    fn tracelens_doc_example_tile_and_layout() {
        let i = p("Cijk_Alik_Bljk_HHS_BH_MT256x144x32_MI32x32x8x1_SN_1LDSB0_APM1_AF0EM1_AF1EM1_AMAS3_ASE_ASGT_ASLT_ASAE01_ASCE01_ASEM1_BL1_BS1_DTL0_DTVA0_DTVB0_EPS1_FL0_GRVW8_GSU1_GSUASB_GLS0_ISA942_IU1_K1_KLA_LBSPP128_LPA0_LPB8_LDL1_LRVW16_LWPMn1_LDW0_FMA_MIAV1_MDA2_MO40_NTA0_NTB0_NTC0_NTD0_NEPBS0_NLCA1_NLCB1_ONLL1_OPLV0_PK0_PAP0_PGR2_PLR1_SIA3_SS1_SU32_SUM0_SUS256_SCIUI1_SPO0_SRVW0_SSO0_SVW4_SNLL0_TT4_64_TLDS1_USFGROn1_VAW2_VSn1_VW4_WSGRA1_WSGRB1_WS64_WG32_8_1_WGM8");
        assert_eq!(i.family, KernelFamily::Tensile);
        assert_eq!((i.mt_m, i.mt_n, i.mt_k), (Some(256), Some(144), Some(32)));
        assert_eq!(i.layout, Some((Transpose::T, Transpose::N)));
        assert_eq!(i.split_k, None);
        assert!(!i.split_k_flag);
        assert_eq!(i.block_threads, Some(256));
        assert_eq!(i.arch.as_deref(), Some("gfx942"));
        assert!(i.blas_column_major);
    }

    #[test]
    fn gsu_gives_split_k() {
        let i = p("Cijk_Ailk_Bjlk_HHS_BH_MT128x128x32_MI32x32x8x1_SN_GSU4_GSUASB_ISA90a_WG32_8_1");
        assert_eq!(i.split_k, Some(4));
        assert!(i.split_k_flag);
        assert_eq!(i.layout, Some((Transpose::N, Transpose::T)));
        assert_eq!(i.arch.as_deref(), Some("gfx90a"));
    }

    #[test]
    fn stream_k_and_custom_prefix() {
        let i = p("Custom_Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT256x256x64_MI16x16x1_SN_GSUAMBSK_SK3_SKXCCM0_WS64_WG32_8_1");
        assert_eq!((i.mt_m, i.mt_n), (Some(256), Some(256)));
        assert!(i.stream_k);
        assert!(i.persistent);
        assert!(i.notes.iter().any(|n| n.contains("Custom_")));
    }

    #[test]
    fn sk_zero_and_skxccm_are_not_stream_k() {
        let i = p("Cijk_Alik_Bljk_BBS_BH_MT64x64x64_MI16x16x1_SK0_SKFTR0_SKXCCM0_WG16_16_1");
        assert!(!i.stream_k);
    }

    #[test]
    fn negative_gsu_is_a_note() {
        let i = p("Cijk_Alik_Bljk_HHS_BH_MT64x64x64_GSUn1_WG16_16_1");
        assert_eq!(i.split_k, None);
        assert!(i.notes.iter().any(|n| n.contains("run time")));
    }

    #[test]
    fn post_gsu_reduction() {
        let i = p("Cijk_SS_BiasS_HAS_ScaleAlphaVec_PostGSU16_VW4");
        assert_eq!(i.family, KernelFamily::TensilePostGsu);
        assert_eq!(i.split_k, Some(16));
        assert!(!i.has_tile());
        let j = p("Cijk_B_PostGSU8");
        assert_eq!(j.split_k, Some(8));
        // A PostGSU name that also carries A/B index strings is still a reduction.
        let k = p("Cijk_Alik_Bljk_HHS_BH_PostGSU4_VW8");
        assert_eq!(k.family, KernelFamily::TensilePostGsu);
    }

    #[test]
    fn old_rocblas_name() {
        let i = p("Cijk_Ailk_Bljk_SB_MT64x64x16_SE_K1");
        assert_eq!((i.mt_m, i.mt_n, i.mt_k), (Some(64), Some(64), Some(16)));
        assert_eq!(i.layout, Some((Transpose::N, Transpose::N)));
    }

    #[test]
    fn no_mt_is_tile_unknown() {
        let i = p("Cijk_Ailk_Bljk_SB_SE_K1");
        assert!(!i.has_tile());
        assert!(i.notes.iter().any(|n| n.contains("tile unknown")));
    }

    #[test]
    fn non_ascii_names_are_read_by_the_regexes() {
        // Same fields as an ASCII name; the `é` sends the name down the regex path.
        let i = p("Cijk_Alik_Bljk_SB_MT64x32x16_GSU2_WG16_16_1_ISA942_é");
        assert_eq!((i.mt_m, i.mt_n, i.mt_k), (Some(64), Some(32), Some(16)));
        assert_eq!(i.split_k, Some(2));
        assert_eq!(i.block_threads, Some(16 * 16));
        assert_eq!(i.arch.as_deref(), Some("gfx942"));
        assert_eq!(i.layout, Some((Transpose::T, Transpose::N)));
    }

    #[test]
    fn huge_numbers_do_not_panic() {
        let i = p(
            "Cijk_Ailk_Bljk_SB_MT99999999999999999999x64x16_GSU99999999999999_WG99999_99999_99999",
        );
        assert!(!i.has_tile());
        assert_eq!(i.block_threads, None);
    }
}
