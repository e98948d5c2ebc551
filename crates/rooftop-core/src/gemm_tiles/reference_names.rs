//! Test vectors: the 37 worked kernel names of docs/reference/kernel-names.md, whose table
//! gives each name's family grammar and, where it has one, the public trace or document it
//! was taken from (abridged ones both as written and as a realistic full name), every kernel name in the TraceLens H100 / MI300X
//! goldens (`fixtures/kineto/tracelens_*/*_perf_report_csvs/`), and the GEMM names of the other
//! kineto fixtures (HTA A100 / MI250, TraceLens MI300X Inductor trace).

use super::{parse_kernel_name, GemmKernelInfo, KernelFamily, Transpose};

use KernelFamily::{
    ComposableKernel, CublasLegacy, CublasXmma, Cutlass2, Cutlass3, MiopenIgemm, Nvjet, Tensile,
    TensilePostGsu, Triton,
};

/// One expectation: family, tile (M, N), K tile, stages, layout letters.
struct Want {
    family: KernelFamily,
    tile: Option<(u32, u32)>,
    k: Option<u32>,
    stages: Option<u32>,
    layout: Option<&'static str>,
}

const fn w(
    family: KernelFamily,
    tile: Option<(u32, u32)>,
    k: Option<u32>,
    stages: Option<u32>,
    layout: Option<&'static str>,
) -> Want {
    Want { family, tile, k, stages, layout }
}

fn layout_str(i: &GemmKernelInfo) -> Option<String> {
    i.layout.map(|(a, b)| {
        let c = |t: Transpose| if t == Transpose::T { 'T' } else { 'N' };
        format!("{}{}", c(a), c(b))
    })
}

fn check(no: &str, name: &str, want: &Want) {
    let i = parse_kernel_name(name).unwrap_or_else(|| panic!("#{no} did not parse: {name}"));
    assert_eq!(i.family, want.family, "#{no} family: {name}");
    assert_eq!(i.mt_m.zip(i.mt_n), want.tile, "#{no} tile: {name}");
    assert_eq!(i.mt_k, want.k, "#{no} K tile: {name}");
    assert_eq!(i.stages, want.stages, "#{no} stages: {name}");
    assert_eq!(layout_str(&i).as_deref(), want.layout, "#{no} layout: {name}");
}

const T1_FULL: &str = "Cijk_Alik_Bljk_HHS_BH_MT256x144x32_MI32x32x8x1_SN_1LDSB0_APM1_ABV0_ACED0_AF0EM1_AF1EM1_AMAS3_ASE_ASGT_ASLT_ASAE01_ASCE01_ASEM1_AAC0_BL1_BS1_DTL0_DTVA0_DTVB0_EPS1_FL0_GRPM1_GRVW8_GSU1_GSUASB_GLS0_ISA942_IU1_K1_KLA_LBSPP128_LPA0_LPB8_LDL1_LRVW16_LWPMn1_LDW0_FMA_MIAV1_MDA2_MO40_NTA0_NTB0_NTC0_NTD0_NEPBS0_NLCA1_NLCB1_ONLL1_OPLV0_PK0_PAP0_PGR2_PLR1_SIA3_SS1_SU32_SUM0_SUS256_SCIUI1_SPO0_SRVW0_SSO0_SVW4_SNLL0_TT4_64_TLDS1_USFGROn1_VAW2_VSn1_VW4_WSGRA1_WSGRB1_WS64_WG32_8_1_WGM8";
const T2_FULL: &str = "Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT16x32x512_MI16x16x1_SN_LDSB1_AFC1_AFEM1_AFEM1_ASEM1_CLR1_CADS0_DTVA0_DTVB0_EPS0_FDSI0_GRPM1_GRVWA8_GRVWB8_GSUAMBSK_GLS0_ISA942_IU1_K1_LBSPPA512_LBSPPB512_LBSPPM0_LPA16_LPB16_LPM0_LRVW8_LWPMn1_MIAV0_MIWT1_2_MO40_NTn1_NTA4_NTB0_NTC0_NTD0_NTM0_NEPBS0_NLCA1_NLCB1_ONLL1_PGR2_PLR1_PKA1_SIA3_SS1_SPO0_SRVW0_SSO0_SVW1_SK0_SKXCCM0_TLDS1_ULSGRO0_USL1_UIOFGRO0_USFGROn1_VSn1_VWA1_VWB1_WSGRA0_WSGRB0_WS64_WG16_4_4";
const T3_FULL: &str = "Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT256x32x64_MI16x16x1_SN_LDSB1_AFC1_AFEM1_AFEM1_ASEM1_CLR1_CADS0_DTVA0_DTVB0_EPS0_FDSI0_GRPM1_GRVWA8_GRVWB8_GSUAMB_GLS0_ISA942_IU1_K1_LBSPPA512_LBSPPB256_LBSPPM0_LPA16_LPB16_LPM0_LRVW8_LWPMn1_MIAV0_MIWT4_1_MO40_NTn1_NTA0_NTB0_NTC0_NTD0_NTM0_NEPBS16_NLCA1_NLCB1_ONLL1_PGR2_PLR1_PKA1_SIA3_SS1_SPO0_SRVW0_SSO0_SVW4_SK0_SKXCCM0_TLDS1_ULSGRO0_USL1_UIOFGRO0_USFGROn1_VSn1_VWA4_VWB1_WSGRA0_WSGRB0_WS64_WG64_4_1";
const T4_FULL: &str = "Cijk_Ailk_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT64x128x64_MI16x16x1_SN_LDSB1_AFC1_AFEM1_AFEM1_ASEM1_CLR1_CADS0_DTVA0_DTVB0_EPS0_FDSI0_GRPM1_GRVWA8_GRVWB8_GSUAMB_GLS0_ISA942_IU1_K1_LBSPPA256_LBSPPB512_LBSPPM0_LPA16_LPB16_LPM0_LRVW8_LWPMn1_MIAV0_MIWT2_4_MO40_NTn1_NTA0_NTB0_NTC0_NTD0_NTM0_NEPBS16_NLCA1_NLCB1_ONLL1_PGR2_PLR1_PKA1_SIA3_SS1_SPO0_SRVW0_SSO0_SVW2_SK0_SKXCCM0_TLDS1_ULSGRO0_USL1_UIOFGRO0_USFGROn1_VSn1_VWA2_VWB1_WSGRA0_WSGRB0_WS64_WG32_8_1";
const T5_FULL: &str = "Cijk_Alik_Bjlk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT32x64x64_MI16x16x1_SN_LDSB1_AFC1_AFEM1_AFEM1_ASEM1_CLR1_CADS0_DTVA0_DTVB0_EPS0_FDSI0_GRPM1_GRVWA8_GRVWB8_GSUAMB_GLS0_ISA942_IU1_K1_LBSPPA256_LBSPPB256_LBSPPM0_LPA16_LPB16_LPM0_LRVW8_LWPMn1_MIAV0_MIWT2_1_MO40_NTn1_NTA0_NTB0_NTC0_NTD0_NTM0_NEPBS16_NLCA1_NLCB1_ONLL1_PGR2_PLR1_PKA1_SIA3_SS1_SPO0_SRVW0_SSO0_SVW2_SK0_SKXCCM0_TLDS1_ULSGRO0_USL1_UIOFGRO0_USFGROn1_VSn1_VWA2_VWB2_WSGRA0_WSGRB0_WS64_WG16_16_1";
const T6_FULL: &str = "Cijk_Ailk_Bjlk_BBS_BH_Bias_HAS_SAV_UserArgs_MT128x64x32_MI32x32x1_SN_LDSB0_AFC1_AFEM1_AFEM1_ASEM1_CLR1_CADS0_EPS0_GRVWA4_GRVWB4_GSUAMB_ISA90a_IU1_K1_LBSPPA128_LBSPPB128_LBSPPM0_LPA8_LPB8_LPM0_LRVW4_LWPMn1_MIAV0_MIWT2_1_MO40_NTn1_NTA0_NTB0_NTC0_NTD0_NTM0_NEPBS2_NLCA1_NLCB1_ONLL1_PGR2_PLR1_PKA1_SIA3_SS1_SPO1_SRVW0_SSO0_SVW4_TLDS1_USFGROn1_VSn1_VWA4_VWB4_WSGRA1_WSGRB1_WS64_WG64_4_1";
/// #34 as printed in a MI300X vLLM FP8 trace (TraceLens `test_kernel_name_parser_real.py`).
const CK34_FULL: &str = "void ck::kernel_gemm_xdl_cshuffle_v3<ck::GridwiseGemmMultiD_ABScale_xdl_cshuffle_v3<ck::tensor_layout::gemm::RowMajor, ck::tensor_layout::gemm::ColumnMajor, ck::Tuple<>, ck::tensor_layout::gemm::RowMajor, ck::f8_fnuz_t, ck::f8_fnuz_t, float, float, ck::Tuple<>, unsigned short, ck::tensor_operation::element_wise::PassThrough, ck::tensor_operation::element_wise::PassThrough, ck::tensor_operation::element_wise::PassThrough, (ck::tensor_operation::device::GemmSpecialization)2, 256, 1, 128, 128, 16, 128, 256, 16, 16, 16, 16, 1, 2, ck::Sequence<16, 16, 1>, ck::Sequence<1, 0, 2>, ck::Sequence<1, 0, 2>, 2, 16, 16, false, 0, ck::Sequence<16, 16, 1>, ck::Sequence<1, 0, 2>, ck::Sequence<1, 0, 2>, 2, 16, 16, false, 0, 1, 2, ck::Sequence<1, 16, 1, 16>, ck::Sequence<8>, (ck::BlockGemmPipelineScheduler)0, (ck::BlockGemmPipelineVersion)0, ck::f8_fnuz_t, ck::f8_fnuz_t, ck::f8_fnuz_t, ck::f8_fnuz_t>, true, (ck::InMemoryDataOperationEnum)0, 2, (ck::TailNumber)10>(ck::GridwiseGemmMultiD_ABScale_xdl_cshuffle_v3<ck::tensor_layout::gemm::RowMajor, ck::tensor_layout::gemm::ColumnMajor, ck::Tuple<>, ck::tensor_layout::gemm::RowMajor, ck::f8_fnuz_t, ck::f8_fnuz_t, float, float, ck::Tuple<>, unsigned short, ck::tensor_operation::element_wise::PassThrough, ck::tensor_operation::element_wise::PassThrough, ck::tensor_operation::element_wise::PassThrough, (ck::tensor_operation::device::GemmSpecialization)2, 256, 1, 128, 128, 16, 128, 256, 16, 16, 16, 16, 1, 2, ck::Sequence<16, 16, 1>, ck::Sequence<1, 0, 2>, ck::Sequence<1, 0, 2>, 2, 16, 16, false, 0, ck::Sequence<16, 16, 1>, ck::Sequence<1, 0, 2>, ck::Sequence<1, 0, 2>, 2, 16, 16, false, 0, 1, 2, ck::Sequence<1, 16, 1, 16>, ck::Sequence<8>, (ck::BlockGemmPipelineScheduler)0, (ck::BlockGemmPipelineVersion)0, ck::f8_fnuz_t, ck::f8_fnuz_t, ck::f8_fnuz_t, ck::f8_fnuz_t>::Argument)";
const IGEMM37_FULL: &str = "igemm_fwd_gtcx2_nhwc_bf16_bx0_ex1_bt128x128x32_wt32x32x8_ws1x1_wr2x2_ta1x8x2x1_1x4x1x64_tb1x8x2x1_1x4x1x64";

