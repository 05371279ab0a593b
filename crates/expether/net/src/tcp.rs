//! The baseline: the same block device reached over one TCP connection between the two
//! namespaces, with a request/response protocol of tca's design, little-endian:
//!
//! ```text
//! request   0 op u8 (1 write, 2 read), 1..4 zero, 4 id u32, 8 LBA u64, 16 blocks u32,
//!           20 zero u32, then for a write blocks x 4,096 B of data
//! response  0 status u8 (0 ok, 1 refused, 2 I/O error), 1..4 zero, 4 id u32,
//!           8 data bytes u32, 12 zero u32, then for a read that succeeded the data
//! ```
//!
//! The server answers requests in the order they come, one at a time; the client may send up to
//! its depth before reading answers (pipelining). TCP_NODELAY on both ends.

use std::collections::VecDeque;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::blockio::{BlockIo, Done, Request};
use crate::nvme::{LBA_SIZE, MAX_LBAS};
use crate::store::Store;
use crate::ExpNetError;

const REQ: usize = 24;
const RESP: usize = 16;

/// Serves one connection from `listener` until the peer closes it or `stop` is set.
pub fn serve(listener: TcpListener, store: Arc<Store>, stop: Arc<AtomicBool>) -> Result<(), ExpNetError> {
    listener.set_nonblocking(true).map_err(|e| ExpNetError::io("TCP listener", e))?;
    let mut conn = loop {
        match listener.accept() {
            Ok((c, _)) => break c,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                if stop.load(Ordering::Relaxed) {
                    return Ok(());
                }
                std::thread::sleep(Duration::from_millis(2));
            }
            Err(e) => return Err(ExpNetError::io("TCP accept", e)),
        }
    };
    let io = |e| ExpNetError::io("TCP server", e);
    conn.set_nonblocking(false).map_err(io)?;
    conn.set_nodelay(true).map_err(io)?;
    conn.set_read_timeout(Some(Duration::from_millis(50))).map_err(io)?;
    let mut data = vec![0u8; MAX_LBAS as usize * LBA_SIZE];
    loop {
        let mut h = [0u8; REQ];
        match read_full(&mut conn, &mut h, &stop) {
            Ok(true) => {}
            Ok(false) => return Ok(()), // closed or stopped
            Err(e) => return Err(io(e)),
        }
        let (op, id, lba, blocks) = (h[0], u32_at(&h, 4), u64_at(&h, 8), u32_at(&h, 16));
        let len = blocks as usize * LBA_SIZE;
        let valid = (op == 1 || op == 2) && (1..=MAX_LBAS).contains(&blocks) && store.contains(lba, blocks.into());
        if op == 1 && valid && !read_full(&mut conn, &mut data[..len], &stop).map_err(io)? {
            return Ok(());
        }
        let (status, out) = match (valid, op) {
            (false, _) => (1u8, 0),
            (true, 1) => (if store.write(lba, &data[..len]).is_ok() { 0 } else { 2 }, 0),
            _ => match store.read(lba, &mut data[..len]) {
                Ok(()) => (0, len),
                Err(_) => (2, 0),
            },
        };
        let mut r = [0u8; RESP];
        r[0] = status;
        r[4..8].copy_from_slice(&id.to_le_bytes());
        r[8..12].copy_from_slice(&(out as u32).to_le_bytes());
        conn.write_all(&r).map_err(io)?;
        conn.write_all(&data[..out]).map_err(io)?;
    }
}

/// Fills `buf`; `false` if the peer closed first or `stop` was set while waiting.
fn read_full(c: &mut TcpStream, buf: &mut [u8], stop: &AtomicBool) -> std::io::Result<bool> {
    let mut got = 0;
    while got < buf.len() {
        match c.read(&mut buf[got..]) {
            Ok(0) => return Ok(false),
            Ok(n) => got += n,
            Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {
                if stop.load(Ordering::Relaxed) {
                    return Ok(false);
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(true)
}

fn u32_at(b: &[u8], i: usize) -> u32 {
    u32::from_le_bytes(b[i..i + 4].try_into().expect("4 bytes"))
}

fn u64_at(b: &[u8], i: usize) -> u64 {
    u64::from_le_bytes(b[i..i + 8].try_into().expect("8 bytes"))
}

/// The client: one connection, up to `depth` requests outstanding.
#[derive(Debug)]
pub struct TcpClient {
    conn: TcpStream,
    depth: usize,
    /// Ids of the requests sent and not answered, oldest first.
    outstanding: VecDeque<u16>,
    next: u16,
}

impl TcpClient {
    /// Wraps a connected stream (connect it inside the host namespace).
    pub fn new(conn: TcpStream, depth: usize) -> Result<TcpClient, ExpNetError> {
        conn.set_nodelay(true).map_err(|e| ExpNetError::io("TCP client", e))?;
        Ok(TcpClient { conn, depth, outstanding: VecDeque::new(), next: 0 })
    }

    /// Connects to `addr` with a timeout.
    pub fn connect(addr: SocketAddr, depth: usize) -> Result<TcpClient, ExpNetError> {
        let c = TcpStream::connect_timeout(&addr, Duration::from_secs(2))
            .map_err(|e| ExpNetError::io(format!("TCP connect to {addr}"), e))?;
        TcpClient::new(c, depth)
    }
}

impl BlockIo for TcpClient {
    fn depth(&self) -> usize {
        self.depth
    }

    fn submit(&mut self, req: &Request) -> Result<u16, ExpNetError> {
        let id = self.next;
        self.next = self.next.wrapping_add(1);
        let mut h = [0u8; REQ];
        h[0] = if req.write { 1 } else { 2 };
        h[4..8].copy_from_slice(&u32::from(id).to_le_bytes());
        h[8..16].copy_from_slice(&req.lba.to_le_bytes());
        h[16..20].copy_from_slice(&req.blocks.to_le_bytes());
        let io = |e| ExpNetError::io("TCP request", e);
        self.conn.write_all(&h).map_err(io)?;
        if req.write {
            self.conn.write_all(&req.data).map_err(io)?;
        }
        self.outstanding.push_back(id);
        Ok(id)
    }

    fn wait(&mut self, timeout: Duration) -> Result<Option<Done>, ExpNetError> {
        let Some(&expected) = self.outstanding.front() else { return Ok(None) };
        let io = |e| ExpNetError::io("TCP response", e);
        self.conn.set_read_timeout(Some(timeout.max(Duration::from_micros(1)))).map_err(io)?;
        let mut r = [0u8; RESP];
        match self.conn.read_exact(&mut r) {
            Ok(()) => {}
            Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {
                return Err(ExpNetError::Timeout(format!("no TCP response within {timeout:?}")));
            }
            Err(e) => return Err(io(e)),
        }
        let (status, id, len) = (r[0], u32_at(&r, 4), u32_at(&r, 8) as usize);
        if id != u32::from(expected) || len > MAX_LBAS as usize * LBA_SIZE {
            return Err(ExpNetError::Config(format!("TCP response for {id}, expected {expected}")));
        }
        let mut data = vec![0u8; len];
        self.conn.read_exact(&mut data).map_err(io)?;
        self.outstanding.pop_front();
        Ok(Some(Done { id: expected, ok: status == 0, data }))
    }
}
