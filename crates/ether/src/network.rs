//! A network of NIC ports, links and switches, run on the `base` event kernel.
//!
//! Build it with [`NetworkBuilder`], inject [`Frame`]s at given times, run, and read the
//! [`Delivery`]s (in delivery order) and the [`Lost`] frames. A frame's path:
//! inject -> sender's host cost -> bus DMA -> link -> (switch: last bit in, stage latency, output
//! queue, link)* -> bus DMA -> receiver's host cost -> delivered.
//! Every step at a shared resource is an event, so each FIFO sees its items in time order.

use crate::faults::{Crossing, Fault, FaultHook};
use crate::link::{Channel, LinkSpec};
use crate::nic::{Bus, BusId, IoBusSpec, Nic, NicSpec};
use crate::switch::{Switch, SwitchSpec};
use crate::EtherError;
use base::{Context, Model, SimTime, Simulation};

/// Identifies a NIC port.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NicId(pub u32);

/// Identifies a switch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SwitchId(pub u32);

/// One end of a link.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Endpoint {
    /// A NIC port (it has exactly one link).
    Nic(NicId),
    /// A port of a switch.
    Switch(SwitchId, u16),
}

/// A frame as the network sees it: an opaque id, a payload length and its two ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Frame {
    /// Chosen by the caller; returned with the delivery.
    pub id: u64,
    /// Payload bytes (above the Ethernet header).
    pub payload: u32,
    /// Sending NIC port.
    pub src: NicId,
    /// Receiving NIC port.
    pub dst: NicId,
}

/// A frame handed to its destination's host.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Delivery {
    /// The frame.
    pub frame: Frame,
    /// When the receiver's host work for it ended.
    pub at: SimTime,
}

/// Why a frame was lost.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DropCause {
    /// The output queue of this switch port was full.
    QueueFull(SwitchId, u16),
    /// The switch had no forwarding entry (or no link) for the destination.
    NoRoute(SwitchId),
    /// The payload exceeds the MTU of a link on the path.
    TooLarge,
    /// It reached a NIC port other than its destination.
    Misdelivered(NicId),
    /// The fault hook lost it on this link.
    Injected(u32),
}

/// A frame the network lost.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lost {
    /// The frame.
    pub frame: Frame,
    /// When it was lost.
    pub at: SimTime,
    /// Why.
    pub cause: DropCause,
}

/// Describes a network before it runs.
#[derive(Default)]
pub struct NetworkBuilder {
    world: World,
}

impl NetworkBuilder {
    /// An empty network.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds an I/O bus.
    pub fn bus(&mut self, spec: IoBusSpec) -> Result<BusId, EtherError> {
        spec.validate()?;
        self.world.buses.push(Bus { spec, fifo: Default::default() });
        Ok(BusId(self.world.buses.len() as u32 - 1))
    }

    /// Adds a NIC port, on `bus` if given (else its DMA costs nothing).
    pub fn nic(&mut self, spec: NicSpec, bus: Option<BusId>) -> Result<NicId, EtherError> {
        if let Some(b) = bus {
            if b.0 as usize >= self.world.buses.len() {
                return Err(EtherError::Unknown("bus"));
            }
        }
        self.world.nics.push(Nic { spec, bus, send: Default::default(), recv: Default::default() });
        self.world.nic_tx.push(None);
        Ok(NicId(self.world.nics.len() as u32 - 1))
    }

    /// Adds a switch.
    pub fn switch(&mut self, spec: SwitchSpec) -> SwitchId {
        self.world.switches.push(Switch::new(spec));
        self.world.switch_tx.push(vec![None; usize::from(spec.ports)]);
        SwitchId(self.world.switches.len() as u32 - 1)
    }

    fn tx_slot(&mut self, e: Endpoint) -> Result<&mut Option<u32>, EtherError> {
        match e {
            Endpoint::Nic(n) => self.world.nic_tx.get_mut(n.0 as usize).ok_or(EtherError::Unknown("NIC")),
            Endpoint::Switch(s, p) => self
                .world
                .switch_tx
                .get_mut(s.0 as usize)
                .ok_or(EtherError::Unknown("switch"))?
                .get_mut(usize::from(p))
                .ok_or(EtherError::Unknown("switch port")),
        }
    }

    /// Joins two endpoints with a full-duplex link.
    pub fn connect(&mut self, a: Endpoint, b: Endpoint, spec: LinkSpec) -> Result<(), EtherError> {
        spec.validate()?;
        for e in [a, b] {
            if self.tx_slot(e)?.is_some() {
                return Err(EtherError::AlreadyConnected(if matches!(e, Endpoint::Nic(_)) {
                    "NIC"
                } else {
                    "switch port"
                }));
            }
        }
        if a == b {
            return Err(EtherError::AlreadyConnected("endpoint"));
        }
        let first = self.world.channels.len() as u32;
        for (from, to) in [(a, b), (b, a)] {
            let ch = self.world.channels.len() as u32;
            self.world.channels.push(Channel::new(spec));
            self.world.channel_to.push(to);
            *self.tx_slot(from)? = Some(ch);
        }
        debug_assert_eq!(self.world.channels.len() as u32, first + 2);
        Ok(())
    }

