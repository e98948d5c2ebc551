//! The HLO modules a profile carries (`/host:metadata` plane: one event metadata per
//! module, named `jit_loss_fn(17)`, with its serialized `HloProto` in the `Hlo Proto`
//! stat) → the instructions the device ran, as `rooftop_core::trace::xla::hlo` types.
//!
//! Only the modules and instructions the device events name are converted. Backend
//! configs are read here (the core crate stays free of format parsing):
//! - GPU backend config JSON (`{"gemm_backend_config": {"dot_dimension_numbers": ...}}`,
//!   or the older bare `GemmBackendConfig`) → the BLAS custom call's dot dimensions;
//! - `{"fusion_backend_config": {"kind": ..., "block_level_fusion_config":
//!   {"output_tiles": [{"sizes": [...]}]}}}` or `triton_gemm_config` → a Triton GEMM
//!   fusion's tile;
//! - an FFI custom call's MLIR attribute dictionary (`{attn_heads = 16 : i64, ...}`) →
//!   `attrs`.
//!
//! A module whose proto does not decode is reported as a warning, never an error.

use super::proto::{
    self, primitive_type_name, HloComputationProto, HloInstructionProto, ShapeProto,
};
use prost::Message;
use rooftop_core::trace::xla::hlo::{ConvDims, DotDims, HloInstr, HloShape, TileConfig, WindowDim};
use std::collections::HashMap;

/// One decoded module: instructions by name and by id, computations by id.
pub struct Module {
    instrs: Vec<HloInstructionProto>,
    by_name: HashMap<String, usize>,
    /// Instructions by the name XLA gives the kernel it generates for them: the
    /// instruction's name with `.` and `-` made `_` (older XLA names `fusion.3`, whose
    /// kernel is `fusion_3`); only names that change.
    by_kernel_name: HashMap<String, usize>,
    by_id: HashMap<i64, usize>,
    /// Computation id → indices of its instructions.
    comps: HashMap<i64, Vec<usize>>,
    comp_root: HashMap<i64, i64>,
}

/// Decodes a serialized `HloProto`. The error is prost's description (with the message
/// and field where it failed).
pub(crate) fn decode(bytes: &[u8]) -> Result<Module, String> {
    let p = proto::HloProto::decode(bytes).map_err(|e| e.to_string())?;
    let module = p.hlo_module.ok_or("the HloProto has no module")?;
    let mut m = Module {
        instrs: Vec::new(),
        by_name: HashMap::new(),
        by_kernel_name: HashMap::new(),
        by_id: HashMap::new(),
        comps: HashMap::new(),
        comp_root: HashMap::new(),
    };
    for c in module.computations {
        let HloComputationProto { instructions, id, root_id, .. } = c;
        m.comp_root.insert(id, root_id);
        for ins in instructions {
            let k = m.instrs.len();
            m.by_name.entry(ins.name.clone()).or_insert(k);
            if ins.name.contains(['.', '-']) {
                m.by_kernel_name.entry(ins.name.replace(['.', '-'], "_")).or_insert(k);
            }
            m.by_id.insert(ins.id, k);
            m.comps.entry(id).or_default().push(k);
            m.instrs.push(ins);
        }
    }
    Ok(m)
}

impl Module {
    /// The name of the instruction whose generated kernel is named `kernel`, if any.
    pub fn instr_of_kernel(&self, kernel: &str) -> Option<&str> {
        let k = self.by_name.get(kernel).or_else(|| self.by_kernel_name.get(kernel))?;
        Some(self.instrs[*k].name.as_str())
    }

    /// The instruction named `name`, converted; `None` when the module has none.
    pub fn instr(&self, name: &str) -> Option<HloInstr> {
        let k = *self.by_name.get(name)?;
        Some(self.convert(k, 0))
    }

    fn shape_of(&self, id: i64) -> Option<HloShape> {
        let k = *self.by_id.get(&id)?;
        self.instrs[k].shape.as_ref().map(|s| shape(s, 0))
    }

