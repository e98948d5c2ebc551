//! Tests of the models TraceLens does not have (softmax, data movement, embeddings,
//! pooling, legacy convolution backward, the other element-wise ops, Triton kernels)
//! and of the coverage: each checked by hand arithmetic written here, and against a
//! published count where one exists.

// The formulas name dimensions as the docs do (N, C, H, W, k).
#![allow(clippy::many_single_char_names)]

use super::*;
use crate::trace::model::{GpuEvent, GpuKind, LaunchDims};

fn t(d: &[i64]) -> Dims {
    Dims::Tensor(d.to_vec())
}

fn args(dims: Vec<Dims>, types: &[&str], concrete: &[&str]) -> OpArgs {
    OpArgs {
        input_dims: dims,
        input_types: types.iter().map(|s| (*s).to_string()).collect(),
        input_strides: Vec::new(),
        concrete_inputs: concrete.iter().map(|s| (*s).to_string()).collect(),
    }
}

const BF: &str = "c10::BFloat16";
const LONG: &str = "long int";

/// ViT-B/16's attention softmax: 4 images × 12 heads × 197 × 197 scores in bf16.
#[test]
fn softmax_by_hand_and_against_the_published_access_count() {
    let a = args(
        vec![t(&[4, 12, 197, 197]), t(&[]), t(&[])],
        &[BF, "Scalar", "Scalar"],
        &["", "-1", "False"],
    );
    let m = model_op("aten::_softmax", &a).unwrap();
    let e = 4.0 * 12.0 * 197.0 * 197.0; // 1_862_832 elements
    let rows = 4.0 * 12.0 * 197.0; // 9_456 rows
                                   // max, subtract, exp, sum, scale per element; one reciprocal per row.
    assert_eq!(m.flops, 5.0 * e + rows);
    assert_eq!(m.flops, 9_323_616.0);
    // One load and one store per element: half the 4 accesses per element of the
    // three-pass safe softmax and 2/3 of the 3 of online softmax (Milakov & Gimelshein,
    // arXiv:1805.02867, sections 2-3) — the DRAM floor when a row stays on chip.
    let bytes_per_access = 2.0 * e;
    assert_eq!(m.bytes, 2.0 * bytes_per_access);
    assert_eq!(m.bytes * 2.0, 4.0 * bytes_per_access);
    assert_eq!(m.table, Table::Softmax);
    assert_eq!(m.work.class, OpClass::Softmax);
    // half_to_float writes float.
    let a =
        args(vec![t(&[8, 1024]), t(&[]), t(&[])], &[BF, "Scalar", "Scalar"], &["", "1", "True"]);
    let m = model_op("aten::_log_softmax", &a).unwrap();
    assert_eq!(m.flops, 5.0 * 8192.0 + 8.0);
    assert_eq!(m.bytes, 8192.0 * 2.0 + 8192.0 * 4.0);
    // No dim recorded: a reason, not a guess.
    let a = args(vec![t(&[8, 1024])], &[BF], &[]);
    assert!(matches!(model_op("aten::_softmax", &a), Err(OpModelError::BadArgs { .. })));
}

#[test]
fn softmax_backward_by_hand() {
    let s = t(&[4, 12, 197, 197]);
    let a = args(
        vec![s.clone(), s, t(&[]), t(&[])],
        &[BF, BF, "Scalar", "Scalar"],
        &["", "", "-1", "15"],
    );
    let m = model_op("aten::_softmax_backward_data", &a).unwrap();
    let e = 1_862_832.0;
    // product, sum, difference, product per element.
    assert_eq!(m.flops, 4.0 * e);
    // dy and y read, dx written, 2 bytes each.
    assert_eq!(m.bytes, 3.0 * e * 2.0);
    // dx in float (input_dtype 6) when the forward was half_to_float.
    let s = t(&[2, 8]);
    let a = args(
        vec![s.clone(), s, t(&[]), t(&[])],
        &["float", "float", "Scalar", "Scalar"],
        &["", "", "1", "5"],
    );
    let m = model_op("aten::_log_softmax_backward_data", &a).unwrap();
    assert_eq!(m.bytes, 16.0 * 4.0 * 2.0 + 16.0 * 2.0);
}

