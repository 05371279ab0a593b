//! The SSSP loop on a GPU (seed 002 §4.2.1, Fig. 4.8), as TLPs: per iteration the host copies a
//! 4-byte flag to the GPU (the GPU's copy engine reads it from host memory), launches the
//! relaxation kernel, and copies the flag back (the GPU writes it to host memory). Each step
//! starts with the driver's CPU time and a doorbell write and ends when the GPU's completion
//! word reaches host memory, where the host polls it. Timing: `expether_model::GpuTiming`.

use crate::system::{Node, Timers};
use crate::tlp::{address, parts, Kind, Region, Tlp};
use base::SimTime;
use expether_model::{GpuTiming, HostTiming, SsspGraph};
use std::collections::VecDeque;

const FLAG_BYTES: u32 = 4;

/// The steps of one iteration.
const STEPS: [Step; 3] = [Step::CopyIn, Step::Kernel, Step::CopyOut];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    CopyIn = 1,
    Kernel = 2,
    CopyOut = 3,
}

/// The host driving the loop.
pub struct GpuHost {
    gpu: GpuTiming,
    host: HostTiming,
    iterations: u32,
    iteration: u32,
    step: usize,
    out: VecDeque<Tlp>,
    pending: Option<u16>,
    /// When the last iteration ended.
    pub finished: Option<SimTime>,
    step_start: SimTime,
    spans: Option<Vec<(String, SimTime, SimTime)>>,
}

const RING: u64 = 1;
const RESPOND: u64 = 2;

impl GpuHost {
    /// A host running `graph.iterations` iterations.
    pub fn new(gpu: GpuTiming, host: HostTiming, graph: &SsspGraph, trace: bool) -> Self {
        GpuHost {
            gpu,
            host,
            iterations: graph.iterations,
            iteration: 0,
            step: 0,
            out: VecDeque::new(),
            pending: None,
            finished: None,
            step_start: SimTime::ZERO,
            spans: trace.then(Vec::new),
        }
    }

    fn begin(&mut self, now: SimTime, timers: &mut Timers) {
        let cost = if STEPS[self.step] == Step::Kernel { self.gpu.launch } else { self.gpu.copy };
        self.step_start = now;
        timers.at(now + cost, RING);
    }
}

impl Node for GpuHost {
    fn start(&mut self, now: SimTime, timers: &mut Timers) {
        if self.iterations == 0 {
            self.finished = Some(now);
        } else {
            self.begin(now, timers);
        }
    }

    fn handle_tlp(&mut self, now: SimTime, tlp: Tlp, timers: &mut Timers) {
        match (tlp.kind, parts(tlp.addr)) {
            (Kind::MemRd, _) => {
                self.pending = Some(tlp.tag);
                timers.at(now + self.host.memory_read_latency, RESPOND);
            }
            (Kind::MemWr, Some((Region::Semaphore, _, _))) => {
                if let Some(s) = self.spans.as_mut() {
                    s.push((format!("{:?} {}", STEPS[self.step], self.iteration), self.step_start, now));
                }
                self.step += 1;
                if self.step == STEPS.len() {
                    self.step = 0;
                    self.iteration += 1;
                }
                if self.iteration == self.iterations {
                    self.finished = Some(now);
                } else {
                    self.begin(now, timers);
                }
            }
            _ => {}
        }
    }

    fn handle_timer(&mut self, _now: SimTime, id: u64, _timers: &mut Timers) {
        match id {
            RING => self.out.push_back(Tlp::write(address(Region::Doorbell, STEPS[self.step] as u32, 0), 4)),
            RESPOND => {
                let tag = self.pending.take().expect("a pending read");
                self.out.push_back(Tlp::completion(tag, 0, FLAG_BYTES));
            }
            _ => unreachable!("unknown host timer {id}"),
        }
    }

    fn next_tlp(&mut self, _now: SimTime) -> Option<Tlp> {
        self.out.pop_front()
    }

    fn take_spans(&mut self) -> Vec<(String, SimTime, SimTime)> {
        self.spans.as_mut().map(std::mem::take).unwrap_or_default()
    }
}

/// The GPU: a copy engine and a compute engine behind doorbells.
pub struct GpuDevice {
    gpu: GpuTiming,
    kernel: SimTime,
    out: VecDeque<Tlp>,
}

const START: u64 = 1 << 8;
const KERNEL_DONE: u64 = 2 << 8;

impl GpuDevice {
    /// A GPU running the kernel for `graph`.
    pub fn new(gpu: GpuTiming, graph: &SsspGraph) -> Self {
        GpuDevice { gpu, kernel: gpu.kernel(graph), out: VecDeque::new() }
    }

    fn done(&mut self) {
        self.out.push_back(Tlp::write(address(Region::Semaphore, 0, 0), 4));
    }
}

impl Node for GpuDevice {
    fn start(&mut self, _now: SimTime, _timers: &mut Timers) {}

    fn handle_tlp(&mut self, now: SimTime, tlp: Tlp, timers: &mut Timers) {
        match (tlp.kind, parts(tlp.addr)) {
            (Kind::MemWr, Some((Region::Doorbell, step, _))) => {
                timers.at(now + self.gpu.engine_start, START | u64::from(step));
            }
            (Kind::Cpl, _) => self.done(),
            _ => {}
        }
    }

    fn handle_timer(&mut self, now: SimTime, id: u64, timers: &mut Timers) {
        match (id & !0xFF, id & 0xFF) {
            (START, 1) => self.out.push_back(Tlp::read(address(Region::Flag, 0, 0), FLAG_BYTES, 0)),
            (START, 2) => timers.at(now + self.kernel, KERNEL_DONE),
            (START, 3) => {
                self.out.push_back(Tlp::write(address(Region::Flag, 0, 0), FLAG_BYTES));
                self.done();
            }
            (KERNEL_DONE, _) => self.done(),
            _ => unreachable!("unknown GPU timer {id:#x}"),
        }
    }

    fn next_tlp(&mut self, _now: SimTime) -> Option<Tlp> {
        self.out.pop_front()
    }
}
