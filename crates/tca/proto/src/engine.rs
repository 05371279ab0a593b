//! The per-node DMA and notification state machine.
//!
//! One [`Engine`] stands for the TCA side of one node: its PEACH2 DMA controller with four
//! channels (seed 000 §3.5.2), its handle table, the notifications that arrived for it, and the
//! driver's table of proxy-read requests (seed 000 §3.5). It owns no clock, thread, socket or
//! memory: application commands and fabric reports go in as method calls, and what must happen
//! comes out of [`Engine::poll_action`] as [`Action`]s for the fabric to carry out.
//!
//! # Call order
//!
//! ```text
//! Engine::new(node, nodes)
//! create_handle(..) / destroy_handle(..)                    tcaCreateHandle / tcaDestroyHandle
//! set_chain(ch, &desc)                                      tcaDescSet
//! handle_start(ch)                                          tcaStartDMADesc
//! loop {
//!     while let Some(a) = poll_action() { carry out a }     after every call that may emit
//!     handle_write_done(token)                              a Write is posted (see below)
//!     handle_proxy_done(done)                               a ProxyDone reached this node
//!     handle_notify_arrived(src, slot, tag)                 a Notify reached this node
//!     handle_proxy_request(req) / handle_interrupt()        a RegisterProxy / Interrupt reached it
//!     handle_peer_dead(node)                                the fabric gave up on a node
//! }
//! wait_dma_channel(ch) -> Ready | Pending                   tcaWaitDMAC
//! wait_dma_recv(&h, slot, tag) -> Ready | Pending           tcaWaitDMARecvDesc
//! ```
//!
//! Waits never block: `Pending` tells the fabric to deliver more events (with its own timeout,
//! DESIGN.md principle 5) and ask again.
//!
//! A [`Write`] is *done* for the engine once the fabric has posted it: its bytes are at the
//! destination, or are on their way in order, so that nothing the engine emits later (a later
//! write, a notification, a proxy answer) becomes visible at that node before them. That is
//! PCIe's rule for posted writes (they do not pass each other), which PEACH2 relies on: its
//! status word follows the data on the same path (seed 000 §4.2.2). A memory fabric reports
//! done after its copy; the simulator when the last TLP of the write has left the DMA
//! datapath.
//!
//! # Execution of a chain
//!
//! [`Engine::handle_start`] emits [`Action::Kick`] (the CPU's store to the channel's start
//! register), then the entries. Entries run in order. An entry whose source is on this node
//! expands into an [`Action::Descriptor`] (where the controller takes its request from:
//! registers, host memory or PEACH2 internal memory, seed 000 §3.5.2) followed by one
//! [`Action::Write`] per burst (block-stride expanded). An entry whose source is on another node is a remote
//! read by proxy write (seed 000 §3.5): [`Action::RegisterProxy`] (the request written into the
//! source node's request table) then [`Action::Interrupt`] (a write to its interrupt control
//! register); that node's engine answers with Writes back and an [`Action::ProxyDone`]. Once
//! every write of an entry is reported done, the entry's notifications follow ([`Action::Notify`]
//! to the destination for `NOTIFY`, to this node for `NOTIFY_SELF`), so a notification is never
//! ahead of its data. Unless an entry has `CONTINUE`, the entry after it waits until every
//! entry before it has reached that point: a fence that costs the hardware the overlap of the
//! next descriptor fetch and reads with this entry's writes. With `CONTINUE` the next entry is
//! issued at once, and the controller pipelines the two as in seed 000 Fig. 4 and 6. When every
//! entry is done, [`Action::ChannelDone`] ends the run.
//!
//! A proxy read is served on the responder's [`PROXY_CHANNEL`]: its driver kicks that channel
//! with the request in registers, writes the data, then answers with [`Action::ProxyDone`].

use crate::action::{
    Action, ChannelState, DescriptorSource, Notify, Owner, ProxyDone, ProxyRequest, Token, WaitStatus, Write,
};
use crate::desc::{DescEntry, DmaMode};
use crate::descriptor::Descriptor;
use crate::error::{TcaError, TcaResult};
use crate::flags::DmaFlags;
use crate::handle::{Handle, HandleTable, MemoryType, MAX_NODES};
use crate::Desc;
use std::collections::{BTreeMap, VecDeque};

