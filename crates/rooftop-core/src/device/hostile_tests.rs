//! Device files built to be expensive or empty: long `extends` chains, many aliases,
//! more devices or aliases than the limits allow, no devices at all. The oracle is the
//! file itself (what each entry says it extends or names), written out in the test.

use super::{parse_device_file, Catalog};
use crate::limits::Limit;
use std::fmt::Write as _;

/// `n` devices, each extending the one before it (the first extends `h100-sxm`), each
/// with its own alias.
fn chain(n: usize) -> String {
    let mut t = String::new();
    for i in 0..n {
        let base = if i == 0 { "h100-sxm".to_string() } else { format!("chain-{}", i - 1) };
        let _ = write!(
            t,
            "[[device]]\nid = \"chain-{i}\"\nextends = \"{base}\"\naliases = [\"link {i}\"]\n\n"
        );
    }
    t
}

#[test]
fn a_long_extends_chain_resolves_in_one_pass() {
    // 5000 entries: the scan per `extends` and per merge that this replaced did ~25 M
    // normalisations of names here (seconds in a debug build); the index does ~5000.
    let n = 5000;
    let devs = match parse_device_file(&chain(n), "chain.toml") {
        Ok(d) => d,
        Err(e) => panic!("{e}"),
    };
    assert_eq!(devs.len(), n);
    let mut c = Catalog::builtin().clone();
    let before = c.devices.len();
    c.merge(devs);
    assert_eq!(c.devices.len(), before + n);
    // The last link inherits the H100 SXM's bandwidth through 5000 `extends` (3.35 TB/s,
    // the catalog's figure for the base) and is found by its own alias.
    let base_bw = c.get("h100-sxm").map(|d| d.peak_bw_gbs);
    let last = c.lookup("link 4999").map(|d| (d.id.clone(), d.peak_bw_gbs));
    assert_eq!(last, Ok(("chain-4999".to_string(), base_bw.unwrap_or(f64::NAN))));
    // Every link's alias is its own, never the base's (a new id drops the base's aliases).
    assert!(c.lookup("h100-sxm5").is_ok_and(|d| d.id == "h100-sxm"));
}

#[test]
fn many_aliases_are_deduplicated_in_one_pass() {
    let n = Limit::Aliases.default_value() as usize;
    // Half the aliases repeat an earlier one once normalised (`A-7` is `a7`).
    let list: Vec<String> = (0..n)
        .map(|i| if i % 2 == 0 { format!("a{}", i / 2) } else { format!("A-{}", i / 2) })
        .collect();
    let text = format!(
        "[[device]]\nid = \"many\"\nextends = \"h100-sxm\"\naliases = [{}]\n",
        list.iter().map(|a| format!("\"{a}\"")).collect::<Vec<_>>().join(", ")
    );
    let devs = parse_device_file(&text, "many.toml");
    assert_eq!(devs.map(|d| d[0].aliases.len()), Ok(n / 2));
}

#[test]
fn more_aliases_than_the_limit_is_an_error_naming_the_variable() {
    let n = Limit::Aliases.default_value() as usize + 1;
    let list: Vec<String> = (0..n).map(|i| format!("\"x{i}\"")).collect();
    let text = format!(
        "[[device]]\nid = \"many\"\nextends = \"h100-sxm\"\naliases = [{}]\n",
        list.join(",")
    );
    let e = match parse_device_file(&text, "many.toml") {
        Ok(_) => panic!("accepted {n} aliases"),
        Err(e) => e.to_string(),
    };
    assert!(e.starts_with("many.toml:1"), "{e}");
    assert!(e.contains(&format!("{n} aliases")), "{e}");
    assert!(e.contains("ROOFTOP_LIMIT_ALIASES=N"), "{e}");
}

#[test]
fn more_devices_than_the_limit_is_an_error_naming_the_variable() {
    let n = Limit::Devices.default_value() as usize + 1;
    let mut text = String::new();
    for i in 0..n {
        let _ = write!(text, "[[device]]\nid = \"d{i}\"\nextends = \"h100-sxm\"\n");
    }
    let e = match parse_device_file(&text, "lots.toml") {
        Ok(_) => panic!("accepted {n} devices"),
        Err(e) => e.to_string(),
    };
    assert!(e.starts_with("lots.toml: "), "{e}");
    assert!(e.contains(&format!("{n} `[[device]]` entries")), "{e}");
    assert!(e.contains("ROOFTOP_LIMIT_DEVICES=N"), "{e}");
}

#[test]
fn an_empty_device_file_is_an_error() {
    for text in ["", "# nothing\n", "schema_version = 1\n"] {
        let e = match parse_device_file(text, "empty.toml") {
            Ok(d) => panic!("`{text}` gave {} devices", d.len()),
            Err(e) => e.to_string(),
        };
        assert!(e.starts_with("empty.toml: no devices"), "{e}");
    }
}
