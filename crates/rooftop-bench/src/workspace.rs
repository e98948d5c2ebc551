//! Buffers kept between cases, and the account of where a run's time went.
//!
//! A benchmark run measures dozens of cases whose buffers have the same few shapes (every
//! 1-D kernel at 32 Mi elements, every row kernel at 4 Ki × 4 Ki). Allocating, filling,
//! faulting in and freeing them per case cost more than the measurement itself (a mock
//! suite that runs no kernel spent 22 s in the kernel's page-fault handler). A
//! [`Workspace`] keeps, for each buffer *slot* (element type, length, initialiser,
//! position in the kernel's buffer list), the host contents and the device buffer:
//! - inputs are filled once per slot (from a seed derived from the slot, so every case
//!   with that slot sees the same values) and uploaded once; they stay valid on the
//!   device while the kernels that use them only write their outputs (the suite's
//!   contract; a kernel that may write anywhere, a user's, invalidates its inputs);
//! - outputs are re-filled (poison or sentinel) before every case by an upload into the
//!   existing device buffer: a copy, no allocation;
//! - slots the current case does not use are kept up to a byte budget
//!   ([`Workspace::DEFAULT_KEEP_BYTES`], at most a quarter of the backend's memory) and
//!   released least recently used first.
//!
//! Invariant: the host contents of a slot are what its device buffer holds before the
//! kernel runs (inputs) or what it is reset to (outputs); the harness computes the
//! reference from them.
//!
//! Time: every case reports a [`CaseTime`]; the workspace sums them, so a run can say
//! which share of its wall time went into timed runs and warm-up.

use crate::backend::{Backend, BufId, DType, HostBuf};
use crate::case::Case;
use crate::error::BenchError;
use crate::rng::{self, Init};
use crate::suite::{BufferSpec, Kernel};
use serde::Serialize;

/// Where one case's wall time went (seconds).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct CaseTime {
    /// Everything, from the first allocation to the last sample.
    pub total_s: f64,
    /// Buffers: allocating, filling with random inputs, uploading, preparing the kernel
    /// (near zero when the workspace already holds the case's buffers).
    pub setup_s: f64,
    /// Downloading the checked run's outputs, computing the reference, comparing.
    pub check_s: f64,
    /// Runs before sampling, the checked run included (wall clock around each run).
    pub warmup_s: f64,
    /// The timed samples (wall clock around each, cache flushes included).
    pub sampling_s: f64,
}

impl CaseTime {
    /// Warm-up and sampling: the time spent running the kernel.
    pub fn runs_s(&self) -> f64 {
        self.warmup_s + self.sampling_s
    }

    /// Adds `o` to `self`.
    pub fn add(&mut self, o: &CaseTime) {
        self.total_s += o.total_s;
        self.setup_s += o.setup_s;
        self.check_s += o.check_s;
        self.warmup_s += o.warmup_s;
        self.sampling_s += o.sampling_s;
    }
}

/// What identifies a reusable buffer.
#[derive(Debug, Clone, PartialEq)]
struct Slot {
    dtype: DType,
    len: usize,
    init: Init,
    output: bool,
    /// Position in the kernel's buffer list.
    pos: usize,
    /// Where the contents come from when not from the generator (`Kernel::input_source`:
    /// a file).
    source: Option<String>,
}

impl Slot {
    fn of(pos: usize, s: &BufferSpec, source: Option<String>) -> Slot {
        Slot { dtype: s.dtype, len: s.len, init: s.init, output: s.output, pos, source }
    }

    fn bytes(&self) -> u64 {
        (self.len as u64).saturating_mul(self.dtype.size_bytes() as u64)
    }

    /// The seed of the slot's contents: the run's seed mixed with the slot.
    fn seed(&self, base: u64) -> u64 {
        let text = format!(
            "{}:{}:{:?}:{}:{}",
            self.dtype.as_str(),
            self.len,
            self.init,
            self.output,
            self.pos
        );
        base ^ fnv1a(&text)
    }
}

#[derive(Debug)]
struct Entry {
    slot: Slot,
    /// `None` while lent to a case.
    host: Option<HostBuf>,
    dev: BufId,
    /// The device buffer holds `host` (inputs only; outputs are reset every case).
    dev_valid: bool,
    /// Outputs: where the checked run's results are downloaded (kept to reuse its
    /// allocation).
    scratch: Option<HostBuf>,
    last_use: u64,
}

/// Buffers and time accounts shared by the cases of one run on one backend.
#[derive(Debug)]
pub struct Workspace {
    entries: Vec<Entry>,
    tick: u64,
    keep_bytes: u64,
    /// The sum of the [`CaseTime`]s of every case run in this workspace.
    pub total: CaseTime,
}

