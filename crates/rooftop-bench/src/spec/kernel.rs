//! Validation of kernel specs and the [`Kernel`] implementation of a spec'd kernel.
//!
//! [`SpecSet::new`] checks everything that can be checked without running: names,
//! every expression's variables, every size point evaluated (buffer lengths, grid for
//! every block, scalars, work), the built-in reference's buffers against the user's,
//! reference kernels (existence, same buffers, no cycles). After it, evaluating a spec
//! at one of its own sizes cannot fail; `--single-config` points are checked the same
//! way when they are asked for.

use super::{default_init, KernelSpec};
use super::{ReferenceDecl, ScalarType, SpecError, WorkDecl, GUARD_ELEMENTS};
use crate::backend::{DType, HostBuf, Launch, Scalar};
use crate::case::{Case, KernelRef, Selection};
use crate::error::SuiteError;
use crate::rng::{self, Init};
use crate::suite::{self, BufferSpec, Kernel, Tolerance};
use rooftop_core::ops::Work;
use std::sync::Mutex;

/// Variables a grid expression may use besides the size variables.
pub const BLOCK_VARS: [&str; 3] = ["BLOCK_X", "BLOCK_Y", "BLOCK_Z"];

/// The fill of output buffers and their guards: a sentinel no kernel computes by
/// accident, exactly representable in every dtype (so an untouched guard compares
/// equal to the reference's guard).
pub fn sentinel_init(dtype: DType) -> Init {
    match dtype {
        DType::F32 | DType::F64 | DType::F16 | DType::Bf16 => {
            Init::Uniform { lo: -1792.0, hi: -1792.0 }
        }
        DType::U8 => Init::Int { lo: 0xA5, hi: 0xA5 },
        DType::I8 => Init::Int { lo: -91, hi: -91 },
        DType::U32 => Init::Int { lo: 0xDEAD_BEEF, hi: 0xDEAD_BEEF },
    }
}

/// A validated set of spec'd kernels.
#[derive(Debug)]
pub struct SpecSet {
    kernels: Vec<&'static SpecKernel>,
}

/// A spec'd kernel, usable wherever the suite's kernels are.
#[derive(Debug)]
pub struct SpecKernel {
    name: &'static str,
    summary: &'static str,
    vars: &'static [&'static str],
    spec: KernelSpec,
    /// The suite kernel of `work.op`.
    builtin: Option<&'static dyn Kernel>,
    /// Outputs of the reference per size point (a reference kernel, files or a command),
    /// with a fingerprint of the inputs they were computed from (0 when they do not
    /// depend on the inputs), filled by [`super::SpecBackend`] before each check.
    reference_outputs: Mutex<Vec<ReferenceOutputs>>,
}

/// A reference's outputs at a size point: (point, fingerprint of the inputs or 0,
/// outputs).
type ReferenceOutputs = (Vec<u64>, u64, Vec<HostBuf>);

fn leak(s: String) -> &'static str {
    // Spec names live for the process: see the module docs of `spec`.
    Box::leak(s.into_boxed_str())
}

fn valid_name(s: &str) -> bool {
    !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
}

impl SpecSet {
    /// Validates `specs` (see the module docs) and makes them kernels.
    pub fn new(specs: &[KernelSpec]) -> Result<SpecSet, SpecError> {
        if specs.is_empty() {
            return Err(SpecError::general("no kernels: add a `[[kernel]]` table"));
        }
        for (i, s) in specs.iter().enumerate() {
            if !valid_name(&s.name) {
                return Err(SpecError::field(
                    &s.name,
                    "name",
                    "a kernel name is letters, digits, `_`, `-` or `.`",
                ));
            }
            if specs[..i].iter().any(|o| o.name == s.name) {
                return Err(SpecError::field(&s.name, "name", "two kernels have this name"));
            }
            if suite::find(&s.name).is_ok() {
                return Err(SpecError::field(
                    &s.name,
                    "name",
                    "this is the name of a suite kernel: choose another (e.g. `my_",
                )
                .with_message_suffix(&format!("{}`)", s.name)));
            }
        }
        let mut kernels = Vec::with_capacity(specs.len());
        for s in specs {
            kernels.push(SpecKernel::check_static(s)?);
        }
        // References between kernels: existence, shape, cycles.
        for s in specs {
            if let ReferenceDecl::Kernel(r) = &s.reference {
                check_reference_chain(specs, s)?;
                let Some(other) = specs.iter().find(|o| &o.name == r) else { continue };
                if other.vars != s.vars {
                    return Err(SpecError::field(
                        &s.name,
                        "reference",
                        format!(
                            "the reference kernel `{r}` has size variables [{}], this one [{}]: \
                             they must be the same to run on the same inputs",
                            other.vars.join(", "),
                            s.vars.join(", ")
                        ),
                    ));
                }
            }
        }
        let kernels: Vec<&'static SpecKernel> =
            kernels.into_iter().map(|k| &*Box::leak(Box::new(k))).collect();
        let set = SpecSet { kernels };
        // Every size point of every kernel evaluates.
        for k in &set.kernels {
            for (i, point) in k.spec.sizes.iter().enumerate() {
                set.check_point(k, point).map_err(|mut e| {
                    e.message = format!("at sizes[{i}] ({}): {}", k.point_label(point), e.message);
                    e
                })?;
            }
        }
        Ok(set)
    }

