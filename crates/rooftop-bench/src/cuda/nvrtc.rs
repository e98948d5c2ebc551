//! CUDA C compiled at run time: the suite's sources (cached per module) and user kernels
//! from a spec, compiled by NVRTC for the device's compute capability and loaded by the
//! driver.

use super::{driver_err, plan, CudaBackend};
use crate::error::BackendError;
use cudarc::driver::{sys, CudaFunction, CudaModule};
use std::sync::Arc;

/// A user kernel compiled by [`Backend::load_source`].
#[derive(Debug)]
pub(super) struct UserKernel {
    pub(super) func: CudaFunction,
    pub(super) _module: Arc<CudaModule>,
}

impl CudaBackend {
    pub(super) fn compile(&mut self, name: &'static str) -> Result<Arc<CudaModule>, BackendError> {
        if let Some(m) = self.modules.get(name) {
            return Ok(m.clone());
        }
        let src = plan::source(name)
            .ok_or_else(|| BackendError::Other(format!("no CUDA source `{name}`")))?;
        let code = format!("{}\n{}", plan::COMMON, src.code);
        let m = self.compile_text(&code, &format!("{name}.cu"))?;
        self.modules.insert(name, m.clone());
        Ok(m)
    }

    pub(super) fn compile_text(
        &self,
        code: &str,
        file: &str,
    ) -> Result<Arc<CudaModule>, BackendError> {
        if code.contains('\0') {
            return Err(BackendError::Other(format!("{file}: the source contains a NUL byte")));
        }
        let (major, minor) = self.attrs.compute_capability;
        let opts = cudarc::nvrtc::CompileOptions {
            options: vec![
                format!("--gpu-architecture=compute_{major}{minor}"),
                "--std=c++17".into(),
            ],
            name: Some(file.to_string()),
            ..Default::default()
        };
        let ptx = cudarc::nvrtc::compile_ptx_with_opts(code, opts).map_err(|e| match e {
            cudarc::nvrtc::CompileError::CompileError { log, .. } => BackendError::Other(format!(
                "NVRTC {}.{} could not compile {file} for compute_{major}{minor}:\n{}",
                self.nvrtc_version.0,
                self.nvrtc_version.1,
                log.to_string_lossy().trim_end()
            )),
            other => BackendError::Other(format!("NVRTC could not compile {file}: {other:?}")),
        })?;
        self.ctx.load_module(ptx).map_err(|e| {
            if e.0 == sys::CUresult::CUDA_ERROR_UNSUPPORTED_PTX_VERSION {
                BackendError::Other(format!(
                    "the CUDA driver cannot load the PTX NVRTC {}.{} produced for {file}: the \
                     driver is older than NVRTC; update the driver",
                    self.nvrtc_version.0, self.nvrtc_version.1
                ))
            } else {
                driver_err(&format!("loading {file}"), e)
            }
        })
    }

    pub(super) fn function(
        &mut self,
        source: &'static str,
        entry: &str,
    ) -> Result<CudaFunction, BackendError> {
        let m = self.compile(source)?;
        m.load_function(entry)
            .map_err(|e| driver_err(&format!("finding {entry} in {source}.cu"), e))
    }
}
