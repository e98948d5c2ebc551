//! Running spec'd kernels through the harness.
//!
//! The harness calls a backend with the suite's calling convention (buffers only).
//! [`SpecBackend`] wraps the real backend for spec'd kernels and adds what they need:
//! - the spec's scalars, evaluated at the case's sizes, on every call;
//! - for `reference = "<kernel>"`, before the check: the reference kernel run on a copy
//!   of the same inputs on the same backend, its outputs handed to the checked kernel's
//!   [`Kernel::reference`];
//! - for file and command references, before the check: the expected files read, or the
//!   command run on the inputs as the kernel gets them ([`super::reference`]);
//! - after the checked run: the guard after every output buffer is read back and a
//!   write past the declared end is recorded, so [`run_case`] reports an out-of-bounds
//!   write rather than just "check failed".
//!
//! Calls of other kernels pass through unchanged.

use super::kernel::{guard_violation, sentinel_init};
use super::{ReferenceDecl, SpecKernel, SpecSet};
use crate::backend::{
    Backend, BackendInfo, BufId, DType, HostBuf, Implementation, KernelCall, Launch,
};
use crate::case::{Case, KernelRef, Selection};
use crate::error::{BackendError, BenchError, SuiteError};
use crate::harness::{self, CaseResult, Progress, TimingOptions, Workspace};
use crate::rng;
use crate::suite::Kernel;
use std::sync::atomic::AtomicBool;

/// A backend that runs spec'd kernels with their scalars and reference kernels.
pub struct SpecBackend<'a> {
    inner: &'a mut dyn Backend,
    set: &'a SpecSet,
    /// The next run is the checked one: inspect the guards after it.
    check_guards: bool,
    out_of_bounds: Option<String>,
}

impl std::fmt::Debug for SpecBackend<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SpecBackend")
            .field("inner", &self.inner.info().backend)
            .field("kernels", &self.set.kernels().len())
            .finish_non_exhaustive()
    }
}

fn other(e: impl std::fmt::Display) -> BackendError {
    BackendError::Other(e.to_string())
}

