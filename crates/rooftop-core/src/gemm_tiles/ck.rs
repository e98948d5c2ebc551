//! Composable Kernel (CK) and ck_tile names: C++ template instantiations, demangled in
//! PyTorch traces (`void ck::kernel_gemm_xdl_cshuffle_v3<ck::GridwiseGemm..._v3<...>, ...>`)
//! and mangled in rocprof (`_ZN2ck...`).
//!
//! The Gridwise class's template parameters are (CK `gridwise_gemm_xdl_cshuffle_v3*.hpp`,
//! docs/reference/kernel-names.md): layouts, data types, element-wise ops, `GemmSpecialization`, then
//! `BlockSize` — preceded by one `ScaleBlockSize` in the MX classes, followed by three scale
//! block sizes (M, N, K) in the ABScale / blockscale classes and two (N, K) in the B-scale
//! classes — then `MPerBlock, NPerBlock, KPerBlock, AK1, BK1, MPerXdl, NPerXdl, MXdlPerWave,
//! NXdlPerWave`. Instead of TraceLens's absolute positions per class, this module splits the
//! class's top-level template arguments (nested `<>`, `()`, `{}` respected), finds the
//! `(GemmSpecialization)` argument and reads on from there. Every reading is cross-checked:
//! `BlockSize` must equal `(MPerBlock / (MXdlPerWave * MPerXdl)) * (NPerBlock / (NXdlPerWave *
//! NPerXdl))` waves of 64 (XDL) or 32 (WMMA) lanes. When the class is not one whose parameter
//! list is known, the other known layouts are tried and only a cross-checked one is used.
//! Classes without a `GemmSpecialization` argument (`GridwiseGemmMultipleD_xdl_cshuffle`,
//! conv kernels) are searched for a run of integer arguments that passes the same check.
//!
//! CK is called with row-major operands (AITER, PyTorch's CK backend), so the tile M is the
//! caller's M (`blas_column_major` false). Layout: a `RowMajor` A (K contiguous) is `T` in the
//! BLAS view, a `ColumnMajor` B (K contiguous) is `N`. `KBatch > 1` launches the
//! `InMemoryDataOperationEnum::AtomicAdd` (1) instantiation: split-K with the factor in the
//! grid's z.

use std::sync::LazyLock;

use regex::Regex;

use super::{regex, set_tile, GemmKernelInfo, KernelFamily, Transpose};

static DEMANGLED_CLASS: LazyLock<Regex> =
    LazyLock::new(|| regex(r"ck::(?:[A-Za-z_][A-Za-z0-9_]*::)*(?P<cls>Gridwise[A-Za-z0-9_]*)<"));
static CK_KERNEL: LazyLock<Regex> =
    LazyLock::new(|| regex(r"ck::(?:(?:[A-Za-z_()]|(?-u:\s))+::)*(?P<k>kernel_[A-Za-z0-9_]*)<"));
static MANGLED_CLASS: LazyLock<Regex> =
    LazyLock::new(|| regex(r"(?P<len>[0-9]+)(?P<cls>Gridwise[A-Za-z0-9_]*)"));
static MANGLED_SPEC: LazyLock<Regex> =
    LazyLock::new(|| regex(r"GemmSpecializationE[0-9]+E(?P<ints>(?:L[ij][0-9]+E)+)"));
static MANGLED_RUN: LazyLock<Regex> = LazyLock::new(|| regex(r"(?:L[ij][0-9]+E){10,}"));
static MANGLED_INT: LazyLock<Regex> = LazyLock::new(|| regex(r"L[ij](?P<v>[0-9]+)E"));
static CK_TILE_SHAPE: LazyLock<Regex> = LazyLock::new(|| {
    regex(
        r"TileGemmShape<(?-u:\s)*(?:ck_tile::)?sequence<(?-u:\s)*(?P<m>[0-9]+)(?-u:\s)*,(?-u:\s)*(?P<n>[0-9]+)(?-u:\s)*,(?-u:\s)*(?P<k>[0-9]+)(?-u:\s)*>",
    )
});

