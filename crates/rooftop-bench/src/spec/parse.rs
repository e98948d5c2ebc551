//! Reading a spec file (`kernels.toml`, format in `docs/spec.md`) into validated kernels.
//!
//! TOML is read by the `toml` crate into structs whose values keep their byte spans, so
//! every error (a TOML syntax error, an unknown field, a bad expression, a buffer that
//! does not match the built-in reference) is reported as `file:line:column: kernel
//! `name`, field: what was expected`. Tables whose key order matters (the size
//! variables, the scalars) are read in document order.

use super::expr::Expr;
use super::{
    default_init, BufferDecl, CommandRef, KernelSpec, PathTemplate, ReferenceDecl, ScalarDecl,
    ScalarType, SourceFile, SpecError, SpecSet, WorkDecl,
};
use crate::backend::{DType, SourceLang};
use crate::rng::Init;
use crate::suite::{KernelId, Tolerance};
use rooftop_core::ops::OpClass;
use rooftop_core::units::Precision;
use serde::de::{Deserialize, Deserializer, MapAccess, Visitor};
use std::ops::Range;
use std::path::{Path, PathBuf};
use toml::{Spanned, Value};

/// A table read in document order.
#[derive(Debug)]
struct Ordered<V>(Vec<(String, V)>);

impl<'de, V: Deserialize<'de>> Deserialize<'de> for Ordered<V> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Vis<V>(std::marker::PhantomData<V>);
        impl<'de, V: Deserialize<'de>> Visitor<'de> for Vis<V> {
            type Value = Ordered<V>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a table")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<Ordered<V>, A::Error> {
                let mut v = Vec::new();
                while let Some((k, x)) = m.next_entry::<String, V>()? {
                    v.push((k, x));
                }
                Ok(Ordered(v))
            }
        }
        d.deserialize_map(Vis(std::marker::PhantomData))
    }
}

#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    #[serde(default)]
    kernel: Vec<Spanned<RawKernel>>,
}

#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct RawKernel {
    name: Spanned<String>,
    source: Option<Spanned<Value>>,
    entry: Option<Spanned<String>>,
    work: Spanned<Ordered<Spanned<Value>>>,
    sizes: Spanned<Vec<Spanned<Ordered<Spanned<Value>>>>>,
    grid: Option<Spanned<Vec<Spanned<Value>>>>,
    block: Option<Spanned<Value>>,
    buffers: Spanned<Vec<Spanned<RawBuffer>>>,
    scalars: Option<Spanned<Ordered<Spanned<Value>>>>,
    reference: Option<Spanned<Value>>,
    tolerance: Option<Spanned<Value>>,
}

#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct RawBuffer {
    name: Spanned<String>,
    dtype: Spanned<String>,
    len: Spanned<Value>,
    init: Option<Spanned<Value>>,
    #[serde(default)]
    output: bool,
}

/// Where each field of each kernel is in the text (for errors found after parsing).
#[derive(Debug, Default)]
struct Spans {
    fields: Vec<(String, String, Range<usize>)>,
    kernels: Vec<(String, Range<usize>)>,
}

impl Spans {
    fn add(&mut self, kernel: &str, field: impl Into<String>, span: Range<usize>) {
        self.fields.push((kernel.to_string(), field.into(), span));
    }

    /// The span of `field` of `kernel`, or of its closest enclosing field.
    fn find(&self, kernel: &str, field: &str) -> Option<Range<usize>> {
        let mut f = field.split(" = ").next().unwrap_or(field).to_string();
        loop {
            if let Some((_, _, s)) = self.fields.iter().find(|(k, x, _)| k == kernel && *x == f) {
                return Some(s.clone());
            }
            match f.rfind(['.', '[']) {
                Some(i) => f.truncate(i),
                None => break,
            }
        }
        self.kernels.iter().find(|(k, _)| k == kernel).map(|(_, s)| s.clone())
    }
}

/// 1-based line and column of byte `offset` of `text`.
pub fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let col = before.rfind('\n').map_or(before, |i| &before[i + 1..]).chars().count() + 1;
    (line, col)
}