impl<'a> SpecBackend<'a> {
    pub fn new(inner: &'a mut dyn Backend, set: &'a SpecSet) -> SpecBackend<'a> {
        SpecBackend { inner, set, check_guards: false, out_of_bounds: None }
    }

    /// The out-of-bounds write seen in the last checked run, if any (taken).
    pub fn take_out_of_bounds(&mut self) -> Option<String> {
        self.out_of_bounds.take()
    }

    fn spec_kernel(&self, case: &Case) -> Option<&'static SpecKernel> {
        match case.kernel {
            KernelRef::Spec(name) => self.set.get(name),
            KernelRef::Suite(_) => None,
        }
    }

    /// Runs `reference` on copies of `call`'s inputs and records its outputs for `k`.
    fn compute_reference(
        &mut self,
        k: &'static SpecKernel,
        reference: &'static SpecKernel,
        call: &KernelCall<'_>,
    ) -> Result<(), BackendError> {
        let point = k.point(call.case);
        let rcase = reference.case_at(&point).map_err(other)?;
        let specs = reference.buffers(&rcase);
        let mut ids: Vec<BufId> = Vec::with_capacity(specs.len());
        let result = (|| {
            for (i, s) in specs.iter().enumerate() {
                let id = self.inner.alloc(s.dtype, s.len)?;
                ids.push(id);
                let data = if s.output {
                    rng::fill(s.dtype, s.len, sentinel_init(s.dtype), 0)
                } else {
                    let src = call.buffers.get(i).ok_or_else(|| {
                        other(format!("reference `{}`: buffer {i} missing", reference.name()))
                    })?;
                    self.inner.download(*src)?
                };
                self.inner.upload(id, &data)?;
            }
            let launch =
                reference.launches(&rcase).map_err(other)?.first().copied().unwrap_or_default();
            let rcall = KernelCall {
                case: &rcase,
                implementation: reference.name(),
                buffers: &ids,
                launch: &launch,
                scalars: &[],
            };
            // Its own reference first (chains end at a built-in: checked at load).
            self.prepare(&rcall)?;
            let scalars = reference.scalars(&rcase).map_err(other)?;
            self.inner.run(&KernelCall { scalars: &scalars, ..rcall }, 1)?;
            let mut outs = Vec::new();
            for (s, id) in specs.iter().zip(&ids) {
                if s.output {
                    outs.push(self.inner.download(*id)?);
                }
            }
            Ok(outs)
        })();
        for id in ids {
            self.inner.free(id);
        }
        k.set_reference_outputs(point, 0, result?);
        Ok(())
    }

    /// A file or command reference's outputs for `call`, computed unless known for this
    /// size point (and, for a command, these inputs).
    fn external_reference(
        &mut self,
        k: &'static SpecKernel,
        call: &KernelCall<'_>,
    ) -> Result<(), BackendError> {
        let point = k.point(call.case);
        match &k.spec().reference {
            ReferenceDecl::Files(_) => {
                if !k.has_reference_outputs(&point, 0) {
                    let outs = super::reference::read_expected(k, call.case).map_err(other)?;
                    k.set_reference_outputs(point, 0, outs);
                }
            }
            ReferenceDecl::Command(c) => {
                let declared = k.declared_buffers(call.case);
                // The inputs as the kernel gets them: in place, else downloaded.
                let mut owned = Vec::new();
                for (d, id) in declared.iter().zip(call.buffers) {
                    if !d.output && self.inner.host_buffer(*id).is_none() {
                        owned.push((*id, self.inner.download(*id)?));
                    }
                }
                let mut inputs: Vec<&HostBuf> = Vec::new();
                for (d, id) in declared.iter().zip(call.buffers) {
                    if d.output {
                        continue;
                    }
                    let b = match self.inner.host_buffer(*id) {
                        Some(b) => b,
                        None => owned.iter().find(|(i, _)| i == id).map(|(_, b)| b).ok_or_else(
                            || other(format!("input `{}` could not be read back", d.name)),
                        )?,
                    };
                    inputs.push(b);
                }
                let fp = super::reference::fingerprint(&inputs);
                if !k.has_reference_outputs(&point, fp) {
                    let case = super::reference::CommandCase {
                        kernel: k.spec().name.as_str(),
                        sizes: k
                            .spec()
                            .vars
                            .iter()
                            .map(String::as_str)
                            .zip(point.iter().copied())
                            .collect(),
                        buffers: &declared,
                        inputs,
                    };
                    let outs = super::reference::run_command(c, &case).map_err(other)?;
                    k.set_reference_outputs(point, fp, outs);
                }
            }
            ReferenceDecl::Builtin | ReferenceDecl::Kernel(_) => {}
        }
        Ok(())
    }

    fn inspect_guards(
        &mut self,
        k: &SpecKernel,
        call: &KernelCall<'_>,
    ) -> Result<(), BackendError> {
        let declared = k.declared_buffers(call.case);
        for (d, id) in declared.iter().zip(call.buffers) {
            if !d.output {
                continue;
            }
            let violation = match self.inner.host_buffer(*id) {
                Some(got) => guard_violation(got, d.dtype, d.len),
                None => guard_violation(&self.inner.download(*id)?, d.dtype, d.len),
            };
            if let Some(i) = violation {
                self.out_of_bounds = Some(format!(
                    "the kernel wrote past the end of output `{}` ({} elements declared; element \
                     {i} changed): a buffer too small for the grid, or a missing bounds check",
                    d.name, d.len
                ));
                break;
            }
        }
        Ok(())
    }
}