    /// The kernels, in spec order.
    pub fn kernels(&self) -> &[&'static SpecKernel] {
        &self.kernels
    }

    /// The kernel called `name` (exact), if any.
    pub fn get(&self, name: &str) -> Option<&'static SpecKernel> {
        self.kernels.iter().copied().find(|k| k.name == name)
    }

    /// The kernel called `name`, or an error naming the spec's kernels.
    pub fn find(&self, name: &str) -> Result<&'static SpecKernel, SpecError> {
        self.get(name).ok_or_else(|| {
            let names: Vec<&str> = self.kernels.iter().map(|k| k.name).collect();
            SpecError::general(format!(
                "no kernel `{name}` in the spec (it has {})",
                names.join(", ")
            ))
        })
    }

    /// Everything about one size point, including the reference kernel's buffers.
    fn check_point(&self, k: &SpecKernel, point: &[u64]) -> Result<(), SpecError> {
        k.check_point(point)?;
        if let ReferenceDecl::Kernel(r) = &k.spec.reference {
            let other = self.find(r)?;
            let case =
                k.case_at(point).map_err(|e| SpecError::field(k.name, "sizes", e.to_string()))?;
            let ocase = other
                .case_at(point)
                .map_err(|e| SpecError::field(k.name, "reference", format!("`{r}`: {e}")))?;
            let (a, b) = (k.buffers(&case), other.buffers(&ocase));
            let same = a.len() == b.len()
                && a.iter()
                    .zip(&b)
                    .all(|(x, y)| x.dtype == y.dtype && x.len == y.len && x.output == y.output);
            if !same {
                return Err(SpecError::field(
                    k.name,
                    "reference",
                    format!(
                        "the reference kernel `{r}` must take the same buffers (count, dtype, \
                         length, outputs): it has {}, this kernel {}",
                        layout(&b),
                        layout(&a)
                    ),
                ));
            }
        }
        Ok(())
    }
}

fn check_reference_chain(specs: &[KernelSpec], start: &KernelSpec) -> Result<(), SpecError> {
    let mut seen = vec![start.name.as_str()];
    let mut cur = start;
    while let ReferenceDecl::Kernel(r) = &cur.reference {
        let Some(next) = specs.iter().find(|o| &o.name == r) else {
            let names: Vec<&str> = specs.iter().map(|s| s.name.as_str()).collect();
            return Err(SpecError::field(
                &cur.name,
                "reference",
                format!(
                    "`{r}` is neither \"builtin\" nor a kernel of this spec (it has {})",
                    names.join(", ")
                ),
            ));
        };
        if seen.contains(&next.name.as_str()) {
            seen.push(&next.name);
            return Err(SpecError::field(
                &start.name,
                "reference",
                format!(
                    "references form a cycle ({}): one of them must use \"builtin\"",
                    seen.join(" -> ")
                ),
            ));
        }
        seen.push(&next.name);
        cur = next;
    }
    Ok(())
}

fn layout(b: &[BufferSpec]) -> String {
    b.iter()
        .map(|s| {
            format!(
                "{} {}[{}]{}",
                s.name,
                s.dtype.as_str(),
                s.len,
                if s.output { " (output)" } else { "" }
            )
        })
        .collect::<Vec<_>>()
        .join(", ")
}

impl SpecError {
    fn with_message_suffix(mut self, s: &str) -> SpecError {
        self.message.push_str(s);
        self
    }
}

fn expr_err(kernel: &str, field: impl Into<String>, text: &str, e: &super::ExprError) -> SpecError {
    SpecError::field(kernel, format!("{} = \"{text}\"", field.into()), e.to_string())
}