/// DMA channels of one PEACH2 DMA controller (seed 000 §3.5.2: "4 チャンネル").
pub const CHANNELS: usize = 4;

/// Notification slots per node (tca's choice; the seeds give no number): `wait_slot` is in
/// `0..NOTIFY_SLOTS`.
pub const NOTIFY_SLOTS: u16 = 64;

/// The channel a node's driver uses to serve proxy reads (the last one; tca's choice, the seed
/// does not say). A program may use it too: the two share it in order.
pub const PROXY_CHANNEL: u8 = CHANNELS as u8 - 1;

/// Entries of one node's proxy-read request table (tca's choice; seed 000 §3.5 describes the
/// table but not its size).
pub const PROXY_REQUESTS: usize = 16;

#[derive(Debug, Clone)]
struct Channel {
    chain: Option<Desc>,
    state: ChannelState,
    generation: u32,
    /// Next entry to issue.
    next: usize,
    /// Entries whose data and notifications are done.
    finished: usize,
    /// Outstanding writes (or 1 for a proxy request) per entry; sized at `set_chain`.
    pending: Vec<u32>,
}

#[derive(Debug, Clone, Copy)]
struct ProxyJob {
    request: ProxyRequest,
    generation: u32,
    /// Writes issued and not yet done; `None` until the interrupt is handled.
    pending: Option<u32>,
}

/// The TCA state machine of one node (see the module doc for the call order).
#[derive(Debug, Clone)]
pub struct Engine {
    node: u16,
    nodes: u16,
    handles: HandleTable,
    channels: [Channel; CHANNELS],
    /// Arrived and not yet consumed notifications: (source node, slot, tag) -> count.
    arrived: BTreeMap<(u16, u16, u32), u32>,
    /// Bit n set: node n is dead.
    dead: u16,
    /// This node's program has left the job (`tcaFinalize`): its driver serves no remote read.
    finalized: bool,
    proxies: [Option<ProxyJob>; PROXY_REQUESTS],
    proxy_generation: u32,
    actions: VecDeque<Action>,
}

impl Engine {
    /// The engine of `node` in a sub-cluster of `nodes` nodes.
    ///
    /// # Errors
    /// [`TcaError::TooManyNodes`] for more than 16 nodes; [`TcaError::InvalidNode`] when
    /// `node >= nodes`.
    pub fn new(node: u16, nodes: u16) -> TcaResult<Self> {
        if nodes > MAX_NODES {
            return Err(TcaError::TooManyNodes);
        }
        if node >= nodes {
            return Err(TcaError::InvalidNode);
        }
        let channel = Channel {
            chain: None,
            state: ChannelState::Idle,
            generation: 0,
            next: 0,
            finished: 0,
            pending: Vec::new(),
        };
        Ok(Self {
            node,
            nodes,
            handles: HandleTable::new(node),
            channels: std::array::from_fn(|_| channel.clone()),
            arrived: BTreeMap::new(),
            dead: 0,
            finalized: false,
            proxies: [None; PROXY_REQUESTS],
            proxy_generation: 0,
            actions: VecDeque::new(),
        })
    }

    // ---- getters ----

    /// This node's id.
    pub fn node(&self) -> u16 {
        self.node
    }

    /// Nodes in the sub-cluster.
    pub fn nodes(&self) -> u16 {
        self.nodes
    }

    /// The state of `channel`.
    ///
    /// # Errors
    /// [`TcaError::InvalidChannel`] for a channel outside `0..4`.
    pub fn channel_state(&self, channel: u8) -> TcaResult<ChannelState> {
        Ok(self.channel(channel)?.state)
    }

    /// The chain set on `channel`, if any; the fabric reads [`Desc::mode`] and the entries'
    /// flags from it to time the run.
    ///
    /// # Errors
    /// [`TcaError::InvalidChannel`] for a channel outside `0..4`.
    pub fn chain(&self, channel: u8) -> TcaResult<Option<&Desc>> {
        Ok(self.channel(channel)?.chain.as_ref())
    }

