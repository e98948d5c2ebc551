//! Hand-written matchers for the name fields a common trace parses on every run (Tensile's
//! problem-type prefix and `MT`/`GSU`/`SK`/`WG`/`ISA` parameters, MIOpen's `bt` tile), so
//! that reading such a trace compiles no regex (compiling the seven took ~10 M
//! instructions, as much as analysing 100,000 events).
//!
//! Invariant: on ASCII text each matcher finds exactly what its regex (named on it) finds:
//! the leftmost match, and in it the same groups. The regexes' `\d`, `\w` and
//! `[^A-Za-z0-9]` are Unicode-aware, so callers use the regex for text that is not ASCII.
//! The tests compare both on mutations of real names.

/// Number of ASCII digits at `b[at..]`.
fn digits(b: &[u8], at: usize) -> usize {
    b.get(at..).map_or(0, |t| t.iter().take_while(|c| c.is_ascii_digit()).count())
}

/// Number of bytes at `b[at..]` that satisfy `f`.
fn run(b: &[u8], at: usize, f: impl Fn(u8) -> bool) -> usize {
    b.get(at..).map_or(0, |t| t.iter().take_while(|&&c| f(c)).count())
}

/// `\d+{sep}\d+{sep}\d+` at `b[at..]`: the end of the match (digit runs are maximal, so
/// the regex's backtracking has no other choice).
fn triple(b: &[u8], at: usize, sep: u8) -> Option<usize> {
    let mut p = at;
    for i in 0..3 {
        let n = digits(b, p);
        if n == 0 {
            return None;
        }
        p += n;
        if i < 2 {
            if b.get(p) != Some(&sep) {
                return None;
            }
            p += 1;
        }
    }
    Some(p)
}

/// Whether a field may end at `b[p]`: `(?:_|$)`.
fn field_end(b: &[u8], p: usize) -> bool {
    matches!(b.get(p), None | Some(b'_'))
}

/// `{key}{body}(?:_|$)`, leftmost: the body's text. `body` gives the end of its match at
/// `at` (the only one the regex can take there).
fn field<'a>(
    s: &'a str,
    key: &str,
    body: impl Fn(&[u8], usize) -> Option<usize>,
) -> Option<&'a str> {
    let b = s.as_bytes();
    // The keys start with `_` and hold no other `_`: occurrences cannot overlap.
    s.match_indices(key).find_map(|(i, _)| {
        let from = i + key.len();
        let end = body(b, from)?;
        field_end(b, end).then(|| s.get(from..end)).flatten()
    })
}

/// `_MT(\d+)x(\d+)x(\d+)(?:_|$)`: M, N and K as written.
pub(super) fn tensile_mt(s: &str) -> Option<[&str; 3]> {
    let t = field(s, "_MT", |b, at| triple(b, at, b'x'))?;
    let mut it = t.split('x');
    Some([it.next()?, it.next()?, it.next()?])
}

/// `_GSU(n?\d+)(?:_|$)`.
pub(super) fn tensile_gsu(s: &str) -> Option<&str> {
    field(s, "_GSU", |b, at| {
        let p = at + usize::from(b.get(at) == Some(&b'n'));
        let n = digits(b, p);
        (n > 0).then_some(p + n)
    })
}

/// `_SK(\d+)(?:_|$)`.
pub(super) fn tensile_sk(s: &str) -> Option<&str> {
    field(s, "_SK", |b, at| {
        let n = digits(b, at);
        (n > 0).then_some(at + n)
    })
}

/// `_WG(\d+)_(\d+)_(\d+)(?:_|$)`: x, y and z as written.
pub(super) fn tensile_wg(s: &str) -> Option<[&str; 3]> {
    let t = field(s, "_WG", |b, at| triple(b, at, b'_'))?;
    let mut it = t.split('_');
    Some([it.next()?, it.next()?, it.next()?])
}