/// An error at a span, before the file and kernel are attached.
struct At {
    span: Range<usize>,
    field: String,
    message: String,
}

type R<T> = Result<T, At>;

fn at<T>(span: Range<usize>, field: impl Into<String>, message: impl Into<String>) -> R<T> {
    Err(At { span, field: field.into(), message: message.into() })
}

/// Reads, validates and loads the sources of the spec file at `path` (sources relative
/// to the file's directory).
pub fn load(path: &Path) -> Result<SpecSet, SpecError> {
    let text = std::fs::read_to_string(path).map_err(|e| SpecError {
        file: Some(path.to_path_buf()),
        line_col: None,
        kernel: None,
        field: None,
        message: format!("cannot read the spec: {e}"),
    })?;
    let base = path.parent().map_or_else(PathBuf::new, Path::to_path_buf);
    parse_str(&text, path, &base)
}

/// Parses spec `text` (named `file` in errors; sources relative to `base`).
pub fn parse_str(text: &str, file: &Path, base: &Path) -> Result<SpecSet, SpecError> {
    let with_pos = |span: Option<Range<usize>>,
                    kernel: Option<String>,
                    field: Option<String>,
                    message: String| {
        SpecError {
            file: Some(file.to_path_buf()),
            line_col: span.map(|s| line_col(text, s.start)),
            kernel,
            field,
            message,
        }
    };
    let raw: RawFile = toml::from_str(text)
        .map_err(|e| with_pos(e.span(), None, None, e.message().trim().replace('\n', ": ")))?;
    if raw.kernel.is_empty() {
        return Err(with_pos(
            None,
            None,
            None,
            "no kernels: add a `[[kernel]]` table (docs/spec.md)".to_string(),
        ));
    }
    let mut spans = Spans::default();
    let mut specs = Vec::new();
    for k in raw.kernel {
        let kspan = k.span();
        let k = k.into_inner();
        let name = k.name.get_ref().clone();
        spans.kernels.push((name.clone(), kspan));
        let spec = kernel(&k, base, &name, &mut spans)
            .map_err(|e| with_pos(Some(e.span), Some(name.clone()), Some(e.field), e.message))?;
        specs.push(spec);
    }
    SpecSet::new(&specs).map_err(|mut e| {
        e.file = Some(file.to_path_buf());
        if let Some(k) = &e.kernel {
            let span = spans.find(k, e.field.as_deref().unwrap_or(""));
            e.line_col = span.map(|s| line_col(text, s.start));
        }
        e
    })
}

fn expr_of(v: &Spanned<Value>, field: &str) -> R<Expr> {
    match v.get_ref() {
        Value::Integer(i) if *i >= 0 => Ok(Expr::constant(*i as u64)),
        Value::Integer(i) => at(v.span(), field, format!("{i} is negative")),
        Value::String(s) => {
            Expr::parse(s).or_else(|e| at(v.span(), format!("{field} = \"{s}\""), e.to_string()))
        }
        other => at(
            v.span(),
            field,
            format!("expected an integer or an expression string, got {}", other.type_str()),
        ),
    }
}

fn int_of(v: &Spanned<Value>, field: &str, max: u64) -> R<u64> {
    match v.get_ref() {
        Value::Integer(i) if *i >= 0 && (*i as u64) <= max => Ok(*i as u64),
        other => at(v.span(), field, format!("expected an integer in 0..={max}, got {other}")),
    }
}

fn str_of<'a>(v: &'a Spanned<Value>, field: &str) -> R<&'a str> {
    match v.get_ref() {
        Value::String(s) => Ok(s),
        other => at(v.span(), field, format!("expected a string, got {}", other.type_str())),
    }
}

/// A string naming one value of a closed set (a weight format, a variant).
fn named_of<T>(v: &Spanned<Value>, field: &str) -> R<T>
where
    T: std::str::FromStr,
    T::Err: std::fmt::Display,
{
    str_of(v, field)?.parse::<T>().or_else(|e| at(v.span(), field, e.to_string()))
}

