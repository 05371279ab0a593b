//! The distributed virtual PCIe switch (seed 002 §3.3.1, Fig. 3.2, Fig. 3.3, Table 3.1;
//! shared/systems/expether.md §2.4-§2.8): which device belongs to which host, and the PCIe
//! hot-plug events each host sees when that changes.
//!
//! From the seed: the host-side (upstream) bridge plays the switch's upstream PCI-PCI bridge and
//! each device-side (downstream) bridge a downstream one (Fig. 3.3); every bridge belongs to one
//! VLAN, and a device belongs to the host whose bridge has the same VLAN id; the system manager
//! assigns a device by setting its bridge's VLAN (§3.3.1, Fig. 3.2); the host sees the change
//! as native PCIe hot-plug and hot-remove (Table 3.1); the upstream bridge always presents the
//! same number of downstream ports, whatever is attached (§3.3.1); at most 4096 hosts (the VLAN
//! id's 12 bits) and 32 devices per host (the 5-bit PCIe device number) (§3.3.2, Table 3.1).
//!
//! tca's design where the seed is silent:
//! - One port count for every upstream bridge of the switch (1..=32), fixed at creation.
//! - A host sees a device at a slot, the device number of its downstream port on the switch's
//!   internal bus; a plugged device takes the lowest free slot, so slots are reused.
//! - All 4096 VLAN ids are usable, as the thesis says (strict 802.1Q reserves 0 and 4095).
//! - A device that has joined but is not assigned sits in the pool (a VLAN with no host bridge;
//!   modelled as no VLAN). Assigning to a VLAN with no host bridge is refused.
//! - A move between hosts is one operation: the hot-remove on the old host is queued before the
//!   hot-plug on the new one, and a move the new host cannot take changes nothing.
//! - Assigning a device to the host it is on already, or releasing a device in the pool, does
//!   nothing and succeeds (the manager may repeat a command).
//! - A device bridge leaving is a surprise removal: the host sees a hot-remove.
//! - A host bridge leaving keeps its devices' VLAN (the device bridges are not touched): its
//!   queued events are dropped, and when a host bridge joins on that VLAN again the devices are
//!   hot-plugged at the slots they had, in slot order.
//!
//! Sans-I/O like the rest of the crate: inputs are method calls, outputs are events taken with
//! [`VirtualSwitch::poll_event`] in the order they happened. No clock: event latency is not
//! modelled. Every refused call leaves the state unchanged.
//!
//! ```
//! use expether_proto::{Mac, SwitchEvent::{HotPlug, HotRemove}, VirtualSwitch};
//!
//! let (a, b, ssd) = (Mac([2, 0, 0, 0, 0, 1]), Mac([2, 0, 0, 0, 0, 2]), Mac([2, 0, 0, 0, 0, 3]));
//! let mut sw = VirtualSwitch::new(8)?;
//! sw.join_host(a, 10)?;
//! sw.join_host(b, 20)?;
//! sw.join_device(ssd)?;
//! assert_eq!(sw.assign(ssd, 10)?, 0);
//! assert_eq!(sw.assign(ssd, 20)?, 0);
//! let seen: Vec<_> = std::iter::from_fn(|| sw.poll_event()).collect();
//! assert_eq!(seen, [
//!     HotPlug { host: 10, slot: 0, device: ssd },
//!     HotRemove { host: 10, slot: 0, device: ssd },
//!     HotPlug { host: 20, slot: 0, device: ssd },
//! ]);
//! # Ok::<(), expether_proto::ExpError>(())
//! ```

use crate::error::ExpError;
use crate::header::{Mac, MAX_VLAN};
use std::collections::{BTreeMap, VecDeque};

/// Most hosts: one per VLAN id (seed 002 Table 3.1).
pub const MAX_HOSTS: usize = MAX_VLAN as usize + 1;

/// Most downstream ports under one upstream bridge: the 5-bit PCIe device number (Table 3.1).
pub const MAX_PORTS: u8 = 32;

