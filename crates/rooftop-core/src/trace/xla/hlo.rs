//! HLO as the XLA analysis needs it: element types, shapes (from the `HloProto` the
//! profile carries, or parsed from HLO text), and the instructions the device ran.
//!
//! Element types and their sizes are XLA's `PrimitiveType` (`xla/xla_data.proto`):
//! `pred` is one byte, sub-byte types (`s4`, `u4`, `f4e2m1fn`, ...) are counted in bits
//! and rounded up to whole bytes per array, as XLA's `ShapeUtil::ByteSizeOf` packs them.
//! Shapes print as HLO text does (`bf16[2,4096,6144]`, tuples in parentheses).
//!
//! Invariant: nothing here panics on any input. Counts are checked `u128`; a negative
//! dimension or an unknown element type gives `None`, never a wrong number.

use crate::units::Precision;
use serde::Serialize;
use std::fmt::Write as _;

/// Bits of one element of an XLA element type, by its HLO text name (`bf16`, `f32`,
/// `s8`, `pred`, `f8e4m3fn`, ...). `None` for `tuple`, `token`, `opaque` and unknown
/// names.
pub fn dtype_bits(name: &str) -> Option<u32> {
    let b = match name {
        "pred" | "s8" | "u8" => 8,
        "s1" | "u1" => 1,
        "s2" | "u2" => 2,
        "s4" | "u4" | "f4e2m1fn" => 4,
        "s16" | "u16" | "f16" | "bf16" => 16,
        "s32" | "u32" | "f32" => 32,
        "s64" | "u64" | "f64" | "c64" => 64,
        "c128" => 128,
        n if n.starts_with("f8") => 8,
        _ => return None,
    };
    Some(b)
}

/// The precision whose roof applies to math on an XLA element type (`None` for
/// integer types without a catalog roof and for non-arrays).
pub fn dtype_precision(name: &str) -> Option<Precision> {
    let p = match name {
        "f64" | "c128" => Precision::Fp64,
        "f32" | "c64" => Precision::Fp32,
        "f16" => Precision::Fp16,
        "bf16" => Precision::Bf16,
        "s8" | "u8" => Precision::Int8,
        "s4" | "u4" => Precision::Int4,
        "f4e2m1fn" => Precision::Fp4,
        n if n.starts_with("f8") => Precision::Fp8,
        _ => return None,
    };
    Some(p)
}

/// An HLO shape: an array (element type and dimensions) or a tuple of shapes.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Default)]
pub struct HloShape {
    /// Element type as HLO text writes it (`bf16`, `f32`, `s32`, `pred`); `tuple` for
    /// tuples, `token`, `opaque`.
    pub dtype: String,
    /// Dimension sizes, major to minor as written (empty for scalars and tuples).
    pub dims: Vec<i64>,
    /// Element shapes of a tuple.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tuple: Vec<HloShape>,
    /// The layout's `minor_to_major`, when the profile states it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub minor_to_major: Option<Vec<i64>>,
}

impl HloShape {
    /// An array shape without a layout.
    pub fn array(dtype: &str, dims: &[i64]) -> HloShape {
        HloShape { dtype: dtype.to_string(), dims: dims.to_vec(), ..HloShape::default() }
    }

    pub fn is_tuple(&self) -> bool {
        self.dtype == "tuple"
    }

    /// Elements of an array shape (1 for a scalar); `None` for tuples or a negative
    /// dimension.
    pub fn elements(&self) -> Option<u128> {
        if self.is_tuple() {
            return None;
        }
        self.dims.iter().try_fold(1u128, |acc, &d| acc.checked_mul(u128::try_from(d).ok()?))
    }

    /// Bytes of the shape: an array's elements times its element size (sub-byte types
    /// packed, rounded up); a tuple's element shapes summed; `token` and `opaque` are 0.
    /// `None` for an unknown element type or bad dimensions.
    pub fn bytes(&self) -> Option<u128> {
        match self.dtype.as_str() {
            "tuple" => self.tuple.iter().try_fold(0u128, |acc, s| acc.checked_add(s.bytes()?)),
            "token" | "opaque" => Some(0),
            d => {
                let bits = u128::from(dtype_bits(d)?);
                Some(self.elements()?.checked_mul(bits)?.div_ceil(8))
            }
        }
    }

    /// The first array of a tuple (a custom call's result, before its workspace), or the
    /// shape itself when it is an array.
    pub fn first_array(&self) -> &HloShape {
        let mut s = self;
        while s.is_tuple() {
            match s.tuple.first() {
                Some(t) => s = t,
                None => break,
            }
        }
        s
    }

