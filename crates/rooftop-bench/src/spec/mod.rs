//! "Bring your own kernel": user kernels described by a spec (a `kernels.toml` next to
//! the kernels, or the same description built in Rust), checked and timed by the
//! harness and judged by the core's work models like the suite's own kernels.
//!
//! Data flow: [`parse`] reads a spec file into [`KernelSpec`]s (or a Rust program builds
//! them); [`SpecSet::new`] validates them all up front (every expression against the
//! size variables, every size point evaluated, the reference's buffers matched) and
//! turns each into a [`SpecKernel`], which implements the suite's
//! [`Kernel`](crate::suite::Kernel) trait, so the harness, the exports and the analysis
//! treat it as any other kernel. [`run`] runs them: a thin [`Backend`] wrapper passes
//! each call the spec's scalars and computes reference outputs that come from another
//! spec'd kernel; [`host`] is the backend for kernels written as Rust closures (the
//! CPU path of the library API). [`compare`] holds the ratio-of-means arithmetic of
//! `--compare`.
//!
//! Invariants: a spec that validated never fails to evaluate at its own sizes; every
//! output buffer is allocated with [`GUARD_ELEMENTS`] extra elements filled with a
//! sentinel, so a kernel that writes past the declared end fails its check (and is
//! reported as an out-of-bounds write) instead of being timed.
//!
//! Names read at run time become `&'static str` (the suite's `Kernel` trait and `Case`
//! use static names): each spec kernel leaks its name, summary and size-variable names
//! once per process (a few bytes per kernel; a process loads a handful of specs).
//!
//! The format, its semantics and the ABI per backend: `docs/spec.md`.

pub mod compare;
pub mod expr;
pub mod host;
pub mod kernel;
pub mod npy;
pub mod parse;
pub mod reference;
pub mod run;

pub use expr::{Expr, ExprError};
pub use host::{HostBackend, HostCall};
pub use kernel::{SpecKernel, SpecSet};
pub use reference::{CommandRef, PathTemplate};
pub use run::SpecBackend;

use crate::backend::{Backend, DType, SourceLang};
use crate::case::{Variant, WeightFormatKind};
use crate::rng::Init;
use crate::suite::{KernelId, Tolerance};
use rooftop_core::ops::OpClass;
use rooftop_core::units::Precision;
use std::fmt;
use std::path::PathBuf;

/// Extra elements after every output buffer, filled with a sentinel and checked.
pub const GUARD_ELEMENTS: usize = 1024;

/// A spec that cannot be used: where (file, line, column when it came from a file; the
/// kernel and field always) and what was expected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpecError {
    /// The spec file, when the spec came from one.
    pub file: Option<PathBuf>,
    /// 1-based line and column of the offending value in the file.
    pub line_col: Option<(usize, usize)>,
    /// The kernel (`name`), when known.
    pub kernel: Option<String>,
    /// The field (`buffers[2].len`, `grid[0]`, `work.m`), when known.
    pub field: Option<String>,
    pub message: String,
}

impl SpecError {
    /// An error about `field` of `kernel`.
    pub fn field(kernel: &str, field: impl Into<String>, message: impl Into<String>) -> Self {
        SpecError {
            file: None,
            line_col: None,
            kernel: Some(kernel.to_string()),
            field: Some(field.into()),
            message: message.into(),
        }
    }

    /// An error about the spec as a whole.
    pub fn general(message: impl Into<String>) -> Self {
        SpecError { file: None, line_col: None, kernel: None, field: None, message: message.into() }
    }
}

impl fmt::Display for SpecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.file, self.line_col) {
            (Some(p), Some((l, c))) => write!(f, "{}:{l}:{c}: ", p.display())?,
            (Some(p), None) => write!(f, "{}: ", p.display())?,
            _ => {}
        }
        match (&self.kernel, &self.field) {
            (Some(k), Some(fl)) => write!(f, "kernel `{k}`, {fl}: ")?,
            (Some(k), None) => write!(f, "kernel `{k}`: ")?,
            (None, Some(fl)) => write!(f, "{fl}: ")?,
            (None, None) => {}
        }
        f.write_str(&self.message)
    }
}

impl std::error::Error for SpecError {}

/// One source file of a kernel (a kernel may have one per language: the backend takes
/// the first it can compile).
#[derive(Debug, Clone, PartialEq)]
pub struct SourceFile {
    pub lang: SourceLang,
    pub path: PathBuf,
    /// The file's bytes (read when the spec is loaded).
    pub code: Vec<u8>,
}

/// A buffer of a user kernel, in the order the kernel receives it.
#[derive(Debug, Clone, PartialEq)]
pub struct BufferDecl {
    pub name: String,
    pub dtype: DType,
    /// Length in elements, over the size variables.
    pub len: Expr,
    /// How inputs are filled; `None`: the built-in reference's own initialiser when the
    /// reference is built in, else [`default_init`].
    pub init: Option<Init>,
    /// Inputs read from a file instead (`.npy` or raw little-endian; `{VAR}` replaced by
    /// the size point's values): `init = { file = "x_{N}.npy" }`.
    pub file: Option<PathTemplate>,
    /// Written by the kernel and checked.
    pub output: bool,
}