fn dtype_of(s: &Spanned<String>, field: &str) -> R<DType> {
    Ok(match s.get_ref().to_ascii_lowercase().as_str() {
        "f32" => DType::F32,
        "f64" => DType::F64,
        "f16" => DType::F16,
        "bf16" => DType::Bf16,
        "u8" => DType::U8,
        "i8" => DType::I8,
        "u32" => DType::U32,
        other => {
            return at(
                s.span(),
                field,
                format!("unknown dtype `{other}` (expected f32, f64, f16, bf16, u8, i8 or u32)"),
            )
        }
    })
}

fn precision_of(v: &Spanned<Value>, field: &str) -> R<Precision> {
    let s = str_of(v, field)?;
    s.parse::<Precision>().or_else(|_| {
        at(
            v.span(),
            field,
            format!("unknown precision `{s}` (expected e.g. fp32, fp16, bf16, fp64)"),
        )
    })
}

fn class_of(v: &Spanned<Value>) -> R<OpClass> {
    let s = str_of(v, "work.class")?;
    Ok(match s.to_ascii_lowercase().replace([' ', '-'], "_").as_str() {
        "gemm" => OpClass::Gemm,
        "quantized_gemm" | "qgemm" => OpClass::QuantizedGemm,
        "quantized_matvec" | "qmatvec" => OpClass::QuantizedMatvec,
        "attention" => OpClass::Attention,
        "conv" => OpClass::Conv,
        "rmsnorm" => OpClass::RmsNorm,
        "layernorm" => OpClass::LayerNorm,
        "softmax" => OpClass::Softmax,
        "elementwise" => OpClass::Elementwise,
        "reduction" => OpClass::Reduction,
        "copy" => OpClass::Copy,
        _ => {
            return at(
                v.span(),
                "work.class",
                format!(
                    "unknown class `{s}` (expected gemm, quantized_gemm, quantized_matvec, \
                     attention, conv, rmsnorm, layernorm, softmax, elementwise, reduction or copy)"
                ),
            )
        }
    })
}

fn kernel(k: &RawKernel, base: &Path, name: &str, spans: &mut Spans) -> R<KernelSpec> {
    spans.add(name, "name", k.name.span());
    let sources = sources_of(k, base, name, spans)?;
    let entry = match &k.entry {
        Some(e) => {
            spans.add(name, "entry", e.span());
            e.get_ref().clone()
        }
        None => name.to_string(),
    };

    let (vars, sizes) = sizes_of(k, name, spans)?;

    // Launch shape.
    let grid = match &k.grid {
        Some(g) => {
            spans.add(name, "grid", g.span());
            let items = g.get_ref();
            if items.is_empty() || items.len() > 3 {
                return at(
                    g.span(),
                    "grid",
                    format!("expected 1 to 3 expressions, got {}", items.len()),
                );
            }
            let mut out = [Expr::constant(1), Expr::constant(1), Expr::constant(1)];
            for (i, v) in items.iter().enumerate() {
                spans.add(name, format!("grid[{i}]"), v.span());
                out[i] = expr_of(v, &format!("grid[{i}]"))?;
            }
            out
        }
        None if sources.is_empty() => [Expr::constant(1), Expr::constant(1), Expr::constant(1)],
        None => {
            return at(k.name.span(), "grid", "missing: a kernel from source needs `grid = [...]`")
        }
    };
    let blocks = match &k.block {
        Some(b) => {
            spans.add(name, "block", b.span());
            blocks_of(b)?
        }
        None if sources.is_empty() => vec![[1, 1, 1]],
        None => {
            return at(
                k.name.span(),
                "block",
                "missing: a kernel from source needs `block = [x, y, z]`",
            )
        }
    };

    let buffers = buffers_of(k, base, name, spans)?;

    let scalars = scalars_of(k, name, spans)?;

    // Work.
    spans.add(name, "work", k.work.span());
    let work = work_of(&k.work, name, spans)?;

    let reference = match &k.reference {
        Some(r) => {
            spans.add(name, "reference", r.span());
            reference_of(r, base)?
        }
        None => ReferenceDecl::Builtin,
    };
    let tolerance = match &k.tolerance {
        None => None,
        Some(t) => {
            spans.add(name, "tolerance", t.span());
            Some(tolerance_of(t)?)
        }
    };
    Ok(KernelSpec {
        name: name.to_string(),
        sources,
        entry,
        work,
        vars,
        sizes,
        grid,
        blocks,
        buffers,
        scalars,
        reference,
        tolerance,
    })
}

