//! NumPy `.npy` files (format versions 1.0, 2.0 and 3.0, as `numpy.lib.format` writes
//! them) and raw little-endian files: what spec'd kernels' references and input files
//! are read from, and what a reference command is given.
//!
//! A `.npy` file is the magic `\x93NUMPY`, a version (major, minor), the header length
//! (u16 little-endian in 1.0, u32 in 2.0 and 3.0), a header that is a Python dict literal
//! (`{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }`, padded with spaces to
//! a multiple of 64 bytes and ended by `\n`), then the elements. The reader takes the
//! element types a buffer can hold: floats `f2 f4 f8`, integers `i1 u1 i2 u2 i4 u4 i8
//! u8` and `b1`, either byte order; C order only (a Fortran-ordered array of more than
//! one dimension is refused: its elements are in another order). The writer writes
//! version 1.0 exactly as `numpy.save` does (tested byte for byte against a file numpy
//! wrote), one dimension, little-endian; bf16 (which NumPy lacks) is written as `<f4`,
//! exactly.
//!
//! Conversion into a buffer (`to_buffer`): floats into float buffers (f64 rounded once
//! to f32, f16 or bf16), integers into integer buffers when every value fits, integers
//! into float buffers exactly; never floats into integer buffers. Every error is one
//! sentence naming the file and what was expected; no input panics (property-tested).

use crate::backend::{DType, HostBuf};
use std::path::Path;

/// The element type of a `.npy` file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NpyType {
    Float(usize),
    Int(usize),
    UInt(usize),
    Bool,
}

impl NpyType {
    fn size(self) -> usize {
        match self {
            NpyType::Float(s) | NpyType::Int(s) | NpyType::UInt(s) => s,
            NpyType::Bool => 1,
        }
    }

    /// `float32`, `uint8`: NumPy's names, for messages.
    pub fn name(self) -> String {
        match self {
            NpyType::Float(s) => format!("float{}", 8 * s),
            NpyType::Int(s) => format!("int{}", 8 * s),
            NpyType::UInt(s) => format!("uint{}", 8 * s),
            NpyType::Bool => "bool".to_string(),
        }
    }
}

/// The contents of a `.npy` file: its elements as f64 (integers up to 2^53 exactly) or
/// as i128 for integer types, in C order.
#[derive(Debug, Clone, PartialEq)]
pub struct NpyArray {
    pub ty: NpyType,
    pub shape: Vec<usize>,
    pub values: NpyValues,
}

/// Elements of an array.
#[derive(Debug, Clone, PartialEq)]
pub enum NpyValues {
    Float(Vec<f64>),
    Int(Vec<i128>),
}

