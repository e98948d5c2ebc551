//! The kernel suite, backend-neutral: what each kernel reads and writes, its reference
//! implementation and tolerance, and its work through the core's work models. Every suite
//! kernel has a [`KernelId`] (the registry, `id.rs`); backends keep their implementations
//! in tables keyed by it (`cpu::kernels`, `cuda::plan`, `wgpu::kernels`).

mod check;
pub mod fma;
pub(crate) mod fused;
pub mod gemm;
mod id;
pub mod norm;
pub mod probe;
pub mod quant;
pub mod reduce;
pub mod softmax;
pub mod stream;
pub mod view;

pub use check::{compare, compare_refs, CheckResult, Tolerance};
pub use id::KernelId;

use crate::backend::{DType, HostBuf};
use crate::case::{Case, KernelRef, Selection};
use crate::error::SuiteError;
use crate::rng::Init;
use rooftop_core::ops::Work;
use serde::Serialize;

/// One buffer a kernel reads or writes.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BufferSpec {
    pub name: &'static str,
    pub dtype: DType,
    pub len: usize,
    pub init: Init,
    /// Written by the kernel and compared with the reference.
    pub output: bool,
}

impl BufferSpec {
    pub fn input(name: &'static str, dtype: DType, len: usize, init: Init) -> BufferSpec {
        BufferSpec { name, dtype, len, init, output: false }
    }

    pub fn output(name: &'static str, dtype: DType, len: usize) -> BufferSpec {
        BufferSpec { name, dtype, len, init: Init::Poison, output: true }
    }

    pub fn bytes(&self) -> u64 {
        (self.len * self.dtype.size_bytes()) as u64
    }
}

/// A kernel: one of the suite's, or a spec'd kernel.
pub trait Kernel: Sync + std::fmt::Debug {
    /// Which kernel this is (a suite kernel's [`KernelId`], or a spec'd kernel's name).
    fn id(&self) -> KernelRef;
    /// The kernel's name (`triad`); what `--kernel` takes.
    fn name(&self) -> &'static str {
        self.id().name()
    }
    /// One line for `rooftop bench --list`.
    fn summary(&self) -> &'static str;
    /// Size parameters in `--single-config` order (`["m", "n", "k"]`).
    fn size_params(&self) -> &'static [&'static str];
    /// True for kernels run by `rooftop bench` with no `--kernel` (the default suite);
    /// probes such as `fma` and `chase` are for `ceilings` and `--all-kernels`.
    fn in_default_suite(&self) -> bool {
        true
    }
    /// The cases for a selection (defaults where the selection is silent).
    fn cases(&self, sel: &Selection) -> Result<Vec<Case>, SuiteError>;
    /// The buffers of a case, inputs then outputs, in the order backends receive them.
    fn buffers(&self, case: &Case) -> Vec<BufferSpec>;
    /// Expected contents of the output buffers (in `buffers()` order of the outputs),
    /// computed from the initialised buffers (all of them, in `buffers()` order).
    fn reference(&self, case: &Case, buffers: &[HostBuf]) -> Vec<HostBuf>;
    /// Tolerance of the check for a case.
    fn tolerance(&self, case: &Case) -> Tolerance;
    /// FLOPs and bytes of one run, from the core's work models.
    fn work(&self, case: &Case) -> Result<Work, SuiteError>;
    /// Whether runs write only the output buffers (the suite's kernels): the harness then
    /// keeps the inputs on the device from one case to the next. A kernel that may write
    /// anywhere (a user's) says `false`, and its inputs are uploaded again after it.
    fn writes_only_outputs(&self) -> bool {
        true
    }
    /// Where input buffer `index` comes from when it is not drawn from the generator
    /// (a file, for a spec's `init = { file = ... }`): a description that also
    /// identifies the contents. `None`: random per the buffer's `init`.
    fn input_source(&self, _case: &Case, _index: usize) -> Option<String> {
        None
    }
    /// The contents of an input with an [`Kernel::input_source`], or why they cannot be
    /// read (one sentence naming the file).
    fn load_input(&self, case: &Case, index: usize) -> Result<HostBuf, String> {
        Err(format!("kernel `{}` has no data for buffer {index}", case.kernel))
    }
    /// The check of the outputs against the reference computed element by element where
    /// they are compared, without a reference buffer (`fused`): `inputs` are every
    /// buffer as initialised (as for [`Kernel::reference`]), `outputs` the outputs as the
    /// kernel wrote them. `None`: the harness computes [`Kernel::reference`] and compares.
    /// Must give the [`CheckResult`] that reference-then-compare gives.
    fn check_in_place(
        &self,
        _case: &Case,
        _inputs: &[HostBuf],
        _outputs: &[&HostBuf],
        _tol: Tolerance,
    ) -> Option<CheckResult> {
        None
    }
    /// Dependent memory accesses of one run, for latency kernels (pointer chasing):
    /// the export then reports nanoseconds per access.
    fn latency_accesses(&self, _case: &Case) -> Option<u64> {
        None
    }
}

/// Every kernel of the suite, in display order.
pub fn all() -> Vec<&'static dyn Kernel> {
    KernelId::ALL.iter().map(|k| k.def()).collect()
}

/// The suite kernel a user named (`--kernel`, a spec's `work.op`), or an error with the
/// closest names.
pub fn find(name: &str) -> Result<&'static dyn Kernel, SuiteError> {
    name.parse::<KernelId>().map(KernelId::def)
}

/// Helper for kernels: a `BadConfig` error.
pub(crate) fn bad(kernel: &str, message: impl Into<String>) -> SuiteError {
    SuiteError::BadConfig { kernel: kernel.to_string(), message: message.into() }
}

/// Helper for kernels: wraps a core work-model error.
pub(crate) fn model_err(kernel: &str, e: impl std::fmt::Display) -> SuiteError {
    bad(kernel, format!("work model: {e}"))
}

/// Helper for kernels whose only size is `n`: the sizes from `--single-config N` or
/// `--sizes`, else `defaults`.
pub(crate) fn sizes_1d(
    kernel: &str,
    sel: &Selection,
    defaults: &[u64],
) -> Result<Vec<u64>, SuiteError> {
    if let Some(c) = &sel.single_config {
        if c.len() != 1 {
            return Err(bad(kernel, format!("--single-config takes 1 value (n), got {}", c.len())));
        }
        return Ok(c.clone());
    }
    Ok(sel.sizes.clone().unwrap_or_else(|| defaults.to_vec()))
}
