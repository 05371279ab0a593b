//! The control channel of a running [`System`]: a Unix stream socket, one JSON object per line
//! each way, requests answered in order. Several clients may connect; requests run one at a
//! time. Every answer has `"ok"`; a refused request is `{"ok": false, "error": "one line"}`
//! and changes nothing.
//!
//! | `op` | fields | answer |
//! |---|---|---|
//! | `list` | | `hosts`: `[{mac, netns, vlan, view: [{slot, device}]}]`, `devices`: `[{mac, vlan, slot, other_vlan, commands, bridges, resets}]` |
//! | `host` | `mac`, `vlan` (null: leaves) | |
//! | `device` | `mac`, `vlan` (null: to the pool), `slot` (with a VLAN) | `events`: `[{kind, vlan, slot, device}]` |
//! | `io` | `host` (MAC), `slot` or `device` (MAC), `blocks` (1..=32, default 8) | `device`, `blocks`, `write_us`, `read_us` |
//! | `stop` | | ends the system (namespaces and files removed) |

use std::io::{BufRead, BufReader, ErrorKind, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use expether_proto::Mac;
use serde_json::{json, Value};

use crate::system::{System, Target};
use crate::ExpNetError;

/// Longest request line [bytes].
const MAX_LINE: usize = 4096;

/// Serves `system` on `socket` until `stop` is set (by a signal, or by a `stop` request), then
/// stops the system and removes the socket. Refuses a socket some other process listens on.
pub fn serve(system: System, socket: &Path, stop: Arc<AtomicBool>) -> Result<(), ExpNetError> {
    let what = || format!("control socket {}", socket.display());
    if socket.exists() {
        if UnixStream::connect(socket).is_ok() {
            return Err(ExpNetError::Config(format!("{}: another process listens on it", what())));
        }
        std::fs::remove_file(socket).map_err(|e| ExpNetError::io(what(), e))?;
    }
    let listener = UnixListener::bind(socket).map_err(|e| ExpNetError::io(what(), e))?;
    listener.set_nonblocking(true).map_err(|e| ExpNetError::io(what(), e))?;
    let system = Arc::new(Mutex::new(system));
    let mut clients = Vec::new();
    println!("ready {}", socket.display());
    while !stop.load(Ordering::Relaxed) {
        match listener.accept() {
            Ok((stream, _)) => {
                let (sys, stop) = (system.clone(), stop.clone());
                clients.push(std::thread::spawn(move || client(stream, &sys, &stop)));
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => eprintln!("expether-system: accept: {e}"),
        }
        clients.retain(|c| !c.is_finished());
    }
    drop(listener);
    let _ = std::fs::remove_file(socket);
    for c in clients {
        let _ = c.join();
    }
    let system = Arc::try_unwrap(system).map_err(|_| ExpNetError::Config("a client still holds the system".into()))?;
    system.into_inner().unwrap_or_else(|e| e.into_inner()).stop()
}

/// One client: a request per line until it hangs up or the system stops.
fn client(stream: UnixStream, system: &Mutex<System>, stop: &AtomicBool) {
    if stream.set_nonblocking(false).and_then(|()| stream.set_read_timeout(Some(Duration::from_millis(200)))).is_err() {
        return;
    }
    let Ok(mut out) = stream.try_clone() else { return };
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    while !stop.load(Ordering::Relaxed) {
        match reader.read_line(&mut line) {
            Ok(0) => return,
            Ok(_) if !line.ends_with('\n') && line.len() < MAX_LINE => continue,
            Ok(_) => {}
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => continue,
            Err(_) => return,
        }
        let answer = if line.len() > MAX_LINE {
            refuse(format!("a request line is at most {MAX_LINE} bytes"))
        } else {
            match serde_json::from_str::<Value>(&line) {
                Ok(req) if req.is_object() => {
                    let mut sys = system.lock().unwrap_or_else(|e| e.into_inner());
                    let r = handle(&mut sys, &req, stop);
                    r.unwrap_or_else(refuse)
                }
                _ => refuse("a request is one JSON object per line".into()),
            }
        };
        line.clear();
        if writeln!(out, "{answer}").is_err() {
            return;
        }
    }
}

fn refuse(error: String) -> Value {
    json!({"ok": false, "error": error})
}

/// Parses `aa:bb:cc:dd:ee:ff`.
pub fn parse_mac(text: &str) -> Option<Mac> {
    let parts: Vec<&str> = text.split(':').collect();
    let mut m = [0u8; 6];
    if parts.len() != 6 {
        return None;
    }
    for (b, p) in m.iter_mut().zip(parts) {
        if p.len() != 2 {
            return None;
        }
        *b = u8::from_str_radix(p, 16).ok()?;
    }
    Some(Mac(m))
}

fn mac_field(req: &Value, name: &str) -> Result<Mac, String> {
    let text = req.get(name).and_then(Value::as_str).ok_or_else(|| format!("{name:?} (a MAC address) is missing"))?;
    parse_mac(text).ok_or_else(|| format!("{name:?}: {text:?} is not a MAC address like 02:ee:01:00:00:01"))
}

/// An optional unsigned field: absent or null is `None`.
fn uint_field(req: &Value, name: &str, max: u64) -> Result<Option<u64>, String> {
    match req.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => match v.as_u64() {
            Some(n) if n <= max => Ok(Some(n)),
            _ => Err(format!("{name:?} must be an integer 0..={max}")),
        },
    }
}

fn handle(sys: &mut System, req: &Value, stop: &AtomicBool) -> Result<Value, String> {
    let op = req.get("op").and_then(Value::as_str).unwrap_or("");
    let e = |e: ExpNetError| e.to_string();
    match op {
        "list" => Ok(list(sys)),
        "host" => {
            let vlan = uint_field(req, "vlan", 4095)?.map(|v| v as u16);
            sys.set_host(mac_field(req, "mac")?, vlan).map_err(e)?;
            Ok(json!({"ok": true}))
        }
        "device" => {
            let mac = mac_field(req, "mac")?;
            let to = match uint_field(req, "vlan", 4095)? {
                Some(v) => {
                    let slot = uint_field(req, "slot", 31)?.ok_or("a device given a VLAN needs its \"slot\"")?;
                    Some((v as u16, slot as u8))
                }
                None => None,
            };
            let events = sys.set_device(mac, to).map_err(e)?;
            let events: Vec<Value> = events
                .iter()
                .map(|ev| json!({"kind": ev.kind, "vlan": ev.vlan, "slot": ev.slot, "device": ev.device.to_string()}))
                .collect();
            Ok(json!({"ok": true, "events": events}))
        }
        "io" => {
            let host = mac_field(req, "host")?;
            let target = match (uint_field(req, "slot", 31)?, req.get("device")) {
                (Some(s), None) => Target::Slot(s as u8),
                (None, Some(_)) => Target::Device(mac_field(req, "device")?),
                _ => return Err("io names either a \"slot\" or a \"device\"".into()),
            };
            let blocks = uint_field(req, "blocks", 32)?.unwrap_or(8) as u32;
            let r = sys.io(host, target, blocks).map_err(e)?;
            Ok(json!({"ok": true, "device": r.device.to_string(), "blocks": r.blocks,
                      "write_us": r.write_us, "read_us": r.read_us}))
        }
        "stop" => {
            stop.store(true, Ordering::Relaxed);
            Ok(json!({"ok": true}))
        }
        _ => Err(format!("unknown op {op:?}: expected list, host, device, io or stop")),
    }
}

fn list(sys: &System) -> Value {
    let hosts: Vec<Value> = sys
        .hosts
        .iter()
        .map(|h| {
            let view: Vec<Value> = h.view.iter().map(|(s, d)| json!({"slot": s, "device": d.to_string()})).collect();
            json!({"mac": h.mac.to_string(), "netns": h.netns, "vlan": h.vlan, "view": view})
        })
        .collect();
    let devices: Vec<Value> = sys
        .devices
        .iter()
        .map(|d| {
            let s = d.dev.stats();
            json!({"mac": d.dev.mac().to_string(), "vlan": d.at.map(|a| a.0), "slot": d.at.map(|a| a.1),
                   "other_vlan": s.other_vlan, "commands": s.commands, "bridges": s.bridges, "resets": s.resets})
        })
        .collect();
    json!({"ok": true, "hosts": hosts, "devices": devices, "namespaces": sys.namespaces()})
}
