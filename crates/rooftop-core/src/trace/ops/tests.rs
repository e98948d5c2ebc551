//! Tests of the op models: hand arithmetic and TraceLens rows.

use super::*;

fn t(d: &[i64]) -> Dims {
    Dims::Tensor(d.to_vec())
}

fn args(dims: Vec<Dims>, types: &[&str], strides: Vec<Dims>, concrete: &[&str]) -> OpArgs {
    OpArgs {
        input_dims: dims,
        input_types: types.iter().map(|s| (*s).to_string()).collect(),
        input_strides: strides,
        concrete_inputs: concrete.iter().map(|s| (*s).to_string()).collect(),
    }
}

const BF: &str = "c10::BFloat16";

/// Hand arithmetic for `aten::addmm` [768], [788,768], [768,768] (TraceLens GEMM.csv,
/// H100 ViT row 1: 0.930167808 GFLOPS, 3.43505859375 MB).
#[test]
fn addmm_matches_hand_arithmetic() {
    let a = args(
        vec![t(&[768]), t(&[788, 768]), t(&[768, 768]), t(&[]), t(&[])],
        &[BF, BF, BF, "Scalar", "Scalar"],
        vec![t(&[1]), t(&[768, 1]), t(&[1, 768]), t(&[]), t(&[])],
        &["", "", "", "1", "1"],
    );
    let m = model_op("aten::addmm", &a).unwrap();
    // 2*788*768*768 + 788*768
    assert_eq!(m.flops, 930_167_808.0);
    // (788*768 + 768*768 + 768 + 788*768)*2 = 3_601_920 = 3.43505859375 MiB
    assert_eq!(m.bytes, 3_601_920.0);
    assert_eq!(m.params.get("M"), Some(&ParamValue::Int(788)));
    assert_eq!(m.params.get("stride_A").unwrap().tracelens_repr(), "(768, 1)");
    assert_eq!(
        m.params.get("dtypes").unwrap().tracelens_repr(),
        "('c10::BFloat16', 'c10::BFloat16')"
    );
    assert_eq!(m.table, Table::Gemm);
    assert_eq!(m.work.class, OpClass::Gemm);
}

/// `aten::_scaled_dot_product_flash_attention` 4×12×197×64: 4*12*2*197*197*(64+64)
/// = 476_884_992 FLOPs; 4 tensors of 605_184 bf16 elements = 4_841_472 B.
#[test]
fn sdpa_matches_hand_arithmetic() {
    let q = t(&[4, 12, 197, 64]);
    let a = args(
        vec![q.clone(), q.clone(), q, t(&[]), t(&[]), t(&[]), t(&[])],
        &[BF, BF, BF, "Scalar", "Scalar", "Scalar", "Scalar"],
        vec![],
        &["", "", "", "0.", "False", "False", "0.125"],
    );
    let m = model_op("aten::_scaled_dot_product_flash_attention", &a).unwrap();
    assert_eq!(m.flops, 476_884_992.0);
    assert_eq!(m.bytes, 4_841_472.0);
    assert_eq!(m.params.get("dropout").unwrap().tracelens_repr(), "0.0");
    assert_eq!(m.params.get("causal"), Some(&ParamValue::Bool(false)));
}

/// Causal attention counts the exact pairs N*(N+1)/2, not N²/2.
#[test]
fn causal_sdpa_counts_exact_pairs() {
    let q = t(&[1, 1, 4, 8]);
    let a =
        args(vec![q.clone(), q.clone(), q], &[BF, BF, BF], vec![], &["", "", "", "0.0", "True"]);
    let m = model_op("aten::_scaled_dot_product_flash_attention", &a).unwrap();
    // pairs = 4*5/2 = 10; 2*1*1*10*(8+8)
    assert_eq!(m.flops, 320.0);
}

/// ViT patch embedding: x (4,3,224,224), w (768,3,16,16), bias (768), stride 16:
/// out (4,768,14,14) = 602_112; 2*602_112*768 = 924_844_032 FLOPs + 602_112 bias adds.
#[test]
fn conv_counts_bias_when_present() {
    let a = args(
        vec![
            t(&[4, 3, 224, 224]),
            t(&[768, 3, 16, 16]),
            t(&[768]),
            t(&[]),
            t(&[]),
            t(&[]),
            t(&[]),
            t(&[]),
            t(&[]),
        ],
        &[BF, BF, BF, "ScalarList", "ScalarList", "ScalarList", "Scalar", "ScalarList", "Scalar"],
        vec![],
        &["", "", "", "[16, 16]", "[0, 0]", "[1, 1]", "False", "[0, 0]", "1"],
    );
    let m = model_op("aten::convolution", &a).unwrap();
    assert_eq!(m.flops, 924_844_032.0 + 602_112.0);
    // (602_112 + 589_824 + 768 + 602_112)*2
    assert_eq!(m.bytes, 3_589_632.0);
    assert_eq!(m.params.get("stride").unwrap().tracelens_repr(), "(16, 16)");
    assert_eq!(m.params.get("convNd"), Some(&ParamValue::Str("conv2d".into())));
}