impl SpecKernel {
    /// Checks what does not depend on sizes and builds the kernel.
    fn check_static(s: &KernelSpec) -> Result<SpecKernel, SpecError> {
        let name = s.name.as_str();
        let vars: Vec<&str> = s.vars.iter().map(String::as_str).collect();
        for (i, v) in vars.iter().enumerate() {
            if !valid_name(v)
                || v.starts_with(|c: char| c.is_ascii_digit())
                || v.contains(['-', '.'])
            {
                return Err(SpecError::field(
                    name,
                    "sizes",
                    format!(
                        "`{v}` is not a variable name (letters, digits and `_`, not first a digit)"
                    ),
                ));
            }
            if vars[..i].contains(v) || BLOCK_VARS.contains(v) {
                return Err(SpecError::field(
                    name,
                    "sizes",
                    format!("variable `{v}` is reserved or repeated"),
                ));
            }
        }
        if s.sizes.is_empty() {
            return Err(SpecError::field(
                name,
                "sizes",
                "needs at least one size point (`sizes = [ { N = 4096 } ]`)",
            ));
        }
        for (i, p) in s.sizes.iter().enumerate() {
            if p.len() != vars.len() {
                return Err(SpecError::field(
                    name,
                    format!("sizes[{i}]"),
                    format!(
                        "gives {} values, expected one for each of {}",
                        p.len(),
                        vars.join(", ")
                    ),
                ));
            }
            if let Some((v, _)) = vars.iter().zip(p).find(|(_, &x)| x == 0) {
                return Err(SpecError::field(
                    name,
                    format!("sizes[{i}].{v}"),
                    "must be at least 1",
                ));
            }
        }
        if s.blocks.is_empty() || s.blocks.iter().any(|b| b.contains(&0)) {
            return Err(SpecError::field(
                name,
                "block",
                "every block dimension must be at least 1",
            ));
        }
        if s.entry.is_empty() {
            return Err(SpecError::field(name, "entry", "must not be empty"));
        }
        // Expressions name only known variables.
        let mut grid_vars = vars.clone();
        grid_vars.extend(BLOCK_VARS);
        for (i, g) in s.grid.iter().enumerate() {
            g.check_variables(&grid_vars)
                .map_err(|e| expr_err(name, format!("grid[{i}]"), g.text(), &e))?;
        }
        if s.buffers.is_empty() {
            return Err(SpecError::field(name, "buffers", "a kernel needs at least one buffer"));
        }
        if !s.buffers.iter().any(|b| b.output) {
            return Err(SpecError::field(
                name,
                "buffers",
                "no buffer has `output = true`: nothing to check",
            ));
        }
        for (i, b) in s.buffers.iter().enumerate() {
            if s.buffers[..i].iter().any(|o| o.name == b.name) {
                return Err(SpecError::field(
                    name,
                    format!("buffers[{i}].name"),
                    format!("two buffers are called `{}`", b.name),
                ));
            }
            b.len
                .check_variables(&vars)
                .map_err(|e| expr_err(name, format!("buffers[{i}].len"), b.len.text(), &e))?;
        }
        for (i, sc) in s.scalars.iter().enumerate() {
            if s.scalars[..i].iter().any(|o| o.name == sc.name) {
                return Err(SpecError::field(name, format!("scalars.{}", sc.name), "repeated"));
            }
            sc.value
                .check_variables(&vars)
                .map_err(|e| expr_err(name, format!("scalars.{}", sc.name), sc.value.text(), &e))?;
        }
        let builtin = match &s.work {
            WorkDecl::Op { op, params, .. } => {
                let k = op.def();
                let wanted = k.size_params();
                for (p, e) in params {
                    if !wanted.contains(&p.as_str()) {
                        return Err(SpecError::field(
                            name,
                            format!("work.{p}"),
                            format!(
                                "`{op}` has no size parameter `{p}` (it has {})",
                                wanted.join(", ")
                            ),
                        ));
                    }
                    e.check_variables(&vars)
                        .map_err(|err| expr_err(name, format!("work.{p}"), e.text(), &err))?;
                }
                if let Some(missing) = wanted.iter().find(|w| !params.iter().any(|(p, _)| p == *w))
                {
                    return Err(SpecError::field(
                        name,
                        "work",
                        format!(
                            "`{op}` needs its size parameters {} as expressions; `{missing}` is missing \
                             (e.g. `{missing} = \"{}\"`)",
                            wanted.join(", "),
                            missing.to_ascii_uppercase()
                        ),
                    ));
                }
                Some(k)
            }
            WorkDecl::Custom { flops, bytes_read, bytes_written, .. } => {
                for (f, e) in [
                    ("work.flops", flops),
                    ("work.bytes_read", bytes_read),
                    ("work.bytes_written", bytes_written),
                ] {
                    e.check_variables(&vars).map_err(|err| expr_err(name, f, e.text(), &err))?;
                }
                None
            }
        };
        match (&s.reference, builtin) {
            (ReferenceDecl::Builtin, None) => {
                return Err(SpecError::field(
                    name,
                    "reference",
                    "\"builtin\" needs a built-in op (`work = { op = \"gemm\", ... }`); with \
                     `work = { flops = ..., bytes = ... }` name another kernel of the spec, \
                     expected outputs (`{ outputs = { y = \"y.npy\" } }`) or a command \
                     (`{ command = \"python3 ref.py\" }`)",
                ))
            }
            (
                ReferenceDecl::Kernel(_) | ReferenceDecl::Files(_) | ReferenceDecl::Command(_),
                None,
            ) if s.tolerance.is_none() => {
                return Err(SpecError::field(
                    name,
                    "tolerance",
                    "required when the work is not a built-in op (e.g. `tolerance = 1e-3`)",
                ))
            }
            _ => {}
        }
        super::reference::check_static(s)?;
        let summary = match s.sources.first() {
            Some(src) => format!("user kernel `{}` from {}", s.entry, src.path.display()),
            None => format!("user kernel `{}` (Rust)", s.name),
        };
        Ok(SpecKernel {
            name: leak(s.name.clone()),
            summary: leak(summary),
            vars: Box::leak(
                s.vars.iter().map(|v| leak(v.clone())).collect::<Vec<_>>().into_boxed_slice(),
            ),
            spec: s.clone(),
            builtin,
            reference_outputs: Mutex::new(Vec::new()),
        })
    }

