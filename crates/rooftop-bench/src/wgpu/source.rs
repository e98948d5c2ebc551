//! User kernels from source (`Backend::load_source`, for `rooftop bench --spec`).
//!
//! WGSL and SPIR-V. The ABI (documented in `docs/wgpu.md`): bindings in `@group(0)`; the
//! call's buffers are bindings `0..n` in order (`var<storage, read>` or
//! `var<storage, read_write>`), the call's scalars a `var<uniform>` at binding `n`
//! (32-bit words in order, padded to 16 bytes); one dispatch of `launch.grid`
//! workgroups; the workgroup size is the entry point's `@workgroup_size`, and a
//! `launch.block` that differs is refused unless the module declares `override
//! BLOCK_X: u32` (and `BLOCK_Y`, `BLOCK_Z`) and sizes its workgroups with them, in which
//! case the launch sets them as pipeline constants (what `--autotune` sweeps). A binding
//! the call cannot fill is an error that names it.
//!
//! The module is parsed by naga (wgpu's shader compiler) first, so a WGSL syntax error
//! comes back with its file, line and column, and SPIR-V goes through naga's front end
//! (no unsafe passthrough); validation errors come from wgpu's compilation messages,
//! with their line numbers too. Metal Shading Language would need wgpu's experimental
//! passthrough shaders, whose buffer bindings wgpu does not map: refused, as CUDA is.

use super::{no_impl, scalar_bytes, Prepared, PreparedStep, WgpuBackend};
use crate::backend::{Implementation, KernelCall, Launch, SourceKernel, SourceLang};
use crate::error::BackendError;
use wgpu::naga;
use wgpu::util::DeviceExt as _;

/// A binding the user's module declares in group 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Declared {
    Storage { read_only: bool },
    Uniform,
}

/// A loaded user kernel.
#[derive(Debug)]
pub(super) struct UserKernel {
    name: String,
    path: String,
    entry: String,
    module: wgpu::ShaderModule,
    workgroup_size: [u32; 3],
    /// Which of the pipeline-overridable constants `BLOCK_X`, `BLOCK_Y`, `BLOCK_Z` the
    /// module declares: those dimensions of `launch.block` are set at pipeline creation
    /// (`@workgroup_size(BLOCK_X)`), so `--autotune` can sweep them.
    block_overrides: [bool; 3],
    /// (binding, kind), sorted by binding.
    bindings: Vec<(u32, Declared)>,
}

fn err(msg: String) -> BackendError {
    BackendError::Other(msg)
}