impl NpyValues {
    pub fn len(&self) -> usize {
        match self {
            NpyValues::Float(v) => v.len(),
            NpyValues::Int(v) => v.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

const MAGIC: &[u8] = b"\x93NUMPY";

/// Parses the bytes of a `.npy` file; `what` names it in errors.
pub(crate) fn parse(bytes: &[u8], what: &str) -> Result<NpyArray, String> {
    let bad = |m: String| format!("{what}: {m}");
    if bytes.len() < 10 || &bytes[..6] != MAGIC {
        return Err(bad("not a .npy file (it does not start with \\x93NUMPY)".to_string()));
    }
    let (major, minor) = (bytes[6], bytes[7]);
    let (header_len, start) = match major {
        1 => (usize::from(u16::from_le_bytes([bytes[8], bytes[9]])), 10usize),
        2 | 3 => {
            let Some(b) = bytes.get(8..12) else {
                return Err(bad("the file ends inside its header length".to_string()));
            };
            (u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize, 12)
        }
        _ => {
            return Err(bad(format!(
                "format version {major}.{minor} is not one rooftop reads (1.0, 2.0, 3.0)"
            )))
        }
    };
    let Some(header) = start.checked_add(header_len).and_then(|end| bytes.get(start..end)) else {
        return Err(bad(format!(
            "the header says it is {header_len} bytes, past the end of the {}-byte file",
            bytes.len()
        )));
    };
    let header = std::str::from_utf8(header)
        .map_err(|_| bad("the header is not text (UTF-8)".to_string()))?;
    let h = parse_header(header).map_err(|m| bad(format!("header `{}`: {m}", header.trim())))?;
    let (ty, big_endian) = dtype_of(&h.descr).ok_or_else(|| {
        bad(format!(
            "element type `{}` is not one rooftop reads (floats f2/f4/f8, integers i1-i8, \
             u1-u8, bool)",
            h.descr
        ))
    })?;
    if h.fortran_order && h.shape.iter().filter(|&&d| d > 1).count() > 1 {
        return Err(bad(
            "the array is in Fortran order: save it in C order (numpy.ascontiguousarray)"
                .to_string(),
        ));
    }
    let count = h
        .shape
        .iter()
        .try_fold(1usize, |a, &d| a.checked_mul(d))
        .ok_or_else(|| bad(format!("shape {:?} has too many elements", h.shape)))?;
    let data = &bytes[start + header_len..];
    let want = count
        .checked_mul(ty.size())
        .ok_or_else(|| bad(format!("shape {:?} has too many elements", h.shape)))?;
    if data.len() != want {
        return Err(bad(format!(
            "shape {:?} of {} needs {want} bytes of data, the file has {}",
            h.shape,
            ty.name(),
            data.len()
        )));
    }
    Ok(NpyArray { ty, shape: h.shape, values: decode(data, ty, big_endian) })
}

/// Reads a `.npy` file.
pub(crate) fn read(path: &Path) -> Result<NpyArray, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    parse(&bytes, &path.display().to_string())
}

/// Reads the header only (type and shape, without the data), for checks at load time.
pub(crate) fn read_header(path: &Path) -> Result<(NpyType, Vec<usize>), String> {
    use std::io::Read;
    let what = path.display().to_string();
    let mut f = std::fs::File::open(path).map_err(|e| format!("cannot read {what}: {e}"))?;
    let mut head = vec![0u8; 12];
    let n = f.read(&mut head).map_err(|e| format!("cannot read {what}: {e}"))?;
    head.truncate(n);
    if head.len() < 10 || &head[..6] != MAGIC {
        return Err(format!("{what}: not a .npy file (it does not start with \\x93NUMPY)"));
    }
    let (len, start) = match head[6] {
        1 => (usize::from(u16::from_le_bytes([head[8], head[9]])), 10),
        2 | 3 if head.len() >= 12 => {
            (u32::from_le_bytes([head[8], head[9], head[10], head[11]]) as usize, 12)
        }
        _ => {
            let bytes = std::fs::read(path).map_err(|e| format!("cannot read {what}: {e}"))?;
            return parse(&bytes, &what).map(|a| (a.ty, a.shape));
        }
    };
    let mut rest = vec![0u8; (start + len).saturating_sub(head.len()).min(1 << 20)];
    let got = f.read(&mut rest).map_err(|e| format!("cannot read {what}: {e}"))?;
    head.extend_from_slice(&rest[..got]);
    let Some(header) = head.get(start..start + len) else {
        return Err(format!("{what}: the file ends inside its {len}-byte header"));
    };
    let header =
        std::str::from_utf8(header).map_err(|_| format!("{what}: the header is not text"))?;
    let h = parse_header(header).map_err(|m| format!("{what}: header `{}`: {m}", header.trim()))?;
    let (ty, _) = dtype_of(&h.descr)
        .ok_or_else(|| format!("{what}: element type `{}` is not one rooftop reads", h.descr))?;
    Ok((ty, h.shape))
}

#[derive(Debug, Default)]
struct Header {
    descr: String,
    fortran_order: bool,
    shape: Vec<usize>,
}

/// The dict literal of a header: string keys, values a string, True/False or a tuple of
/// non-negative integers. Unknown keys are refused (NumPy writes exactly these three).
fn parse_header(text: &str) -> Result<Header, String> {
    let mut p = Cursor { s: text.trim_end().as_bytes(), i: 0 };
    p.skip_ws();
    p.expect(b'{')?;
    let mut h = Header::default();
    let mut seen = [false; 3];
    loop {
        p.skip_ws();
        if p.eat(b'}') {
            break;
        }
        let key = p.string()?;
        p.skip_ws();
        p.expect(b':')?;
        p.skip_ws();
        match key.as_str() {
            "descr" => {
                h.descr = p.string()?;
                seen[0] = true;
            }
            "fortran_order" => {
                h.fortran_order = p.boolean()?;
                seen[1] = true;
            }
            "shape" => {
                h.shape = p.tuple()?;
                seen[2] = true;
            }
            other => {
                return Err(format!("unknown key `{other}` (expected descr, fortran_order, shape)"))
            }
        }
        p.skip_ws();
        if !p.eat(b',') {
            p.skip_ws();
            p.expect(b'}')?;
            break;
        }
    }
    p.skip_ws();
    if p.i != p.s.len() {
        return Err("text after the closing brace".to_string());
    }
    if seen != [true; 3] {
        return Err("expected the keys descr, fortran_order and shape".to_string());
    }
    Ok(h)
}

struct Cursor<'a> {
    s: &'a [u8],
    i: usize,
}

impl Cursor<'_> {
    fn skip_ws(&mut self) {
        while self.s.get(self.i).is_some_and(u8::is_ascii_whitespace) {
            self.i += 1;
        }
    }

