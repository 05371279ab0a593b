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
//! Modules: [`error`] result codes; [`handle`] memory handles and their wire form; [`flags`] DMA
//! flags; [`desc`] descriptor chains; [`engine`] the state machine.

#![warn(missing_docs)]

pub mod desc;
pub mod engine;
pub mod error;
pub mod flags;
pub mod handle;

pub use desc::{Desc, DescEntry, DmaMode, REGISTER_REQUESTS};
pub use engine::{
    Action, ChannelState, Engine, Notify, ProxyDone, ProxyRequest, Token, WaitStatus, Write,
    CHANNELS, NOTIFY_SLOTS, PROXY_REQUESTS,
};
pub use error::{error_string, result_code, TcaError, TcaResult, TCA_SUCCESS};
pub use flags::DmaFlags;
pub use handle::{Handle, HandleTable, MemoryType, HANDLE_BYTES, MAX_NODES};