    /// Whether the layout is row-major (`minor_to_major` = rank-1, ..., 0) or unknown.
    pub fn is_row_major(&self) -> bool {
        match &self.minor_to_major {
            None => true,
            Some(m) => {
                let rank = self.dims.len();
                m.len() == rank
                    && m.iter()
                        .enumerate()
                        .all(|(i, &d)| i64::try_from(rank - 1 - i).ok() == Some(d))
            }
        }
    }

    /// HLO text (`bf16[2,4096]`, `(f32[], bf16[8])`), without the layout.
    pub fn text(&self) -> String {
        let mut s = String::new();
        self.write_text(&mut s);
        s
    }

    fn write_text(&self, out: &mut String) {
        if self.is_tuple() {
            out.push('(');
            for (i, t) in self.tuple.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                t.write_text(out);
            }
            out.push(')');
        } else {
            out.push_str(&self.dtype);
            out.push('[');
            for (i, d) in self.dims.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                let _ = write!(out, "{d}");
            }
            out.push(']');
        }
    }

    /// Parses the shape at the start of HLO text (`bf16[2,4096,6144]{2,1,0}`,
    /// `(f32[], bf16[2]{0})`, `f32[]`); the rest of the text is ignored. `None` when the
    /// text does not start with a shape. Dynamic dimensions (`<=8`) are read as their
    /// bound.
    pub fn parse(text: &str) -> Option<HloShape> {
        let mut p = ShapeParser { s: text.as_bytes(), i: 0, depth: 0 };
        p.skip_ws();
        p.shape()
    }
}

impl std::fmt::Display for HloShape {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text())
    }
}

/// A small recursive-descent parser of HLO text shapes.
struct ShapeParser<'a> {
    s: &'a [u8],
    i: usize,
    depth: u32,
}

impl ShapeParser<'_> {
    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }

    fn skip_ws(&mut self) {
        while self.peek().is_some_and(|c| c.is_ascii_whitespace()) {
            self.i += 1;
        }
    }

    fn eat(&mut self, c: u8) -> bool {
        if self.peek() == Some(c) {
            self.i += 1;
            true
        } else {
            false
        }
    }

    fn shape(&mut self) -> Option<HloShape> {
        // Deeply nested tuples are not HLO anyone writes; bound the recursion.
        if self.depth > 64 {
            return None;
        }
        if self.eat(b'(') {
            self.depth += 1;
            let mut tuple = Vec::new();
            self.skip_ws();
            if !self.eat(b')') {
                loop {
                    self.skip_ws();
                    tuple.push(self.shape()?);
                    self.skip_ws();
                    // `/*index=5*/` comments between tuple elements.
                    self.skip_comment();
                    if self.eat(b')') {
                        break;
                    }
                    if !self.eat(b',') {
                        return None;
                    }
                    self.skip_ws();
                    self.skip_comment();
                }
            }
            self.depth -= 1;
            return Some(HloShape { dtype: "tuple".to_string(), tuple, ..HloShape::default() });
        }
        let start = self.i;
        while self.peek().is_some_and(|c| c.is_ascii_alphanumeric()) {
            self.i += 1;
        }
        let dtype = std::str::from_utf8(&self.s[start..self.i]).ok()?.to_string();
        if dtype.is_empty() {
            return None;
        }
        if dtype == "token" || dtype == "opaque" {
            return Some(HloShape { dtype, ..HloShape::default() });
        }
        dtype_bits(&dtype)?;
        if !self.eat(b'[') {
            return None;
        }
        let mut dims = Vec::new();
        loop {
            self.skip_ws();
            if self.eat(b']') {
                break;
            }
            self.eat(b'<');
            self.eat(b'=');
            self.eat(b'?');
            let d0 = self.i;
            while self.peek().is_some_and(|c| c.is_ascii_digit()) {
                self.i += 1;
            }
            if d0 < self.i {
                dims.push(std::str::from_utf8(&self.s[d0..self.i]).ok()?.parse::<i64>().ok()?);
            }
            self.skip_ws();
            if self.eat(b']') {
                break;
            }
            if !self.eat(b',') {
                return None;
            }
        }
        let minor_to_major = self.layout();
        Some(HloShape { dtype, dims, tuple: Vec::new(), minor_to_major })
    }

    /// `{2,1,0}` or `{1,0:T(8,128)}`: the minor-to-major list before any `:`.
    fn layout(&mut self) -> Option<Vec<i64>> {
        if !self.eat(b'{') {
            return None;
        }
        let mut out = Vec::new();
        let mut cur = String::new();
        let mut in_list = true;
        let mut nest = 1u32;
        while let Some(c) = self.peek() {
            self.i += 1;
            match c {
                b'{' | b'(' => nest += 1,
                b'}' | b')' => {
                    nest -= 1;
                    if nest == 0 {
                        break;
                    }
                }
                b':' => in_list = false,
                b',' if in_list => {
                    out.push(cur.trim().parse::<i64>().ok()?);
                    cur.clear();
                }
                _ if in_list => cur.push(char::from(c)),
                _ => {}
            }
        }
        if !cur.trim().is_empty() {
            out.push(cur.trim().parse::<i64>().ok()?);
        }
        Some(out)
    }

    fn skip_comment(&mut self) {
        if self.s[self.i..].starts_with(b"/*") {
            if let Some(end) = self.s[self.i..].windows(2).position(|w| w == b"*/") {
                self.i += end + 2;
            }
        }
        self.skip_ws();
    }
}