/// Where the scale-block arguments sit around `BlockSize`: (before, after).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct ArgLayout {
    before_block: usize,
    after_block: usize,
    what: &'static str,
}

const PLAIN: ArgLayout = ArgLayout { before_block: 0, after_block: 0, what: "plain" };
const AB_SCALE: ArgLayout =
    ArgLayout { before_block: 0, after_block: 3, what: "ABScale/blockscale (3 scale blocks)" };
const B_SCALE: ArgLayout =
    ArgLayout { before_block: 0, after_block: 2, what: "B-scale (2 scale blocks)" };
const MX: ArgLayout =
    ArgLayout { before_block: 1, after_block: 0, what: "MX (ScaleBlockSize first)" };
const ALL_LAYOUTS: [ArgLayout; 4] = [PLAIN, AB_SCALE, B_SCALE, MX];

/// BlockSize and the block tile read at one layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Reading {
    block: u64,
    m: u64,
    n: u64,
    k: u64,
    /// Some(true) when the XDL/WMMA parameters confirm BlockSize, None when they are missing.
    checked: Option<bool>,
}

fn read_at(ints: &[Option<u64>], layout: ArgLayout) -> Option<Reading> {
    let at = |i: usize| ints.get(i).copied().flatten();
    let block = at(layout.before_block)?;
    let base = layout.before_block + 1 + layout.after_block;
    let (m, n, k) = (at(base)?, at(base + 1)?, at(base + 2)?);
    // base+3, base+4 are AK1, BK1.
    let checked = match (at(base + 5), at(base + 6), at(base + 7), at(base + 8)) {
        (Some(m_per), Some(n_per), Some(m_rep), Some(n_rep)) => {
            Some(block_size_consistent(block, m, n, m_per, n_per, m_rep, n_rep))
        }
        _ => None,
    };
    Some(Reading { block, m, n, k, checked })
}

/// `BlockSize == waves * wave_size` with `waves = (M / (MRep * MPer)) * (N / (NRep * NPer))`.
fn block_size_consistent(
    block: u64,
    m: u64,
    n: u64,
    m_per: u64,
    n_per: u64,
    m_rep: u64,
    n_rep: u64,
) -> bool {
    let (Some(dm), Some(dn)) = (m_per.checked_mul(m_rep), n_per.checked_mul(n_rep)) else {
        return false;
    };
    if dm == 0 || dn == 0 || !m.is_multiple_of(dm) || !n.is_multiple_of(dn) {
        return false;
    }
    let Some(waves) = (m / dm).checked_mul(n / dn) else {
        return false;
    };
    waves > 0 && (waves.checked_mul(64) == Some(block) || waves.checked_mul(32) == Some(block))
}

/// The layout CK's sources give for a Gridwise class name.
fn layout_for_class(cls: &str) -> ArgLayout {
    let lower = cls.to_ascii_lowercase();
    if cls.contains("MX") || lower.contains("_mx") {
        MX
    } else if cls.contains("ABScale") || lower.contains("blockscale") || lower.contains("ab_scale")
    {
        AB_SCALE
    } else if cls.contains("BScale") || lower.contains("b_scale") {
        B_SCALE
    } else {
        PLAIN
    }
}

/// Reads the tile from the integers after `GemmSpecialization`: the class's layout when it
/// checks out (or cannot be checked), else another layout that checks out.
fn tile_after_spec(info: &mut GemmKernelInfo, cls: &str, ints: &[Option<u64>]) {
    let primary = layout_for_class(cls);
    let chosen = match read_at(ints, primary) {
        Some(r) if r.checked != Some(false) => {
            if r.checked.is_none() {
                info.note("BlockSize could not be cross-checked (XDL parameters missing)");
            }
            Some(r)
        }
        first => {
            let other = ALL_LAYOUTS.iter().filter(|&&l| l != primary).find_map(|&l| {
                read_at(ints, l).filter(|r| r.checked == Some(true)).map(|r| (l, r))
            });
            if let Some((l, r)) = other {
                info.note(format!(
                    "class {cls}: parameters read as {} (the layout that matches BlockSize)",
                    l.what
                ));
                Some(r)
            } else if let Some(r) = first {
                info.note("BlockSize does not match the tile: tile may be misread");
                Some(r)
            } else {
                None
            }
        }
    };
    apply(info, chosen);
}