/// The worked names of docs/reference/kernel-names.md, in table order (#1 ... #37). Abridged
/// names are given as written (with `...`) and, on the following line, as a full name.
#[test]
fn worked_names_table() {
    let n = None;
    let cases: &[(&str, &str, Want)] = &[
        ("1", "Cijk_Alik_Bljk_HHS_BH_MT256x144x32_MI32x32x8x1_SN_..._WG32_8_1_WGM8", w(Tensile, Some((256, 144)), Some(32), n, Some("TN"))),
        ("1 full", T1_FULL, w(Tensile, Some((256, 144)), Some(32), n, Some("TN"))),
        ("2", "Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT16x32x512_MI16x16x1_SN_LDSB1_..._GSUAMBSK_..._ISA942_..._SK0_..._WS64_WG16_4_4", w(Tensile, Some((16, 32)), Some(512), n, Some("TN"))),
        ("2 full", T2_FULL, w(Tensile, Some((16, 32)), Some(512), n, Some("TN"))),
        ("3", "Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT256x32x64_MI16x16x1_..._WG64_4_1", w(Tensile, Some((256, 32)), Some(64), n, Some("TN"))),
        ("3 full", T3_FULL, w(Tensile, Some((256, 32)), Some(64), n, Some("TN"))),
        ("4", "Cijk_Ailk_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT64x128x64_MI16x16x1_..._WG32_8_1", w(Tensile, Some((64, 128)), Some(64), n, Some("NN"))),
        ("4 full", T4_FULL, w(Tensile, Some((64, 128)), Some(64), n, Some("NN"))),
        ("5", "Cijk_Alik_Bjlk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT32x64x64_MI16x16x1_..._WG16_16_1", w(Tensile, Some((32, 64)), Some(64), n, Some("TT"))),
        ("5 full", T5_FULL, w(Tensile, Some((32, 64)), Some(64), n, Some("TT"))),
        ("6", "Cijk_Ailk_Bjlk_BBS_BH_Bias_HAS_SAV_UserArgs_MT128x64x32_MI32x32x1_..._ISA90a_..._WG64_4_1", w(Tensile, Some((128, 64)), Some(32), n, Some("NT"))),
        ("6 full", T6_FULL, w(Tensile, Some((128, 64)), Some(32), n, Some("NT"))),
        ("7", "Cijk_SS_BiasS_HAS_ScaleAlphaVec_PostGSU16_VW4", w(TensilePostGsu, None, n, n, None)),
        ("8", "ampere_sgemm_128x64_tn", w(CublasLegacy, Some((128, 64)), n, n, Some("TN"))),
        ("9", "ampere_sgemm_32x128_tn", w(CublasLegacy, Some((32, 128)), n, n, Some("TN"))),
        ("10", "volta_h884gemm_256x128_ldg8_nn", w(CublasLegacy, Some((256, 128)), n, n, Some("NN"))),
        ("11", "turing_fp16_s1688gemm_fp16_256x128_ldg8_f2f_stages_32x1_nn", w(CublasLegacy, Some((256, 128)), Some(32), Some(1), Some("NN"))),
        ("12", "ampere_fp16_s16816gemm_fp16_128x64_ldg8_f2f_stages_32x6_nn", w(CublasLegacy, Some((128, 64)), Some(32), Some(6), Some("NN"))),
        ("13", "ampere_fp16_s16816gemm_fp16_64x64_sliced1x2_ldg8_relu_f2f_stages_64x5_tn", w(CublasLegacy, Some((64, 64)), Some(64), Some(5), Some("TN"))),
        ("14", "sm80_xmma_gemm_f16f16_f16f32_f32_nn_n_tilesize160x128x32_stage4_warpsize2x2x1_tensor16x8x16_kernel", w(CublasXmma, Some((160, 128)), Some(32), Some(4), Some("NN"))),
        ("15", "sm80_xmma_gemm_f16f16_f16f32_f32_tn_n_tilesize128x160x32_stage3_warpsize2x4x1_tensor16x8x16_kernel", w(CublasXmma, Some((128, 160)), Some(32), Some(3), Some("TN"))),
        ("16", "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas", w(CublasXmma, Some((128, 128)), Some(64), n, Some("TN"))),
        ("17", "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64_warpgroupsize2x1x1_execute_segment_k_off_kernel__5x_cublas", w(CublasXmma, Some((128, 256)), Some(64), n, Some("TN"))),
        ("18", "sm90_xmma_gemm_f32f32_f32_nn_n_tilesize128x128x32_warpgroupsize1x1x1_execute_segment_k_on_kernel__5x_cublas", w(CublasXmma, Some((128, 128)), Some(32), n, Some("NN"))),
        ("19", "nvjet_tst_64x64_64x16_2x1_2cta_v_bz_bias_TNT", w(Nvjet, Some((64, 64)), Some(64), Some(16), Some("TN"))),
        ("20", "nvjet_tst_144x128_64x6_2x1_v_bz_bias_TNN", w(Nvjet, Some((144, 128)), Some(64), Some(6), Some("TN"))),
        ("21", "nvjet_tst_192x8_64x8_4x1_v_bz_TNT", w(Nvjet, Some((192, 8)), Some(64), Some(8), Some("TN"))),
        ("22", "nvjet_hsh_256x128_64x4_1x2_h_bz_coopA_NNT", w(Nvjet, Some((256, 128)), Some(64), Some(4), Some("NN"))),
        ("23", "nvjet_sm100_tst_128x256_64x6_2x1_2cta_v_bz_TNT", w(Nvjet, Some((128, 256)), Some(64), Some(6), Some("TN"))),
        ("24", "nvjet_sm103_hsh_64x8_64x16_1x1_h_bz_splitK_NNT", w(Nvjet, Some((64, 8)), Some(64), Some(16), Some("NN"))),
        ("25", "cutlass_80_tensorop_s1688gemm_128x256_32x3_nn_align4", w(Cutlass2, Some((128, 256)), Some(32), Some(3), Some("NN"))),
        ("26", "void cutlass::Kernel2<cutlass_80_simt_sgemm_128x32_8x5_nn_align1>(...)", w(Cutlass2, Some((128, 32)), Some(8), Some(5), Some("NN"))),
        ("27", "cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_64x6_tn_align8", w(Cutlass2, Some((64, 64)), Some(64), Some(6), Some("TN"))),
        ("28", "cutlass_75_tensorop_bf16_s1688gemm_bf16_128x128_nn_align1", w(Cutlass2, Some((128, 128)), n, n, Some("NN"))),
        ("29", "cutlass3x_sm90_tensorop_s64x128x16gemm_bf16_bf16_f32_void_bf16_128x128x64_1x1x1_0_tnn_align8_warpspecialized_pingpong_epi_tma", w(Cutlass3, Some((128, 128)), Some(64), Some(0), Some("TN"))),
        ("30", "cutlass3x_sm90_tensorop_s64x256x16gemm_f16_f16_f32_void_f16_128x256x64_2x1x1_0_tnn_align8_warpspecialized_cooperative_epi_tma", w(Cutlass3, Some((128, 256)), Some(64), Some(0), Some("TN"))),
        ("31", "cutlass3x_sm100_tensorop_s256x256x16gemm_bf16_bf16_f32_void_f32_256x256x64_2x1x1_0_tnt_align8_2sm", w(Cutlass3, Some((256, 256)), Some(64), Some(0), Some("TN"))),
        ("32", "cutlass3x_sm100_tensorop_gemm_bf16_bf16_f32_void_bf16_256x256x64_2x2x1_0_ttn_align8_stream_k_2sm", w(Cutlass3, Some((256, 256)), Some(64), Some(0), Some("TT"))),
        ("33", "cutlass3x_sm100_tensorop_s128x64x8tf32gemm_f32_f32_f32_f32_f32_128x64x32_0_tnn_align4_2sm", w(Cutlass3, Some((128, 64)), Some(32), Some(0), Some("TN"))),
        ("34", "void ck::kernel_gemm_xdl_cshuffle_v3<ck::GridwiseGemmMultiD_ABScale_xdl_cshuffle_v3<RowMajor, ColumnMajor, ..., (GemmSpecialization)2, 256, 1, 128, 128, 16, 128, 256, 16, 16, 16, 16, 1, 2, ...>...>", w(ComposableKernel, Some((16, 128)), Some(256), n, Some("TN"))),
        ("34 full", CK34_FULL, w(ComposableKernel, Some((16, 128)), Some(256), n, Some("TN"))),
        ("35", "_gemm_a8w8_blockscale_kernel_GROUP_K_128_GROUP_N_128_BLOCK_SIZE_M_128_BLOCK_SIZE_N_128_BLOCK_SIZE_K_128_GROUP_SIZE_M_1_NUM_KSPLIT_1_SPLITK_BLOCK_SIZE_7168_EVEN_K_1_GRID_MN_17_cache_modifier_CG", w(Triton, Some((128, 128)), Some(128), n, None)),
        ("36", "triton_tem_fused__to_copy_addmm_gelu_t_view_9", w(Triton, None, n, n, None)),
        ("37", "igemm_fwd_gtcx2_nhwc_bf16_bx0_ex1_bt128x128x32_wt32x32x8_ws1x1_wr2x2_...", w(MiopenIgemm, Some((128, 128)), Some(32), n, None)),
        ("37 full", IGEMM37_FULL, w(MiopenIgemm, Some((128, 128)), Some(32), n, None)),
    ];
    for (no, name, want) in cases {
        check(no, name, want);
    }
}

