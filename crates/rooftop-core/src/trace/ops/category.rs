//! Categories of ops and kernels: ours ([`Category`]), the table a modelled op goes to
//! ([`Table`]) and TraceLens's own labels ([`tracelens_category`]).

use super::*;
use std::cell::RefCell;
use std::sync::{Arc, Mutex};

// ---------------------------------------------------------------------------------------
// Categories
// ---------------------------------------------------------------------------------------

/// Our category of an op or a kernel. Serialized with [`Category::as_str`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Category {
    Gemm,
    Conv,
    Sdpa,
    Normalization,
    Elementwise,
    Reduce,
    Softmax,
    Comm,
    Memcpy,
    /// Mixture-of-experts layers (grouped GEMMs with routing).
    Moe,
    /// Activation quantisation (FP8/FP4).
    Quant,
    /// Pooling (max, average, adaptive), forward and backward.
    Pool,
    /// Embedding lookups and their backward (`embedding`, `embedding_bag`, fbgemm's
    /// table-batched lookups).
    Embedding,
    /// Ops that only move data: `cat`, `index_select` (the [`Table::DataMovement`]
    /// ops): they gather or copy rows and compute nothing.
    DataMovement,
    Other,
}

impl Category {
    /// Every category, in display order.
    pub const ALL: [Category; 15] = [
        Category::Gemm,
        Category::Moe,
        Category::Conv,
        Category::Sdpa,
        Category::Normalization,
        Category::Elementwise,
        Category::Reduce,
        Category::Softmax,
        Category::Pool,
        Category::Embedding,
        Category::DataMovement,
        Category::Comm,
        Category::Memcpy,
        Category::Quant,
        Category::Other,
    ];

    /// The stable name (`GEMM`, `CONV`, `SDPA`, `Normalization`, `Elementwise`, `Reduce`,
    /// `Softmax`, `Pool`, `Embedding`, `DataMovement`, `Comm`, `Memcpy`, `MoE`, `Quant`,
    /// `Other`).
    pub fn as_str(self) -> &'static str {
        match self {
            Category::Gemm => "GEMM",
            Category::Conv => "CONV",
            Category::Sdpa => "SDPA",
            Category::Normalization => "Normalization",
            Category::Elementwise => "Elementwise",
            Category::Reduce => "Reduce",
            Category::Softmax => "Softmax",
            Category::Comm => "Comm",
            Category::Memcpy => "Memcpy",
            Category::Moe => "MoE",
            Category::Quant => "Quant",
            Category::Pool => "Pool",
            Category::Embedding => "Embedding",
            Category::DataMovement => "DataMovement",
            Category::Other => "Other",
        }
    }
}

impl std::fmt::Display for Category {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for Category {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

/// The table (TraceLens report sheet) a modelled op's rows go to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Table {
    Gemm,
    SdpaFwd,
    SdpaBwd,
    ConvFwd,
    ConvBwd,
    Normalization,
    BinaryElementwise,
    UnaryElementwise,
    Reduce,
    /// MoE layers ([`crate::trace::inference::moe`]).
    Moe,
    /// Paged attention of inference engines ([`crate::trace::inference::attention`]).
    InferenceAttention,
    /// Activation quantisation ([`crate::trace::inference::quant`]).
    Quant,
    /// Softmax and log-softmax, forward and backward (ours; TraceLens has none).
    Softmax,
    /// Pooling, forward and backward (ours).
    Pool,
    /// Embedding lookups and their backward (ours).
    Embedding,
    /// Ops that only move data: `cat`, `index_select` (ours).
    DataMovement,
    /// Element-wise ops outside TraceLens's binary and unary tables: comparisons,
    /// fills, random numbers, dropout, `where`, losses, `_foreach_*` (ours).
    Elementwise,
    /// Triton kernels `torch.compile` generated, by kind (ours).
    Triton,
}

impl Table {
    /// Every table, in report order.
    pub const ALL: [Table; 18] = [
        Table::Gemm,
        Table::Moe,
        Table::SdpaFwd,
        Table::SdpaBwd,
        Table::ConvFwd,
        Table::ConvBwd,
        Table::Normalization,
        Table::BinaryElementwise,
        Table::UnaryElementwise,
        Table::Elementwise,
        Table::Reduce,
        Table::Softmax,
        Table::Pool,
        Table::Embedding,
        Table::DataMovement,
        Table::Triton,
        Table::InferenceAttention,
        Table::Quant,
    ];

