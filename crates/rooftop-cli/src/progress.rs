//! Progress bars on stderr and Ctrl-C handling, shared by the long-running commands.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

/// A bar over `len` steps on stderr. It appears only after a second (so quick commands
/// print nothing) and only when stderr is a terminal.
pub fn bar(len: u64, what: &str) -> ProgressBar {
    let pb = ProgressBar::with_draw_target(Some(len), ProgressDrawTarget::stderr());
    let style = ProgressStyle::with_template(
        "{spinner} {prefix} [{bar:30}] {pos}/{len} {elapsed} {wide_msg}",
    )
    .unwrap_or_else(|_| ProgressStyle::default_bar())
    .progress_chars("=> ");
    pb.set_style(style);
    pb.set_prefix(what.to_string());
    // Hidden until a second has passed: short runs stay silent.
    pb.set_draw_target(ProgressDrawTarget::hidden());
    let shown = pb.clone();
    std::thread::spawn(move || {
        std::thread::sleep(Duration::from_secs(1));
        if !shown.is_finished() {
            shown.set_draw_target(ProgressDrawTarget::stderr());
            shown.enable_steady_tick(Duration::from_millis(200));
        }
    });
    pb
}

static FLAG: OnceLock<Arc<AtomicBool>> = OnceLock::new();
/// Whether a command that keeps partial results is running (see [`interrupt_flag`]).
static ARMED: AtomicBool = AtomicBool::new(false);

/// Installs the Ctrl-C (SIGINT) handler, first thing in `main`. Until a command asks for
/// [`interrupt_flag`], Ctrl-C ends the process at once with 130; after, the first one
/// sets the flag (the command stops after the current sample, keeps its results and
/// exits with 130) and a second one ends the process at once.
pub fn install_interrupt_handler() {
    let flag = Arc::clone(FLAG.get_or_init(|| Arc::new(AtomicBool::new(false))));
    // If a handler cannot be installed (another one exists), Ctrl-C keeps its default
    // behaviour; nothing else depends on it.
    let _ = ctrlc::set_handler(move || {
        if !ARMED.load(Ordering::SeqCst) || flag.swap(true, Ordering::SeqCst) {
            std::process::exit(130);
        }
    });
}

/// The flag Ctrl-C sets, for a command that polls it and keeps its partial results.
pub fn interrupt_flag() -> Arc<AtomicBool> {
    let flag = Arc::clone(FLAG.get_or_init(|| Arc::new(AtomicBool::new(false))));
    ARMED.store(true, Ordering::SeqCst);
    flag
}