/// The flags the table's last column lists.
#[test]
fn worked_names_table_flags() {
    let p = |name: &str| parse_kernel_name(name).expect("parses");
    let t2 = p(T2_FULL);
    assert!(!t2.stream_k && t2.split_k.is_none());
    assert_eq!(t2.block_threads, Some(256)); // WG16_4_4
    assert_eq!(p(T6_FULL).arch.as_deref(), Some("gfx90a"));
    assert_eq!(p("Cijk_SS_BiasS_HAS_ScaleAlphaVec_PostGSU16_VW4").split_k, Some(16));
    let n19 = p("nvjet_tst_64x64_64x16_2x1_2cta_v_bz_bias_TNT");
    assert!(n19.two_sm);
    assert_eq!(n19.cluster, Some([2, 1, 1]));
    assert_eq!(p("nvjet_hsh_256x128_64x4_1x2_h_bz_coopA_NNT").cluster, Some([1, 2, 1]));
    assert!(p("nvjet_sm103_hsh_64x8_64x16_1x1_h_bz_splitK_NNT").split_k_flag);
    let c30 = p("cutlass3x_sm90_tensorop_s64x256x16gemm_f16_f16_f32_void_f16_128x256x64_2x1x1_0_tnn_align8_warpspecialized_cooperative_epi_tma");
    assert_eq!(c30.cluster, Some([2, 1, 1]));
    assert!(c30.persistent && !c30.stream_k);
    let c31 = p("cutlass3x_sm100_tensorop_s256x256x16gemm_bf16_bf16_f32_void_f32_256x256x64_2x1x1_0_tnt_align8_2sm");
    assert_eq!(c31.per_cta_tile(), Some((128, 256)));
    let c32 = p("cutlass3x_sm100_tensorop_gemm_bf16_bf16_f32_void_bf16_256x256x64_2x2x1_0_ttn_align8_stream_k_2sm");
    assert!(c32.stream_k && c32.two_sm);
    assert_eq!(p("cutlass3x_sm100_tensorop_s128x64x8tf32gemm_f32_f32_f32_f32_f32_128x64x32_0_tnn_align4_2sm").cluster, None);
    assert_eq!(p(CK34_FULL).block_threads, Some(256));
    let t35 = p("_gemm_a8w8_blockscale_kernel_GROUP_K_128_GROUP_N_128_BLOCK_SIZE_M_128_BLOCK_SIZE_N_128_BLOCK_SIZE_K_128_GROUP_SIZE_M_1_NUM_KSPLIT_1_SPLITK_BLOCK_SIZE_7168_EVEN_K_1_GRID_MN_17_cache_modifier_CG");
    assert!(t35.split_k.is_none() && !t35.split_k_flag);
    assert!(p(IGEMM37_FULL).implicit_conv);
}