    /// The name TraceLens gives the sheet / CSV (`GEMM`, `SDPA_fwd`, `CONV_fwd`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            Table::Gemm => "GEMM",
            Table::SdpaFwd => "SDPA_fwd",
            Table::SdpaBwd => "SDPA_bwd",
            Table::ConvFwd => "CONV_fwd",
            Table::ConvBwd => "CONV_bwd",
            Table::Normalization => "Normalization",
            Table::BinaryElementwise => "BinaryElementwise",
            Table::UnaryElementwise => "UnaryElementwise",
            Table::Reduce => "Reduce",
            Table::Moe => "MoE",
            Table::InferenceAttention => "InferenceAttention",
            Table::Quant => "Quant",
            Table::Softmax => "Softmax",
            Table::Pool => "Pool",
            Table::Embedding => "Embedding",
            Table::DataMovement => "DataMovement",
            Table::Elementwise => "Elementwise",
            Table::Triton => "Triton",
        }
    }

    /// The category of the table's ops (Triton rows: by kernel kind, see
    /// [`categorize_op`]; this is their default). The one mapping from tables to
    /// categories: [`categorize_op`] gives an op the category of its table, so that the
    /// ops summary and the roofline tables of one report agree.
    pub fn category(self) -> Category {
        match self {
            Table::Gemm => Category::Gemm,
            Table::SdpaFwd | Table::SdpaBwd | Table::InferenceAttention => Category::Sdpa,
            Table::ConvFwd | Table::ConvBwd => Category::Conv,
            Table::Normalization => Category::Normalization,
            Table::BinaryElementwise | Table::UnaryElementwise | Table::Elementwise => {
                Category::Elementwise
            }
            Table::DataMovement => Category::DataMovement,
            Table::Reduce => Category::Reduce,
            Table::Moe => Category::Moe,
            Table::Quant => Category::Quant,
            Table::Softmax => Category::Softmax,
            Table::Pool => Category::Pool,
            Table::Embedding => Category::Embedding,
            Table::Triton => Category::Other,
        }
    }
}

/// Kernel names of NCCL/RCCL collectives (and their ROCm MSCCL variants).
pub fn is_comm_kernel(name: &str) -> bool {
    categorize_kernel(name) == Some(Category::Comm)
}

/// [`is_comm_kernel`] of a model's shared name ([`categorize_kernel_shared`]).
pub fn is_comm_kernel_shared(name: &Arc<str>) -> bool {
    categorize_kernel_shared(name) == Some(Category::Comm)
}

/// [`categorize_kernel`] of a name as the model holds it: one shared copy per distinct
/// name ([`crate::trace::GpuEvent::name`]). The analyses ask for every launch, and the
/// names of generated kernels run to hundreds of bytes: the memo here is keyed by the
/// copy's address, not its text, so a launch costs no hashing or comparison of the name.
/// Each entry holds a clone of the `Arc`: while it is in the memo, its address cannot
/// be given to another string. A name it does not hold is looked up by text, in memos
/// that categorize each distinct name once per process ([`categorize_kernel`]).
pub fn categorize_kernel_shared(name: &Arc<str>) -> Option<Category> {
    /// By address: the name kept alive, and its category.
    type ByAddress = foldhash::HashMap<usize, (Arc<str>, Option<Category>)>;
    thread_local! {
        static MEMO: RefCell<ByAddress> = RefCell::new(ByAddress::default());
    }
    let address = name.as_ptr() as usize;
    if let Some(c) = MEMO.with(|m| m.borrow().get(&address).map(|&(_, c)| c)) {
        return c;
    }
    let c = categorize_kernel(name);
    MEMO.with(|m| keep(&mut m.borrow_mut()).insert(address, (Arc::clone(name), c)));
    c
}

/// Names kept per memo of kernel categories before it starts over (about 40 bytes each
/// by address, the name's length more by text): more than a trace names. A memo too
/// small for a trace's names forgot each before the next analysis asked for it again;
/// one that never started over would, in a process that reads trace after trace (the
/// Python module), keep the first traces' names and compute every later one's.
const MEMO_NAMES: usize = 1 << 17;

/// A memo of kernel categories ([`remembered`]).
type Memo<K> = foldhash::HashMap<K, Option<Category>>;