/// What a host sees, as native PCIe hot-plug events (Table 3.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SwitchEvent {
    /// A device appeared at a downstream port of the host's switch.
    HotPlug {
        /// The host, by the VLAN id of its bridge.
        host: u16,
        /// The device number of the downstream port (0..ports).
        slot: u8,
        /// The device's bridge.
        device: Mac,
    },
    /// A device left a downstream port of the host's switch.
    HotRemove {
        /// The host, by the VLAN id of its bridge.
        host: u16,
        /// The device number of the downstream port it had.
        slot: u8,
        /// The device's bridge.
        device: Mac,
    },
}

impl SwitchEvent {
    /// The host the event is for.
    pub fn host(&self) -> u16 {
        match *self {
            SwitchEvent::HotPlug { host, .. } | SwitchEvent::HotRemove { host, .. } => host,
        }
    }
}

/// A host (upstream) bridge: its MAC and what sits at each of its downstream ports.
#[derive(Debug, Clone)]
struct Host {
    mac: Mac,
    slots: Vec<Option<Mac>>,
}

/// A device (downstream) bridge: its VLAN and, when it has one, its slot under that host.
#[derive(Debug, Clone, Copy)]
struct Device {
    at: Option<(u16, u8)>,
}

/// The distributed virtual PCIe switch: every host and device bridge of one ExpEther network.
#[derive(Debug, Clone)]
pub struct VirtualSwitch {
    ports: u8,
    hosts: BTreeMap<u16, Host>,
    devices: BTreeMap<Mac, Device>,
    events: VecDeque<SwitchEvent>,
}

impl VirtualSwitch {
    /// A switch whose upstream bridges each present `ports` downstream ports (1..=32).
    pub fn new(ports: u8) -> Result<VirtualSwitch, ExpError> {
        if ports == 0 || ports > MAX_PORTS {
            return Err(ExpError::Config(
                "an upstream bridge presents 1..=32 downstream ports (5-bit PCIe device number, seed 002 Table 3.1)",
            ));
        }
        Ok(VirtualSwitch { ports, hosts: BTreeMap::new(), devices: BTreeMap::new(), events: VecDeque::new() })
    }

    /// Downstream ports per upstream bridge.
    pub fn ports(&self) -> u8 {
        self.ports
    }

    /// A host bridge joins on VLAN `vlan`. Devices already on that VLAN (left by an earlier host
    /// bridge of it) are hot-plugged at their slots; returns how many.
    pub fn join_host(&mut self, mac: Mac, vlan: u16) -> Result<usize, ExpError> {
        if self.hosts.len() >= MAX_HOSTS {
            return Err(ExpError::HostsFull);
        }
        check_vlan(vlan)?;
        if let Some(h) = self.hosts.get(&vlan) {
            return Err(ExpError::VlanTaken(vlan, h.mac));
        }
        if self.is_known(mac) {
            return Err(ExpError::BridgeKnown(mac));
        }
        let mut slots = vec![None; self.ports as usize];
        for (&device, d) in &self.devices {
            if let Some((v, slot)) = d.at {
                if v == vlan {
                    slots[slot as usize] = Some(device);
                }
            }
        }
        let mut plugged = 0;
        for (slot, device) in slots.iter().enumerate() {
            if let Some(device) = *device {
                self.events.push_back(SwitchEvent::HotPlug { host: vlan, slot: slot as u8, device });
                plugged += 1;
            }
        }
        self.hosts.insert(vlan, Host { mac, slots });
        Ok(plugged)
    }

    /// The host bridge on `vlan` leaves. Its devices keep the VLAN; its queued events are dropped.
    pub fn leave_host(&mut self, vlan: u16) -> Result<(), ExpError> {
        check_vlan(vlan)?;
        self.hosts.remove(&vlan).ok_or(ExpError::UnknownHost(vlan))?;
        self.events.retain(|e| e.host() != vlan);
        Ok(())
    }