    fn eat(&mut self, c: u8) -> bool {
        if self.s.get(self.i) == Some(&c) {
            self.i += 1;
            true
        } else {
            false
        }
    }

    fn expect(&mut self, c: u8) -> Result<(), String> {
        if self.eat(c) {
            Ok(())
        } else {
            Err(format!("expected `{}` at character {}", c as char, self.i + 1))
        }
    }

    fn string(&mut self) -> Result<String, String> {
        let Some(&q @ (b'\'' | b'"')) = self.s.get(self.i) else {
            return Err(format!("expected a quoted string at character {}", self.i + 1));
        };
        self.i += 1;
        let start = self.i;
        while self.s.get(self.i).is_some_and(|&c| c != q) {
            self.i += 1;
        }
        if self.i >= self.s.len() {
            return Err("a string is not closed".to_string());
        }
        let out = String::from_utf8_lossy(&self.s[start..self.i]).into_owned();
        self.i += 1;
        Ok(out)
    }

    fn boolean(&mut self) -> Result<bool, String> {
        for (word, v) in [(&b"True"[..], true), (&b"False"[..], false)] {
            if self.s[self.i..].starts_with(word) {
                self.i += word.len();
                return Ok(v);
            }
        }
        Err(format!("expected True or False at character {}", self.i + 1))
    }

    fn tuple(&mut self) -> Result<Vec<usize>, String> {
        self.expect(b'(')?;
        let mut out = Vec::new();
        loop {
            self.skip_ws();
            if self.eat(b')') {
                return Ok(out);
            }
            let start = self.i;
            while self.s.get(self.i).is_some_and(u8::is_ascii_digit) {
                self.i += 1;
            }
            // Python 2 era files write long integers as `3L`.
            let digits = std::str::from_utf8(&self.s[start..self.i]).unwrap_or("");
            let _ = self.eat(b'L');
            let d: usize = digits.parse().map_err(|_| {
                format!("expected a dimension (an integer) at character {}", start + 1)
            })?;
            out.push(d);
            self.skip_ws();
            if !self.eat(b',') {
                self.skip_ws();
                self.expect(b')')?;
                return Ok(out);
            }
        }
    }
}

/// The element type and byte order of a `descr`.
fn dtype_of(descr: &str) -> Option<(NpyType, bool)> {
    let (order, rest) = match descr.as_bytes().first()? {
        b'<' | b'=' | b'|' => (false, &descr[1..]),
        b'>' => (true, &descr[1..]),
        _ => (false, descr),
    };
    let (kind, size) = rest.split_at(1);
    let size: usize = size.parse().ok()?;
    let ty = match (kind, size) {
        ("f", 2 | 4 | 8) => NpyType::Float(size),
        ("i", 1 | 2 | 4 | 8) => NpyType::Int(size),
        ("u", 1 | 2 | 4 | 8) => NpyType::UInt(size),
        ("b", 1) => NpyType::Bool,
        _ => return None,
    };
    Some((ty, order && size > 1))
}

