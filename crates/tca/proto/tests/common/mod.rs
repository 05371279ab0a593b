//! A tiny in-test fabric: every node's memory is a `Vec<u8>`, node `n`'s part of the global
//! window starts at `n * NODE_SPAN`, and every action is carried out at once by a copy. Write
//! completions are delivered right away or held back until the action queues are empty
//! (optionally in reverse order), so fences and overlaps in the engine become visible.

#![allow(dead_code)]

use std::collections::HashMap;
use tca_proto::{Action, Engine, Handle, MemoryType, Token};

/// Bytes of global address space per node.
pub const NODE_SPAN: u64 = 1 << 32;

/// When the fabric reports a write done.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Completion {
    /// Right after the copy.
    Immediate,
    /// After every queue is empty, oldest first.
    Deferred,
    /// After every queue is empty, newest first.
    Reversed,
}

pub struct Cluster {
    pub engines: Vec<Engine>,
    pub mem: HashMap<u16, Vec<u8>>,
    /// Every action with the node that emitted it, in the order carried out.
    pub log: Vec<(u16, Action)>,
    pub completion: Completion,
    held: Vec<(u16, Token)>,
}

impl Cluster {
    pub fn new(nodes: u16, bytes: usize, completion: Completion) -> Self {
        Self {
            engines: (0..nodes).map(|n| Engine::new(n, nodes).unwrap()).collect(),
            mem: (0..nodes).map(|n| (n, vec![0u8; bytes])).collect(),
            log: Vec::new(),
            completion,
            held: Vec::new(),
        }
    }

    /// A handle for `size` bytes at local offset `off` of `node`.
    pub fn handle(&mut self, node: u16, off: u64, size: u64) -> Handle {
        self.engines[node as usize].create_handle(u64::from(node) * NODE_SPAN + off, size, MemoryType::Cpu).unwrap()
    }

    fn local(addr: u64) -> (u16, usize) {
        ((addr / NODE_SPAN) as u16, (addr % NODE_SPAN) as usize)
    }

    /// Carries out every action until all engines are idle.
    pub fn drive(&mut self) {
        loop {
            let mut progressed = false;
            for n in 0..self.engines.len() {
                while let Some(a) = self.engines[n].poll_action() {
                    progressed = true;
                    self.log.push((n as u16, a.clone()));
                    self.carry_out(n as u16, a);
                }
            }
            if !progressed {
                if self.held.is_empty() {
                    return;
                }
                let mut held = std::mem::take(&mut self.held);
                if self.completion == Completion::Reversed {
                    held.reverse();
                }
                for (n, t) in held {
                    self.engines[n as usize].handle_write_done(t).unwrap();
                }
            }
        }
    }

    fn carry_out(&mut self, from: u16, a: Action) {
        match a {
            Action::Write(w) => {
                let (sn, so) = Self::local(w.src_addr);
                let (dn, d_off) = Self::local(w.dst_addr);
                assert_eq!((sn, dn), (w.src_node, w.dst_node), "address and node agree");
                let len = w.len as usize;
                let bytes = self.mem[&sn][so..so + len].to_vec();
                self.mem.get_mut(&dn).unwrap()[d_off..d_off + len].copy_from_slice(&bytes);
                match self.completion {
                    Completion::Immediate => self.engines[from as usize].handle_write_done(w.token).unwrap(),
                    _ => self.held.push((from, w.token)),
                }
            }
            Action::Notify(n) => {
                self.engines[n.dst_node as usize].handle_notify_arrived(n.src_node, n.slot, n.tag).unwrap()
            }
            Action::RegisterProxy { node, request } => {
                self.engines[node as usize].handle_proxy_request(*request).unwrap()
            }
            Action::Interrupt { node } => self.engines[node as usize].handle_interrupt(),
            Action::ProxyDone { node, done } => self.engines[node as usize].handle_proxy_done(done).unwrap(),
            Action::Kick { .. }
            | Action::Descriptor { .. }
            | Action::ChannelDone { .. }
            | Action::ChannelFailed { .. } => {}
        }
    }

    /// The actions emitted by `node`, in order.
    pub fn actions_of(&self, node: u16) -> Vec<Action> {
        self.log.iter().filter(|(n, _)| *n == node).map(|(_, a)| a.clone()).collect()
    }
}