    /// Makes `switch` forward frames for `dst` out of `port`.
    pub fn route(&mut self, switch: SwitchId, dst: NicId, port: u16) -> Result<(), EtherError> {
        if dst.0 as usize >= self.world.nics.len() {
            return Err(EtherError::Unknown("NIC"));
        }
        let sw = self.world.switches.get_mut(switch.0 as usize).ok_or(EtherError::Unknown("switch"))?;
        if port >= sw.spec.ports {
            return Err(EtherError::Unknown("switch port"));
        }
        sw.set_route(dst.0 as usize, port);
        Ok(())
    }

    /// Passes every frame crossing a link through `hook` (see [`crate::faults`]).
    pub fn faults(&mut self, hook: FaultHook) {
        self.world.faults = Some(hook);
    }

    /// The network, ready to take frames at time zero.
    pub fn build(self) -> Network {
        Network { sim: Simulation::new(), world: self.world }
    }
}

/// Events of the network model; all carry the frame by value (no allocation per frame).
#[derive(Debug, Clone, Copy)]
enum Event {
    Inject(Frame),
    BusOut(Frame),
    LinkTx(Frame, u32),
    Arrive(Frame, u32),
    Forward(Frame, u32),
    HostRx(Frame),
    Deliver(Frame),
}

/// The state the events act on.
#[derive(Default)]
struct World {
    faults: Option<FaultHook>,
    nics: Vec<Nic>,
    buses: Vec<Bus>,
    switches: Vec<Switch>,
    channels: Vec<Channel>,
    channel_to: Vec<Endpoint>,
    nic_tx: Vec<Option<u32>>,
    switch_tx: Vec<Vec<Option<u32>>>,
    deliveries: Vec<Delivery>,
    drops: Vec<Lost>,
}

impl World {
    fn drop_frame(&mut self, frame: Frame, at: SimTime, cause: DropCause) {
        self.drops.push(Lost { frame, at, cause });
    }

    /// Bus DMA of `frame` for `nic`, if it has a bus; returns when it ends.
    fn dma(&mut self, now: SimTime, nic: NicId, frame: Frame, ch: u32) -> SimTime {
        let Some(bus) = self.nics[nic.0 as usize].bus else { return now };
        let bytes = self.channels[ch as usize].spec().framing.frame_bytes(frame.payload);
        let bus = &mut self.buses[bus.0 as usize];
        bus.fifo.serve(now, bus.spec.dma_time(bytes)).1
    }

    fn send_on(&mut self, ctx: &mut Context<'_, Event>, frame: Frame, ch: u32) -> Option<SimTime> {
        match self.channels[ch as usize].transmit(ctx.now(), frame.payload) {
            Ok(tx) => {
                let fault = match self.faults.as_mut() {
                    None => Fault::Pass,
                    Some(hook) => {
                        let index = self.channels[ch as usize].frames() - 1;
                        hook(&Crossing { link: ch / 2, direction: (ch % 2) as u8, index, frame })
                    }
                };
                match fault {
                    Fault::Pass => ctx.schedule_at(tx.arrival, Event::Arrive(frame, ch)),
                    Fault::Drop => self.drop_frame(frame, ctx.now(), DropCause::Injected(ch / 2)),
                    Fault::Duplicate => {
                        ctx.schedule_at(tx.arrival, Event::Arrive(frame, ch));
                        ctx.schedule_at(tx.arrival, Event::Arrive(frame, ch));
                    }
                    Fault::Delay(d) => ctx.schedule_at(tx.arrival + d, Event::Arrive(frame, ch)),
                }
                Some(tx.last_bit)
            }
            Err(_) => {
                self.drop_frame(frame, ctx.now(), DropCause::TooLarge);
                None
            }
        }
    }

    fn forward(&mut self, ctx: &mut Context<'_, Event>, frame: Frame, s: u32) {
        let now = ctx.now();
        let sw = SwitchId(s);
        let out = self.switches[s as usize].out_port(frame.dst.0 as usize);
        let Some((port, ch)) = out.and_then(|p| self.switch_tx[s as usize][usize::from(p)].map(|c| (p, c))) else {
            return self.drop_frame(frame, now, DropCause::NoRoute(sw));
        };
        let bytes = self.channels[ch as usize].spec().framing.frame_bytes(frame.payload);
        if !self.switches[s as usize].queues[usize::from(port)].admit(now, bytes) {
            return self.drop_frame(frame, now, DropCause::QueueFull(sw, port));
        }
        if let Some(last_bit) = self.send_on(ctx, frame, ch) {
            self.switches[s as usize].queues[usize::from(port)].hold(last_bit, bytes);
        }
    }
}