    /// The spec it was built from.
    pub fn spec(&self) -> &KernelSpec {
        &self.spec
    }

    /// The suite kernel of `work.op`, if any.
    pub fn builtin(&self) -> Option<&'static dyn Kernel> {
        self.builtin
    }

    fn point_label(&self, point: &[u64]) -> String {
        self.vars.iter().zip(point).map(|(v, x)| format!("{v}={x}")).collect::<Vec<_>>().join(" ")
    }

    /// The values of the size variables of `case`, in `vars` order.
    pub fn point(&self, case: &Case) -> Vec<u64> {
        self.vars
            .iter()
            .map(|v| case.sizes.iter().find(|(k, _)| k == v).map_or(0, |(_, x)| *x))
            .collect()
    }

    fn lookup<'a>(
        &'a self,
        point: &'a [u64],
        block: [u32; 3],
    ) -> impl Fn(&str) -> Option<i128> + 'a {
        move |name: &str| {
            if let Some(i) = self.vars.iter().position(|v| *v == name) {
                return point.get(i).map(|&x| i128::from(x));
            }
            BLOCK_VARS.iter().position(|b| *b == name).map(|i| i128::from(block[i]))
        }
    }

    /// The case at `point`: sizes, and dtype / weight format from the work model.
    pub fn case_at(&self, point: &[u64]) -> Result<Case, SuiteError> {
        let bad = |m: String| SuiteError::BadConfig { kernel: self.name.to_string(), message: m };
        if point.len() != self.vars.len() {
            return Err(bad(format!(
                "takes {} size values ({}), got {}",
                self.vars.len(),
                self.vars.join(","),
                point.len()
            )));
        }
        let mut case = Case {
            kernel: KernelRef::Spec(self.name),
            sizes: self.vars.iter().copied().zip(point.iter().copied()).collect(),
            dtype: rooftop_core::units::Precision::Fp32,
            weights: None,
            variant: None,
        };
        match &self.spec.work {
            WorkDecl::Op { .. } => {
                let sc = self.suite_case(&case).map_err(|e| bad(e.to_string()))?;
                case.dtype = sc.dtype;
                case.weights = sc.weights;
            }
            WorkDecl::Custom { precision, .. } => case.dtype = *precision,
        }
        Ok(case)
    }

    /// The built-in op's case for `case` (work model and reference).
    pub fn suite_case(&self, case: &Case) -> Result<Case, SpecError> {
        let WorkDecl::Op { op, params, dtype, bits, group, format, variant } = &self.spec.work
        else {
            return Err(SpecError::field(self.name, "work", "not a built-in op"));
        };
        let Some(k) = self.builtin else {
            return Err(SpecError::field(self.name, "work.op", format!("unknown op `{op}`")));
        };
        let point = self.point(case);
        let get = self.lookup(&point, [1, 1, 1]);
        let mut values = Vec::new();
        for p in k.size_params() {
            let Some((_, e)) = params.iter().find(|(q, _)| q == p) else {
                return Err(SpecError::field(self.name, "work", format!("`{p}` is missing")));
            };
            let v = e
                .eval_int(&get, u64::MAX)
                .map_err(|err| expr_err(self.name, format!("work.{p}"), e.text(), &err))?;
            values.push(v);
        }
        let sel = Selection {
            single_config: Some(values),
            sizes: None,
            dtype: *dtype,
            bits: *bits,
            group_size: *group,
            wformat: *format,
            variant: *variant,
        };
        let mut cases =
            k.cases(&sel).map_err(|e| SpecError::field(self.name, "work", e.to_string()))?;
        if cases.len() != 1 {
            let labels: Vec<String> = cases.iter().map(Case::label).collect();
            return Err(SpecError::field(
                self.name,
                "work",
                format!(
                    "`{op}` with these options means {} cases ({}): give `format`, `bits` or \
                     `group` to choose one",
                    cases.len(),
                    labels.join("; ")
                ),
            ));
        }
        Ok(cases.remove(0))
    }

    /// Everything a size point needs, evaluated (errors name the field).
    fn check_point(&self, point: &[u64]) -> Result<(), SpecError> {
        let name = self.name;
        let case = self.case_at(point).map_err(|e| match e {
            SuiteError::BadConfig { message, .. } => SpecError::field(name, "work", message),
            other @ SuiteError::UnknownKernel { .. } => {
                SpecError::field(name, "work", other.to_string())
            }
        })?;
        let get = self.lookup(point, [1, 1, 1]);
        let max_len = (isize::MAX as u64) / 8;
        for (i, b) in self.spec.buffers.iter().enumerate() {
            let n = b
                .len
                .eval_int(&get, max_len)
                .map_err(|e| expr_err(name, format!("buffers[{i}].len"), b.len.text(), &e))?;
            if n == 0 {
                return Err(SpecError::field(
                    name,
                    format!("buffers[{i}].len = \"{}\"", b.len.text()),
                    "is 0: a buffer needs at least one element",
                ));
            }
        }
        for &block in &self.spec.blocks {
            self.grid(point, block)?;
        }
        self.scalars_at(point)?;
        self.work(&case).map_err(|e| SpecError::field(name, "work", e.to_string()))?;
        if self.spec.reference == ReferenceDecl::Builtin {
            self.check_builtin_buffers(&case)?;
        }
        super::reference::check_point_files(self, &case)?;
        Ok(())
    }

    fn check_builtin_buffers(&self, case: &Case) -> Result<(), SpecError> {
        let (Some(k), Ok(sc)) = (self.builtin, self.suite_case(case)) else { return Ok(()) };
        let theirs = k.buffers(&sc);
        let ours = self.declared_buffers(case);
        let expected = || {
            format!(
                "reference = \"builtin\" runs the suite's `{}` reference on this kernel's buffers, \
                 which must be its buffers in its order ({})",
                k.name(),
                layout(&theirs)
            )
        };
        if theirs.len() != ours.len() {
            return Err(SpecError::field(
                self.name,
                "buffers",
                format!("{}: there are {}, expected {}", expected(), ours.len(), theirs.len()),
            ));
        }
        for (i, (a, b)) in ours.iter().zip(&theirs).enumerate() {
            if a.dtype != b.dtype || a.len != b.len || a.output != b.output {
                return Err(SpecError::field(
                    self.name,
                    format!("buffers[{i}]"),
                    format!(
                        "`{}` is {} {}[{}], expected {} {}[{}] like `{}`: {}",
                        a.name,
                        if a.output { "output" } else { "input" },
                        a.dtype.as_str(),
                        a.len,
                        if b.output { "output" } else { "input" },
                        b.dtype.as_str(),
                        b.len,
                        b.name,
                        expected()
                    ),
                ));
            }
        }
        Ok(())
    }

    /// Grid of `block` at `point`.
    pub fn grid(&self, point: &[u64], block: [u32; 3]) -> Result<[u32; 3], SpecError> {
        let get = self.lookup(point, block);
        let mut g = [1u32; 3];
        for (i, e) in self.spec.grid.iter().enumerate() {
            let v = e
                .eval_int(&get, u64::from(u32::MAX))
                .map_err(|err| expr_err(self.name, format!("grid[{i}]"), e.text(), &err))?;
            if v == 0 {
                return Err(SpecError::field(
                    self.name,
                    format!("grid[{i}] = \"{}\"", e.text()),
                    format!(
                        "is 0 with block {}x{}x{}: a grid needs at least one block",
                        block[0], block[1], block[2]
                    ),
                ));
            }
            g[i] = v as u32;
        }
        Ok(g)
    }

    fn scalars_at(&self, point: &[u64]) -> Result<Vec<Scalar>, SpecError> {
        let get = self.lookup(point, [1, 1, 1]);
        let mut out = Vec::new();
        for s in &self.spec.scalars {
            let field = || format!("scalars.{}", s.name);
            let v =
                s.value.eval(&get).map_err(|e| expr_err(self.name, field(), s.value.text(), &e))?;
            let not_fit = || {
                SpecError::field(
                    self.name,
                    format!("{} = \"{}\"", field(), s.value.text()),
                    format!("the value {v} is not a {}", s.ty.as_str()),
                )
            };
            out.push(match s.ty {
                ScalarType::U32 => Scalar::U32(
                    v.as_integer().and_then(|i| u32::try_from(i).ok()).ok_or_else(not_fit)?,
                ),
                ScalarType::I32 => Scalar::I32(
                    v.as_integer().and_then(|i| i32::try_from(i).ok()).ok_or_else(not_fit)?,
                ),
                ScalarType::F32 => Scalar::F32(v.to_f64() as f32),
            });
        }
        Ok(out)
    }

    /// The scalar arguments of `case`, in spec order.
    pub fn scalars(&self, case: &Case) -> Result<Vec<Scalar>, SpecError> {
        self.scalars_at(&self.point(case))
    }

    /// Launches of `case`: one per block of the spec (the default first). Kernels
    /// without sources (Rust closures) have one default launch.
    pub fn launches(&self, case: &Case) -> Result<Vec<Launch>, SpecError> {
        if self.spec.sources.is_empty() {
            return Ok(vec![Launch::default()]);
        }
        let point = self.point(case);
        self.spec
            .blocks
            .iter()
            .map(|&b| {
                Ok(Launch {
                    block: Some(b),
                    grid: Some(self.grid(&point, b)?),
                    ..Launch::default()
                })
            })
            .collect()
    }

    /// The buffers as declared (no guard), in spec order.
    pub fn declared_buffers(&self, case: &Case) -> Vec<BufferSpec> {
        let point = self.point(case);
        let get = self.lookup(&point, [1, 1, 1]);
        let builtin = match (self.builtin, &self.spec.reference) {
            (Some(k), ReferenceDecl::Builtin) => self.suite_case(case).ok().map(|c| k.buffers(&c)),
            _ => None,
        };
        self.spec
            .buffers
            .iter()
            .enumerate()
            .map(|(i, b)| {
                let len = b
                    .len
                    .eval_int(&get, u64::MAX)
                    .map_or(0, |v| usize::try_from(v).unwrap_or(usize::MAX));
                let init = if b.output {
                    sentinel_init(b.dtype)
                } else {
                    b.init
                        .or_else(|| {
                            builtin
                                .as_ref()
                                .and_then(|v| v.get(i))
                                .filter(|s| s.dtype == b.dtype)
                                .map(|s| s.init)
                        })
                        .unwrap_or_else(|| default_init(b.dtype))
                };
                BufferSpec {
                    name: leak_buffer_name(&b.name),
                    dtype: b.dtype,
                    len,
                    init,
                    output: b.output,
                }
            })
            .collect()
    }

    /// Records the reference's outputs at `point`, computed from inputs of fingerprint
    /// `inputs` (see [`super::SpecBackend`]).
    pub(crate) fn set_reference_outputs(
        &self,
        point: Vec<u64>,
        inputs: u64,
        outputs: Vec<HostBuf>,
    ) {
        if let Ok(mut v) = self.reference_outputs.lock() {
            v.retain(|(p, _, _)| *p != point);
            v.push((point, inputs, outputs));
        }
    }

    /// Whether the reference's outputs at `point` for inputs of fingerprint `inputs` are
    /// already known.
    pub(crate) fn has_reference_outputs(&self, point: &[u64], inputs: u64) -> bool {
        self.reference_outputs
            .lock()
            .is_ok_and(|v| v.iter().any(|(p, f, _)| p == point && *f == inputs))
    }
}

