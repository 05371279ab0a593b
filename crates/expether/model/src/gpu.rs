//! A K20-class GPU running an SSSP-like loop (seed 002 §4.2.1, Fig. 4.8; expether.md §9.6).
//!
//! The seed: NVIDIA K20, the authors' SSSP (ref. [63]), which iterates until convergence with
//! CPU-GPU communication in every iteration; the graph sizes were varied; the overhead over a
//! local GPU, 27 % on average, comes from that per-iteration traffic. Everything numeric here is
//! an assumption or calibrated (the platform file says which).
//!
//! One iteration, as the host drives it: copy a 4-byte "changed" flag to the GPU (the GPU reads
//! it from host memory, a non-posted request), launch the relaxation kernel (a doorbell; the
//! kernel takes `kernel_fixed` plus `edge_time` per edge), copy the flag back (the GPU writes
//! it to host memory). Each step ends with the GPU writing a completion word that the host
//! polls, and each costs the host driver `launch` or `copy` before its doorbell.

use base::SimTime;

/// GPU and driver costs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GpuTiming {
    /// Host driver time to launch a kernel, before the doorbell.
    pub launch: SimTime,
    /// Host driver time to start a small cudaMemcpy, before the doorbell.
    pub copy: SimTime,
    /// Kernel time that does not depend on the graph (start, drain, grid barrier).
    pub kernel_fixed: SimTime,
    /// Kernel time per edge relaxed [ps].
    pub edge_time_ps: u64,
    /// From a doorbell reaching the GPU to its engine starting the work.
    pub engine_start: SimTime,
}

/// One graph of the experiment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SsspGraph {
    /// Vertices.
    pub vertices: u64,
    /// Edges per vertex.
    pub degree: u64,
    /// Iterations until convergence.
    pub iterations: u32,
}

impl GpuTiming {
    /// The relaxation kernel's run time on `g`.
    pub fn kernel(&self, g: &SsspGraph) -> SimTime {
        let edges = g.vertices * g.degree;
        self.kernel_fixed + SimTime::from_ps(edges.saturating_mul(self.edge_time_ps))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_time_grows_with_edges() {
        let t = GpuTiming {
            launch: SimTime::from_us(5),
            copy: SimTime::from_us(4),
            kernel_fixed: SimTime::from_us(3),
            edge_time_ps: 500,
            engine_start: SimTime::from_ns(500),
        };
        let g = SsspGraph { vertices: 1000, degree: 8, iterations: 10 };
        assert_eq!(t.kernel(&g), SimTime::from_us(7));
    }
}
