//! The collective arguments the reader keeps: on NCCL kernels as libkineto writes them
//! (`output_json.cpp`, `appendCollectiveArgs`: numbers raw, names and lists quoted), on
//! `record_param_comms` ops, and leniently when a value has another type; and
//! `distributedInfo`'s rank and world size. Checked on the plain and the gzip path.

#![allow(clippy::unwrap_used)]

use rooftop_core::trace::CommArgs;
use rooftop_ingest::kineto::{read_bytes, ReadOptions};
use std::io::Write as _;
use std::path::Path;

const TRACE: &str = r#"{
  "distributedInfo": {"backend": "nccl", "rank": 5, "world_size": 64, "pg_count": 1},
  "baseTimeNanoseconds": 1700000000000000000,
  "traceEvents": [
  {"ph": "X", "cat": "cpu_op", "name": "record_param_comms", "pid": 1, "tid": 1, "ts": 10.0, "dur": 50.0,
   "args": {"External id": 7, "Collective name": "all_to_allv", "dtype": "BFloat16", "In msg nelems": 96,
            "Out msg nelems": 80, "Group size": 4, "In split size": "[24, 24, 24, 24]",
            "Out split size": "[20, 20, 20, 20]", "Process Group Name": "3",
            "Process Group Description": "mesh_ep", "Process Group Ranks": [4, 5, 6, 7], "Rank": 1}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernelExC", "pid": 1, "tid": 1, "ts": 12.0, "dur": 5.0,
   "args": {"External id": 7, "correlation": 70}},
  {"ph": "X", "cat": "kernel", "name": "ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)", "pid": 0, "tid": 20,
   "ts": 20.0, "dur": 30.5, "args": {"External id": 7, "device": 0, "stream": 20, "correlation": 70}},
  {"ph": "X", "cat": "cpu_op", "name": "record_param_comms", "pid": 1, "tid": 1, "ts": 100.0, "dur": 50.0,
   "args": {"External id": 8}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernelExC", "pid": 1, "tid": 1, "ts": 102.0, "dur": 5.0,
   "args": {"External id": 8, "correlation": 80}},
  {"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
   "pid": 0, "tid": 20, "ts": 110.0, "dur": 40.0,
   "args": {"External id": 8, "device": 0, "stream": 20, "correlation": 80, "Collective name": "allreduce",
            "In msg nelems": "1048576", "Out msg nelems": 1048576.0, "Group size": 64, "dtype": "BFloat16",
            "In split size": "[]", "Out split size": "[]", "Process Group Name": "0",
            "Process Group Description": "default_pg",
            "Process Group Ranks": "[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, ..., 63]",
            "Seq": 1234, "Comms Id": 99}},
  {"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllReduce_Sum_bf16_RING_LL", "pid": 0, "tid": 20,
   "ts": 200.0, "dur": 1.0,
   "args": {"device": 0, "stream": 20, "Collective name": 5, "In msg nelems": -3, "Group size": "many",
            "dtype": null, "Seq": "x", "Process Group Ranks": {"a": 1}}}
  ]
}"#;

fn check(m: &rooftop_core::trace::TraceModel) {
    assert_eq!((m.rank, m.world_size), (Some(5), Some(64)));
    // On the op (older PyTorch): a list written as a JSON array is kept as its text.
    let op =
        m.ops.iter().find(|o| o.comm.as_ref().is_some_and(|c| c.collective.is_some())).unwrap();
    let c = op.comm.as_deref().unwrap();
    assert_eq!(c.collective.as_deref(), Some("all_to_allv"));
    assert_eq!((c.in_nelems, c.out_nelems, c.group_size), (Some(96), Some(80), Some(4)));
    assert_eq!(c.in_split.as_deref(), Some("[24, 24, 24, 24]"));
    assert_eq!(c.pg_ranks.as_deref(), Some("[4, 5, 6, 7]"));
    assert_eq!(c.pg_desc.as_deref(), Some("mesh_ep"));
    // The kernel launched inside it carries no arguments of its own.
    let a2a = m.gpu.iter().find(|g| g.name.starts_with("ncclDevKernel_SendRecv")).unwrap();
    assert!(a2a.comm.is_none());
    // On the kernel (PyTorch ≥ 2.1): a count written as a string or an integral float
    // reads as the count; the truncated rank list is kept as written.
    let ar = m.gpu.iter().find(|g| g.ts_ns == 110_000).unwrap();
    let c = ar.comm.as_deref().unwrap();
    assert_eq!(
        *c,
        CommArgs {
            collective: Some("allreduce".into()),
            in_nelems: Some(1_048_576),
            out_nelems: Some(1_048_576),
            group_size: Some(64),
            dtype: Some("BFloat16".into()),
            pg_name: Some("0".into()),
            pg_desc: Some("default_pg".into()),
            pg_ranks: Some("[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, ..., 63]".into()),
            in_split: Some("[]".into()),
            out_split: Some("[]".into()),
            seq: Some(1234),
            src_rank: None,
            dst_rank: None,
        }
    );
    // Values of the wrong type read as absent (a number as a name is kept as text).
    let bad = m.gpu.iter().find(|g| g.ts_ns == 200_000).unwrap().comm.as_deref().unwrap();
    assert_eq!(bad.collective.as_deref(), Some("5"));
    assert_eq!(
        (bad.in_nelems, bad.group_size, bad.dtype.as_deref(), bad.seq, bad.pg_ranks.as_deref()),
        (None, None, None, None, None)
    );
}

#[test]
fn collective_arguments_plain_and_gzip() {
    let opts = ReadOptions::default();
    let m = read_bytes(TRACE.as_bytes(), Path::new("comm.json"), &opts, &mut |_, _| {}).unwrap();
    check(&m);
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(TRACE.as_bytes()).unwrap();
    let bytes = gz.finish().unwrap();
    let m = read_bytes(&bytes, Path::new("comm.json.gz"), &opts, &mut |_, _| {}).unwrap();
    check(&m);
}