    /// Whether `h` is a live handle of this node.
    pub fn is_live(&self, h: &Handle) -> bool {
        self.handles.is_live(h)
    }

    /// Notifications from `src_node` with (slot, tag) that arrived and were not consumed.
    pub fn arrived(&self, src_node: u16, slot: u16, tag: u32) -> u32 {
        self.arrived.get(&(src_node, slot, tag)).copied().unwrap_or(0)
    }

    /// Whether any notification arrived and was not consumed.
    pub fn holds_notifications(&self) -> bool {
        !self.arrived.is_empty()
    }

    // ---- application commands ----

    /// Registers `size` bytes at global address `addr` of this node (`tcaCreateHandle`).
    ///
    /// # Errors
    /// [`TcaError::OutOfMemory`] when the handle table is full; [`TcaError::InvalidHandle`] for
    /// a zero size or a region wrapping the address space.
    pub fn create_handle(&mut self, addr: u64, size: u64, mem: MemoryType) -> TcaResult<Handle> {
        self.handles.create(addr, size, mem)
    }

    /// Unregisters `h` (`tcaDestroyHandle`). Chains using it fail at their next start.
    ///
    /// # Errors
    /// [`TcaError::InvalidHandle`] when `h` is not a live handle of this node.
    pub fn destroy_handle(&mut self, h: &Handle) -> TcaResult<()> {
        self.handles.destroy(h)
    }

    /// Unregisters every handle whose region starts in `[start, end)` (`tcaFree` of that
    /// buffer); returns how many. Chains using them fail at their next start.
    pub fn destroy_handles_in(&mut self, start: u64, end: u64) -> usize {
        self.handles.destroy_in(start, end)
    }

    /// Registers a copy of `desc` on `channel` (`tcaDescSet`); the channel runs it at every
    /// [`Engine::handle_start`] until another chain is set.
    ///
    /// # Errors
    /// [`TcaError::InvalidChannel`]; [`TcaError::InvalidDescriptor`] for an empty or freed
    /// chain; [`TcaError::ChannelBusy`] while the channel runs; [`TcaError::InvalidNode`] for a
    /// handle of a node outside this sub-cluster; [`TcaError::InvalidHandle`] for a handle of
    /// this node that is not live.
    pub fn set_chain(&mut self, channel: u8, desc: &Desc) -> TcaResult<()> {
        self.channel(channel)?;
        desc.check_runnable()?;
        self.check_entries(desc.entries())?;
        let ch = &mut self.channels[channel as usize];
        if ch.state == ChannelState::Running {
            return Err(TcaError::ChannelBusy);
        }
        ch.pending.clear();
        ch.pending.resize(desc.len(), 0);
        ch.chain = Some(desc.clone());
        Ok(())
    }

    /// Kicks `channel` (`tcaStartDMADesc`): its chain runs from the first entry.
    ///
    /// # Errors
    /// [`TcaError::InvalidChannel`]; [`TcaError::ChannelNotSet`]; [`TcaError::ChannelBusy`]
    /// while a run is in progress; [`TcaError::InvalidHandle`] when a local handle of the chain
    /// was destroyed since; [`TcaError::PeerDead`] when the chain involves a dead node.
    pub fn handle_start(&mut self, channel: u8) -> TcaResult<()> {
        self.begin_run(channel)?;
        self.actions.push_back(Action::Kick { channel });
        self.issue(channel);
        Ok(())
    }

