//! Custom all-reduce kernels of inference engines, which do not go through NCCL/RCCL and
//! so are not named like its kernels, yet are communication:
//!
//! - PyTorch symmetric memory (`torch.distributed._symmetric_memory`, used by vLLM on
//!   NVLink/NVSwitch systems): `multimem_all_reduce_kernel`,
//!   `multimem_one_shot_all_reduce_kernel`, `one_shot_all_reduce_kernel`,
//!   `two_shot_all_reduce_kernel`, `multimem_all_gather_kernel`, `multimem_reduce_scatter…`
//!   (`CUDASymmetricMemoryOps.cu`);
//! - vLLM / SGLang / AITER custom all-reduce: `cross_device_reduce_1stage`,
//!   `cross_device_reduce_2stage` (`csrc/custom_all_reduce.cuh`);
//! - vLLM / AITER quick all-reduce on ROCm: `quickreduce::allreduce_prototype_twoshot…`
//!   (`csrc/quickreduce/quick_reduce_impl.cuh`);
//! - FlashInfer / TensorRT-LLM fused all-reduce: `allreduce_fusion_kernel…`,
//!   `oneshotAllreduce…`, `twoshotAllreduce…` (MNNVL).
//!
//! Names are matched as substrings, case-sensitively, since they are the kernels' C++
//! names as the profiler records them.

/// Substrings of custom all-reduce kernel names.
const PATTERNS: [&str; 10] = [
    "multimem_all_reduce",
    "multimem_one_shot_all_reduce",
    "multimem_all_gather",
    "multimem_reduce_scatter",
    "one_shot_all_reduce",
    "two_shot_all_reduce",
    "cross_device_reduce",
    "allreduce_prototype",
    "allreduce_fusion_kernel",
    "shotAllreduce",
];

/// Whether `name` is a custom (non-NCCL) collective kernel of an inference engine.
pub fn is_custom_allreduce(name: &str) -> bool {
    // Every pattern contains `educe` or `multimem`: one scan rejects most kernels.
    if !(name.contains("educe") || name.contains("multimem")) {
        return false;
    }
    PATTERNS.iter().any(|p| name.contains(p)) || name.contains("quickreduce::")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert!(is_custom_allreduce(
            "void c10d::symmetric_memory::multimem_all_reduce_kernel<c10::BFloat16, 16>(...)"
        ));
        assert!(is_custom_allreduce(
            "void vllm::cross_device_reduce_1stage<__nv_bfloat16, 8>(...)"
        ));
        assert!(is_custom_allreduce(
            "quickreduce::allreduce_prototype_twoshot<AllReduceTwoshot<__half, CodecQ4<__half,4>, true>, __half>"
        ));
        assert!(is_custom_allreduce("twoshotAllreduceKernel<__nv_bfloat16, 4>"));
        assert!(!is_custom_allreduce("ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_tn"));
        assert!(!is_custom_allreduce("reduce_segments"));
    }
}