/// `DotDimensionNumbers`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Default)]
pub struct DotDims {
    pub lhs_contracting: Vec<i64>,
    pub rhs_contracting: Vec<i64>,
    pub lhs_batch: Vec<i64>,
    pub rhs_batch: Vec<i64>,
}

/// One window dimension of a convolution (`WindowDimension`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Default)]
pub struct WindowDim {
    pub size: i64,
    pub stride: i64,
    pub padding_low: i64,
    pub padding_high: i64,
    pub window_dilation: i64,
    pub base_dilation: i64,
}

/// `ConvolutionDimensionNumbers` with the window and group counts.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Default)]
pub struct ConvDims {
    pub input_batch: i64,
    pub input_feature: i64,
    pub input_spatial: Vec<i64>,
    pub kernel_input_feature: i64,
    pub kernel_output_feature: i64,
    pub kernel_spatial: Vec<i64>,
    pub output_batch: i64,
    pub output_feature: i64,
    pub output_spatial: Vec<i64>,
    pub window: Vec<WindowDim>,
    /// 1 when the proto leaves it unset.
    pub feature_group_count: i64,
    pub batch_group_count: i64,
}

/// The tiling a Triton GEMM fusion's backend config states: an output tile per output
/// dimension (`block_level_fusion_config.output_tiles`, newer XLA), or the older
/// `triton_gemm_config` block sizes with the split-K factor.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Default)]
pub struct TileConfig {
    /// Tile size along each output dimension, major to minor (empty when only block
    /// sizes are known).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub output_tile: Vec<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub block_m: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub block_n: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub block_k: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub split_k: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub num_warps: Option<i64>,
}

/// One HLO instruction, with what its work model needs.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Default)]
pub struct HloInstr {
    /// The instruction's name (`gemm_fusion_dot.3`), as the profile's `hlo_op` stat
    /// writes it.
    pub name: String,
    /// HLO opcode (`fusion`, `custom-call`, `dot`, `convolution`, `all-reduce-start`).
    pub opcode: String,
    pub shape: HloShape,
    /// Operand shapes, in operand order.
    pub operands: Vec<HloShape>,
    /// `kLoop`, `kInput`, `kOutput`, `kCustom` for fusions.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fusion_kind: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub custom_call_target: Option<String>,
    /// The `kind` of a custom fusion's backend config (`__triton_gemm`,
    /// `__triton_nested_gemm_fusion`, `__cudnn$fusion`, ...).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fusion_backend_kind: Option<String>,
    /// The output tile a Triton GEMM fusion's backend config states.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tile: Option<TileConfig>,
    /// Attributes of a custom call: an FFI call's attribute dictionary
    /// (`attn_heads = 16 : i64` → `("attn_heads", "16")`), or the GEMM backend config's
    /// scalar fields (`beta`, `epilogue`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub attrs: Vec<(String, String)>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dot: Option<DotDims>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub conv: Option<ConvDims>,
    /// The instruction that defines the work of a fusion or an async wrapper: the dot or
    /// convolution inside a GEMM/convolution fusion, the collective inside `async-start`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub inner: Option<Box<HloInstr>>,
    /// Replica groups of a collective (explicit lists).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub replica_groups: Vec<Vec<i64>>,
    /// Devices per group of a collective given as an iota list (newer XLA).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub iota_group_size: Option<i64>,
    /// The framework op that produced the instruction (`OpMetadata.op_name`).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub op_name: String,
    /// Source file and line of the framework op, when recorded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
}