    /// [`Engine::handle_start`] for a fabric that posts a write as it takes it (a memory
    /// fabric's caller). When the chain is one write from this node with at most a
    /// notification to another node, and no action waits before it, the run is taken whole
    /// and is over when this returns: the fabric takes the descriptor from where
    /// [`PostedRun::source`] says, posts the write, then delivers the notification. That is
    /// what the actions would have asked of it (`Kick`, `Descriptor`, `Write`; the write
    /// reported done; then `Notify`, `ChannelDone`), without the queue. Any other run starts
    /// as by `handle_start` and `None` is returned.
    ///
    /// # Errors
    /// As [`Engine::handle_start`].
    #[inline]
    pub fn start_posted(&mut self, channel: u8) -> TcaResult<Option<PostedRun>> {
        let entry = match self.channel(channel)?.chain.as_ref() {
            Some(chain) if self.actions.is_empty() => posted_entry(chain, self.node).map(|e| (e, chain.mode())),
            _ => None,
        };
        let Some((e, chain_mode)) = entry else {
            return self.handle_start(channel).map(|()| None);
        };
        self.begin_run(channel)?;
        let ch = &mut self.channels[channel as usize];
        ch.next = 1;
        ch.finished = 1;
        ch.state = ChannelState::Done;
        let token = Token { node: self.node, owner: Owner::Channel(channel), generation: ch.generation, entry: 0 };
        let burst = (e.descriptor.src, e.descriptor.dst, u64::from(e.descriptor.length));
        let write = burst_write(channel, token, &e.dst, &e.src, burst);
        let notify = e.flags.contains(DmaFlags::NOTIFY).then(|| entry_notify(channel, &e, self.node, e.dst_node()));
        let source = descriptor_source(chain_mode, e.flags);
        Ok(Some(PostedRun { source, write, notify }))
    }

    /// Whether `channel`'s run is over (`tcaWaitDMAC`): `Ready` when done or never started.
    ///
    /// # Errors
    /// [`TcaError::InvalidChannel`]; [`TcaError::ChannelNotSet`] when no chain was ever set on
    /// it; the run's error when it was abandoned
    /// ([`TcaError::PeerDead`], or the responder's refusal of a proxy read).
    pub fn wait_dma_channel(&self, channel: u8) -> TcaResult<WaitStatus> {
        let ch = self.channel(channel)?;
        if ch.chain.is_none() {
            return Err(TcaError::ChannelNotSet);
        }
        match ch.state {
            ChannelState::Running => Ok(WaitStatus::Pending),
            ChannelState::Failed(e) => Err(e),
            ChannelState::Idle | ChannelState::Done => Ok(WaitStatus::Ready),
        }
    }

    /// Consumes one notification (slot, tag) that arrived from `handle.node`
    /// (`tcaWaitDMARecvDesc`): `Ready` when one was there, `Pending` otherwise. Notifications
    /// are counted: two arrivals satisfy two waits.
    ///
    /// # Errors
    /// What [`Handle::validate`] rejects; [`TcaError::InvalidNode`] for a node outside the
    /// sub-cluster; [`TcaError::InvalidSlot`]; [`TcaError::PeerDead`] when none arrived and the
    /// node is dead.
    pub fn wait_dma_recv(&mut self, handle: &Handle, slot: u32, tag: u32) -> TcaResult<WaitStatus> {
        handle.validate()?;
        self.check_node(handle.node)?;
        let slot = check_slot(slot)?;
        let key = (handle.node, slot, tag);
        let dead = self.is_dead(handle.node);
        match self.arrived.get_mut(&key) {
            Some(n) => {
                *n -= 1;
                if *n == 0 {
                    self.arrived.remove(&key);
                }
                Ok(WaitStatus::Ready)
            }
            None if dead => Err(TcaError::PeerDead),
            None => Ok(WaitStatus::Pending),
        }
    }

    // ---- inputs from the fabric ----

    /// The bytes of a [`Write`] this engine issued are in the destination memory.
    ///
    /// A token of an earlier or abandoned run is ignored.
    ///
    /// # Errors
    /// [`TcaError::UnexpectedCompletion`] for a token of another node or one reported twice.
    pub fn handle_write_done(&mut self, token: Token) -> TcaResult<()> {
        if token.node != self.node {
            return Err(TcaError::UnexpectedCompletion);
        }
        match token.owner {
            Owner::Channel(c) => self.entry_progress(c, token),
            Owner::Proxy(i) => {
                let job = self.proxies[i as usize].as_mut();
                let Some(job) = job.filter(|j| j.generation == token.generation) else {
                    return Ok(());
                };
                match &mut job.pending {
                    Some(n) if *n > 0 => *n -= 1,
                    _ => return Err(TcaError::UnexpectedCompletion),
                }
                if job.pending == Some(0) {
                    let request = job.request;
                    self.proxies[i as usize] = None;
                    let done = ProxyDone { responder: self.node, token: request.token, result: Ok(()) };
                    self.actions.push_back(Action::ProxyDone { node: request.requester, done });
                }
                Ok(())
            }
        }
    }