/// The kernel's `source` files (none for a built-in kernel), read.
fn sources_of(k: &RawKernel, base: &Path, name: &str, spans: &mut Spans) -> R<Vec<SourceFile>> {
    let mut sources = Vec::new();
    if let Some(src) = &k.source {
        spans.add(name, "source", src.span());
        let list: Vec<&str> = match src.get_ref() {
            Value::String(s) => vec![s.as_str()],
            Value::Array(a) => a
                .iter()
                .map(|v| v.as_str().ok_or(()))
                .collect::<Result<_, _>>()
                .or_else(|()| at(src.span(), "source", "expected a path or a list of paths"))?,
            _ => return at(src.span(), "source", "expected a path or a list of paths"),
        };
        for p in list {
            let path = base.join(p);
            let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
            let Some(lang) = SourceLang::from_extension(ext) else {
                return at(
                    src.span(),
                    "source",
                    format!("`{p}`: unknown kind of source (expected .cu, .wgsl, .metal or .spv)"),
                );
            };
            let code = std::fs::read(&path).or_else(|e| {
                at(src.span(), "source", format!("cannot read {}: {e}", path.display()))
            })?;
            sources.push(SourceFile { lang, path, code });
        }
    }
    Ok(sources)
}

/// The size points and their variables: the keys of the first point, in document order.
fn sizes_of(k: &RawKernel, name: &str, spans: &mut Spans) -> R<(Vec<String>, Vec<Vec<u64>>)> {
    spans.add(name, "sizes", k.sizes.span());
    let mut vars: Vec<String> = Vec::new();
    let mut sizes = Vec::new();
    for (i, p) in k.sizes.get_ref().iter().enumerate() {
        let field = format!("sizes[{i}]");
        spans.add(name, field.clone(), p.span());
        let entries = &p.get_ref().0;
        if i == 0 {
            vars = entries.iter().map(|(v, _)| v.clone()).collect();
        }
        let keys: Vec<&str> = entries.iter().map(|(v, _)| v.as_str()).collect();
        if let Some(extra) = keys.iter().find(|v| !vars.iter().any(|x| x == *v)) {
            return at(
                p.span(),
                field,
                format!("variable `{extra}` is not in sizes[0] ({})", vars.join(", ")),
            );
        }
        let mut point = Vec::new();
        for v in &vars {
            let Some((_, x)) = entries.iter().find(|(k, _)| k == v) else {
                return at(
                    p.span(),
                    field,
                    format!("no value for `{v}` (every size point gives {})", vars.join(", ")),
                );
            };
            spans.add(name, format!("{field}.{v}"), x.span());
            point.push(int_of(x, &format!("{field}.{v}"), u64::from(u32::MAX))?);
        }
        sizes.push(point);
    }

    Ok((vars, sizes))
}

/// The kernel's buffers: name, element type, length, initial contents or file.
fn buffers_of(k: &RawKernel, base: &Path, name: &str, spans: &mut Spans) -> R<Vec<BufferDecl>> {
    spans.add(name, "buffers", k.buffers.span());
    let mut buffers = Vec::new();
    for (i, b) in k.buffers.get_ref().iter().enumerate() {
        let field = format!("buffers[{i}]");
        spans.add(name, field.clone(), b.span());
        let b = b.get_ref();
        spans.add(name, format!("{field}.name"), b.name.span());
        spans.add(name, format!("{field}.len"), b.len.span());
        spans.add(name, format!("{field}.dtype"), b.dtype.span());
        let dtype = dtype_of(&b.dtype, &format!("{field}.dtype"))?;
        let mut file = None;
        let init = match &b.init {
            None => None,
            Some(v) => {
                if b.output {
                    return at(
                        v.span(),
                        format!("{field}.init"),
                        "an output buffer has no `init` (it is filled with a sentinel)",
                    );
                }
                spans.add(name, format!("{field}.init"), v.span());
                match file_of(v, base, &format!("{field}.init"))? {
                    Some(f) => {
                        file = Some(f);
                        None
                    }
                    None => init_of(v, dtype, &format!("{field}.init"))?,
                }
            }
        };
        buffers.push(BufferDecl {
            name: b.name.get_ref().clone(),
            dtype,
            len: expr_of(&b.len, &format!("{field}.len"))?,
            init,
            file,
            output: b.output,
        });
    }

    Ok(buffers)
}