    fn convert(&self, k: usize, depth: u32) -> HloInstr {
        let p = &self.instrs[k];
        let mut out = HloInstr {
            name: p.name.clone(),
            opcode: p.opcode.clone(),
            shape: p.shape.as_ref().map(|s| shape(s, 0)).unwrap_or_default(),
            operands: p
                .operand_ids
                .iter()
                .map(|&id| self.shape_of(id).unwrap_or_default())
                .collect(),
            fusion_kind: non_empty(&p.fusion_kind),
            custom_call_target: non_empty(&p.custom_call_target),
            ..HloInstr::default()
        };
        if let Some(md) = &p.metadata {
            out.op_name.clone_from(&md.op_name);
            if !md.source_file.is_empty() {
                out.source = Some(format!("{}:{}", md.source_file, md.source_line));
            }
        }
        if let Some(d) = &p.dot_dimension_numbers {
            out.dot = Some(dot_dims(d));
        }
        if let Some(c) = &p.convolution_dimension_numbers {
            out.conv = Some(ConvDims {
                input_batch: c.input_batch_dimension,
                input_feature: c.input_feature_dimension,
                input_spatial: c.input_spatial_dimensions.clone(),
                kernel_input_feature: c.kernel_input_feature_dimension,
                kernel_output_feature: c.kernel_output_feature_dimension,
                kernel_spatial: c.kernel_spatial_dimensions.clone(),
                output_batch: c.output_batch_dimension,
                output_feature: c.output_feature_dimension,
                output_spatial: c.output_spatial_dimensions.clone(),
                window: p
                    .window
                    .as_ref()
                    .map(|w| {
                        w.dimensions
                            .iter()
                            .map(|d| WindowDim {
                                size: d.size,
                                stride: d.stride,
                                padding_low: d.padding_low,
                                padding_high: d.padding_high,
                                window_dilation: d.window_dilation,
                                base_dilation: d.base_dilation,
                            })
                            .collect()
                    })
                    .unwrap_or_default(),
                feature_group_count: p.feature_group_count.max(1),
                batch_group_count: p.batch_group_count.max(1),
            });
        }
        out.replica_groups = p.replica_groups.iter().map(|g| g.replica_ids.clone()).collect();
        if let Some(l) = &p.collective_device_list {
            if out.replica_groups.is_empty() {
                out.replica_groups =
                    l.replica_groups.iter().map(|g| g.replica_ids.clone()).collect();
            }
            out.iota_group_size =
                l.iota_replica_group_list.as_ref().map(|i| i.num_devices_per_group);
        }
        let keep_config = p.opcode == "custom-call" || p.fusion_kind == "kCustom";
        if keep_config && !p.backend_config.is_empty() {
            read_backend_config(&p.backend_config, &mut out);
        }
        if depth == 0 {
            out.inner = self.inner_of(p).map(|k| Box::new(self.convert(k, 1)));
        }
        out
    }

    /// The instruction defining a fusion's or async wrapper's work: a `dot` or
    /// `convolution` in the fused computation (or a nested fusion in it), or the root of
    /// an `async-start`'s computation.
    fn inner_of(&self, p: &HloInstructionProto) -> Option<usize> {
        let comp = *p.called_computation_ids.first()?;
        match p.opcode.as_str() {
            "fusion" => self.find_work(comp, 0),
            "async-start" => {
                let root = *self.comp_root.get(&comp)?;
                self.by_id.get(&root).copied()
            }
            _ => None,
        }
    }

    fn find_work(&self, comp: i64, depth: u32) -> Option<usize> {
        let members = self.comps.get(&comp)?;
        let is_work = |k: &usize| matches!(self.instrs[*k].opcode.as_str(), "dot" | "convolution");
        if let Some(&k) = members.iter().find(|k| is_work(k)) {
            return Some(k);
        }
        if depth >= 3 {
            return None;
        }
        members.iter().filter(|&&k| self.instrs[k].opcode == "fusion").find_map(|&k| {
            self.instrs[k]
                .called_computation_ids
                .first()
                .and_then(|&c| self.find_work(c, depth + 1))
        })
    }
}

fn non_empty(s: &str) -> Option<String> {
    (!s.is_empty()).then(|| s.to_string())
}

fn dot_dims(d: &proto::DotDimensionNumbers) -> DotDims {
    DotDims {
        lhs_contracting: d.lhs_contracting_dimensions.clone(),
        rhs_contracting: d.rhs_contracting_dimensions.clone(),
        lhs_batch: d.lhs_batch_dimensions.clone(),
        rhs_batch: d.rhs_batch_dimensions.clone(),
    }
}