impl UserKernel {
    pub(super) fn load(k: &SourceKernel, b: &WgpuBackend) -> Result<UserKernel, BackendError> {
        let path = k.path.display().to_string();
        let (module, source) = match k.lang {
            SourceLang::Wgsl => {
                let text = std::str::from_utf8(&k.code)
                    .map_err(|e| err(format!("{path}: WGSL source is not UTF-8 ({e})")))?;
                let module = naga::front::wgsl::parse_str(text).map_err(|e| {
                    let at = e.location(text).map_or_else(
                        || format!("{path}: "),
                        |l| format!("{path}:{}:{}: ", l.line_number, l.line_position),
                    );
                    err(format!(
                        "{at}WGSL compile error\n{}",
                        e.emit_to_string_with_path(text, &path)
                    ))
                })?;
                (module, wgpu::ShaderSource::Wgsl(text.into()))
            }
            SourceLang::Spirv => {
                // naga translates SPIR-V for every backend (safe, unlike passthrough); the
                // same bindings ABI as WGSL applies.
                let opts = naga::front::spv::Options {
                    adjust_coordinate_space: false,
                    ..naga::front::spv::Options::default()
                };
                let module = naga::front::spv::parse_u8_slice(&k.code, &opts).map_err(|e| {
                    err(format!("{path}: not a SPIR-V module rooftop can load: {e}"))
                })?;
                let words: Vec<u32> = k
                    .code
                    .chunks_exact(4)
                    .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                    .collect();
                (module, wgpu::ShaderSource::SpirV(words.into()))
            }
            SourceLang::Metal => {
                return Err(err(format!(
                    "{path}: the wgpu backend cannot run Metal Shading Language kernels (wgpu's \
                     Metal passthrough does not bind buffers); port the kernel to WGSL"
                )))
            }
            SourceLang::Cuda => {
                return Err(err(format!(
                    "{path}: the wgpu backend runs WGSL and SPIR-V kernels, not CUDA (use \
                     --backend cuda)"
                )))
            }
        };
        let ep = module
            .entry_points
            .iter()
            .find(|e| e.name == k.entry && e.stage == naga::ShaderStage::Compute)
            .ok_or_else(|| {
                let have: Vec<&str> = module
                    .entry_points
                    .iter()
                    .filter(|e| e.stage == naga::ShaderStage::Compute)
                    .map(|e| e.name.as_str())
                    .collect();
                err(format!(
                    "{path}: no compute entry point `{}` (the module has: {})",
                    k.entry,
                    if have.is_empty() { "none".to_string() } else { have.join(", ") }
                ))
            })?;
        let declared: Vec<&str> =
            module.overrides.iter().filter_map(|(_, o)| o.name.as_deref()).collect();
        let block_overrides = BLOCK_CONSTANTS.map(|n| declared.contains(&n));
        let mut bindings = Vec::new();
        for (_, g) in module.global_variables.iter() {
            let Some(rb) = g.binding else { continue };
            let name = g.name.as_deref().unwrap_or("?");
            if rb.group != 0 {
                return Err(err(format!(
                    "{path}: `{name}` is in @group({}); kernels from source bind everything in \
                     @group(0)",
                    rb.group
                )));
            }
            let kind = match g.space {
                naga::AddressSpace::Storage { access } => {
                    Declared::Storage { read_only: !access.contains(naga::StorageAccess::STORE) }
                }
                naga::AddressSpace::Uniform => Declared::Uniform,
                _ => {
                    return Err(err(format!(
                        "{path}: `{name}` (@binding({})) is neither a storage buffer nor a \
                         uniform; kernels from source take buffers and scalars only",
                        rb.binding
                    )))
                }
            };
            bindings.push((rb.binding, kind));
        }
        bindings.sort_by_key(|&(i, _)| i);
        let shader = b.scoped(&format!("{path}: compiling"), || {
            b.device
                .create_shader_module(wgpu::ShaderModuleDescriptor { label: Some(&k.name), source })
        });
        // Validation errors: wgpu's compilation messages carry line numbers.
        let messages: Vec<String> = match &shader {
            Ok(m) => compile_errors(m, &path),
            Err(_) => Vec::new(),
        };
        if !messages.is_empty() {
            let lang = k.lang.as_str();
            return Err(err(format!("{path}: {lang} compile error\n{}", messages.join("\n"))));
        }
        Ok(UserKernel {
            name: k.name.clone(),
            path,
            entry: k.entry.clone(),
            module: shader?,
            workgroup_size: ep.workgroup_size,
            block_overrides,
            bindings,
        })
    }

    pub(super) fn implementation(&self) -> Implementation {
        Implementation {
            id: self.name.clone(),
            builtin: false,
            label: format!("WGSL from {} (entry {})", self.path, self.entry),
        }
    }

    /// The call's launch with the shader's workgroup size filled in (the given block
    /// wins when the module takes its size from `BLOCK_*` overrides).
    pub(super) fn default_launch(&self, given: &Launch) -> Launch {
        let block = match given.block {
            Some(b) if self.block_overrides.iter().any(|&o| o) => b,
            _ => self.workgroup_size,
        };
        Launch { block: Some(block), ..*given }
    }
}

/// Names of the pipeline-overridable constants that set the workgroup size.
const BLOCK_CONSTANTS: [&str; 3] = ["BLOCK_X", "BLOCK_Y", "BLOCK_Z"];

fn compile_errors(m: &wgpu::ShaderModule, path: &str) -> Vec<String> {
    let info = pollster::block_on(m.get_compilation_info());
    info.messages
        .iter()
        .filter(|m| m.message_type == wgpu::CompilationMessageType::Error)
        .map(|m| match &m.location {
            Some(l) => format!("{path}:{}:{}: {}", l.line_number, l.line_position, m.message),
            None => format!("{path}: {}", m.message),
        })
        .collect()
}

