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
//! - on a backend whose buffers are host memory (CPU, mock, host closures) an input is
//!   *resident*: handed to the backend (a move, no copy) and not kept here; the check
//!   borrows it back for the reference ([`Lease::borrow_inputs`]), between runs;
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
use crate::harness::{CaseResult, TimingOptions};
use crate::rng::{self, Init};
use crate::suite::{BufferSpec, Kernel};
pub use rooftop_core::schema::bench::CaseTime;

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
    /// The host contents; `None` while lent to a case, and always for resident inputs.
    host: Option<HostBuf>,
    /// An input whose only copy is the backend's buffer (host-memory backends).
    resident: bool,
    /// Lent to the current case.
    lent: bool,
    /// A resident input a kernel may have written: refilled before its next use.
    stale: bool,
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
    /// Results kept to answer the same case again (see [`Workspace::remember`]).
    results: Vec<(TimingOptions, CaseResult)>,
    remember: bool,
    /// The last reference computed, for the next implementation of the same case.
    pub(crate) reference: ReferenceMemo,
}

/// The reference outputs of the last case checked by a materialised reference: the same
/// case with the same inputs (the slots make them the same) has the same reference, so a
/// built-in and our implementation of one GEMM share one computation.
#[derive(Debug, Default)]
pub(crate) struct ReferenceMemo {
    key: Option<(Case, u64)>,
    outputs: Vec<HostBuf>,
}

impl ReferenceMemo {
    /// The reference of `case` (inputs from `seed`), computed by `compute` unless it is
    /// the last one.
    pub(crate) fn get(
        &mut self,
        case: &Case,
        seed: u64,
        compute: impl FnOnce() -> Vec<HostBuf>,
    ) -> &[HostBuf] {
        let key = (case.clone(), seed);
        if self.key.as_ref() != Some(&key) {
            self.outputs = compute();
            self.key = Some(key);
        }
        &self.outputs
    }
}

/// The buffers of one case, lent by the workspace: host contents in the kernel's order
/// and the device buffers.
#[derive(Debug)]
pub struct Lease {
    /// Host contents in buffer order; resident inputs are empty placeholders until
    /// [`Lease::borrow_inputs`].
    pub host: Vec<HostBuf>,
    pub ids: Vec<BufId>,
    /// One download buffer per output, in order (contents unspecified).
    pub scratch: Vec<HostBuf>,
    entries: Vec<usize>,
    /// Positions of resident inputs.
    resident: Vec<usize>,
    /// Resident inputs are in `host` (borrowed from the backend).
    borrowed: bool,
}

impl Lease {
    /// Moves resident inputs out of the backend into `host`, for the reference; the
    /// kernel must not run until [`Lease::return_inputs`].
    pub fn borrow_inputs(&mut self, backend: &mut dyn Backend) -> Result<(), BenchError> {
        if self.borrowed {
            return Ok(());
        }
        for &pos in &self.resident {
            let id = self.ids[pos];
            let Some(h) = backend.take_host(id) else {
                // Nothing moved yet for this one: put back what was.
                self.borrowed = true;
                self.return_inputs(backend);
                return Err(BenchError::Backend(crate::error::BackendError::BadBuffer(id.0)));
            };
            self.host[pos] = h;
        }
        self.borrowed = true;
        Ok(())
    }

