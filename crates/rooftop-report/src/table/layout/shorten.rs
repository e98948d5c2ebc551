//! Shortening names to a column's width while keeping what tells them apart.
//!
//! Kernel and op names are long (`void at::native::vectorized_elementwise_kernel<4,
//! at::native::CUDAFunctor_add<float>, …>(int, …)`, Tensile's
//! `Cijk_Alik_Bljk_BBS_BH_MT256x64x64_MI32x32x8x1_…`, ClimaCore's
//! `set_microphysics_tendency_cache__FILE_…_L924`), and their beginnings are shared: a
//! `prefix…` cut makes rows that cannot be told apart. A name that does not fit is
//! shortened in steps, each kept only while the name is still too long:
//! 1. the `void ` return type and `(anonymous namespace)::` go;
//! 2. namespaces inside template arguments and parameter lists go (`at::native::`);
//! 3. `, ` inside brackets becomes `,`;
//! 4. a parameter list after a template argument list (or a long one) becomes `(…)`;
//! 5. the middle is elided, keeping a head and the distinguishing parts: tile shapes
//!    (`MT256x64x64`, `64x256x128`), a source-line suffix (`_L924`) or trailing number.
//!
//! Numbers are never cut: a head stops before a number it would split.
//! [`shorten_all`] shortens a column's names together: names that would come out equal
//! are shown from where they differ. The full names stay in JSON, CSV and HTML.

/// The shortening mark.
pub const ELLIPSIS: char = '…';

fn len(s: &str) -> usize {
    s.chars().count()
}

/// The tokens of a line: runs separated by blanks, except blanks inside brackets that
/// open a value (`op_shape=(8832, 2880)`, `input_types=(long int, Scalar)`, a template
/// argument list `kernel<4, float>`), and blanks after a comma inside a bracket that
/// holds no other blank so far; so a list (`((1, 2), (3,))`) stays one token while a
/// parenthesised remark in prose (`(40-core GPU, 16-core CPU)`) still wraps at its
/// blanks.
pub(crate) fn tokens(line: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut depth = 0usize;
    // Depth of the outermost bracket that opens a value (0: none open).
    let mut value_depth = 0usize;
    // A blank not after a comma inside the open brackets: prose, not a list.
    let mut prose = false;
    let mut start: Option<usize> = None;
    let mut prev = ' ';
    for (i, c) in line.char_indices() {
        match c {
            '(' | '[' | '<' | '{' => {
                depth += 1;
                if value_depth == 0 && prev != ' ' {
                    value_depth = depth;
                }
            }
            ')' | ']' | '>' | '}' => {
                if depth == value_depth {
                    value_depth = 0;
                }
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    prose = false;
                }
            }
            ' ' if depth > 0 && value_depth == 0 && prev != ',' => prose = true,
            _ => {}
        }
        let glued = value_depth > 0 || (depth > 0 && prev == ',' && !prose);
        prev = c;
        if c == ' ' && !glued {
            if let Some(s) = start.take() {
                out.push(&line[s..i]);
            }
        } else if start.is_none() && c != ' ' {
            start = Some(i);
        }
    }
    if let Some(s) = start {
        out.push(&line[s..]);
    }
    // A bracket left open would swallow the rest of the line: fall back to blanks.
    if depth > 0 {
        return line.split(' ').filter(|t| !t.is_empty()).collect();
    }
    out
}

/// A token cut after the commas of its bracketed lists (`dtypes=(BFloat16,` and
/// `BFloat16)`), for wrapping a list too long for its column without cutting any item.
///
/// `outer_only`: only between the items of the outermost list (an inner list stays
/// whole); else after every comma inside brackets. The blank after a comma goes.
pub(crate) fn list_pieces(tok: &str, outer_only: bool) -> Vec<&str> {
    let mut out = Vec::new();
    let mut depth = 0usize;
    let mut start = 0;
    let b = tok.as_bytes();
    for (i, c) in tok.char_indices() {
        match c {
            '(' | '[' | '<' | '{' => depth += 1,
            ')' | ']' | '>' | '}' => depth = depth.saturating_sub(1),
            ',' if depth > 0 && (depth == 1 || !outer_only) => {
                out.push(&tok[start..=i]);
                start = if b.get(i + 1) == Some(&b' ') { i + 2 } else { i + 1 };
            }
            _ => {}
        }
    }
    if start < tok.len() {
        out.push(&tok[start..]);
    }
    out
}