fn decode(data: &[u8], ty: NpyType, big: bool) -> NpyValues {
    let size = ty.size();
    let word = |c: &[u8]| -> [u8; 8] {
        let mut b = [0u8; 8];
        if big {
            for (k, x) in c.iter().rev().enumerate() {
                b[k] = *x;
            }
        } else {
            b[..c.len()].copy_from_slice(c);
        }
        b
    };
    let chunks = data.chunks_exact(size);
    match ty {
        NpyType::Float(2) => NpyValues::Float(
            chunks
                .map(|c| {
                    half::f16::from_bits(u16::from_le_bytes([word(c)[0], word(c)[1]])).to_f64()
                })
                .collect(),
        ),
        NpyType::Float(4) => NpyValues::Float(
            chunks
                .map(|c| {
                    let b = word(c);
                    f64::from(f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                })
                .collect(),
        ),
        NpyType::Float(_) => {
            NpyValues::Float(chunks.map(|c| f64::from_le_bytes(word(c))).collect())
        }
        NpyType::Int(s) => NpyValues::Int(
            chunks
                .map(|c| {
                    let v = u64::from_le_bytes(word(c));
                    // Sign-extend from `s` bytes.
                    let shift = 64 - 8 * s as u32;
                    i128::from((v << shift).cast_signed() >> shift)
                })
                .collect(),
        ),
        NpyType::UInt(_) | NpyType::Bool => {
            NpyValues::Int(chunks.map(|c| i128::from(u64::from_le_bytes(word(c)))).collect())
        }
    }
}

/// The array as a buffer of `dtype` and `len` elements (see the module docs for the
/// conversions); `what` names the file in errors.
pub(crate) fn to_buffer(
    a: &NpyArray,
    dtype: DType,
    len: usize,
    what: &str,
) -> Result<HostBuf, String> {
    if a.values.len() != len {
        return Err(format!(
            "{what} holds {} elements (shape {:?}), the buffer has {len}",
            a.values.len(),
            a.shape
        ));
    }
    let float_buf = matches!(dtype, DType::F32 | DType::F64 | DType::F16 | DType::Bf16);
    let floats: Vec<f64> = match (&a.values, float_buf) {
        (NpyValues::Float(v), true) => v.clone(),
        (NpyValues::Int(v), true) => v.iter().map(|&x| x as f64).collect(),
        (NpyValues::Float(_), false) => {
            return Err(format!(
                "{what} holds {} values, the buffer is {}: save integers (e.g. \
                 numpy.{})",
                a.ty.name(),
                dtype.as_str(),
                int_name(dtype)
            ))
        }
        (NpyValues::Int(v), false) => return int_buffer(v, dtype, what),
    };
    Ok(match dtype {
        DType::F64 => HostBuf::F64(floats),
        DType::F32 => HostBuf::F32(floats.iter().map(|&x| x as f32).collect()),
        DType::F16 => {
            HostBuf::U16(floats.iter().map(|&x| half::f16::from_f64(x).to_bits()).collect())
        }
        _ => HostBuf::U16(floats.iter().map(|&x| half::bf16::from_f64(x).to_bits()).collect()),
    })
}

fn int_name(d: DType) -> &'static str {
    match d {
        DType::U8 => "uint8",
        DType::I8 => "int8",
        _ => "uint32",
    }
}

fn int_buffer(v: &[i128], dtype: DType, what: &str) -> Result<HostBuf, String> {
    let (lo, hi): (i128, i128) = match dtype {
        DType::U8 => (0, 255),
        DType::I8 => (-128, 127),
        _ => (0, i128::from(u32::MAX)),
    };
    if let Some((i, x)) = v.iter().enumerate().find(|(_, x)| !(lo..=hi).contains(*x)) {
        return Err(format!(
            "{what}: element {i} is {x}, outside the {} range {lo}..={hi} of the buffer",
            dtype.as_str()
        ));
    }
    Ok(match dtype {
        DType::U8 => HostBuf::U8(v.iter().map(|&x| x as u8).collect()),
        DType::I8 => HostBuf::I8(v.iter().map(|&x| x as i8).collect()),
        _ => HostBuf::U32(v.iter().map(|&x| x as u32).collect()),
    })
}