/// `ShapeProto` → `HloShape` (tuples nested at most 32 deep).
pub fn shape(s: &ShapeProto, depth: u32) -> HloShape {
    let dtype = primitive_type_name(s.element_type).to_string();
    let tuple = if dtype == "tuple" && depth < 32 {
        s.tuple_shapes.iter().map(|t| shape(t, depth + 1)).collect()
    } else {
        Vec::new()
    };
    HloShape {
        dims: if dtype == "tuple" { Vec::new() } else { s.dimensions.clone() },
        dtype,
        tuple,
        minor_to_major: s
            .layout
            .as_ref()
            .map(|l| l.minor_to_major.clone())
            .filter(|m| !m.is_empty()),
    }
}

/// An integer in proto3 JSON: a number or a decimal string.
fn json_i64(v: &serde_json::Value) -> Option<i64> {
    match v {
        serde_json::Value::Number(n) => n.as_i64(),
        serde_json::Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

fn json_list(v: Option<&serde_json::Value>) -> Vec<i64> {
    v.and_then(|x| x.as_array())
        .map(|a| a.iter().filter_map(json_i64).collect())
        .unwrap_or_default()
}

fn read_backend_config(raw: &[u8], out: &mut HloInstr) {
    let Ok(text) = std::str::from_utf8(raw) else { return };
    let t = text.trim();
    if let Ok(v) = serde_json::from_str::<serde_json::Value>(t) {
        read_json_config(&v, out);
    } else if t.starts_with('{') && t.contains(" = ") {
        out.attrs = mlir_attrs(t);
    }
}

fn read_json_config(v: &serde_json::Value, out: &mut HloInstr) {
    // GpuBackendConfig wraps GemmBackendConfig since 2023; older XLA wrote it bare.
    let gemm = v.get("gemm_backend_config").or_else(|| v.get("dot_dimension_numbers").map(|_| v));
    if let Some(g) = gemm {
        if let Some(dn) = g.get("dot_dimension_numbers") {
            out.dot = Some(DotDims {
                lhs_contracting: json_list(dn.get("lhs_contracting_dimensions")),
                rhs_contracting: json_list(dn.get("rhs_contracting_dimensions")),
                lhs_batch: json_list(dn.get("lhs_batch_dimensions")),
                rhs_batch: json_list(dn.get("rhs_batch_dimensions")),
            });
        }
        for key in ["beta", "epilogue", "alpha_real"] {
            if let Some(x) = g.get(key) {
                let s = x.as_str().map_or_else(|| x.to_string(), str::to_string);
                out.attrs.push((key.to_string(), s));
            }
        }
    }
    if let Some(f) = v.get("fusion_backend_config") {
        out.fusion_backend_kind = f.get("kind").and_then(|k| k.as_str()).map(str::to_string);
        let mut tile = TileConfig::default();
        let mut any = false;
        if let Some(b) = f.get("block_level_fusion_config") {
            if let Some(sizes) = b
                .get("output_tiles")
                .and_then(|t| t.as_array())
                .and_then(|a| a.first())
                .and_then(|t| t.get("sizes"))
            {
                tile.output_tile = json_list(Some(sizes));
                any = !tile.output_tile.is_empty();
            }
            tile.num_warps = b.get("num_warps").and_then(json_i64);
        }
        if let Some(g) = f.get("triton_gemm_config") {
            tile.block_m = g.get("block_m").and_then(json_i64);
            tile.block_n = g.get("block_n").and_then(json_i64);
            tile.block_k = g.get("block_k").and_then(json_i64);
            tile.split_k = g.get("split_k").and_then(json_i64);
            tile.num_warps = tile.num_warps.or_else(|| g.get("num_warps").and_then(json_i64));
            any |= tile.block_m.is_some() && tile.block_n.is_some();
        }
        if any {
            out.tile = Some(tile);
        }
    }
}

/// Splits an MLIR attribute dictionary `{a = 1 : i64, b = "x", c = [1, 2]}` into
/// `(key, value)` pairs, the type suffix and string quotes removed.
pub fn mlir_attrs(text: &str) -> Vec<(String, String)> {
    let inner = text.trim().trim_start_matches('{').trim_end_matches('}');
    let mut parts = Vec::new();
    let (mut depth, mut in_str, mut cur) = (0i32, false, String::new());
    for ch in inner.chars() {
        match ch {
            '"' => in_str = !in_str,
            '[' | '{' | '(' | '<' if !in_str => depth += 1,
            ']' | '}' | ')' | '>' if !in_str => depth -= 1,
            ',' if !in_str && depth == 0 => {
                parts.push(std::mem::take(&mut cur));
                continue;
            }
            _ => {}
        }
        cur.push(ch);
    }
    parts.push(cur);
    parts
        .into_iter()
        .filter_map(|p| {
            let (k, v) = p.split_once(" = ")?;
            let v = v.trim();
            // `16 : i64` → `16`; a string's colon is inside its quotes.
            let v = if v.starts_with('"') {
                v.trim_matches('"')
            } else {
                v.rsplit_once(" : ").map_or(v, |(a, _)| a).trim()
            };
            Some((k.trim().to_string(), v.to_string()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mlir_attribute_dictionaries() {
        let a = mlir_attrs(
            "{attn_heads = 16 : i64, deterministic = false, dropout_probability = 1.000000e-01 : \
             f64, name = \"a, b : c\", dims = array<i64: 1, 2>}",
        );
        assert_eq!(a[0], ("attn_heads".to_string(), "16".to_string()));
        assert_eq!(a[1], ("deterministic".to_string(), "false".to_string()));
        assert_eq!(a[2].1, "1.000000e-01");
        assert_eq!(a[3].1, "a, b : c");
        assert_eq!(a[4].1, "array<i64: 1, 2>");
        assert!(mlir_attrs("").is_empty());
        assert!(mlir_attrs("{{{{").is_empty());
    }

    #[test]
    #[allow(clippy::many_single_char_names)]
    fn gemm_and_triton_backend_configs() {
        let mut i = HloInstr::default();
        read_backend_config(
            br#"{"gemm_backend_config":{"beta":0,"dot_dimension_numbers":{"lhs_contracting_dimensions":["1"],"rhs_contracting_dimensions":["1"],"lhs_batch_dimensions":[],"rhs_batch_dimensions":[]},"epilogue":"DEFAULT"}}"#,
            &mut i,
        );
        let d = i.dot.unwrap();
        assert_eq!((d.lhs_contracting, d.rhs_contracting), (vec![1], vec![1]));
        assert_eq!(i.attrs[0], ("beta".to_string(), "0".to_string()));
        // Older XLA: the GemmBackendConfig alone, integers as numbers.
        let mut old = HloInstr::default();
        read_backend_config(br#"{"alpha_real":1,"dot_dimension_numbers":{"lhs_contracting_dimensions":[2],"rhs_contracting_dimensions":[1],"lhs_batch_dimensions":[0],"rhs_batch_dimensions":[0]}}"#, &mut old);
        assert_eq!(old.dot.unwrap().lhs_batch, vec![0]);
        let mut f = HloInstr::default();
        read_backend_config(br#"{"fusion_backend_config":{"kind":"__triton_nested_gemm_fusion","block_level_fusion_config":{"num_warps":"4","output_tiles":[{"sizes":["1","128","128"]}]}}}"#, &mut f);
        assert_eq!(f.fusion_backend_kind.as_deref(), Some("__triton_nested_gemm_fusion"));
        assert_eq!(f.tile.as_ref().unwrap().output_tile, vec![1, 128, 128]);
        let mut g = HloInstr::default();
        read_backend_config(br#"{"fusion_backend_config":{"kind":"__triton_gemm","triton_gemm_config":{"block_m":"64","block_n":"128","block_k":"32","split_k":"2","num_stages":"3","num_warps":"4"}}}"#, &mut g);
        let t = g.tile.unwrap();
        assert_eq!((t.block_m, t.block_n, t.split_k), (Some(64), Some(128), Some(2)));
        // Garbage is ignored.
        let mut x = HloInstr::default();
        read_backend_config(b"\xff\xfe", &mut x);
        read_backend_config(b"{not json", &mut x);
        assert_eq!(x, HloInstr::default());
    }
}