/// The `blas_column_major` rule of the module docs, family by family.
#[test]
fn blas_column_major_rule() {
    let cases: &[(&str, bool)] = &[
        (T1_FULL, true),
        ("Cijk_SS_BiasS_HAS_ScaleAlphaVec_PostGSU16_VW4", true),
        ("ampere_sgemm_128x64_tn", true),
        ("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas", true),
        ("nvjet_tst_192x8_64x8_4x1_v_bz_TNT", true),
        ("cutlass_80_tensorop_s1688gemm_128x256_32x3_nn_align4", true),
        ("cutlass3x_sm90_tensorop_s64x128x16gemm_bf16_bf16_f32_void_bf16_128x128x64_1x1x1_0_tnn_align8_warpspecialized_pingpong_epi_tma", false),
        (CK34_FULL, false),
        ("triton_tem_fused__to_copy_addmm_gelu_t_view_9", false),
        (IGEMM37_FULL, false),
    ];
    for (name, want) in cases {
        let i = parse_kernel_name(name).expect("parses");
        assert_eq!(i.blas_column_major, *want, "{name}");
    }
}

/// Every GEMM / implicit-GEMM kernel named in the TraceLens goldens (GEMM.csv, CONV_fwd.csv,
/// kernel_summary.csv of the H100 and MI300X reports): name, family, tile M, N, K.
const TRACELENS_GEMMS: &[(&str, KernelFamily, u32, u32, u32)] = &[
    // tracelens_mi300/GEMM.csv
    ("Cijk_Alik_Bljk_B_BS_BH_Bias_HA_S_SAV_UserArgs_MT128x144x64_MI16x16x1_SN_LDSB1_AFC1_AFEM1_AFEM1_ASEM1_CLR1_CADS0_DTVA0_DTVB0_EPS0_FDSI0_GRPM1_GRVWA8_GRVWB4_GSUAMB_GLS0_ISA942_IU1_K1_LBSPPA256_LBSPPB128_LBSPPM0_LPA16_LPB16_LPM0_LRVW8_LWPMn1_MIAV0_MIWT2_9_MO40_NTn1_NTA4_NTB0_NTC0_NTD0_NTM0_NEPBS16_NLCA1_NLCB1_ONLL1_PGR2_PLR1_PKA1_SIA3_SS1_SPO0_SRVW0_SSO0_SVW2_SK0_SKXCCM0_TLDS1_ULSGRO0_USL1_UIOFGRO0_USFGROn1_VSn1_VWA2_VWB1_WSGRA0_WSGRB0_WS64_WG64_4_1", KernelFamily::Tensile, 128, 144, 64),
    // tracelens_mi300/GEMM.csv
    ("Cijk_Alik_Bljk_B_BS_BH_Bias_HA_S_SAV_UserArgs_MT16x16x128_MI16x16x1_SN_LDSB0_AFC1_AFEM1_AFEM1_ASEM1_CLR1_CADS0_DTVA0_DTVB0_EPS0_FDSI0_GRPM1_GRVWA8_GRVWB8_GSUAMB_GLS0_ISA942_IU1_K1_LBSPPA256_LBSPPB256_LBSPPM0_LPA16_LPB16_LPM0_LRVW8_LWPMn1_MIAV0_MIWT1_1_MO40_NTn1_NTA0_NTB0_NTC0_NTD0_NTM0_NEPBS16_NLCA1_NLCB1_ONLL1_PGR2_PLR1_PKA1_SIA3_SS1_SPO0_SRVW0_SSO0_SVW1_SK0_SKXCCM0_TLDS1_ULSGRO0_USL1_UIOFGRO0_USFGROn1_VSn1_VWA1_VWB1_WSGRA0_WSGRB0_WS64_WG16_4_4", KernelFamily::Tensile, 16, 16, 128),
    // tracelens_mi300/GEMM.csv
    ("Cijk_Alik_Bljk_B_BS_BH_Bias_HA_S_SAV_UserArgs_MT16x16x256_MI16x16x1_SN_LDSB1_AFC1_AFEM1_AFEM1_ASEM1_CLR1_CADS0_DTVA0_DTVB0_EPS0_FDSI0_GRPM1_GRVWA8_GRVWB8_GSUAMBSK_GLS0_ISA942_IU1_K1_LBSPPA512_LBSPPB512_LBSPPM0_LPA16_LPB16_LPM0_LRVW8_LWPMn1_MIAV0_MIWT1_1_MO40_NTn1_NTA4_NTB0_NTC0_NTD0_NTM0_NEPBS0_NLCA1_NLCB1_ONLL1_PGR2_PLR1_PKA1_SIA3_SS1_SPO0_SRVW0_SSO0_SVW1_SK0_SKXCCM0_TLDS1_ULSGRO0_USL1_UIOFGRO0_USFGROn1_VSn1_VWA1_VWB1_WSGRA0_WSGRB0_WS64_WG16_4_4", KernelFamily::Tensile, 16, 16, 256),
    // tracelens_mi300/GEMM.csv
    ("Cijk_Alik_Bljk_B_BS_BH_Bias_HA_S_SAV_UserArgs_MT16x16x256_MI16x16x1_SN_LDSB1_AFC1_AFEM1_AFEM1_ASEM1_CLR1_CADS0_DTVA0_DTVB0_EPS0_FDSI0_GRPM1_GRVWA8_GRVWB8_GSUAMB_GLS0_ISA942_IU1_K1_LBSPPA512_LBSPPB512_LBSPPM0_LPA16_LPB16_LPM0_LRVW8_LWPMn1_MIAV0_MIWT1_1_MO40_NTn1_NTA0_NTB0_NTC0_NTD0_NTM0_NEPBS16_NLCA1_NLCB1_ONLL1_PGR2_PLR1_PKA1_SIA3_SS1_SPO0_SRVW0_SSO0_SVW1_SK0_SKXCCM0_TLDS1_ULSGRO0_USL1_UIOFGRO0_USFGROn1_VSn1_VWA1_VWB1_WSGRA0_WSGRB0_WS64_WG16_4_4", KernelFamily::Tensile, 16, 16, 256),
    // tracelens_mi300/GEMM.csv
    ("Cijk_Alik_Bljk_B_BS_BH_Bias_HA_S_SAV_UserArgs_MT32x64x128_MI16x16x1_SN_LDSB1_AFC1_AFEM1_AFEM1_ASEM1_CLR1_CADS0_DTVA0_DTVB0_EPS0_FDSI0_GRPM1_GRVWA8_GRVWB8_GSUAMB_GLS0_ISA942_IU1_K1_LBSPPA512_LBSPPB256_LBSPPM0_LPA16_LPB16_LPM0_LRVW8_LWPMn1_MIAV0_MIWT2_1_MO40_NTn1_NTA4_NTB0_NTC0_NTD0_NTM0_NEPBS16_NLCA1_NLCB1_ONLL1_PGR2_PLR1_PKA1_SIA3_SS1_SPO0_SRVW0_SSO0_SVW2_SK0_SKXCCM0_TLDS1_ULSGRO0_USL1_UIOFGRO0_USFGROn1_VSn1_VWA2_VWB1_WSGRA0_WSGRB0_WS64_WG16_16_1", KernelFamily::Tensile, 32, 64, 128),
    // tracelens_mi300/GEMM.csv
    ("Cijk_Alik_Bljk_B_BS_BH_Bias_HA_S_SAV_UserArgs_MT64x160x128_MI16x16x1_SN_LDSB1_AFC1_AFEM1_AFEM1_ASEM1_CLR1_CADS0_DTVA0_DTVB0_EPS0_FDSI0_GRPM1_GRVWA8_GRVWB8_GSUAMB_GLS0_ISA942_IU1_K1_LBSPPA512_LBSPPB256_LBSPPM0_LPA16_LPB16_LPM0_LRVW8_LWPMn1_MIAV0_MIWT2_5_MO40_NTn1_NTA0_NTB0_NTC0_NTD0_NTM0_NEPBS16_NLCA1_NLCB1_ONLL1_PGR2_PLR1_PKA1_SIA3_SS1_SPO0_SRVW0_SSO0_SVW2_SK0_SKXCCM0_TLDS1_ULSGRO0_USL1_UIOFGRO0_USFGROn1_VSn1_VWA2_VWB1_WSGRA0_WSGRB0_WS64_WG32_8_1", KernelFamily::Tensile, 64, 160, 128),
    // tracelens_mi300/GEMM.csv
    ("Cijk_Alik_Bljk_B_BS_BH_Bias_HA_S_SAV_UserArgs_MT64x32x128_MI16x16x1_SN_LDSB1_AFC1_AFEM1_AFEM1_ASEM1_CLR1_CADS0_DTVA0_DTVB0_EPS0_FDSI0_GRPM1_GRVWA8_GRVWB8_GSUAMB_GLS0_ISA942_IU1_K1_LBSPPA512_LBSPPB256_LBSPPM0_LPA16_LPB16_LPM0_LRVW8_LWPMn1_MIAV0_MIWT2_1_MO40_NTn1_NTA0_NTB0_NTC0_NTD0_NTM0_NEPBS16_NLCA1_NLCB1_ONLL1_PGR2_PLR1_PKA1_SIA3_SS1_SPO0_SRVW0_SSO0_SVW2_SK0_SKXCCM0_TLDS1_ULSGRO0_USL1_UIOFGRO0_USFGROn1_VSn1_VWA2_VWB1_WSGRA0_WSGRB0_WS64_WG32_8_1", KernelFamily::Tensile, 64, 32, 128),
    // tracelens_mi300/GEMM.csv
    ("Cijk_Alik_Bljk_B_BS_BH_Bias_HA_S_SAV_UserArgs_MT64x32x256_MI16x16x1_SN_LDSB1_AFC1_AFEM1_AFEM1_ASEM1_CLR1_CADS0_DTVA0_DTVB0_EPS0_FDSI0_GRPM1_GRVWA8_GRVWB8_GSUAMB_GLS0_ISA942_IU1_K1_LBSPPA512_LBSPPB1024_LBSPPM0_LPA16_LPB16_LPM0_LRVW8_LWPMn1_MIAV0_MIWT1_2_MO40_NTn1_NTA0_NTB0_NTC0_NTD0_NTM0_NEPBS16_NLCA1_NLCB1_ONLL1_PGR2_PLR1_PKA1_SIA3_SS1_SPO0_SRVW0_SSO0_SVW1_SK0_SKXCCM0_TLDS1_ULSGRO0_USL1_UIOFGRO0_USFGROn1_VSn1_VWA1_VWB2_WSGRA0_WSGRB0_WS64_WG64_4_1", KernelFamily::Tensile, 64, 32, 256),
    // tracelens_mi300/CONV_fwd.csv
    ("igemm_fwd_gtcx3_nhwc_bf16_bx0_ex1_bt64x64x16_wt16x16x4_ws1x1_wr2x2_ta1x1x4x1_1x16x1x16_tb1x1x4x1_1x16x1x16_me", KernelFamily::MiopenIgemm, 64, 64, 16),
    // tracelens_h100/GEMM.csv
    ("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas", KernelFamily::CublasXmma, 128, 128, 64),
    // tracelens_h100/GEMM.csv
    ("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x64x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas", KernelFamily::CublasXmma, 128, 64, 64),
    // tracelens_h100/GEMM.csv
    ("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize64x64x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas", KernelFamily::CublasXmma, 64, 64, 64),
    // tracelens_h100/GEMM.csv
    ("void cutlass::Kernel2<cutlass_80_tensorop_bf16_s16816gemm_bf16_256x128_64x3_tn_align2>(cutlass_80_tensorop_bf16_s16816gemm_bf16_256x128_64x3_tn_align2::Params)", KernelFamily::Cutlass2, 256, 128, 64),
    // tracelens_h100/GEMM.csv
    ("void cutlass::Kernel2<cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_128x64_64x6_tn_align8>(cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_128x64_64x6_tn_align8::Params)", KernelFamily::Cutlass2, 128, 64, 64),
    // tracelens_h100/GEMM.csv
    ("void cutlass::Kernel2<cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_64x6_tn_align8>(cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_64x6_tn_align8::Params)", KernelFamily::Cutlass2, 64, 64, 64),
    // tracelens_h100/GEMM.csv
    ("void cutlass::Kernel2<cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_32x32_128x2_tn_align8>(cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_32x32_128x2_tn_align8::Params)", KernelFamily::Cutlass2, 32, 32, 128),
    // tracelens_h100/CONV_fwd.csv
    ("void cutlass__5x_cudnn::Kernel<cutlass_tensorop_bf16_s16816fprop_optimized_bf16_256x64_32x4_nhwc_align8>(cutlass_tensorop_bf16_s16816fprop_optimized_bf16_256x64_32x4_nhwc_align8::Params)", KernelFamily::Cutlass2, 256, 64, 32),
];