/// A model of one op launching one kernel named `kernel`.
fn one_op(name: &str, a: OpArgs, kernel: &str) -> TraceModel {
    TraceModel {
        ops: vec![CpuOp {
            name: name.into(),
            args: a.into(),
            launched: vec![0],
            ..CpuOp::default()
        }],
        gpu: vec![GpuEvent {
            kind: GpuKind::Kernel,
            name: kernel.into(),
            dur_ns: 1000,
            op: Some(0),
            launcher: Some("cudaLaunchKernel".into()),
            ..GpuEvent::default()
        }],
        ..TraceModel::default()
    }
}

/// The class token and the patches of the TraceLens H100 ViT trace: `aten::cat` of
/// [4, 1, 768] and [4, 196, 768] records `TensorList` as its type; the kernel copies
/// `OpaqueType<2u>` elements.
#[test]
fn cat_takes_its_element_size_from_the_kernel() {
    let a = OpArgs {
        input_dims: vec![Dims::List(vec![vec![4, 1, 768], vec![4, 196, 768]]), t(&[])],
        input_types: vec!["TensorList".to_string(), "Scalar".to_string()],
        input_strides: Vec::new(),
        concrete_inputs: vec![String::new(), "1".to_string()],
    };
    let err = model_op("aten::cat", &a).unwrap_err();
    assert!(err.to_string().contains("element size"), "{err}");
    let k = "void at::native::(anonymous namespace)::CatArrayBatchedCopy<at::native::(anonymous \
             namespace)::OpaqueType<2u>, unsigned int, 3, 64, 64>(...)";
    let model = one_op("aten::cat", a, k);
    let m = model_op_in(&model, 0).unwrap();
    // (4·768 + 4·196·768) = 605_184 elements of 2 bytes, read and written.
    assert_eq!(m.bytes, 2.0 * 605_184.0 * 2.0);
    assert_eq!(m.flops, 0.0);
    assert_eq!(m.table, Table::DataMovement);
}

/// BERT's word embedding in the TraceLens H100 trace: [30522, 512] bf16, 141 indices.
#[test]
fn embedding_and_index_select_by_hand() {
    let a = args(
        vec![t(&[30522, 512]), t(&[1, 141]), t(&[]), t(&[]), t(&[])],
        &[BF, LONG, "Scalar", "Scalar", "Scalar"],
        &["", "", "0", "False", "False"],
    );
    let m = model_op("aten::embedding", &a).unwrap();
    // 141·8 index bytes + 141·512·2 rows read; 141·512·2 written.
    assert_eq!(m.bytes, 1128.0 + 144_384.0 + 144_384.0);
    assert_eq!(m.table, Table::Embedding);
    let a = args(vec![t(&[30522, 512]), t(&[]), t(&[141])], &[BF, "Scalar", LONG], &["", "0", ""]);
    assert_eq!(model_op("aten::index_select", &a).unwrap().bytes, 289_896.0);
    // The backward: 141 gradient rows added into a zero-filled [30522, 512] gradient.
    let a = args(
        vec![t(&[1, 141, 512]), t(&[1, 141]), t(&[]), t(&[]), t(&[])],
        &[BF, LONG, "Scalar", "Scalar", "Scalar"],
        &["", "", "30522", "0", "False"],
    );
    let m = model_op("aten::embedding_dense_backward", &a).unwrap();
    assert_eq!(m.flops, 141.0 * 512.0);
    assert_eq!(m.bytes, 144_384.0 + 1128.0 + 30522.0 * 512.0 * 2.0);
}

#[test]
fn embedding_bag_by_hand() {
    // 300 indices into [1000, 64] float, 33 offsets with include_last_offset: 32 bags,
    // mean pooling.
    let a = args(
        vec![t(&[1000, 64]), t(&[300]), t(&[33]), t(&[]), t(&[]), t(&[]), t(&[]), t(&[]), t(&[])],
        &["float", LONG, LONG, "Scalar", "Scalar", "Scalar", "", "Scalar", "Scalar"],
        &["", "", "", "False", "1", "False", "", "True", "-1"],
    );
    let m = model_op("aten::_embedding_bag", &a).unwrap();
    // 300·64 additions + 32·64 divisions.
    assert_eq!(m.flops, 19_200.0 + 2048.0);
    // 300·8 + 33·8 + 300·64·4 read; 32·64·4 written.
    assert_eq!(m.bytes, 2400.0 + 264.0 + 76_800.0 + 8192.0);
}