    /// A [`ProxyDone`] for a remote read this engine requested arrived.
    ///
    /// # Errors
    /// [`TcaError::UnexpectedCompletion`] when no such request is outstanding.
    pub fn handle_proxy_done(&mut self, done: ProxyDone) -> TcaResult<()> {
        let token = done.token;
        if token.node != self.node {
            return Err(TcaError::UnexpectedCompletion);
        }
        let Owner::Channel(c) = token.owner else {
            return Err(TcaError::UnexpectedCompletion);
        };
        if let Err(e) = done.result {
            let Ok(ch) = self.channel(c) else {
                return Err(TcaError::UnexpectedCompletion);
            };
            if ch.generation == token.generation && ch.state == ChannelState::Running {
                self.fail(c, e);
            }
            return Ok(());
        }
        self.entry_progress(c, token)
    }

    /// A notification (slot, tag) from `src_node` arrived at this node.
    ///
    /// # Errors
    /// [`TcaError::TooManyNodes`] / [`TcaError::InvalidNode`] for a node outside the
    /// sub-cluster; [`TcaError::InvalidSlot`].
    pub fn handle_notify_arrived(&mut self, src_node: u16, slot: u16, tag: u32) -> TcaResult<()> {
        self.check_node(src_node)?;
        let slot = check_slot(u32::from(slot))?;
        let n = self.arrived.entry((src_node, slot, tag)).or_insert(0);
        *n = n.saturating_add(1);
        Ok(())
    }

    /// A remote node registered a read request in this node's table (seed 000 §3.5). It is
    /// served at the next [`Engine::handle_interrupt`].
    ///
    /// # Errors
    /// [`TcaError::InvalidNode`] / [`TcaError::TooManyNodes`] for a requester outside the
    /// sub-cluster; [`TcaError::InvalidHandle`] when the source is not on this node;
    /// [`TcaError::OutOfMemory`] when [`PROXY_REQUESTS`] are registered already.
    pub fn handle_proxy_request(&mut self, request: ProxyRequest) -> TcaResult<()> {
        self.check_node(request.requester)?;
        self.check_node(request.dst.node)?;
        if request.src.node != self.node {
            return Err(TcaError::InvalidHandle);
        }
        let free = self.proxies.iter().position(Option::is_none).ok_or(TcaError::OutOfMemory)?;
        self.proxy_generation = self.proxy_generation.wrapping_add(1);
        self.proxies[free] = Some(ProxyJob { request, generation: self.proxy_generation, pending: None });
        Ok(())
    }

    /// This node's interrupt was raised: the driver serves every registered request by
    /// writing its data to the destination (seed 000 §3.5: "ドライバ内で要求に基づいてデータを
    /// 要求元ノードに書き込む"). A request whose source handle is not live or whose bursts leave
    /// it is answered with an error instead. An interrupt with nothing registered does nothing.
    pub fn handle_interrupt(&mut self) {
        for i in 0..PROXY_REQUESTS {
            let Some(job) = self.proxies[i] else { continue };
            if job.pending.is_some() {
                continue;
            }
            let r = job.request;
            let refusal = if self.finalized {
                Some(TcaError::PeerDead)
            } else if !self.handles.is_live(&r.src) {
                Some(TcaError::InvalidHandle)
            } else if !descriptor_inside(&r.descriptor, &r.src, &r.dst) {
                Some(TcaError::OutOfBounds)
            } else {
                r.descriptor.validate().err().map(|_| TcaError::InvalidDescriptor)
            };
            if let Some(e) = refusal {
                self.proxies[i] = None;
                let done = ProxyDone { responder: self.node, token: r.token, result: Err(e) };
                self.actions.push_back(Action::ProxyDone { node: r.requester, done });
                continue;
            }
            let token = Token { node: self.node, owner: Owner::Proxy(i as u16), generation: job.generation, entry: 0 };
            let channel = PROXY_CHANNEL;
            self.actions.push_back(Action::Kick { channel });
            let source = DescriptorSource::Registers;
            self.actions.push_back(Action::Descriptor { channel, entry: 0, source });
            self.push_writes(channel, token, &r.descriptor, &r.dst, &r.src);
            if let Some(j) = self.proxies[i].as_mut() {
                j.pending = Some(u32::from(r.descriptor.count));
            }
        }
    }