/// LayerNorm (4,197,768) affine with bias: 3*768 + 3*605184 + 3*768 + 2*605184 =
/// 3_030_528 FLOPs; 605184*2*2 + 6*768*2 = 2_429_952 B (TraceLens 2.3173828125 MB).
#[test]
fn layer_norm_matches_tracelens_formula() {
    let a = args(
        vec![t(&[4, 197, 768]), t(&[]), t(&[768]), t(&[768]), t(&[]), t(&[])],
        &[BF, "ScalarList", BF, BF, "Scalar", "Scalar"],
        vec![],
        &["", "[768]", "", "", "1e-12", "True"],
    );
    let m = model_op("aten::layer_norm", &a).unwrap();
    assert_eq!(m.flops, 3_030_528.0);
    assert_eq!(m.bytes, 2_429_952.0);
    assert_eq!(m.params.get("num_channels"), Some(&ParamValue::Int(768)));
}

/// add_ (4,768,14,14) + (1,768,1,1): 602112 FLOPs; (602112 + 768 + 602112)*2 B.
#[test]
fn broadcast_add() {
    let a = args(
        vec![t(&[4, 768, 14, 14]), t(&[1, 768, 1, 1]), t(&[])],
        &[BF, BF, "Scalar"],
        vec![],
        &["", "", "1"],
    );
    let m = model_op("aten::add_", &a).unwrap();
    assert_eq!(m.flops, 602_112.0);
    assert_eq!(m.bytes, 2_409_984.0);
    assert_eq!(
        m.params.get("dtypes").unwrap().tracelens_repr(),
        "('c10::BFloat16', 'c10::BFloat16', None)"
    );
    // A Python scalar operand counts as one 4-byte element (TraceLens).
    let s = args(
        vec![t(&[10]), t(&[]), t(&[])],
        &["float", "Scalar", "Scalar"],
        vec![],
        &["", "2", "1"],
    );
    let m = model_op("aten::mul", &s).unwrap();
    assert_eq!(m.bytes, 10.0 * 4.0 + 4.0 + 10.0 * 4.0);
}

#[test]
fn reduce_reads_dim() {
    let a = args(
        vec![t(&[8, 16]), t(&[]), t(&[])],
        &["float", "ScalarList", "Scalar"],
        vec![],
        &["", "[-1]", "False"],
    );
    let m = model_op("aten::sum", &a).unwrap();
    assert_eq!(m.flops, 128.0);
    assert_eq!(m.bytes, 128.0 * 4.0 + 8.0 * 4.0);
}

/// Conv backward of the ViT patch embedding with all three gradients:
/// 2 × 924_844_032 + 602_112 FLOPs; dX: dY + W → X, dW: dY + X → W, db: dY → 768.
#[test]
#[allow(clippy::many_single_char_names)]
fn conv_backward_by_hand() {
    let a = args(
        vec![t(&[4, 768, 14, 14]), t(&[4, 3, 224, 224]), t(&[768, 3, 16, 16]), t(&[])],
        &[BF, BF, BF, "ScalarList"],
        vec![],
        &[
            "",
            "",
            "",
            "[768]",
            "[16, 16]",
            "[0, 0]",
            "[1, 1]",
            "False",
            "[0, 0]",
            "1",
            "[True, True, True]",
        ],
    );
    let m = model_op("aten::convolution_backward", &a).unwrap();
    assert_eq!(m.table, Table::ConvBwd);
    assert_eq!(m.flops, 2.0 * 924_844_032.0 + 602_112.0);
    let (x, w, o) = (602_112.0, 589_824.0, 602_112.0);
    assert_eq!(m.work.bytes_read, 2.0 * ((o + w) + (o + x) + o));
    assert_eq!(m.work.bytes_written, 2.0 * (x + w + 768.0));
    // Only the weight gradient.
    let mut b = a.clone();
    b.concrete_inputs[10] = "[False, True, False]".to_string();
    assert_eq!(model_op("aten::convolution_backward", &b).unwrap().flops, 924_844_032.0);
}