/// The kernel's scalar arguments: an expression each, `u32` unless typed.
fn scalars_of(k: &RawKernel, name: &str, spans: &mut Spans) -> R<Vec<ScalarDecl>> {
    let mut scalars = Vec::new();
    if let Some(s) = &k.scalars {
        spans.add(name, "scalars", s.span());
        for (sname, v) in &s.get_ref().0 {
            let field = format!("scalars.{sname}");
            spans.add(name, field.clone(), v.span());
            let (ty, value) = match v.get_ref() {
                Value::Table(t) => {
                    let ty = match t.get("type").map(|x| x.as_str()) {
                        None | Some(Some("u32")) => ScalarType::U32,
                        Some(Some("i32")) => ScalarType::I32,
                        Some(Some("f32")) => ScalarType::F32,
                        Some(_) => {
                            return at(
                                v.span(),
                                format!("{field}.type"),
                                "expected \"u32\", \"i32\" or \"f32\"",
                            )
                        }
                    };
                    if let Some(extra) = t.keys().find(|k| !matches!(k.as_str(), "type" | "value"))
                    {
                        return at(
                            v.span(),
                            field,
                            format!("unknown key `{extra}` (expected value, type)"),
                        );
                    }
                    let Some(val) = t.get("value") else {
                        return at(v.span(), field, "missing `value` (an expression)");
                    };
                    (ty, expr_of(&Spanned::new(v.span(), val.clone()), &field)?)
                }
                _ => (ScalarType::U32, expr_of(v, &field)?),
            };
            scalars.push(ScalarDecl { name: sname.clone(), ty, value });
        }
    }

    Ok(scalars)
}

/// `init = { file = "x_{N}.npy" }`: the path (relative to the spec file), else `None`.
fn file_of(v: &Spanned<Value>, base: &Path, field: &str) -> R<Option<PathTemplate>> {
    let Value::Table(t) = v.get_ref() else { return Ok(None) };
    let Some(f) = t.get("file") else { return Ok(None) };
    if t.len() != 1 {
        return at(v.span(), field, "`{ file = \"...\" }` takes no other key");
    }
    match f.as_str() {
        Some(p) => Ok(Some(PathTemplate(base.join(p).to_string_lossy().into_owned()))),
        None => at(v.span(), field, "expected `{ file = \"path.npy\" }` (a path string)"),
    }
}

/// `reference = "builtin" | "<kernel>" | { outputs = { y = "y.npy" } } | { command = "..." }`.
fn reference_of(r: &Spanned<Value>, base: &Path) -> R<ReferenceDecl> {
    const EXPECTED: &str = "expected \"builtin\", the name of another kernel, \
                            { outputs = { <output> = \"file.npy\", ... } } or \
                            { command = \"python3 ref.py\" }";
    match r.get_ref() {
        Value::String(s) if s == "builtin" => Ok(ReferenceDecl::Builtin),
        Value::String(s) => Ok(ReferenceDecl::Kernel(s.clone())),
        Value::Table(t) if t.len() == 1 => {
            if let Some(c) = t.get("command") {
                return match c.as_str() {
                    Some(cmd) if !cmd.trim().is_empty() => Ok(ReferenceDecl::Command(CommandRef {
                        command: cmd.to_string(),
                        dir: base.to_path_buf(),
                    })),
                    _ => at(r.span(), "reference.command", "expected a non-empty command string"),
                };
            }
            let Some(Value::Table(outs)) = t.get("outputs") else {
                return at(r.span(), "reference", EXPECTED);
            };
            let mut files = Vec::new();
            for (buf, path) in outs {
                let Some(p) = path.as_str() else {
                    return at(
                        r.span(),
                        format!("reference.outputs.{buf}"),
                        "expected a path string (.npy, or raw little-endian)",
                    );
                };
                files
                    .push((buf.clone(), PathTemplate(base.join(p).to_string_lossy().into_owned())));
            }
            if files.is_empty() {
                return at(r.span(), "reference.outputs", "lists no output");
            }
            Ok(ReferenceDecl::Files(files))
        }
        _ => at(r.span(), "reference", EXPECTED),
    }
}