/// The category of the name `key` stands for, from the calling thread's memo (`local`,
/// no lock), else from the process's (`shared`), else `compute`d and kept in both. Each
/// distinct name is thus categorized once however many threads the analyses run on: a
/// compiled model's trace names thousands of kernels once each, and categorizing one is
/// a substring scan and every GEMM library's name parser.
fn remembered<
    K: std::hash::Hash + Eq + ?Sized,
    O: std::borrow::Borrow<K> + std::hash::Hash + Eq,
>(
    local: &'static std::thread::LocalKey<RefCell<Memo<O>>>,
    shared: &Mutex<Option<Memo<O>>>,
    key: &K,
    owned: impl Fn() -> O,
    compute: impl FnOnce() -> Option<Category>,
) -> Option<Category> {
    if let Some(c) = local.with(|m| m.borrow().get(key).copied()) {
        return c;
    }
    // The memo holds finished answers only: one left by a panicking thread is whole.
    let lock = || shared.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let known = lock().as_ref().and_then(|m| m.get(key).copied());
    let c = known.unwrap_or_else(|| {
        // Computed without the lock: two threads may both compute a name, the same way.
        let c = compute();
        keep(lock().get_or_insert_with(Memo::default)).insert(owned(), c);
        c
    });
    local.with(|m| keep(&mut m.borrow_mut()).insert(owned(), c));
    c
}

/// `memo`, emptied first when it holds [`MEMO_NAMES`] names.
fn keep<K, V>(memo: &mut foldhash::HashMap<K, V>) -> &mut foldhash::HashMap<K, V> {
    if memo.len() >= MEMO_NAMES {
        memo.clear();
    }
    memo
}

/// [`is_comm_kernel`], computed.
fn is_comm_name(name: &str) -> bool {
    let l = name.to_ascii_lowercase();
    l.contains("nccl")
        || l.contains("rccl")
        || l.contains("msccl")
        || crate::trace::inference::comm::is_custom_allreduce(name)
}

/// Our category of one GPU event by its name, when the name alone says it.
///
/// NCCL/RCCL → Comm; `Memcpy …`/`Memset …` → Memcpy; GEMM library kernels (any family
/// [`crate::gemm_tiles::parse_kernel_name`] recognises, except implicit-GEMM
/// convolutions) → GEMM; convolution kernels → CONV; flash/fused attention → SDPA;
/// softmax → Softmax; norms → Normalization; PyTorch element-wise and reduce kernels.
///
/// A trace launches the same few hundred kernels thousands of times, and several
/// analyses ask for each launch: the answer is kept per name (bounded memos per thread
/// and for the process; the function is pure).
pub fn categorize_kernel(name: &str) -> Option<Category> {
    thread_local! {
        static MEMO: RefCell<Memo<Box<str>>> = RefCell::new(Memo::default());
    }
    static SHARED: Mutex<Option<Memo<Box<str>>>> = Mutex::new(None);
    remembered(&MEMO, &SHARED, name, || name.into(), || categorize_kernel_name(name))
}

/// [`categorize_kernel`], computed.
fn categorize_kernel_name(name: &str) -> Option<Category> {
    if is_comm_name(name) {
        return Some(Category::Comm);
    }
    if name.starts_with("Memcpy") || name.starts_with("Memset") {
        return Some(Category::Memcpy);
    }
    let l = name.to_ascii_lowercase();
    if l.contains("fused_moe") || l.contains("moe_align") || l.starts_with("moe_") {
        return Some(Category::Moe);
    }
    if l.contains("flash") || l.contains("fmha") || l.contains("attention") || l.contains("attn") {
        return Some(Category::Sdpa);
    }
    if l.contains("softmax") {
        return Some(Category::Softmax);
    }
    if l.contains("norm") && !l.contains("normal") && !l.contains("elementwise") {
        return Some(Category::Normalization);
    }
    if (l.contains("conv") && !l.contains("convert"))
        || l.contains("fprop")
        || l.contains("dgrad")
        || l.contains("wgrad")
    {
        return Some(Category::Conv);
    }
    if let Some(info) = crate::gemm_tiles::parse_kernel_name(name) {
        return Some(if info.implicit_conv { Category::Conv } else { Category::Gemm });
    }
    if l.contains("reduce_kernel") || l.contains("reduction") {
        return Some(Category::Reduce);
    }
    if l.contains("quant") && (l.contains("fp8") || l.contains("fp4")) {
        return Some(Category::Quant);
    }
    if let Some(k) = super::triton::TritonKind::of(name) {
        return Some(k.category());
    }
    if l.contains("elementwise") {
        return Some(Category::Elementwise);
    }
    None
}