/// Flash attention backward, 1×8×141×64 non-causal: the core model's five matmuls,
/// 2*B*H*N*N*(3*d + 2*d) = 2*8*141*141*320.
#[test]
fn sdpa_backward_uses_core_model() {
    let q = t(&[1, 8, 141, 64]);
    let a = args(
        vec![q.clone(), q.clone(), q.clone(), q.clone(), q, t(&[1, 8, 141])],
        &[BF; 6],
        vec![],
        &["", "", "", "", "", "", "", "", "141", "141", "0.0", "False"],
    );
    let m = model_op("aten::_scaled_dot_product_flash_attention_backward", &a).unwrap();
    assert_eq!(m.table, Table::SdpaBwd);
    assert_eq!(m.flops, 2.0 * 8.0 * 141.0 * 141.0 * 320.0);
    assert_eq!(m.params.get("N_Q"), Some(&ParamValue::Int(141)));
}

/// Layer norm backward, (4,197,768), all gradients: 4E + 5E FLOPs; bytes
/// dY + X + invstd + weight read, dX + dW + db written.
#[test]
fn layer_norm_backward_by_hand() {
    let x = t(&[4, 197, 768]);
    let a = args(
        vec![x.clone(), x, t(&[]), t(&[4, 197, 1]), t(&[4, 197, 1]), t(&[768]), t(&[768]), t(&[])],
        &[BF, BF, "ScalarList", "float", "float", BF, BF, "ScalarList"],
        vec![],
        &["", "", "[768]", "", "", "", "", "[True, True, True]"],
    );
    let m = model_op("aten::native_layer_norm_backward", &a).unwrap();
    let e = 605_184.0;
    assert_eq!(m.flops, 9.0 * e);
    assert_eq!(m.work.bytes_read, (2.0 * e + 768.0 + 768.0) * 2.0);
    assert_eq!(m.work.bytes_written, (e + 2.0 * 768.0) * 2.0);
}

proptest::proptest! {
    /// Any recorded arguments give a model or an error, never a panic; a model's
    /// FLOPs and bytes are finite and non-negative.
    #[test]
    fn models_never_panic(
        name in proptest::sample::select(MODELLED.to_vec()),
        dims in proptest::collection::vec(
            proptest::collection::vec(proptest::prop_oneof![-3i64..5000, proptest::num::i64::ANY], 0..6),
            0..12,
        ),
        types in proptest::collection::vec(
            proptest::sample::select(vec![BF, "float", "Scalar", "", "long int", "weird"]),
            0..12,
        ),
        concrete in proptest::collection::vec(
            proptest::sample::select(vec!["", "1", "0", "-1", "True", "False", "[1, 1]", "[0]", "[2, 2, 2]", "[True, False, True]", "[-1]", "0.5", "[", "x"]),
            0..16,
        ),
    ) {
        let a = OpArgs {
            input_dims: dims.into_iter().map(Dims::Tensor).collect(),
            input_types: types.iter().map(|s| (*s).to_string()).collect(),
            input_strides: vec![],
            concrete_inputs: concrete.iter().map(|s| (*s).to_string()).collect(),
        };
        if let Ok(m) = model_op(name, &a) {
            proptest::prop_assert!(m.flops.is_finite() && m.flops >= 0.0);
            proptest::prop_assert!(m.bytes.is_finite() && m.bytes >= 0.0);
        }
    }
}

const MODELLED: [&str; 22] = [
    "aten::mm",
    "aten::addmm",
    "aten::bmm",
    "aten::baddbmm",
    "aten::_scaled_mm",
    "aten::_scaled_dot_product_flash_attention",
    "aten::_scaled_dot_product_efficient_attention",
    "aten::_scaled_dot_product_flash_attention_backward",
    "flash_attn::_flash_attn_forward",
    "aten::convolution",
    "aten::convolution_backward",
    "aten::layer_norm",
    "aten::batch_norm",
    "aten::group_norm",
    "aten::native_group_norm",
    "aten::_fused_rms_norm",
    "aten::native_layer_norm_backward",
    "aten::native_batch_norm_backward",
    "aten::add",
    "aten::gelu",
    "aten::sum",
    "aten::amax",
];

