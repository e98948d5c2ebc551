//! Findings of the cross-rank reduce, ranked by the time at stake:
//! - a straggler: the rank that caused the most waiting, when it started last at a
//!   share of the collectives well above chance (`max(30%, 2/n)` for `n` ranks) — time
//!   at stake: the waits it caused (GPU time of the other ranks);
//! - collectives far below their link: bus bandwidth under [`SLOW_BUSBW_PCT`] of the
//!   catalog link for messages of at least [`SLOW_MIN_BYTES`] (smaller ones are
//!   latency-bound in NCCL-tests too) — time at stake: `transfer × (1 − busbw/peak)`;
//! - uneven all-to-all: mean split imbalance of at least [`A2A_IMBALANCE`] — time at
//!   stake: the group's all-to-all transfer time × `(1 − 1/imbalance)`.
//!
//! The window of each stake is the summed windows of the ranks the time is spread over
//! (the others, for a straggler; the members, otherwise), and the severity follows from
//! the share, as for every finding ([`crate::diagnose::finding`]).

use super::{CollectiveKind, CommReport};
use crate::diagnose::{rank, Finding, Stake, WindowKind};
use crate::units::{pct, si, sig3, us};
use std::fmt::Write as _;

/// A collective reaching less than this share of its link's bandwidth is slow.
pub const SLOW_BUSBW_PCT: f64 = 50.0;
/// ... when its message is at least this large (8 MB).
pub const SLOW_MIN_BYTES: u64 = 8_000_000;
/// All-to-all instances whose largest sender sends this many times the mean are uneven.
pub const A2A_IMBALANCE: f64 = 1.5;