impl WgpuBackend {
    pub(super) fn prepare_source(
        &mut self,
        call: &KernelCall<'_>,
    ) -> Result<Prepared, BackendError> {
        let u = self.sources.get(call.implementation).ok_or_else(|| no_impl(call))?;
        let n = call.buffers.len() as u32;
        let Some(grid) = call.launch.grid else {
            return Err(BackendError::BadLaunch(format!(
                "{}: a WGSL kernel from source runs on launch.grid workgroups; none given",
                u.path
            )));
        };
        // A block dimension may differ from @workgroup_size only where the module takes it
        // from a BLOCK_X/Y/Z override.
        let mut constants: Vec<(&str, f64)> = Vec::new();
        if let Some(block) = call.launch.block {
            for d in 0..3 {
                if u.block_overrides[d] {
                    constants.push((BLOCK_CONSTANTS[d], f64::from(block[d])));
                } else if block[d] != u.workgroup_size[d] {
                    let w = u.workgroup_size;
                    return Err(BackendError::BadLaunch(format!(
                        "{}: block {}x{}x{} differs from the entry point's \
                         @workgroup_size({}, {}, {}); declare `override {}: u32` and use it in \
                         @workgroup_size to let the launch set it",
                        u.path, block[0], block[1], block[2], w[0], w[1], w[2], BLOCK_CONSTANTS[d]
                    )));
                }
            }
            // Three `u32`s multiply past `u64` but not past `u128`.
            let threads: u128 = block.iter().map(|&b| u128::from(b)).product();
            if threads == 0
                || threads > u128::from(self.limits.max_compute_invocations_per_workgroup)
            {
                return Err(BackendError::BadLaunch(format!(
                    "{}: block {}x{}x{} = {threads} invocations: this adapter allows 1..={}",
                    u.path,
                    block[0],
                    block[1],
                    block[2],
                    self.limits.max_compute_invocations_per_workgroup
                )));
            }
        }
        let max = self.limits.max_compute_workgroups_per_dimension;
        if grid.iter().any(|&g| g == 0 || g > max) {
            return Err(BackendError::BadLaunch(format!(
                "{}: grid {}x{}x{}: each dimension must be in 1..={max} on this adapter",
                u.path, grid[0], grid[1], grid[2]
            )));
        }
        let mut layout_entries = Vec::new();
        for &(i, kind) in &u.bindings {
            let ty = match kind {
                Declared::Storage { read_only } if i < n => {
                    wgpu::BufferBindingType::Storage { read_only }
                }
                Declared::Uniform if i == n && !call.scalars.is_empty() => {
                    wgpu::BufferBindingType::Uniform
                }
                Declared::Storage { .. } => {
                    return Err(BackendError::Other(format!(
                        "{}: @binding({i}) is a storage buffer but the call has {n} buffers \
                         (bindings 0..{n})",
                        u.path
                    )))
                }
                Declared::Uniform => {
                    return Err(BackendError::Other(format!(
                        "{}: @binding({i}) is a uniform; the scalars go at binding {n} (after the \
                         {n} buffers) and the call has {} scalars",
                        u.path,
                        call.scalars.len()
                    )))
                }
            };
            layout_entries.push(wgpu::BindGroupLayoutEntry {
                binding: i,
                visibility: wgpu::ShaderStages::COMPUTE,
                ty: wgpu::BindingType::Buffer {
                    ty,
                    has_dynamic_offset: false,
                    min_binding_size: None,
                },
                count: None,
            });
        }
        let scalars = self.device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some("rooftop scalars"),
            contents: &scalar_bytes(call.scalars),
            usage: wgpu::BufferUsages::UNIFORM,
        });
        let mut entries = Vec::new();
        for &(i, _) in &u.bindings {
            let buffer = if i < n { &self.buf(call.buffers[i as usize])?.buffer } else { &scalars };
            entries.push(wgpu::BindGroupEntry { binding: i, resource: buffer.as_entire_binding() });
        }
        let what = format!("{}: creating the pipeline", u.path);
        let (pipeline, bind_group) = self.scoped(&what, || {
            let bgl = self.device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
                label: Some(&u.name),
                entries: &layout_entries,
            });
            let layout = self.device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
                label: Some(&u.name),
                bind_group_layouts: &[Some(&bgl)],
                immediate_size: 0,
            });
            let pipeline = self.device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                label: Some(&u.name),
                layout: Some(&layout),
                module: &u.module,
                entry_point: Some(&u.entry),
                compilation_options: wgpu::PipelineCompilationOptions {
                    constants: &constants,
                    ..wgpu::PipelineCompilationOptions::default()
                },
                cache: None,
            });
            let bind_group = self.device.create_bind_group(&wgpu::BindGroupDescriptor {
                label: Some(&u.name),
                layout: &bgl,
                entries: &entries,
            });
            (pipeline, bind_group)
        })?;
        Ok(Prepared {
            steps: vec![PreparedStep { pipeline, bind_group, workgroups: grid }],
            uses: call.buffers.iter().map(|b| b.0).collect(),
            _owned: vec![scalars],
        })
    }
}
