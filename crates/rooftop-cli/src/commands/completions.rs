//! `rooftop completions SHELL` and `rooftop man`: the shell completion script
//! (`clap_complete`) and the manual page (`clap_mangen`), both generated from the same
//! clap `Command` tree the parser uses, so they cover every subcommand and flag the
//! binary accepts (hidden ones, such as the test backend, excepted).
//!
//! The manual page is one page, `rooftop(1)`: the top-level page, then one section per
//! subcommand (`ROOFTOP TRACE`, `ROOFTOP ANALYZE GEMM`, ...) with its synopsis,
//! description and options, as `git`'s and `cargo`'s single-page summaries do.
//!
//! Both take `-o FILE`; the other global flags, `--format` and `--device-file`, have no
//! effect on them: each one the user typed gets a warning on stderr, and the output and
//! exit code are as without it (no device file is read).

use crate::args::{Cli, Command};
use crate::error::{CliError, Result};
use crate::output;
use clap::{Args, CommandFactory};
use clap_complete::Shell;

/// Runs `rooftop completions SHELL` or `rooftop man` (`cli.command` is one of them).
pub fn run(cli: &Cli) -> Result<()> {
    for w in ignored_flags(cli) {
        eprintln!("rooftop: warning: {w}");
    }
    if let Some(p) = &cli.output {
        output::check_writable(p, "-o", false)?;
    }
    let text = match &cli.command {
        Command::Completions(a) => script(a.shell),
        _ => man()?,
    };
    output::emit(&text, cli.output.as_deref())
}

/// One sentence per global flag the user gave that the command ignores: `completions`
/// and `man` use neither `--format` nor `--device-file` ("--format has no effect on
/// `completions`"; `diff` says its own, `diff::ignored_flags`).
pub(super) fn ignored_flags(cli: &Cli) -> Vec<String> {
    let name = match cli.command {
        Command::Completions(_) => "completions",
        Command::Man => "man",
        _ => return Vec::new(),
    };
    let given = [("--format", cli.format_given), ("--device-file", !cli.device_files.is_empty())];
    given
        .into_iter()
        .filter(|(_, g)| *g)
        .map(|(flag, _)| format!("{flag} has no effect on `{name}`"))
        .collect()
}

#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell to complete in: bash, zsh, fish, powershell or elvish.
    #[arg(value_enum)]
    pub shell: Shell,
}

/// The completion script for `shell`.
pub fn script(shell: Shell) -> String {
    let mut cmd = Cli::command();
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut cmd, "rooftop", &mut out);
    String::from_utf8_lossy(&out).into_owned()
}

/// The manual page: the top-level page and a section per subcommand, recursively.
pub fn man() -> Result<String> {
    let mut cmd = Cli::command().disable_help_subcommand(true);
    cmd.build();
    let mut out = Vec::new();
    let io = |e: std::io::Error| CliError::Runtime(format!("cannot render the manual page: {e}"));
    clap_mangen::Man::new(cmd.clone()).render(&mut out).map_err(io)?;
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        sub_sections(sub, &mut out).map_err(io)?;
    }
    Ok(String::from_utf8_lossy(&out).into_owned())
}

