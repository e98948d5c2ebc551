//! Timing: CUDA events around the runs on one stream, short runs replayed from a CUDA
//! graph (module doc of [`cuda`](super)), and the notes that say which was used.

use super::launch::Plan;
use super::LaunchReport;
use super::{driver_err, ffi, CudaBackend, GRAPH_BELOW_S, GRAPH_LAUNCHES};
use crate::error::BackendError;
use cudarc::driver::sys;

impl CudaBackend {
    pub(super) fn capture(
        &self,
        plan: &Plan,
        runs: u32,
    ) -> Result<cudarc::driver::CudaGraph, BackendError> {
        self.stream
            .begin_capture(sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)
            .map_err(|e| driver_err("cuStreamBeginCapture", e))?;
        let r = self.enqueue_plan(plan, runs);
        let g = self
            .stream
            .end_capture(
                sys::CUgraphInstantiate_flags::CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH,
            )
            .map_err(|e| driver_err("cuStreamEndCapture", e))?;
        r?;
        g.ok_or_else(|| BackendError::Other("graph capture returned no graph".to_string()))
    }

    /// Times `iters` runs of a prepared plan (module doc).
    pub(super) fn time(&mut self, plan: &mut Plan, iters: u32) -> Result<f64, BackendError> {
        let iters = iters.max(1);
        let use_graph = plan.graphable
            && iters >= 2
            && plan.stream_per_run_s.is_some_and(|t| t < GRAPH_BELOW_S);
        if use_graph {
            let g = iters.min(GRAPH_LAUNCHES);
            if plan.graph.as_ref().is_none_or(|(n, _)| *n != g) {
                plan.graph = None;
                let graph = self.capture(plan, g)?;
                graph.upload().map_err(|e| driver_err("cuGraphUpload", e))?;
                plan.graph = Some((g, graph));
            }
        }
        let (start, end) = &self.events;
        start.record(&self.stream).map_err(|e| driver_err("cuEventRecord", e))?;
        let mut graph_used = false;
        match plan.graph.as_ref().filter(|_| use_graph) {
            Some((g, graph)) => {
                for _ in 0..iters / g {
                    graph.launch().map_err(|e| driver_err("cuGraphLaunch", e))?;
                }
                self.enqueue_plan(plan, iters % g)?;
                graph_used = true;
            }
            None => self.enqueue_plan(plan, iters)?,
        }
        end.record(&self.stream).map_err(|e| driver_err("cuEventRecord", e))?;
        let ms = ffi::elapsed_ms(start, end).map_err(BackendError::Other)?;
        // Errors of the kernels themselves (illegal address, ...) surface here.
        self.stream.synchronize().map_err(|e| driver_err("running the kernel", e))?;
        let seconds = f64::from(ms) / 1e3;
        let per_run = seconds / f64::from(iters);
        if graph_used {
            for &r in &plan.reports {
                self.reports[r].graph_s = Some(per_run);
            }
            if let Some(stream_s) = plan.stream_per_run_s {
                let label = plan.label.clone();
                self.note_once(
                    format!("graph {label}"),
                    format!(
                        "{label}: {} per run replayed from a CUDA graph, {} launched one by one \
                         (launch overhead about {} per run); the graph time is reported",
                        rooftop_core::units::si(per_run, "s"),
                        rooftop_core::units::si(stream_s, "s"),
                        rooftop_core::units::si((stream_s - per_run).max(0.0), "s")
                    ),
                );
            }
        } else {
            plan.stream_per_run_s = Some(per_run);
            for &r in &plan.reports {
                self.reports[r].stream_s = Some(per_run);
            }
        }
        for &r in &plan.reports.clone() {
            let rep = self.reports[r].clone();
            self.note_once(format!("occ {}", rep.label), occupancy_note(&rep));
        }
        Ok(seconds)
    }
}

/// One line on a launch's resources and theoretical occupancy, or why it is unknown.
pub(super) fn occupancy_note(rep: &LaunchReport) -> String {
    let known = |v: Option<u32>| v.map_or_else(|| "unknown".to_string(), |v| v.to_string());
    let resources = format!(
        "{}: {} registers/thread, {} B static shared memory, {} threads/block",
        rep.label,
        known(rep.regs_per_thread),
        known(rep.static_smem_bytes),
        rep.threads_per_block
    );
    match (rep.occupancy_pct, rep.blocks_per_sm, rep.limiter.as_deref()) {
        (Some(pct), Some(blocks), Some(limiter)) => format!(
            "{resources}: theoretical occupancy {pct:.0}% ({blocks} blocks/SM, limited by \
             {limiter})"
        ),
        _ => format!(
            "{resources}: theoretical occupancy unknown ({})",
            rep.occupancy_unknown.as_deref().unwrap_or("not computed")
        ),
    }
}