/// fbgemm `split_embedding_codegen_forward_unweighted_cuda(dev_weights, uvm_weights,
/// lxu_cache_weights, weights_placements, weights_offsets, D_offsets, total_D, max_D,
/// indices, offsets, pooling_mode, ...)`: 2 tables of width 16, batch 8, 50 indices.
#[test]
fn split_embedding_by_hand() {
    let mk = |total_d: &str, max_d: &str| {
        args(
            vec![
                t(&[3200]),
                t(&[0]),
                t(&[0, 0]),
                t(&[2]),
                t(&[2]),
                t(&[3]),
                t(&[]),
                t(&[]),
                t(&[50]),
                t(&[17]),
                t(&[]),
            ],
            &[
                "float", "float", "float", "int", LONG, "int", "Scalar", "Scalar", LONG, LONG,
                "Scalar",
            ],
            &["", "", "", "", "", "", total_d, max_d, "", "", "0"],
        )
    };
    let name = "fbgemm::split_embedding_codegen_forward_unweighted_cuda";
    let m = model_op(name, &mk("32", "16")).unwrap();
    assert_eq!(m.flops, 50.0 * 16.0);
    // 50·8 indices + 17·8 offsets + 50·16·4 rows read; 8·32·4 written.
    assert_eq!(m.bytes, 400.0 + 136.0 + 3200.0 + 1024.0);
    assert_eq!(m.params.get("batch"), Some(&ParamValue::Int(8)));
    // Tables of widths 16 and 24: which rows each index reads is not in the trace.
    let e = model_op(name, &mk("40", "24")).unwrap_err();
    assert!(e.to_string().contains("different widths"), "{e}");
}

/// ResNet-50's first convolution (7×7, 3 → 64, stride 2) on 32 images of 224²:
/// 112·112·64·3·49 = 118_013_952 multiply-adds per image (the 118.01 MMac every
/// ResNet-50 FLOP table lists for conv1), and each gradient costs as many
/// (PyTorch `torch.utils.flop_counter.conv_backward_flop`).
#[test]
fn legacy_convolution_backward_by_hand() {
    let (x, w, dy) = ([32, 3, 224, 224], [64, 3, 7, 7], [32, 64, 112, 112]);
    let a = args(
        vec![t(&x), t(&dy), t(&w)],
        &[BF, BF, BF],
        &["", "", "", "[3, 3]", "[2, 2]", "[1, 1]", "1", "False", "False", "True", "[True, True]"],
    );
    let m = model_op("aten::cudnn_convolution_backward", &a).unwrap();
    let per_grad = 2.0 * 118_013_952.0 * 32.0;
    assert_eq!(m.flops, 2.0 * per_grad);
    let (nx, nw, ny) = (32.0 * 3.0 * 224.0 * 224.0, 64.0 * 3.0 * 49.0, 32.0 * 64.0 * 112.0 * 112.0);
    assert_eq!(m.bytes, ((ny + nw + nx) + (ny + nx + nw)) * 2.0);
    assert_eq!(m.table, Table::ConvBwd);
    // The weight gradient alone, its size from the concrete inputs.
    let a = args(vec![t(&[]), t(&dy), t(&x)], &["", BF, BF], &["[64, 3, 7, 7]", "", ""]);
    let m = model_op("aten::cudnn_convolution_backward_weight", &a).unwrap();
    assert_eq!(m.flops, per_grad);
    assert_eq!(m.bytes, (ny + nx + nw) * 2.0);
    // A 2021 trace records no int lists: a reason, not a guess.
    let a = args(vec![t(&[]), t(&dy), t(&w)], &["", BF, BF], &[]);
    let e = model_op("aten::cudnn_convolution_backward_input", &a).unwrap_err();
    assert!(e.to_string().contains("not recorded"), "{e}");
}

