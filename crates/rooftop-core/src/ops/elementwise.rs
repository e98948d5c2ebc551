//! Element-wise (map) operations: unary (SiLU, ReLU, cast-free activations), binary
//! (add, mul, with one operand broadcast), and n-ary fused element-wise kernels.
//!
//! Bytes (docs/reference/formulas.md#work-models: N read, N written, times the element size),
//! generalised: every full-size input is read once, a broadcast operand is read
//! once at its own size (TraceLens `BinaryElementwise.bytes_func` counts the same), and
//! every output is written once.
//!
//! FLOPs: `elements * flops_per_element` on the vector unit in FP32 (1 for add/mul, the
//! TraceLens convention; a fused SiLU-and-multiply is a handful). The caller states the
//! count: transcendental functions cost what the caller says they cost.

use super::count::{self, bpe, dim, vector_work_f64, Terms};
use super::{OpClass, OpError, Work};
use crate::units::Precision;
use serde::{Deserialize, Serialize};
use std::fmt::Write as _;

/// An element-wise operation over `elements` output elements.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ElementwiseSpec {
    /// Output elements (the broadcast shape's element count).
    pub elements: u64,
    /// Input tensors: 1 for unary, 2 for binary; 0 for a fill.
    pub inputs: u32,
    /// Output tensors (an in-place op still writes its one output).
    pub outputs: u32,
    /// Storage precision of every input and output.
    pub dtype: Precision,
    /// Operations per output element (1 for add or mul).
    pub flops_per_element: f64,
    /// Element count of one input that is broadcast (e.g. a bias of C elements added to
    /// N×C); the other inputs are full size. `None`: every input has `elements`.
    pub broadcast_elements: Option<u64>,
}

impl ElementwiseSpec {
    /// A unary op: one input, one output.
    pub fn unary(elements: u64, dtype: Precision, flops_per_element: f64) -> ElementwiseSpec {
        ElementwiseSpec {
            elements,
            inputs: 1,
            outputs: 1,
            dtype,
            flops_per_element,
            broadcast_elements: None,
        }
    }

    /// A binary op: two inputs of `elements`, one output.
    pub fn binary(elements: u64, dtype: Precision, flops_per_element: f64) -> ElementwiseSpec {
        ElementwiseSpec {
            elements,
            inputs: 2,
            outputs: 1,
            dtype,
            flops_per_element,
            broadcast_elements: None,
        }
    }