    /// The fabric could not carry out a [`Write`] this engine issued: its source or destination
    /// memory is gone (freed by its owner, or a stale handle). The run it belongs to is abandoned
    /// with `error`; a proxy read is answered with `error`. A token of an earlier or abandoned
    /// run is ignored.
    ///
    /// # Errors
    /// [`TcaError::UnexpectedCompletion`] for a token of another node.
    pub fn handle_write_refused(&mut self, token: Token, error: TcaError) -> TcaResult<()> {
        if token.node != self.node {
            return Err(TcaError::UnexpectedCompletion);
        }
        match token.owner {
            Owner::Channel(c) => {
                let ch = self.channel(c).map_err(|_| TcaError::UnexpectedCompletion)?;
                if ch.generation == token.generation && ch.state == ChannelState::Running {
                    self.fail(c, error);
                }
            }
            Owner::Proxy(i) => {
                let slot = self.proxies.get_mut(i as usize).ok_or(TcaError::UnexpectedCompletion)?;
                if let Some(job) = slot.filter(|j| j.generation == token.generation) {
                    *slot = None;
                    let done = ProxyDone { responder: self.node, token: job.request.token, result: Err(error) };
                    self.actions.push_back(Action::ProxyDone { node: job.request.requester, done });
                }
            }
        }
        Ok(())
    }

    /// Whether this node holds a remote read of `node`'s, registered and not yet answered.
    pub fn serves_reads_of(&self, node: u16) -> bool {
        self.proxies.iter().flatten().any(|j| j.request.requester == node)
    }

    /// This node's program called `tcaFinalize`: remote reads of its memory, registered or to
    /// come, are answered with [`TcaError::PeerDead`] at the next interrupt, as a peer that
    /// left the job does on the shm fabric.
    pub fn finalize(&mut self) {
        self.finalized = true;
    }

    /// The fabric gave up on `node` (no answer within its timeout). Runs that involve it are
    /// abandoned with [`TcaError::PeerDead`], its proxy requests are dropped, and later waits
    /// for its notifications fail once none is left.
    ///
    /// # Errors
    /// [`TcaError::InvalidNode`] / [`TcaError::TooManyNodes`] for a node outside the
    /// sub-cluster.
    pub fn handle_peer_dead(&mut self, node: u16) -> TcaResult<()> {
        self.check_node(node)?;
        self.dead |= 1 << node;
        for c in 0..CHANNELS as u8 {
            let ch = &self.channels[c as usize];
            let involved = ch
                .chain
                .as_ref()
                .is_some_and(|d| d.entries().iter().any(|e| e.dst_node() == node || e.src_node() == node));
            if ch.state == ChannelState::Running && involved {
                self.fail(c, TcaError::PeerDead);
            }
        }
        for p in self.proxies.iter_mut() {
            if p.is_some_and(|j| j.request.requester == node || j.request.dst.node == node) {
                *p = None;
            }
        }
        Ok(())
    }

    // ---- outputs ----

    /// The next action to carry out, in order; `None` when there is nothing to do until the
    /// next input.
    pub fn poll_action(&mut self) -> Option<Action> {
        self.actions.pop_front()
    }

    // ---- internals ----

    /// The checks of a kick, then the channel's run state reset for a new run.
    fn begin_run(&mut self, channel: u8) -> TcaResult<()> {
        let ch = self.channel(channel)?;
        let chain = ch.chain.as_ref().ok_or(TcaError::ChannelNotSet)?;
        if ch.state == ChannelState::Running {
            return Err(TcaError::ChannelBusy);
        }
        self.check_entries(chain.entries())?;
        if chain.entries().iter().any(|e| self.is_dead(e.dst_node()) || self.is_dead(e.src_node())) {
            return Err(TcaError::PeerDead);
        }
        let ch = &mut self.channels[channel as usize];
        ch.generation = ch.generation.wrapping_add(1);
        ch.state = ChannelState::Running;
        ch.next = 0;
        ch.finished = 0;
        ch.pending.iter_mut().for_each(|p| *p = 0);
        Ok(())
    }