/// AlexNet's first max pool (3×3, stride 2) on 128×64×55×55 float: 27×27 outputs.
#[test]
fn max_pool_forward_and_backward_by_hand() {
    let a = args(
        vec![t(&[128, 64, 55, 55]), t(&[]), t(&[]), t(&[]), t(&[]), t(&[])],
        &["float", "ScalarList", "ScalarList", "ScalarList", "ScalarList", "Scalar"],
        &["", "[3, 3]", "[2, 2]", "[0, 0]", "[1, 1]", "False"],
    );
    let m = model_op("aten::max_pool2d_with_indices", &a).unwrap();
    let (nc, e_in, e_out) = (8192.0, 128.0 * 64.0 * 55.0 * 55.0, 128.0 * 64.0 * 27.0 * 27.0);
    // 27 windows of 3 per axis: 81·81 comparisons per channel.
    assert_eq!(m.flops, nc * 81.0 * 81.0);
    // Input read; output and int64 indices written.
    assert_eq!(m.bytes, e_in * 4.0 + e_out * (4.0 + 8.0));
    assert_eq!(m.params.get("output_spatial"), Some(&ParamValue::Ints(vec![27, 27])));
    let b = args(
        vec![
            t(&[128, 64, 27, 27]),
            t(&[128, 64, 55, 55]),
            t(&[]),
            t(&[]),
            t(&[]),
            t(&[]),
            t(&[]),
            t(&[128, 64, 27, 27]),
        ],
        &["float", "float", "ScalarList", "ScalarList", "ScalarList", "ScalarList", "Scalar", LONG],
        &["", "", "[3, 3]", "[2, 2]", "[0, 0]", "[1, 1]", "False", ""],
    );
    let m = model_op("aten::max_pool2d_with_indices_backward", &b).unwrap();
    assert_eq!(m.flops, e_out);
    assert_eq!(m.bytes, e_out * 12.0 + e_in * 4.0);
}

/// Adaptive average pooling 13×13 → 6×6: windows [0,3), [2,5), [4,7), [6,9), [8,11),
/// [10,13) per axis, 18 elements, so 18·18 per channel plus 36 divisions.
#[test]
fn adaptive_avg_pool_by_hand() {
    let a = args(vec![t(&[2, 256, 13, 13]), t(&[])], &["float", "ScalarList"], &["", "[6, 6]"]);
    let m = model_op("aten::_adaptive_avg_pool2d", &a).unwrap();
    assert_eq!(m.flops, 512.0 * (18.0 * 18.0 + 36.0));
    assert_eq!(m.bytes, 512.0 * (169.0 + 36.0) * 4.0);
    let b = args(vec![t(&[2, 256, 6, 6]), t(&[2, 256, 13, 13])], &["float", "float"], &[]);
    let m = model_op("aten::_adaptive_avg_pool2d_backward", &b).unwrap();
    assert_eq!(m.flops, 512.0 * (18.0 * 18.0 + 36.0));
}

#[test]
fn other_elementwise_ops_by_hand() {
    // Dropout of ViT activations [4, 197, 768] bf16: compare and scale; the output and
    // a one-byte mask written.
    let a = args(
        vec![t(&[4, 197, 768]), t(&[]), t(&[])],
        &[BF, "Scalar", "Scalar"],
        &["", "0.1", "True"],
    );
    let m = model_op("aten::native_dropout", &a).unwrap();
    let e = 605_184.0;
    assert_eq!(m.flops, 2.0 * e);
    assert_eq!(m.bytes, e * 2.0 + e * 2.0 + e);
    // eq of [1, 141] long against a scalar: a one-byte result.
    let a = args(vec![t(&[1, 141]), t(&[])], &[LONG, "Scalar"], &["", "1"]);
    assert_eq!(model_op("aten::eq", &a).unwrap().bytes, 141.0 * 8.0 + 141.0);
    // argmax over 1000 logits of 4 rows writes 4 longs.
    let a = args(
        vec![t(&[4, 1000]), t(&[]), t(&[])],
        &["float", "Scalar", "Scalar"],
        &["", "1", "False"],
    );
    let m = model_op("aten::argmax", &a).unwrap();
    assert_eq!(m.bytes, 16_000.0 + 32.0);
    // fill_ writes and reads nothing.
    let a = args(vec![t(&[5, 128]), t(&[])], &["float", "Scalar"], &["", "0"]);
    let m = model_op("aten::fill_", &a).unwrap();
    assert_eq!((m.flops, m.bytes), (0.0, 2560.0));
    // TraceLens's binary table keeps its own op list: `sub` is ours.
    let a = args(vec![t(&[8, 8]), t(&[8, 8]), t(&[])], &[BF, BF, "Scalar"], &["", "", "1"]);
    assert_eq!(model_op("aten::sub", &a).unwrap().table, Table::Elementwise);
}

