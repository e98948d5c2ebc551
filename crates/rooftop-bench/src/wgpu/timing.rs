//! How the wgpu backend times `iters` back-to-back runs.
//!
//! With the adapter's `TIMESTAMP_QUERY` feature: every dispatch is its own compute pass
//! (Apple GPUs write timestamps only at pass boundaries, never inside a pass), and the
//! runs are recorded into command buffers of at most [`MAX_PASSES`] passes. Each command
//! buffer writes a timestamp at the beginning of its first pass and at the end of its
//! last, resolves the pair and copies it to a mapped buffer; the elapsed ticks times
//! `Queue::get_timestamp_period()` (nanoseconds per tick) are summed over the command
//! buffers. The CPU time of submitting and waiting between command buffers is not
//! counted; the gaps between passes within one are.
//!
//! Without it (or with `ROOFTOP_WGPU_TIMER=wall`): a wall clock (`std::time::Instant`)
//! from just before `Queue::submit` to the return of `Device::poll(Wait)`, per command
//! buffer, so the submission and synchronisation costs are included (microseconds per
//! command buffer, amortised over its passes).

use crate::error::BackendError;
use std::time::Instant;

/// Passes per command buffer.
pub const MAX_PASSES: u32 = 2048;

/// The timer of a device.
#[derive(Debug)]
pub enum Timer {
    Timestamps {
        query_set: wgpu::QuerySet,
        resolve: wgpu::Buffer,
        readback: wgpu::Buffer,
        /// Nanoseconds per tick.
        period_ns: f64,
    },
    Wall,
}

impl Timer {
    /// Timestamps when the device has them and `ROOFTOP_WGPU_TIMER` is not `wall`.
    pub fn new(device: &wgpu::Device, queue: &wgpu::Queue) -> Timer {
        let forced_wall =
            std::env::var("ROOFTOP_WGPU_TIMER").is_ok_and(|v| v.eq_ignore_ascii_case("wall"));
        if forced_wall || !device.features().contains(wgpu::Features::TIMESTAMP_QUERY) {
            return Timer::Wall;
        }
        let query_set = device.create_query_set(&wgpu::QuerySetDescriptor {
            label: Some("rooftop timestamps"),
            ty: wgpu::QueryType::Timestamp,
            count: 2,
        });
        let resolve = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("rooftop timestamp resolve"),
            size: 2 * wgpu::QUERY_SIZE as u64,
            usage: wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC,
            mapped_at_creation: false,
        });
        let readback = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("rooftop timestamp readback"),
            size: 2 * wgpu::QUERY_SIZE as u64,
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        Timer::Timestamps {
            query_set,
            resolve,
            readback,
            period_ns: f64::from(queue.get_timestamp_period()),
        }
    }

    /// What `BackendInfo::timer` says.
    pub fn describe(&self) -> String {
        match self {
            Timer::Timestamps { period_ns, .. } => format!(
                "GPU timestamps at compute-pass boundaries (wgpu TIMESTAMP_QUERY, {period_ns} ns \
                 per tick), one dispatch per pass, up to {MAX_PASSES} passes per command buffer"
            ),
            Timer::Wall => "wall clock (std::time::Instant) around queue submit + device poll \
                            (no GPU timestamps: the adapter lacks TIMESTAMP_QUERY or \
                            ROOFTOP_WGPU_TIMER=wall); includes submission and synchronisation \
                            costs"
                .to_string(),
        }
    }

    /// The timestamp writes of a pass: `begin`/`end` say whether this pass opens or
    /// closes the command buffer.
    pub fn writes(&self, begin: bool, end: bool) -> Option<wgpu::ComputePassTimestampWrites<'_>> {
        match self {
            Timer::Timestamps { query_set, .. } if begin || end => {
                Some(wgpu::ComputePassTimestampWrites {
                    query_set,
                    beginning_of_pass_write_index: begin.then_some(0),
                    end_of_pass_write_index: end.then_some(1),
                })
            }
            _ => None,
        }
    }

    /// Submits `encoder` (whose passes were recorded with [`Timer::writes`]) and returns
    /// the seconds it took.
    pub fn submit(
        &self,
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        mut encoder: wgpu::CommandEncoder,
    ) -> Result<f64, BackendError> {
        match self {
            Timer::Wall => {
                let cmd = encoder.finish();
                let start = Instant::now();
                queue.submit([cmd]);
                wait(device)?;
                Ok(start.elapsed().as_secs_f64())
            }
            Timer::Timestamps { query_set, resolve, readback, period_ns } => {
                encoder.resolve_query_set(query_set, 0..2, resolve, 0);
                encoder.copy_buffer_to_buffer(resolve, 0, readback, 0, 2 * wgpu::QUERY_SIZE as u64);
                queue.submit([encoder.finish()]);
                let ticks = read_u64s(device, readback)?;
                let (Some(&t0), Some(&t1)) = (ticks.first(), ticks.get(1)) else {
                    return Err(BackendError::Other("timestamp readback was empty".to_string()));
                };
                if t1 < t0 {
                    return Err(BackendError::Other(format!(
                        "GPU timestamps went backwards ({t0} then {t1} ticks); rerun with \
                         ROOFTOP_WGPU_TIMER=wall"
                    )));
                }
                Ok((t1 - t0) as f64 * period_ns * 1e-9)
            }
        }
    }
}

/// Blocks until the device has finished all submitted work.
pub fn wait(device: &wgpu::Device) -> Result<(), BackendError> {
    device
        .poll(wgpu::PollType::wait_indefinitely())
        .map(|_| ())
        .map_err(|e| BackendError::Other(format!("waiting for the GPU failed: {e}")))
}

/// Maps `buf` (MAP_READ, already written by submitted work), returns its bytes.
pub fn read_bytes(device: &wgpu::Device, buf: &wgpu::Buffer) -> Result<Vec<u8>, BackendError> {
    let (tx, rx) = std::sync::mpsc::channel();
    buf.map_async(wgpu::MapMode::Read, .., move |r| {
        let _ = tx.send(r);
    });
    wait(device)?;
    match rx.recv() {
        Ok(Ok(())) => {}
        Ok(Err(e)) => return Err(BackendError::Other(format!("cannot read a GPU buffer: {e}"))),
        Err(_) => {
            return Err(BackendError::Other(
                "cannot read a GPU buffer: the map callback never ran".to_string(),
            ))
        }
    }
    let bytes = buf
        .get_mapped_range(..)
        .map(|v| v.to_vec())
        .map_err(|e| BackendError::Other(format!("cannot read a GPU buffer: {e}")));
    buf.unmap();
    bytes
}

fn read_u64s(device: &wgpu::Device, buf: &wgpu::Buffer) -> Result<Vec<u64>, BackendError> {
    let bytes = read_bytes(device, buf)?;
    Ok(bytes
        .chunks_exact(8)
        .map(|c| u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]))
        .collect())
}