/// The other kernels named in the same reports: not GEMMs, so `parse_kernel_name` is None.
const TRACELENS_NOT_GEMMS: &[&str] = &[
    "Memcpy DtoD (Device -> Device)",
    "Memcpy DtoH (Device -> Pinned)",
    "Memset (Device)",
    "SubTensorOpWithScalar1d",
    "attn_fwd",
    "batched_transpose_128x4_half",
    "batched_transpose_256x4_half",
    "batched_transpose_32x16_half",
    "void at::native::(anonymous namespace)::CatArrayBatchedCopy<at::native::(anonymous namespace)::OpaqueType<2u>, unsigned int, 3, 64, 64>(at::native::(anonymous namespace)::OpaqueType<2u>*, at::native::(anonymous namespace)::CatArrInputTensorMetadata<at::native::(anonymous namespace)::OpaqueType<2u>, unsigned int, 64, 64>, at::native::(anonymous namespace)::TensorSizeStride<unsigned int, 4u>, int, unsigned int)",
    "void at::native::(anonymous namespace)::indexSelectLargeIndex<c10::BFloat16, long, unsigned int, 2, 2, -2, true>(at::cuda::detail::TensorInfo<c10::BFloat16, unsigned int>, at::cuda::detail::TensorInfo<c10::BFloat16 const, unsigned int>, at::cuda::detail::TensorInfo<long const, unsigned int>, int, int, unsigned int, unsigned int, long)",
    "void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<c10::BFloat16, float>(int, float, c10::BFloat16 const*, c10::BFloat16 const*, c10::BFloat16 const*, float*, float*, c10::BFloat16*)",
    "void at::native::elementwise_kernel<128, 4, at::native::gpu_kernel_impl_nocast<at::native::CUDAFunctor_add<c10::BFloat16> >(at::TensorIteratorBase&, at::native::CUDAFunctor_add<c10::BFloat16> const&)::{lambda(int)#1}>(int, at::native::gpu_kernel_impl_nocast<at::native::CUDAFunctor_add<c10::BFloat16> >(at::TensorIteratorBase&, at::native::CUDAFunctor_add<c10::BFloat16> const&)::{lambda(int)#1})",
    "void at::native::elementwise_kernel_manual_unroll<128, 8, at::native::gpu_kernel_impl_nocast<at::native::CUDAFunctor_add<c10::BFloat16> >(at::TensorIteratorBase&, at::native::CUDAFunctor_add<c10::BFloat16> const&)::{lambda(int, bool)#1}>(int, at::native::gpu_kernel_impl_nocast<at::native::CUDAFunctor_add<c10::BFloat16> >(at::TensorIteratorBase&, at::native::CUDAFunctor_add<c10::BFloat16> const&)::{lambda(int, bool)#1})",
    "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<bool, at::native::func_wrapper_t<bool, at::native::and_kernel_cuda(at::TensorIterator&)::{lambda()#1}::operator()() const::{lambda()#12}::operator()() const::{lambda(bool, bool)#1}>, unsigned int, bool, 4, 4> >(at::native::ReduceOp<bool, at::native::func_wrapper_t<bool, at::native::and_kernel_cuda(at::TensorIterator&)::{lambda()#1}::operator()() const::{lambda()#12}::operator()() const::{lambda(bool, bool)#1}>, unsigned int, bool, 4, 4>)",
    "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<bool, at::native::func_wrapper_t<bool, at::native::and_kernel_cuda(at::TensorIterator&)::{lambda()#1}::operator()() const::{lambda()#12}::operator()() const::{lambda(bool, bool)#1}>, unsigned int, bool, 4> >(at::native::ReduceOp<bool, at::native::func_wrapper_t<bool, at::native::and_kernel_cuda(at::TensorIterator&)::{lambda()#1}::operator()() const::{lambda()#12}::operator()() const::{lambda(bool, bool)#1}>, unsigned int, bool, 4>)",
    "void at::native::vectorized_elementwise_kernel<4, at::native::AUnaryFunctor<long, long, bool, at::native::(anonymous namespace)::CompareEqFunctor<long> >, std::array<char*, 2ul> >(int, at::native::AUnaryFunctor<long, long, bool, at::native::(anonymous namespace)::CompareEqFunctor<long> >, std::array<char*, 2ul>)",
    "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<c10::BFloat16>, std::array<char*, 3ul> >(int, at::native::CUDAFunctor_add<c10::BFloat16>, std::array<char*, 3ul>)",
    "void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#4}::operator()() const::{lambda(c10::BFloat16)#1}, std::array<char*, 2ul> >(int, at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#4}::operator()() const::{lambda(c10::BFloat16)#1}, std::array<char*, 2ul>)",
    "void at::native::vectorized_elementwise_kernel<4, at::native::tanh_kernel_cuda(at::TensorIteratorBase&)::{lambda()#2}::operator()() const::{lambda()#4}::operator()() const::{lambda(c10::BFloat16)#1}, std::array<char*, 2ul> >(int, at::native::tanh_kernel_cuda(at::TensorIteratorBase&)::{lambda()#2}::operator()() const::{lambda()#4}::operator()() const::{lambda(c10::BFloat16)#1}, std::array<char*, 2ul>)",
    "void at::native::vectorized_elementwise_kernel<8, at::native::CUDAFunctor_add<c10::BFloat16>, std::array<char*, 3ul> >(int, at::native::CUDAFunctor_add<c10::BFloat16>, std::array<char*, 3ul>)",
    "void at::native::vectorized_elementwise_kernel<8, at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#4}::operator()() const::{lambda(c10::BFloat16)#1}, std::array<char*, 2ul> >(int, at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#4}::operator()() const::{lambda(c10::BFloat16)#1}, std::array<char*, 2ul>)",
    "void at::native::vectorized_elementwise_kernel<8, at::native::tanh_kernel_cuda(at::TensorIteratorBase&)::{lambda()#2}::operator()() const::{lambda()#4}::operator()() const::{lambda(c10::BFloat16)#1}, std::array<char*, 2ul> >(int, at::native::tanh_kernel_cuda(at::TensorIteratorBase&)::{lambda()#2}::operator()() const::{lambda()#4}::operator()() const::{lambda(c10::BFloat16)#1}, std::array<char*, 2ul>)",
    "void cudnn::engines_precompiled::nchwToNhwcKernel<__nv_bfloat16, __nv_bfloat16, float, false, true, (cudnnKernelDataType_t)0>(cudnn::engines_precompiled::nchw2nhwc_params_t<float>, __nv_bfloat16 const*, __nv_bfloat16*)",
    "void cudnn::engines_precompiled::nhwcToNchwKernel<__nv_bfloat16, __nv_bfloat16, float, true, false, (cudnnKernelDataType_t)0>(cudnn::engines_precompiled::nhwc2nchw_params_t<float>, __nv_bfloat16 const*, __nv_bfloat16*)",
    "void pytorch_flash::flash_fwd_kernel<pytorch_flash::Flash_fwd_kernel_traits<64, 128, 128, 4, false, false, cutlass::bfloat16_t, pytorch_flash::Flash_kernel_traits<64, 128, 128, 4, cutlass::bfloat16_t> >, false, false, false, false, false, true, false>(pytorch_flash::Flash_fwd_params)",
];