impl Backend for SpecBackend<'_> {
    fn info(&self) -> &BackendInfo {
        self.inner.info()
    }

    fn alloc(&mut self, dtype: DType, len: usize) -> Result<BufId, BackendError> {
        self.inner.alloc(dtype, len)
    }

    fn upload(&mut self, buf: BufId, data: &HostBuf) -> Result<(), BackendError> {
        self.inner.upload(buf, data)
    }

    fn download(&mut self, buf: BufId) -> Result<HostBuf, BackendError> {
        self.inner.download(buf)
    }

    fn free(&mut self, buf: BufId) {
        self.inner.free(buf);
    }

    fn download_into(&mut self, buf: BufId, out: &mut HostBuf) -> Result<(), BackendError> {
        self.inner.download_into(buf, out)
    }

    fn host_buffer(&self, buf: BufId) -> Option<&HostBuf> {
        self.inner.host_buffer(buf)
    }

    fn upload_owned(&mut self, buf: BufId, data: HostBuf) -> Result<Option<HostBuf>, BackendError> {
        self.inner.upload_owned(buf, data)
    }

    fn take_host(&mut self, buf: BufId) -> Option<HostBuf> {
        self.inner.take_host(buf)
    }

    fn put_host(&mut self, buf: BufId, data: HostBuf) {
        self.inner.put_host(buf, data);
    }

    fn implementations(&self, kernel: KernelRef) -> Vec<Implementation> {
        self.inner.implementations(kernel)
    }

    fn prepare(&mut self, call: &KernelCall<'_>) -> Result<(), BackendError> {
        let Some(k) = self.spec_kernel(call.case) else { return self.inner.prepare(call) };
        match &k.spec().reference {
            ReferenceDecl::Kernel(r) => {
                let reference = self.set.find(r).map_err(other)?;
                self.compute_reference(k, reference, call)?;
            }
            ReferenceDecl::Files(_) | ReferenceDecl::Command(_) => {
                self.external_reference(k, call)?;
            }
            ReferenceDecl::Builtin => {}
        }
        let scalars = k.scalars(call.case).map_err(other)?;
        self.check_guards = true;
        self.out_of_bounds = None;
        self.inner.prepare(&KernelCall { scalars: &scalars, ..*call })
    }

    fn run(&mut self, call: &KernelCall<'_>, iters: u32) -> Result<f64, BackendError> {
        let Some(k) = self.spec_kernel(call.case) else { return self.inner.run(call, iters) };
        let scalars = k.scalars(call.case).map_err(other)?;
        let t = self.inner.run(&KernelCall { scalars: &scalars, ..*call }, iters)?;
        if self.check_guards {
            self.check_guards = false;
            self.inspect_guards(k, call)?;
        }
        Ok(t)
    }

    fn flush_cache(&mut self) -> Result<(), BackendError> {
        self.inner.flush_cache()
    }

    fn launch_space(&self, call: &KernelCall<'_>) -> Vec<Launch> {
        match self.spec_kernel(call.case).map(|k| k.launches(call.case)) {
            Some(Ok(v)) if !v.is_empty() => v,
            _ => self.inner.launch_space(call),
        }
    }

    fn default_launch(&self, case: &Case) -> Launch {
        match self.spec_kernel(case).map(|k| k.launches(case)) {
            Some(Ok(v)) if !v.is_empty() => v[0],
            _ => self.inner.default_launch(case),
        }
    }

    fn available_memory_bytes(&self) -> Option<u64> {
        self.inner.available_memory_bytes()
    }

    fn launch_info(&self, call: &KernelCall<'_>) -> Vec<crate::backend::LaunchInfo> {
        match self.spec_kernel(call.case).map(|k| k.scalars(call.case)) {
            Some(Ok(scalars)) => self.inner.launch_info(&KernelCall { scalars: &scalars, ..*call }),
            Some(Err(_)) => Vec::new(),
            None => self.inner.launch_info(call),
        }
    }

    fn load_source(&mut self, kernel: &crate::backend::SourceKernel) -> Result<(), BackendError> {
        self.inner.load_source(kernel)
    }
}

