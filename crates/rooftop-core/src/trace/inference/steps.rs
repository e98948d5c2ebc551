//! Engine steps of inference traces: which annotation is a step, whether it is prefill,
//! decode or mixed, and its request and token counts.
//!
//! Formats read (as TraceLens's `TraceUtils/annotation_utils.py` documents them):
//! - vLLM: `execute_context_2(14721)_generation_0(0)` — prefill requests (their new
//!   tokens), decode requests (their tokens);
//! - vLLM, detailed: `execute_14721_context_2(sq14721sk14721sqsq108745533sqsk108745533)_generation_0(sq0sk0sqsq0sqsk0)`
//!   — per group the sums over requests of query length `sq`, key length `sk`, `sq²`
//!   and `sq·sk`;
//! - SGLang: `step[EXTEND bs=2 toks=14721]`, `step[DECODE bs=64]`, `step[MIXED bs=2]`,
//!   and the detailed form with `c_sq= c_sk= c_sqsq= c_sqsk= g_sq= g_sk= g_sqsq= g_sqsk=`.
//!
//! A step with prefill requests and decode requests is **mixed**; only prefill:
//! **prefill**; only decode: **decode**.

use serde::Serialize;

/// The phase of a step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    Prefill,
    Decode,
    Mixed,
    /// A step with no requests in it.
    Idle,
}

impl Phase {
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Prefill => "prefill",
            Phase::Decode => "decode",
            Phase::Mixed => "mixed",
            Phase::Idle => "idle",
        }
    }
}

/// Sums over one group of requests (prefill or decode) of a step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct Group {
    pub requests: u64,
    /// Σ query length: the tokens computed.
    pub sq: u64,
    /// Σ key length: the tokens attended to (context), when the annotation states it.
    pub sk: Option<u64>,
    pub sqsq: Option<u64>,
    pub sqsk: Option<u64>,
}

/// What a step annotation says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct StepInfo {
    /// `vllm`, `vllm_detailed`, `sglang`, `sglang_detailed`.
    pub format: &'static str,
    pub prefill: Group,
    pub decode: Group,
}

impl StepInfo {
    pub fn phase(&self) -> Phase {
        match (self.prefill.requests > 0, self.decode.requests > 0) {
            (true, true) => Phase::Mixed,
            (true, false) => Phase::Prefill,
            (false, true) => Phase::Decode,
            (false, false) => Phase::Idle,
        }
    }

    /// Whether the sums attention needs (`sk`, `sq²`, `sq·sk`) are stated.
    pub fn has_sums(&self) -> bool {
        self.prefill.sqsk.is_some() && self.decode.sqsk.is_some()
    }

    pub fn tokens(&self) -> u64 {
        self.prefill.sq + self.decode.sq
    }
}

/// Digits at the start of `s` and the rest.
fn digits(s: &str) -> Option<(u64, &str)> {
    let end = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    Some((s[..end].parse().ok()?, &s[end..]))
}

/// `sq1sk2sqsq3sqsk4` → the group's sums.
fn vllm_sums(s: &str, requests: u64) -> Option<Group> {
    let (sq, r) = digits(s.strip_prefix("sq")?)?;
    let (sk, r) = digits(r.strip_prefix("sk")?)?;
    let (sqsq, r) = digits(r.strip_prefix("sqsq")?)?;
    let (sqsk, r) = digits(r.strip_prefix("sqsk")?)?;
    r.is_empty().then_some(Group { requests, sq, sk: Some(sk), sqsq: Some(sqsq), sqsk: Some(sqsk) })
}

fn parse_vllm(name: &str) -> Option<StepInfo> {
    let rest = name.strip_prefix("execute_")?;
    if let Some(r) = rest.strip_prefix("context_") {
        // execute_context_A(B)_generation_C(D)
        let (ctx, r) = digits(r)?;
        let (ctx_tok, r) = digits(r.strip_prefix('(')?)?;
        let r = r.strip_prefix(")_generation_")?;
        let (gen, r) = digits(r)?;
        let (gen_tok, r) = digits(r.strip_prefix('(')?)?;
        if r != ")" {
            return None;
        }
        return Some(StepInfo {
            format: "vllm",
            prefill: Group { requests: ctx, sq: ctx_tok, ..Group::default() },
            decode: Group { requests: gen, sq: gen_tok, ..Group::default() },
        });
    }
    // execute_N_context_A(sums)_generation_C(sums)
    let (_, r) = digits(rest)?;
    let r = r.strip_prefix("_context_")?;
    let (ctx, r) = digits(r)?;
    let r = r.strip_prefix('(')?;
    let close = r.find(')')?;
    let prefill = vllm_sums(&r[..close], ctx)?;
    let r = r[close..].strip_prefix(")_generation_")?;
    let (gen, r) = digits(r)?;
    let r = r.strip_prefix('(')?;
    let decode = vllm_sums(r.strip_suffix(')')?, gen)?;
    Some(StepInfo { format: "vllm_detailed", prefill, decode })
}