/// `s` itself when it fits `width` characters, else shortened per the module docs.
pub fn shorten(s: &str, width: usize) -> String {
    let width = width.max(1);
    if len(s) <= width {
        return s.to_string();
    }
    let mut t = s.trim().to_string();
    for step in [strip_prefixes, strip_nested_namespaces, compact_lists, elide_parameters] {
        t = step(&t);
        if len(&t) <= width {
            return t;
        }
    }
    match template(&t, width) {
        Some(x) => x,
        None => elide(&t, width),
    }
}

/// Step 5 for a C++ template name `ns::base<args>…`: the base (without its namespaces)
/// cut to about two fifths of the width, then the argument list, which is what tells
/// instances apart.
fn template(s: &str, width: usize) -> Option<String> {
    let lt = s.find('<')?;
    let base = s[..lt].rsplit("::").next().unwrap_or(&s[..lt]);
    if base.is_empty() || base.contains(' ') || width < 16 {
        return None;
    }
    let args = &s[lt..];
    let room = (width * 2 / 5).max(8);
    let base = if len(base) > room {
        format!("{}{ELLIPSIS}", head(base, room - 1))
    } else {
        base.to_string()
    };
    let rest = width.saturating_sub(len(&base));
    let args = if len(args) > rest {
        format!("{}{ELLIPSIS}", head(args, rest.saturating_sub(1)))
    } else {
        args.to_string()
    };
    Some(format!("{base}{args}"))
}

/// Step 1: the return type `void ` and anonymous namespaces.
fn strip_prefixes(s: &str) -> String {
    let s = s.strip_prefix("void ").unwrap_or(s);
    s.replace("(anonymous namespace)::", "")
}

/// Step 2: `ns::` qualifiers inside brackets (the outermost name keeps its own).
fn strip_nested_namespaces(s: &str) -> String {
    let chars: Vec<char> = s.chars().collect();
    let mut out = String::with_capacity(s.len());
    let mut depth = 0usize;
    let mut i = 0;
    // Whether the last identifier was a dropped `ns::` (the next one continues the chain).
    let mut chain = false;
    while i < chars.len() {
        let c = chars[i];
        match c {
            '(' | '[' | '<' | '{' => depth += 1,
            ')' | ']' | '>' | '}' => depth = depth.saturating_sub(1),
            _ => {}
        }
        if depth > 0 && (c.is_alphanumeric() || c == '_') {
            // An identifier: drop it when `::` follows.
            let start = i;
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            let prev = if start == 0 { ' ' } else { chars[start - 1] };
            let starts_word = !(prev.is_alphanumeric() || prev == '_' || prev == ':') || chain;
            if starts_word && chars.get(i) == Some(&':') && chars.get(i + 1) == Some(&':') {
                i += 2;
                chain = true;
            } else {
                out.extend(&chars[start..i]);
                chain = false;
            }
            continue;
        }
        chain = false;
        out.push(c);
        i += 1;
    }
    out
}

/// Step 3: `, ` → `,` inside brackets.
pub(crate) fn compact_lists(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut depth = 0usize;
    let mut prev = ' ';
    for c in s.chars() {
        match c {
            '(' | '[' | '<' | '{' => depth += 1,
            ')' | ']' | '>' | '}' => depth = depth.saturating_sub(1),
            _ => {}
        }
        if !(c == ' ' && depth > 0 && prev == ',') {
            out.push(c);
        }
        prev = c;
    }
    out
}

