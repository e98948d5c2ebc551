//! Bad bytes never panic the XPlane reader or the analysis after it: the real profile in
//! `tests/fixtures/jax`, truncated at every 997th byte and mutated at random (bytes
//! overwritten, inserted, removed), either reads or gives one error naming the file and
//! a byte offset inside it. The fuzz target `xplane` (`fuzz/src/lib.rs`, run by
//! `scripts/fuzz.sh`) checks the same property with coverage guidance.

#![allow(clippy::unwrap_used)]

use proptest::prelude::*;
use rooftop_core::device::Catalog;
use rooftop_core::trace::report::{analyze, TraceOptions};
use rooftop_ingest::xplane::{read_bytes, XplaneError};
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

static FIXTURE: LazyLock<Vec<u8>> = LazyLock::new(|| {
    std::fs::read(
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/fixtures/jax/amd_gfx950_te_fused_attn.xplane.pb"),
    )
    .unwrap()
});

fn check(bytes: &[u8]) -> Result<(), TestCaseError> {
    let name = Path::new("mutant.xplane.pb");
    match read_bytes(bytes, name) {
        Ok(m) => {
            let cat = Catalog::builtin();
            let r = analyze(&m, cat.lookup("mi355x").ok(), &TraceOptions::default());
            prop_assert!(r.timeline.all.total.time_ms.is_finite());
        }
        Err(e) => {
            let text = e.to_string();
            prop_assert!(text.starts_with("mutant.xplane.pb"), "{text}");
            prop_assert!(!text.contains('\n'), "one sentence: {text}");
            if let XplaneError::Decode { offset, .. } = e {
                prop_assert!(offset <= bytes.len() as u64);
            }
        }
    }
    Ok(())
}

#[test]
fn every_truncation_is_an_error_at_a_position() {
    let f = &*FIXTURE;
    for cut in (1..f.len()).step_by(997) {
        let e = read_bytes(&f[..cut], Path::new("cut.xplane.pb")).unwrap_err();
        match &e {
            XplaneError::Decode { offset, field, .. } => {
                assert!(*offset <= cut as u64, "{e}");
                assert!(field.starts_with("XSpace"), "{e}");
            }
            other => panic!("cut at {cut}: {other}"),
        }
    }
}

#[derive(Debug, Clone)]
enum Mutation {
    Set(usize, u8),
    Insert(usize, Vec<u8>),
    Remove(usize, usize),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<usize>(), any::<u8>()).prop_map(|(i, b)| Mutation::Set(i, b)),
        (any::<usize>(), proptest::collection::vec(any::<u8>(), 1..12))
            .prop_map(|(i, v)| Mutation::Insert(i, v)),
        (any::<usize>(), 1usize..64).prop_map(|(i, n)| Mutation::Remove(i, n)),
    ]
}

fn apply(bytes: &mut Vec<u8>, m: &Mutation) {
    let len = bytes.len().max(1);
    match m {
        Mutation::Set(i, b) => {
            let i = i % len;
            if let Some(x) = bytes.get_mut(i) {
                *x = *b;
            }
        }
        Mutation::Insert(i, v) => {
            let i = i % (bytes.len() + 1);
            bytes.splice(i..i, v.iter().copied());
        }
        Mutation::Remove(i, n) => {
            let i = i % len;
            let end = (i + n).min(bytes.len());
            if i < end {
                bytes.drain(i..end);
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 40, ..ProptestConfig::default() })]

    #[test]
    fn mutated_profiles_never_panic(muts in proptest::collection::vec(mutation(), 1..6)) {
        let mut bytes = FIXTURE.clone();
        for m in &muts {
            apply(&mut bytes, m);
        }
        check(&bytes)?;
    }

    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        check(&bytes)?;
    }
}

/// Valid protobuf, hostile values: the decoded fixture with times, durations, ids and
/// stat values replaced by arbitrary ones (extreme i64s included), metadata dropped and
/// the HLO proto corrupted, then encoded again. Exercises the conversion and the
/// analysis rather than the decoder.
#[derive(Debug, Clone)]
enum Edit {
    LineTs(usize, i64),
    Offset(usize, usize, i64),
    Duration(usize, usize, i64),
    MetadataId(usize, usize, i64),
    StatInt(usize, usize, i64),
    StatStr(usize, usize, String),
    DropMetadata(usize, i64),
    HloByte(usize, u8),
}

