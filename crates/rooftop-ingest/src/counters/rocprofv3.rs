//! rocprofv3 (rocprofiler-sdk) outputs: `kernel_trace.csv` (early and current schema),
//! `counter_collection.csv` (long format: one row per dispatch per counter, pivoted
//! here), joined by `Dispatch_Id` when both sit in one directory (`<pid>_` prefixes
//! allowed), and `results.json` (`rocprofiler-sdk-tool`: kernel_dispatch buffer records,
//! kernel_symbols, counter_collection callback records, agents).

use super::rocprof::{cell, int_cell, num_cell, parse_table, Table};
use super::text::read_text;
use super::CounterError;
use rooftop_core::counters::{
    clean_kernel_name, CounterFormat, CounterSet, CounterSource, DeviceInfo, Dispatch,
};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn empty_set(format: CounterFormat) -> CounterSet {
    CounterSet {
        source: CounterSource { format, files: Vec::new(), tool_version: None, notes: Vec::new() },
        device: DeviceInfo::default(),
        measured_roofs: Vec::new(),
        dispatches: Vec::new(),
        aggregates: Vec::new(),
        activity: None,
    }
}

/// A CSV file and its parsed table.
type NamedTable = (PathBuf, Table);

fn is_counter_table(t: &Table) -> bool {
    t.has("Counter_Name") && t.has("Counter_Value")
}

fn is_trace_table(t: &Table) -> bool {
    t.has("Dispatch_Id") && t.has("Kernel_Name") && t.has("Start_Timestamp") && !is_counter_table(t)
}

fn require(path: &Path, t: &Table, names: &[&str]) -> Result<(), CounterError> {
    let missing: Vec<&str> = names.iter().copied().filter(|n| !t.has(n)).collect();
    if missing.is_empty() {
        Ok(())
    } else {
        Err(CounterError::at_line(
            path,
            1,
            format!(
                "missing {}: {}",
                if missing.len() == 1 { "column" } else { "columns" },
                missing.join(", ")
            ),
        ))
    }
}

fn duration(start: Option<u64>, end: Option<u64>) -> Option<f64> {
    match (start, end) {
        (Some(s), Some(e)) if e > s => Some((e - s) as f64),
        _ => None,
    }
}

/// `kernel_trace.csv` rows → dispatches.
#[allow(clippy::many_single_char_names)]
fn trace_dispatches(path: &Path, t: &Table) -> Result<Vec<Dispatch>, CounterError> {
    require(path, t, &["Dispatch_Id", "Kernel_Name", "Start_Timestamp", "End_Timestamp"])?;
    let c = |n: &[&str]| t.col(n);
    let (id_i, name_i) = (c(&["Dispatch_Id"]), c(&["Kernel_Name"]));
    let (start_i, end_i) = (c(&["Start_Timestamp"]), c(&["End_Timestamp"]));
    let agent_i = c(&["Agent_Id"]);
    let stream_i = c(&["Stream_Id"]).or(c(&["Queue_Id"]));
    let lds_i = c(&["LDS_Block_Size", "Lds_Block_Size", "Group_Segment_Size"]);
    let scr_i = c(&["Scratch_Size", "Private_Segment_Size"]);
    let vgpr_i = c(&["VGPR_Count", "Arch_VGPR_Count"]);
    let agpr_i = c(&["Accum_VGPR_Count"]);
    let sgpr_i = c(&["SGPR_Count"]);
    let wg = [c(&["Workgroup_Size_X"]), c(&["Workgroup_Size_Y"]), c(&["Workgroup_Size_Z"])];
    let gr = [c(&["Grid_Size_X"]), c(&["Grid_Size_Y"]), c(&["Grid_Size_Z"])];
    let mut out = Vec::new();
    for (line, row) in &t.rows {
        let line = *line;
        let int = |i| int_cell(path, t, line, row, i).map(|v| v.map(|v| v.0));
        let mut d = Dispatch {
            id: int(id_i)?.unwrap_or(0),
            name: clean_kernel_name(cell(row, name_i).unwrap_or("")).into(),
            gpu: cell(row, agent_i).map(Into::into),
            stream: cell(row, stream_i).map(Into::into),
            start_ns: int(start_i)?,
            end_ns: int(end_i)?,
            shared_bytes: int(lds_i)?,
            scratch_bytes: int(scr_i)?,
            vgprs: int(vgpr_i)?.map(|v| v as u32),
            agprs: int(agpr_i)?.map(|v| v as u32),
            sgprs: int(sgpr_i)?.map(|v| v as u32),
            ..Dispatch::default()
        };
        d.duration_ns = duration(d.start_ns, d.end_ns);
        let mut block = [1u64; 3];
        let mut grid = [1u64; 3];
        let mut have = true;
        for k in 0..3 {
            match (int(wg[k])?, int(gr[k])?) {
                (Some(w), Some(g)) if w > 0 => {
                    block[k] = w;
                    grid[k] = g.div_ceil(w);
                }
                _ => have = false,
            }
        }
        if have {
            d.block = Some(block);
            d.grid = Some(grid);
        }
        out.push(d);
    }
    Ok(out)
}

