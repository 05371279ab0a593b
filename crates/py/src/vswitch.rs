//! The ExpEther distributed virtual PCIe switch (expether-proto's `vswitch`, seed 002 §3.3.1,
//! Table 3.1) for the pool manager (python/tca/expether/pool): bridges are named by MAC
//! strings "02:00:00:00:00:01"; refusals arrive as `ValueError` with the core's one-line message.

use expether_proto::{ExpError, Mac, SwitchEvent, VirtualSwitch as Core};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

fn err(e: ExpError) -> PyErr {
    PyValueError::new_err(e.to_string())
}

fn mac(text: &str) -> PyResult<Mac> {
    let bad =
        || PyValueError::new_err(format!("bad MAC address {text:?}: expected six hex bytes like 02:00:00:00:00:01"));
    let mut out = [0u8; 6];
    let parts: Vec<&str> = text.split(':').collect();
    if parts.len() != 6 {
        return Err(bad());
    }
    for (byte, part) in out.iter_mut().zip(parts) {
        if part.len() != 2 {
            return Err(bad());
        }
        *byte = u8::from_str_radix(part, 16).map_err(|_| bad())?;
    }
    Ok(Mac(out))
}

fn vlan(v: i64) -> PyResult<u16> {
    u16::try_from(v).map_err(|_| PyValueError::new_err(format!("VLAN id {v} is outside 0..=4095")))
}

/// The virtual switch of one ExpEther network: host bridges by VLAN id, device bridges by MAC.
#[pyclass(module = "tca._native")]
pub struct VirtualSwitch {
    inner: Core,
}

#[pymethods]
impl VirtualSwitch {
    /// A switch whose upstream bridges each present `ports` downstream ports (1..=32).
    #[new]
    #[pyo3(signature = (ports = 32))]
    fn new(ports: i64) -> PyResult<Self> {
        let ports =
            u8::try_from(ports).map_err(|_| PyValueError::new_err(format!("{ports} ports: expected 1..=32")))?;
        Ok(VirtualSwitch { inner: Core::new(ports).map_err(err)? })
    }

    #[getter]
    fn ports(&self) -> u8 {
        self.inner.ports()
    }

    /// A host bridge joins on `vlan`; returns how many devices already on that VLAN it sees.
    fn join_host(&mut self, mac_address: &str, vlan_id: i64) -> PyResult<usize> {
        self.inner.join_host(mac(mac_address)?, vlan(vlan_id)?).map_err(err)
    }

    /// The host bridge on `vlan` leaves.
    fn leave_host(&mut self, vlan_id: i64) -> PyResult<()> {
        self.inner.leave_host(vlan(vlan_id)?).map_err(err)
    }

    /// A device bridge joins, in the pool.
    fn join_device(&mut self, mac_address: &str) -> PyResult<()> {
        self.inner.join_device(mac(mac_address)?).map_err(err)
    }

    /// A device bridge leaves (its host sees a hot-remove).
    fn leave_device(&mut self, mac_address: &str) -> PyResult<()> {
        self.inner.leave_device(mac(mac_address)?).map_err(err)
    }

    /// The device moves to the host on `vlan`; returns its slot there.
    fn assign(&mut self, mac_address: &str, vlan_id: i64) -> PyResult<u8> {
        self.inner.assign(mac(mac_address)?, vlan(vlan_id)?).map_err(err)
    }

    /// The device returns to the pool; returns the (vlan, slot) it had, or None.
    fn release(&mut self, mac_address: &str) -> PyResult<Option<(u16, u8)>> {
        self.inner.release(mac(mac_address)?).map_err(err)
    }

    /// Every event since the last call, oldest first: ("hot-plug" | "hot-remove", vlan, slot, mac).
    fn poll_events(&mut self) -> Vec<(&'static str, u16, u8, String)> {
        std::iter::from_fn(|| self.inner.poll_event())
            .map(|e| match e {
                SwitchEvent::HotPlug { host, slot, device } => ("hot-plug", host, slot, device.to_string()),
                SwitchEvent::HotRemove { host, slot, device } => ("hot-remove", host, slot, device.to_string()),
            })
            .collect()
    }

    /// The (vlan, slot) of a device whose host bridge is present, or None.
    fn host_of(&self, mac_address: &str) -> PyResult<Option<(u16, u8)>> {
        Ok(self.inner.host_of(mac(mac_address)?))
    }

    /// The devices a present host sees: (slot, mac) by slot.
    fn devices_of(&self, vlan_id: i64) -> PyResult<Vec<(u8, String)>> {
        Ok(self.inner.devices_of(vlan(vlan_id)?).into_iter().map(|(s, m)| (s, m.to_string())).collect())
    }

    #[getter]
    fn host_count(&self) -> usize {
        self.inner.host_count()
    }

    #[getter]
    fn device_count(&self) -> usize {
        self.inner.device_count()
    }
}