/// The buffers of one case, lent by the workspace: host contents in the kernel's order
/// and the device buffers.
#[derive(Debug)]
pub struct Lease {
    pub host: Vec<HostBuf>,
    pub ids: Vec<BufId>,
    /// One download buffer per output, in order (contents unspecified).
    pub scratch: Vec<HostBuf>,
    entries: Vec<usize>,
}

impl Default for Workspace {
    fn default() -> Self {
        Workspace::new()
    }
}

impl Workspace {
    /// Bytes of buffers (host and device together) kept for later cases beyond what the
    /// current case uses, by default.
    pub const DEFAULT_KEEP_BYTES: u64 = 1 << 30;

    pub fn new() -> Workspace {
        Workspace::with_keep_bytes(Workspace::DEFAULT_KEEP_BYTES)
    }

    /// A workspace that keeps at most `bytes` of unused buffers (0: none are reused).
    pub fn with_keep_bytes(bytes: u64) -> Workspace {
        Workspace { entries: Vec::new(), tick: 0, keep_bytes: bytes, total: CaseTime::default() }
    }

    /// Lends the buffers of a case: reused where a slot matches, else allocated, filled
    /// (inputs from `seed`) and uploaded; outputs reset to their initial contents.
    /// Inputs that `kernel` reads from elsewhere (`Kernel::input_source`) are loaded
    /// through it.
    pub fn lease(
        &mut self,
        backend: &mut dyn Backend,
        kernel: &dyn Kernel,
        case: &Case,
        specs: &[BufferSpec],
        seed: u64,
    ) -> Result<Lease, BenchError> {
        self.tick += 1;
        let slots: Vec<Slot> = specs
            .iter()
            .enumerate()
            .map(|(i, s)| {
                Slot::of(i, s, if s.output { None } else { kernel.input_source(case, i) })
            })
            .collect();
        let mut keep = self.keep_bytes;
        if let Some(avail) = backend.available_memory_bytes() {
            keep = keep.min(avail / 4);
        }
        self.evict(backend, &slots, keep);
        let mut lease =
            Lease { host: Vec::new(), ids: Vec::new(), scratch: Vec::new(), entries: Vec::new() };
        for slot in slots {
            let found = self.entries.iter().position(|e| e.slot == slot && e.host.is_some());
            let i = match found {
                Some(i) => i,
                None => match new_entry(backend, kernel, case, slot, seed) {
                    Ok(e) => {
                        self.entries.push(e);
                        self.entries.len() - 1
                    }
                    Err(e) => {
                        self.give_back(lease);
                        return Err(e);
                    }
                },
            };
            let e = &mut self.entries[i];
            e.last_use = self.tick;
            if e.slot.output || !e.dev_valid {
                if let Some(h) = &e.host {
                    if let Err(err) = backend.upload(e.dev, h) {
                        // The slot's device contents are unknown: drop it (after the
                        // lease's entries are back, so that no index moves under them).
                        self.give_back(lease);
                        let e = self.entries.swap_remove(i);
                        backend.free(e.dev);
                        return Err(err.into());
                    }
                }
                e.dev_valid = !e.slot.output;
            }
            lease.ids.push(e.dev);
            lease.host.push(e.host.take().unwrap_or_else(|| HostBuf::zeros(e.slot.dtype, 0)));
            if e.slot.output {
                lease
                    .scratch
                    .push(e.scratch.take().unwrap_or_else(|| HostBuf::zeros(e.slot.dtype, 0)));
            }
            lease.entries.push(i);
        }
        Ok(lease)
    }

    /// Takes the buffers of a case back. With `inputs_intact` false (a kernel that may
    /// have written its inputs), the inputs are uploaded again before their next use.
    pub fn give_back_after(&mut self, lease: Lease, inputs_intact: bool) {
        let mut scratch = lease.scratch.into_iter();
        for (i, h) in lease.entries.into_iter().zip(lease.host) {
            if let Some(e) = self.entries.get_mut(i) {
                e.host = Some(h);
                if e.slot.output {
                    e.scratch = scratch.next();
                }
                if !inputs_intact {
                    e.dev_valid = false;
                }
            }
        }
    }

    fn give_back(&mut self, lease: Lease) {
        self.give_back_after(lease, true);
    }