/// Step 4: the trailing parameter list `(…)` of a function name (not a leading group,
/// and not a shape such as `op_shape=(8, 2)`, which is what tells rows apart).
fn elide_parameters(s: &str) -> String {
    if !s.ends_with(')') {
        return s.to_string();
    }
    let mut depth = 0usize;
    let mut open = None;
    for (i, c) in s.char_indices().rev() {
        match c {
            ')' => depth += 1,
            '(' => {
                depth -= 1;
                if depth == 0 {
                    open = Some(i);
                    break;
                }
            }
            _ => {}
        }
    }
    let Some(o) = open.filter(|&o| o > 0) else { return s.to_string() };
    let before = &s[..o];
    // A function's parameters follow its name or template list, not `=`.
    let function =
        before.ends_with('>') || before.ends_with(|c: char| c.is_alphanumeric() || c == '_');
    if !function || before.ends_with('=') || len(&s[o..]) <= 5 {
        return s.to_string();
    }
    format!("{before}({ELLIPSIS})")
}

/// Whether a word (a run of letters, digits and `_`-free characters) is a tile or shape:
/// digits, `x`, digits (`256x64x64`, `MT64x32x32`, `s64x256x32gemm`).
fn is_tile(word: &str) -> bool {
    let b = word.as_bytes();
    (1..b.len().saturating_sub(1))
        .any(|i| b[i] == b'x' && b[i - 1].is_ascii_digit() && b[i + 1].is_ascii_digit())
}

/// A trailing source-line or instance suffix: `L924`, or a number.
fn is_line_suffix(word: &str) -> bool {
    let w = word.strip_prefix('L').unwrap_or(word);
    !w.is_empty() && w.bytes().all(|b| b.is_ascii_digit())
}

/// The words of `s` (runs of ASCII letters and digits) with their byte ranges.
fn words(s: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut start = None;
    for (i, c) in s.char_indices() {
        if c.is_ascii_alphanumeric() {
            start.get_or_insert(i);
        } else if let Some(st) = start.take() {
            out.push((st, i));
        }
    }
    if let Some(st) = start {
        out.push((st, s.len()));
    }
    out
}

/// The first `n` characters of `s`, backed off so that no number is split.
fn head(s: &str, n: usize) -> String {
    let chars: Vec<char> = s.chars().collect();
    let mut k = n.min(chars.len());
    if k < chars.len() && k > 0 && chars[k].is_ascii_digit() && chars[k - 1].is_ascii_digit() {
        let mut j = k;
        while j > 0 && chars[j - 1].is_ascii_digit() {
            j -= 1;
        }
        // A head of only a number keeps it cut rather than empty.
        if j > 0 {
            k = j;
        }
    }
    chars[..k].iter().collect()
}

/// Step 5: `head…keys`, the keys being the tiles and the trailing line suffix.
fn elide(s: &str, width: usize) -> String {
    if width <= 1 {
        return ELLIPSIS.to_string();
    }
    let ws = words(s);
    let mut keys: Vec<(usize, usize)> = Vec::new();
    // The trailing suffix first (it is what ClimaCore and XLA names differ by), then the
    // tiles, in order, while at least a third of the width (up to 12) is left for the head.
    let min_head = (width / 3).clamp(1, 12);
    let budget = width.saturating_sub(1 + min_head);
    let mut used = 0;
    let mut take = |r: (usize, usize), keys: &mut Vec<(usize, usize)>| {
        // Keys after the first are joined by one separator.
        let cost = len(&s[r.0..r.1]) + usize::from(!keys.is_empty());
        if used + cost <= budget && !keys.contains(&r) {
            keys.push(r);
            used += cost;
        }
    };
    if let Some(&last) = ws.last() {
        if last.1 == s.len() && is_line_suffix(&s[last.0..last.1]) && ws.len() > 1 {
            take(last, &mut keys);
        }
    }
    for &w in &ws {
        if is_tile(&s[w.0..w.1]) {
            take(w, &mut keys);
        }
    }
    keys.sort_unstable();
    let mut tail = String::new();
    for (k, &(a, b)) in keys.iter().enumerate() {
        if k > 0 {
            // The separator the name had before this key (`_` in Tensile names).
            tail.push(s[..a].chars().next_back().unwrap_or('_'));
        }
        tail.push_str(&s[a..b]);
    }
    // The head stops before the first key, so that no key is shown twice.
    let first_key = keys.first().map_or(usize::MAX, |k| len(&s[..k.0]));
    let room = (width - 1 - len(&tail)).min(first_key);
    let h = head(s, room);
    format!("{h}{ELLIPSIS}{tail}")
}