    /// The FLOPs and minimum DRAM bytes of this element-wise op.
    pub fn work(&self) -> Result<Work, OpError> {
        let e = dim("elements", self.elements)?;
        let outputs = dim("outputs", u64::from(self.outputs))?;
        let fpe = self.flops_per_element;
        if !fpe.is_finite() || fpe < 0.0 {
            return Err(OpError::Invalid(format!(
                "flops_per_element must be a finite number >= 0, got {fpe}"
            )));
        }
        let ev = self.elements;
        let x = self.dtype;
        let sx = bpe(x);
        let bits = u128::from(x.bits());
        let inputs = u128::from(self.inputs);

        let mut read = Terms::new();
        match self.broadcast_elements {
            None => {
                if inputs > 0 {
                    read.push(
                        "inputs",
                        format!("inputs*E*{sx}"),
                        format!("{}*{ev}*{sx}", self.inputs),
                        count::mul("bytes read", &[inputs, e, bits])?,
                    );
                }
            }
            Some(b) => {
                if inputs == 0 {
                    return Err(OpError::Invalid(
                        "a broadcast operand needs at least one input, but inputs is 0".to_string(),
                    ));
                }
                let bc = dim("broadcast_elements", b)?;
                if bc > e {
                    return Err(OpError::Invalid(format!(
                        "the broadcast operand ({b} elements) cannot have more elements than the output ({ev})"
                    )));
                }
                if inputs > 1 {
                    read.push(
                        "full-size inputs",
                        format!("(inputs-1)*E*{sx}"),
                        format!("{}*{ev}*{sx}", self.inputs - 1),
                        count::mul("bytes read", &[inputs - 1, e, bits])?,
                    );
                }
                read.push(
                    "broadcast input",
                    format!("B*{sx}"),
                    format!("{b}*{sx}"),
                    count::mul("bytes read", &[bc, bits])?,
                );
            }
        }
        let mut write = Terms::new();
        write.push(
            "outputs",
            format!("outputs*E*{sx}"),
            format!("{}*{ev}*{sx}", self.outputs),
            count::mul("bytes written", &[outputs, e, bits])?,
        );

        let flops = count::to_f64(e) * fpe;
        if !flops.is_finite() {
            return Err(count::overflow("FLOPs"));
        }
        let flops_formula = format!("E*flops_per_element = {ev}*{fpe} = {flops}");

        let mut assumptions = vec![
            "each input element is read once and each output element written once".to_string(),
            count::vector_precision_note(x),
            format!("FLOPs: {fpe} per output element, as given"),
        ];
        if let Some(b) = self.broadcast_elements {
            assumptions.push(format!(
                "one input is broadcast from {b} elements and read once at that size"
            ));
        }
        let mut shape = format!("E={ev} {x} in={} out={}", self.inputs, self.outputs);
        if let Some(b) = self.broadcast_elements {
            let _ = write!(shape, " broadcast={b}");
        }
        vector_work_f64(
            OpClass::Elementwise,
            shape,
            x,
            (flops, flops_formula),
            &read,
            &write,
            assumptions,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: f64 = 1_048_576.0;

    #[test]
    fn unary_reads_and_writes_each_element_once() {
        // Element-wise over N elements reads N, writes N, times the element size.
        // SiLU over 1,000,000 bf16 elements: 2,000,000 B read, 2,000,000 B written.
        let w = ElementwiseSpec::unary(1_000_000, Precision::Bf16, 4.0).work().unwrap();
        assert_eq!(w.bytes_read, 2_000_000.0);
        assert_eq!(w.bytes_written, 2_000_000.0);
        assert_eq!(w.flops, 4_000_000.0);
        assert_eq!(w.class, OpClass::Elementwise);
        assert_eq!(w.precision, Precision::Fp32);
        assert_eq!(w.shape, "E=1000000 bf16 in=1 out=1");
    }

    #[test]
    fn fill_reads_nothing_and_fractional_flops_work() {
        // zeros: 0 inputs, 1 output of 10 fp32 elements.
        let w = ElementwiseSpec { inputs: 0, ..ElementwiseSpec::unary(10, Precision::Fp32, 0.5) }
            .work()
            .unwrap();
        assert_eq!(w.bytes_read, 0.0);
        assert_eq!(w.bytes_written, 40.0);
        assert_eq!(w.flops, 5.0);
        assert!(w.bytes_formula.starts_with("read 0 B;"), "{}", w.bytes_formula);
    }

    #[test]
    fn invalid_options() {
        let bad = |s: ElementwiseSpec| s.work().unwrap_err();
        assert!(matches!(
            bad(ElementwiseSpec::unary(10, Precision::Fp32, f64::NAN)),
            OpError::Invalid(_)
        ));
        assert!(matches!(
            bad(ElementwiseSpec::unary(10, Precision::Fp32, -1.0)),
            OpError::Invalid(_)
        ));
        let e = bad(ElementwiseSpec {
            broadcast_elements: Some(11),
            ..ElementwiseSpec::binary(10, Precision::Fp32, 1.0)
        });
        assert!(matches!(e, OpError::Invalid(ref s) if s.contains("11 elements")), "{e}");
        let e = bad(ElementwiseSpec {
            inputs: 0,
            broadcast_elements: Some(1),
            ..ElementwiseSpec::binary(10, Precision::Fp32, 1.0)
        });
        assert!(matches!(e, OpError::Invalid(_)));
        let e = bad(ElementwiseSpec {
            outputs: 0,
            ..ElementwiseSpec::binary(10, Precision::Fp32, 1.0)
        });
        assert_eq!(e, OpError::ZeroDim { name: "outputs", value: 0 });
        let e = bad(ElementwiseSpec::unary(u64::MAX, Precision::Fp32, f64::MAX));
        assert!(matches!(e, OpError::Overflow(_)));
    }

    // TraceLens goldens (BinaryElementwise.csv): FLOPs = output elements, bytes = in1 + in2
    // (at its own, possibly broadcast, size) + out, all bf16. We match them exactly.
    // (No UnaryElementwise.csv exists in these fixtures.)

    #[test]
    fn tracelens_falconsai_binary_add() {
        // tracelens_h100/Falconsai_nsfw_image_detection__1016002_perf_report_csvs/BinaryElementwise.csv
        // aten::add (4, 197, 768) + (4, 197, 768) bf16: GFLOPS_first=0.000605184,
        // Data Moved (MB)_first=3.462890625
        let w = ElementwiseSpec::binary(4 * 197 * 768, Precision::Bf16, 1.0).work().unwrap();
        assert_eq!(w.flops, 605_184.0);
        // 3*605,184*2 = 3,631,104 B
        assert_eq!(w.bytes(), 3_631_104.0);
        assert_eq!(w.bytes() / MIB, 3.462_890_625);
    }

    #[test]
    fn tracelens_falconsai_broadcast_adds() {
        // Same file: aten::add_ (4, 768, 14, 14) + (1, 768, 1, 1): GFLOPS_first=0.000602112,
        // Data Moved (MB)_first=2.29833984375
        let e = 4 * 768 * 14 * 14; // 602,112
        let w = ElementwiseSpec {
            broadcast_elements: Some(768),
            ..ElementwiseSpec::binary(e, Precision::Bf16, 1.0)
        }
        .work()
        .unwrap();
        assert_eq!(w.flops, 602_112.0);
        // (602,112 + 768 + 602,112)*2 = 2,409,984 B
        assert_eq!(w.bytes(), 2_409_984.0);
        assert_eq!(w.bytes() / MIB, 2.298_339_843_75);
        // aten::add (4, 197, 768) + (1, 197, 768): GFLOPS_first=0.000605184,
        // Data Moved (MB)_first=2.59716796875
        let w = ElementwiseSpec {
            broadcast_elements: Some(197 * 768),
            ..ElementwiseSpec::binary(4 * 197 * 768, Precision::Bf16, 1.0)
        }
        .work()
        .unwrap();
        assert_eq!(w.flops, 605_184.0);
        // (605,184 + 151,296 + 605,184)*2 = 2,723,328 B
        assert_eq!(w.bytes() / MIB, 2.597_167_968_75);
    }

    #[test]
    fn tracelens_bert_binary_add() {
        // tracelens_mi300/gaunernst_bert-small-uncased__1016001_perf_report_csvs/BinaryElementwise.csv
        // (same in tracelens_h100): aten::add (1, 141, 512) + (1, 141, 512) bf16:
        // GFLOPS_first=7.2192e-05, Data Moved (MB)_first=0.4130859375
        let w = ElementwiseSpec::binary(141 * 512, Precision::Bf16, 1.0).work().unwrap();
        assert_eq!(w.flops, 72_192.0);
        assert_eq!(w.bytes() / MIB, 0.413_085_937_5);
    }
}