    /// Moves borrowed inputs back into the backend.
    pub fn return_inputs(&mut self, backend: &mut dyn Backend) {
        if !self.borrowed {
            return;
        }
        for &pos in &self.resident {
            let h = std::mem::replace(&mut self.host[pos], HostBuf::U8(Vec::new()));
            if !h.is_empty() {
                backend.put_host(self.ids[pos], h);
            }
        }
        self.borrowed = false;
    }
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
        Workspace {
            entries: Vec::new(),
            tick: 0,
            keep_bytes: bytes,
            total: CaseTime::default(),
            results: Vec::new(),
            remember: false,
            reference: ReferenceMemo::default(),
        }
    }

    /// Keeps every checked and timed result, so that the same case (kernel, sizes,
    /// implementation, launch, timing options) asked for again in this workspace is
    /// answered with it instead of being measured twice: `rooftop bench` measures its
    /// quick ceilings with the suite's own `triad`, `copy`, `read` and `write` cases.
    pub fn remember_results(&mut self) {
        self.remember = true;
    }

    /// Forgets the kept results and keeps no more (to measure the same cases again).
    pub fn forget_results(&mut self) {
        self.remember = false;
        self.results.clear();
    }

    /// A result of the same case measured earlier, if kept.
    pub(crate) fn recall(
        &self,
        case: &Case,
        implementation: &str,
        launch: &crate::backend::Launch,
        opts: &TimingOptions,
    ) -> Option<CaseResult> {
        self.results
            .iter()
            .find(|(o, r)| {
                o == opts
                    && r.case == *case
                    && r.implementation.id == implementation
                    && r.launch == *launch
            })
            .map(|(_, r)| r.clone())
    }

    /// Keeps `r` when results are remembered and it was checked and timed in full.
    pub(crate) fn keep(&mut self, opts: &TimingOptions, r: &CaseResult) {
        if self.remember && r.check.passed && r.timing.is_some() && !r.interrupted {
            self.results.push((opts.clone(), r.clone()));
        }
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
        let mut lease = Lease {
            host: Vec::new(),
            ids: Vec::new(),
            scratch: Vec::new(),
            entries: Vec::new(),
            resident: Vec::new(),
            borrowed: false,
        };
        for slot in slots {
            let found = self.entries.iter().position(|e| e.slot == slot && !e.lent && !e.stale);
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
            e.lent = true;
            lease.ids.push(e.dev);
            if e.resident {
                lease.resident.push(lease.host.len());
            }
            lease.host.push(e.host.take().unwrap_or_else(|| HostBuf::U8(Vec::new())));
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
                e.lent = false;
                if !e.resident {
                    e.host = Some(h);
                }
                if e.slot.output {
                    e.scratch = scratch.next();
                }
                if !inputs_intact {
                    e.dev_valid = false;
                    // A resident input has no other copy to restore it from.
                    e.stale |= e.resident;
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
        // Stale entries are of no use.
        while let Some(i) = self.entries.iter().position(|e| e.stale && !e.lent) {
            let e = self.entries.swap_remove(i);
            backend.free(e.dev);
        }
        let unused = |e: &Entry| !next.contains(&e.slot);
        let mut kept: u64 = self.entries.iter().filter(|e| unused(e)).map(Entry::bytes).sum();
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
            kept = kept.saturating_sub(e.bytes());
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
        self.entries.iter().map(Entry::bytes).sum()
    }
}

impl Entry {
    /// Bytes held: the device buffer, and the host copy unless resident.
    fn bytes(&self) -> u64 {
        if self.resident {
            self.slot.bytes()
        } else {
            2 * self.slot.bytes()
        }
    }
}

/// A new entry for `slot`: contents from the kernel's source or the generator, a device
/// buffer allocated; an input is handed to a host-memory backend (resident), else kept
/// here and uploaded by the lease.
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
    let (host, resident) = if slot.output {
        (Some(host), false)
    } else {
        match backend.upload_owned(dev, host) {
            Ok(None) => (None, true),
            Ok(Some(kept)) => (Some(kept), false),
            Err(e) => {
                backend.free(dev);
                return Err(e.into());
            }
        }
    };
    Ok(Entry {
        scratch: slot.output.then(|| HostBuf::zeros(slot.dtype, 0)),
        slot,
        host,
        resident,
        lent: false,
        stale: false,
        dev,
        // A resident input is in the backend already; a kept one is uploaded by the lease.
        dev_valid: resident,
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
    use crate::suite::KernelId;

    fn k() -> &'static dyn Kernel {
        KernelId::Copy.def()
    }

    fn case() -> Case {
        Case {
            kernel: KernelId::Copy.into(),
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
        let mut l = ws.lease(&mut b, k(), &case(), &specs, 7).unwrap();
        // The mock's buffers are host memory: the input lives there only, and the check
        // borrows it back.
        assert!(l.host[0].is_empty());
        l.borrow_inputs(&mut b).unwrap();
        let (ids, x) = (l.ids.clone(), l.host[0].clone());
        assert_eq!(x.len(), 1000);
        l.return_inputs(&mut b);
        assert_eq!(b.host_buffer(ids[0]), Some(&x), "back in the backend");
        // The kernel writes its output.
        b.upload(ids[1], &HostBuf::F32(vec![1.0; 1000])).unwrap();
        ws.give_back_after(l, true);
        let mut l = ws.lease(&mut b, k(), &case(), &specs, 7).unwrap();
        assert_eq!(l.ids, ids, "the same device buffers");
        l.borrow_inputs(&mut b).unwrap();
        assert_eq!(l.host[0], x, "the same inputs");
        l.return_inputs(&mut b);
        // The output was reset to its poison on the device.
        let HostBuf::F32(y) = b.download(ids[1]).unwrap() else { panic!() };
        assert!(y.iter().all(|v| v.is_nan()));
        ws.give_back_after(l, true);
        // The input once (in the backend), the output twice (its poison kept here).
        assert_eq!(ws.held_bytes(), 4000 + 2 * 4000);
    }

    #[test]
    fn inputs_a_kernel_may_have_written_are_filled_again() {
        let mut b = MockBackend::new(MockConfig::default());
        let mut ws = Workspace::new();
        let specs = [spec(10, false)];
        let l = ws.lease(&mut b, k(), &case(), &specs, 3).unwrap();
        let id = l.ids[0];
        let x = b.host_buffer(id).unwrap().clone();
        b.upload(id, &HostBuf::F32(vec![0.0; 10])).unwrap(); // a stray write
        ws.give_back_after(l, false);
        let mut l = ws.lease(&mut b, k(), &case(), &specs, 3).unwrap();
        l.borrow_inputs(&mut b).unwrap();
        assert_eq!(l.host[0], x, "refilled from the seed, not the written values");
        l.return_inputs(&mut b);
        ws.give_back_after(l, true);
    }

    #[test]
    fn unused_slots_beyond_the_budget_are_freed_oldest_first() {
        let mut b = MockBackend::new(MockConfig::default());
        // Keeps 10 kB of unused buffers. Inputs on the mock are held once (4 bytes per
        // element).
        let mut ws = Workspace::with_keep_bytes(10_000);
        for len in [1000, 2000, 3000] {
            let l = ws.lease(&mut b, k(), &case(), &[spec(len, false)], 1).unwrap();
            ws.give_back_after(l, true);
        }
        // Before the third case: slots 1000 and 2000 unused (4 + 8 kB) > 10 kB → the
        // oldest (1000) goes; 8 kB remain, with the third's 12 kB.
        assert_eq!(ws.held_bytes(), 8_000 + 12_000);
    }
}