impl BufferDecl {
    /// An input buffer; `len` is an expression (`"M*K"`).
    pub fn input(name: &str, dtype: DType, len: &str) -> Result<BufferDecl, ExprError> {
        Ok(BufferDecl {
            name: name.to_string(),
            dtype,
            len: Expr::parse(len)?,
            init: None,
            file: None,
            output: false,
        })
    }

    /// An output buffer.
    pub fn output(name: &str, dtype: DType, len: &str) -> Result<BufferDecl, ExprError> {
        Ok(BufferDecl { output: true, ..BufferDecl::input(name, dtype, len)? })
    }

    /// With an explicit initialiser.
    #[must_use]
    pub fn with_init(mut self, init: Init) -> BufferDecl {
        self.init = Some(init);
        self
    }

    /// An input read from a file (`.npy` or raw little-endian; `{VAR}` placeholders).
    #[must_use]
    pub fn from_file(mut self, path: &str) -> BufferDecl {
        self.file = Some(PathTemplate(path.to_string()));
        self
    }
}

/// The fill of an input buffer nobody specified: uniform in [-1, 1) for floating types,
/// random bits for integer types.
pub fn default_init(dtype: DType) -> Init {
    match dtype {
        DType::F32 | DType::F64 | DType::F16 | DType::Bf16 => Init::Uniform { lo: -1.0, hi: 1.0 },
        DType::U8 | DType::I8 | DType::U32 => Init::RandomBits,
    }
}

/// Type of a scalar argument.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScalarType {
    U32,
    I32,
    F32,
}

impl ScalarType {
    pub fn as_str(self) -> &'static str {
        match self {
            ScalarType::U32 => "u32",
            ScalarType::I32 => "i32",
            ScalarType::F32 => "f32",
        }
    }
}

/// A scalar argument, passed after the buffers.
#[derive(Debug, Clone, PartialEq)]
pub struct ScalarDecl {
    pub name: String,
    pub ty: ScalarType,
    pub value: Expr,
}

/// The work of one run, for the roofline.
#[derive(Debug, Clone, PartialEq)]
pub enum WorkDecl {
    /// The core work model of a suite kernel (`op = "qgemm"`), with the suite kernel's
    /// size parameters given as expressions and its options.
    Op {
        /// The suite kernel (`gemm`, `qmatvec`, `triad`, `rmsnorm`, ...).
        op: KernelId,
        /// The suite kernel's size parameters (`m = "M"`), any order.
        params: Vec<(String, Expr)>,
        /// `dtype = "fp64"` (the suite's `--dtype`).
        dtype: Option<Precision>,
        /// Quantized ops: `bits`, `group`, `format` (`q4_0`, `q8_0`, `affine`),
        /// `variant` (`zp`, `sym`).
        bits: Option<u32>,
        group: Option<u32>,
        format: Option<WeightFormatKind>,
        variant: Option<Variant>,
    },
    /// FLOPs and bytes given directly.
    Custom {
        flops: Expr,
        bytes_read: Expr,
        bytes_written: Expr,
        precision: Precision,
        class: OpClass,
    },
}

/// What the outputs are checked against.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReferenceDecl {
    /// The suite kernel of `work.op`, on the same buffers.
    Builtin,
    /// Another spec'd kernel (e.g. the previous version), run on the same inputs on the
    /// same backend.
    Kernel(String),
    /// Expected outputs from files, one per output buffer (name, path), every input fixed
    /// (a file or a constant): [`mod@reference`].
    Files(Vec<(String, PathTemplate)>),
    /// A command that computes the outputs from the inputs (written as `.npy`):
    /// [`mod@reference`].
    Command(CommandRef),
}

impl ReferenceDecl {
    /// References computed before the check and kept per size point (everything but the
    /// built-in op, which the harness computes itself).
    pub fn is_external(&self) -> bool {
        !matches!(self, ReferenceDecl::Builtin)
    }
}

/// One user kernel, as written in a spec (validated by [`SpecSet::new`]).
#[derive(Debug, Clone, PartialEq)]
pub struct KernelSpec {
    pub name: String,
    /// Source files, the preferred first; empty for kernels registered with a
    /// [`HostBackend`] (Rust closures).
    pub sources: Vec<SourceFile>,
    /// Entry point (kernel function); defaults to `name`.
    pub entry: String,
    pub work: WorkDecl,
    /// Size variables, in `--single-config` order.
    pub vars: Vec<String>,
    /// Size points, each a value per variable (in `vars` order).
    pub sizes: Vec<Vec<u64>>,
    /// Workgroups / thread blocks per dimension, over the size variables and
    /// `BLOCK_X`, `BLOCK_Y`, `BLOCK_Z`.
    pub grid: [Expr; 3],
    /// Threads per block: the first is the default, all are swept by `--autotune`.
    pub blocks: Vec<[u32; 3]>,
    pub buffers: Vec<BufferDecl>,
    pub scalars: Vec<ScalarDecl>,
    pub reference: ReferenceDecl,
    /// `None`: the built-in op's tolerance.
    pub tolerance: Option<Tolerance>,
}