/// TraceLens's display-truncated names (`trunc_kernel_details`): must not panic; a GEMM
/// prefix that still holds its tile parses, the rest are None or tile unknown.
const TRACELENS_TRUNCATED: &[&str] = &[
    "Cijk_Alik_Bljk_B_BS_BH_Bias_HA_S_SAV_UserArgs_MT128x144x64_MI16x...",
    "Cijk_Alik_Bljk_B_BS_BH_Bias_HA_S_SAV_UserArgs_MT16x16x128_MI16x1...",
    "Cijk_Alik_Bljk_B_BS_BH_Bias_HA_S_SAV_UserArgs_MT16x16x256_MI16x1...",
    "Cijk_Alik_Bljk_B_BS_BH_Bias_HA_S_SAV_UserArgs_MT32x64x128_MI16x1...",
    "Cijk_Alik_Bljk_B_BS_BH_Bias_HA_S_SAV_UserArgs_MT64x160x128_MI16x...",
    "Cijk_Alik_Bljk_B_BS_BH_Bias_HA_S_SAV_UserArgs_MT64x32x128_MI16x1...",
    "Cijk_Alik_Bljk_B_BS_BH_Bias_HA_S_SAV_UserArgs_MT64x32x256_MI16x1...",
    "igemm_fwd_gtcx3_nhwc_bf16_bx0_ex1_bt64x64x16_wt16x16x4_ws1x1_wr2...",
    "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warp...",
    "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x64x64_warpg...",
    "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize64x64x64_warpgr...",
    "void at::native::(anonymous namespace)::CatArrayBatchedCopy<at::...",
    "void at::native::(anonymous namespace)::indexSelectLargeIndex<c1...",
    "void at::native::(anonymous namespace)::vectorized_layer_norm_ke...",
    "void at::native::elementwise_kernel<128, 4, at::native::gpu_kern...",
    "void at::native::elementwise_kernel_manual_unroll<128, 8, at::na...",
    "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<bool...",
    "void at::native::vectorized_elementwise_kernel<4, at::native::AU...",
    "void at::native::vectorized_elementwise_kernel<4, at::native::CU...",
    "void at::native::vectorized_elementwise_kernel<4, at::native::Ge...",
    "void at::native::vectorized_elementwise_kernel<4, at::native::ta...",
    "void at::native::vectorized_elementwise_kernel<8, at::native::CU...",
    "void at::native::vectorized_elementwise_kernel<8, at::native::Ge...",
    "void at::native::vectorized_elementwise_kernel<8, at::native::ta...",
    "void cudnn::engines_precompiled::nchwToNhwcKernel<__nv_bfloat16,...",
    "void cudnn::engines_precompiled::nhwcToNchwKernel<__nv_bfloat16,...",
    "void cutlass::Kernel2<cutlass_80_tensorop_bf16_s16816gemm_bf16_2...",
    "void cutlass::Kernel2<cutlass_80_tensorop_bf16_s16816gemm_relu_b...",
    "void cutlass::Kernel2<cutlass_80_wmma_tensorop_bf16_s161616gemm_...",
    "void cutlass__5x_cudnn::Kernel<cutlass_tensorop_bf16_s16816fprop...",
    "void pytorch_flash::flash_fwd_kernel<pytorch_flash::Flash_fwd_ke...",
];