/// Checks and times one case of a spec'd kernel (see [`harness::run_case`]); an
/// out-of-bounds write is reported in the check and the warnings, never timed.
#[allow(clippy::too_many_arguments)]
pub fn run_case(
    backend: &mut dyn Backend,
    set: &SpecSet,
    kernel: &SpecKernel,
    case: &Case,
    implementation: &Implementation,
    launch: Option<Launch>,
    opts: &TimingOptions,
    stop: &AtomicBool,
    progress: &mut dyn FnMut(Progress<'_>),
) -> Result<CaseResult, BenchError> {
    let mut ws = Workspace::with_keep_bytes(0);
    let r = run_case_in(
        &mut ws,
        backend,
        set,
        kernel,
        case,
        implementation,
        launch,
        opts,
        stop,
        progress,
    );
    ws.release(backend);
    r
}

/// [`run_case`] with the buffers of `ws`.
#[allow(clippy::too_many_arguments)]
pub fn run_case_in(
    ws: &mut Workspace,
    backend: &mut dyn Backend,
    set: &SpecSet,
    kernel: &SpecKernel,
    case: &Case,
    implementation: &Implementation,
    launch: Option<Launch>,
    opts: &TimingOptions,
    stop: &AtomicBool,
    progress: &mut dyn FnMut(Progress<'_>),
) -> Result<CaseResult, BenchError> {
    let mut wrapped = SpecBackend::new(backend, set);
    let launch = match launch {
        Some(l) => l,
        None => wrapped.default_launch(case),
    };
    let mut r = harness::run_case_in(
        ws,
        &mut wrapped,
        kernel,
        case,
        implementation,
        Some(launch),
        opts,
        stop,
        progress,
    )?;
    if let Some(msg) = wrapped.take_out_of_bounds() {
        r.check.passed = false;
        r.check.first_failure = Some(msg.clone());
        r.timing = None;
        r.warnings.retain(|w| !w.starts_with("result check failed"));
        r.warnings.push(format!("out-of-bounds write: {msg}: not timed"));
    }
    Ok(r)
}

/// Runs `case` at every launch of `launches` and returns the results, the best (lowest
/// median) first, as [`harness::autotune`].
#[allow(clippy::too_many_arguments)]
pub fn autotune(
    backend: &mut dyn Backend,
    set: &SpecSet,
    kernel: &SpecKernel,
    case: &Case,
    implementation: &Implementation,
    launches: &[Launch],
    opts: &TimingOptions,
    stop: &AtomicBool,
    progress: &mut dyn FnMut(Progress<'_>),
) -> Result<Vec<CaseResult>, BenchError> {
    let mut ws = Workspace::new();
    let r = autotune_in(
        &mut ws,
        backend,
        set,
        kernel,
        case,
        implementation,
        launches,
        opts,
        stop,
        progress,
    );
    ws.release(backend);
    r
}

/// [`autotune`] with the buffers of `ws`.
#[allow(clippy::too_many_arguments)]
pub fn autotune_in(
    ws: &mut Workspace,
    backend: &mut dyn Backend,
    set: &SpecSet,
    kernel: &SpecKernel,
    case: &Case,
    implementation: &Implementation,
    launches: &[Launch],
    opts: &TimingOptions,
    stop: &AtomicBool,
    progress: &mut dyn FnMut(Progress<'_>),
) -> Result<Vec<CaseResult>, BenchError> {
    crate::harness::sweep(launches, stop, |l| {
        run_case_in(ws, backend, set, kernel, case, implementation, Some(l), opts, stop, progress)
    })
}

/// The library API's one call: checks and times kernel `name` of `set` on `backend` at
/// every size of its spec (or `sel.single_config`), with its first implementation on
/// the backend; with `autotune`, at every block of the spec (best first per size).
/// Sources are not loaded here: call [`super::load_sources`] first for GPU backends.
pub fn bench_kernel(
    backend: &mut dyn Backend,
    set: &SpecSet,
    name: &str,
    sel: &Selection,
    autotune_blocks: bool,
    opts: &TimingOptions,
) -> Result<Vec<CaseResult>, BenchError> {
    let k = set.find(name).map_err(|e| {
        BenchError::Suite(SuiteError::BadConfig {
            kernel: name.to_string(),
            message: e.to_string(),
        })
    })?;
    let implementation = backend.implementations(k.id()).into_iter().next().ok_or_else(|| {
        BenchError::Backend(BackendError::NoImplementation {
            backend: backend.info().backend.clone(),
            kernel: name.to_string(),
            implementation: "(any: load its source or register it first)".to_string(),
        })
    })?;
    let stop = AtomicBool::new(false);
    let mut out = Vec::new();
    let mut ws = Workspace::new();
    let r = (|| {
        for case in k.cases(sel)? {
            let launches = k.launches(&case).map_err(|e| {
                BenchError::Suite(SuiteError::BadConfig {
                    kernel: name.to_string(),
                    message: e.to_string(),
                })
            })?;
            let launches =
                if autotune_blocks { launches } else { launches.into_iter().take(1).collect() };
            out.extend(autotune_in(
                &mut ws,
                backend,
                set,
                k,
                &case,
                &implementation,
                &launches,
                opts,
                &stop,
                &mut |_| {},
            )?);
        }
        Ok(out)
    })();
    ws.release(backend);
    r
}
