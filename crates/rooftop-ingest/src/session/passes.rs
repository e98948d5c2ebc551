//! Splitting AMD counters into hardware passes.
//!
//! Each hardware block of a gfx9 GPU (MI100–MI300) has a fixed number of counter
//! registers; rocprof refuses a pass that asks one block for more. The limits used here
//! are conservative figures from rocprofiler's per-block limits (`rocprofv3
//! --list-avail`): the SQ has 8 registers, the TCC, TCP, TA and TD 4, GRBM 2. Derived
//! metrics (FETCH_SIZE, WRITE_SIZE) expand to TCC counters, so each takes 2 TCC slots.
//! A name of no known block gets a pass of its own.

/// The hardware block of `counter` and the slots it takes there.
fn block_of(counter: &str) -> (&'static str, usize) {
    let c = counter;
    if c == "FETCH_SIZE" || c == "WRITE_SIZE" {
        ("TCC", 2)
    } else if c.starts_with("SQ_") {
        ("SQ", 1)
    } else if c.starts_with("TCC_") {
        ("TCC", 1)
    } else if c.starts_with("TCP_") {
        ("TCP", 1)
    } else if c.starts_with("TA_") {
        ("TA", 1)
    } else if c.starts_with("TD_") {
        ("TD", 1)
    } else if c.starts_with("GRBM_") {
        ("GRBM", 1)
    } else {
        ("OTHER", 1)
    }
}

/// Counter registers of `block` usable in one pass.
fn block_limit(block: &str) -> usize {
    match block {
        "SQ" => 8,
        "GRBM" => 2,
        "OTHER" => 1,
        _ => 4,
    }
}

/// Splits AMD counters into passes within the per-block limits: first fit, in order, so
/// the passes keep the list's order and the first pass is as full as it can be.
///
/// ```
/// use rooftop_ingest::session::split_passes;
///
/// let counters: Vec<String> =
///     ["FETCH_SIZE", "WRITE_SIZE", "TCC_HIT_sum"].iter().map(|s| s.to_string()).collect();
/// // FETCH_SIZE and WRITE_SIZE fill the TCC's 4 slots: TCC_HIT_sum needs a second pass.
/// assert_eq!(split_passes(&counters), vec![vec!["FETCH_SIZE", "WRITE_SIZE"], vec!["TCC_HIT_sum"]]);
/// ```
pub fn split_passes(counters: &[String]) -> Vec<Vec<String>> {
    // Each pass: its counters, and the slots used per hardware block.
    type Pass = (Vec<String>, Vec<(&'static str, usize)>);
    let mut passes: Vec<Pass> = Vec::new();
    for c in counters {
        let (block, cost) = block_of(c);
        let fits = |used: &Vec<(&'static str, usize)>| {
            let u = used.iter().find(|(b, _)| *b == block).map_or(0, |(_, n)| *n);
            u + cost <= block_limit(block)
        };
        let slot = passes.iter().position(|(_, used)| fits(used));
        let i = if let Some(i) = slot {
            i
        } else {
            passes.push((Vec::new(), Vec::new()));
            passes.len() - 1
        };
        let (list, used) = &mut passes[i];
        list.push(c.clone());
        match used.iter_mut().find(|(b, _)| *b == block) {
            Some((_, n)) => *n += cost,
            None => used.push((block, cost)),
        }
    }
    passes.into_iter().map(|(l, _)| l).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| (*s).to_string()).collect()
    }

    #[test]
    fn amd_passes_respect_block_limits() {
        // 5 TCC counters: 4 fit a pass, the fifth starts a second; SQ counters share.
        let c = strings(&[
            "TCC_HIT_sum",
            "TCC_MISS_sum",
            "TCC_REQ_sum",
            "TCC_EA_RDREQ_sum",
            "TCC_EA_WRREQ_sum",
            "SQ_WAVES",
        ]);
        let p = split_passes(&c);
        assert_eq!(p.len(), 2);
        assert_eq!(p[0].len(), 5); // 4 TCC + SQ_WAVES
        assert_eq!(p[1], strings(&["TCC_EA_WRREQ_sum"]));
        // FETCH_SIZE and WRITE_SIZE take two TCC slots each: with two TCC counters, three
        // passes are not needed, but they cannot share one pass with 4 TCC counters.
        let c = strings(&["FETCH_SIZE", "WRITE_SIZE", "TCC_HIT_sum"]);
        let p = split_passes(&c);
        assert_eq!(p, vec![strings(&["FETCH_SIZE", "WRITE_SIZE"]), strings(&["TCC_HIT_sum"])]);
    }
}
