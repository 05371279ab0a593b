//! The TCA API protocol core: handles, descriptor chains, DMA flags, result codes, and the
//! per-node state machine that executes chains and matches notifications.
//!
//! Contract: this crate is sans-I/O (DESIGN.md principle 1). It owns no clock, thread, socket or
//! memory mapping and is fully deterministic: inputs are method calls (`handle_*`, application
//! commands), outputs are [`Action`]s taken with [`Engine::poll_action`], in one documented order
//! (see [`engine`]). The simulator carries the actions out in virtual time; a real fabric (shared
//! memory) carries them out with stores and copies. The published TCA user API (SYSTEMS.md §1;
//! seed 001 "TCAアーキテクチャのユーザ利用") maps onto it as follows:
//!
//! | C API                              | here                                        |
//! |------------------------------------|---------------------------------------------|
//! | `tcaCreateHandle` / `tcaDestroyHandle` | [`Engine::create_handle`] / [`Engine::destroy_handle`] |
//! | `tcaHandle` as raw bytes           | [`Handle::to_bytes`] / [`Handle::from_bytes`] |
//! | `tcaDescNew`, `tcaDescSetMemcpy`, `tcaDescSetMemcpy2D`, `tcaDescFree` | [`Desc`] |
//! | `tcaDescSet(desc, ch)`             | [`Engine::set_chain`]                       |
//! | `tcaStartDMADesc(ch)`              | [`Engine::handle_start`]                    |
//! | `tcaWaitDMAC(ch)`                  | [`Engine::wait_dma_channel`]                |
//! | `tcaWaitDMARecvDesc(h, slot, tag)` | [`Engine::wait_dma_recv`]                   |
//! | `tcaDMA*` flags                    | [`DmaFlags`]                                |
//! | `tcaresult`, `tcaGetErrorString`   | [`TcaError`], [`error_string`]              |
//!
//! A one-node run, with the caller standing in for the fabric:
//!
//! ```
//! use tca_proto::{Action, Desc, DmaFlags, Engine, MemoryType, WaitStatus};
//!
//! let mut node0 = Engine::new(0, 2)?;
//! let src = node0.create_handle(0x1000, 256, MemoryType::Cpu)?;
//! let dst = node0.create_handle(0x2000, 256, MemoryType::Gpu)?;
//! let mut desc = Desc::new();
//! desc.set_memcpy(&dst, 0, &src, 0, 256, DmaFlags::NOTIFY_SELF, 0, 7)?;
//! node0.set_chain(0, &desc)?;
//! node0.handle_start(0)?;
//! let mut done = false;
//! while let Some(action) = node0.poll_action() {
//!     match action {
//!         // A real fabric copies w.len bytes here, then reports.
//!         Action::Write(w) => node0.handle_write_done(w.token)?,
//!         Action::Notify(n) => node0.handle_notify_arrived(n.src_node, n.slot, n.tag)?,
//!         Action::ChannelDone { channel } => done = channel == 0,
//!         _ => {}
//!     }
//! }
//! assert!(done);
//! assert_eq!(node0.wait_dma_channel(0)?, WaitStatus::Ready);
//! assert_eq!(node0.wait_dma_recv(&src, 0, 7)?, WaitStatus::Ready);
//! # Ok::<(), tca_proto::TcaError>(())
//! ```
//!
//! Modules: [`error`] result codes; [`handle`] memory handles and their wire form; [`flags`] DMA
//! flags; [`desc`] descriptor chains; [`descriptor`] the hardware descriptor and its wire form;
//! [`engine`] the state machine and [`action`] what it asks of a fabric; [`proxy`] the
//! proxy-read messages between engines; [`fabric`] the interface
//! every fabric implements; [`wire`] fields of wire forms.

#![warn(missing_docs)]

pub mod action;
pub mod desc;
pub mod descriptor;
pub mod engine;
pub mod error;
pub mod fabric;
pub mod flags;
pub mod handle;
pub mod heap;
pub mod proxy;
pub mod wire;

pub use action::{
    Action, ChannelState, DescriptorSource, Notify, ProxyDone, ProxyRequest, Token, WaitStatus, Write, TOKEN_BYTES,
};
pub use desc::{Desc, DescEntry, DmaMode, MAX_CHAIN, REGISTER_REQUESTS};
pub use engine::{Engine, PostedRun, CHANNELS, NOTIFY_SLOTS, PROXY_CHANNEL, PROXY_REQUESTS};
pub use error::{error_string, result_code, TcaError, TcaResult, TCA_SUCCESS};
pub use fabric::{Fabric, FabricError, FabricResult, PioRegion};
pub use flags::DmaFlags;
pub use handle::{Handle, HandleTable, MemoryType, HANDLE_BYTES, MAX_NODES};
pub use proxy::{ProxyMsg, PROXY_MSG_BYTES};