impl HloInstr {
    /// Bytes of all operands (each read once), `None` when one is unknown.
    pub fn operand_bytes(&self) -> Option<u128> {
        self.operands.iter().try_fold(0u128, |acc, s| acc.checked_add(s.bytes()?))
    }

    /// The value of custom-call attribute `key`.
    pub fn attr(&self, key: &str) -> Option<&str> {
        self.attrs.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }

    /// The instruction whose opcode defines the work (itself, or its `inner`).
    pub fn core(&self) -> &HloInstr {
        self.inner.as_deref().unwrap_or(self)
    }

    /// Devices in one group of a collective: the first explicit replica group's size or
    /// the iota list's group size; `None` when the groups are implicit (all replicas).
    pub fn group_size(&self) -> Option<u64> {
        let inner = self.core();
        for i in [inner, self] {
            if let Some(g) = i.replica_groups.first().filter(|g| !g.is_empty()) {
                return u64::try_from(g.len()).ok();
            }
            if let Some(n) = i.iota_group_size.filter(|&n| n > 0) {
                return u64::try_from(n).ok();
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_hlo_text_shapes() {
        let s = HloShape::parse("bf16[2,4096,6144]{2,1,0} fusion(...)").unwrap();
        assert_eq!((s.dtype.as_str(), s.dims.as_slice()), ("bf16", &[2, 4096, 6144][..]));
        assert_eq!(s.minor_to_major, Some(vec![2, 1, 0]));
        assert!(s.is_row_major());
        // 2*4096*6144 elements of 2 bytes.
        assert_eq!(s.bytes(), Some(2 * 4096 * 6144 * 2));
        let t = HloShape::parse("(bf16[4096,2048]{1,0}, s8[67108864]{0})").unwrap();
        assert!(t.is_tuple());
        assert_eq!(t.tuple.len(), 2);
        assert_eq!(t.first_array().dims, vec![4096, 2048]);
        assert_eq!(t.bytes(), Some(4096 * 2048 * 2 + 67_108_864));
        assert_eq!(t.text(), "(bf16[4096,2048], s8[67108864])");
        let scalar = HloShape::parse("f32[]").unwrap();
        assert_eq!((scalar.elements(), scalar.bytes()), (Some(1), Some(4)));
        let tiled = HloShape::parse("f32[8,128]{1,0:T(8,128)}").unwrap();
        assert_eq!(tiled.minor_to_major, Some(vec![1, 0]));
        let col = HloShape::parse("f32[8,128]{0,1}").unwrap();
        assert!(!col.is_row_major());
        let dynamic = HloShape::parse("s32[<=8,4]").unwrap();
        assert_eq!(dynamic.dims, vec![8, 4]);
        let commented = HloShape::parse("(f32[2]{0}, /*index=1*/u32[])").unwrap();
        assert_eq!(commented.tuple.len(), 2);
        // s4 packs two per byte: 3 elements are 12 bits, 2 bytes.
        assert_eq!(HloShape::array("s4", &[3]).bytes(), Some(2));
        for bad in ["", "x", "bf16", "bf16[2", "bf16[a]", "(f32[]", "quux[2]", "((((", "f32[-1]"] {
            let parsed = HloShape::parse(bad);
            assert!(parsed.as_ref().is_none_or(|s| s.bytes().is_none()), "{bad}: {parsed:?}");
        }
        let deep = "(".repeat(1000);
        assert!(HloShape::parse(&deep).is_none());
    }

    #[test]
    fn element_sizes_follow_xla() {
        assert_eq!(dtype_bits("pred"), Some(8));
        assert_eq!(dtype_bits("f8e4m3fnuz"), Some(8));
        assert_eq!(dtype_bits("c64"), Some(64));
        assert_eq!(dtype_precision("bf16"), Some(Precision::Bf16));
        assert_eq!(dtype_precision("f8e5m2"), Some(Precision::Fp8));
        assert_eq!(dtype_precision("s32"), None);
        assert_eq!(HloShape::array("f32", &[-1]).bytes(), None);
        assert_eq!(HloShape::array("f32", &[i64::MAX, i64::MAX, i64::MAX]).bytes(), None);
    }

    #[test]
    fn group_size_from_explicit_or_iota_groups() {
        let mut i = HloInstr {
            replica_groups: vec![vec![0, 1, 2, 3], vec![4, 5, 6, 7]],
            ..HloInstr::default()
        };
        assert_eq!(i.group_size(), Some(4));
        i.replica_groups.clear();
        assert_eq!(i.group_size(), None);
        i.iota_group_size = Some(8);
        assert_eq!(i.group_size(), Some(8));
    }
}
