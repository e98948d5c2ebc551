//! XLA op categories: the label of an HLO instruction in the XLA op summary (close to
//! XProf's "HLO op category": `gemm`, `convolution`, `attention`, `collective`,
//! `loop fusion`, `input fusion`, `custom-call`, ...) and our coarse [`Category`] (GEMM,
//! SDPA, Comm, ...) for the shared ops and kernel summaries.
//!
//! With the instruction (the profile carries the module's HLO) the category follows its
//! opcode, fusion kind, custom-call target and the work model [`super::work`] finds;
//! without it, the `hlo_op` name (XLA names fusions after their kind and root:
//! `loop_reduce_fusion.3`, `input_transpose_fusion`, `gemm_fusion_dot.1`) and the first
//! kernel's name decide.

use super::collective;
use super::hlo::HloInstr;
use super::work;
use crate::trace::ops::{categorize_kernel, Category, Table};

/// The category of one XLA op.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct XlaClass {
    /// The XLA op summary's label.
    pub label: &'static str,
    pub category: Category,
}

const fn c(label: &'static str, category: Category) -> XlaClass {
    XlaClass { label, category }
}

/// `name` without the `.N` suffix XLA adds to make names unique.
pub fn base_name(name: &str) -> &str {
    let trimmed = name.trim_end_matches(|ch: char| ch.is_ascii_digit());
    match trimmed.strip_suffix('.') {
        Some(b) if trimmed.len() < name.len() => b,
        _ => name,
    }
}

/// The category of an XLA op from its instruction (when known), its `hlo_op` name and
/// the name of its first kernel.
pub fn classify(instr: Option<&HloInstr>, hlo_op: &str, first_kernel: Option<&str>) -> XlaClass {
    match instr {
        Some(i) => by_instr(i),
        None => by_name(hlo_op, first_kernel),
    }
}

fn by_instr(i: &HloInstr) -> XlaClass {
    if collective::kind(i).is_some() {
        return c("collective", Category::Comm);
    }
    match work::table_of(i) {
        Some(Table::Gemm) => return c("gemm", Category::Gemm),
        Some(Table::SdpaFwd | Table::SdpaBwd) => return c("attention", Category::Sdpa),
        Some(Table::ConvFwd | Table::ConvBwd) => return c("convolution", Category::Conv),
        _ => {}
    }
    let lname = i.name.to_ascii_lowercase();
    match i.opcode.as_str() {
        "fusion" => {
            let cat = fusion_category(&lname, i);
            match i.fusion_kind.as_deref() {
                Some("kLoop") => c("loop fusion", cat),
                Some("kInput") => c("input fusion", cat),
                Some("kOutput") => c("output fusion", cat),
                _ => c("custom fusion", cat),
            }
        }
        "custom-call" => {
            let t = i.custom_call_target.as_deref().unwrap_or("").to_ascii_lowercase();
            let cat = if t.contains("softmax") {
                Category::Softmax
            } else if t.contains("norm") {
                Category::Normalization
            } else if t.contains("attn") || t.contains("fmha") || t.contains("attention") {
                Category::Sdpa
            } else {
                Category::Other
            };
            c("custom-call", cat)
        }
        "copy" | "copy-start" | "copy-done" => c("data movement", Category::Memcpy),
        "transpose"
        | "concatenate"
        | "slice"
        | "dynamic-slice"
        | "dynamic-update-slice"
        | "pad"
        | "gather"
        | "scatter"
        | "bitcast"
        | "reshape"
        | "broadcast"
        | "iota" => c("data movement", Category::DataMovement),
        "reduce" | "reduce-window" | "reduce-precision" => c("reduce", Category::Reduce),
        "sort" => c("sort", Category::Other),
        "rng" | "rng-bit-generator" | "rng-get-and-update-state" => c("rng", Category::Other),
        "while" | "conditional" | "call" | "async-start" | "async-done" => {
            c("control flow", Category::Other)
        }
        op if is_elementwise_opcode(op) => c("elementwise", Category::Elementwise),
        _ => c("other", Category::Other),
    }
}

fn fusion_category(lname: &str, i: &HloInstr) -> Category {
    if lname.contains("softmax") {
        Category::Softmax
    } else if lname.contains("reduce") || i.core().opcode == "reduce" {
        Category::Reduce
    } else if lname.contains("norm") {
        Category::Normalization
    } else if i.fusion_kind.as_deref() == Some("kCustom") {
        Category::Other
    } else {
        Category::Elementwise
    }
}

fn is_elementwise_opcode(op: &str) -> bool {
    matches!(
        op,
        "add"
            | "subtract"
            | "multiply"
            | "divide"
            | "maximum"
            | "minimum"
            | "power"
            | "remainder"
            | "and"
            | "or"
            | "xor"
            | "not"
            | "negate"
            | "abs"
            | "sign"
            | "exponential"
            | "exponential-minus-one"
            | "log"
            | "log-plus-one"
            | "logistic"
            | "sqrt"
            | "rsqrt"
            | "cbrt"
            | "tanh"
            | "sine"
            | "cosine"
            | "tan"
            | "erf"
            | "floor"
            | "ceil"
            | "round-nearest-afz"
            | "round-nearest-even"
            | "clamp"
            | "select"
            | "compare"
            | "convert"
            | "bitcast-convert"
            | "atan2"
            | "is-finite"
            | "popcnt"
            | "shift-left"
            | "shift-right-arithmetic"
            | "shift-right-logical"
    )
}