/// The findings of a report whose tables are filled in. `window_ms(label)` is a rank's
/// timeline window.
pub fn findings(r: &CommReport, window_ms: &dyn Fn(&str) -> f64) -> Vec<Finding> {
    let mut out = Vec::new();
    let n = r.stragglers.len();
    let mean_window_ms = if n == 0 {
        0.0
    } else {
        r.stragglers.iter().map(|s| window_ms(&s.name)).sum::<f64>() / n as f64
    };
    if let Some(s) = r.stragglers.first() {
        let threshold = (200.0 / n.max(1) as f64).clamp(30.0, 100.0);
        if s.times_last > 0 && s.pct_last >= threshold && s.wait_caused_ms > 0.0 {
            let cost = match s.wait_caused_per_step_ms {
                Some(per) => {
                    format!(
                        "costs the others {} per step ({})",
                        us(per * 1e3),
                        crate::diagnose::count(s.steps, "step", "steps")
                    )
                }
                None => format!(
                    "costs the others {} in the profiled window",
                    us(s.wait_caused_ms * 1e3)
                ),
            };
            let mut evidence = format!(
                "It starts last at {} of its {} collectives ({} times) and {cost}, summed over \
                 the ranks that wait.",
                pct(s.pct_last),
                s.collectives,
                s.times_last
            );
            if let (Some(mine), Some(others)) =
                (s.compute_before_when_last_us, s.others_compute_before_us)
            {
                let _ = write!(
                    evidence,
                    " Before those collectives it ran {} of computation on average{}, the other \
                     ranks {}.",
                    us(mine),
                    s.late_after
                        .as_deref()
                        .map_or_else(String::new, |l| format!(" (longest: {l})")),
                    us(others)
                );
            }
            let stake_us = s.wait_caused_ms * 1e3;
            let others_window_us = mean_window_ms * 1e3 * (n.saturating_sub(1)) as f64;
            out.push(
                Finding::new(
                    "collectives.straggler",
                    format!("{} is the straggler", s.name),
                    evidence,
                    format!(
                        "Find what makes {} later than the others: uneven work per rank \
                         (sequence lengths, expert load, data shards), a slower GPU (clocks, \
                         thermals, another process), or host stalls (data loading, garbage \
                         collection) on that rank. Compare its trace with a rank that arrives \
                         first.",
                        s.name
                    ),
                    Stake::new(stake_us, others_window_us, WindowKind::Ranks),
                )
                .with_gain(Some(format!("up to {} of the others' waiting", us(stake_us)))),
            );
        }
    }
    for row in &r.collectives.rows {
        let (Some(bus), Some(peak), Some(p), Some(bytes)) =
            (row.busbw_gbs, row.peak_busbw_gbs, row.busbw_pct_of_peak, row.message_bytes)
        else {
            continue;
        };
        if p >= SLOW_BUSBW_PCT || bytes < SLOW_MIN_BYTES {
            continue;
        }
        let stake_us = row.transfer_total_ms * 1e3 * (1.0 - bus / peak).max(0.0);
        let window_us = mean_window_ms * 1e3 * f64::from(row.group_size);
        out.push(
            Finding::new(
                "collectives.low_bus_bandwidth",
                format!(
                    "{} of {} in {} below its link",
                    row.collective,
                    si(bytes as f64, "B"),
                    row.process_group
                ),
                format!(
                    "{} over {} ranks ({}) reach {} bus bandwidth, {} of {} ({} per \
                     GPU per direction); transfer {} in total.",
                    crate::diagnose::count(row.count, "instance", "instances"),
                    row.group_size,
                    row.scope.as_str().replace('_', "-"),
                    si(bus * 1e9, "B/s"),
                    pct(p),
                    row.peak_link.as_deref().unwrap_or("the link"),
                    si(peak * 1e9, "B/s"),
                    us(row.transfer_total_ms * 1e3)
                ),
                "Check that NCCL uses the fast path: NCCL_DEBUG=INFO shows the transport \
                 (NVLink/P2P vs SHM or PCIe, NIC-to-GPU affinity) and the algorithm and \
                 protocol chosen; compare with nccl-tests at this size on the same nodes.",
                Stake::new(stake_us, window_us, WindowKind::Ranks),
            )
            .with_gain(Some(format!("up to {}", us(stake_us)))),
        );
    }
    for g in &r.all_to_all {
        if g.imbalance_mean < A2A_IMBALANCE {
            continue;
        }
        let transfer_ms: f64 = r
            .collectives
            .rows
            .iter()
            .filter(|row| {
                row.process_group == g.process_group
                    && matches!(row.kind, CollectiveKind::AllToAll | CollectiveKind::AllToAllV)
            })
            .map(|row| row.transfer_total_ms)
            .sum();
        let stake_us = transfer_ms * 1e3 * (1.0 - 1.0 / g.imbalance_mean);
        let window_us = mean_window_ms * 1e3 * f64::from(g.group_size);
        out.push(
            Finding::new(
                "collectives.all_to_all_imbalance",
                format!("uneven all-to-all in {}", g.process_group),
                format!(
                    "over {} the busiest rank sends {}× the mean on average (up to \
                     {}×); rank {} sends the most ({} of {}).",
                    crate::diagnose::count(g.count, "instance", "instances"),
                    sig3(g.imbalance_mean),
                    sig3(g.imbalance_max),
                    g.heaviest_sender.map_or_else(|| "?".to_string(), |r| r.to_string()),
                    si(
                        g.heaviest_sender
                            .and_then(|h| g.members.iter().position(|m| *m == h))
                            .and_then(|i| g.send_bytes.get(i))
                            .copied()
                            .unwrap_or(0) as f64,
                        "B"
                    ),
                    si(g.total_bytes as f64, "B")
                ),
                "An all-to-all lasts as long as its largest transfer. In MoE layers balance the \
                 expert load (auxiliary loss, capacity factor, expert placement); elsewhere \
                 split the data evenly.",
                Stake::new(stake_us, window_us, WindowKind::Ranks),
            )
            .with_gain(Some(format!("up to {}", us(stake_us)))),
        );
    }
    rank(&mut out);
    out
}