/// A raw little-endian file of `dtype` elements as a buffer of `len` elements.
pub(crate) fn raw_to_buffer(
    bytes: &[u8],
    dtype: DType,
    len: usize,
    what: &str,
) -> Result<HostBuf, String> {
    let size = dtype.size_bytes();
    if bytes.len() != len * size {
        return Err(format!(
            "{what} is {} bytes, the buffer needs {len} {} elements of {size} bytes = {} \
             (a raw file is little-endian elements of the buffer's type, nothing else)",
            bytes.len(),
            dtype.as_str(),
            len * size
        ));
    }
    let c = bytes.chunks_exact(size);
    Ok(match dtype {
        DType::F32 => {
            HostBuf::F32(c.map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect())
        }
        DType::F64 => HostBuf::F64(
            c.map(|b| f64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]))
                .collect(),
        ),
        DType::F16 | DType::Bf16 => {
            HostBuf::U16(c.map(|b| u16::from_le_bytes([b[0], b[1]])).collect())
        }
        DType::U8 => HostBuf::U8(bytes.to_vec()),
        DType::I8 => HostBuf::I8(bytes.iter().map(|&b| b.cast_signed()).collect()),
        DType::U32 => {
            HostBuf::U32(c.map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect())
        }
    })
}

/// `.npy` when the path ends in `.npy`, else raw little-endian.
pub fn is_npy(path: &Path) -> bool {
    path.extension().is_some_and(|e| e.eq_ignore_ascii_case("npy"))
}

/// Reads a data file (`.npy` or raw) as a buffer of `dtype` and `len` elements.
pub(crate) fn load_buffer(path: &Path, dtype: DType, len: usize) -> Result<HostBuf, String> {
    let what = path.display().to_string();
    if is_npy(path) {
        to_buffer(&read(path)?, dtype, len, &what)
    } else {
        let bytes = std::fs::read(path).map_err(|e| format!("cannot read {what}: {e}"))?;
        raw_to_buffer(&bytes, dtype, len, &what)
    }
}

/// Checks, without reading the data, that a data file can fill a buffer of `dtype` and
/// `len` elements.
pub(crate) fn check_file(path: &Path, dtype: DType, len: usize) -> Result<(), String> {
    let what = path.display().to_string();
    if !is_npy(path) {
        let size = std::fs::metadata(path).map_err(|e| format!("cannot read {what}: {e}"))?.len();
        let want = (len * dtype.size_bytes()) as u64;
        if size != want {
            return Err(format!(
                "{what} is {size} bytes, the buffer needs {len} {} elements = {want} bytes",
                dtype.as_str()
            ));
        }
        return Ok(());
    }
    let (ty, shape) = read_header(path)?;
    let n = shape
        .iter()
        .try_fold(1usize, |a, &d| a.checked_mul(d))
        .ok_or_else(|| format!("{what}: shape {shape:?} has too many elements"))?;
    if n != len {
        return Err(format!("{what} holds {n} elements (shape {shape:?}), the buffer has {len}"));
    }
    let float_buf = matches!(dtype, DType::F32 | DType::F64 | DType::F16 | DType::Bf16);
    if !float_buf && matches!(ty, NpyType::Float(_)) {
        return Err(format!(
            "{what} holds {} values, the buffer is {}: save integers",
            ty.name(),
            dtype.as_str()
        ));
    }
    Ok(())
}