/// `counter_collection.csv` rows pivoted per (process, dispatch).
fn counter_dispatches(
    path: &Path,
    t: &Table,
    notes: &mut Vec<String>,
) -> Result<Vec<Dispatch>, CounterError> {
    require(path, t, &["Dispatch_Id", "Kernel_Name", "Counter_Name", "Counter_Value"])?;
    let c = |n: &[&str]| t.col(n);
    let (id_i, name_i) = (c(&["Dispatch_Id"]), c(&["Kernel_Name"]));
    let (cn_i, cv_i) = (c(&["Counter_Name"]), c(&["Counter_Value"]));
    let pid_i = c(&["Process_Id"]);
    let agent_i = c(&["Agent_Id"]);
    let queue_i = c(&["Queue_Id"]);
    let grid_i = c(&["Grid_Size"]);
    let wg_i = c(&["Workgroup_Size"]);
    let lds_i = c(&["LDS_Block_Size", "Lds_Block_Size"]);
    let scr_i = c(&["Scratch_Size"]);
    let vgpr_i = c(&["VGPR_Count", "Arch_VGPR_Count"]);
    let agpr_i = c(&["Accum_VGPR_Count"]);
    let sgpr_i = c(&["SGPR_Count"]);
    let (start_i, end_i) = (c(&["Start_Timestamp"]), c(&["End_Timestamp"]));
    let mut order: Vec<(String, u64)> = Vec::new();
    let mut map: BTreeMap<(String, u64), Dispatch> = BTreeMap::new();
    let mut dup = 0usize;
    // Each counter name once, shared by every dispatch.
    let mut names: std::collections::HashMap<String, rooftop_core::counters::CounterName> =
        std::collections::HashMap::new();
    for (line, row) in &t.rows {
        let line = *line;
        let int = |i| int_cell(path, t, line, row, i).map(|v| v.map(|v| v.0));
        let id = int(id_i)?.unwrap_or(0);
        let pid = cell(row, pid_i).unwrap_or("").to_string();
        let name = clean_kernel_name(cell(row, name_i).unwrap_or(""));
        let key = (pid, id);
        if !map.contains_key(&key) {
            let mut d = Dispatch {
                id,
                name: name.as_str().into(),
                gpu: cell(row, agent_i).map(Into::into),
                stream: cell(row, queue_i).map(Into::into),
                shared_bytes: int(lds_i)?,
                scratch_bytes: int(scr_i)?,
                vgprs: int(vgpr_i)?.map(|v| v as u32),
                agprs: int(agpr_i)?.map(|v| v as u32),
                sgprs: int(sgpr_i)?.map(|v| v as u32),
                start_ns: int(start_i)?,
                end_ns: int(end_i)?,
                ..Dispatch::default()
            };
            d.duration_ns = duration(d.start_ns, d.end_ns);
            // Products x*y*z, in work-items.
            if let (Some(g), Some(w)) = (int(grid_i)?, int(wg_i)?) {
                if w > 0 {
                    d.grid = Some([g.div_ceil(w), 1, 1]);
                    d.block = Some([w, 1, 1]);
                }
            }
            order.push(key.clone());
            map.insert(key.clone(), d);
        }
        let Some(d) = map.get_mut(&key) else { continue };
        if *d.name != *name {
            return Err(CounterError::at_field(
                path,
                line,
                "Kernel_Name",
                format!("dispatch {id} is `{}` on an earlier row and `{name}` here", d.name),
            ));
        }
        let Some(cname) = cell(row, cn_i) else {
            return Err(CounterError::at_field(path, line, "Counter_Name", "empty counter name"));
        };
        let Some(v) = num_cell(path, t, line, row, cv_i)? else { continue };
        if let Some(old) = d.counters.get_mut(cname) {
            *old += v;
            dup += 1;
        } else {
            let key = names.entry(cname.to_string()).or_insert_with(|| cname.into()).clone();
            d.counters.insert(key, v);
        }
    }
    if dup > 0 {
        notes.push(format!("{}: {dup} repeated (dispatch, counter) rows summed", fname(path)));
    }
    Ok(order.into_iter().filter_map(|k| map.remove(&k)).collect())
}

