//! This machine's devices, as `rooftop devices --local` lists them. The CLI and
//! `rooftop-bench` detect them (CPU model and vector ISA, CUDA driver, wgpu adapters);
//! `rooftop-report` renders the records.

use super::nullable;
use serde::{Deserialize, Serialize};

/// Version of the `rooftop devices --local --format json` output.
pub const SCHEMA_VERSION: u32 = 1;

/// One device of this machine.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LocalDevice {
    /// What `--backend`/`--adapter` call it: `cpu`, `cuda:0`, `wgpu:0`.
    pub id: String,
    /// The device's own name.
    pub name: String,
    /// `CPU`, `discrete GPU`, `integrated GPU`, `CPU (software)`, ...
    #[serde(rename = "type")]
    pub kind: String,
    /// `Vulkan`, `Metal`, `DX12`, `GL`, `CUDA`; the vector ISA for the CPU.
    pub api: String,
    /// Driver version (`-` for the CPU).
    pub driver: String,
    /// GPU timestamp queries (`None` for the CPU).
    #[serde(deserialize_with = "nullable")]
    pub timestamps: Option<bool>,
    /// Half-precision shaders (`None` for the CPU).
    #[serde(deserialize_with = "nullable")]
    pub shader_f16: Option<bool>,
    /// Largest workgroup, invocations.
    #[serde(deserialize_with = "nullable")]
    pub max_workgroup_invocations: Option<u32>,
    /// Largest workgroup, x/y/z limits.
    #[serde(deserialize_with = "nullable")]
    pub max_workgroup_size: Option<[u32; 3]>,
    /// Shared (workgroup) memory per workgroup, bytes.
    #[serde(deserialize_with = "nullable")]
    pub workgroup_memory_bytes: Option<u32>,
    /// Id of the catalog entry this device matches.
    #[serde(deserialize_with = "nullable")]
    pub catalog: Option<String>,
}

/// The whole list, with what the build or the machine could not show.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LocalDevices {
    pub schema_version: u32,
    pub devices: Vec<LocalDevice>,
    /// Why a kind of device is missing (a feature not built in, no driver).
    pub notes: Vec<String>,
}