fn parse_sglang(name: &str) -> Option<StepInfo> {
    let body = name.strip_prefix("step[")?.strip_suffix(']')?;
    let mut words = body.split_whitespace();
    let mode = words.next()?;
    let mut kv = std::collections::HashMap::new();
    for w in words {
        let (k, v) = w.split_once('=')?;
        kv.insert(k, v.parse::<u64>().ok()?);
    }
    let get = |k: &str| kv.get(k).copied();
    let bs = get("bs")?;
    let detailed = get("c_sqsk").is_some() || get("g_sqsk").is_some();
    // A sum the detailed form leaves out is 0 only for a group without requests; for one
    // with requests it is not stated (`None`), never 0.
    let group = |p: &str, requests: u64, sq_default: u64| {
        let sum = |k: &str| {
            let v = get(&format!("{p}_{k}"));
            if detailed && requests == 0 {
                Some(v.unwrap_or(0))
            } else {
                v.filter(|_| detailed)
            }
        };
        Group {
            requests,
            sq: get(&format!("{p}_sq")).unwrap_or(sq_default),
            sk: sum("sk"),
            sqsq: sum("sqsq"),
            sqsk: sum("sqsk"),
        }
    };
    let (prefill, decode) = match mode {
        "DECODE" => (group("c", 0, 0), group("g", bs, bs)),
        "EXTEND" => (group("c", bs, get("toks").unwrap_or(0)), group("g", 0, 0)),
        "MIXED" => (group("c", get("c").unwrap_or(0), 0), group("g", get("g").unwrap_or(0), 0)),
        _ => return None,
    };
    Some(StepInfo { format: if detailed { "sglang_detailed" } else { "sglang" }, prefill, decode })
}

/// The step an annotation names, if it is one.
pub fn parse_step(name: &str) -> Option<StepInfo> {
    parse_vllm(name).or_else(|| parse_sglang(name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vllm_forms() {
        let s = parse_step("execute_context_2(14721)_generation_0(0)").unwrap();
        assert_eq!(s.phase(), Phase::Prefill);
        assert_eq!((s.prefill.requests, s.prefill.sq, s.tokens()), (2, 14721, 14721));
        assert!(!s.has_sums());
        let s = parse_step(
            "execute_6147_context_2(sq6144sk7144sqsq20971520sqsk23019520)_generation_3(sq3sk6144sqsq3sqsk6144)",
        )
        .unwrap();
        assert_eq!(s.phase(), Phase::Mixed);
        assert_eq!(s.prefill.sqsk, Some(23_019_520));
        assert_eq!(
            s.decode,
            Group { requests: 3, sq: 3, sk: Some(6144), sqsq: Some(3), sqsk: Some(6144) }
        );
        assert!(s.has_sums());
        assert_eq!(parse_step("execute_context_2(14721)_generation_0(0"), None);
        assert_eq!(parse_step("ProfilerStep#3"), None);
    }

    #[test]
    fn sglang_forms() {
        let s = parse_step("step[DECODE bs=64]").unwrap();
        assert_eq!((s.phase(), s.decode.requests, s.decode.sq), (Phase::Decode, 64, 64));
        let s = parse_step("step[EXTEND bs=2 toks=14721]").unwrap();
        assert_eq!((s.phase(), s.prefill.sq), (Phase::Prefill, 14721));
        let s =
            parse_step("step[DECODE bs=64 g_sq=128 g_sqsq=256 g_sqsk=262144 g_sk=131072]").unwrap();
        assert_eq!(s.format, "sglang_detailed");
        assert_eq!((s.decode.sq, s.decode.sk, s.decode.sqsk), (128, Some(131_072), Some(262_144)));
        let s = parse_step("step[MIXED bs=2 c=1 g=1 c_sq=5 c_sk=8 c_sqsq=25 c_sqsk=40 g_sq=1 g_sk=12 g_sqsq=1 g_sqsk=12]").unwrap();
        assert_eq!(s.phase(), Phase::Mixed);
        assert_eq!(s.prefill.sqsk, Some(40));
        assert_eq!(parse_step("step[WHAT bs=1]"), None);
    }
}