    fn channel(&self, channel: u8) -> TcaResult<&Channel> {
        self.channels.get(channel as usize).ok_or(TcaError::InvalidChannel)
    }

    fn is_dead(&self, node: u16) -> bool {
        node < MAX_NODES && self.dead & (1 << node) != 0
    }

    fn check_node(&self, node: u16) -> TcaResult<()> {
        if node >= MAX_NODES {
            Err(TcaError::TooManyNodes)
        } else if node >= self.nodes {
            Err(TcaError::InvalidNode)
        } else {
            Ok(())
        }
    }

    fn check_entries(&self, entries: &[DescEntry]) -> TcaResult<()> {
        for e in entries {
            for h in [&e.dst, &e.src] {
                self.check_node(h.node)?;
                if h.node == self.node && !self.handles.is_live(h) {
                    return Err(TcaError::InvalidHandle);
                }
            }
        }
        Ok(())
    }

    /// Issues entries of `channel` until a fence or the end of the chain.
    fn issue(&mut self, channel: u8) {
        let c = channel as usize;
        loop {
            let ch = &self.channels[c];
            let Some(chain) = ch.chain.as_ref() else {
                return;
            };
            let entries = chain.entries();
            let next = ch.next;
            if ch.state != ChannelState::Running || next >= entries.len() {
                return;
            }
            // Without CONTINUE on the previous entry, wait until it is finished.
            if next > 0 && !entries[next - 1].flags.contains(DmaFlags::CONTINUE) && ch.finished < next {
                return;
            }
            let e = entries[next];
            let mode = chain.mode();
            let token = Token {
                node: self.node,
                owner: Owner::Channel(channel),
                generation: ch.generation,
                entry: next as u32,
            };
            let pending = if e.src_node() == self.node {
                let source = descriptor_source(mode, e.flags);
                self.actions.push_back(Action::Descriptor { channel, entry: next as u32, source });
                self.push_writes(channel, token, &e.descriptor, &e.dst, &e.src);
                u32::from(e.descriptor.count)
            } else {
                let request =
                    ProxyRequest { requester: self.node, token, descriptor: e.descriptor, src: e.src, dst: e.dst };
                self.actions.push_back(Action::RegisterProxy { node: e.src_node(), request: Box::new(request) });
                self.actions.push_back(Action::Interrupt { node: e.src_node() });
                1
            };
            let ch = &mut self.channels[c];
            ch.pending[next] = pending;
            ch.next += 1;
        }
    }

    fn push_writes(&mut self, channel: u8, token: Token, d: &Descriptor, dst: &Handle, src: &Handle) {
        for burst in d.bursts() {
            self.actions.push_back(Action::Write(burst_write(channel, token, dst, src, burst)));
        }
    }

    /// One write (or the proxy answer) of a channel entry is done.
    fn entry_progress(&mut self, channel: u8, token: Token) -> TcaResult<()> {
        let c = channel as usize;
        let Some(ch) = self.channels.get_mut(c) else {
            return Err(TcaError::UnexpectedCompletion);
        };
        if ch.generation != token.generation || ch.state != ChannelState::Running {
            // A straggler of an earlier or abandoned run.
            return Ok(());
        }
        let e = token.entry as usize;
        match ch.pending.get_mut(e) {
            Some(n) if *n > 0 && e < ch.next => *n -= 1,
            _ => return Err(TcaError::UnexpectedCompletion),
        }
        if ch.pending[e] > 0 {
            return Ok(());
        }
        let Some(chain) = ch.chain.as_ref() else {
            return Err(TcaError::UnexpectedCompletion);
        };
        let entry = chain.entries()[e];
        let len = chain.len();
        ch.finished += 1;
        let finished = ch.finished;
        let me = self.node;
        if entry.flags.contains(DmaFlags::NOTIFY) {
            self.actions.push_back(Action::Notify(entry_notify(channel, &entry, me, entry.dst_node())));
        }
        if entry.flags.contains(DmaFlags::NOTIFY_SELF) {
            self.actions.push_back(Action::Notify(entry_notify(channel, &entry, me, me)));
        }
        if finished == len {
            self.channels[c].state = ChannelState::Done;
            self.actions.push_back(Action::ChannelDone { channel });
        } else {
            self.issue(channel);
        }
        Ok(())
    }