/// The optimizer step of HTA's MI250 toy model: `_foreach_add_` of [128, 128] and [128]
/// float parameters and their gradients (the lists' dtype from the kernel's functor).
#[test]
fn foreach_takes_its_element_size_from_the_kernel() {
    let l = Dims::List(vec![vec![128, 128], vec![128]]);
    let a = OpArgs {
        input_dims: vec![l.clone(), l, t(&[])],
        input_types: vec!["TensorList".to_string(), "TensorList".to_string(), "Scalar".to_string()],
        input_strides: Vec::new(),
        concrete_inputs: vec![String::new(), String::new(), "-0.001".to_string()],
    };
    let k =
        "void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous \
             namespace)::TensorListMetadata<2>, at::native::(anonymous \
             namespace)::BinaryOpListAlphaFunctor<float, 2, 2, 0>, std::plus<float>, float>(...)";
    let m = model_op_in(&one_op("aten::_foreach_add_", a, k), 0).unwrap();
    // 16_512 elements: two lists read, the first written.
    assert_eq!(m.flops, 16_512.0);
    assert_eq!(m.bytes, 16_512.0 * 4.0 * 3.0);
}

/// PyTorch 2.11's optimizer step (a torch 2.11 H200 trace): `_foreach_mul_(TensorList,
/// Scalar)` with `Input Dims` `[[], []]`: no sizes, so no model, and the reason says so.
#[test]
fn foreach_without_recorded_lists_has_no_model_and_says_why() {
    let a = OpArgs {
        input_dims: vec![t(&[]), t(&[])],
        input_types: vec!["TensorList".to_string(), "Scalar".to_string()],
        input_strides: Vec::new(),
        concrete_inputs: vec![String::new(), "0.99999000000000005".to_string()],
    };
    let k = "void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::\
             (anonymous namespace)::TensorListMetadata<1>, at::native::(anonymous \
             namespace)::BinaryOpScalarFunctor<float, 1, 1, 0>, std::multiplies<float>, \
             float>(...)";
    let why = model_op_in(&one_op("aten::_foreach_mul_", a, k), 0).unwrap_err().to_string();
    assert!(why.contains("without their tensors' shapes"), "{why}");
}

/// An optimizer step after a backward pass of two parameters, [1000, 100] and [100]:
/// ⌈100,000 / 65,536⌉ + ⌈100 / 65,536⌉ = 3 blocks. With a kernel of 3 blocks the lists
/// are recovered (100,100 elements); with 4 they are not the op's, and it says why.
#[test]
fn optimizer_lists_are_recovered_only_when_the_blocks_agree() {
    fn step(blocks: u32) -> TraceModel {
        let grad = |ts: i64, s: &[i64]| CpuOp {
            name: "torch::autograd::AccumulateGrad".into(),
            ts_ns: ts,
            args: OpArgs {
                input_dims: vec![t(s)],
                input_types: vec!["float".to_string()],
                ..OpArgs::default()
            }
            .into(),
            ..CpuOp::default()
        };
        let k = "void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::\
                 (anonymous namespace)::TensorListMetadata<1>, at::native::(anonymous \
                 namespace)::BinaryOpScalarFunctor<float, 1, 1, 0>, std::multiplies<float>, \
                 float>(...)";
        let mut m = one_op(
            "aten::_foreach_mul_",
            OpArgs {
                input_dims: vec![t(&[]), t(&[])],
                input_types: vec!["TensorList".to_string(), "Scalar".to_string()],
                input_strides: Vec::new(),
                concrete_inputs: vec![String::new(), "0.9".to_string()],
            },
            k,
        );
        m.ops[0].ts_ns = 1_000;
        m.gpu[0].launch =
            LaunchDims { grid: Some([blocks, 1, 1]), ..LaunchDims::default() }.shared();
        m.ops.push(grad(100, &[1000, 100]));
        m.ops.push(grad(200, &[100]));
        m
    }
    let m = step(3);
    let ctx = crate::trace::inference::Context::new(&m);
    let r = ctx.model(&m, 0).expect("a recovered optimizer op").unwrap();
    assert_eq!(r.flops, 100_100.0);
    assert_eq!(r.bytes, 100_100.0 * 4.0 * 2.0);
    let m = step(4);
    let ctx = crate::trace::inference::Context::new(&m);
    let why = ctx.model(&m, 0).expect("a recovered optimizer op").unwrap_err().to_string();
    assert!(why.contains("would launch 3 blocks") && why.contains("launched 4"), "{why}");
}