/// Joins counter dispatches into trace dispatches by `Dispatch_Id`; names must agree.
fn join(
    trace: &mut Vec<Dispatch>,
    counters: Vec<Dispatch>,
    counter_path: &Path,
    notes: &mut Vec<String>,
) -> Result<(), CounterError> {
    let mut by_id: BTreeMap<u64, usize> = BTreeMap::new();
    for (i, d) in trace.iter().enumerate() {
        by_id.entry(d.id).or_insert(i);
    }
    let (mut joined, mut only_counters) = (0usize, 0usize);
    for c in counters {
        if let Some(d) = by_id.get(&c.id).and_then(|&i| trace.get_mut(i)) {
            if d.name != c.name {
                return Err(CounterError::new(
                    counter_path,
                    format!(
                        "Dispatch_Id {} is `{}` in the counter collection but `{}` in the \
                         kernel trace: the files are from different runs",
                        c.id, c.name, d.name
                    ),
                ));
            }
            d.counters.extend(c.counters);
            joined += 1;
        } else {
            only_counters += 1;
            trace.push(c);
        }
    }
    notes.push(format!(
        "counter collection joined to the kernel trace by Dispatch_Id: {joined} matched, \
         {only_counters} only in the counter collection"
    ));
    Ok(())
}

/// Reads one rocprofv3 CSV (kernel trace or counter collection) or JSON given as text.
pub fn read_str(name: &str, text: &str) -> Result<CounterSet, CounterError> {
    let path = Path::new(name);
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    if text.trim_start().starts_with('{') {
        return read_json_str(name, text);
    }
    let t = parse_table(path, text)?;
    let mut set = empty_set(CounterFormat::Rocprofv3Csv);
    set.source.files.push(name.to_string());
    if t.has("Counter_Name") || t.has("Counter_Value") {
        set.dispatches = counter_dispatches(path, &t, &mut set.source.notes)?;
    } else if t.has("Dispatch_Id") && t.has("Kernel_Name") {
        set.dispatches = trace_dispatches(path, &t)?;
    } else {
        return Err(CounterError::at_line(
            path,
            1,
            "not a rocprofv3 kernel_trace.csv or counter_collection.csv (expected columns \
             Dispatch_Id, Kernel_Name and Start_Timestamp, or Counter_Name and Counter_Value)",
        ));
    }
    Ok(set)
}

fn files_under(dir: &Path, depth: u32, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else { return };
    let mut entries: Vec<PathBuf> = rd.filter_map(Result::ok).map(|e| e.path()).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() && depth > 0 {
            files_under(&p, depth - 1, out);
        } else if p.is_file() {
            out.push(p);
        }
    }
}

/// The file name without a `.gz` suffix (gzipped outputs keep their conventions).
fn fname(p: &Path) -> String {
    let n = p.file_name().and_then(|f| f.to_str()).unwrap_or("");
    crate::compressed::name_without_gz(n).to_string()
}