fn edit() -> impl Strategy<Value = Edit> {
    let big = prop_oneof![any::<i64>(), Just(i64::MAX), Just(i64::MIN), Just(0), -5i64..5];
    prop_oneof![
        (any::<usize>(), big.clone()).prop_map(|(l, v)| Edit::LineTs(l, v)),
        (any::<usize>(), any::<usize>(), big.clone()).prop_map(|(l, e, v)| Edit::Offset(l, e, v)),
        (any::<usize>(), any::<usize>(), big.clone()).prop_map(|(l, e, v)| Edit::Duration(l, e, v)),
        (any::<usize>(), any::<usize>(), big.clone())
            .prop_map(|(l, e, v)| Edit::MetadataId(l, e, v)),
        (any::<usize>(), any::<usize>(), big).prop_map(|(l, e, v)| Edit::StatInt(l, e, v)),
        (any::<usize>(), any::<usize>(), "[ -~]{0,40}")
            .prop_map(|(l, e, s)| Edit::StatStr(l, e, s)),
        (any::<usize>(), 0i64..80).prop_map(|(p, id)| Edit::DropMetadata(p, id)),
        (any::<usize>(), any::<u8>()).prop_map(|(i, b)| Edit::HloByte(i, b)),
    ]
}

#[allow(clippy::many_single_char_names)]
fn apply_edit(space: &mut rooftop_ingest::xplane::proto::XSpace, e: &Edit) {
    use rooftop_ingest::xplane::proto::{x_event, x_stat};
    // (plane, line) pairs with events, in order.
    let lines: Vec<(usize, usize)> = space
        .planes
        .iter()
        .enumerate()
        .flat_map(|(p, pl)| {
            pl.lines
                .iter()
                .enumerate()
                .filter(|(_, l)| !l.events.is_empty())
                .map(move |(l, _)| (p, l))
        })
        .collect();
    let pick = |i: usize| lines.get(i % lines.len().max(1)).copied();
    match e {
        Edit::LineTs(l, v) => {
            if let Some((p, l)) = pick(*l) {
                space.planes[p].lines[l].timestamp_ns = *v;
            }
        }
        Edit::Offset(l, k, v)
        | Edit::Duration(l, k, v)
        | Edit::MetadataId(l, k, v)
        | Edit::StatInt(l, k, v) => {
            if let Some((p, l)) = pick(*l) {
                let evs = &mut space.planes[p].lines[l].events;
                let n = evs.len();
                let ev = &mut evs[k % n];
                match e {
                    Edit::Offset(..) => ev.data = Some(x_event::Data::OffsetPs(*v)),
                    Edit::Duration(..) => ev.duration_ps = *v,
                    Edit::MetadataId(..) => ev.metadata_id = *v,
                    _ => {
                        if let Some(s) = ev.stats.first_mut() {
                            s.value = Some(x_stat::Value::Int64Value(*v));
                        }
                    }
                }
            }
        }
        Edit::StatStr(l, k, s) => {
            if let Some((p, l)) = pick(*l) {
                let evs = &mut space.planes[p].lines[l].events;
                let n = evs.len();
                if let Some(st) = evs[k % n].stats.last_mut() {
                    st.value = Some(x_stat::Value::StrValue(s.clone()));
                }
            }
        }
        Edit::DropMetadata(p, id) => {
            let n = space.planes.len();
            space.planes[p % n].event_metadata.remove(id);
        }
        Edit::HloByte(i, b) => {
            for m in space.planes[0].event_metadata.values_mut() {
                for s in &mut m.stats {
                    if let Some(x_stat::Value::BytesValue(v)) = &mut s.value {
                        let n = v.len();
                        if n > 0 {
                            v[i % n] = *b;
                        }
                    }
                }
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 40, ..ProptestConfig::default() })]

    #[test]
    fn hostile_values_never_panic(edits in proptest::collection::vec(edit(), 1..8)) {
        use prost::Message;
        let mut space = rooftop_ingest::xplane::proto::XSpace::decode(FIXTURE.as_slice()).unwrap();
        for e in &edits {
            apply_edit(&mut space, e);
        }
        check(&space.encode_to_vec())?;
    }
}