    /// A device bridge joins, in the pool (assigned to no host).
    pub fn join_device(&mut self, mac: Mac) -> Result<(), ExpError> {
        if self.is_known(mac) {
            return Err(ExpError::BridgeKnown(mac));
        }
        self.devices.insert(mac, Device { at: None });
        Ok(())
    }

    /// A device bridge leaves; its host, if present, sees a hot-remove (surprise removal).
    pub fn leave_device(&mut self, mac: Mac) -> Result<(), ExpError> {
        self.release(mac)?;
        self.devices.remove(&mac);
        Ok(())
    }

    /// The system manager sets the device bridge's VLAN to `host_vlan` (§3.3.1): the device
    /// moves to that host. If it was on another host, that host sees the hot-remove first; the
    /// new host then sees a hot-plug at the lowest free slot, which is returned. Assigning a
    /// device to its own host returns its slot and changes nothing. Refused, with no change,
    /// when the host has no free port.
    pub fn assign(&mut self, device: Mac, host_vlan: u16) -> Result<u8, ExpError> {
        check_vlan(host_vlan)?;
        let d = *self.devices.get(&device).ok_or(ExpError::UnknownDevice(device))?;
        let host = self.hosts.get(&host_vlan).ok_or(ExpError::UnknownHost(host_vlan))?;
        if let Some((v, slot)) = d.at {
            if v == host_vlan {
                return Ok(slot);
            }
        }
        let free = host.slots.iter().position(Option::is_none).ok_or(ExpError::PortsFull(host_vlan, self.ports))?;
        let slot = free as u8;
        self.release(device)?;
        let host = self.hosts.get_mut(&host_vlan).expect("checked above");
        host.slots[free] = Some(device);
        self.devices.insert(device, Device { at: Some((host_vlan, slot)) });
        self.events.push_back(SwitchEvent::HotPlug { host: host_vlan, slot, device });
        Ok(slot)
    }

    /// The system manager returns the device to the pool: its host, if present, sees a
    /// hot-remove and the slot becomes free. Returns the VLAN and slot it had, if any.
    pub fn release(&mut self, device: Mac) -> Result<Option<(u16, u8)>, ExpError> {
        let d = self.devices.get_mut(&device).ok_or(ExpError::UnknownDevice(device))?;
        let Some((vlan, slot)) = d.at.take() else {
            return Ok(None);
        };
        if let Some(host) = self.hosts.get_mut(&vlan) {
            host.slots[slot as usize] = None;
            self.events.push_back(SwitchEvent::HotRemove { host: vlan, slot, device });
        }
        Ok(Some((vlan, slot)))
    }

    /// The next event, oldest first.
    pub fn poll_event(&mut self) -> Option<SwitchEvent> {
        self.events.pop_front()
    }

    /// The host a device belongs to and its slot there, if its host bridge is present.
    pub fn host_of(&self, device: Mac) -> Option<(u16, u8)> {
        let (vlan, slot) = self.devices.get(&device)?.at?;
        self.hosts.contains_key(&vlan).then_some((vlan, slot))
    }

    /// The devices a present host sees, by slot.
    pub fn devices_of(&self, host_vlan: u16) -> Vec<(u8, Mac)> {
        self.hosts.get(&host_vlan).map_or_else(Vec::new, |h| {
            h.slots.iter().enumerate().filter_map(|(s, d)| d.map(|d| (s as u8, d))).collect()
        })
    }

    /// Host bridges present.
    pub fn host_count(&self) -> usize {
        self.hosts.len()
    }

    /// Device bridges present, assigned or not.
    pub fn device_count(&self) -> usize {
        self.devices.len()
    }

    fn is_known(&self, mac: Mac) -> bool {
        self.devices.contains_key(&mac) || self.hosts.values().any(|h| h.mac == mac)
    }
}

fn check_vlan(vlan: u16) -> Result<(), ExpError> {
    if vlan > MAX_VLAN {
        return Err(ExpError::VlanRange(vlan));
    }
    Ok(())
}