/// Reads a rocprofv3 CSV/JSON file, or a directory holding `[<pid>_]kernel_trace.csv`
/// and/or `[<pid>_]counter_collection.csv` (or `results.json`).
pub fn read(path: &Path) -> Result<CounterSet, CounterError> {
    if !path.is_dir() {
        let text = read_text(path)?;
        let mut set = read_str(&path.display().to_string(), &text)?;
        set.source.files = vec![path.display().to_string()];
        return Ok(set);
    }
    let mut files = Vec::new();
    files_under(path, 1, &mut files);
    let mut traces: Vec<(String, PathBuf, Table)> = Vec::new();
    let mut counters: Vec<(String, PathBuf, Table)> = Vec::new();
    let mut jsons: Vec<PathBuf> = Vec::new();
    for p in files {
        let n = fname(&p);
        let lower = n.to_ascii_lowercase();
        if let Some(prefix) = lower.strip_suffix("kernel_trace.csv") {
            let text = read_text(&p)?;
            let t = parse_table(&p, &text)?;
            if is_trace_table(&t) {
                traces.push((prefix.to_string(), p, t));
            }
        } else if let Some(prefix) = lower.strip_suffix("counter_collection.csv") {
            let text = read_text(&p)?;
            let t = parse_table(&p, &text)?;
            if is_counter_table(&t) {
                counters.push((prefix.to_string(), p, t));
            }
        } else if lower.ends_with("results.json") {
            jsons.push(p);
        }
    }
    if traces.is_empty() && counters.is_empty() {
        if let Some(j) = jsons.first() {
            let text = read_text(j)?;
            let mut set = read_json_str(&j.display().to_string(), &text)?;
            if jsons.len() > 1 {
                set.source
                    .notes
                    .push(format!("{} results.json files; the first read", jsons.len()));
            }
            return Ok(set);
        }
        return Err(CounterError::unknown(
            path,
            "no rocprofv3 output here (expected *kernel_trace.csv, *counter_collection.csv or \
             *results.json)",
        ));
    }
    let mut set = empty_set(CounterFormat::Rocprofv3Csv);
    // Pair by identical prefix; a single leftover of each kind pairs with the other.
    let mut pairs: Vec<(Option<NamedTable>, Option<NamedTable>)> = Vec::new();
    let mut leftover_c: Vec<(String, PathBuf, Table)> = Vec::new();
    for (pre, p, t) in counters {
        if let Some(i) = traces.iter().position(|(tp, _, _)| *tp == pre) {
            let (_, tpath, tt) = traces.remove(i);
            pairs.push((Some((tpath, tt)), Some((p, t))));
        } else {
            leftover_c.push((pre, p, t));
        }
    }
    if traces.len() == 1 && leftover_c.len() == 1 {
        if let (Some((_, tp, tt)), Some((_, cp, ct))) = (traces.pop(), leftover_c.pop()) {
            set.source.notes.push(format!(
                "{} and {} paired (the only kernel trace and counter collection left)",
                fname(&tp),
                fname(&cp)
            ));
            pairs.push((Some((tp, tt)), Some((cp, ct))));
        }
    }
    for (_, p, t) in traces {
        pairs.push((Some((p, t)), None));
    }
    for (_, p, t) in leftover_c {
        pairs.push((None, Some((p, t))));
    }
    if pairs.len() > 1 {
        set.source.notes.push(format!(
            "{} independent kernel-trace / counter-collection groups read (dispatch ids may \
             repeat across processes)",
            pairs.len()
        ));
    }
    for (tr, cc) in pairs {
        let mut ds = Vec::new();
        if let Some((p, t)) = &tr {
            ds = trace_dispatches(p, t)?;
            set.source.files.push(p.display().to_string());
        }
        if let Some((p, t)) = &cc {
            let cds = counter_dispatches(p, t, &mut set.source.notes)?;
            set.source.files.push(p.display().to_string());
            if tr.is_some() {
                join(&mut ds, cds, p, &mut set.source.notes)?;
            } else {
                ds = cds;
            }
        }
        set.dispatches.extend(ds);
    }
    Ok(set)
}

// ---------------------------------------------------------------------------------------
// results.json

