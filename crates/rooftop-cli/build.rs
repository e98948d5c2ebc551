//! Links the `rooftop` executable at a fixed address on Linux (not position
//! independent).
//!
//! A position-independent executable is relocated by the dynamic loader at every
//! start: ~23,600 relative relocations, each a write into the pages of the tables that
//! hold addresses (`.data.rel.ro`, the GOT), which are then copied on write. Measured on
//! a 2-vCPU KVM guest (`perf stat -r 30 rooftop --version`): 314 → 221 page faults and
//! ~1.8–2.7 → ~1.6 ms of CPU, on every command (docs/validation.md, thirty-first round). The code itself is compiled as before
//! (position independent, as the standard library is); only the link differs. The
//! executable's own address is then not randomized (its libraries' and stacks' still
//! are), which a tool that reads files and prints reports can afford.
fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    if os == "linux" {
        println!("cargo:rustc-link-arg-bins=-no-pie");
    }
}