fn blocks_of(b: &Spanned<Value>) -> R<Vec<[u32; 3]>> {
    let one = |v: &Value| -> Option<[u32; 3]> {
        let dims: Vec<u32> = match v {
            Value::Integer(i) => vec![u32::try_from(*i).ok()?],
            Value::Array(a) if (1..=3).contains(&a.len()) => a
                .iter()
                .map(|x| x.as_integer().and_then(|i| u32::try_from(i).ok()))
                .collect::<Option<_>>()?,
            _ => return None,
        };
        let mut out = [1u32; 3];
        out[..dims.len()].copy_from_slice(&dims);
        Some(out)
    };
    let expected = "expected [x, y, z] (integers), or a list of them to sweep with --autotune";
    match b.get_ref() {
        Value::Array(a) if a.iter().all(Value::is_array) && !a.is_empty() => a
            .iter()
            .map(|x| one(x).ok_or(()))
            .collect::<Result<_, _>>()
            .or_else(|()| at(b.span(), "block", expected)),
        v => one(v).map(|x| vec![x]).ok_or(()).or_else(|()| at(b.span(), "block", expected)),
    }
}

fn init_of(v: &Spanned<Value>, dtype: DType, field: &str) -> R<Option<Init>> {
    let float = matches!(dtype, DType::F32 | DType::F64 | DType::F16 | DType::Bf16);
    let constant = |x: f64| {
        if float {
            Init::Uniform { lo: x, hi: x }
        } else {
            Init::Int { lo: x as i64, hi: x as i64 }
        }
    };
    let pair = |t: &Value| -> Option<(f64, f64)> {
        let a = t.as_array()?;
        let n = |x: &Value| x.as_float().or_else(|| x.as_integer().map(|i| i as f64));
        match a.as_slice() {
            [lo, hi] => Some((n(lo)?, n(hi)?)),
            _ => None,
        }
    };
    match v.get_ref() {
        Value::String(s) => Ok(match s.as_str() {
            "builtin" => None,
            "random" => Some(default_init(dtype)),
            "random_bits" => Some(Init::RandomBits),
            "zeros" => Some(constant(0.0)),
            "ones" => Some(constant(1.0)),
            other => {
                return at(
                    v.span(),
                    field,
                    format!("unknown init `{other}` (expected random, random_bits, zeros, ones, builtin, {{ uniform = [lo, hi] }} or {{ int = [lo, hi] }})"),
                )
            }
        }),
        Value::Table(t) if t.len() == 1 => {
            let (k, x) = t.iter().next().map_or(("", &Value::Boolean(false)), |(k, x)| (k.as_str(), x));
            match (k, pair(x)) {
                ("uniform", Some((lo, hi))) if float && lo <= hi => Ok(Some(Init::Uniform { lo, hi })),
                ("int", Some((lo, hi))) if !float && lo <= hi => Ok(Some(Init::Int { lo: lo as i64, hi: hi as i64 })),
                ("uniform", _) => at(v.span(), field, "`uniform = [lo, hi]` with lo <= hi, for floating-point buffers"),
                ("int", _) => at(v.span(), field, "`int = [lo, hi]` with lo <= hi, for integer buffers"),
                _ => at(v.span(), field, format!("unknown init `{k}` (expected uniform or int)")),
            }
        }
        _ => at(v.span(), field, "expected a name (random, random_bits, zeros, ones, builtin) or { uniform = [lo, hi] } / { int = [lo, hi] }"),
    }
}