fn jget<'a>(v: &'a Value, path: &[&str]) -> Option<&'a Value> {
    path.iter().try_fold(v, |v, k| v.get(*k))
}

fn ju64(v: &Value, path: &[&str]) -> Option<u64> {
    let x = jget(v, path)?;
    x.as_u64()
        .or_else(|| x.as_f64().filter(|f| *f >= 0.0 && f.is_finite()).map(|f| f as u64))
        .or_else(|| x.as_str().and_then(|s| s.trim().parse().ok()))
        .or_else(|| x.get("handle").and_then(Value::as_u64))
}

fn jf64(v: &Value, path: &[&str]) -> Option<f64> {
    let x = jget(v, path)?;
    x.as_f64().or_else(|| x.as_str().and_then(|s| s.trim().parse().ok())).filter(|f| f.is_finite())
}

fn jstr(v: &Value, path: &[&str]) -> Option<String> {
    jget(v, path).and_then(Value::as_str).map(str::to_string)
}

fn jarray<'a>(v: &'a Value, path: &[&str]) -> &'a [Value] {
    jget(v, path).and_then(Value::as_array).map_or(&[], Vec::as_slice)
}

fn dim3(v: &Value, path: &[&str]) -> Option<[u64; 3]> {
    let o = jget(v, path)?;
    Some([ju64(o, &["x"])?, ju64(o, &["y"]).unwrap_or(1), ju64(o, &["z"]).unwrap_or(1)])
}