/// `_ISA(\d{2,4}[a-z]?)(?:_|$)`. A longer digit run, or a letter not followed by the
/// end of the field, leaves the regex nothing to backtrack to.
pub(super) fn tensile_isa(s: &str) -> Option<&str> {
    field(s, "_ISA", |b, at| {
        let n = digits(b, at);
        if !(2..=4).contains(&n) {
            return None;
        }
        let p = at + n;
        Some(p + usize::from(b.get(p).is_some_and(u8::is_ascii_lowercase)))
    })
}

/// Tensile's problem-type prefix
/// `(?:^|[^A-Za-z0-9])C([a-z]{2,4})_A([a-zA-Z]{2,5})_B([a-zA-Z]{2,5})_`: the end of the
/// match and the A and B index strings.
pub(super) fn tensile_prefix(s: &str) -> Option<(usize, &str, &str)> {
    let b = s.as_bytes();
    // Each counted run is followed by `_`, which it cannot contain: only the maximal run
    // can match, so the first `C` whose runs fit is the leftmost match.
    let letters = |at: usize, lo: usize, hi: usize, alpha: fn(&u8) -> bool| {
        let n = run(b, at, |c| alpha(&c));
        ((lo..=hi).contains(&n) && b.get(at + n) == Some(&b'_')).then_some(at + n)
    };
    s.match_indices('C').find_map(|(i, _)| {
        if i > 0 && b[i - 1].is_ascii_alphanumeric() {
            return None;
        }
        let c_end = letters(i + 1, 2, 4, u8::is_ascii_lowercase)?;
        if b.get(c_end + 1) != Some(&b'A') {
            return None;
        }
        let a_start = c_end + 2;
        let a_end = letters(a_start, 2, 5, u8::is_ascii_alphabetic)?;
        if b.get(a_end + 1) != Some(&b'B') {
            return None;
        }
        let b_start = a_end + 2;
        let b_end = letters(b_start, 2, 5, u8::is_ascii_alphabetic)?;
        Some((b_end + 1, s.get(a_start..a_end)?, s.get(b_start..b_end)?))
    })
}