/// The Inductor kernels of the TraceLens MI300X `torch.compile` trace, with their own
/// recorded arguments.
#[test]
fn triton_kernels_by_kind() {
    let a = args(
        vec![t(&[8, 4096, 2048]), t(&[2048]), t(&[8, 4096, 2048]), t(&[]), t(&[])],
        &[BF, BF, BF, "Scalar", "Scalar"],
        &["", "", "", "32768", "2048"],
    );
    let m = model_op("triton_red_fused_add_mean_mul_pow_rsqrt_0", &a).unwrap();
    // xnumel·r0_numel reduced elements; three buffers once each.
    assert_eq!(m.flops, 32768.0 * 2048.0);
    assert_eq!(m.bytes, (2.0 * 67_108_864.0 + 2048.0) * 2.0);
    assert_eq!(m.params.get("kind"), Some(&ParamValue::Str("reduction".to_string())));
    assert_eq!(categorize_op("triton_red_fused_add_mean_mul_pow_rsqrt_0", None), Category::Reduce);
    assert_eq!(categorize_op("triton_poi_fused_add_3", None), Category::Elementwise);
    // A GEMM template: A [64, 128] · B [128, 32] → [64, 32].
    let a = args(vec![t(&[64, 128]), t(&[128, 32]), t(&[64, 32])], &[BF, BF, BF], &[]);
    let m = model_op("triton_tem_fused_mm_0", &a).unwrap();
    assert_eq!(m.flops, 2.0 * 64.0 * 32.0 * 128.0);
    assert_eq!(m.work.unit, ExecUnit::Matrix);
    assert_eq!(categorize_op("triton_tem_fused_mm_0", None), Category::Gemm);
}

/// 60 µs of a modelled GEMM, 30 µs of an op without a model, 10 µs launched outside any
/// op and 100 µs of NCCL (left out): 60 of 100 µs covered.
#[test]
fn coverage_by_hand() {
    let mm = args(vec![t(&[64, 64]), t(&[64, 64])], &[BF, BF], &[]);
    let k = |name: &str, dur: i64, op: Option<u32>| GpuEvent {
        kind: GpuKind::Kernel,
        name: name.into(),
        dur_ns: dur * 1000,
        op,
        launcher: Some("cudaLaunchKernel".into()),
        ..GpuEvent::default()
    };
    let model = TraceModel {
        ops: vec![
            CpuOp { name: "aten::mm".into(), args: mm.into(), ..CpuOp::default() },
            CpuOp { name: "aten::unique".into(), ..CpuOp::default() },
        ],
        gpu: vec![
            k("gemm", 60, Some(0)),
            k("unique_kernel", 30, Some(1)),
            k("stray", 10, None),
            k("ncclDevKernel_AllReduce_Sum_bf16_RING_LL", 100, None),
        ],
        ..TraceModel::default()
    };
    let c = model_coverage(&model, &crate::trace::inference::Context::new(&model));
    assert_eq!(c.kernel_time_us, 100.0);
    assert_eq!(c.modelled_us, 60.0);
    assert_eq!(c.percent, Some(60.0));
    assert_eq!(c.shapes_recorded, Some(true));
    assert_eq!(c.uncovered.len(), 2);
    assert_eq!(c.uncovered[0].op, "aten::unique");
    assert_eq!(c.uncovered[0].percent, 30.0);
    assert!(c.uncovered[0].reason.contains("no work model"));
    assert_eq!(c.uncovered[1].op, "(no op)");
    assert!(c.uncovered[1].reason.contains("cudaLaunchKernel"));
}
