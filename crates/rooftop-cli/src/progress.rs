//! Progress bars on stderr and Ctrl-C handling, shared by the long-running commands.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};

/// How long a bar stays hidden.
const HIDDEN_FOR: Duration = Duration::from_secs(1);

/// A bar over `len` steps on stderr. It appears only after a second (so quick commands
/// print nothing) and only when stderr is a terminal.
pub fn bar(len: u64, what: &str) -> ProgressBar {
    // Hidden from the start: a bar made on stderr draws itself at once when its style
    // or prefix is set, and hiding it then leaves that line on the terminal (every
    // `rooftop trace` printed `reading [====] 0/0 0s` and `analysing …` that way).
    let pb = ProgressBar::with_draw_target(Some(len), ProgressDrawTarget::hidden());
    let style = ProgressStyle::with_template(
        "{spinner} {prefix} [{bar:30}] {pos}/{len} {elapsed} {wide_msg}",
    )
    .unwrap_or_else(|_| ProgressStyle::default_bar())
    .progress_chars("=> ");
    pb.set_style(style);
    pb.set_prefix(what.to_string());
    // Shown once a second has passed: short runs stay silent.
    show_later(pb.clone());
    pb
}

/// Bars hidden for now, each with when to show it, and the signal that one was added.
static HIDDEN: (Mutex<Vec<(Instant, ProgressBar)>>, Condvar) =
    (Mutex::new(Vec::new()), Condvar::new());

/// Shows `pb` a second from now unless it has finished by then: one thread shows every
/// bar ([`start_showing`]); a thread per bar took a tenth of a millisecond to start,
/// twice per `rooftop trace`, while the rest of the run waited.
fn show_later(pb: ProgressBar) {
    let (list, added) = &HIDDEN;
    list.lock().unwrap_or_else(PoisonError::into_inner).push((Instant::now() + HIDDEN_FOR, pb));
    added.notify_one();
    start_showing();
}

/// Starts the thread that shows hidden bars when they are due, once; a command whose
/// bars come later may call it early, from another thread.
pub fn start_showing() {
    static STARTED: OnceLock<()> = OnceLock::new();
    STARTED.get_or_init(|| {
        // Without the thread, bars stay hidden: nothing else depends on it.
        let _ = std::thread::Builder::new().name("progress".into()).spawn(show_due);
    });
}

/// The showing thread: each hidden bar that is due and not finished is drawn from then
/// on, a finished one forgotten; then it sleeps until the next is due or one is added.
fn show_due() {
    let (list, added) = &HIDDEN;
    let mut bars = list.lock().unwrap_or_else(PoisonError::into_inner);
    loop {
        for pb in take_due(&mut bars, Instant::now()) {
            pb.set_draw_target(ProgressDrawTarget::stderr());
            pb.enable_steady_tick(Duration::from_millis(200));
        }
        bars = match bars.iter().map(|(due, _)| *due).min() {
            Some(next) => {
                let wait = next.saturating_duration_since(Instant::now());
                added.wait_timeout(bars, wait).unwrap_or_else(PoisonError::into_inner).0
            }
            None => added.wait(bars).unwrap_or_else(PoisonError::into_inner),
        };
    }
}

/// Takes the bars due at `now` out of `bars` and returns those not finished; finished
/// bars are dropped whenever they are due, and the others stay.
fn take_due(bars: &mut Vec<(Instant, ProgressBar)>, now: Instant) -> Vec<ProgressBar> {
    let mut due = Vec::new();
    bars.retain(|(when, pb)| {
        if pb.is_finished() {
            return false;
        }
        if *when > now {
            return true;
        }
        due.push(pb.clone());
        false
    });
    due
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bars_due_are_shown_finished_ones_forgotten_later_ones_kept() {
        let now = Instant::now();
        let hidden = || ProgressBar::with_draw_target(Some(10), ProgressDrawTarget::hidden());
        let (due, finished, later, finished_later) = (hidden(), hidden(), hidden(), hidden());
        due.set_position(3);
        finished.finish();
        finished_later.finish();
        let mut bars = vec![
            (now, due),
            (now, finished),
            (now + HIDDEN_FOR, later),
            (now + HIDDEN_FOR, finished_later),
        ];
        let shown = take_due(&mut bars, now + Duration::from_millis(1));
        assert_eq!(shown.iter().map(ProgressBar::position).collect::<Vec<_>>(), [3]);
        assert_eq!(bars.len(), 1);
        assert!(!bars[0].1.is_finished());
        assert!(bars[0].0 > now);
        // Due now: shown; nothing left to wait for.
        assert_eq!(take_due(&mut bars, now + HIDDEN_FOR).len(), 1);
        assert!(bars.is_empty());
    }
}