/// Searches runs of integer arguments for a layout that passes the BlockSize check.
fn tile_from_runs(info: &mut GemmKernelInfo, runs: &[Vec<Option<u64>>]) {
    let found = runs.iter().find_map(|run| {
        (0..run.len()).find_map(|start| {
            let tail = &run[start..];
            // The run may begin with NumGemmKPrefetchStage (as in
            // GridwiseGemmMultipleD_xdl_cshuffle), hence the offsets.
            ALL_LAYOUTS.iter().find_map(|&l| read_at(tail, l).filter(|r| r.checked == Some(true)))
        })
    });
    if found.is_some() {
        info.note("no GemmSpecialization argument: tile found by the BlockSize cross-check");
    }
    apply(info, found);
}

fn apply(info: &mut GemmKernelInfo, reading: Option<Reading>) {
    let Some(r) = reading else {
        info.note("tile unknown: CK template arguments not in a known layout");
        return;
    };
    let to_u32 = |v: u64| u32::try_from(v).ok().filter(|&v| v > 0);
    match (to_u32(r.m), to_u32(r.n)) {
        (Some(m), Some(n)) => {
            info.mt_m = Some(m);
            info.mt_n = Some(n);
            info.mt_k = to_u32(r.k);
            info.block_threads = to_u32(r.block);
        }
        _ => info.note("tile unknown: CK tile arguments zero or out of range"),
    }
}

/// Splits the top-level template arguments that start at byte `start` (just after `<`).
/// Returns the arguments and whether the closing `>` was found (names may be truncated).
fn split_template_args(s: &str, start: usize) -> (Vec<&str>, bool) {
    let mut args = Vec::new();
    let mut depth = 0usize;
    let mut arg_start = start;
    let bytes = s.as_bytes();
    for (i, &b) in bytes.iter().enumerate().skip(start) {
        match b {
            b'<' | b'(' | b'[' | b'{' => depth += 1,
            b'>' | b')' | b']' | b'}' => {
                if depth == 0 {
                    // Split points are ASCII, so these slices fall on char boundaries.
                    args.push(s.get(arg_start..i).unwrap_or("").trim());
                    return (args, b == b'>');
                }
                depth -= 1;
            }
            b',' if depth == 0 => {
                args.push(s.get(arg_start..i).unwrap_or("").trim());
                arg_start = i + 1;
            }
            _ => {}
        }
    }
    args.push(s.get(arg_start..).unwrap_or("").trim());
    (args, false)
}