/// One subcommand's section (`.SH "ROOFTOP TRACE"`), its parts as subsections, then its
/// own subcommands'.
fn sub_sections(cmd: &clap::Command, out: &mut Vec<u8>) -> std::io::Result<()> {
    let name = cmd.get_display_name().unwrap_or_else(|| cmd.get_name()).replace('-', " ");
    let man = clap_mangen::Man::new(cmd.clone());
    let mut part = Vec::new();
    man.render_synopsis_section(&mut part)?;
    man.render_description_section(&mut part)?;
    if cmd.get_arguments().any(|a| !a.is_hide_set()) {
        man.render_options_section(&mut part)?;
    }
    if cmd.has_subcommands() {
        man.render_subcommands_section(&mut part)?;
    }
    out.extend_from_slice(format!(".SH \"{}\"\n", name.to_uppercase()).as_bytes());
    // The subcommand's sections become subsections of its own section.
    for line in String::from_utf8_lossy(&part).lines() {
        let line =
            line.strip_prefix(".SH ").map_or_else(|| line.to_string(), |h| format!(".SS {h}"));
        out.extend_from_slice(line.as_bytes());
        out.push(b'\n');
    }
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        sub_sections(sub, out)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    //! Both outputs are checked against the parser's own `Command` tree: every visible
    //! subcommand and every visible long flag (and short flag) must appear.

    use super::*;
    use clap::Command;

    /// Every visible subcommand path (`["analyze", "gemm"]`) with its command.
    fn walk<'a>(
        cmd: &'a Command,
        path: &mut Vec<String>,
        out: &mut Vec<(Vec<String>, &'a Command)>,
    ) {
        for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
            path.push(sub.get_name().to_string());
            out.push((path.clone(), sub));
            walk(sub, path, out);
            path.pop();
        }
    }

    /// The parser's tree; `with_help`: with clap's `help` subcommands (which the
    /// completions offer and the manual page, which has `--help`, leaves out).
    fn tree(with_help: bool) -> (Command, Vec<(Vec<String>, Command)>) {
        let mut root = Cli::command().disable_help_subcommand(!with_help);
        root.build();
        let mut subs = Vec::new();
        walk(&root, &mut Vec::new(), &mut subs);
        let subs = subs.into_iter().map(|(p, c)| (p, c.clone())).collect();
        (root, subs)
    }

    fn longs(cmd: &Command) -> Vec<String> {
        cmd.get_arguments()
            .filter(|a| !a.is_hide_set())
            .filter_map(clap::Arg::get_long)
            .map(str::to_string)
            .collect()
    }

    fn ignored(args: &[&str]) -> Vec<String> {
        let cli = Cli::parsed_from(std::iter::once("rooftop").chain(args.iter().copied()))
            .expect("a valid command line");
        ignored_flags(&cli)
    }

    #[test]
    fn global_flags_without_effect_are_named_once_each() {
        let fmt = "--format has no effect on `completions`";
        let dev = "--device-file has no effect on `completions`";
        assert!(ignored(&["completions", "bash"]).is_empty());
        assert_eq!(ignored(&["completions", "bash", "--format", "json"]), [fmt]);
        // Before the subcommand, as after it; `table`, the default, typed, too.
        assert_eq!(ignored(&["--format", "table", "completions", "bash"]), [fmt]);
        assert_eq!(
            ignored(&[
                "completions",
                "zsh",
                "--device-file",
                "mine.toml",
                "--device-file",
                "dev.toml"
            ]),
            [dev]
        );
        assert_eq!(
            ignored(&["man", "--device-file", "x.toml", "--format", "md"]),
            ["--format has no effect on `man`", "--device-file has no effect on `man`"]
        );
        // -o works, and the format its extension names was not typed.
        assert!(ignored(&["man", "-o", "rooftop.json"]).is_empty());
        // Other commands use them (`diff` reads device files for traces, and says itself
        // when it compares two exports).
        assert!(ignored(&["diff", "a.json", "b.json", "--device-file", "mine.toml"]).is_empty());
        assert!(ignored(&["devices", "--format", "json"]).is_empty());
    }

    #[test]
    fn the_tree_is_what_the_tests_walk() {
        // The walk must see the commands the README documents, or the checks below
        // would pass on an empty tree.
        let (root, subs) = tree(true);
        let names: Vec<String> = subs.iter().map(|(p, _)| p.join(" ")).collect();
        for want in ["trace", "analyze gemm", "analyze conv2d", "model", "completions", "man"] {
            assert!(names.contains(&want.to_string()), "{want} missing from {names:?}");
        }
        assert!(longs(&root).contains(&"format".to_string()));
        let trace = &subs.iter().find(|(p, _)| p == &["trace"]).map(|(_, c)| c.clone());
        let trace_flags = longs(trace.as_ref().expect("trace"));
        assert!(trace_flags.contains(&"cp-window".to_string()), "{trace_flags:?}");
        // Hidden flags are not offered.
        assert!(!trace_flags.contains(&"threads".to_string()));
    }

    #[test]
    fn man_page_has_every_subcommand_and_flag() {
        let page = man().expect("man page");
        let (root, subs) = tree(false);
        assert!(page.starts_with(".ie") || page.contains(".TH rooftop 1"), "{}", &page[..200]);
        for flag in longs(&root) {
            assert!(page.contains(&format!("\\-\\-{}", flag.replace('-', "\\-"))), "--{flag}");
        }
        for (path, cmd) in &subs {
            let heading = format!(".SH \"ROOFTOP {}\"", path.join(" ").to_uppercase());
            let start = page.find(&heading).unwrap_or_else(|| panic!("no section {heading}"));
            // The section runs to the next top-level section.
            let body = &page[start + heading.len()..];
            let body = &body[..body.find("\n.SH ").unwrap_or(body.len())];
            for flag in longs(cmd) {
                let roff = format!("\\-\\-{}", flag.replace('-', "\\-"));
                assert!(body.contains(&roff), "{heading}: --{flag} missing");
            }
            for short in
                cmd.get_arguments().filter(|a| !a.is_hide_set()).filter_map(clap::Arg::get_short)
            {
                assert!(body.contains(&format!("\\-{short}")), "{heading}: -{short} missing");
            }
        }
    }

    #[test]
    fn completions_have_every_subcommand_and_flag() {
        let (root, subs) = tree(true);
        for shell in [Shell::Bash, Shell::Zsh, Shell::Fish, Shell::PowerShell] {
            let text = script(shell);
            for flag in longs(&root) {
                assert!(text.contains(&flag), "{shell}: --{flag}");
            }
            for (path, cmd) in &subs {
                let name = path.last().expect("a subcommand path is not empty");
                assert!(text.contains(name.as_str()), "{shell}: subcommand {}", path.join(" "));
                for flag in longs(cmd) {
                    // Each shell spells a flag its own way: bash and powershell
                    // `--flag`, zsh `--flag=` or `--flag[`, fish `-l flag`.
                    let found = match shell {
                        Shell::Fish => text.contains(&format!("-l {flag}")),
                        _ => text.contains(&format!("--{flag}")),
                    };
                    assert!(found, "{shell}: {} --{flag} missing", path.join(" "));
                }
            }
        }
    }

    #[test]
    fn bash_and_fish_offer_each_flag_under_its_own_subcommand() {
        let (_, subs) = tree(true);
        let bash = script(Shell::Bash);
        let fish = script(Shell::Fish);
        for (path, cmd) in &subs {
            // bash: the subcommand's case arm, then its `opts="..."` line.
            let arm = format!("        rooftop__subcmd__{})\n", path.join("__subcmd__"));
            let at = bash.find(&arm).unwrap_or_else(|| panic!("bash: no arm for {path:?}"));
            let opts = bash[at + arm.len()..].lines().next().unwrap_or_default();
            assert!(opts.trim_start().starts_with("opts=\""), "{path:?}: {opts}");
            let words: Vec<&str> = opts
                .trim()
                .trim_start_matches("opts=\"")
                .trim_end_matches('"')
                .split(' ')
                .collect();
            // fish: the lines whose condition names this subcommand (the last word of
            // the path is what `__fish_seen_subcommand_from` or the using-test names).
            let name = path.last().expect("a subcommand path is not empty");
            let fish_lines: Vec<&str> = fish
                .lines()
                .filter(|l| {
                    l.contains(&format!("__fish_seen_subcommand_from {name}\""))
                        || (path.len() == 1
                            && (l.contains(&format!("__fish_rooftop_using_subcommand {name}\""))
                                || l.contains(&format!("__fish_rooftop_using_subcommand {name};"))))
                })
                .collect();
            for flag in longs(cmd) {
                assert!(words.contains(&format!("--{flag}").as_str()), "bash {path:?}: --{flag}");
                assert!(
                    fish_lines.iter().any(|l| l.contains(&format!(" -l {flag}"))),
                    "fish {path:?}: --{flag}"
                );
            }
        }
    }

    #[test]
    fn bash_script_parses() {
        // `bash -n` parses without running: the script must be valid bash.
        let tmp = tempfile::Builder::new().prefix("rooftop-completion-").tempdir().unwrap();
        let path = tmp.path().join("rooftop.bash");
        std::fs::write(&path, script(Shell::Bash)).expect("write the script");
        let status = std::process::Command::new("bash").arg("-n").arg(&path).status();
        assert!(status.expect("bash runs").success());
    }
}