/// Buffer names become `&'static str` once per distinct name (see the module docs of
/// `spec`): interned so that repeated cases do not leak again.
fn leak_buffer_name(name: &str) -> &'static str {
    static NAMES: Mutex<Vec<&'static str>> = Mutex::new(Vec::new());
    let Ok(mut names) = NAMES.lock() else { return "buffer" };
    if let Some(n) = names.iter().find(|n| **n == name) {
        return n;
    }
    let n = leak(name.to_string());
    names.push(n);
    n
}

/// Appends the guard sentinel to an output.
fn with_guard(mut out: HostBuf, dtype: DType, declared: usize) -> HostBuf {
    let guard = rng::fill(dtype, GUARD_ELEMENTS, sentinel_init(dtype), 0);
    match (&mut out, guard) {
        (HostBuf::F32(v), HostBuf::F32(g)) => {
            v.truncate(declared);
            v.extend(g);
        }
        (HostBuf::F64(v), HostBuf::F64(g)) => {
            v.truncate(declared);
            v.extend(g);
        }
        (HostBuf::U16(v), HostBuf::U16(g)) => {
            v.truncate(declared);
            v.extend(g);
        }
        (HostBuf::U8(v), HostBuf::U8(g)) => {
            v.truncate(declared);
            v.extend(g);
        }
        (HostBuf::I8(v), HostBuf::I8(g)) => {
            v.truncate(declared);
            v.extend(g);
        }
        (HostBuf::U32(v), HostBuf::U32(g)) => {
            v.truncate(declared);
            v.extend(g);
        }
        _ => {}
    }
    out
}

