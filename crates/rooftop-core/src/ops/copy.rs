//! Device-to-device copies (`aten::copy_`, `contiguous()`, memcpy DtoD): no FLOPs, the
//! source read once and the destination written once — the pure-bandwidth case of
//! the element-wise row of docs/reference/formulas.md#work-models.

use super::count::{self, bpe, dim, vector_work as finish, Terms};
use super::{OpClass, OpError, Work};
use crate::units::Precision;
use serde::{Deserialize, Serialize};

/// A copy of `elements` elements of `dtype`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct CopySpec {
    /// Elements copied.
    pub elements: u64,
    /// Storage precision of source and destination.
    pub dtype: Precision,
}

impl CopySpec {
    /// A copy of `bytes` bytes (counted as `bytes` int8 elements).
    pub fn bytes(bytes: u64) -> CopySpec {
        CopySpec { elements: bytes, dtype: Precision::Int8 }
    }

    /// The (zero) FLOPs and minimum DRAM bytes of this copy.
    pub fn work(&self) -> Result<Work, OpError> {
        let e = dim("elements", self.elements)?;
        let x = self.dtype;
        let ev = self.elements;
        let sx = bpe(x);
        let bits = count::mul("bytes copied", &[e, u128::from(x.bits())])?;
        let mut read = Terms::new();
        read.push("source", format!("E*{sx}"), format!("{ev}*{sx}"), bits);
        let mut write = Terms::new();
        write.push("destination", format!("E*{sx}"), format!("{ev}*{sx}"), bits);
        let assumptions =
            vec!["source read once, destination written once; no arithmetic".to_string()];
        finish(OpClass::Copy, format!("E={ev} {x}"), x, &Terms::new(), &read, &write, assumptions)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copy_moves_twice_its_size() {
        // 1,000 fp16 elements: read 2,000 B, write 2,000 B, no FLOPs.
        let w = CopySpec { elements: 1000, dtype: Precision::Fp16 }.work().unwrap();
        assert_eq!(w.bytes_read, 2000.0);
        assert_eq!(w.bytes_written, 2000.0);
        assert_eq!(w.flops, 0.0);
        assert_eq!(w.flops_formula, "0");
        assert_eq!(w.arithmetic_intensity(), 0.0);
        assert_eq!(CopySpec::bytes(4096).work().unwrap().bytes(), 8192.0);
        assert_eq!(
            CopySpec { elements: 0, dtype: Precision::Fp16 }.work().unwrap_err(),
            OpError::ZeroDim { name: "elements", value: 0 }
        );
    }
}