/// Odd arguments are errors, never panics.
#[test]
fn odd_args_do_not_panic() {
    let names = [
        "aten::mm",
        "aten::addmm",
        "aten::bmm",
        "aten::baddbmm",
        "aten::_scaled_mm",
        "aten::_scaled_dot_product_flash_attention",
        "flash_attn::_flash_attn_forward",
        "aten::convolution",
        "aten::layer_norm",
        "aten::batch_norm",
        "aten::native_group_norm",
        "aten::_fused_rms_norm",
        "aten::add",
        "aten::copy_",
        "aten::convolution_backward",
        "aten::_scaled_dot_product_efficient_attention_backward",
        "aten::native_layer_norm_backward",
        "aten::native_batch_norm_backward",
        "aten::cudnn_batch_norm_backward",
        "aten::sum",
    ];
    let cases = vec![
        OpArgs::default(),
        args(vec![t(&[])], &["Scalar"], vec![], &["1"]),
        args(
            vec![Dims::List(vec![vec![2, 3]]), t(&[3])],
            &["TensorList", "float"],
            vec![],
            &["", ""],
        ),
        args(
            vec![t(&[-1, 3]), t(&[3, -2]), t(&[0, 0, 0])],
            &["float", "weird", "float"],
            vec![],
            &["[", "x", "True"],
        ),
        args(
            vec![t(&[i64::MAX, i64::MAX, i64::MAX, i64::MAX]); 4],
            &[BF; 4],
            vec![],
            &["", "", "", "[1, 1]", "[0]", "[1]", "False", "[0]", "0"],
        ),
    ];
    for n in names {
        for c in &cases {
            let _ = model_op(n, c);
        }
    }
    assert!(matches!(model_op("aten::view", &OpArgs::default()), Err(OpModelError::Unmodelled(_))));
}

#[test]
fn categories() {
    assert_eq!(categorize_op("aten::addmm", None), Category::Gemm);
    assert_eq!(categorize_op("aten::_flash_attention_forward", None), Category::Sdpa);
    assert_eq!(categorize_op("aten::cudnn_convolution", None), Category::Conv);
    assert_eq!(
        categorize_op(
            "aten::gelu",
            Some("void at::native::vectorized_elementwise_kernel<4, Gelu>")
        ),
        Category::Elementwise
    );
    assert_eq!(
        categorize_op("aten::_local_scalar_dense", Some("Memcpy DtoH (Device -> Pageable)")),
        Category::Memcpy
    );
    assert_eq!(
        categorize_kernel("ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevComm*)"),
        Some(Category::Comm)
    );
    assert_eq!(
        tracelens_category(
            "aten::_flash_attention_forward",
            Some("void pytorch_flash::flash_fwd_kernel")
        ),
        "other"
    );
    assert_eq!(tracelens_category("aten::native_layer_norm", None), "NORM_fwd");
    assert_eq!(
        tracelens_category("aten::all", Some("void at::native::reduce_kernel<512, 1>")),
        "reduce"
    );
    assert_eq!(
        tracelens_category(
            "aten::cat",
            Some("void at::native::(anonymous namespace)::CatArrayBatchedCopy")
        ),
        "other"
    );
    assert_eq!(tracelens_category("aten::cudnn_convolution", None), "CONV_fwd");
    assert_eq!(Category::Normalization.as_str(), "Normalization");
    assert_eq!(
        categorize_op("aten::copy_", Some("Memcpy HtoD (Pageable -> Device)")),
        Category::Memcpy
    );
    assert_eq!(categorize_op("aten::cudnn_convolution", Some("Memset (Device)")), Category::Conv);
    assert_eq!(tracelens_category("aten::native_layer_norm_backward", None), "NORM_bwd");
    assert_eq!(categorize_kernel("void at::native::normal_kernel<float>"), None);
    assert_eq!(categorize_kernel("void convert_fp8_kernel<float>"), None);
    assert_eq!(
        categorize_kernel("void cutlass__5x_cudnn::Kernel<cutlass_tensorop_bf16_s16816fprop_optimized_bf16_256x64_32x4_nhwc_align8>"),
        Some(Category::Conv)
    );
}

/// The memo by address answers as the memo by text, for each shared copy; a copy freed
/// and a new name of the same length made after it (the allocator's first choice for
/// its address) gets its own answer.
#[test]
fn kernel_categories_by_shared_name_agree_with_the_text() {
    use std::sync::Arc;
    let names = [
        "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevComm*)",
        "void at::native::vectorized_elementwise_kernel<4, float>",
        "Memcpy DtoH (Device -> Pageable)",
        "flash_fwd_kernel",
        "loop_add_fusion",
    ];
    for n in names {
        let a: Arc<str> = Arc::from(n);
        let b: Arc<str> = Arc::from(n);
        assert_eq!(categorize_kernel_shared(&a), categorize_kernel(n), "{n}");
        assert_eq!(categorize_kernel_shared(&b), categorize_kernel(n), "{n}");
        assert_eq!(is_comm_kernel_shared(&a), is_comm_kernel(n), "{n}");
    }
    for _ in 0..100 {
        let comm: Arc<str> = Arc::from("ncclKernel_x");
        assert_eq!(categorize_kernel_shared(&comm), Some(Category::Comm));
        drop(comm);
        let copy: Arc<str> = Arc::from("Memcpy HtoD ");
        assert_eq!(categorize_kernel_shared(&copy), Some(Category::Memcpy));
    }
}