/// An integer template argument (`256`, `256u`, `16l`), or None for anything else.
fn int_arg(a: &str) -> Option<u64> {
    let digits = a.trim().trim_end_matches(['u', 'l', 'U', 'L']);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

fn layout_from_args(args: &[&str]) -> Option<(Transpose, Transpose)> {
    let read = |a: &str, row: Transpose, col: Transpose| {
        if a.ends_with("ColumnMajor") {
            Some(col)
        } else if a.ends_with("RowMajor") {
            Some(row)
        } else {
            None
        }
    };
    // CK's `RowMajor` A is M x K with K contiguous, which in the BLAS (column-major) view is
    // op(A) = T; its `ColumnMajor` B is K x N with K contiguous, op(B) = N; and the reverse.
    Some((
        read(args.first()?, Transpose::T, Transpose::N)?,
        read(args.get(1)?, Transpose::T, Transpose::N)?,
    ))
}

fn note_split_k(info: &mut GemmKernelInfo, name: &str, cls: &str) {
    let atomic = name.contains("InMemoryDataOperationEnum)1")
        || name.contains("InMemoryDataOperationEnumE1E");
    if !atomic {
        return;
    }
    if cls.contains("Moe") || name.contains("moe") {
        info.note("AtomicAdd output (MoE scatter-add or split-K)");
    } else {
        info.split_k_flag = true;
        info.note("AtomicAdd output: split-K (KBatch > 1); the factor is the grid's z");
    }
}

fn parse_ck_tile(name: &str) -> Option<GemmKernelInfo> {
    // A literal every match contains: most names fail here, before the regex is compiled.
    let shape = if name.contains("TileGemmShape<") { CK_TILE_SHAPE.captures(name) } else { None };
    if shape.is_none()
        && !(name.contains("ck_tile::") && name.contains("GemmKernel") && !name.contains("Fmha"))
    {
        return None;
    }
    let mut info = GemmKernelInfo::new(KernelFamily::CkTile, false);
    match shape {
        Some(caps) => set_tile(&mut info, &caps, "m", "n", Some("k")),
        None => info.note("tile unknown: no TileGemmShape in this ck_tile name"),
    }
    info.note("ck_tile: layout not read from the name");
    Some(info)
}

fn parse_mangled(name: &str) -> Option<GemmKernelInfo> {
    let cls = MANGLED_CLASS.captures(name).and_then(|c| {
        let len: usize = c.name("len")?.as_str().parse().ok()?;
        c.name("cls")?.as_str().get(..len)
    });
    let is_gemm = cls.is_some_and(|c| c.to_ascii_lowercase().contains("gemm"))
        || (cls.is_none() && name.contains("gemm"));
    if !is_gemm {
        return None;
    }
    let cls = cls.unwrap_or("");
    let mut info = GemmKernelInfo::new(KernelFamily::ComposableKernel, false);
    info.implicit_conv = name.contains("conv");
    let ints_of = |s: &str| -> Vec<Option<u64>> {
        MANGLED_INT
            .captures_iter(s)
            .map(|c| c.name("v").and_then(|v| v.as_str().parse().ok()))
            .collect()
    };
    if let Some(spec) = MANGLED_SPEC.captures(name) {
        let ints = ints_of(spec.name("ints").map_or("", |m| m.as_str()));
        tile_after_spec(&mut info, cls, &ints);
    } else {
        let runs: Vec<_> = MANGLED_RUN.find_iter(name).map(|m| ints_of(m.as_str())).collect();
        tile_from_runs(&mut info, &runs);
    }
    note_split_k(&mut info, name, cls);
    info.note("mangled CK name: layout not read");
    Some(info)
}

pub(super) fn parse(name: &str) -> Option<GemmKernelInfo> {
    if let Some(info) = parse_ck_tile(name) {
        return Some(info);
    }
    if name.contains("_ZN2ck") {
        return parse_mangled(name);
    }
    // Both regexes below need `ck::`: most names fail here, before they are compiled.
    if !name.contains("ck::") {
        return None;
    }
    let Some(caps) = DEMANGLED_CLASS.captures(name) else {
        // A CK GEMM kernel whose Gridwise class is not spelled out.
        let kernel = CK_KERNEL.captures(name)?.name("k")?.as_str();
        if !kernel.contains("gemm") {
            return None;
        }
        let mut info = GemmKernelInfo::new(KernelFamily::ComposableKernel, false);
        info.note("tile unknown: no Gridwise class in this CK name");
        return Some(info);
    };
    let cls_match = caps.name("cls")?;
    let cls = cls_match.as_str();
    if !cls.to_ascii_lowercase().contains("gemm") {
        return None; // normalization, reduction, attention-only classes
    }
    let mut info = GemmKernelInfo::new(KernelFamily::ComposableKernel, false);
    let (args, complete) = split_template_args(name, cls_match.end() + 1);
    if !complete {
        info.note("CK template arguments truncated");
    }
    info.implicit_conv = name.get(..cls_match.start()).is_some_and(|k| k.contains("conv"));
    if !info.implicit_conv {
        info.layout = layout_from_args(&args);
    }
    if let Some(spec) = args.iter().position(|a| a.contains("GemmSpecialization)")) {
        let ints: Vec<Option<u64>> = args[spec + 1..].iter().map(|a| int_arg(a)).collect();
        tile_after_spec(&mut info, cls, &ints);
    } else {
        let mut runs: Vec<Vec<Option<u64>>> = Vec::new();
        let mut run = Vec::new();
        for a in &args {
            let v = int_arg(a);
            if v.is_some() {
                run.push(v);
            } else {
                if run.len() >= 10 {
                    runs.push(std::mem::take(&mut run));
                }
                run.clear();
            }
        }
        if run.len() >= 10 {
            runs.push(run);
        }
        tile_from_runs(&mut info, &runs);
    }
    note_split_k(&mut info, name, cls);
    Some(info)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gemm_tiles::parse_kernel_name;

    const ABSCALE: &str = "void ck::kernel_gemm_xdl_cshuffle_v3<ck::GridwiseGemmMultiD_ABScale_xdl_cshuffle_v3<ck::tensor_layout::gemm::RowMajor, ck::tensor_layout::gemm::ColumnMajor, ck::Tuple<>, ck::tensor_layout::gemm::RowMajor, ck::f8_fnuz_t, ck::f8_fnuz_t, float, float, ck::Tuple<>, unsigned short, ck::tensor_operation::element_wise::PassThrough, ck::tensor_operation::element_wise::PassThrough, ck::tensor_operation::element_wise::PassThrough, (ck::tensor_operation::device::GemmSpecialization)2, 256, 1, 128, 128, 16, 128, 256, 16, 16, 16, 16, 1, 2, ck::Sequence<16, 16, 1>, ck::Sequence<1, 0, 2>, ck::Sequence<1, 0, 2>, 2, 16, 16, false, 0, ck::Sequence<16, 16, 1>, ck::Sequence<1, 0, 2>, ck::Sequence<1, 0, 2>, 2, 16, 16, false, 0, 1, 2, ck::Sequence<1, 16, 1, 16>, ck::Sequence<8>, (ck::BlockGemmPipelineScheduler)0, (ck::BlockGemmPipelineVersion)0, ck::f8_fnuz_t, ck::f8_fnuz_t, ck::f8_fnuz_t, ck::f8_fnuz_t>, true, (ck::InMemoryDataOperationEnum)0, 2, (ck::TailNumber)10>(ck::GridwiseGemmMultiD_ABScale_xdl_cshuffle_v3<ck::tensor_layout::gemm::RowMajor, ck::tensor_layout::gemm::ColumnMajor, ck::Tuple<>, ck::tensor_layout::gemm::RowMajor, ck::f8_fnuz_t, ck::f8_fnuz_t, float, float, ck::Tuple<>, unsigned short, ck::tensor_operation::element_wise::PassThrough, ck::tensor_operation::element_wise::PassThrough, ck::tensor_operation::element_wise::PassThrough, (ck::tensor_operation::device::GemmSpecialization)2, 256, 1, 128, 128, 16, 128, 256, 16, 16, 16, 16, 1, 2, ck::Sequence<16, 16, 1>, ck::Sequence<1, 0, 2>, ck::Sequence<1, 0, 2>, 2, 16, 16, false, 0, ck::Sequence<16, 16, 1>, ck::Sequence<1, 0, 2>, ck::Sequence<1, 0, 2>, 2, 16, 16, false, 0, 1, 2, ck::Sequence<1, 16, 1, 16>, ck::Sequence<8>, (ck::BlockGemmPipelineScheduler)0, (ck::BlockGemmPipelineVersion)0, ck::f8_fnuz_t, ck::f8_fnuz_t, ck::f8_fnuz_t, ck::f8_fnuz_t>::Argument)";

    fn p(name: &str) -> GemmKernelInfo {
        parse_kernel_name(name).expect("parses")
    }

    #[test]
    fn abscale_by_argument_walk() {
        let i = p(ABSCALE);
        assert_eq!(i.family, KernelFamily::ComposableKernel);
        assert_eq!((i.mt_m, i.mt_n, i.mt_k), (Some(16), Some(128), Some(256)));
        assert_eq!(i.block_threads, Some(256));
        assert_eq!(i.layout, Some((Transpose::T, Transpose::N)));
        assert!(!i.blas_column_major);
        assert!(!i.split_k_flag);
        assert!(i.notes.is_empty(), "{:?}", i.notes);
    }

    #[test]
    fn plain_v3_and_atomic_add_split_k() {
        let name = "void ck::kernel_gemm_xdl_cshuffle_v3<ck::GridwiseGemm_xdl_cshuffle_v3<ck::tensor_layout::gemm::RowMajor, ck::tensor_layout::gemm::RowMajor, ck::tensor_layout::gemm::RowMajor, ck::half_t, ck::half_t, float, ck::half_t, ck::half_t, ck::tensor_operation::element_wise::PassThrough, ck::tensor_operation::element_wise::PassThrough, ck::tensor_operation::element_wise::PassThrough, (ck::tensor_operation::device::GemmSpecialization)7, 256, 224, 256, 64, 8, 2, 16, 16, 7, 8, ck::Sequence<8, 32, 1>, ck::Sequence<1, 0, 2>, ck::Sequence<1, 0, 2>, 2, 8, 8, false, 0, ck::Sequence<16, 16, 1>, ck::Sequence<0, 2, 1>, ck::Sequence<0, 2, 1>, 1, 16, 2, false, 0, 1, 2, ck::Sequence<1, 32, 1, 8>, 8, (ck::BlockGemmPipelineScheduler)0, (ck::BlockGemmPipelineVersion)2, ck::half_t, ck::half_t, false, false>, true, (ck::InMemoryDataOperationEnum)1, 1, (ck::TailNumber)10>(ck::GridwiseGemm_xdl_cshuffle_v3<...>::Argument)";
        let i = p(name);
        // waves = (224 / (7*16)) * (256 / (8*16)) = 2 * 2 = 4 -> 256 threads.
        assert_eq!((i.mt_m, i.mt_n, i.mt_k), (Some(224), Some(256), Some(64)));
        assert_eq!(i.layout, Some((Transpose::T, Transpose::T)));
        assert!(i.split_k_flag);
    }

    #[test]
    fn unknown_class_found_by_cross_check() {
        // A made-up class name with the ABScale parameter order.
        let name = "void ck::kernel_foo<ck::GridwiseGemmSomethingNew<ck::tensor_layout::gemm::RowMajor, ck::tensor_layout::gemm::ColumnMajor, (ck::tensor_operation::device::GemmSpecialization)0, 256, 1, 128, 128, 16, 128, 256, 16, 16, 16, 16, 1, 2, ck::Sequence<1>>>";
        let i = p(name);
        assert_eq!((i.mt_m, i.mt_n, i.mt_k), (Some(16), Some(128), Some(256)));
        assert!(i.notes.iter().any(|n| n.contains("ABScale")));
    }

    #[test]
    fn mx_class_scale_before_block() {
        let name = "void ck::kernel_gemm_xdl_cshuffle_v3_mx<false, ck::GridwiseGemmMX_xdl_cshuffle_v3<ck::tensor_layout::gemm::RowMajor, ck::tensor_layout::gemm::ColumnMajor, ck::tensor_layout::gemm::RowMajor, ck::f4x2_pk_t, ck::e8m0_bexp_t, ck::f4x2_pk_t, ck::e8m0_bexp_t, float, ck::half_t, ck::half_t, ck::tensor_operation::element_wise::PassThrough, ck::tensor_operation::element_wise::PassThrough, ck::tensor_operation::element_wise::PassThrough, (ck::tensor_operation::device::GemmSpecialization)0, 32, 256, 128, 128, 256, 16, 16, 16, 16, 4, 4, ck::Sequence<16, 16, 1>>, true, (ck::InMemoryDataOperationEnum)0, 1, (ck::TailNumber)10>";
        let i = p(name);
        // waves = (128 / (4*16)) * (128 / (4*16)) = 4 -> 256 threads.
        assert_eq!((i.mt_m, i.mt_n, i.mt_k), (Some(128), Some(128), Some(256)));
        assert_eq!(i.block_threads, Some(256));
    }

    #[test]
    fn mangled_conv_fwd() {
        // TraceLens MI300 ResNet trace, kernel_grouped_conv_fwd_xdl_cshuffle_v3 (head only).
        let name = "_ZN2ck16tensor_operation6device12_GLOBAL__N_139kernel_grouped_conv_fwd_xdl_cshuffle_v3INS_28GridwiseGemm_xdl_cshuffle_v3INS_13tensor_layout4gemm8RowMajorENS6_11ColumnMajorES7_ttfttNS0_12element_wise11PassThroughESA_SA_LNS1_18GemmSpecializationE7ELi128ELi16ELi32ELi64ELi8ELi8ELi16ELi16ELi1ELi1ENS_8SequenceIJLi8ELi16ELi1EEEE";
        let i = p(name);
        // waves = (16 / 16) * (32 / 16) = 2 -> 128 threads.
        assert_eq!((i.mt_m, i.mt_n, i.mt_k), (Some(16), Some(32), Some(64)));
        assert!(i.implicit_conv);
    }

    #[test]
    fn mangled_without_gemm_specialization() {
        // GridwiseGemmMultipleD_xdl_cshuffle: InMemoryDataOperationEnum, NumGemmKPrefetchStage,
        // BlockSize, M, N, K, AK1, BK1, MPerXdl, NPerXdl, MXdlPerWave, NXdlPerWave.
        let name = "_ZN2ck16tensor_operation6device12_GLOBAL__N_149kernel_grouped_conv_fwd_multiple_abd_xdl_cshuffleINS_34GridwiseGemmMultipleD_xdl_cshuffleItttftNS_5TupleIJEEEtNS0_12element_wise11PassThroughES8_S8_LNS_25InMemoryDataOperationEnumE0ELi1ELi256ELi128ELi64ELi32ELi8ELi8ELi32ELi32ELi2ELi1ENS_8SequenceIJLi4ELi64ELi1EEEE";
        let i = p(name);
        assert_eq!((i.mt_m, i.mt_n, i.mt_k), (Some(128), Some(64), Some(32)));
    }

    #[test]
    fn ck_tile_shape() {
        let name = "void ck_tile::kentry<256, 1, ck_tile::GemmKernel<ck_tile::GemmTile1DPartitioner<ck_tile::TileGemmShape<ck_tile::sequence<256, 128, 64>, ck_tile::sequence<2, 2, 1>, ck_tile::sequence<32, 32, 16>, false> >, ck_tile::GemmPipelineAgBgCrCompV3<...> > >(...)";
        let i = p(name);
        assert_eq!(i.family, KernelFamily::CkTile);
        assert_eq!((i.mt_m, i.mt_n, i.mt_k), (Some(256), Some(128), Some(64)));
    }

    #[test]
    fn non_gemm_ck_kernels_are_none() {
        assert_eq!(
            parse_kernel_name("void ck::kernel_normalization<ck::GridwiseNormalizationWelfordVariance_mk_to_mk<ck::half_t, float>>(...)"),
            None
        );
    }

    #[test]
    fn splitter_handles_nesting_and_truncation() {
        let s = "X<a<b, c>, (d)1, {e, f}, 7>tail";
        let (args, complete) = split_template_args(s, 2);
        assert_eq!(args, vec!["a<b, c>", "(d)1", "{e, f}", "7"]);
        assert!(complete);
        let (args, complete) = split_template_args("X<1, 2, 3", 2);
        assert_eq!(args, vec!["1", "2", "3"]);
        assert!(!complete);
        assert_eq!(int_arg(" 256u "), Some(256));
        assert_eq!(int_arg("ck::Sequence<1>"), None);
    }
}