    fn fail(&mut self, channel: u8, error: TcaError) {
        let ch = &mut self.channels[channel as usize];
        ch.state = ChannelState::Failed(error);
        self.actions.push_back(Action::ChannelFailed { channel, error });
    }
}

/// A run [`Engine::start_posted`] took whole: take its descriptor, post `write`, then
/// deliver `notify`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PostedRun {
    /// Where the controller takes the entry's descriptor from (as in [`Action::Descriptor`]).
    pub source: DescriptorSource,
    /// The chain's one write, done for the engine.
    pub write: Write,
    /// The notification to the write's destination (another node), if the entry asks for one.
    pub notify: Option<Notify>,
}

/// The write of one burst `(src_addr, dst_addr, len)` of an entry from `src` to `dst`.
fn burst_write(channel: u8, token: Token, dst: &Handle, src: &Handle, burst: (u64, u64, u64)) -> Write {
    let (src_addr, dst_addr, len) = burst;
    Write {
        token,
        channel,
        dst_node: dst.node,
        dst_addr,
        dst_mem: dst.mem,
        src_node: src.node,
        src_addr,
        src_mem: src.mem,
        len,
    }
}

/// The notification of `entry` from node `me` to `dst_node` (the destination, or `me` itself
/// for `NOTIFY_SELF`).
fn entry_notify(channel: u8, entry: &DescEntry, me: u16, dst_node: u16) -> Notify {
    let internal = entry.flags.contains(DmaFlags::USE_NOTIFY_INTERNAL);
    Notify { channel, dst_node, src_node: me, slot: entry.slot, tag: entry.tag, internal }
}

/// The entry of `chain` when the chain is one write from `node` that needs nothing of the
/// fabric but its descriptor, the write and at most a notification to another node: one
/// entry, one burst, no notification to `node` itself.
fn posted_entry(chain: &Desc, node: u16) -> Option<DescEntry> {
    let [e] = chain.entries() else {
        return None;
    };
    let to_self =
        e.flags.contains(DmaFlags::NOTIFY_SELF) || (e.flags.contains(DmaFlags::NOTIFY) && e.dst_node() == node);
    (e.src_node() == node && e.descriptor.count == 1 && !to_self).then_some(*e)
}

/// Where the controller takes an entry's descriptor from (seed 000 §3.5.2): its registers in
/// register mode; in chaining mode host memory, or PEACH2 internal memory with `USE_INTERNAL`.
fn descriptor_source(mode: DmaMode, flags: DmaFlags) -> DescriptorSource {
    match (mode, flags.contains(DmaFlags::USE_INTERNAL)) {
        (DmaMode::Register, _) => DescriptorSource::Registers,
        (DmaMode::Chaining, false) => DescriptorSource::HostMemory,
        (DmaMode::Chaining, true) => DescriptorSource::InternalMemory,
    }
}

fn check_slot(slot: u32) -> TcaResult<u16> {
    u16::try_from(slot).ok().filter(|s| *s < NOTIFY_SLOTS).ok_or(TcaError::InvalidSlot)
}

/// Whether every burst of `d` reads inside `src` and writes inside `dst`.
fn descriptor_inside(d: &Descriptor, src: &Handle, dst: &Handle) -> bool {
    let inside = |h: &Handle, first: u64, pitch: u32| {
        let Some(off) = first.checked_sub(h.addr) else {
            return false;
        };
        let extent = u64::from(d.count.max(1) - 1) * u64::from(pitch) + u64::from(d.length);
        h.contains(off, extent)
    };
    inside(src, d.src, d.src_pitch) && inside(dst, d.dst, d.dst_pitch)
}