/// Our category of a CPU op, from its name and (for ops we do not know by name) the name
/// of the first GPU event it launched.
///
/// An op with a roofline model has its table's category ([`Table::category`]), so that
/// it is named the same in the ops summary and in the roofline tables. An element-wise,
/// data-movement or unknown op whose first kernel is a copy or a collective is Memcpy or
/// Comm (`aten::copy_` of a host tensor, `aten::cat` of one tensor,
/// `aten::_local_scalar_dense`).
pub fn categorize_op(name: &str, first_kernel: Option<&str>) -> Category {
    let by_kernel = first_kernel.and_then(categorize_kernel);
    let c = categorize_by_name(name).unwrap_or(Category::Other);
    match (c, by_kernel) {
        (
            Category::Elementwise | Category::DataMovement,
            Some(k @ (Category::Memcpy | Category::Comm)),
        )
        | (Category::Other, Some(k)) => k,
        _ => c,
    }
}

fn categorize_by_name(name: &str) -> Option<Category> {
    if let Some(k) = super::triton::TritonKind::of(name) {
        return Some(k.category());
    }
    if let Some(k) = kind_of(name) {
        return Some(k.table().category());
    }
    let l = name.to_ascii_lowercase();
    let by_name = match name {
        "aten::linear"
        | "aten::matmul"
        | "aten::einsum"
        | "aten::addbmm"
        | "aten::addmv"
        | "aten::mv"
        | "aten::dot"
        | "aten::_addmm_activation" => Some(Category::Gemm),
        "aten::scaled_dot_product_attention"
        | "aten::_flash_attention_forward"
        | "aten::_efficient_attention_forward"
        | "aten::_flash_attention_backward"
        | "aten::_efficient_attention_backward" => Some(Category::Sdpa),
        "aten::_softmax"
        | "aten::softmax"
        | "aten::_log_softmax"
        | "aten::log_softmax"
        | "aten::_softmax_backward_data"
        | "aten::_log_softmax_backward_data" => Some(Category::Softmax),
        _ => None,
    };
    if by_name.is_some() {
        return by_name;
    }
    if l.contains("scaled_dot_product") || l.contains("flash_attn") || l.contains("attention") {
        return Some(Category::Sdpa);
    }
    if l.contains("convolution") || l.starts_with("aten::conv") || l.contains("cudnn_conv") {
        return Some(Category::Conv);
    }
    if l.contains("_norm") || l.contains("layernorm") || l.contains("rmsnorm") {
        return Some(Category::Normalization);
    }
    if l.contains("softmax") {
        return Some(Category::Softmax);
    }
    if l.starts_with("nccl:") || l.starts_with("c10d::") || l.contains("record_param_comms") {
        return Some(Category::Comm);
    }
    None
}

/// Our category of a CPU op by its name alone (see [`categorize_in`] to use its kernels).
pub fn categorize(op: &CpuOp) -> Category {
    categorize_op(&op.name, None)
}

/// Our category of op `op` of `model`, using the name of the first GPU event it launched
/// directly for ops not known by name (`aten::gelu` → its element-wise kernel).
pub fn categorize_in(model: &TraceModel, op: usize) -> Category {
    if model.xla.is_some() {
        return crate::trace::xla::category(model, op);
    }
    let Some((name, first)) = names_of(model, op) else { return Category::Other };
    categorize_op(name, first)
}

/// Where what XLA op `op`'s category depends on is: its instruction (0 without), its
/// `hlo_op` and its first kernel's name (address and length; 0 without); `None` when
/// the op has no XLA record.
fn xla_key(model: &TraceModel, x: &crate::trace::xla::XlaInfo, op: usize) -> Option<[usize; 5]> {
    let xop = x.ops.get(op)?;
    let instr = xop.instr.as_ref().map_or(0, |i| Arc::as_ptr(i) as usize);
    let first = crate::trace::xla::first_kernel(model, op)
        .map_or((0, 0), |g| (g.name.as_ptr() as usize, g.name.len()));
    Some([instr, xop.hlo_op.as_ptr() as usize, xop.hlo_op.len(), first.0, first.1])
}

