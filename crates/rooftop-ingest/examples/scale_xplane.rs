//! Scales a real JAX profile for the reader benchmark (`bench/xplane/run.sh`): every
//! line of every device and host plane is repeated `COPIES` times, each copy shifted
//! after the previous one and with fresh correlation ids (copies never link to each
//! other), so the result is what a longer capture of the same program looks like.
//!
//! `cargo run --release -p rooftop-ingest --example scale_xplane -- IN OUT COPIES`

#![allow(clippy::print_stderr)]

use prost::Message;
use rooftop_ingest::xplane::proto::{x_event, x_stat, XSpace};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let [_, input, output, copies] = args.as_slice() else {
        eprintln!("usage: scale_xplane IN OUT COPIES");
        std::process::exit(2);
    };
    let copies: i64 = copies.parse().unwrap_or(1).max(1);
    let bytes = std::fs::read(input).unwrap_or_else(|e| {
        eprintln!("cannot read {input}: {e}");
        std::process::exit(2);
    });
    let mut space = XSpace::decode(bytes.as_slice()).unwrap_or_else(|e| {
        eprintln!("{input}: {e}");
        std::process::exit(2);
    });
    // The largest correlation id and the span of all events, in ps.
    let mut max_corr = 0i64;
    let mut span_ps = 0i64;
    for p in &space.planes {
        let corr_ids: Vec<i64> = p
            .stat_metadata
            .iter()
            .filter(|(_, m)| m.name == "correlation_id")
            .map(|(&id, _)| id)
            .collect();
        for l in &p.lines {
            for e in &l.events {
                if let Some(x_event::Data::OffsetPs(o)) = e.data {
                    span_ps = span_ps.max(o.saturating_add(e.duration_ps));
                }
                for s in e.stats.iter().filter(|s| corr_ids.contains(&s.metadata_id)) {
                    if let Some(x_stat::Value::Int64Value(v)) = s.value {
                        max_corr = max_corr.max(v);
                    }
                    if let Some(x_stat::Value::Uint64Value(v)) = s.value {
                        max_corr = max_corr.max(i64::try_from(v).unwrap_or(0));
                    }
                }
            }
        }
    }
    for p in &mut space.planes {
        let corr_ids: Vec<i64> = p
            .stat_metadata
            .iter()
            .filter(|(_, m)| m.name == "correlation_id")
            .map(|(&id, _)| id)
            .collect();
        for l in &mut p.lines {
            let base = l.events.clone();
            for k in 1..copies {
                for e in &base {
                    let mut c = e.clone();
                    if let Some(x_event::Data::OffsetPs(o)) = c.data {
                        c.data = Some(x_event::Data::OffsetPs(o + k * span_ps));
                    }
                    for s in c.stats.iter_mut().filter(|s| corr_ids.contains(&s.metadata_id)) {
                        match &mut s.value {
                            Some(x_stat::Value::Int64Value(v)) => *v += k * (max_corr + 1),
                            Some(x_stat::Value::Uint64Value(v)) => {
                                *v += u64::try_from(k * (max_corr + 1)).unwrap_or(0);
                            }
                            _ => {}
                        }
                    }
                    l.events.push(c);
                }
            }
        }
    }
    let out = space.encode_to_vec();
    std::fs::write(output, &out).unwrap_or_else(|e| {
        eprintln!("cannot write {output}: {e}");
        std::process::exit(2);
    });
    eprintln!("{output}: {} bytes ({copies} copies)", out.len());
}