impl KernelSpec {
    /// A kernel checked against the suite kernel `op` ([`KernelId::Gemm`]), whose size
    /// parameters are given by `params` (`[("m", "M"), ("n", "N"), ("k", "K")]`). Add
    /// sizes, buffers, scalars and launch shape with the other builder methods.
    pub fn builtin(
        name: &str,
        op: KernelId,
        params: &[(&str, &str)],
    ) -> Result<KernelSpec, SpecError> {
        let params = params
            .iter()
            .map(|(p, e)| {
                Expr::parse(e).map(|x| ((*p).to_string(), x)).map_err(|err| {
                    SpecError::field(name, format!("work.{p} = \"{e}\""), err.to_string())
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(KernelSpec {
            name: name.to_string(),
            sources: Vec::new(),
            entry: name.to_string(),
            work: WorkDecl::Op {
                op,
                params,
                dtype: None,
                bits: None,
                group: None,
                format: None,
                variant: None,
            },
            vars: Vec::new(),
            sizes: Vec::new(),
            grid: [Expr::constant(1), Expr::constant(1), Expr::constant(1)],
            blocks: vec![[1, 1, 1]],
            buffers: Vec::new(),
            scalars: Vec::new(),
            reference: ReferenceDecl::Builtin,
            tolerance: None,
        })
    }

    /// The size variables (`["M", "N", "K"]`) and the points to run (`[[1, 4096, 4096]]`).
    #[must_use]
    pub fn sizes(mut self, vars: &[&str], points: &[&[u64]]) -> KernelSpec {
        self.vars = vars.iter().map(|v| (*v).to_string()).collect();
        self.sizes = points.iter().map(|p| p.to_vec()).collect();
        self
    }

    /// Appends a buffer (inputs and outputs in the order the kernel takes them).
    #[must_use]
    pub fn buffer(mut self, b: BufferDecl) -> KernelSpec {
        self.buffers.push(b);
        self
    }

    /// Appends a `u32` scalar argument.
    pub fn scalar(mut self, name: &str, value: &str) -> Result<KernelSpec, SpecError> {
        let value = Expr::parse(value).map_err(|e| {
            SpecError::field(&self.name, format!("scalars.{name} = \"{value}\""), e.to_string())
        })?;
        self.scalars.push(ScalarDecl { name: name.to_string(), ty: ScalarType::U32, value });
        Ok(self)
    }

    /// Checks against another spec'd kernel instead of the built-in.
    #[must_use]
    pub fn reference_kernel(mut self, name: &str) -> KernelSpec {
        self.reference = ReferenceDecl::Kernel(name.to_string());
        self
    }

    /// Checks against expected outputs in files: `(output buffer, path)` pairs (paths may
    /// name size variables in braces). Every input must be fixed (a file or a constant).
    #[must_use]
    pub fn reference_files(mut self, files: &[(&str, &str)]) -> KernelSpec {
        self.reference = ReferenceDecl::Files(
            files.iter().map(|(b, p)| ((*b).to_string(), PathTemplate((*p).to_string()))).collect(),
        );
        self
    }

    /// Checks against the outputs of a command run in `dir` (see [`mod@reference`]).
    #[must_use]
    pub fn reference_command(mut self, command: &str, dir: &std::path::Path) -> KernelSpec {
        self.reference = ReferenceDecl::Command(CommandRef {
            command: command.to_string(),
            dir: dir.to_path_buf(),
        });
        self
    }

    #[must_use]
    pub fn tolerance(mut self, t: Tolerance) -> KernelSpec {
        self.tolerance = Some(t);
        self
    }
}

/// Compiles every kernel of `set` that has sources on `backend`: for each kernel the
/// first source the backend accepts. Kernels without sources (Rust closures) are
/// skipped. The error carries every backend's refusal or the compiler's log.
pub fn load_sources(backend: &mut dyn Backend, set: &SpecSet) -> Result<(), SpecError> {
    for k in set.kernels() {
        let spec = k.spec();
        if spec.sources.is_empty() {
            continue;
        }
        let mut refusals = Vec::new();
        let mut loaded = false;
        for s in &spec.sources {
            let sk = crate::backend::SourceKernel {
                name: spec.name.clone(),
                lang: s.lang,
                path: s.path.clone(),
                code: s.code.clone(),
                entry: spec.entry.clone(),
            };
            match backend.load_source(&sk) {
                Ok(()) => {
                    loaded = true;
                    break;
                }
                // Backends name the file in their messages.
                Err(e) => refusals.push(e.to_string()),
            }
        }
        if !loaded {
            return Err(SpecError {
                file: None,
                line_col: None,
                kernel: Some(spec.name.clone()),
                field: Some("source".to_string()),
                message: format!(
                    "the {} backend could not load any source:\n{}{}",
                    backend.info().backend,
                    refusals.join("\n"),
                    if backend.info().backend == "cpu" {
                        "\n(source kernels run on --backend cuda or --backend wgpu; CPU kernels \
                         are Rust code, benchmarked through the library API: docs/spec.md)"
                    } else {
                        ""
                    }
                ),
            });
        }
    }
    Ok(())
}