#[test]
fn tracelens_golden_gemms_all_have_tiles() {
    for (name, family, m, n, k) in TRACELENS_GEMMS {
        let i = parse_kernel_name(name).unwrap_or_else(|| panic!("did not parse: {name}"));
        assert_eq!(i.family, *family, "{name}");
        assert_eq!((i.mt_m, i.mt_n, i.mt_k), (Some(*m), Some(*n), Some(*k)), "{name}");
    }
}

#[test]
fn tracelens_golden_other_kernels_are_not_gemms() {
    for name in TRACELENS_NOT_GEMMS {
        assert_eq!(parse_kernel_name(name), None, "{name}");
    }
}

#[test]
fn tracelens_truncated_names_do_not_panic() {
    for name in TRACELENS_TRUNCATED {
        if let Some(i) = parse_kernel_name(name) {
            // Whatever parses from a truncated name must still be a GEMM family with a
            // positive tile or an explicit "tile unknown" note.
            assert!(i.has_tile() || i.notes.iter().any(|n| n.contains("tile unknown")), "{name}");
        }
    }
    // The Tensile and xmma prefixes keep their tile; TraceLens cut the CUTLASS ones before it.
    let cut = |s: &str| TRACELENS_TRUNCATED.iter().find(|n| n.starts_with(s)).copied();
    let t = cut("Cijk_Alik_Bljk_B_BS_BH_Bias_HA_S_SAV_UserArgs_MT128x144x64").expect("present");
    assert_eq!(parse_kernel_name(t).and_then(|i| i.mt_m.zip(i.mt_n)), Some((128, 144)));
    let c =
        cut("void cutlass::Kernel2<cutlass_80_tensorop_bf16_s16816gemm_bf16_2").expect("present");
    assert_eq!(parse_kernel_name(c), None);
}

/// GEMM names of the other kineto fixtures.
#[test]
fn other_kineto_fixtures() {
    let cases: &[(&str, Want)] = &[
        // hta_mi250_minitoy_train.json.gz (MI250, gfx90a)
        ("Cijk_Alik_Bljk_SB_Bias_AS_SAV_UserArgs_MT64x16x32_MI16x16x1_SN_LDSB0_AFC1_AFEM1_AFEM1_ASEM1_CLR1_CADS0_EPS0_GRVWA2_GRVWB2_GSUAMB_ISA90a_IU1_K1_LBSPPA128_LBSPPB128_LBSPPM0_LPA8_LPB8_LPM0_LRVW4_LWPMn1_MIAV0_MIWT1_1_MO40_NTn1_NTA0_NTB0_NTC0_NTD0_NTM0_NEPBS2_NLCA1_NLCB1_ONLL1_PGR2_PLR1_PKA1_SIA3_SS1_SPO1_SRVW0_SSO0_SVW1_TLDS1_USFGROn1_VSn1_VWA1_VWB1_WSGRA1_WSGRB1_WS64_WG64_4_1", w(Tensile, Some((64, 16)), Some(32), None, Some("TN"))),
        ("Cijk_Ailk_Bjlk_SB_Bias_AS_SAV_UserArgs_MT64x16x16_MI16x16x1_SN_LDSB0_AFC1_AFEM1_AFEM1_ASEM1_CLR1_CADS0_EPS0_GRVWA1_GRVWB1_GSUAMB_ISA90a_IU1_K1_LBSPPA0_LBSPPB0_LBSPPM0_LPA0_LPB0_LPM0_LRVW1_LWPMn1_MIAV0_MIWT1_1_MO40_NTn1_NTA0_NTB0_NTC0_NTD0_NTM0_NEPBS2_NLCA1_NLCB1_ONLL1_PGR2_PLR1_PKA1_SIA3_SS1_SPO1_SRVW0_SSO0_SVW1_TLDS0_USFGROn1_VSn1_VWA1_VWB1_WSGRA0_WSGRB0_WS64_WG64_4_1", w(Tensile, Some((64, 16)), Some(16), None, Some("NT"))),
        // tracelens_mi300_inductor_triton.json.gz (MI300X)
        ("Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT256x192x64_MI16x16x1_SN_LDSB1_AFC1_AFEM1_AFEM1_ASEM1_CLR1_CADS0_DTLA0_DTLB0_DTVA0_DTVB0_EPS0_FDSI0_GRPM1_GRVWA8_GRVWB8_GSUAMBSK_GLS0_ISA942_IU1_K1_LDSTI0_LBSPPA1024_LBSPPB256_LBSPPM0_LPA16_LPB16_LPM0_LRVW8_LWPMn1_MIAV0_MIWT8_6_MO40_NTn1_NTA0_NTB0_NTC0_NTD4_NTM0_NEPBS16_NLCA1_NLCB1_ONLL1_PGR2_PLR1_PKA1_SIA3_SS1_SPO0_SRVW0_SSO0_SVW8_SK0_SKFTR0_SKXCCM0_TLDS1_ULSGRO0_USL1_UIOFGRO0_USFGROn1_VSn1_VWA8_VWB2_WSGRA0_WSGRB0_WS64_WG32_8_1", w(Tensile, Some((256, 192)), Some(64), None, Some("TN"))),
        // hta_a100_alexnet.json.gz (A100)
        ("ampere_sgemm_32x32_sliced1x4_tn", w(CublasLegacy, Some((32, 32)), None, None, Some("TN"))),
        ("ampere_gcgemm_64x64_nt", w(CublasLegacy, Some((64, 64)), None, None, Some("NT"))),
        ("sm80_xmma_fprop_implicit_gemm_indexed_tf32f32_tf32f32_f32_nhwckrsc_nchw_tilesize128x128x16_stage4_warpsize2x2x1_g1_tensor16x8x8_alignc4_execute_kernel_cudnn", w(CublasXmma, Some((128, 128)), Some(16), Some(4), None)),
    ];
    for (i, (name, want)) in cases.iter().enumerate() {
        check(&format!("fixture {i}"), name, want);
    }
    for name in [
        "triton_red_fused_add_mean_mul_pow_rsqrt_0",
        "triton_red_fused__unsafe_view_add_mean_mul_pow_rsqrt_1",
        "triton_poi_fused__unsafe_view_mul_silu_2",
        "triton_poi_fused__unsafe_view_add_3",
        "attn_fwd",
        "cudnn_ampere_scudnn_128x64_relu_xregs_large_nn_v1",
        "void fft2d_r2c_32x32<float, false, 5u, true>(float2*, float const*, int, int, int, int, int, int, int, int, int, cudnn::reduced_divisor, bool, int2, int, int)",
        "void epilogue::impl::globalKernel<float, float, float, true, true>(int, int, long, float*, cublasLtEpilogue_t, int, float*, long, void*, long, long, long, float*, long, int*)",
        "void cask_cudnn::computeOffsetsKernel<false, false>(cask_cudnn::ComputeOffsetsParams)",
        "",
    ] {
        assert_eq!(parse_kernel_name(name), None, "{name}");
    }
}

