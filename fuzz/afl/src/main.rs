//! The AFL++ harness: `rooftop-fuzz-afl TARGET` runs one fuzz target of
//! `rooftop_fuzz::TARGETS` in AFL++'s persistent mode (the input on standard input when
//! run by hand: `rooftop-fuzz-afl kineto < crash` replays a finding);
//! `rooftop-fuzz-afl --list` prints the targets; `rooftop-fuzz-afl --seeds TARGET DIR`
//! writes the target's seed corpus into DIR (from the repository it was built in).

use std::path::Path;
use std::process::ExitCode;

const USAGE: &str = "usage: rooftop-fuzz-afl TARGET | --list | --seeds TARGET DIR";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.iter().map(String::as_str).collect::<Vec<_>>().as_slice() {
        ["--list"] => {
            for t in rooftop_fuzz::TARGETS {
                println!("{}\t{}", t.name, t.reader);
            }
            ExitCode::SUCCESS
        }
        ["--seeds", name, dir] => write_seeds(name, Path::new(dir)),
        [name] => match rooftop_fuzz::target(name) {
            Some(t) => {
                let run = t.run;
                // No panic hook: a panic the reader catches itself (rooftop-tables turns the
                // Parquet crate's panics on damaged files into errors, as the CLI sees them)
                // is no crash; one that escapes the target still aborts, and AFL++ saves it.
                afl::fuzz_nohook!(|data: &[u8]| run(data));
                ExitCode::SUCCESS
            }
            None => {
                eprintln!("rooftop-fuzz-afl: no target `{name}` (--list names them)");
                ExitCode::from(2)
            }
        },
        _ => {
            eprintln!("{USAGE}");
            ExitCode::from(2)
        }
    }
}

/// The seeds of target `name` as files `DIR/000-<name of the seed>`.
fn write_seeds(name: &str, dir: &Path) -> ExitCode {
    let Some(t) = rooftop_fuzz::target(name) else {
        eprintln!("rooftop-fuzz-afl: no target `{name}` (--list names them)");
        return ExitCode::from(2);
    };
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let seeds = rooftop_fuzz::seeds(t, &root);
    if seeds.is_empty() {
        eprintln!("rooftop-fuzz-afl: target `{name}` has no seed in {}", root.display());
        return ExitCode::from(1);
    }
    if let Err(e) = std::fs::create_dir_all(dir) {
        eprintln!("rooftop-fuzz-afl: cannot create {}: {e}", dir.display());
        return ExitCode::from(1);
    }
    for (i, (seed, bytes)) in seeds.iter().enumerate() {
        let file: String = seed
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() || c == '.' { c } else { '_' })
            .collect();
        let path = dir.join(format!("{i:03}-{file}"));
        if let Err(e) = std::fs::write(&path, bytes) {
            eprintln!("rooftop-fuzz-afl: cannot write {}: {e}", path.display());
            return ExitCode::from(1);
        }
    }
    ExitCode::SUCCESS
}