/// Reads a `results.json` (rocprofiler-sdk-tool) given as text.
pub fn read_json_str(name: &str, text: &str) -> Result<CounterSet, CounterError> {
    let path = Path::new(name);
    let root: Value = serde_json::from_str(text)
        .map_err(|e| CounterError::at_line(path, e.line() as u64, format!("invalid JSON: {e}")))?;
    let tools = jarray(&root, &["rocprofiler-sdk-tool"]);
    let Some(tool) = tools.first() else {
        return Err(CounterError::new(
            path,
            "not a rocprofv3 results.json: no `rocprofiler-sdk-tool` array",
        ));
    };
    let mut set = empty_set(CounterFormat::Rocprofv3Json);
    set.source.files.push(name.to_string());
    if tools.len() > 1 {
        set.source.notes.push(format!("{} tool entries; the first read", tools.len()));
    }
    set.source.tool_version = jstr(tool, &["metadata", "config", "version"])
        .or_else(|| jstr(tool, &["metadata", "version"]))
        .map(|v| format!("rocprofv3 {v}"));

    // Kernel symbols: array of objects with kernel_id, or an object keyed by id.
    let mut symbols: BTreeMap<u64, &Value> = BTreeMap::new();
    match jget(tool, &["kernel_symbols"]) {
        Some(Value::Array(a)) => {
            for s in a {
                if let Some(id) = ju64(s, &["kernel_id"]) {
                    symbols.insert(id, s);
                }
            }
        }
        Some(Value::Object(m)) => {
            for (k, s) in m {
                if let Some(id) = ju64(s, &["kernel_id"]).or_else(|| k.parse().ok()) {
                    symbols.insert(id, s);
                }
            }
        }
        _ => {}
    }
    let mut counter_names: BTreeMap<u64, String> = BTreeMap::new();
    for c in jarray(tool, &["counters"]) {
        if let (Some(id), Some(n)) = (ju64(c, &["id"]), jstr(c, &["name"])) {
            counter_names.insert(id, n);
        }
    }
    // Device: the first GPU agent.
    let agents = jarray(tool, &["agents"]);
    let gpu = agents.iter().find(|a| {
        jget(a, &["type"]).is_some_and(|t| t.as_u64() == Some(2) || t.as_str() == Some("GPU"))
    });
    if let Some(a) = gpu {
        let u32f = |p: &[&str]| ju64(a, p).map(|v| v as u32);
        set.device = DeviceInfo {
            name: jstr(a, &["product_name"]).or_else(|| jstr(a, &["marketing_name"])),
            arch: jstr(a, &["name"]),
            compute_units: u32f(&["cu_count"]),
            simd_per_cu: u32f(&["simd_per_cu"]),
            wave_size: u32f(&["wave_front_size"]),
            max_waves_per_cu: u32f(&["max_waves_per_cu"]),
            max_sclk_mhz: jf64(a, &["max_engine_clk_fcompute"]),
            num_xcd: u32f(&["num_xcc"]),
            ..DeviceInfo::default()
        };
    }

    let dispatch_of = |info: &Value, symbols: &BTreeMap<u64, &Value>| -> Dispatch {
        let kid = ju64(info, &["kernel_id"]);
        let sym = kid.and_then(|k| symbols.get(&k)).copied();
        let sym_u32 = |p: &[&str]| sym.and_then(|s| ju64(s, p)).map(|v| v as u32);
        let mut d = Dispatch {
            id: ju64(info, &["dispatch_id"]).unwrap_or(0),
            name: clean_kernel_name(
                &sym.and_then(|s| {
                    jstr(s, &["formatted_kernel_name"])
                        .or_else(|| jstr(s, &["truncated_kernel_name"]))
                        .or_else(|| jstr(s, &["kernel_name"]))
                })
                .unwrap_or_else(|| format!("kernel_id {}", kid.unwrap_or(0))),
            )
            .into(),
            gpu: ju64(info, &["agent_id"]).map(|a| format!("Agent {a}").into()),
            stream: ju64(info, &["queue_id"]).map(|q| q.to_string().into()),
            shared_bytes: ju64(info, &["group_segment_size"]),
            scratch_bytes: ju64(info, &["private_segment_size"]),
            vgprs: sym_u32(&["arch_vgpr_count"]),
            agprs: sym_u32(&["accum_vgpr_count"]),
            sgprs: sym_u32(&["sgpr_count"]),
            ..Dispatch::default()
        };
        if let (Some(w), Some(g)) = (dim3(info, &["workgroup_size"]), dim3(info, &["grid_size"])) {
            if w.iter().all(|x| *x > 0) {
                d.block = Some(w);
                d.grid = Some([g[0].div_ceil(w[0]), g[1].div_ceil(w[1]), g[2].div_ceil(w[2])]);
            }
        }
        d
    };

    let mut out: Vec<Dispatch> = Vec::new();
    let mut by_id: BTreeMap<u64, usize> = BTreeMap::new();
    for rec in jarray(tool, &["buffer_records", "kernel_dispatch"]) {
        let Some(info) = jget(rec, &["dispatch_info"]) else { continue };
        let mut d = dispatch_of(info, &symbols);
        d.start_ns = ju64(rec, &["start_timestamp"]);
        d.end_ns = ju64(rec, &["end_timestamp"]);
        d.duration_ns = duration(d.start_ns, d.end_ns);
        by_id.entry(d.id).or_insert(out.len());
        out.push(d);
    }
    let mut unnamed = 0usize;
    for rec in jarray(tool, &["callback_records", "counter_collection"]) {
        let Some(info) = jget(rec, &["dispatch_data", "dispatch_info"]) else { continue };
        let c = dispatch_of(info, &symbols);
        let idx = if let Some(&i) = by_id.get(&c.id) {
            i
        } else {
            by_id.insert(c.id, out.len());
            out.push(c.clone());
            out.len() - 1
        };
        let Some(d) = out.get_mut(idx) else { continue };
        if d.name != c.name {
            return Err(CounterError::at_field(
                path,
                0,
                "callback_records.counter_collection",
                format!(
                    "dispatch {} is `{}` here and `{}` in kernel_dispatch",
                    c.id, c.name, d.name
                ),
            ));
        }
        for r in jarray(rec, &["records"]) {
            let Some(v) = jf64(r, &["value"]) else { continue };
            let Some(name) = ju64(r, &["counter_id"]).and_then(|id| counter_names.get(&id)) else {
                unnamed += 1;
                continue;
            };
            *d.counters.entry(name.as_str().into()).or_insert(0.0) += v;
        }
    }
    if unnamed > 0 {
        set.source
            .notes
            .push(format!("{unnamed} counter records with an id missing from `counters`: skipped"));
    }
    set.dispatches = out;
    Ok(set)
}