/// What a PyTorch op's category depends on: its name and its first kernel's.
fn names_of(model: &TraceModel, op: usize) -> Option<(&str, Option<&str>)> {
    let o = model.ops.get(op)?;
    let first =
        o.launched.first().and_then(|&e| model.gpu.get(e as usize)).map(|g| g.name.as_ref());
    Some((o.name.as_ref(), first))
}

/// [`categorize_in`] for many ops of one model, from any thread. A PyTorch op's category
/// depends on its name and its first kernel's name only, so each such pair is
/// categorized once (a step runs the same few hundred ops thousands of times).
#[derive(Debug, Default)]
pub struct CategoryMemo<'m> {
    by_names: std::sync::Mutex<foldhash::HashMap<(&'m str, Option<&'m str>), Category>>,
    /// An XLA op's category depends on its instruction, its `hlo_op` and its first
    /// kernel's name, each one copy shared in the model: keyed by their addresses.
    by_xla: std::sync::Mutex<foldhash::HashMap<[usize; 5], Category>>,
}

impl<'m> CategoryMemo<'m> {
    /// The category of op `op` of `model` (the same `model` every call), as
    /// [`categorize_in`] gives it.
    pub fn categorize(&self, model: &'m TraceModel, op: usize) -> Category {
        if let Some(x) = model.xla.as_deref() {
            return match xla_key(model, x, op) {
                Some(key) => memoized(&self.by_xla, key, || categorize_in(model, op)),
                None => categorize_in(model, op),
            };
        }
        let Some(key) = names_of(model, op) else { return Category::Other };
        memoized(&self.by_names, key, || categorize_op(key.0, key.1))
    }
}

/// `memo`'s category for `key`, computed by `f` (the lock not held) the first time.
fn memoized<K: std::hash::Hash + Eq>(
    memo: &std::sync::Mutex<foldhash::HashMap<K, Category>>,
    key: K,
    f: impl FnOnce() -> Category,
) -> Category {
    let lock = || memo.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some(&c) = lock().get(&key) {
        return c;
    }
    let c = f();
    lock().insert(key, c);
    c
}