/// More real names quoted in TraceLens's `test_kernel_name_parser_real.py` (MI300 Qwen,
/// ResNet and vLLM/SGLang traces; H100 Wan-AI; B200 and H100 nvjet).
#[test]
fn tracelens_parser_test_names() {
    let n = None;
    let cases: &[(&str, Want)] = &[
        ("Cijk_Alik_Bljk_B_BS_BH_Bias_HA_S_SAV_UserArgs_MT256x128x64_MI16x16x1_SN_LDSB1_AFC1_AFEM1_AFEM1_ASEM1_CLR1_CADS0_DTVA0_DTVB0_EPS0_FDSI0_GRPM1_GRVWA8_GRVWB8_GSUAMB_GLS0_ISA942_IU1_K1_LBSPPA1024_LBSPPB512_LBSPPM0_LPA16_LPB16_LPM0_LRVW8_LWPMn1_MIAV0_MIWT8_4_MO40_NTn1_NTA0_NTB0_NTC0_NTD0_NTM0_NEPBS16_NLCA1_NLCB1_ONLL1_PGR2_PLR1_PKA1_SIA3_SS1_SPO0_SRVW0_SSO0_SVW8_SK0_SKXCCM0_TLDS1_ULSGRO0_USL1_UIOFGRO0_USFGROn1_VSn1_VWA8_VWB4_WSGRA0_WSGRB0_WS64_WG32_8_1", w(Tensile, Some((256, 128)), Some(64), n, Some("TN"))),
        ("Cijk_Ailk_Bljk_S_B_Bias_HA_S_SAV_UserArgs_MT16x16x128_MI16x16x1_SN_LDSB1_AFC1_AFEM1_AFEM1_ASEM1_CLR1_CADS0_DTVA0_DTVB0_EPS0_FDSI0_GRPM1_GRVWA2_GRVWB2_GSUAMB_GLS0_ISA942_IU1_K1_LBSPPA256_LBSPPB512_LBSPPM0_LPA16_LPB8_LPM0_LRVW4_LWPMn1_MIAV0_MIWT1_1_MO40_NTn1_NTA4_NTB0_NTC0_NTD4_NTM0_NEPBS16_NLCA1_NLCB1_ONLL1_PGR2_PLR1_PKA1_SIA3_SS1_SPO0_SRVW0_SSO0_SVW1_SK0_SKXCCM0_TLDS1_ULSGRO0_USL1_UIOFGRO0_USFGROn1_VSn1_VWA1_VWB1_WSGRA0_WSGRB0_WS64_WG16_4_4", w(Tensile, Some((16, 16)), Some(128), n, Some("NN"))),
        ("igemm_wrw_gtcx3_nhwc_bf16_bx0_ex1_bt64x32x32_wt16x16x16_ws1x1_wr2x1_ta1x4x1x2_1x8x1x32_tb1x4x1x1_1x8x1x32_vs1_gkgs", w(MiopenIgemm, Some((64, 32)), Some(32), n, None)),
        ("igemm_fwd_gtcx3_nhwc_bf16_bx0_ex1_bt256x64x8_wt64x16x4_ws1x1_wr2x2_ta1x1x8x1_1x8x1x32_tb1x1x2x1_1x8x1x32_me", w(MiopenIgemm, Some((256, 64)), Some(8), n, None)),
        ("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize256x128x64_warpgroupsize2x1x1_execute_segment_k_off_kernel__5x_cublas", w(CublasXmma, Some((256, 128)), Some(64), n, Some("TN"))),
        ("sm90_xmma_fprop_implicit_gemm_bf16bf16_bf16f32_f32_nhwckrsc_nhwc_tilesize128x128x64_warpgroupsize1x1x1_g1_execute_segment_k_off_kernel__5x_cudnn", w(CublasXmma, Some((128, 128)), Some(64), n, None)),
        ("_batched_gemm_a8w8_a_per_token_group_prequant_w_per_batched_tensor_quant_kernel_HAS_BIAS_0_BLOCK_SIZE_M_16_BLOCK_SIZE_N_128_BLOCK_SIZE_K_128_GROUP_SIZE_M_1_EVEN_K_1_cache_modifier_CG_GRID_MN_8", w(Triton, Some((16, 128)), Some(128), n, None)),
        ("nvjet_hsh_256x144_64x4_1x2_h_bz_coopA_TNT", w(Nvjet, Some((256, 144)), Some(64), Some(4), Some("TN"))),
        ("nvjet_hsh_128x256_64x4_2x1_v_bz_coopA_bias_TNN", w(Nvjet, Some((128, 256)), Some(64), Some(4), Some("TN"))),
        ("void ck::kernel_moe_gemm<ck::GridwiseMoeGemmBlockScale<ck::tensor_layout::gemm::RowMajor, ck::tensor_layout::gemm::ColumnMajor, ck::Tuple<ck::tensor_layout::gemm::RowMajor>, ck::tensor_layout::gemm::RowMajor, ck::f8_fnuz_t, ck::f8_fnuz_t, float, float, ck::Tuple<float>, unsigned short, ck::tensor_operation::element_wise::PassThrough, ck::tensor_operation::element_wise::PassThrough, MulABScaleExpertWeightA8W8blkscale, (ck::tensor_operation::device::GemmSpecialization)0, 256, 1, 128, 128, 16, 128, 256, 16, 16, 16, 16, 1, 2, ck::Sequence<16, 16, 1>, ck::Sequence<1, 0, 2>, ck::Sequence<1, 0, 2>, 2, 16, 16, false, 0, ck::Sequence<16, 16, 1>, ck::Sequence<1, 0, 2>, ck::Sequence<1, 0, 2>, 2, 16, 16, false, 0, 1, 2, ck::Sequence<1, 4, 1, 64>, ck::Sequence<2, 1, 1, 1>, (ck::BlockGemmPipelineScheduler)0, (ck::BlockGemmPipelineVersion)0, 0, false, false, false, true, int, ck::f8_fnuz_t, ck::f8_fnuz_t, ck::f8_fnuz_t, ck::f8_fnuz_t, true>, false, (ck::InMemoryDataOperationEnum)1, 2, (ck::TailNumber)0>", w(ComposableKernel, Some((16, 128)), Some(256), n, Some("TN"))),
    ];
    for (i, (name, want)) in cases.iter().enumerate() {
        check(&format!("tracelens test {i}"), name, want);
    }
    // MoE AtomicAdd is the scatter-add of the second expert GEMM, not necessarily split-K.
    let moe = parse_kernel_name(cases[cases.len() - 1].0).expect("parses");
    assert!(!moe.split_k_flag);
}

mod never_panics {
    use proptest::prelude::*;

    use crate::gemm_tiles::parse_kernel_name;

    proptest! {
        #[test]
        fn arbitrary_strings(s in any::<String>()) {
            let _ = parse_kernel_name(&s);
        }

        /// Strings built from the tokens the parsers look for, so that regexes partly match.
        #[test]
        fn token_soup(parts in proptest::collection::vec(prop_oneof![
            Just("Cijk_"), Just("Alik_"), Just("Bljk_"), Just("MT"), Just("x"), Just("_"),
            Just("GSU"), Just("SK"), Just("WG"), Just("PostGSU"), Just("nvjet_"), Just("tst_"),
            Just("sm90_xmma_gemm_"), Just("tilesize"), Just("cutlass_80_tensorop_"),
            Just("cutlass3x_sm100_"), Just("gemm_"), Just("align8"), Just("_2sm"), Just("tn"),
            Just("ck::GridwiseGemm_xdl<"), Just("(GemmSpecialization)0, "), Just("<"), Just(">"),
            Just(", "), Just("("), Just(")"), Just("_ZN2ck"), Just("GemmSpecializationE0E"),
            Just("Li64E"), Just("BLOCK_SIZE_M_"), Just("BLOCK_SIZE_N_"), Just("igemm_fwd_"),
            Just("_bt"), Just("triton_tem_fused_"), Just("0"), Just("64"), Just("99999999999"),
            Just("é"), Just("ampere_"), Just("sgemm_"), Just("_stages_"),
        ], 0..40)) {
            let s: String = parts.concat();
            if let Some(i) = parse_kernel_name(&s) {
                prop_assert!(i.mt_m.is_none_or(|m| m > 0));
                prop_assert!(i.mt_n.is_none_or(|n| n > 0));
            }
        }
    }
}