impl Model for World {
    type Event = Event;

    fn handle(&mut self, ctx: &mut Context<'_, Event>, event: Event) {
        let now = ctx.now();
        match event {
            Event::Inject(f) => {
                let nic = &mut self.nics[f.src.0 as usize];
                let (_, end) = nic.send.serve(now, nic.spec.send_cost);
                ctx.schedule_at(end, Event::BusOut(f));
            }
            Event::BusOut(f) => {
                let ch = self.nic_tx[f.src.0 as usize].expect("checked at injection");
                let end = self.dma(now, f.src, f, ch);
                ctx.schedule_at(end, Event::LinkTx(f, ch));
            }
            Event::LinkTx(f, ch) => {
                self.send_on(ctx, f, ch);
            }
            Event::Arrive(f, ch) => match self.channel_to[ch as usize] {
                Endpoint::Switch(s, _) => {
                    let latency = self.switches[s.0 as usize].spec.stage_latency;
                    ctx.schedule_in(latency, Event::Forward(f, s.0));
                }
                Endpoint::Nic(n) if n != f.dst => self.drop_frame(f, now, DropCause::Misdelivered(n)),
                Endpoint::Nic(n) => {
                    let end = self.dma(now, n, f, ch);
                    ctx.schedule_at(end, Event::HostRx(f));
                }
            },
            Event::Forward(f, s) => self.forward(ctx, f, s),
            Event::HostRx(f) => {
                let nic = &mut self.nics[f.dst.0 as usize];
                let (_, end) = nic.recv.serve(now, nic.spec.recv_cost);
                ctx.schedule_at(end, Event::Deliver(f));
            }
            Event::Deliver(frame) => self.deliveries.push(Delivery { frame, at: now }),
        }
    }
}

/// A built network: inject frames, run, read what arrived.
pub struct Network {
    sim: Simulation<Event>,
    world: World,
}

impl Network {
    /// Injects `frame` at its source NIC's host at time `at`.
    pub fn inject(&mut self, at: SimTime, frame: Frame) -> Result<(), EtherError> {
        if at < self.sim.now() {
            return Err(EtherError::InThePast { at, now: self.sim.now() });
        }
        if frame.dst.0 as usize >= self.world.nics.len() {
            return Err(EtherError::Unknown("NIC"));
        }
        let ch = *self.world.nic_tx.get(frame.src.0 as usize).ok_or(EtherError::Unknown("NIC"))?;
        let ch = ch.ok_or(EtherError::Unconnected(frame.src.0))?;
        self.world.channels[ch as usize].spec().framing.check(frame.payload)?;
        self.sim.schedule_at(at, Event::Inject(frame));
        Ok(())
    }

    /// Runs until no event is left; returns the time of the last one.
    pub fn run(&mut self) -> SimTime {
        self.sim.run(&mut self.world, None)
    }

    /// Runs the events up to and including time `until`.
    pub fn run_until(&mut self, until: SimTime) {
        while self.sim.next_time().is_some_and(|t| t <= until) {
            self.sim.step(&mut self.world, None);
        }
    }

    /// The time of the next event, if any: a driver that interleaves its own events with the
    /// network's runs [`Network::run_until`] up to it.
    pub fn next_time(&self) -> Option<SimTime> {
        self.sim.next_time()
    }

    /// The time of the last event run.
    pub fn now(&self) -> SimTime {
        self.sim.now()
    }

    /// Frames delivered so far, in delivery order.
    pub fn deliveries(&self) -> &[Delivery] {
        &self.world.deliveries
    }

    /// Frames lost so far, in the order they were lost.
    pub fn drops(&self) -> &[Lost] {
        &self.world.drops
    }

    /// Frames dropped by a full output queue at `port` of `switch`.
    pub fn queue_drops(&self, switch: SwitchId, port: u16) -> u64 {
        self.world.switches[switch.0 as usize].queues[usize::from(port)].drops()
    }

    /// The most frames held at once by the output queue at `port` of `switch`.
    pub fn queue_peak(&self, switch: SwitchId, port: u16) -> usize {
        self.world.switches[switch.0 as usize].queues[usize::from(port)].peak_frames()
    }

    /// Time `bus` spent on DMA so far.
    pub fn bus_busy(&self, bus: BusId) -> SimTime {
        self.world.buses[bus.0 as usize].fifo.busy()
    }
}
