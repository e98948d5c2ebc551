//! Triton kernels `torch.compile` (Inductor) generated, each launched under a CPU op of
//! its own name (`triton_poi_fused_add_3`, `triton_red_…`, `triton_per_…`,
//! `triton_tem_fused_mm_…`) whose recorded arguments are the kernel's: its buffers
//! (`in_ptr`, `out_ptr`, `in_out_ptr` tensors) and its sizes (`xnumel`, then `r0_numel`
//! for reductions) as concrete integers. Table `Triton` (ours; TraceLens only labels
//! them `triton`).
//!
//! Classified by Inductor's kernel-name prefix: `poi` point-wise, `red` reduction
//! (looped), `per` persistent reduction (a row in one block), `tem` template (GEMM and
//! convolution templates; `mm`, `bmm`, `addmm` in the name). Model:
//! - bytes: every buffer argument once, at its recorded size — a compiled graph's
//!   kernel reads each input and writes each output once. An `in_out_ptr` buffer is
//!   read and written but the arguments do not say which one is: counted once, so the
//!   bytes are a lower bound;
//! - FLOPs: point-wise `xnumel` (one operation per output element) and reductions
//!   `xnumel·r0_numel` (one per reduced element): lower bounds, as the fused graph's
//!   operation count per element is not in the trace (the kernel name lists the fused
//!   ATen ops, not their arithmetic);
//! - templates whose buffers hold a matrix product `A [.., M, K]`, `B [.., K, N]`
//!   `→ [.., M, N]`: `2·M·N·K` (times the batch) on the matrix unit.

// The formulas name dimensions as the docs do (N, C, H, W, k).
#![allow(clippy::many_single_char_names)]

use super::args::{bpe_of, custom_work, finish, mul, numel, sum, vector_precision, Args, R};
use super::{
    dtype_precision, Category, Dims, ExecUnit, OpClass, OpModel, ParamValue, Params, Precision,
    Table,
};

/// Inductor's kernel kinds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TritonKind {
    Pointwise,
    Reduction,
    PersistentReduction,
    /// A template kernel: a matrix product when `mm` is in the name.
    Template {
        mm: bool,
    },
}

impl TritonKind {
    /// The kind of an Inductor kernel or op name (`None`: not one).
    pub fn of(name: &str) -> Option<TritonKind> {
        let rest = name.strip_prefix("triton_")?;
        let k = if rest.starts_with("poi_") {
            TritonKind::Pointwise
        } else if rest.starts_with("red_") {
            TritonKind::Reduction
        } else if rest.starts_with("per_") {
            TritonKind::PersistentReduction
        } else if rest.starts_with("tem_") {
            TritonKind::Template { mm: rest.contains("mm") }
        } else {
            return None;
        };
        Some(k)
    }

    /// `pointwise`, `reduction`, `persistent_reduction`, `template_mm`, `template`.
    pub fn as_str(self) -> &'static str {
        match self {
            TritonKind::Pointwise => "pointwise",
            TritonKind::Reduction => "reduction",
            TritonKind::PersistentReduction => "persistent_reduction",
            TritonKind::Template { mm: true } => "template_mm",
            TritonKind::Template { mm: false } => "template",
        }
    }

    /// Our category of the kind.
    pub fn category(self) -> Category {
        match self {
            TritonKind::Pointwise => Category::Elementwise,
            TritonKind::Reduction | TritonKind::PersistentReduction => Category::Reduce,
            TritonKind::Template { mm: true } => Category::Gemm,
            TritonKind::Template { mm: false } => Category::Other,
        }
    }
}

pub(super) fn is_triton_op(name: &str) -> bool {
    TritonKind::of(name).is_some()
}

/// A matrix product among the buffers: `(batch, M, N, K, dtype)` for `A [.., M, K]`,
/// `B [.., K, N]` and an output `[.., M, N]`.
fn find_mm(bufs: &[(Vec<i64>, String)]) -> Option<(u128, u128, u128, u128, String)> {
    let two = |s: &[i64]| -> Option<(u128, u128, u128)> {
        let n = s.len();
        if n < 2 {
            return None;
        }
        let batch = numel(&s[..n - 2]).ok()?;
        Some((batch, u128::try_from(s[n - 2]).ok()?, u128::try_from(s[n - 1]).ok()?))
    };
    for (i, (a, ta)) in bufs.iter().enumerate() {
        let Some((ba, m, k)) = two(a) else { continue };
        for (j, (b, _)) in bufs.iter().enumerate() {
            let Some((bb, k2, n)) = two(b) else { continue };
            if i == j || k2 != k || (bb != ba && bb != 1) {
                continue;
            }
            let out = bufs.iter().enumerate().any(|(o, (c, _))| {
                o != i
                    && o != j
                    && two(c).is_some_and(|(bc, m2, n2)| bc == ba && m2 == m && n2 == n)
            });
            if out {
                return Some((ba, m, n, k, ta.clone()));
            }
        }
    }
    None
}