    /// Frees least recently used entries the next case does not use until at most
    /// `keep` bytes (host and device) of them remain.
    fn evict(&mut self, backend: &mut dyn Backend, next: &[Slot], keep: u64) {
        let unused = |e: &Entry| !next.contains(&e.slot);
        let mut kept: u64 =
            self.entries.iter().filter(|e| unused(e)).map(|e| 2 * e.slot.bytes()).sum();
        while kept > keep {
            let Some((i, _)) = self
                .entries
                .iter()
                .enumerate()
                .filter(|(_, e)| unused(e))
                .min_by_key(|(_, e)| e.last_use)
            else {
                break;
            };
            let e = self.entries.swap_remove(i);
            kept = kept.saturating_sub(2 * e.slot.bytes());
            backend.free(e.dev);
        }
    }

    /// Frees every buffer (call before the backend goes away or when done).
    pub fn release(&mut self, backend: &mut dyn Backend) {
        for e in self.entries.drain(..) {
            backend.free(e.dev);
        }
    }

    /// Bytes held (host and device).
    pub fn held_bytes(&self) -> u64 {
        self.entries.iter().map(|e| 2 * e.slot.bytes()).sum()
    }
}

/// A new entry for `slot`: contents from the kernel's source or the generator, a device
/// buffer allocated (not yet uploaded).
fn new_entry(
    backend: &mut dyn Backend,
    kernel: &dyn Kernel,
    case: &Case,
    slot: Slot,
    seed: u64,
) -> Result<Entry, BenchError> {
    let host = if slot.source.is_some() {
        kernel.load_input(case, slot.pos).map_err(|message| {
            BenchError::Suite(crate::error::SuiteError::BadConfig {
                kernel: case.kernel.to_string(),
                message,
            })
        })?
    } else {
        rng::fill(slot.dtype, slot.len, slot.init, slot.seed(seed))
    };
    let dev = backend.alloc(slot.dtype, slot.len)?;
    Ok(Entry {
        scratch: slot.output.then(|| HostBuf::zeros(slot.dtype, 0)),
        slot,
        host: Some(host),
        dev,
        dev_valid: false,
        last_use: 0,
    })
}

/// FNV-1a, to derive seeds deterministically.
pub(crate) fn fnv1a(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mock::{MockBackend, MockConfig};

    fn k() -> &'static dyn Kernel {
        crate::suite::find("copy").unwrap()
    }

    fn case() -> Case {
        Case {
            kernel: "copy",
            sizes: vec![("n", 1000)],
            dtype: rooftop_core::units::Precision::Fp32,
            weights: None,
            variant: None,
        }
    }

    fn spec(len: usize, output: bool) -> BufferSpec {
        if output {
            BufferSpec::output("y", DType::F32, len)
        } else {
            BufferSpec::input("x", DType::F32, len, Init::Uniform { lo: 0.0, hi: 1.0 })
        }
    }

    #[test]
    fn same_slots_are_reused_and_outputs_reset() {
        let mut b = MockBackend::new(MockConfig::default());
        let mut ws = Workspace::new();
        let specs = [spec(1000, false), spec(1000, true)];
        let l = ws.lease(&mut b, k(), &case(), &specs, 7).unwrap();
        let (ids, x) = (l.ids.clone(), l.host[0].clone());
        // The kernel writes its output.
        b.upload(ids[1], &HostBuf::F32(vec![1.0; 1000])).unwrap();
        ws.give_back_after(l, true);
        let l = ws.lease(&mut b, k(), &case(), &specs, 7).unwrap();
        assert_eq!(l.ids, ids, "the same device buffers");
        assert_eq!(l.host[0], x, "the same inputs");
        // The output was reset to its poison on the device.
        let HostBuf::F32(y) = b.download(ids[1]).unwrap() else { panic!() };
        assert!(y.iter().all(|v| v.is_nan()));
        ws.give_back_after(l, true);
        assert_eq!(ws.held_bytes(), 2 * 2 * 4000);
    }

    #[test]
    fn unused_slots_beyond_the_budget_are_freed_oldest_first() {
        let mut b = MockBackend::new(MockConfig::default());
        // Keeps 10 kB of unused buffers: one 1000-element f32 slot (2 x 4 kB).
        let mut ws = Workspace::with_keep_bytes(10_000);
        for len in [1000, 2000, 3000] {
            let l = ws.lease(&mut b, k(), &case(), &[spec(len, false)], 1).unwrap();
            ws.give_back_after(l, true);
        }
        // Before the third case: slots 1000 and 2000 unused (8 + 16 kB) > 10 kB → the
        // oldest (1000) goes, then 16 kB > 10 kB → 2000 goes too.
        assert_eq!(ws.held_bytes(), 2 * 12_000);
    }
}
