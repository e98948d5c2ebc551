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

/// A flag set by Ctrl-C (SIGINT). The first Ctrl-C asks the command to stop after the
/// current sample and keep its results; a second one ends the process at once.
pub fn interrupt_flag() -> Arc<AtomicBool> {
    static FLAG: OnceLock<Arc<AtomicBool>> = OnceLock::new();
    FLAG.get_or_init(|| {
        let flag = Arc::new(AtomicBool::new(false));
        let f = Arc::clone(&flag);
        // If a handler cannot be installed (another one exists), Ctrl-C keeps its
        // default behaviour; nothing else depends on it.
        let _ = ctrlc::set_handler(move || {
            if f.swap(true, Ordering::SeqCst) {
                std::process::exit(130);
            }
        });
        flag
    })
    .clone()
}