/// MIOpen's `^igemm_(fwd|bwd|wrw)_\w*?_bt(\d+)x(\d+)x(\d+)(?:_|$)`: the direction and
/// the tile as written.
pub(super) fn igemm(s: &str) -> Option<(&str, [&str; 3])> {
    let dir = s.strip_prefix("igemm_")?.get(..3)?;
    if !matches!(dir, "fwd" | "bwd" | "wrw") || s.as_bytes().get(9) != Some(&b'_') {
        return None;
    }
    let b = s.as_bytes();
    let from = 10;
    // `\w*?` is lazy: the first `_bt` after `from` that completes the match, as long as
    // only word characters come before it.
    let word = |c: &u8| c.is_ascii_alphanumeric() || *c == b'_';
    let mut at = from;
    while let Some(j) = s.get(at..)?.find("_bt").map(|j| j + at) {
        if !b[from..j].iter().all(word) {
            return None;
        }
        if let Some(end) = triple(b, j + 3, b'x').filter(|&e| field_end(b, e)) {
            let mut it = s.get(j + 3..end)?.split('x');
            return Some((dir, [it.next()?, it.next()?, it.next()?]));
        }
        at = j + 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use regex::Regex;

    /// Real names of the families (tests of `tensile.rs` and `igemm.rs`, the MI300 fixture).
    const NAMES: &[&str] = &[
        "Cijk_Alik_Bljk_B_BS_BH_Bias_HA_S_SAV_UserArgs_MT64x32x128_MI16x16x1_SN_LDSB1_GRVWA8_GSUAMB_GLS0_ISA942_IU1_K1_SK0_SKXCCM0_WS64_WG32_8_1",
        "Custom_Cijk_Ailk_Bljk_HHS_BH_MT256x256x64_MI32x32x8x1_SE_K1_GSU4_ISA90a_WG64_4_1_SK3",
        "Cijk_Ailk_Bjlk_SB_MT128x128x16_SN_1LDSB0_GSUn1_ISA1100_WG16_16_1_",
        "igemm_fwd_gtcx3_nhwc_bf16_bx0_ex1_bt64x64x16_wt16x16x4_ws1x1_wr2x2_ta1x1x4x1_1x16x1x16_me",
        "igemm_bwd__bt32x16x8",
        "igemm_wrw_gtc_bt1x2_bt4x5x6",
    ];
    /// Bytes that change which branch a matcher takes.
    const BYTES: &[u8] = b"_x0912nCABabMTGSUKWISztn- ";

    fn regex(p: &str) -> Regex {
        Regex::new(p).expect("test regex")
    }

    fn groups<'a>(re: &Regex, s: &'a str, names: &[&str]) -> Option<Vec<&'a str>> {
        let c = re.captures(s)?;
        Some(names.iter().map(|n| c.name(n).map_or("", |m| m.as_str())).collect())
    }

    /// Every name, and every name with one byte replaced by each of `BYTES` or removed.
    fn mutants() -> Vec<String> {
        let mut out = Vec::new();
        for name in NAMES {
            out.push((*name).to_string());
            for i in 0..name.len() {
                let mut cut = name.as_bytes().to_vec();
                cut.remove(i);
                out.push(String::from_utf8(cut).expect("ascii"));
                for &c in BYTES {
                    let mut m = name.as_bytes().to_vec();
                    m[i] = c;
                    out.push(String::from_utf8(m).expect("ascii"));
                }
            }
        }
        out
    }

    #[test]
    fn matchers_agree_with_their_regexes_on_mutated_names() {
        let mt = regex(r"_MT(?P<m>[0-9]+)x(?P<n>[0-9]+)x(?P<k>[0-9]+)(?:_|$)");
        let gsu = regex(r"_GSU(?P<v>n?[0-9]+)(?:_|$)");
        let sk = regex(r"_SK(?P<v>[0-9]+)(?:_|$)");
        let wg = regex(r"_WG(?P<x>[0-9]+)_(?P<y>[0-9]+)_(?P<z>[0-9]+)(?:_|$)");
        let isa = regex(r"_ISA(?P<v>[0-9]{2,4}[a-z]?)(?:_|$)");
        let prefix = regex(
            r"(?:^|[^A-Za-z0-9])C(?P<c>[a-z]{2,4})_A(?P<a>[a-zA-Z]{2,5})_B(?P<b>[a-zA-Z]{2,5})_",
        );
        let ig = regex(
            r"^igemm_(?P<dir>fwd|bwd|wrw)_[0-9A-Za-z_]*?_bt(?P<m>[0-9]+)x(?P<n>[0-9]+)x(?P<k>[0-9]+)(?:_|$)",
        );
        let all = mutants();
        assert!(all.len() > 10_000, "{} mutants", all.len());
        let (mut hits, mut misses) = (0, 0);
        for s in &all {
            let s = s.as_str();
            assert_eq!(tensile_mt(s).map(Vec::from), groups(&mt, s, &["m", "n", "k"]), "{s}");
            assert_eq!(tensile_gsu(s).map(|v| vec![v]), groups(&gsu, s, &["v"]), "{s}");
            assert_eq!(tensile_sk(s).map(|v| vec![v]), groups(&sk, s, &["v"]), "{s}");
            assert_eq!(tensile_wg(s).map(Vec::from), groups(&wg, s, &["x", "y", "z"]), "{s}");
            assert_eq!(tensile_isa(s).map(|v| vec![v]), groups(&isa, s, &["v"]), "{s}");
            let want = prefix.captures(s).map(|c| {
                let g = |n| c.name(n).map_or("", |m| m.as_str());
                (c.get(0).map_or(0, |m| m.end()), g("a"), g("b"))
            });
            assert_eq!(tensile_prefix(s), want, "{s}");
            let want = groups(&ig, s, &["dir", "m", "n", "k"]);
            let got = igemm(s).map(|(d, [m, n, k])| vec![d, m, n, k]);
            assert_eq!(got, want, "{s}");
            if want.is_some() {
                hits += 1;
            } else {
                misses += 1;
            }
        }
        // The mutants exercise both outcomes of the lazy `_bt` search.
        assert!(hits > 100 && misses > 100, "igemm: {hits} matches, {misses} misses");
    }
}