/// A column's names shortened together to `width`: like [`shorten`], and names that
/// would come out equal (`set_microphysics_ten…` six times) are shown from where they
/// differ. Names still equal after that are equal in every shown character; the caller
/// numbers them.
pub fn shorten_all(names: &[&str], width: usize) -> Vec<String> {
    let mut out: Vec<String> = names.iter().map(|n| shorten(n, width)).collect();
    let n = names.len();
    for i in 0..n {
        let clash: Vec<usize> =
            (0..n).filter(|&j| out[j] == out[i] && names[j] != names[i]).collect();
        if clash.is_empty() {
            continue;
        }
        let mut group = clash;
        group.push(i);
        let full: Vec<String> =
            group.iter().map(|&j| compact_lists(&strip_prefixes(names[j]))).collect();
        for (k, &j) in group.iter().enumerate() {
            out[j] = distinct(&full[k], &full, width);
        }
    }
    out
}

/// `s` shown from where it differs from the other names of its group.
fn distinct(s: &str, group: &[String], width: usize) -> String {
    if len(s) <= width {
        return s.to_string();
    }
    let chars: Vec<char> = s.chars().collect();
    // The first character where some other name differs.
    let common = group
        .iter()
        .filter(|g| g.as_str() != s)
        .map(|g| g.chars().zip(&chars).take_while(|(a, b)| a == *b).count())
        .max()
        .unwrap_or(0);
    // Back to the start of the word that differs.
    let mut at = common.min(chars.len());
    while at > 0 && chars[at - 1].is_ascii_alphanumeric() {
        at -= 1;
    }
    let lead = (width / 3).clamp(1, 12);
    if at <= lead {
        return elide(s, width);
    }
    let rest: String = chars[at..].iter().collect();
    let room = width.saturating_sub(lead + 1);
    let window = if len(&rest) <= room { rest } else { shorten(&rest, room) };
    format!("{}{ELLIPSIS}{window}", head(s, width - 1 - len(&window)))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A remark in prose wraps at its blanks; a list keeps its items together.
    #[test]
    fn prose_in_parentheses_is_not_a_list() {
        assert_eq!(
            tokens("Apple M3 Max (40-core GPU, 16-core CPU)"),
            vec!["Apple", "M3", "Max", "(40-core", "GPU,", "16-core", "CPU)"]
        );
        assert_eq!(tokens("shape ((1, 2), (3,)) here"), vec!["shape", "((1, 2), (3,))", "here"]);
    }

    #[test]
    fn brackets_keep_their_blanks() {
        assert_eq!(
            tokens("op_shape=(1, 141, 512) dtypes=(BFloat16, None)"),
            ["op_shape=(1, 141, 512)", "dtypes=(BFloat16, None)"]
        );
        assert_eq!(tokens("rank 0 (rank0_trace.json)"), ["rank", "0", "(rank0_trace.json)"]);
        // An unbalanced bracket does not swallow the line.
        assert_eq!(tokens("a (b c"), ["a", "(b", "c"]);
        // A value's list keeps all its blanks; a remark in prose wraps.
        assert_eq!(
            tokens("input_types=(long int, Scalar) x"),
            ["input_types=(long int, Scalar)", "x"]
        );
        assert_eq!(
            tokens("idle (HTA's categories, per device)"),
            ["idle", "(HTA's", "categories,", "per", "device)"]
        );
        assert_eq!(
            list_pieces("input_dims=[[1, 141], []]", true),
            ["input_dims=[[1, 141],", "[]]"]
        );
        assert_eq!(
            list_pieces("input_dims=[[1,141],[]]", false),
            ["input_dims=[[1,", "141],", "[]]"]
        );
    }

    #[test]
    fn fits_untouched_and_prefix_when_nothing_distinguishes() {
        assert_eq!(shorten("softmax-online", 14), "softmax-online");
        assert_eq!(shorten("vllm::unified_attention_with_output", 10), "vllm::uni…");
    }

    #[test]
    fn templates_lose_namespaces_and_parameters_first() {
        let n = "void at::native::vectorized_elementwise_kernel<4, \
                 at::native::CUDAFunctor_add<float>, at::detail::Array<char*, 3> >(int, \
                 at::native::CUDAFunctor_add<float>, at::detail::Array<char*, 3>)";
        let s = shorten(n, 90);
        assert!(s.len() <= 90 * 4 && s.chars().count() <= 90, "{s}");
        assert!(s.contains("CUDAFunctor_add<float>") && s.ends_with("(…)"), "{s}");
        assert!(!s.contains("void ") && !s.contains("at::detail::"), "{s}");
    }

    #[test]
    fn gemm_tiles_and_line_suffixes_survive() {
        let tensile = "Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT256x64x64_MI32x32x8x1_SN_1LDSB1_AFC1_AFEM1_AFEM1_ASEM1_CLR1_CADS0_EPS0_GRVWA8_GRVWB8_GSUAMB_IU1_K1_LBSPPA2048_LBSPPB128_LPA16_LPB16_LPM0_LRVW16_LWPMn1_MIAV0_MIWT4_2_MO40_NTn1_NTA0_NTB0_NTC0_NTD0_NEPBS0_NLCA1_NLCB1_ONLL1_PGR2_PLR1_PKA1_SIA3_SS1_SPO0_SRVW0_SSO0_SVW4_SK0_SKXCCM0_TLDS1_ULSGRO0_USL1_UIOFGRO0_USFGROn1_VSn1_VWA4_VWB1_WSGRA0_WSGRB0_WS64_WG64_4_1_WGM8";
        let s = shorten(tensile, 40);
        assert_eq!(s.chars().count(), 40, "{s}");
        assert!(s.starts_with("Cijk_Alik") && s.contains("MT256x64x64"), "{s}");
        let cutlass = "cutlass3x_sm100_tensorop_s64x256x32gemm_f8_f8_f32_f16_f16_64x256x128_1x1x1_0_tnn_align4_1sm_bias_f16_relu_aux_scalemax";
        let s = shorten(cutlass, 60);
        assert_eq!(s.matches("s64x256x32gemm").count(), 1, "{s}");
        assert!(s.contains("64x256x128") && s.starts_with("cutlass3x_sm100"), "{s}");
        let clima = "set_microphysics_tendency_cache__FILE_ClimaAtmos_jl_src_cache_jl_L924";
        let s = shorten(clima, 30);
        assert!(s.starts_with("set_microphysics") && s.ends_with("…L924"), "{s}");
        assert_eq!(s.chars().count(), 30);
    }

    #[test]
    fn numbers_are_never_cut() {
        // The head stops before `8832` rather than showing `88…`.
        let s = shorten("op_shape=(8832, 2880) and more text", 14);
        assert!(!s.contains("88…") && !s.contains("883"), "{s}");
        assert!(s.chars().count() <= 14, "{s}");
    }

    #[test]
    fn a_column_of_names_stays_distinguishable() {
        let names = [
            "set_microphysics_tendency_cache__FILE_ClimaAtmos_jl_src_parameterized_tendencies_microphysics_cache_jl_L924",
            "set_microphysics_tendency_cache__FILE_ClimaAtmos_jl_src_parameterized_tendencies_microphysics_cache_jl_L1012",
            "set_microphysics_tendency_cache__FILE_ClimaAtmos_jl_src_parameterized_tendencies_other_cache_jl_L924",
        ];
        let out = shorten_all(&names, 24);
        for (o, n) in out.iter().zip(names) {
            assert!(o.chars().count() <= 24, "{o}");
            assert!(o.contains('…'), "{o} for {n}");
        }
        assert_ne!(out[0], out[1]);
        assert_ne!(out[0], out[2]);
        assert_ne!(out[1], out[2]);
        let fns = [
            "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, at::detail::Array<char*, 1> >(int, at::native::FillFunctor<float>, at::detail::Array<char*, 1>)",
            "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, at::detail::Array<char*, 3> >(int, at::native::CUDAFunctor_add<float>, at::detail::Array<char*, 3>)",
        ];
        let out = shorten_all(&fns, 36);
        assert!(out[0].contains("FillFunctor"), "{out:?}");
        assert!(out[1].contains("CUDAFunctor"), "{out:?}");
    }
}