/// The first guard element of `buf` (declared length `declared`) that differs from the
/// sentinel, as an index into the buffer.
pub fn guard_violation(buf: &HostBuf, dtype: DType, declared: usize) -> Option<usize> {
    fn first<T: PartialEq>(a: &[T], b: &[T], off: usize) -> Option<usize> {
        a.iter().zip(b).position(|(x, y)| x != y).map(|i| i + off)
    }
    if buf.len() <= declared {
        return None;
    }
    let want = rng::fill(dtype, buf.len() - declared, sentinel_init(dtype), 0);
    match (buf, &want) {
        (HostBuf::F32(v), HostBuf::F32(w)) => {
            let bits = |x: &[f32]| x.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
            first(&bits(&v[declared..]), &bits(w), declared)
        }
        (HostBuf::F64(v), HostBuf::F64(w)) => {
            let bits = |x: &[f64]| x.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
            first(&bits(&v[declared..]), &bits(w), declared)
        }
        (HostBuf::U16(v), HostBuf::U16(w)) => first(&v[declared..], w, declared),
        (HostBuf::U8(v), HostBuf::U8(w)) => first(&v[declared..], w, declared),
        (HostBuf::I8(v), HostBuf::I8(w)) => first(&v[declared..], w, declared),
        (HostBuf::U32(v), HostBuf::U32(w)) => first(&v[declared..], w, declared),
        _ => Some(declared),
    }
}