fn tolerance_of(t: &Spanned<Value>) -> R<Tolerance> {
    let num = |x: &Value| {
        x.as_float()
            .or_else(|| x.as_integer().map(|i| i as f64))
            .filter(|v| v.is_finite() && *v >= 0.0)
    };
    match t.get_ref() {
        Value::Table(tb) => {
            if let Some(extra) = tb.keys().find(|k| !matches!(k.as_str(), "abs" | "rel")) {
                return at(
                    t.span(),
                    "tolerance",
                    format!("unknown key `{extra}` (expected abs, rel)"),
                );
            }
            let get = |k: &str| tb.get(k).map_or(Some(0.0), num);
            match (get("abs"), get("rel")) {
                (Some(abs), Some(rel)) => Ok(Tolerance::new(abs, rel)),
                _ => at(t.span(), "tolerance", "abs and rel must be numbers >= 0"),
            }
        }
        v => num(v).map(|x| Tolerance::new(x, x)).ok_or(()).or_else(|()| {
            at(
                t.span(),
                "tolerance",
                "expected a number >= 0 (absolute and relative) or { abs = ..., rel = ... }",
            )
        }),
    }
}

fn work_of(w: &Spanned<Ordered<Spanned<Value>>>, name: &str, spans: &mut Spans) -> R<WorkDecl> {
    let entries = &w.get_ref().0;
    for (k, v) in entries {
        spans.add(name, format!("work.{k}"), v.span());
    }
    let get = |k: &str| entries.iter().find(|(x, _)| x == k).map(|(_, v)| v);
    if let Some(op_value) = get("op") {
        let op = match str_of(op_value, "work.op")?.parse::<KernelId>() {
            Ok(op) => op,
            Err(e) => return at(op_value.span(), "work.op", e.to_string()),
        };
        let mut params = Vec::new();
        for (k, v) in entries {
            if matches!(k.as_str(), "op" | "dtype" | "bits" | "group" | "format" | "variant") {
                continue;
            }
            params.push((k.clone(), expr_of(v, &format!("work.{k}"))?));
        }
        let u32_of = |k: &str| {
            get(k).map(|v| int_of(v, &format!("work.{k}"), 1 << 20).map(|x| x as u32)).transpose()
        };
        return Ok(WorkDecl::Op {
            op,
            params,
            dtype: get("dtype").map(|v| precision_of(v, "work.dtype")).transpose()?,
            bits: u32_of("bits")?,
            group: u32_of("group")?,
            format: get("format").map(|v| named_of(v, "work.format")).transpose()?,
            variant: get("variant").map(|v| named_of(v, "work.variant")).transpose()?,
        });
    }
    if let Some((extra, v)) = entries.iter().find(|(k, _)| {
        !matches!(
            k.as_str(),
            "flops" | "bytes" | "bytes_read" | "bytes_written" | "precision" | "class"
        )
    }) {
        return at(
            v.span(),
            format!("work.{extra}"),
            "unknown key: `work` is either { op = \"<suite kernel>\", <its sizes> = \"expr\", ... } \
             or { flops = \"expr\", bytes = \"expr\" (or bytes_read / bytes_written), precision, class }",
        );
    }
    let Some(flops) = get("flops") else {
        return at(w.span(), "work", "needs `op = \"<suite kernel>\"` (e.g. gemm, qmatvec, triad) or `flops` and `bytes` expressions");
    };
    let flops = expr_of(flops, "work.flops")?;
    let (bytes_read, bytes_written) = match (get("bytes"), get("bytes_read"), get("bytes_written"))
    {
        (Some(b), None, None) => (expr_of(b, "work.bytes")?, Expr::constant(0)),
        (None, Some(r), Some(wr)) => {
            (expr_of(r, "work.bytes_read")?, expr_of(wr, "work.bytes_written")?)
        }
        _ => {
            return at(
                w.span(),
                "work",
                "give either `bytes` or both `bytes_read` and `bytes_written`",
            )
        }
    };
    Ok(WorkDecl::Custom {
        flops,
        bytes_read,
        bytes_written,
        precision: get("precision")
            .map(|v| precision_of(v, "work.precision"))
            .transpose()?
            .unwrap_or(Precision::Fp32),
        class: get("class").map(class_of).transpose()?.unwrap_or(OpClass::Elementwise),
    })
}