fn by_name(hlo_op: &str, first_kernel: Option<&str>) -> XlaClass {
    let b = base_name(hlo_op).to_ascii_lowercase();
    if collective::kind_from_name(&b).is_some() {
        return c("collective", Category::Comm);
    }
    if b.contains("gemm") || b.contains("cublas") || b.starts_with("dot") || b.contains("matmul") {
        return c("gemm", Category::Gemm);
    }
    if b.contains("fused_attn") || b.contains("fmha") || b.contains("flash") {
        return c("attention", Category::Sdpa);
    }
    if b.starts_with("convolution") || b.contains("cudnn-conv") || b.contains("conv_fusion") {
        return c("convolution", Category::Conv);
    }
    let by_kernel = first_kernel.and_then(categorize_kernel);
    let cat = if b.contains("reduce") {
        Category::Reduce
    } else {
        by_kernel.unwrap_or(Category::Elementwise)
    };
    if b.starts_with("loop_") || b == "fusion" || b.starts_with("wrapped_") {
        return c("loop fusion", cat);
    }
    if b.starts_with("input_") {
        return c("input fusion", cat);
    }
    if b.starts_with("output_") {
        return c("output fusion", cat);
    }
    if b.contains("fusion") {
        return c("fusion", cat);
    }
    if b.starts_with("custom-call") {
        return c("custom-call", by_kernel.unwrap_or(Category::Other));
    }
    if b.starts_with("copy") || b.starts_with("transpose") {
        return c("data movement", Category::Memcpy);
    }
    c("other", by_kernel.unwrap_or(Category::Other))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::xla::hlo::{DotDims, HloShape};

    #[test]
    fn base_names_drop_the_uniquifier() {
        assert_eq!(base_name("gemm_fusion_dot.3"), "gemm_fusion_dot");
        assert_eq!(base_name("loop_reduce_fusion"), "loop_reduce_fusion");
        assert_eq!(base_name("custom-call.1"), "custom-call");
        assert_eq!(base_name("all-reduce-start.12"), "all-reduce-start");
        assert_eq!(base_name("f32"), "f32");
    }

    #[test]
    fn categories_from_instructions_and_names() {
        let dot = HloInstr {
            name: "dot.1".into(),
            opcode: "dot".into(),
            shape: HloShape::array("f32", &[4, 8]),
            operands: vec![HloShape::array("f32", &[4, 2]), HloShape::array("f32", &[2, 8])],
            dot: Some(DotDims {
                lhs_contracting: vec![1],
                rhs_contracting: vec![0],
                ..DotDims::default()
            }),
            ..HloInstr::default()
        };
        assert_eq!(classify(Some(&dot), "dot.1", None), c("gemm", Category::Gemm));
        let fusion = HloInstr {
            name: "loop_reduce_fusion.1".into(),
            opcode: "fusion".into(),
            fusion_kind: Some("kLoop".into()),
            ..HloInstr::default()
        };
        assert_eq!(classify(Some(&fusion), "x", None), c("loop fusion", Category::Reduce));
        let ar = HloInstr { opcode: "all-reduce-start".into(), ..HloInstr::default() };
        assert_eq!(classify(Some(&ar), "x", None).category, Category::Comm);
        // Without HLO: by name.
        assert_eq!(classify(None, "gemm_fusion_dot.3", None).category, Category::Gemm);
        assert_eq!(classify(None, "te_fused_attn_backward_ffi.12", None).category, Category::Sdpa);
        assert_eq!(
            classify(None, "input_reduce_fusion", None),
            c("input fusion", Category::Reduce)
        );
        assert_eq!(classify(None, "all-gather-start.2", None).category, Category::Comm);
        assert_eq!(classify(None, "wrapped_convert", None).label, "loop fusion");
    }

    /// A standalone transpose, slice or gather is data movement, the category PyTorch's
    /// `cat` and `index_select` have, so a JAX and a PyTorch report agree; a copy stays
    /// Memcpy, an add Elementwise.
    #[test]
    fn data_movement_is_its_own_category() {
        let op = |opcode: &str| HloInstr { opcode: opcode.into(), ..HloInstr::default() };
        for opcode in ["transpose", "concatenate", "slice", "dynamic-update-slice", "gather"] {
            assert_eq!(
                classify(Some(&op(opcode)), "x", None),
                c("data movement", Category::DataMovement),
                "{opcode}"
            );
        }
        assert_eq!(classify(Some(&op("copy")), "x", None), c("data movement", Category::Memcpy));
        assert_eq!(classify(Some(&op("add")), "x", None), c("elementwise", Category::Elementwise));
    }
}