impl Kernel for SpecKernel {
    fn id(&self) -> KernelRef {
        KernelRef::Spec(self.name)
    }

    fn summary(&self) -> &'static str {
        self.summary
    }

    fn size_params(&self) -> &'static [&'static str] {
        self.vars
    }

    fn cases(&self, sel: &Selection) -> Result<Vec<Case>, SuiteError> {
        let bad = |m: &str| SuiteError::BadConfig {
            kernel: self.name.to_string(),
            message: m.to_string(),
        };
        if sel.sizes.is_some() {
            return Err(bad(
                "--sizes does not apply to spec kernels: use --single-config or the spec's `sizes`",
            ));
        }
        if sel.dtype.is_some()
            || sel.bits.is_some()
            || sel.group_size.is_some()
            || sel.wformat.is_some()
            || sel.variant.is_some()
        {
            return Err(bad("--dtype, --bits, --group-size, --wformat and --variant do not apply to spec kernels: the spec's `work` sets them"));
        }
        if let Some(point) = &sel.single_config {
            let case = self.case_at(point)?;
            self.check_point(point).map_err(|e| SuiteError::BadConfig {
                kernel: self.name.to_string(),
                message: format!("--single-config {}: {}", self.point_label(point), e),
            })?;
            return Ok(vec![case]);
        }
        self.spec.sizes.iter().map(|p| self.case_at(p)).collect()
    }

    fn buffers(&self, case: &Case) -> Vec<BufferSpec> {
        let mut v = self.declared_buffers(case);
        for b in v.iter_mut().filter(|b| b.output) {
            b.len += GUARD_ELEMENTS;
        }
        v
    }

    fn reference(&self, case: &Case, buffers: &[HostBuf]) -> Vec<HostBuf> {
        let declared = self.declared_buffers(case);
        let outs: Vec<HostBuf> = match &self.spec.reference {
            ReferenceDecl::Builtin => {
                let (Some(k), Ok(sc)) = (self.builtin, self.suite_case(case)) else {
                    return Vec::new();
                };
                let trimmed: Vec<HostBuf> = buffers
                    .iter()
                    .zip(&declared)
                    .map(|(b, d)| if d.output { HostBuf::zeros(d.dtype, d.len) } else { b.clone() })
                    .collect();
                k.reference(&sc, &trimmed)
            }
            ReferenceDecl::Kernel(_) | ReferenceDecl::Files(_) | ReferenceDecl::Command(_) => {
                let point = self.point(case);
                let Ok(cache) = self.reference_outputs.lock() else { return Vec::new() };
                match cache.iter().find(|(p, _, _)| *p == point) {
                    Some((_, _, o)) => o.clone(),
                    None => return Vec::new(),
                }
            }
        };
        outs.into_iter()
            .zip(declared.iter().filter(|d| d.output))
            .map(|(o, d)| with_guard(o, d.dtype, d.len))
            .collect()
    }

    fn writes_only_outputs(&self) -> bool {
        // A user's kernel may write anywhere: its inputs are uploaded again after it.
        false
    }

    fn input_source(&self, case: &Case, index: usize) -> Option<String> {
        super::reference::input_file(self, case, index)
            .ok()
            .flatten()
            .map(|p| format!("file {}", p.display()))
    }

    fn load_input(&self, case: &Case, index: usize) -> Result<HostBuf, String> {
        let Some(path) = super::reference::input_file(self, case, index)? else {
            return Err(format!("kernel `{}`: buffer {index} is not read from a file", self.name));
        };
        let d = self.declared_buffers(case);
        let b =
            d.get(index).ok_or_else(|| format!("kernel `{}` has no buffer {index}", self.name))?;
        super::npy::load_buffer(&path, b.dtype, b.len)
    }

    fn tolerance(&self, case: &Case) -> Tolerance {
        if let Some(t) = self.spec.tolerance {
            return t;
        }
        match (self.builtin, self.suite_case(case)) {
            (Some(k), Ok(sc)) => k.tolerance(&sc),
            _ => Tolerance::EXACT,
        }
    }

    fn work(&self, case: &Case) -> Result<Work, SuiteError> {
        let bad = |m: String| SuiteError::BadConfig { kernel: self.name.to_string(), message: m };
        match &self.spec.work {
            WorkDecl::Op { .. } => {
                let (Some(k), sc) =
                    (self.builtin, self.suite_case(case).map_err(|e| bad(e.to_string()))?)
                else {
                    return Err(bad("no built-in op".to_string()));
                };
                let mut w = k.work(&sc)?;
                w.assumptions.push(format!(
                    "work model of the suite's `{}` at {}",
                    k.name(),
                    sc.label()
                ));
                Ok(w)
            }
            WorkDecl::Custom { flops, bytes_read, bytes_written, precision, class } => {
                let point = self.point(case);
                let get = self.lookup(&point, [1, 1, 1]);
                let ev = |f: &str, e: &super::Expr| {
                    e.eval(&get)
                        .map(super::expr::Rational::to_f64)
                        .map_err(|err| bad(format!("work.{f} = \"{}\": {err}", e.text())))
                };
                let (fl, br, bw) = (
                    ev("flops", flops)?,
                    ev("bytes_read", bytes_read)?,
                    ev("bytes_written", bytes_written)?,
                );
                if [fl, br, bw].iter().any(|v| !v.is_finite() || *v < 0.0) {
                    return Err(bad(format!(
                        "work: flops {fl}, bytes read {br}, written {bw}: expected values >= 0"
                    )));
                }
                let subst = |e: &super::Expr, v: f64| format!("{} = {}", e.text(), v);
                Ok(Work {
                    class: *class,
                    shape: format!("{} {}", self.point_label(&point), precision.as_str()),
                    flops: fl,
                    precision: *precision,
                    unit: rooftop_core::units::ExecUnit::Vector,
                    bytes_read: br,
                    bytes_written: bw,
                    flops_formula: subst(flops, fl),
                    bytes_formula: format!(
                        "read {}; written {}",
                        subst(bytes_read, br),
                        subst(bytes_written, bw)
                    ),
                    assumptions: vec!["FLOPs and bytes as given by the spec's `work`".to_string()],
                })
            }
        }
    }
}