/// TraceLens's category label of a kernel-launching op, as in its `ops_summary.csv`
/// (`torch_op_mapping.categorize_torch_op`): the op's perf-model category by name
/// (`GEMM`, `CONV_fwd`, `CONV_bwd`, `SDPA_fwd`, `SDPA_bwd`, `NORM_fwd`, `NORM_bwd`,
/// `elementwise`, `reduce`), `triton` / `record_param_comms` by prefix, then from the
/// first kernel's name when it starts with `void at::native` (`elementwise`, `reduce`,
/// `multi_tensor_apply`), else `other`.
pub fn tracelens_category(name: &str, first_kernel: Option<&str>) -> &'static str {
    let by_name = match name {
        "aten::mm"
        | "aten::addmm"
        | "aten::_scaled_mm"
        | "aten::bmm"
        | "aten::baddbmm"
        | "tex_ts::te_gemm_ts"
        | "trtllm::cublas_scaled_mm"
        | "vllm::gemm_with_dynamic_quant"
        | "bitsandbytes::int8_linear_matmul" => Some("GEMM"),
        "aten::convolution"
        | "aten::miopen_convolution"
        | "aten::cudnn_convolution"
        | "ConvBias_"
        | "ConvBiasReLU_" => Some("CONV_fwd"),
        "aten::convolution_backward" | "ConvBias_Backward" | "ConvBiasReLU_Backward" => {
            Some("CONV_bwd")
        }
        "FlashAttnFunc"
        | "flash_attn::_flash_attn_forward"
        | "flash_attn::_flash_attn_varlen_forward"
        | "aten::_scaled_dot_product_cudnn_attention"
        | "aten::_scaled_dot_product_efficient_attention"
        | "aten::_scaled_dot_product_flash_attention"
        | "aten::_efficient_attention_forward"
        | "aiter::_flash_attn_forward"
        | "aiter::mha_fwd"
        | "flash_attn_3::fwd" => Some("SDPA_fwd"),
        "flash_attn::_flash_attn_backward"
        | "flash_attn::_flash_attn_varlen_backward"
        | "FlashAttnFuncBackward"
        | "aten::_scaled_dot_product_cudnn_attention_backward"
        | "aten::_scaled_dot_product_efficient_attention_backward"
        | "aten::_scaled_dot_product_flash_attention_backward"
        | "aten::_efficient_attention_backward"
        | "aiter::_flash_attn_backward"
        | "aiter::mha_bwd" => Some("SDPA_bwd"),
        "aten::norm" | "aten::linalg_norm" | "aten::std" | "aten::var" | "aten::logsumexp"
        | "aten::cumsum" | "aten::cumprod" => Some("reduce"),
        _ => None,
    };
    if let Some(c) = by_name {
        return c;
    }
    match kind_of(name) {
        Some(
            Kind::LayerNorm
            | Kind::BatchNorm
            | Kind::GroupNorm
            | Kind::NativeGroupNorm
            | Kind::InstanceNorm
            | Kind::RmsNorm,
        ) => return "NORM_fwd",
        Some(Kind::Binary | Kind::Unary) => return "elementwise",
        Some(Kind::Reduce) => return "reduce",
        _ => {}
    }
    if name.ends_with("_norm_backward") && name.starts_with("aten::") {
        return "NORM_bwd";
    }
    if name.starts_with("triton") {
        return "triton";
    }
    if name.starts_with("record_param_comms") {
        return "record_param_comms";
    }
    if let Some(k) = first_kernel {
        if k.starts_with("void at::native") {
            for (needle, cat) in [
                ("elementwise", "elementwise"),
                ("reduce", "reduce"),
                ("multi_tensor_apply", "multi_tensor_apply"),
            ] {
                if k.contains(needle) {
                    return cat;
                }
            }
        }
    }
    "other"
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::model::{CpuOp, GpuEvent};
    use Category::{Other, Sdpa, Softmax};

    /// A name categorized on one thread is found by another in the process's memo, not
    /// categorized again; the thread's own memo answers it the second time without
    /// asking the process's.
    #[test]
    fn a_kernel_name_is_categorized_once_per_process() {
        use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
        thread_local! {
            static LOCAL: RefCell<Memo<u32>> = RefCell::new(Memo::default());
        }
        static SHARED: Mutex<Option<Memo<u32>>> = Mutex::new(None);
        static COMPUTED: AtomicUsize = AtomicUsize::new(0);
        fn ask(key: u32) -> Option<Category> {
            remembered(
                &LOCAL,
                &SHARED,
                &key,
                || key,
                || {
                    COMPUTED.fetch_add(1, SeqCst);
                    key.is_multiple_of(2).then_some(Category::Gemm)
                },
            )
        }
        assert_eq!(ask(8), Some(Category::Gemm));
        assert_eq!(COMPUTED.load(SeqCst), 1);
        // Another thread: from the process's memo.
        assert_eq!(std::thread::spawn(|| ask(8)).join().ok(), Some(Some(Category::Gemm)));
        assert_eq!(COMPUTED.load(SeqCst), 1);
        // This thread again, with the process's memo emptied: from its own.
        *SHARED.lock().unwrap() = None;
        assert_eq!(ask(8), Some(Category::Gemm));
        assert_eq!(COMPUTED.load(SeqCst), 1);
        // A new name, and one whose category is none: computed, once each.
        assert_eq!(ask(7), None);
        assert_eq!(ask(7), None);
        assert_eq!(std::thread::spawn(|| ask(7)).join().ok(), Some(None));
        assert_eq!(COMPUTED.load(SeqCst), 2);
    }

    /// Every string literal of the sources that name the ops the roofline tables model,
    /// each as written and as the op names it may stand for (`sub` → `aten::sub`,
    /// `aten::sub_`; `avg_pool2d` → `aten::avg_pool2d_backward`).
    fn candidate_op_names() -> Vec<String> {
        let sources = [
            include_str!("mod.rs"),
            include_str!("misc.rs"),
            include_str!("pool.rs"),
            include_str!("conv.rs"),
            include_str!("embedding.rs"),
            include_str!("triton.rs"),
            include_str!("tests.rs"),
            include_str!("tests_more.rs"),
            include_str!("../inference/moe.rs"),
            include_str!("../inference/attention.rs"),
            include_str!("../inference/quant.rs"),
        ];
        let mut out = std::collections::BTreeSet::new();
        for src in sources {
            for (i, lit) in src.split('"').enumerate() {
                // Odd pieces lie between quotes; op names have no blank.
                if i % 2 == 0 || lit.is_empty() || lit.contains([' ', '\\', '{']) {
                    continue;
                }
                for name in [
                    lit.to_string(),
                    format!("aten::{lit}"),
                    format!("aten::{lit}_"),
                    format!("aten::{lit}_backward"),
                ] {
                    out.insert(name);
                }
            }
        }
        out.into_iter().collect()
    }

    /// One source of truth: an op the roofline tables model is named by the ops summary
    /// (`categorize_op`, without a kernel) with the category of its table
    /// (`Table::category`). The exception is the Triton table, whose rows are named by
    /// kernel kind (pointwise → Elementwise, reductions → Reduce).
    #[test]
    fn every_modelled_op_has_its_tables_category() {
        let mut checked = 0;
        let mut seen_tables = std::collections::BTreeSet::new();
        for name in candidate_op_names() {
            let Some(table) = op_table(&name) else { continue };
            let got = categorize_op(&name, None);
            let want = match super::super::triton::TritonKind::of(&name) {
                Some(k) => k.category(),
                None => table.category(),
            };
            assert_eq!(got, want, "{name} ({})", table.as_str());
            seen_tables.insert(table);
            checked += 1;
        }
        // Hundreds of names (321 when written), of every table.
        assert!(checked > 150, "{checked} names");
        assert_eq!(seen_tables.len(), Table::ALL.len(), "{seen_tables:?}");
    }

    /// A table's ops are named as the table is: its category's name is part of the
    /// table's (`BinaryElementwise` → Elementwise, `SDPA_fwd` → SDPA, `DataMovement` →
    /// DataMovement), so that an op's row in the ops summary and its roofline table do
    /// not say two things. Two exceptions: the inference engines' paged attention
    /// (`InferenceAttention`) is attention, SDPA; Triton rows are named by their
    /// kernel's kind, `Other` being the default.
    #[test]
    fn every_table_is_named_as_its_category() {
        for t in Table::ALL {
            let c = t.category();
            match t {
                Table::InferenceAttention => assert_eq!(c, Category::Sdpa),
                Table::Triton => assert_eq!(c, Category::Other),
                _ => assert!(t.as_str().contains(c.as_str()), "{} is {}", t.as_str(), c.as_str()),
            }
        }
    }

    /// `index_select` and `cat` only move data: the ops summary, the roofline table and
    /// the table's category all say DataMovement (TraceLens, which has no model for
    /// them, labels them `other`). A copy kernel still makes the op a Memcpy, as it
    /// does an element-wise op.
    #[test]
    fn data_movement_ops_are_data_movement_everywhere() {
        for name in ["aten::index_select", "aten::cat", "aten::_cat"] {
            assert_eq!(op_table(name), Some(Table::DataMovement), "{name}");
            assert_eq!(categorize_op(name, None), Category::DataMovement, "{name}");
            assert_eq!(tracelens_category(name, None), "other", "{name}");
        }
        let gather = "void at::native::(anonymous namespace)::indexSelectLargeIndex<float, \
                      long, unsigned int, 2, 2, -2, true>(int)";
        assert_eq!(categorize_op("aten::index_select", Some(gather)), Category::DataMovement);
        let copy = "Memcpy DtoD (Device -> Device)";
        assert_eq!(categorize_op("aten::cat", Some(copy)), Category::Memcpy);
        assert_eq!(categorize_op("aten::copy_", Some(copy)), Category::Memcpy);
        assert_eq!(Table::DataMovement.category().as_str(), "DataMovement");
        assert!(Category::ALL.contains(&Category::DataMovement));
    }

    /// An op not known by name takes its first kernel's category: the memo keys on both
    /// names, so the same op name with other kernels is categorized again.
    #[test]
    fn the_memo_keys_on_the_op_and_its_first_kernel() {
        let op =
            |launched: Vec<u32>| CpuOp { name: "my::custom".into(), launched, ..CpuOp::default() };
        let kernel = |name: &str| GpuEvent { name: name.into(), ..GpuEvent::default() };
        let model = TraceModel {
            ops: vec![op(vec![0]), op(vec![1]), op(vec![]), op(vec![2]), op(vec![0])],
            gpu: vec![kernel("my_softmax_kernel"), kernel("flash_fwd_kernel"), kernel("k")],
            ..TraceModel::default()
        };
        let memo = CategoryMemo::default();
        let got: Vec<Category> = (0..6).map(|i| memo.categorize(&model, i)).collect();
        // The sixth op does not exist.
        assert_eq!(got, vec![Softmax, Sdpa, Other, Other, Softmax, Other]);
        for (i, c) in got.iter().enumerate() {
            assert_eq!(*c, categorize_in(&model, i), "op {i}");
        }
    }
}