pub(super) fn triton(name: &str, a: &Args) -> R<OpModel> {
    let kind = TritonKind::of(name).ok_or_else(|| format!("`{name}` is not a Triton kernel"))?;
    let mut bufs: Vec<(Vec<i64>, String)> = Vec::new();
    let mut sizes: Vec<u128> = Vec::new();
    for (i, d) in a.args.input_dims.iter().enumerate() {
        match d {
            Dims::Tensor(s) if !s.is_empty() => bufs.push((s.clone(), a.dtype(i)?)),
            _ => {
                if let Some(v) = a.concrete(i).and_then(|c| c.trim().parse::<u128>().ok()) {
                    sizes.push(v);
                }
            }
        }
    }
    if bufs.is_empty() {
        return Err(format!(
            "`{name}` ({}): no buffer argument has a recorded shape (record_shapes=True)",
            kind.as_str()
        ));
    }
    let mut bytes = 0u128;
    for (s, t) in &bufs {
        bytes = sum(&[bytes, mul(&[numel(s)?, bpe_of(t)?])?])?;
    }
    let dtype = bufs[0].1.clone();
    let shapes: Vec<&Vec<i64>> = bufs.iter().map(|(s, _)| s).collect();
    let (flops, formula, class, unit, precision, note) = match kind {
        TritonKind::Pointwise => {
            let x = *sizes.first().ok_or_else(|| format!("`{name}`: xnumel is not recorded"))?;
            (
                x,
                format!("xnumel = {x} (≥ 1 operation per output element)"),
                OpClass::Elementwise,
                ExecUnit::Vector,
                vector_precision(&dtype),
                "FLOPs are a lower bound: one operation per output element",
            )
        }
        TritonKind::Reduction | TritonKind::PersistentReduction => {
            let (x, r) = match sizes.as_slice() {
                [x, r, ..] => (*x, *r),
                _ => return Err(format!("`{name}`: xnumel and r0_numel are not recorded")),
            };
            let f = mul(&[x, r])?;
            (
                f,
                format!("xnumel*r0_numel = {x}*{r} (≥ 1 operation per reduced element)"),
                OpClass::Reduction,
                ExecUnit::Vector,
                vector_precision(&dtype),
                "FLOPs are a lower bound: one operation per reduced element",
            )
        }
        TritonKind::Template { .. } => {
            let (batch, m, n, k, t) = find_mm(&bufs).ok_or_else(|| {
                format!(
                    "`{name}` (template): no A [M, K], B [K, N] → [M, N] among the buffers \
                     {shapes:?}"
                )
            })?;
            let f = mul(&[2, batch, m, n, k])?;
            let p = dtype_precision(&t).unwrap_or(Precision::Fp32);
            let p = if p == Precision::Fp32 { Precision::Tf32 } else { p };
            (
                f,
                format!("2*batch*M*N*K = 2*{batch}*{m}*{n}*{k}"),
                OpClass::Gemm,
                ExecUnit::Matrix,
                p,
                "a matrix product found among the template's buffers",
            )
        }
    };
    let work = custom_work(
        class,
        format!("{} {shapes:?}", kind.as_str()),
        flops,
        formula,
        precision,
        unit,
        bytes,
        0,
        format!("Σ buffers = {bytes} B (each buffer read or written once; in-place buffers once)"),
        vec![
            note.to_string(),
            "bytes are a lower bound: an in-place buffer is read and written but counted once"
                .to_string(),
        ],
    );
    let mut p = Params::default();
    p.push("kind", ParamValue::Str(kind.as_str().to_string()));
    p.push("buffers", ParamValue::Str(format!("{shapes:?}")));
    p.push(
        "sizes",
        ParamValue::Ints(sizes.iter().map(|&s| i64::try_from(s).unwrap_or(i64::MAX)).collect()),
    );
    p.push("dtypes", ParamValue::Dtypes(bufs.iter().map(|(_, t)| Some(t.clone())).collect()));
    Ok(finish(Table::Triton, p, work, None))
}