/// The `.npy` bytes of a buffer (version 1.0, one dimension, little-endian; bf16 as
/// `<f4`), as `numpy.save` writes them.
pub fn write(b: &HostBuf, dtype: DType) -> Vec<u8> {
    let (descr, data): (&str, Vec<u8>) = match (b, dtype) {
        (HostBuf::F32(v), _) => ("<f4", v.iter().flat_map(|x| x.to_le_bytes()).collect()),
        (HostBuf::F64(v), _) => ("<f8", v.iter().flat_map(|x| x.to_le_bytes()).collect()),
        (HostBuf::U16(v), DType::Bf16) => (
            "<f4",
            v.iter().flat_map(|&x| half::bf16::from_bits(x).to_f32().to_le_bytes()).collect(),
        ),
        (HostBuf::U16(v), _) => ("<f2", v.iter().flat_map(|x| x.to_le_bytes()).collect()),
        (HostBuf::U8(v), _) => ("|u1", v.clone()),
        (HostBuf::I8(v), _) => ("|i1", v.iter().map(|&x| x as u8).collect()),
        (HostBuf::U32(v), _) => ("<u4", v.iter().flat_map(|x| x.to_le_bytes()).collect()),
    };
    let dict = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': ({},), }}", b.len());
    // Magic (6) + version (2) + length (2) + dict, padded with spaces to a multiple of 64
    // bytes including the final newline (numpy.lib.format's ARRAY_ALIGN).
    let unpadded = 10 + dict.len() + 1;
    let pad = unpadded.next_multiple_of(64) - unpadded;
    let header_len = dict.len() + pad + 1;
    let mut out = Vec::with_capacity(10 + header_len + data.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&[1, 0]);
    out.extend_from_slice(&(header_len as u16).to_le_bytes());
    out.extend_from_slice(dict.as_bytes());
    out.extend(std::iter::repeat_n(b' ', pad));
    out.push(b'\n');
    out.extend_from_slice(&data);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn fixture(name: &str) -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/npy").join(name)
    }

    fn floats(name: &str) -> (Vec<usize>, Vec<f64>) {
        let a = read(&fixture(name)).unwrap();
        let NpyValues::Float(v) = a.values else { panic!("{name}: {:?}", a.ty) };
        (a.shape, v)
    }

    fn ints(name: &str) -> Vec<i128> {
        let NpyValues::Int(v) = read(&fixture(name)).unwrap().values else { panic!() };
        v
    }

    /// The values `make_npy.py` wrote with numpy, restated by hand.
    #[test]
    fn reads_what_numpy_wrote() {
        let (shape, v) = floats("f32_3x4.npy");
        assert_eq!(shape, vec![3, 4]);
        assert_eq!(v, (0..12).map(|i| f64::from(i) * 0.5).collect::<Vec<_>>());
        assert_eq!(floats("f64_5.npy").1, vec![1.5, -2.25, 1e-300, 6.02e23, 0.0]);
        assert_eq!(floats("f16_4.npy").1, vec![1.0, 0.5, -2.0, 65504.0]);
        assert_eq!(ints("u8_6.npy"), vec![0, 40, 80, 120, 160, 200]);
        assert_eq!(ints("i8_4.npy"), vec![-128, -1, 0, 127]);
        assert_eq!(ints("u32_3.npy"), vec![0, 1, 4_294_967_295]);
        assert_eq!(ints("i64_3.npy"), vec![1, 2, 3]);
        assert_eq!(floats("f4_big_endian.npy").1, vec![1.0, 2.0]);
        assert_eq!(floats("f4_scalar.npy"), (vec![], vec![3.5]));
        assert_eq!(floats("f4_empty.npy"), (vec![0], vec![]));
        assert_eq!(floats("f8_v2.npy").1, vec![0.25, 4.0]);
        let e = read(&fixture("f4_fortran_2x2.npy")).unwrap_err();
        assert!(e.contains("Fortran order"), "{e}");
    }

    #[test]
    fn headers_alone_give_type_and_shape() {
        assert_eq!(read_header(&fixture("f32_3x4.npy")).unwrap(), (NpyType::Float(4), vec![3, 4]));
        assert_eq!(read_header(&fixture("f8_v2.npy")).unwrap(), (NpyType::Float(8), vec![2]));
        assert!(check_file(&fixture("f32_3x4.npy"), DType::F32, 12).is_ok());
        let e = check_file(&fixture("f32_3x4.npy"), DType::F32, 10).unwrap_err();
        assert!(e.contains("holds 12 elements (shape [3, 4]), the buffer has 10"), "{e}");
        let e = check_file(&fixture("f32_3x4.npy"), DType::U8, 12).unwrap_err();
        assert!(e.contains("save integers"), "{e}");
    }

    #[test]
    fn writes_what_numpy_writes_byte_for_byte() {
        let want = std::fs::read(fixture("f32_numpy_1d.npy")).unwrap();
        assert_eq!(write(&HostBuf::F32(vec![1.0, -0.5, 3.25]), DType::F32), want);
    }

    #[test]
    fn round_trips_every_buffer_type() {
        let cases = [
            (HostBuf::F32(vec![1.5, -2.0]), DType::F32),
            (HostBuf::F64(vec![1e-300, 3.0]), DType::F64),
            (HostBuf::U16(vec![half::f16::from_f32(0.75).to_bits()]), DType::F16),
            (HostBuf::U16(vec![half::bf16::from_f32(-3.5).to_bits()]), DType::Bf16),
            (HostBuf::U8(vec![0, 255]), DType::U8),
            (HostBuf::I8(vec![-128, 5]), DType::I8),
            (HostBuf::U32(vec![u32::MAX, 7]), DType::U32),
        ];
        for (b, d) in cases {
            let bytes = write(&b, d);
            // The header (magic to newline) is a multiple of 64 bytes, as numpy aligns it.
            let nl = bytes.iter().position(|&c| c == b'\n').unwrap();
            assert_eq!((nl + 1) % 64, 0, "{d:?}");
            let a = parse(&bytes, "x").unwrap();
            assert_eq!(to_buffer(&a, d, b.len(), "x").unwrap(), b, "{d:?}");
        }
    }

    #[test]
    fn conversions_and_their_refusals() {
        let a = read(&fixture("f64_5.npy")).unwrap();
        let HostBuf::F32(v) = to_buffer(&a, DType::F32, 5, "f").unwrap() else { panic!() };
        assert_eq!(v[1], -2.25);
        assert!(to_buffer(&a, DType::U8, 5, "f").unwrap_err().contains("float64 values"));
        assert!(to_buffer(&a, DType::F32, 4, "f").unwrap_err().contains("holds 5 elements"));
        let i = read(&fixture("i8_4.npy")).unwrap();
        let e = to_buffer(&i, DType::U8, 4, "f").unwrap_err();
        assert!(e.contains("element 0 is -128, outside the u8 range 0..=255"), "{e}");
        assert_eq!(
            to_buffer(&i, DType::F32, 4, "f").unwrap(),
            HostBuf::F32(vec![-128.0, -1.0, 0.0, 127.0])
        );
        // Raw files: little-endian elements of the buffer's type.
        let raw = raw_to_buffer(&[0, 0, 128, 63, 0, 0, 0, 64], DType::F32, 2, "r").unwrap();
        assert_eq!(raw, HostBuf::F32(vec![1.0, 2.0]));
        assert!(raw_to_buffer(&[0; 7], DType::F32, 2, "r").unwrap_err().contains("7 bytes"));
    }

    #[test]
    fn bad_headers_are_one_sentence_each() {
        let good = std::fs::read(fixture("f32_numpy_1d.npy")).unwrap();
        assert!(parse(b"PK\x03\x04", "z").unwrap_err().contains("not a .npy file"));
        let mut v = good.clone();
        v[6] = 9;
        assert!(parse(&v, "z").unwrap_err().contains("version 9.0"));
        let mut v = good.clone();
        v.truncate(60);
        assert!(parse(&v, "z").unwrap_err().contains("past the end"));
        let mut v = good.clone();
        v.pop();
        assert!(parse(&v, "z").unwrap_err().contains("needs 12 bytes of data, the file has 11"));
        let mut v = good.clone();
        let at = v.windows(3).position(|w| w == b"<f4").unwrap();
        v[at + 1..at + 3].copy_from_slice(b"c8");
        let e = parse(&v, "z").unwrap_err();
        assert!(e.contains("`<c8` is not one"), "{e}");
    }

    proptest::proptest! {
        #[test]
        fn no_input_panics(bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..300)) {
            let _ = parse(&bytes, "p");
        }

        #[test]
        fn no_header_panics(h in "\\PC{0,80}") {
            let mut b = b"\x93NUMPY\x01\x00".to_vec();
            b.extend_from_slice(&(h.len() as u16).to_le_bytes());
            b.extend_from_slice(h.as_bytes());
            let _ = parse(&b, "p");
        }
    }
}
